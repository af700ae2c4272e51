"""``wfbench check``: thresholds on synthetic series with known noise, drift, and the cases that never alert."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np
import pytest
from click.testing import CliRunner

from synth_runs import created_at, real_run, synth_run, with_case
from wfbench_core.review import alerts
from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError
from wfbench_core.review.history import History, add_run
from wfbench_core.record.results import ERROR, FAILED, load_result, write_result


def build(root: Path, n: int, run_noise: float, seed: int = 7, **kw) -> list:  # type: ignore[no-untyped-def]
    """n stable runs whose WarpForth time varies from run to run by ``run_noise`` (relative sd)."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n):
        run = synth_run(i, wf_scale=float(1.0 + rng.normal(0.0, run_noise)), **kw)
        add_run(root, run)
        runs.append(run)
    return runs


def expected_threshold(values: list[float]) -> float:
    rules = alerts.Rules()
    x = np.asarray(values[-rules.window:])
    ref = np.median(x)
    mad = np.median(np.abs(x - ref))
    return max(rules.min_change, rules.mad_k * mad / ref)


REAL_GAP = real_run().case("axpy_f64").timing.gap


def small_gap(report: alerts.CheckReport) -> float:
    return finding(report, "axpy_f64").gap.value


def finding(report: alerts.CheckReport, case_id: str) -> alerts.Finding:
    (f,) = [f for f in report.findings if f.case_id == case_id]
    return f


def check_new(root: Path, run) -> alerts.CheckReport:  # type: ignore[no-untyped-def]
    add_run(root, run)
    return alerts.check(History.open(root))


def test_quiet_series_alerts_on_the_five_percent_floor(tmp_path: Path) -> None:
    runs = build(tmp_path, 8, run_noise=0.002)
    gaps = [r.case("axpy_f64").timing.gap for r in runs]
    assert expected_threshold(gaps) == pytest.approx(0.05)
    small = check_new(tmp_path, synth_run(8, wf_scale=1.03))
    f = finding(small, "axpy_f64")
    assert f.verdict == alerts.STEADY and f.gap.threshold == pytest.approx(0.05)
    assert small.exit_code == alerts.EXIT_OK

    big = check_new(tmp_path, synth_run(9, wf_scale=1.08))
    f = finding(big, "axpy_f64")
    assert f.verdict == alerts.REGRESSION
    assert f.gap.change == pytest.approx(1.08 * REAL_GAP / np.median(gaps + [small_gap(small)]) - 1, abs=0.003)
    assert big.exit_code == alerts.EXIT_REGRESSION
    assert f.stable_points == 9


def test_noisy_series_widens_the_threshold_to_three_mads(tmp_path: Path) -> None:
    runs = build(tmp_path, 12, run_noise=0.04, seed=3)
    gaps = [r.case("axpy_f64").timing.gap for r in runs]
    thr = expected_threshold(gaps)
    assert thr > 0.06, "the synthetic noise must put 3 x MAD above the 5 % floor"
    ref = float(np.median(gaps))
    history = History.open(tmp_path)
    # WarpForth scaled so the new gap lands just inside / well outside the threshold
    inside = alerts.check(history, synth_run(20, wf_scale=(1 + thr - 0.015) * ref / REAL_GAP))
    f = finding(inside, "axpy_f64")
    assert f.gap.threshold == pytest.approx(thr, rel=1e-9)
    assert f.gap.reference == pytest.approx(ref, rel=1e-12)
    assert f.verdict == alerts.STEADY, f.message
    outside = alerts.check(history, synth_run(20, wf_scale=(1 + thr + 0.03) * ref / REAL_GAP))
    f = finding(outside, "axpy_f64")
    assert f.verdict == alerts.REGRESSION, f.message
    assert f.gap.change == pytest.approx(thr + 0.03, abs=0.003)


def test_cuda_shift_with_steady_gap_is_environment_drift(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    report = check_new(tmp_path, synth_run(6, wf_scale=1.12, cuda_scale=1.12))
    for f in report.findings:
        assert f.verdict == alerts.DRIFT, f.message
        assert f.cuda.change == pytest.approx(0.12, abs=0.01) and abs(f.gap.change) < 0.01
        assert "not the compiler" in f.message
    assert report.exit_code == alerts.EXIT_DRIFT


def test_warpforth_time_alone_is_a_regression(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    # WarpForth +6 %, CUDA +2 %: the gap moves < 5 %, but WarpForth's own time crossed its threshold
    f = finding(check_new(tmp_path, synth_run(6, wf_scale=1.06, cuda_scale=1.02)), "axpy_f64")
    assert abs(f.gap.change) < f.gap.threshold
    assert f.verdict == alerts.REGRESSION and "WarpForth time" in f.message


def test_faster_warpforth_is_an_improvement(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    report = check_new(tmp_path, synth_run(6, wf_scale=0.90))
    assert {f.verdict for f in report.findings} == {alerts.IMPROVEMENT}
    assert report.exit_code == alerts.EXIT_OK


def test_no_alert_until_the_series_has_enough_stable_points(tmp_path: Path) -> None:
    build(tmp_path, 3, run_noise=0.002)
    report = check_new(tmp_path, synth_run(3, wf_scale=1.5))
    f = finding(report, "axpy_f64")
    assert f.verdict == alerts.INSUFFICIENT and "3 of 5 stable points" in f.message
    assert report.exit_code == alerts.EXIT_OK
    assert "too few points" in alerts.render_text(report)


def test_unstable_points_are_not_judged_and_not_in_the_baseline(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    for n in (6, 7, 8):  # noisy runs far off: must not move the baseline
        run = synth_run(n, wf_scale=1.4, jitter=0.08)
        assert {c.status for c in run.cases} == {"unstable"}
        add_run(tmp_path, run)
    noisy_new = check_new(tmp_path, synth_run(9, wf_scale=1.5, jitter=0.08))
    assert {f.verdict for f in noisy_new.findings} == {alerts.UNSTABLE}
    assert noisy_new.exit_code == alerts.EXIT_OK
    steady = check_new(tmp_path, synth_run(10))
    f = finding(steady, "axpy_f64")
    assert f.stable_points == 6 and f.verdict == alerts.STEADY
    assert f.gap.reference == pytest.approx(float(np.median(
        [p.gap for p in History.open(tmp_path).series[f.series_id].points if p.stable and p.run != _newest(tmp_path)])))


def _newest(root: Path) -> str:
    newest = History.open(root).newest_run()
    assert newest is not None
    return newest.file


def test_a_run_on_another_gpu_starts_a_new_series_and_is_not_judged(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    report = alerts.check(History.open(tmp_path), synth_run(6, wf_scale=2.0, gpu_name="NVIDIA H100 80GB HBM3"))
    assert {f.verdict for f in report.findings} == {alerts.NEW_SERIES}
    assert report.exit_code == alerts.EXIT_OK


def test_cli_exit_codes_and_formats(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    build(hist, 6, run_noise=0.002)
    runner = CliRunner()
    # a result not yet in history, checked before it is added
    slow = tmp_path / "slow.json"
    write_result(synth_run(6, wf_scale=1.2), slow)
    res = runner.invoke(main, ["check", str(slow), "--history", str(hist)])
    assert res.exit_code == 1, res.output
    assert "REGRESSION" in res.stdout and "threshold" in res.stdout
    md = runner.invoke(main, ["check", str(slow), "--history", str(hist), "--markdown"])
    assert md.exit_code == 1 and "**REGRESSION**" in md.stdout and md.stdout.startswith("### wfbench check")
    data = json.loads(runner.invoke(main, ["check", str(slow), "--history", str(hist), "--json"]).stdout)
    assert data["exit_code"] == 1 and {f["verdict"] for f in data["findings"]} == {"regression"}
    # the same file once added: judged against the points before it, not against itself
    assert runner.invoke(main, ["history", "add", str(slow), "--history", str(hist)]).exit_code == 0
    assert runner.invoke(main, ["check", "--history", str(hist)]).exit_code == 1
    assert runner.invoke(main, ["check", "--history", str(hist), "--min-change", "0.5"]).exit_code == 0

    drift = tmp_path / "drift.json"
    write_result(synth_run(7, wf_scale=1.1, cuda_scale=1.1), drift)
    assert runner.invoke(main, ["check", str(drift), "--history", str(hist)]).exit_code == 4

    empty = runner.invoke(main, ["check", "--history", str(tmp_path / "none")])
    assert empty.exit_code == 2 and "no such history directory" in empty.stderr


# --------------------------------------------------------------------------------------------------------
# correctness first: failed, error and missing cases


def test_a_failed_p0_case_is_a_correctness_regression_named_with_its_message(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    build(hist, 6, run_noise=0.002)
    bad = tmp_path / "r.json"
    write_result(with_case(synth_run(6), "axpy_f64", status=FAILED, timing=None,
                           message="Y: 3 of 4096 elements differ (max abs err 2.0)"), bad)
    runner = CliRunner()
    res = runner.invoke(main, ["check", str(bad), "--history", str(hist)])
    assert res.exit_code == 1, res.output
    row = next(line for line in res.stdout.splitlines() if line.startswith("axpy_f64"))
    assert "FAILED" in row
    assert "axpy_f64: FAILED: Y: 3 of 4096 elements differ (max abs err 2.0)" in res.stdout
    assert finding(alerts.check(History.open(hist), load_result(bad)), "scale_i64").verdict == alerts.STEADY
    md = runner.invoke(main, ["check", str(bad), "--history", str(hist), "--markdown"]).stdout
    assert "**FAILED**" in md and "Y: 3 of 4096 elements differ" in md
    # and it never becomes history
    add = runner.invoke(main, ["history", "add", str(bad), "--history", str(hist)])
    assert add.exit_code == 2 and "axpy_f64 FAILED" in add.stderr


def test_an_error_case_with_no_history_yet_is_still_a_regression(tmp_path: Path) -> None:
    report = alerts.check(History.open(tmp_path, must_exist=False),
                          with_case(synth_run(0), "scale_i64", status=ERROR, timing=None, message="ptxas: exit 255"))
    f = finding(report, "scale_i64")
    assert f.verdict == alerts.FAILED_CASE and "ERROR: ptxas: exit 255" in f.message
    assert report.exit_code == alerts.EXIT_REGRESSION


def test_a_case_missing_from_the_newest_run_is_a_regression(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    short = synth_run(6)
    short = attrs.evolve(short, cases=tuple(c for c in short.cases if c.id != "scale_i64"))
    report = alerts.check(History.open(tmp_path), short, run_name="short.json")
    f = finding(report, "scale_i64")
    assert f.verdict == alerts.MISSING and report.exit_code == alerts.EXIT_REGRESSION
    assert "absent from this one" in f.message
    # stored (an older wfbench stored runs minus their failed cases): the newest run is checked the same way
    add_run(tmp_path, short)
    stored = alerts.check(History.open(tmp_path))
    assert finding(stored, "scale_i64").verdict == alerts.MISSING and stored.exit_code == alerts.EXIT_REGRESSION
    # an incomplete run says so
    partial = alerts.check(History.open(tmp_path), attrs.evolve(short, complete=False, created=created_at(9)))
    assert any("incomplete run" in n for n in partial.notes)
    # a run with no case at all cannot be checked
    with pytest.raises(WfbenchError, match=r"^empty.json: the run has no cases"):
        alerts.check(History.open(tmp_path), attrs.evolve(short, cases=()), run_name="empty.json")
    # another GPU's runs are another suite: nothing is missing there
    other = alerts.check(History.open(tmp_path), synth_run(8, gpu_name="NVIDIA H100 80GB HBM3"))
    assert not [f for f in other.findings if f.verdict == alerts.MISSING]


# --------------------------------------------------------------------------------------------------------
# between-run effects are not attributed to the compiler


def test_a_gap_move_with_identical_ptx_is_drift_not_regression(tmp_path: Path) -> None:
    for i in range(6):
        add_run(tmp_path, synth_run(i, run_offset=1.0 + 0.002 * (i % 3)))  # same PTX, small run offsets
    report = alerts.check(History.open(tmp_path), synth_run(6, run_offset={"axpy_f64": 1.10}))
    f = finding(report, "axpy_f64")
    assert f.gap.up and f.verdict == alerts.DRIFT and "byte-identical" in f.message
    assert report.exit_code == alerts.EXIT_DRIFT
    compiled = alerts.check(History.open(tmp_path), synth_run(6, wf_scale={"axpy_f64": 1.10}))
    assert finding(compiled, "axpy_f64").verdict == alerts.REGRESSION


def test_a_gap_move_on_a_board_the_series_has_not_seen_is_not_attributed(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    moved = synth_run(6, wf_scale={"axpy_f64": 1.10}, gpu_uuid="GPU-another-board")
    report = alerts.check(History.open(tmp_path), moved)
    f = finding(report, "axpy_f64")
    assert f.verdict == alerts.BOARD and "GPU-another-board" in f.message
    assert report.exit_code == alerts.EXIT_DRIFT
    assert finding(report, "scale_i64").verdict == alerts.STEADY, "a board that moves nothing is simply ok"
    # once the series has points from several boards, their spread is in the threshold and a move is judged
    for i, board in enumerate(("GPU-b", "GPU-c")):
        add_run(tmp_path, synth_run(7 + i, gpu_uuid=board))
    again = alerts.check(History.open(tmp_path), synth_run(9, wf_scale={"axpy_f64": 1.10}, gpu_uuid="GPU-b"))
    assert finding(again, "axpy_f64").verdict == alerts.REGRESSION


def test_the_stored_same_ptx_runs_never_alert_against_each_other(tmp_path: Path) -> None:
    """Each stored H200 paired run checked against a history of all the others (alerts allowed from the first
    point, on any change above 0.1 %): byte-identical PTX everywhere, so no case may be a regression or an
    improvement."""
    from wfbench_core.review.compare import labels_of

    paths = sorted((Path(__file__).parents[1] / "examples" / "history" / "runs").rglob("*.json"))
    paths += sorted((Path(__file__).parent / "fixtures").glob("h200-*.json"))
    runs = [load_result(p) for p in paths]
    runs = [r for r in runs if r.mode == "paired" and not labels_of(r)]
    rules = alerts.Rules(min_points=1, min_change=0.001)  # every move of the real data is above this floor
    verdicts = set()
    for i, run in enumerate(runs):
        root = tmp_path / str(i)
        for other in runs[:i] + runs[i + 1:]:
            if other.created != run.created:
                add_run(root, other)
        report = alerts.check(History.open(root), run, run_name=f"run{i}", rules=rules)
        verdicts |= {f.verdict for f in report.findings}
        assert not [f for f in report.findings if f.verdict in (alerts.REGRESSION, alerts.IMPROVEMENT)], \
            [(f.case_id, f.verdict, f.message) for f in report.findings]
    assert alerts.DRIFT in verdicts, "the real moves (reduce_sum_f64 across boards) are there, as drift"
