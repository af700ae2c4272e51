"""reduce_sum_f64 (P0): one-stage block reduction over float64 — loops, branches, shared memory, barriers.

Algorithm (both sides): a launch of ``BLOCKS`` blocks of 256 threads. Each thread adds its grid-stride
slice of ``x`` (elements ``g, g + S, g + 2S, ...`` with ``S = BLOCKS * 256``) into a register, stores it in
a 256-element shared array, and the block folds the array as a tree (halves 128, 64, ..., 1; a barrier
after every level). Thread 0 writes the block's sum to ``out[block]``: one value per block, no second stage.

Fairness: both kernels take (x, out, n), use the same launch, the same shared tree and so the same order
of additions. The CUDA side uses no warp shuffles and no atomics, because WarpForth has neither; it
marks the pointers ``__restrict__`` and is compiled with the fixed flags (``-O3 -fmad=false``), so nvcc
may unroll and prefetch the grid-stride loop, as it would for any engineer's code. Every launch writes
every ``out`` element from ``x`` alone (idempotent).

Numerical contract: f64 adds, each rounded, in the order above. The numpy reference replays exactly that
order (per-thread sequential sums, then the tree), so both sides are expected to match it bit for bit.
Tolerance rtol 1e-12, atol 1e-9: only absorbs a reordered add (at most ~1e-10 here), a billion times
smaller than one element's contribution (~1).

Work: reads 8*N bytes and writes 8*BLOCKS; N - BLOCKS additions. Canonical: N = 2**25 (256 MiB, far
over the 50 MB L2 of an H200), BLOCKS = 1024 (one resident wave on an H200).

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; the runtime stack
is promoted to registers and the tree is fully unrolled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Sweep, Tolerance, Work, powers_of_two, resource_text

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BLOCK", "CASE", "wfbench_register_cases"]

BLOCK = 256


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["BLOCKS"], block=BLOCK)


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    return {"X": rng.standard_normal(s["N"]), "N": s["N"]}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    """Replay the kernel's order of additions exactly (vectorized over threads)."""
    import numpy as np

    x = np.asarray(inp["X"], dtype=np.float64)
    blocks = s["BLOCKS"]
    stride = blocks * BLOCK
    rounds = -(-x.size // stride)
    padded = np.zeros(rounds * stride)  # adding +0.0 leaves a sum unchanged, bit for bit
    padded[: x.size] = x
    acc = np.zeros(stride)
    for row in padded.reshape(rounds, stride):  # thread g adds x[g], x[g+S], ... in that order
        acc = acc + row
    partial = acc.reshape(blocks, BLOCK)
    half = BLOCK // 2
    while half > 0:  # the shared-memory tree: partial[t] += partial[t + half] for t < half
        partial[:, :half] = partial[:, :half] + partial[:, half: 2 * half]
        half //= 2
    return {"OUT": partial[:, 0].copy()}


def _sweep_grid(s: Sizes) -> dict[str, int]:
    """A sweep point's grid: one thread per element up to the canonical 1024 blocks of 256."""
    return {"BLOCKS": max(1, min(1024, -(-s["N"] // 256)))}


CASE = Case(
    id="reduce_sum_f64",
    version=1,
    priority="P0",
    summary="one-stage block sum over float64; loops, branches, shared memory, barriers",
    warpforth=resource_text(__name__, "reduce_sum_f64.forth"),
    cuda=resource_text(__name__, "reduce_sum_f64.cu"),
    wf_kernel="reduce_sum_f64",
    cuda_kernel="reduce_sum_f64",
    params=(Param("X", "ptr", "float64"), Param("OUT", "ptr", "float64", output=True), Param("N", "i64")),
    sizes={"check": {"N": 100_003, "BLOCKS": 40}, "canonical": {"N": 1 << 25, "BLOCKS": 1024}},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"OUT": Tolerance(1e-12, 1e-9, "reference replays the kernel's addition order; the bound only "
                                              "absorbs a reordered add (~1e-10), far below one element (~1)")},
    work=lambda s: Work(bytes=8 * (s["N"] + s["BLOCKS"]), flops=s["N"] - s["BLOCKS"]),
    metric="bandwidth",
    seed=3,
    notes=__doc__ or "",
    sweep=Sweep(sizes=powers_of_two("N", 12, 26, 2), derive=_sweep_grid),
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
