"""gemv_i8 (P1): int8 matrix-vector product to int32 — reduced-width integer words (``I8@``, ``SI8@ SI8!``,
``I32!``), shared integer words (``S@ S!``), a block tree reduction.

Algorithm (both sides): ``Y[r] = sum_k A[r, k] * X[k]`` with ``A`` int8 ``[M, K]`` row-major, ``X`` int8
``[K]``, ``Y`` int32 ``[M]``. One block of 256 threads per row: the block stages ``X`` into a shared int8
tile, each thread sums the products of its strided slice ``k = t, t + 256, ...`` in a 64-bit register, the
256 partials go to shared 64-bit memory and are folded as a tree (a barrier after every level), and
thread 0 stores the sum as int32.

Fairness: both kernels take (A, X, Y, K), use the same launch, tile, loop and tree. The CUDA side keeps
64-bit accumulators because WarpForth's stack cells are i64, and uses no ``dp4a``, no warp shuffles and no
atomics (WarpForth has none of them); it is built with the suite's fixed flags (-fmad=false; there is no
floating point here). Exact integer arithmetic: tolerance 0 (every |sum| < 2**31).

Work: reads M*K + K bytes and writes 4*M; 2*M*K integer operations. Canonical M = 16384, K = 4096 (64 MiB
of A, over the 50 MB L2 of an H200). Check: M = 100, K = 1000 (K not a multiple of the block).
The kernel is idempotent: every launch writes every Y element from A and X alone.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; 6144 bytes of
shared memory on both sides (the int8 tile and the 256 partials).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BLOCK", "CASE", "sizes", "wfbench_register_cases"]

BLOCK = 256


def sizes(m: int, k: int) -> dict[str, int]:
    """Named sizes; *WORDS are the buffers' byte counts in 8-byte words (WarpForth arrays are declared i64[])."""
    return {"M": m, "K": k, "AWORDS": -(-m * k // 8), "XWORDS": -(-k // 8), "YWORDS": -(-m // 2)}


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["M"], block=BLOCK)


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    import numpy as np

    return {"A": rng.integers(-128, 128, s["M"] * s["K"], dtype=np.int8),
            "X": rng.integers(-128, 128, s["K"], dtype=np.int8), "K": s["K"]}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    import numpy as np

    a = np.asarray(inp["A"], dtype=np.int64).reshape(s["M"], s["K"])
    return {"Y": (a @ np.asarray(inp["X"], dtype=np.int64)).astype(np.int32)}


CASE = Case(
    id="gemv_i8",
    version=1,
    priority="P1",
    summary="int8 GEMV to int32, shared int8 tile and i64 tree; reduced-width integer and shared integer words",
    warpforth=resource_text(__name__, "gemv_i8.forth"),
    cuda=resource_text(__name__, "gemv_i8.cu"),
    wf_kernel="gemv_i8",
    cuda_kernel="gemv_i8",
    params=(Param("A", "ptr", "int8"), Param("X", "ptr", "int8"), Param("Y", "ptr", "int32", output=True),
            Param("K", "i64")),
    sizes={"check": sizes(100, 1000), "canonical": sizes(16384, 4096)},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"Y": Tolerance(0.0, 0.0, "exact integer sums, all within int32")},
    work=lambda s: Work(bytes=s["M"] * s["K"] + s["K"] + 4 * s["M"], flops=2 * s["M"] * s["K"]),
    metric="bandwidth",
    seed=13,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
