"""attention_f32_naive (P0): naive causal attention, f32 memory, f64 arithmetic — reduced-width access,
exp/sqrt, divergent control flow, shared memory.

Algorithm (both sides, WarpForth's ``demo/attention.forth`` extended to several heads): for every head
``h`` and query row ``r``, ``O[h, r] = softmax(Q[h, r] . K[h]^T / sqrt(D), causal) @ V[h]``. Grid
``(SEQ, HEADS)``, one block of ``SEQ`` threads per (row, head); thread ``t`` computes the score of key ``t``
(every key, then ``-1e30`` where ``t > r``) into a shared f64 array; thread 0 finds the maximum serially;
every thread takes ``exp(score - max)``; thread 0 sums serially; every thread divides by the sum; then
threads ``t < D`` (striding by the block size) each sum ``p[j] * V[h, j, col]`` over ``j`` in order.
Barriers between the phases. GPT-2-like canonical shape: SEQ 1024, HEAD_DIM 64, 12 heads.

Fairness: both kernels take (Q, K, V, O, SEQ_LEN, HEAD_DIM) and use the same launch, phases, barriers and
orders of additions. Numerical contract: WarpForth's stack holds f64, so ``F32@`` widens each float to
double and ``F32!`` rounds the double result to float once; the CUDA baseline does the same (float loads
and stores, all arithmetic, ``sqrt`` and ``exp`` in double). Both ``FEXP`` and CUDA's ``exp`` inline the same
libdevice ``__nv_exp`` (its internal FMAs are the only ones in either PTX; nvcc has ``-fmad=false``). Not
FlashAttention, no tensor cores, no library. ``O`` is fully overwritten on every launch (idempotent).

Tolerance rtol 5e-7, atol 1e-9: both sides compute in f64 and round once to f32; the numpy reference sums
in another order (BLAS), moving the f64 value by ~1e-13, which can flip the final f32 rounding by one
ulp (<= 1.2e-7 relative); real errors (a wrong index or mask) are >= 1e-3.

Work: 4*HEADS*SEQ**2*HEAD_DIM FLOPs (the two products Q K^T and P V over all SEQ x SEQ scores, as the
naive algorithm computes them; softmax not counted); 4 * 4*HEADS*SEQ*HEAD_DIM bytes (read Q, K, V, write O).
Check: SEQ 48 (block not a multiple of the warp, HEAD_DIM > block so the column loop strides), 3 heads.
Requires 2 <= SEQ <= 1024 (one thread per key; a WarpForth DO loop always runs at least once).

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; the runtime stack
is promoted to registers. warpforthc does not unroll the DO loops; nvcc unrolls them by 4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CASE", "MASKED", "sizes", "wfbench_register_cases"]

MASKED = -1.0e30


def sizes(seq: int, head_dim: int, heads: int) -> dict[str, int]:
    """Named sizes; WORDS is the f32 element count in 8-byte words (WarpForth arrays are declared i64[])."""
    return {"SEQ": seq, "HEAD_DIM": head_dim, "HEADS": heads, "WORDS": -(-heads * seq * head_dim // 2)}


def _launch(s: Sizes) -> Launch:
    return Launch(grid=(s["SEQ"], s["HEADS"]), block=s["SEQ"])


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    import numpy as np

    n = s["HEADS"] * s["SEQ"] * s["HEAD_DIM"]
    return {
        "Q": rng.standard_normal(n, dtype=np.float32),
        "K": rng.standard_normal(n, dtype=np.float32),
        "V": rng.standard_normal(n, dtype=np.float32),
        "SEQ_LEN": s["SEQ"],
        "HEAD_DIM": s["HEAD_DIM"],
    }


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    """Batched over heads, in f64: scores, causal mask, max-subtracted softmax, P @ V, one f32 rounding."""
    import numpy as np

    shape = (s["HEADS"], s["SEQ"], s["HEAD_DIM"])
    q, k, v = (np.asarray(inp[name], dtype=np.float64).reshape(shape) for name in ("Q", "K", "V"))
    scores = (q @ k.transpose(0, 2, 1)) / np.sqrt(float(s["HEAD_DIM"]))
    seq = s["SEQ"]
    scores[:, np.triu(np.ones((seq, seq), dtype=bool), k=1)] = MASKED
    scores = np.exp(scores - scores.max(axis=2, keepdims=True))
    scores /= scores.sum(axis=2, keepdims=True)
    return {"O": (scores @ v).astype(np.float32).ravel()}


def _work(s: Sizes) -> Work:
    h, n, d = s["HEADS"], s["SEQ"], s["HEAD_DIM"]
    return Work(bytes=4 * 4 * h * n * d, flops=4 * h * n * n * d)


CASE = Case(
    id="attention_f32_naive",
    version=1,
    priority="P0",
    summary="naive causal attention, 12 heads x 1024 x 64, f32 memory, f64 math; exp/sqrt, divergence, shared memory",
    warpforth=resource_text(__name__, "attention_f32_naive.forth"),
    cuda=resource_text(__name__, "attention_f32_naive.cu"),
    wf_kernel="attention_f32_naive",
    cuda_kernel="attention_f32_naive",
    params=(Param("Q", "ptr", "float32"), Param("K", "ptr", "float32"), Param("V", "ptr", "float32"),
            Param("O", "ptr", "float32", output=True), Param("SEQ_LEN", "i64"), Param("HEAD_DIM", "i64")),
    sizes={"check": sizes(48, 64, 3), "canonical": sizes(1024, 64, 12)},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"O": Tolerance(5e-7, 1e-9, "f64 math rounded once to f32 on both sides; summation order may "
                                           "flip that rounding by one f32 ulp (1.2e-7)")},
    work=_work,
    metric="compute",
    seed=6,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
