"""axpy_f64 (P0): ``z = a*x + y`` over float64 — bandwidth, the f64 scalar ABI, float arithmetic.

Fairness: both kernels take (a, x, y, z, n), run the same grid-stride loop and launch (4096 x 256), and
round the multiply and the add separately (WarpForth emits mul.rn + add.rn; CUDA is built with
-fmad=false), so both sides must match numpy bit for bit: rtol 1e-15 only absorbs printing of the error.
Work: 24 bytes per element (read x and y, write z), 2 FLOPs per element. Out of place: idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Sweep, Tolerance, Work, powers_of_two, resource_text

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CASE", "wfbench_register_cases"]


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["blocks"], block=256)


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    n = s["N"]
    return {"A": 1.5, "X": rng.standard_normal(n), "Y": rng.standard_normal(n), "N": n}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    return {"Z": inp["A"] * inp["X"] + inp["Y"]}


def _sweep_grid(s: Sizes) -> dict[str, int]:
    """A sweep point's grid: one thread per element up to the canonical 4096 blocks of 256."""
    return {"blocks": max(1, min(4096, -(-s["N"] // 256)))}


CASE = Case(
    id="axpy_f64",
    version=1,
    priority="P0",
    summary="z = a*x + y over float64; bandwidth, scalar parameter ABI, float arithmetic",
    warpforth=resource_text(__name__, "axpy_f64.forth"),
    cuda=resource_text(__name__, "axpy_f64.cu"),
    wf_kernel="axpy_f64",
    cuda_kernel="axpy_f64",
    params=(Param("A", "f64"), Param("X", "ptr", "float64"), Param("Y", "ptr", "float64"),
            Param("Z", "ptr", "float64", output=True), Param("N", "i64")),
    sizes={"check": {"N": 100_003, "blocks": 40}, "canonical": {"N": 1 << 25, "blocks": 4096}},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"Z": Tolerance(1e-15, 0.0, "separately rounded mul and add match numpy bit for bit")},
    work=lambda s: Work(bytes=24 * s["N"], flops=2 * s["N"]),
    metric="bandwidth",
    seed=2,
    notes=__doc__ or "",
    sweep=Sweep(sizes=powers_of_two("N", 12, 26, 2), derive=_sweep_grid),
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
