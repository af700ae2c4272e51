"""The throttle rule: a case timed while the GPU throttled leaves the trends only when its gap moved with the
clock (dipped pairs against clean ones, beyond noise) or when clean samples could not be had."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from synth_runs import synth_run
from wfbench_core.review.series import point_of
from pathlib import Path

from wfbench_core.gpu.sampling import clocks_match
from wfbench_core.record.results import NvmlSummary, Timing, load_result
from wfbench_core.stats import summarize
from wfbench_core.review.throttle import MIN_CLEAN, judge_throttle, pair_clocks

HOT = NvmlSummary(n=70, sm_mhz_min=1890, sm_mhz_median=1980, sm_mhz_max=1980, reasons=("sw_power_cap",),
                  power_throttled=True)


def timing(dipped: set[int], *, gap_moves: float = 0.0, clock_slows: float = 0.045, seed: int = 1,
           pairs: int = 60) -> Timing:
    """``pairs`` pairs over pairs/2 placements after one second of warm-up (10 readings at 1980 MHz), one NVML
    reading per pair, the pairs in ``dipped`` read at 1890 MHz: both sides slower by ``clock_slows`` there, and
    the WarpForth side by ``gap_moves`` more."""
    rng = np.random.default_rng(seed)
    where = tuple(i // 2 for i in range(pairs))
    place = np.exp(rng.normal(0.0, 0.001, pairs // 2))[np.asarray(where)]
    slow = np.array([1.0 + clock_slows if i in dipped else 1.0 for i in range(pairs)])
    cu = 100.0 * place * slow * (1.0 + 0.0005 * rng.standard_normal(pairs))
    moved = np.array([1.0 + gap_moves if i in dipped else 1.0 for i in range(pairs)])
    wf = 112.5 * place * slow * moved * (1.0 + 0.0005 * rng.standard_normal(pairs))
    clocks = (1980,) * 10 + tuple(1890 if i in dipped else 1980 for i in range(pairs))
    w, c = summarize(wf), summarize(cu)
    return Timing(launches_per_sample=10, warmup_busy_s=1.0, warpforth=w, cuda=c, gap=w.median_us / c.median_us,
                  order=("wf", "cuda") * (pairs // 2), clocks_sm_mhz=clocks, placement_of=where,
                  placements=pairs // 2, nvml=HOT, throttled=True)


def test_readings_are_spread_over_the_pairs_after_the_warm_up() -> None:
    t = timing({3, 4})
    clocks = pair_clocks(t)
    assert clocks is not None and len(clocks) == 60 and [i for i, c in enumerate(clocks) if c < 1980] == [3, 4]
    assert pair_clocks(attrs.evolve(t, clocks_sm_mhz=())) is None


def test_a_few_dipped_pairs_whose_gap_held_keep_the_case_in_trends() -> None:
    """As reduce_sum_f64 on an H200: 6 readings of 53 below the full clock, the paired gap unmoved."""
    call = judge_throttle(timing({5, 6, 20, 21, 40, 41}))
    assert not call.leaves_trends and (call.dipped, call.clean) == (6, 54)
    assert call.moved_lo < 0 < call.moved_hi and "within noise, kept" in call.why


def test_a_gap_that_moved_with_the_clock_leaves_the_trends() -> None:
    call = judge_throttle(timing({5, 6, 20, 21, 40, 41, 50, 51}, gap_moves=0.01))
    assert call.leaves_trends and call.moved == pytest.approx(0.01, abs=0.002) and call.moved_lo > 0
    assert "it moved with the clock" in call.why


def test_without_clean_samples_or_readings_the_case_leaves() -> None:
    call = judge_throttle(timing(set(range(60 - MIN_CLEAN + 1))))
    assert call.leaves_trends and call.why.startswith("clean samples could not be had: 9 of 60 pairs")
    none = judge_throttle(attrs.evolve(timing({1}), clocks_sm_mhz=()))
    assert none.leaves_trends and "no clock readings" in none.why
    assert judge_throttle(attrs.evolve(timing({1}), throttled=False)) == judge_throttle(
        attrs.evolve(timing(set()), throttled=False))
    assert not judge_throttle(attrs.evolve(timing({1}), throttled=False)).leaves_trends


def test_trends_follow_the_rule() -> None:
    run = synth_run(0)
    case = run.case("axpy_f64")
    kept = attrs.evolve(case, timing=timing({5, 6, 20, 21, 40, 41}))
    moved = attrs.evolve(case, timing=timing({5, 6, 20, 21, 40, 41, 50, 51}, gap_moves=0.01))
    assert point_of(run, kept, "r.json").stable and not point_of(run, moved, "r.json").stable


def test_each_pairs_own_clock_decides_where_recorded() -> None:
    """NVML's readings, spread over the pairs, show no dip; the pairs' in-band clocks show the dipped ones."""
    dips = {5, 6, 20, 21, 40, 41, 50, 51}
    moved = attrs.evolve(timing(dips, gap_moves=0.01), clocks_sm_mhz=(1980,) * 70)
    assert judge_throttle(moved).dipped == 0  # the readings alone cannot tell
    own = attrs.evolve(moved, pair_sm_mhz=tuple(1890.0 if i in dips else 1979.5 for i in range(60)))
    call = judge_throttle(own)
    assert pair_clocks(own) == list(own.pair_sm_mhz)
    assert call.leaves_trends and (call.dipped, call.clean) == (8, 52) and "1980 MHz" not in call.why


def test_a_case_whose_dipped_pairs_were_retaken_stays_in_trends() -> None:
    """NVML flagged a power cap and its readings dipped, but every kept pair ran at the full clock."""
    nvml_only = timing({5, 6, 20, 21, 40, 41, 50, 51}, gap_moves=0.01)
    assert judge_throttle(nvml_only).leaves_trends
    t = attrs.evolve(nvml_only, pair_sm_mhz=(1980.0,) * 60, clock_retakes=8)
    call = judge_throttle(t)
    assert not call.leaves_trends and call.dipped == 0 and "no pair ran below 99.5%" in call.why


def test_the_runs_throttle_line_counts_retaken_pairs_and_cases_left_out() -> None:
    from synth_runs import with_case
    from wfbench_core.review.report import nvml_notes

    run = synth_run(0)
    assert "throttle:" not in nvml_notes(run)
    retaken = attrs.evolve(timing({5, 6}), pair_sm_mhz=(1980.0,) * 60, clock_retakes=7)
    run = with_case(with_case(run, "axpy_f64", timing=retaken), "scale_i64",
                    timing=timing({5, 6, 20, 21, 40, 41, 50, 51}, gap_moves=0.01))
    notes = nvml_notes(run)
    timed = sum(1 for c in run.cases if c.timing is not None)
    assert f"throttle: 7 pairs re-taken under the clock floor (99.5% of a case's top SM clock) in 1 of {timed} " \
           "cases; 1 left out of trends (scale_i64)" in notes
    assert "axpy_f64: throttled while timed (SM 1890-1980 MHz" in notes and "7 pairs re-taken)" in notes


def with_side_clocks(t: Timing, trace: list[tuple[float, float]]) -> Timing:
    return attrs.evolve(t, pair_side_mhz=tuple(trace))


def test_a_case_at_the_power_cap_stays_in_trends_when_its_sides_ran_at_matching_clocks() -> None:
    """polynomial_f64 on the H200: at its 700 W cap every pair ran below the top clock (the old rule found 3 of
    42 pairs at the full clock and left it out of every trend). A stand-in clock trace at the cap, each pair's
    two sides at the same clock, 1755 to 1980 MHz from pair to pair: every pair counts, the case stays."""
    cap = [(1755.0 + 5.0 * (i % 46),) * 2 for i in range(60)]
    t = with_side_clocks(timing(set(range(57))), cap)
    old = judge_throttle(attrs.evolve(t, pair_side_mhz=()))
    assert old.leaves_trends and "clean samples could not be had" in old.why
    call = judge_throttle(t)
    assert not call.leaves_trends and (call.dipped, call.clean) == (0, 60)
    assert call.why == "every pair's sides ran at matching clocks (1755-1980 MHz): kept"
    run = synth_run(0)
    case = run.case("axpy_f64")
    capped = attrs.evolve(case, timing=attrs.evolve(case.timing, throttled=True, nvml=HOT,
                                                    pair_side_mhz=tuple(cap[:len(case.timing.warpforth.samples_us)])))
    assert point_of(run, capped, "r.json").stable


def test_a_clock_event_inside_pairs_still_takes_the_case_out() -> None:
    """The same trace with a clock or thermal event inside 8 pairs (one side at 1890 MHz, the other at 1980):
    those pairs do not count; their gap moved with the clock, so the case leaves; without the move it stays;
    with too few matched pairs it leaves."""
    event = {5, 6, 20, 21, 40, 41, 50, 51}
    trace = [(1980.0, 1890.0) if i in event else (1900.0, 1900.0) for i in range(60)]
    moved = judge_throttle(with_side_clocks(timing(event, gap_moves=0.01), trace))
    assert moved.leaves_trends and (moved.dipped, moved.clean) == (8, 52) and "it moved with the clock" in moved.why
    assert "8 pairs whose sides ran at different clocks" in moved.why
    held = judge_throttle(with_side_clocks(timing(event), trace))
    assert not held.leaves_trends and "within noise, kept" in held.why
    most = [(1980.0, 1890.0) if i < 55 else (1900.0, 1900.0) for i in range(60)]
    gone = judge_throttle(with_side_clocks(timing(set(range(55))), most))
    assert gone.leaves_trends and gone.why.startswith("clean samples could not be had: 5 of 60 pairs")


ROOT = Path(__file__).resolve().parent.parent
BOARD_AT_CAP = ROOT / "docs" / "results" / "boards" / "h200-p0-GPU-7351bb7e.json"


def test_a_real_h200_trace_at_the_power_cap_keeps_the_case_where_its_gap_did_not_move() -> None:
    """polynomial_f64 on an H200 at its 700 W cap (stored run): the clock moved from launch to launch, and 19 of
    30 pairs had one side more than 0.5 % below the other (WarpForth's side in 5, CUDA's in 14: both ways). Matched pairs
    were fewer than mismatched ones; the old rule left the case out ("clean samples could not be had"). The
    mismatched pairs' gap is within noise of the matched ones': the case stays in the trends."""
    t = load_result(BOARD_AT_CAP).case("polynomial_f64").timing
    assert t is not None and t.throttled and "sw_power_cap" in t.nvml.reasons
    wf_low = sum(1 for wf, cu in t.pair_side_mhz if not clocks_match((wf, cu)) and wf < cu)
    cu_low = sum(1 for wf, cu in t.pair_side_mhz if not clocks_match((wf, cu)) and cu < wf)
    assert (wf_low, cu_low) == (5, 14)  # both ways
    call = judge_throttle(t)
    assert (call.dipped, call.clean) == (19, 11) and MIN_CLEAN <= call.clean < call.dipped
    assert not call.leaves_trends and "within noise, kept" in call.why, call.why
    assert call.moved_lo is not None and call.moved_lo < 0.0 < call.moved_hi


def test_the_stored_power_cap_runs_are_judged_as_the_docs_say() -> None:
    """docs/timing.md's power-cap runs: every run re-judged by the rule; the runs that left the trends stopped
    re-taking at a quarter's budget with fewer than MIN_CLEAN matched pairs, where the sampler now goes on, and
    every run with the longer budget stayed in the trends."""
    from pathlib import Path

    from wfbench_core.gpu.sampling import clocks_match, max_clock_retakes
    from wfbench_core.record.results import load_result

    folder = Path(__file__).parent.parent / "docs" / "results" / "power-cap"
    runs = [load_result(p) for p in sorted(folder.glob("*.json"))]
    assert len(runs) == 15 and len({r.environment.gpu_uuid for r in runs}) == 3
    longer = 0
    for r in runs:
        (c,) = r.cases
        t = c.timing
        assert c.id == "polynomial_f64" and t.throttled and "sw_power_cap" in t.nvml.reasons
        matched = sum(clocks_match(p) for p in t.pair_side_mhz)
        if judge_throttle(t).leaves_trends:
            assert matched < MIN_CLEAN and t.clock_retakes == max_clock_retakes(r.protocol.samples)
            assert max_clock_retakes(r.protocol.samples, matched) > t.clock_retakes  # the sampler now goes on
        longer += not r.environment.gpu_uuid.startswith("GPU-136ba197")
    assert longer == 10
    assert sum(not judge_throttle(r.cases[0].timing).leaves_trends for r in runs
               if not r.environment.gpu_uuid.startswith("GPU-136ba197")) == 10
