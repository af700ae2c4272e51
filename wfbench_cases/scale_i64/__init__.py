"""scale_i64 (P0): ``y = k * x`` over int64 — address arithmetic, global load/store, runtime-stack tax.

Fairness: both kernels take (k, x, y, n), use the same grid-stride loop and launch (4096 x 256), and do
one 64-bit integer multiply per element. The CUDA side marks ``x``/``y`` ``__restrict__``, as a careful
engineer would. Integer results are exact: tolerance 0. Work: 16 bytes per element (read x, write y).
Out of place, so every launch overwrites ``y`` identically.
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
    import numpy as np

    return {"K": 3, "X": rng.integers(-(2**40), 2**40, s["N"], dtype=np.int64), "N": s["N"]}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    return {"Y": inp["K"] * inp["X"]}


def _sweep_grid(s: Sizes) -> dict[str, int]:
    """A sweep point's grid: one thread per element up to the canonical 4096 blocks of 256."""
    return {"blocks": max(1, min(4096, -(-s["N"] // 256)))}


CASE = Case(
    id="scale_i64",
    version=1,
    priority="P0",
    summary="y = k*x over int64; address arithmetic, global load/store, runtime-stack tax",
    warpforth=resource_text(__name__, "scale_i64.forth"),
    cuda=resource_text(__name__, "scale_i64.cu"),
    wf_kernel="scale_i64",
    cuda_kernel="scale_i64",
    params=(Param("K", "i64"), Param("X", "ptr", "int64"), Param("Y", "ptr", "int64", output=True),
            Param("N", "i64")),
    sizes={"check": {"N": 100_003, "blocks": 40}, "canonical": {"N": 1 << 25, "blocks": 4096}},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"Y": Tolerance(0.0, 0.0, "integer arithmetic is exact")},
    work=lambda s: Work(bytes=16 * s["N"], flops=0),
    metric="bandwidth",
    seed=1,
    notes=__doc__ or "",
    sweep=Sweep(sizes=powers_of_two("N", 12, 26, 2), derive=_sweep_grid),
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
