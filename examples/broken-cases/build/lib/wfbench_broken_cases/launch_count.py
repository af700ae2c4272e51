"""fault_launch_count: from its 8th launch on the same buffers, processes half of Y. See kernels/launch_count.forth."""

from __future__ import annotations

import numpy as np

from wfbench_core import hookimpl
from wfbench_core.case import Case, Launch, Param, Tolerance, Work
from wfbench_broken_cases import BLOCK, SIZES, cuda_twin, kernel_text

CASE = Case(
    id="fault_launch_count", version=1, priority="P1",
    summary="counts its launches in a workspace and does half the work from the 8th on (launch count)",
    warpforth=kernel_text("launch_count.forth"), cuda=cuda_twin("scale_workspace.cu", "fault_launch_count"),
    wf_kernel="fault_launch_count", cuda_kernel="fault_launch_count",
    params=(Param("K", "i64"), Param("X", "ptr", "int64"), Param("Y", "ptr", "int64", output=True),
            Param("N", "i64"), Param("W", "ptr", "int64")),
    sizes=SIZES,
    launch=lambda s: Launch(grid=s["blocks"], block=BLOCK),
    inputs=lambda s, rng: {"K": 3, "X": rng.integers(-(2**40), 2**40, s["N"], dtype=np.int64), "N": s["N"],
                           "W": np.zeros(1, dtype=np.int64)},
    reference=lambda inp, s: {"Y": inp["K"] * inp["X"]},
    tolerances={"Y": Tolerance(0.0, 0.0, "integer arithmetic is exact")},
    work=lambda s: Work(bytes=16 * s["N"]),
    seed=11,
    notes="W is a workspace the kernel may use (as a reduction's retirement counter is); the CUDA twin ignores it.",
)


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
