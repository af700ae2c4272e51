"""The one verdict rule, the intervals it reads and the variance components they carry: exact cases, then
simulations through the real functions (fixed seeds, tolerant bounds) that a broken rule fails."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from wfbench_core.review import evidence, verdicts
from wfbench_core import stats
from wfbench_core.stats import LogEstimate
from testkit import load_tool

V = verdicts
ROOT = Path(__file__).parents[1]


def _figures_tool():  # type: ignore[no-untyped-def]
    return load_tool("verdict_figures")

FIG = _figures_tool()


# -- the rule -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lo, hi, want", [
    (0.0021, 0.004, V.SLOWER), (0.002, 0.004, V.AMBIGUOUS), (-0.004, -0.0021, V.FASTER),
    (-0.002, 0.002, V.SAME), (-0.0019, 0.0005, V.SAME), (-0.001, 0.0025, V.AMBIGUOUS), (-0.01, 0.01, V.AMBIGUOUS),
])
def test_the_rule_at_its_bounds(lo: float, hi: float, want: str) -> None:
    assert V.rule(lo, hi, V.margin_of()) == want


def test_a_wider_minimum_effect_leaves_a_gap_between_same_and_slower() -> None:
    m = V.margin_of(min_effect=0.01)
    assert (m.margin, m.min_effect) == (V.DEFAULT_MARGIN, 0.01)
    assert V.rule(0.005, 0.008, m) == V.AMBIGUOUS and V.rule(0.011, 0.02, m) == V.SLOWER


def test_the_margin_is_the_a_a_floor_only_where_it_is_wider() -> None:
    assert V.margin_of(0.004, "same run").margin == 0.004 and "A/A floor 0.40%" in V.margin_of(0.004, "x").basis
    narrow = V.margin_of(0.0005, "same run")
    assert narrow.margin == V.DEFAULT_MARGIN and "A/A floor 0.05%" in narrow.basis
    assert V.margin_of().basis == "default 0.20% (no A/A floor measured)"
    assert V.aa_floor([0.001, -0.003, float("nan")]) == 0.003 and V.aa_floor([]) is None


def test_judge_orders_identity_and_baseline_before_the_statistics() -> None:
    slow = LogEstimate(math.log(1.05), 0.001, 29.0, "b")
    assert V.judge(slow, V.margin_of()).label == "SLOWER"
    same = V.judge(slow, V.margin_of(), identical_code=True, qualifiers=[V.OTHER_BOARD])
    assert same.verdict == V.SAME and same.label == "SAME (identical code, moved, other board)" and same.moved
    assert V.judge(slow, V.margin_of(), baseline_changed=True).verdict == V.BASELINE_CHANGED
    assert not V.judge(slow, V.margin_of(), baseline_changed=True).regression


def test_estimates_intervals_and_satterthwaite() -> None:
    e = LogEstimate(0.0, 0.01, math.inf)
    lo, hi = e.interval()
    assert math.log(hi) == pytest.approx(1.959964 * 0.01, rel=1e-5) and lo == pytest.approx(1 / hi)
    assert math.log(LogEstimate(0.0, 0.01, 5).interval()[1]) == pytest.approx(2.570582 * 0.01, rel=1e-5)
    c = stats.combine([LogEstimate(0, 0.01, 10), LogEstimate(0, 0.01, 10)], 0.5)
    assert c.se == pytest.approx(math.sqrt(2) * 0.01) and c.df == pytest.approx(20) and c.value == 0.5
    assert stats.combine([LogEstimate(0, 0.01, math.inf), LogEstimate(0, 0.0, 3)], 0.0).df == math.inf


def test_cluster_estimate_resamples_processes_when_there_are_several() -> None:
    rng = np.random.default_rng(1)
    wf, cu, where = FIG.repeat_run(rng, 0.001)
    est = stats.gap_estimate(wf, cu, where)
    assert est.df == 5 and est.basis == "bootstrap over 6 processes, then placements"
    assert est.value == pytest.approx(math.log(np.median(wf) / np.median(cu)))
    flat = stats.gap_estimate(wf, cu, where % stats.PROCESS_STRIDE + 30 * (where // stats.PROCESS_STRIDE))
    assert flat.df == 179 and flat.basis == "bootstrap over 180 placements" and flat.se < est.se
    assert stats.gap_estimate(wf[:4], cu[:4], [0, 0, 0, 0]) is None
    (lo, hi), method = stats.run_gap_interval(wf, cu, where)
    assert method == stats.HIERARCHICAL_INTERVAL and (lo, hi) == pytest.approx(est.interval())
    single, method = stats.run_gap_interval(wf[:60], cu[:60], where[:60])
    assert method == stats.GAP_INTERVAL_METHOD and single == stats.gap_interval(wf[:60], cu[:60], where[:60])


# -- variance components ------------------------------------------------------------------------------------


def _observations(rng: np.random.Generator, boards: int, processes: int, board_sd: float, process_sd: float,
                  codes: int = 2) -> list[evidence.Observation]:
    out = []
    for code in range(codes):
        mu = rng.normal(0.0, 0.05)  # each code its own level: never mixed into the components
        for b in range(boards):
            beta = rng.normal(0.0, board_sd)
            out += [evidence.Observation(f"c{code}", f"b{b}", mu + beta + rng.normal(0.0, process_sd))
                    for _ in range(processes)]
    return out


def test_variance_components_recover_what_boards_and_processes_add() -> None:
    rng = np.random.default_rng(4)
    comps = evidence.variance_components(_observations(rng, 20, 3, board_sd=0.003, process_sd=0.001))
    assert comps.process.se == pytest.approx(0.001, rel=0.2) and comps.process.df == 2 * 20 * 2
    assert comps.new_board.se == pytest.approx(math.hypot(0.003, 0.001), rel=0.25)
    assert "measured" in comps.new_board.basis and comps.new_board.df > 10


def test_one_run_per_board_measures_board_and_process_together() -> None:
    rng = np.random.default_rng(8)
    comps = evidence.variance_components(_observations(rng, 12, 1, board_sd=0.004, process_sd=0.0, codes=1))
    assert comps.process.basis == "process 0.10% default" and comps.new_board.df == 11
    assert comps.new_board.se == pytest.approx(0.004, rel=0.3)


def test_components_are_defaults_until_measured_and_never_trust_a_small_few() -> None:
    none = evidence.variance_components([])
    assert (none.process.se, none.process.df) == (evidence.DEFAULT_PROCESS_SD, math.inf)
    assert none.new_board.se == pytest.approx(math.hypot(evidence.DEFAULT_BOARD_SD, evidence.DEFAULT_PROCESS_SD))
    two = [evidence.Observation("c", "b", x) for x in (0.0, 0.00001)]  # two processes that happen to agree
    assert evidence.variance_components(two).process.basis == "process 0.10% default"
    wide = [evidence.Observation("c", "b", x) for x in (0.0, 0.02)]  # two that do not: believed at once
    assert evidence.variance_components(wide).process.se == pytest.approx(0.02 / math.sqrt(2))
    one = evidence.components([], gpu_name="NVIDIA H200", one_placement=True)
    assert one.process.se == evidence.ONE_PLACEMENT_PROCESS_SD
    assert "timed at one placement" in one.new_board.basis


def test_the_board_default_is_the_one_measured_for_the_gpu_model_else_the_largest_measured() -> None:
    """Boards of one model differ by that model's amount (H100 boards about three times as much as H200 boards),
    so a run's interval carries its own model's measured component, and a model never measured the largest."""
    h200, h100 = evidence.MEASURED_BOARD_SD["NVIDIA H200"], evidence.MEASURED_BOARD_SD["NVIDIA H100 80GB HBM3"]
    assert h100 > 2 * h200 and evidence.DEFAULT_BOARD_SD == h100
    for name, sd in (("NVIDIA H200", h200), ("NVIDIA H100 80GB HBM3", h100), ("NVIDIA B200", h100)):
        comps = evidence.components([], gpu_name=name)
        assert comps.new_board.se == pytest.approx(math.hypot(sd, evidence.DEFAULT_PROCESS_SD))
        assert f"board {sd:.2%} default (" in comps.new_board.basis
    assert "measured on NVIDIA H200 boards" in evidence.components([], gpu_name="NVIDIA H200").new_board.basis
    assert "not measured" in evidence.components([], gpu_name="NVIDIA B200").new_board.basis


def test_a_run_on_an_unseen_board_carries_the_board_component() -> None:
    comps = evidence.variance_components([])
    unseen = evidence.change_against_reference(0.0, comps, reference_boards=["a"] * 10, board="new")
    seen = evidence.change_against_reference(0.0, comps, reference_boards=["a"] * 10, board="a")
    spread = evidence.change_against_reference(0.0, comps, reference_boards=[f"b{i}" for i in range(10)], board="new")
    board_var = evidence.DEFAULT_BOARD_SD ** 2
    assert seen.se == pytest.approx(evidence.DEFAULT_PROCESS_SD * math.sqrt(1.1))
    # board effects weigh 2 here, processes 1.1: the process part is taken at the board's weight (conservative)
    assert unseen.se ** 2 == pytest.approx(2 * (board_var + evidence.DEFAULT_PROCESS_SD ** 2))
    assert spread.se ** 2 == pytest.approx(1.1 * board_var + 1.1 * evidence.DEFAULT_PROCESS_SD ** 2)


# -- simulations through the real functions ---------------------------------------------------------------


@pytest.mark.parametrize("process_sd", [0.0005, 0.001])
def test_repeat_intervals_cover_when_processes_differ(process_sd: float) -> None:
    """Six fresh processes that differ by 0.05-0.10 %: the interval over processes, then placements, covers
    the true gap about 95 % of the time; the placements-only one did not."""
    got = FIG.repeat_coverage(process_sd, trials=120, seed=23)
    assert 0.9 <= got["processes_then_placements"] <= 1.0
    if process_sd >= 0.001:
        assert got["placements_only"] < 0.75


def test_a_verdict_rule_that_ignores_placements_or_intervals_fails_this_test() -> None:
    """New code with no cost, few placements of many pairs, each placement meeting the new code its own way:
    the real rule gives no SLOWER or FASTER; the same rule on pairs, and the point estimate against the
    margin, do. And a real +0.5 % on the default protocol is SLOWER in every trial."""
    def false(rates: dict[str, float]) -> float:
        return rates[V.SLOWER] + rates[V.FASTER]

    assert false(FIG.verdict_rates(FIG.real_rule, 0.0, "few placements", 80)) <= 0.05
    assert false(FIG.verdict_rates(FIG.pairs_rule, 0.0, "few placements", 80)) > 0.08
    assert false(FIG.verdict_rates(FIG.point_rule, 0.0, "few placements", 80)) > 0.3
    assert FIG.verdict_rates(FIG.real_rule, 0.005, "default protocol", 40)[V.SLOWER] >= 0.95


def test_the_docs_quote_the_stored_simulation_figures() -> None:
    figures = json.loads((ROOT / "docs" / "figures" / "verdicts.json").read_text())
    text = (ROOT / "docs" / "history.md").read_text()
    for row in figures["repeat"]["coverage"]:
        assert (f"| {row['process_sd']:.2%} | {row['placements_only']:.1%} | {row['processes_then_placements']:.1%} |"
                in text), row
    for scenario, sc in figures["base_head"]["scenarios"].items():
        for rule, by_change in sc["rates"].items():
            cells = " | ".join(f"{by_change[c][V.SLOWER] + by_change[c][V.FASTER]:.1%}" for c in ("+0.0%",))
            cells += f" | {by_change['+0.5%'][V.SLOWER]:.1%}"
            assert f"| {scenario} | {rule} | {cells} |" in text, (scenario, rule, cells)
