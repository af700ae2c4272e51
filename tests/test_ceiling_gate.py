"""The plausibility gate on a library ceiling: judged against the peak of the arithmetic it runs (a DGEMM that
may use the FP64 tensor cores against the tensor-f64 peak), by main's one rule (wfbench_core.record.yardsticks),
both when it is timed and when a stored result is read back (no GPU)."""

from __future__ import annotations

from pathlib import Path

import attrs

from wfbench_core.ceiling import LABEL
from wfbench_core.contracts import CeilingMeasured, Measurement
from wfbench_core.gpu.outcome import ceiling_result
from wfbench_core.gpu.plausibility import MARGIN, Yardsticks, flop_peak
from wfbench_core.record.consistency import problem
from wfbench_core.record.results import (CEILING_IMPLAUSIBLE, CEILING_OK, Check, CeilingResult, Costs, SideStats,
                                         load_result)
from wfbench_core.record.timing_record import Sampled
from wfbench_cases.ceilings import DGEMM

SUITE = Path(__file__).resolve().parents[1] / "docs" / "results" / "h200-suite17.json"


def _stored():  # type: ignore[no-untyped-def]
    """The stored H200 run and its matmul_f64_naive (17.2 GFLOP per launch), and the run's yardsticks."""
    run = load_result(SUITE)
    return run, attrs.evolve(run.case("matmul_f64_naive"), work_flop_type="f64"), Yardsticks.of(run.environment)


def _us_at(case, gflops: float) -> float:  # type: ignore[no-untyped-def]
    return case.work_flops / (gflops * 1e3)


def _measured(case, ceiling_us: float) -> Measurement:  # type: ignore[no-untyped-def]
    t = case.timing
    n = len(t.warpforth.samples_us)
    sampled = Sampled(samples_us={"wf": t.warpforth.samples_us, "cuda": t.cuda.samples_us, LABEL: (ceiling_us,) * n},
                      order=("wf",) * n)
    ok = Check("canonical", LABEL, "reference", "C", True, 0.0, 0.0, 0, 100)
    return Measurement(True, "", (), {}, Costs(), sampled=sampled,
                       ceiling=CeilingMeasured(checks=(ok,), timing_mode="events"))


def test_a_tensor_core_dgemm_ceiling_is_judged_against_the_tensor_f64_peak() -> None:
    """At 1.5x the f64 FMA peak a DGEMM is over 1.25x what vector f64 can do, but under the tensor-f64 peak
    (2x the FMA peak on sm_90): the DGEMM ceiling, declared tensor-f64, is kept; judged as the case's own f64 it
    would be implausible; at 3x the FMA peak it is over the tensor-f64 peak too and is not kept."""
    _, case, y = _stored()
    fma, tensor = flop_peak("f64", y)[0], flop_peak("tensor-f64", y)[0]  # type: ignore[index]
    assert fma * (1 + MARGIN) < 1.5 * fma < tensor * (1 + MARGIN) < 3 * fma
    kept = ceiling_result(DGEMM, _measured(case, _us_at(case, 1.5 * fma)), case, "wf", yardsticks=y)
    assert kept.status == CEILING_OK and kept.flop_type == "tensor-f64" and kept.stats is not None
    as_vector = ceiling_result(attrs.evolve(DGEMM, flop_type=""), _measured(case, _us_at(case, 1.5 * fma)), case, "wf",
                               yardsticks=y)
    assert as_vector.status == CEILING_IMPLAUSIBLE and "over 1.25x the f64 peak" in as_vector.message
    too_fast = ceiling_result(DGEMM, _measured(case, _us_at(case, 3 * fma)), case, "wf", yardsticks=y)
    assert too_fast.status == CEILING_IMPLAUSIBLE and too_fast.stats is None and too_fast.ratio is None
    assert too_fast.message.startswith("matmul_f64_naive cuBLAS ceiling: 1.72e+10 tensor-f64 FLOPs per launch")
    assert "over 1.25x the tensor-f64 peak" in too_fast.message


def test_a_stored_ceiling_faster_than_its_operations_peak_is_refused_on_reading() -> None:
    """The same rule judges a result read back: a timed ceiling over its recorded type's peak makes the run's
    result refused, naming the case; under it, the run stands."""
    run, case, y = _stored()
    fma = flop_peak("f64", y)[0]  # type: ignore[index]

    def with_ceiling(gflops: float, flop_type: str):  # type: ignore[no-untyped-def]
        us = _us_at(case, gflops)
        ceiling = CeilingResult(library="cuBLAS", routine="cublasDgemm", package="cupy-cuda13x",
                                library_version="14.2.0", status=CEILING_OK, flop_type=flop_type,
                                stats=SideStats(us, us, 0.0, 0.0, 3, (us, us, us)),
                                ratio=case.timing.warpforth.median_us / us)
        return attrs.evolve(run, cases=tuple(attrs.evolve(c, ceiling=ceiling) if c.id == case.id else c
                                             for c in run.cases))

    assert problem(run) == ""
    assert problem(with_ceiling(1.5 * fma, "tensor-f64")) == ""
    why = problem(with_ceiling(3 * fma, "tensor-f64"))
    assert why.startswith("case 'matmul_f64_naive' has a timed library ceiling, but cuBLAS ceiling: ")
    assert why.endswith("faster than this GPU can run it; refused")
    assert "over 1.25x the f64 peak" in problem(with_ceiling(1.5 * fma, "f64"))
