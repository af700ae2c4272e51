"""``wfbench check``: thresholds on synthetic series with known noise, drift, and the cases that never alert."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from synth_runs import real_run, synth_run
from wfbench_core import alerts
from wfbench_core.cli import main
from wfbench_core.history import History, add_run
from wfbench_core.results import write_result


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
