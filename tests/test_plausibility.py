"""The plausibility gate and the launch-bound mark, and how those cases flow to history and export (no GPU)."""

from __future__ import annotations

import attrs
import pytest

from wfbench_core.gpu.plausibility import (LAUNCH_BOUND_FACTOR, MARGIN, Yardsticks, default_flop_type, flop_peak,
                                           implausible, implausible_result, launch_bound, must_move_bytes)
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
    assert implausible(_timing(500.0, 1400.0), work_bytes=0, work_flops=flops, yardsticks=H200,
                       flop_type="f64-no-fma") == (
        "WarpForth: 1.72e+10 f64-no-fma FLOPs per launch in 500 us, 34360 GFLOP/s, over 1.25x the f64-no-fma peak "
        "of 16500 GFLOP/s (this run's measured f64 add/multiply peak of 16500 GFLOP/s)")
    # with FMA (2 FLOPs each) the f64 peak is twice the add/multiply one: 34 TFLOP/s stands, 50 does not
    assert implausible(_timing(500.0, 1400.0), work_bytes=0, work_flops=flops, yardsticks=H200, flop_type="f64") == ""
    assert "over 1.25x the f64 peak of 33000 GFLOP/s (2x this run's measured f64 add/multiply peak of 16500 " \
           "GFLOP/s (an FMA counts 2 FLOPs))" in implausible(_timing(340.0, 1400.0), work_bytes=0, work_flops=flops,
                                                            yardsticks=H200, flop_type="f64")
    assert implausible(_timing(3.0, 3.0), work_bytes=0, work_flops=flops, yardsticks=H200) == "", "no type: not judged"
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
    assert point.launch_bound and not point.stable and not _trend(run, r)
    assert table_rows(run)[1][-1] == "OK LAUNCH-BOUND"
    unbound = attrs.evolve(r, timing=attrs.evolve(r.timing, launch_bound=False))
    assert point_of(run, unbound, "run.json").stable and _trend(run, unbound)


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


# the H200 of the issue: the gate's old bound, 1.25 x the f64 add/multiply peak, was 16.6 TFLOP/s
H200_RUN = Yardsticks(copy_gbps=4150.0, fp64_peak_gflops=13300.0, l2_bytes=60 * MIB, compute_capability="9.0")


def test_flops_are_judged_against_the_peak_of_their_type() -> None:
    """A correct f32 SGEMM-like case at 30 TFLOP/s was IMPLAUSIBLE against the f64 bound; against the f32 peak
    (sm_90 runs f32 at twice the f64 rate, an FMA counts 2) it stands. A tensor-core DGEMM at 50 TFLOP/s stands
    as tensor-f64 and not as vector f64; a consumer part's f32 peak is 64x its f64 rate."""
    sgemm = 2 * 4096**3  # 137 GFLOP in 4.58 ms: 30 TFLOP/s
    us = sgemm / 30e6
    assert implausible(_timing(us, us * 1.1), work_bytes=0, work_flops=sgemm, yardsticks=H200_RUN, flop_type="f32") == ""
    assert "over 1.25x the f64-no-fma peak" in implausible(_timing(us, us * 1.1), work_bytes=0, work_flops=sgemm,
                                                            yardsticks=H200_RUN, flop_type="f64-no-fma")
    assert flop_peak("f32", H200_RUN) == (53200.0, "4x this run's measured f64 add/multiply peak of 13300 GFLOP/s: "
                                                    "sm_90's known f32:f64 rate of 2")
    dgemm = 2 * 8192**3
    us = dgemm / 50e6
    assert implausible(_timing(us, us), work_bytes=0, work_flops=dgemm, yardsticks=H200_RUN, flop_type="tensor-f64") == ""
    assert implausible(_timing(us, us), work_bytes=0, work_flops=dgemm, yardsticks=H200_RUN, flop_type="f64") != ""
    assert flop_peak("tensor-f16", H200_RUN)[0] == 16 * 53200.0  # H100's 989 TFLOP/s dense is 14.8x its f32
    ada = attrs.evolve(H200_RUN, fp64_peak_gflops=640.0, compute_capability="8.9")
    assert flop_peak("f32", ada)[0] == 2 * 64 * 640.0  # 82 TFLOP/s: an RTX 4090's
    unknown = flop_peak("f32", attrs.evolve(H200_RUN, compute_capability="11.0"))
    assert unknown is not None and "the most lenient known f32:f64 rate, 64 (compute capability 11.0" in unknown[1]
    assert flop_peak("f32", Yardsticks()) is None and flop_peak("int8", H200_RUN) is None


def test_the_skip_work_kernel_still_fails_and_bytes_are_the_buffers_given() -> None:
    """The demonstrated skip-work kernel (a scale over 512 MiB read in 52 us, 10322 GB/s) fails on its bytes
    whatever its FLOP type. The bytes are the case's declaration, but never more than the buffers it was given:
    a declaration of 512 MiB over 96 MiB of buffers is judged on 96 MiB."""
    skip = attrs.evolve(_timing(52.0, 105.0), buffer_bytes=512 * MIB)
    for kind in ("f32", "f64", "tensor-f16"):
        why = implausible(skip, work_bytes=512 * MIB, work_flops=64 * MIB, yardsticks=H200_RUN, flop_type=kind)
        assert why.startswith("WarpForth: at least 512.0 MiB to move per launch in 52 us, 10324 GB/s, over 1.25x")
    honest_us = 96 * MIB / 4150e3  # 96 MiB at the copy bandwidth
    given = attrs.evolve(_timing(honest_us, honest_us), buffer_bytes=96 * MIB)
    assert implausible(given, work_bytes=512 * MIB, work_flops=0, yardsticks=H200_RUN) == ""
    assert implausible(attrs.evolve(given, buffer_bytes=0), work_bytes=512 * MIB, work_flops=0,
                       yardsticks=H200_RUN) != "", "no buffers recorded: the declaration"


def test_a_stored_result_is_judged_by_its_recorded_yardsticks() -> None:
    from pathlib import Path

    from wfbench_core.record.results import load_result

    run = load_result(Path(__file__).parent / "fixtures" / "h200-run1.json")
    assert Yardsticks.of(run.environment).copy_gbps == run.environment.copy_gbps
    assert all(implausible_result(c, run.environment) == "" for c in run.cases)
    case = run.cases[0]
    fast = attrs.evolve(case, timing=attrs.evolve(case.timing, warpforth=attrs.evolve(case.timing.warpforth,
                                                                                       median_us=0.01)))
    assert implausible_result(fast, run.environment).startswith("WarpForth: ")


def test_a_case_records_the_type_of_its_flops() -> None:
    from wfbench_core.discover.registry import Registry
    from wfbench_core.gpu.outcome import case_result

    reg = Registry.load()
    assert case_result(reg.case("attention_f32_naive"), mode="paired", plugin="").work_flop_type == "f32"
    assert case_result(reg.case("matmul_f64_naive"), mode="paired", plugin="").work_flop_type == "f64"
    assert default_flop_type(["int64"]) == "" and default_flop_type(["float32", "float64"]) == "f64"
