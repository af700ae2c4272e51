"""transpose_f64 (P1): shared-memory tiled transpose of a float64 matrix — coalescing, boundary branches,
shared-memory tiling.

Algorithm (both sides): ``B = A.T`` for a row-major ``ROWS x COLS`` matrix. Grid
``(ceil(COLS/32), ceil(ROWS/32))`` of ``(32, 8)`` blocks; each block reads a 32x32 tile of ``A`` row by row
(coalesced, 4 elements per thread) into a 32x33 shared array (one padding column against bank conflicts),
barrier, and writes the transposed tile row by row (coalesced). Every load and store is guarded, and both
sizes are deliberately not multiples of 32, so the edge tiles take the boundary branches.

Fairness: both kernels take (A, B, ROWS, COLS) and use the same tile, padding, launch and guards: the
classic coalesced transpose a CUDA engineer would write. The CUDA side marks the pointers ``__restrict__``
and is compiled with ``-O3 -fmad=false``. ``B`` is fully overwritten on every launch (idempotent).

Numerical contract and tolerance: a pure copy, so the result must be exact: tolerance 0.

Work: 16 bytes per element (read A, write B), no FLOPs. Canonical 4099 x 5003 (164 MB each way, far over
the 50 MB L2); check 67 x 45.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; the runtime stack
is promoted to registers and both 4-step loops are unrolled.

Measured on an H200 (suite run, d2d copy 3970 GB/s read + write): the CUDA side moves 2932 GB/s, 74 % of the
copy, below the 85 % that the streaming cases reach. The likely cause is the case's purpose, not a weak
baseline (a hypothesis, not yet profiled): a row of B is 4099 * 8 = 32 792 bytes, not a multiple of 128, so
most rows start off a 128-byte line and each coalesced 256-byte tile-row write touches an extra line; the
edge tiles also run partly idle. Both sides pay it (WarpForth reached 3097 GB/s in the same run); the gap,
not the absolute rate, is the signal here.
"""

from __future__ import annotations

import numpy as np

from wfbench_core import hookimpl
from wfbench_core.case import Case, Launch, Param, Tolerance, Work, resource_text

TILE = 32
BLOCK_ROWS = 8


def sizes(rows: int, cols: int) -> dict[str, int]:
    return {"ROWS": rows, "COLS": cols, "RC": rows * cols}


def _launch(s):  # type: ignore[no-untyped-def]
    return Launch(grid=(-(-s["COLS"] // TILE), -(-s["ROWS"] // TILE)), block=(TILE, BLOCK_ROWS))


def _inputs(s, rng):  # type: ignore[no-untyped-def]
    return {"A": rng.standard_normal(s["RC"]), "ROWS": s["ROWS"], "COLS": s["COLS"]}


def _reference(inp, s):  # type: ignore[no-untyped-def]
    return {"B": np.ascontiguousarray(inp["A"].reshape(s["ROWS"], s["COLS"]).T).ravel()}


CASE = Case(
    id="transpose_f64",
    version=1,
    priority="P1",
    summary="32x32 shared-memory tiled transpose of a float64 matrix; coalescing, boundary branches",
    warpforth=resource_text(__name__, "transpose_f64.forth"),
    cuda=resource_text(__name__, "transpose_f64.cu"),
    wf_kernel="transpose_f64",
    cuda_kernel="transpose_f64",
    params=(Param("A", "ptr", "float64"), Param("B", "ptr", "float64", output=True), Param("ROWS", "i64"),
            Param("COLS", "i64")),
    sizes={"check": sizes(67, 45), "canonical": sizes(4099, 5003)},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"B": Tolerance(0.0, 0.0, "a pure copy: every element must be exact")},
    work=lambda s: Work(bytes=16 * s["RC"], flops=0),
    metric="bandwidth",
    seed=8,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
