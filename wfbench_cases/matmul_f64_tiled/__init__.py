"""matmul_f64_tiled (P0): 16x16 shared-memory tiled float64 matrix multiply — shared memory, barriers, indexing.

Algorithm (both sides): ``C = A @ B`` for square row-major ``N x N`` matrices, ``N`` a multiple of 16.
A 2-D launch of ``(N/16, N/16)`` blocks of ``(16, 16)`` threads; block ``(bx, by)`` owns the 16x16 tile of
``C`` at rows ``by*16 ..``, columns ``bx*16 ..``. For each tile ``t`` along ``k`` every thread copies
``A[row, t*16 + tx]`` and ``B[t*16 + ty, col]`` into two 16x16 shared arrays, barrier, adds the 16 products
``SA[ty, k] * SB[k, tx]`` in order, barrier. The overall order of additions is k = 0 .. N-1, as in the naive case.

Fairness: both kernels take (A, B, C, N) with ``N`` a runtime scalar, use the same launch, the same tiles
and barriers; no register blocking, no tensor cores, no library on either side. The CUDA side marks the
pointers ``__restrict__`` and is compiled with ``-O3 -fmad=false`` (each multiply and add rounded, as
WarpForth's mul.rn + add.rn). ``C`` is fully overwritten on every launch (idempotent).

Numerical contract: inputs are normal samples rounded to multiples of 1/64, so every product and partial
sum is exact in f64 and any order of additions gives identical bits: tolerance 0 (exhaustive indexing check).

Work: 2*N**3 FLOPs; 3*N**2*8 bytes. Canonical N = 2048 (multi-millisecond on an H200); check N = 80 (5x5
tiles). Shared memory: 2 * 16*16*8 = 4 KiB per block. Requires N to be a positive multiple of 16.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; the runtime stack
is promoted to registers. warpforthc unrolls the 16-step inner loop by 2; nvcc unrolls it fully.
"""

from __future__ import annotations

from collections.abc import Callable

from wfbench_cases.matmul_f64_naive import matmul_case
from wfbench_core import hookimpl
from wfbench_core.case import Case, Launch, Sizes

__all__ = ["CASE", "TILE", "wfbench_register_cases"]

TILE = 16


def _launch(s: Sizes) -> Launch:
    if s["N"] % TILE:
        raise ValueError(f"matmul_f64_tiled needs N to be a multiple of {TILE}, got {s['N']}")
    return Launch(grid=(s["N"] // TILE, s["N"] // TILE), block=(TILE, TILE))


CASE = matmul_case(
    __name__,
    id="matmul_f64_tiled",
    priority="P0",
    summary="16x16 shared-memory tiled float64 matmul; shared memory, barriers, indexing",
    canonical=2048,
    check=80,
    seed=5,
    launch=_launch,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
