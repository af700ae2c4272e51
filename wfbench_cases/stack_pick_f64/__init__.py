"""stack_pick_f64 (P1): a stack indexed at run time — the runtime-stack tax that stack flattening
(WarpForth #61) is meant to remove, measured where it is largest.

Algorithm (both sides): a grid-stride loop (4096 x 256); per element, six values ``v0 = x[i]``,
``v[j+1] = v[j] * 0.75``, and ``y[i] = ((0 + v5) + v4) + ...`` over the top ``K`` of them, ``K`` a kernel
parameter (1 <= K <= 6). WarpForth keeps the six values on its data stack and reads them with
``I 1 + PICK``, whose index is known only at run time; the CUDA side keeps them in a local array ``v[6]``
read as ``v[5 - j]`` — the same work with the same run-time indexing, as a C++ engineer would write it.

What it shows: statically indexed stack slots are promoted to registers by today's warpforthc (every other
case has a 0-byte stack frame); a run-time index keeps the whole stack in local memory. WarpForth PTX
(warpforthc, ptxas -arch=sm_90 -v): 2048 bytes stack frame, a local store per push; nvcc keeps only the
six-element array in local memory (48 bytes).

Fairness: both kernels take (X, Y, N, K), use the same loop, launch, values and run-time indexing; the
CUDA side is built with -fmad=false and is free to keep what it can in registers, as WarpForth is. The stack tax in the
table's static column and in ``wfbench explain`` gives the frame, LDL/STL counts and, with
``--profile``, the local traffic per side.

Numerical contract: multiplications by 0.75 and the adds are each rounded in f64 in the same order on both
sides and in the numpy reference, so all three agree bit for bit (tolerance 0).

Work: 16 bytes per element (read x, write y), 5 + K FLOPs. Canonical N = 2**24, K = 5. The kernel is
idempotent: every launch writes every y from x alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CASE", "DEPTH", "FACTOR", "wfbench_register_cases"]

DEPTH = 6  # values on the stack per element
FACTOR = 0.75


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["blocks"], block=256)


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    return {"X": rng.standard_normal(s["N"]), "N": s["N"], "K": s["K"]}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    import numpy as np

    values = [np.asarray(inp["X"], dtype=np.float64)]
    for _ in range(DEPTH - 1):
        values.append(values[-1] * FACTOR)
    acc = np.zeros_like(values[0])
    for j in range(int(inp["K"])):
        acc = acc + values[DEPTH - 1 - j]
    return {"Y": acc}


CASE = Case(
    id="stack_pick_f64",
    version=1,
    priority="P1",
    summary="sum of the top K of six stacked values, K at run time: the stack stays in local memory",
    warpforth=resource_text(__name__, "stack_pick_f64.forth"),
    cuda=resource_text(__name__, "stack_pick_f64.cu"),
    wf_kernel="stack_pick_f64",
    cuda_kernel="stack_pick_f64",
    params=(Param("X", "ptr", "float64"), Param("Y", "ptr", "float64", output=True), Param("N", "i64"),
            Param("K", "i64")),
    sizes={"check": {"N": 100_003, "blocks": 40, "K": 3}, "canonical": {"N": 1 << 24, "blocks": 4096, "K": 5}},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"Y": Tolerance(0.0, 0.0, "the same f64 multiplies and adds in the same order: bit for bit")},
    work=lambda s: Work(bytes=16 * s["N"], flops=(DEPTH - 1 + s["K"]) * s["N"]),
    metric="bandwidth",
    seed=15,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
