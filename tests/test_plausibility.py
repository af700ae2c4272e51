"""The plausibility gate and the launch-bound mark, and how those cases flow to history and export (no GPU)."""

from __future__ import annotations

import attrs
import pytest

from wfbench_core.gpu.plausibility import (LAUNCH_BOUND_FACTOR, MARGIN, Yardsticks, implausible, launch_bound,
                                       must_move_bytes)
from wfbench_core.record.results import IMPLAUSIBLE, OK, CaseResult, SideStats, Timing

MIB = 1 << 20


def _timing(wf_us: float, cuda_us: float, *, mode: str = "events", floor: float | None = 2.0, sets: int = 8) -> Timing:
    def side(us: float) -> SideStats:
        return SideStats(us, us, 0.0, 0.0, 3, (us, us, us))

    return Timing(launches_per_sample=100, order=("wf", "cuda", "wf"), timing_mode=mode, buffer_sets=sets,
                  launch_floor_us=floor, warpforth=side(wf_us), cuda=side(cuda_us), gap=wf_us / cuda_us)


H200 = Yardsticks(copy_gbps=4000.0, fp64_peak_gflops=16500.0, l2_bytes=60 * MIB)


def test_a_memory_bound_side_faster_than_the_copy_bandwidth_is_implausible() -> None:
    # 512 MiB per launch in 7.95 us: 67.5 TB/s, far over the run's 4 TB/s copy
    why = implausible(_timing(7.95, 105.35), work_bytes=512 * MIB, work_flops=0, yardsticks=H200)
    assert why == ("WarpForth: at least 512.0 MiB to move per launch in 7.95 us, 67531 GB/s, over 1.25x this "
                   "run's copy bandwidth of 4000 GB/s")
    # at the copy bandwidth, and up to the margin above it, it stands
    at_copy = 512 * MIB / (4000.0 * 1e3)
    assert implausible(_timing(at_copy, 140.0), work_bytes=512 * MIB, work_flops=0, yardsticks=H200) == ""
    assert implausible(_timing(at_copy / (1 + MARGIN) * 1.01, 140.0), work_bytes=512 * MIB, work_flops=0,
                       yardsticks=H200) == ""


def test_what_a_launch_must_move_depends_on_the_l2() -> None:
    assert must_move_bytes(512 * MIB, l2_bytes=60 * MIB, buffer_sets=8) == 512 * MIB  # rotated: nothing left
    assert must_move_bytes(96 * MIB, l2_bytes=60 * MIB, buffer_sets=1) == 36 * MIB  # one set: the L2 may hold 60
    assert must_move_bytes(12 * MIB, l2_bytes=60 * MIB, buffer_sets=2) == 0  # L2-resident: no DRAM bound
    assert must_move_bytes(512 * MIB, l2_bytes=0, buffer_sets=8) is None  # L2 unknown: not judged
    # an L2-resident case may beat the DRAM copy figure: it is not judged by it
    assert implausible(_timing(1.0, 1.2, floor=0.5, sets=2), work_bytes=12 * MIB, work_flops=0, yardsticks=H200) == ""


def test_flops_above_the_measured_peak_and_a_launch_under_the_floor_are_implausible() -> None:
    flops = 2 * 2048**3  # the matmul's 17.2 GFLOP in 0.5 ms: 34 TFLOP/s, over 1.25 x 16.5 TFLOP/s
    assert implausible(_timing(500.0, 1400.0), work_bytes=0, work_flops=flops, yardsticks=H200).startswith(
        "WarpForth: 1.72e+10 FLOPs per launch in 500 us, 34360 GFLOP/s, over 1.25x this run's f64 peak of 16500")
    assert implausible(_timing(3.0, 1.0, floor=2.0), work_bytes=0, work_flops=0, yardsticks=Yardsticks()) == (
        "CUDA: 1 us per launch, under the 2 us of an empty kernel timed the same way (events mode)")
    assert implausible(_timing(3.0, 1.7, floor=2.0), work_bytes=0, work_flops=0, yardsticks=Yardsticks()) == ""
    assert implausible(_timing(3.0, 1.0, floor=None), work_bytes=0, work_flops=0, yardsticks=Yardsticks()) == ""


def test_launch_bound_only_in_events_mode_within_the_factor_of_the_floor() -> None:
    assert launch_bound(_timing(5.0, 4.0, floor=2.5))
    assert not launch_bound(_timing(5.0, 4.0, floor=2.5, mode="graph"))
    assert not launch_bound(_timing(60.0, 50.0, floor=2.5))
    assert not launch_bound(_timing(5.0, 4.0, floor=None))
    assert launch_bound(_timing(9.0, LAUNCH_BOUND_FACTOR * 2.5, floor=2.5))


def _measured(wf_us: float, cuda_us: float, floor: float, yardsticks: Yardsticks) -> CaseResult:
    from wfbench_core.contracts import Measurement
    from wfbench_core.gpu.outcome import measured
    from wfbench_core.record.results import Costs, Sampled

    sampled = Sampled(samples_us={"wf": (wf_us,) * 6, "cuda": (cuda_us,) * 6}, order=("wf", "cuda") * 3,
                      launches_per_sample=100, buffer_sets=8, launch_floor_us=floor)
    base = CaseResult(id="scale_i64", version=1, priority="P0", fingerprint="f", status="error",
                      work_bytes=512 * MIB)
    m = Measurement(passed=True, message="", checks=(), kernel_attrs={}, costs=Costs(), sampled=sampled)
    return measured(base, m, "wf", unstable_noise=0.03, yardsticks=yardsticks)


def test_an_implausible_case_fails_with_the_figure_and_keeps_no_timing() -> None:
    r = _measured(7.95, 105.35, 2.0, H200)
    assert r.status == IMPLAUSIBLE and r.timing is None
    assert r.message == ("scale_i64[canonical] WarpForth: at least 512.0 MiB to move per launch in 7.95 us, "
                         "67531 GB/s, over 1.25x this run's copy bandwidth of 4000 GB/s: faster than this GPU can "
                         "run it; not kept")


def test_an_implausible_run_is_never_stored_and_exits_1() -> None:
    from wfbench_core.cli.common import finish
    from wfbench_core.errors import CaseFailed
    from wfbench_core.review.history import refusal
    from wfbench_core.record.results import CompilerInfo, Environment, RunResult, TimingProtocol

    run = RunResult(schema_version=4, suite_version=1, wfbench_version="t", created="2026-01-01T00:00:00Z",
                    mode="paired", protocol=TimingProtocol(), environment=Environment(),
                    warpforthc=CompilerInfo("warpforthc", "1"), cuda_compiler=CompilerInfo("nvcc", "13.0"),
                    cases=(_measured(7.95, 105.35, 2.0, H200),))
    why = refusal(run)
    assert why is not None and "scale_i64 IMPLAUSIBLE: scale_i64[canonical] WarpForth: at least 512.0 MiB" in why
    with pytest.raises(CaseFailed, match="1 case"):
        finish(run, None, as_json=True)


def test_a_launch_bound_case_is_kept_marked_and_left_out_of_trends() -> None:
    from wfbench_core.review.export import _trend
    from wfbench_core.review.series import point_of
    from wfbench_core.review.report import table_rows
    from wfbench_core.record.results import CompilerInfo, Environment, RunResult, TimingProtocol

    r = _measured(5.0, 4.0, 2.5, Yardsticks())  # 512 MiB in 5 us would be implausible: no copy figure here
    assert r.status == OK and r.timing is not None and r.timing.launch_bound
    assert r.message == ("launch-bound: 4 us per launch is within 2x of an empty kernel's 2.5 us in events mode, "
                         "so the host's launch rate was timed; kept, left out of trends; time it with "
                         "--timing-mode graph")
    run = RunResult(schema_version=4, suite_version=1, wfbench_version="t", created="2026-01-01T00:00:00Z",
                    mode="paired", protocol=TimingProtocol(), environment=Environment(),
                    warpforthc=CompilerInfo("warpforthc", "1"), cuda_compiler=CompilerInfo("nvcc", "13.0"), cases=(r,))
    point = point_of(run, r, "run.json")
    assert point.launch_bound and not point.stable and not _trend(r)
    assert table_rows(run)[1][-1] == "OK LAUNCH-BOUND"
    unbound = attrs.evolve(r, timing=attrs.evolve(r.timing, launch_bound=False))
    assert point_of(run, unbound, "run.json").stable and _trend(unbound)


def test_results_of_schema_3_still_load_and_schema_4_round_trips() -> None:
    import json
    from pathlib import Path

    from wfbench_core.record.results import SCHEMA_VERSION, dumps, load_result, parse_result

    new_in_4 = {"launch_floor_us", "placement_checks", "launch_bound", "placement_checks_s", "placement", "buffer_set"}

    def as_schema_3(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            return {k: as_schema_3(v) for k, v in value.items() if k not in new_in_4}
        return [as_schema_3(v) for v in value] if isinstance(value, list) else value

    current = load_result(Path(__file__).parent / "fixtures" / "h200-run1.json")
    raw = as_schema_3(json.loads(dumps(current)))
    assert "launch_floor_us" not in json.dumps(raw)
    run = parse_result(json.dumps({**raw, "schema_version": 3}))
    assert SCHEMA_VERSION == 6 and run.schema_version == 6 and run == current
    t = next(c.timing for c in run.cases if c.timing is not None)
    assert t.launch_floor_us is None and t.placement_checks == 0 and not t.launch_bound
    assert parse_result(dumps(run)) == run


def test_the_docs_state_the_margins_the_gate_uses() -> None:
    from pathlib import Path

    docs = Path(__file__).parents[1] / "docs"
    for page in ("timing.md", "methodology.md"):
        text = " ".join((docs / page).read_text().split())
        assert f"launch floor / {1 + MARGIN:g}" in text or f"the floor / {1 + MARGIN:g}" in text, page
        assert f"{1 + MARGIN:g} x the run's" in text and f"{LAUNCH_BOUND_FACTOR:g} x the" in text, page
