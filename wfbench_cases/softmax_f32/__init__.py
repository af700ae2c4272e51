"""softmax_f32 (P1): row softmax over float32 with block tree reductions — ``FEXP FMAX F/``, shared f32
(``SF32@ SF32!``) and shared f64, three passes over each row.

Algorithm (both sides): one block of 256 threads per row of ``X`` (``ROWS x COLS``, float32). Each thread
walks its strided slice ``c = t, t + 256, ...`` for its maximum, the block folds the 256 maxima as a tree in
shared f32 (the maximum of f32 values is an f32, so the narrow tile is exact; a barrier after every
level); then each thread sums ``exp(x - max)`` over its slice and the block folds the sums as a tree in
shared f64; then each thread writes ``exp(x - max) / sum`` for its slice. Loads
widen to f64 (``F32@``), the result is rounded once to f32 (``F32!``).

Fairness: both kernels take (X, Y, COLS), use the same launch, passes, trees and orders of additions; CUDA
uses no warp shuffles (WarpForth has none) and is built with ``-fmad=false``. ``FEXP`` and CUDA's ``exp``
inline the same libdevice ``__nv_exp`` (whose internal FMAs are the only ones in either PTX).

Tolerance rtol 2.5e-7, atol 1e-30: both sides compute the same f64 values and round once to f32; numpy's
``exp`` and summation order may move the f64 value by an ulp or so, which can flip that f32 rounding by one
f32 ulp (at most 1.2e-7 relative); a wrong index or a missing barrier is off by far more.

Work: reads and writes 4 bytes per element (the two extra passes over X are the algorithm's, not counted);
canonical 16384 x 1024 (64 MiB in, 64 MiB out). Check: 37 x 300 (a row not a multiple of the block).
Every launch writes every Y element from X alone: idempotent.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; 3072 bytes of
shared memory on both sides.
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


def sizes(rows: int, cols: int) -> dict[str, int]:
    """Named sizes; WORDS is the f32 element count in 8-byte words (WarpForth arrays are declared i64[])."""
    return {"ROWS": rows, "COLS": cols, "WORDS": -(-rows * cols // 2)}


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["ROWS"], block=BLOCK)


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    import numpy as np

    return {"X": (rng.standard_normal(s["ROWS"] * s["COLS"]) * 4.0).astype(np.float32), "COLS": s["COLS"]}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    import numpy as np

    x = np.asarray(inp["X"], dtype=np.float64).reshape(s["ROWS"], s["COLS"])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"Y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32).ravel()}


CASE = Case(
    id="softmax_f32",
    version=1,
    priority="P1",
    summary="row softmax over float32, f64 math, block tree reductions of max and sum in shared memory",
    warpforth=resource_text(__name__, "softmax_f32.forth"),
    cuda=resource_text(__name__, "softmax_f32.cu"),
    wf_kernel="softmax_f32",
    cuda_kernel="softmax_f32",
    params=(Param("X", "ptr", "float32"), Param("Y", "ptr", "float32", output=True), Param("COLS", "i64")),
    sizes={"check": sizes(37, 300), "canonical": sizes(16384, 1024)},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"Y": Tolerance(2.5e-7, 1e-30, "f64 math rounded once to f32 on both sides; numpy's exp and "
                                               "sum order may flip that rounding by one f32 ulp (1.2e-7)")},
    work=lambda s: Work(bytes=8 * s["ROWS"] * s["COLS"], flops=4 * s["ROWS"] * s["COLS"]),
    metric="bandwidth",
    seed=16,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
