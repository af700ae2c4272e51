"""fault_smem_race: a shared-memory store then load across warps with no BARRIER (a race)."""

from __future__ import annotations

import numpy as np

from wfbench_core import hookimpl
from wfbench_core.case import Case, Launch, Param, Tolerance, Work
from wfbench_broken_cases import BLOCK, cuda_twin, kernel_text


def _reference(inp, s):  # type: ignore[no-untyped-def]
    x = np.asarray(inp["X"]).reshape(-1, BLOCK)
    return {"Y": np.roll(x, -BLOCK // 2, axis=1).ravel()}  # y[b, t] = x[b, (t + 128) % 256]


CASE = Case(
    id="fault_smem_race", version=1, priority="P1",
    summary="shared-memory rotate with no BARRIER between store and load (race)",
    warpforth=kernel_text("smem_race.forth"), cuda=cuda_twin("rotate.cu", "fault_smem_race"),
    wf_kernel="fault_smem_race", cuda_kernel="fault_smem_race",
    params=(Param("X", "ptr", "int64"), Param("Y", "ptr", "int64", output=True)),
    sizes={"check": {"N": 40 * BLOCK, "blocks": 40}, "canonical": {"N": 4096 * BLOCK, "blocks": 4096}},
    launch=lambda s: Launch(grid=s["blocks"], block=BLOCK),
    inputs=lambda s, rng: {"X": rng.integers(-(2**40), 2**40, s["N"], dtype=np.int64)},
    reference=_reference,
    tolerances={"Y": Tolerance(0.0, 0.0, "a copy is exact")},
    work=lambda s: Work(bytes=16 * s["N"]),
    seed=13,
)


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
