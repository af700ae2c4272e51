"""``wfbench check``: thresholds on synthetic series with known noise, drift, and the cases that never alert."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np
import pytest
from click.testing import CliRunner

from synth_runs import created_at, real_run, synth_run, with_case
from wfbench_core.review import alerts, verdicts
from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError
from wfbench_core.review.history import History, add_run
from wfbench_core.record.results import ERROR, FAILED, load_result, write_result


V = verdicts


def build(root: Path, n: int, run_noise: float, seed: int = 7, boards: bool = False, **kw) -> list:  # type: ignore[no-untyped-def]
    """n stable runs of the same code whose gap varies from run to run by ``run_noise`` (relative sd), on one
    board, or each on its own board."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n):
        if boards:
            kw["gpu_uuid"] = f"GPU-board-{i}"
        run = synth_run(i, run_offset=float(np.exp(rng.normal(0.0, run_noise))), placements=15, **kw)
        add_run(root, run)
        runs.append(run)
    return runs


def finding(report: alerts.CheckReport, case_id: str) -> alerts.Finding:
    (f,) = [f for f in report.findings if f.case_id == case_id]
    return f


def check_new(root: Path, run) -> alerts.CheckReport:  # type: ignore[no-untyped-def]
    add_run(root, run)
    return alerts.check(History.open(root))


def test_a_compiler_regression_is_slower_and_the_same_code_is_same(tmp_path: Path) -> None:
    runs = build(tmp_path, 8, run_noise=0.0005)
    report = check_new(tmp_path, synth_run(8, wf_scale={"axpy_f64": 1.01}, placements=15))
    f = finding(report, "axpy_f64")
    assert f.verdict == V.SLOWER and report.exit_code == alerts.EXIT_REGRESSION
    gaps = [r.case("axpy_f64").timing.gap for r in runs]
    assert f.reference_gap == pytest.approx(float(np.exp(np.mean(np.log(gaps)))), rel=1e-12)
    assert f.judged.change == pytest.approx(f.value_gap / f.reference_gap - 1, rel=1e-9)
    assert f.judged.lo < f.judged.change < f.judged.hi and f.reference_runs == 8 and f.stable_points == 8
    same = finding(report, "scale_i64")
    assert same.verdict == V.SAME and same.judged.label == "SAME (identical code)"
    assert "SLOWER" in alerts.render_text(report) and "exit 1" in alerts.render_text(report)


def test_the_process_component_is_measured_from_the_series(tmp_path: Path) -> None:
    """Runs of one code on one board that move by 1 % (sd) between processes: the component measured from
    them makes a +1.5 % change of new code AMBIGUOUS, while +8 % is SLOWER and -8 % FASTER."""
    build(tmp_path, 12, run_noise=0.01, seed=3)
    history = History.open(tmp_path)
    for scale, want in ((1.015, V.AMBIGUOUS), (1.08, V.SLOWER), (0.92, V.FASTER)):
        f = finding(alerts.check(history, synth_run(20, wf_scale={"axpy_f64": scale}, placements=15)), "axpy_f64")
        assert f.verdict == want, (scale, f.message)
        assert "measured (11 degrees of freedom" in f.judged.basis
    assert alerts.check(history, synth_run(20, wf_scale={"axpy_f64": 0.92}, placements=15)).exit_code == alerts.EXIT_OK


def test_ten_boards_then_a_regression_on_an_eleventh_is_slower(tmp_path: Path) -> None:
    """The issue's case: 10 runs on 10 boards, then +20 % (new PTX) on a board the series has never seen."""
    runs = build(tmp_path / "h", 10, run_noise=0.003, boards=True)
    moved = synth_run(10, wf_scale={"axpy_f64": 1.20}, placements=15, gpu_uuid="GPU-board-new")
    report = alerts.check(History.open(tmp_path / "h"), moved)
    f = finding(report, "axpy_f64")
    assert f.verdict == V.SLOWER and f.judged.label == f"SLOWER ({V.OTHER_BOARD})"
    assert report.exit_code == alerts.EXIT_REGRESSION
    assert "board and process" in f.judged.basis and "measured (9 degrees of freedom between boards)" in f.judged.basis
    quiet = finding(report, "scale_i64")
    assert quiet.verdict == V.SAME and V.OTHER_BOARD in quiet.judged.qualifiers
    # within what boards differ by: no evidence either way, and no alert
    small = alerts.check(History.open(tmp_path / "h"), synth_run(10, wf_scale={"axpy_f64": 1.002}, placements=15,
                                                                   gpu_uuid="GPU-board-new"))
    assert finding(small, "axpy_f64").verdict == V.AMBIGUOUS and small.exit_code == alerts.EXIT_OK
    runner = CliRunner()
    path, last = tmp_path / "moved.json", tmp_path / "last.json"
    write_result(moved, path)
    res = runner.invoke(main, ["check", str(path), "--history", str(tmp_path / "h")])
    assert res.exit_code == 1 and "SLOWER (other board)" in res.stdout
    # compare: the newest stored run (board 9) against the moved one, the history measuring the boards
    write_result(runs[-1], last)
    cmp = runner.invoke(main, ["compare", str(last), str(path), "--history", str(tmp_path / "h"),
                               "--fail-on-regression"])
    assert cmp.exit_code == 1 and "SLOWER (other board)" in cmp.stdout
    assert runner.invoke(main, ["compare", str(last), str(path), "--history", str(tmp_path / "h")]).exit_code == 0


def test_a_changed_cuda_side_is_baseline_changed(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.0005)
    base = synth_run(0)
    moved = with_case(synth_run(6, cuda_scale=0.95, placements=15), "axpy_f64",
                      compile_cuda=attrs.evolve(base.case("axpy_f64").compile_cuda, ptx_sha256="c" * 64))
    report = alerts.check(History.open(tmp_path), moved)
    f = finding(report, "axpy_f64")
    assert f.verdict == V.BASELINE_CHANGED and "not a verdict on WarpForth" in f.message
    assert report.exit_code == alerts.EXIT_DRIFT


def test_unstable_points_are_not_judged_and_not_in_the_reference(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.0005)
    for n in (6, 7, 8):  # noisy runs far off: must not move the reference
        run = synth_run(n, wf_scale=1.4, jitter=0.08)
        assert {c.status for c in run.cases} == {"unstable"}
        add_run(tmp_path, run)
    noisy_new = check_new(tmp_path, synth_run(9, wf_scale=1.5, jitter=0.08))
    assert {f.verdict for f in noisy_new.findings} == {alerts.UNSTABLE}
    assert noisy_new.exit_code == alerts.EXIT_OK
    steady = check_new(tmp_path, synth_run(10, placements=15))
    f = finding(steady, "axpy_f64")
    assert f.stable_points == 6 and f.verdict == V.SAME and f.reference_runs == 6


def test_min_points_and_new_series(tmp_path: Path) -> None:
    build(tmp_path, 3, run_noise=0.0005)
    report = alerts.check(History.open(tmp_path), synth_run(3, wf_scale=1.5), rules=alerts.Rules(min_points=5))
    f = finding(report, "axpy_f64")
    assert f.verdict == alerts.INSUFFICIENT and "3 of 5 stable points" in f.message
    assert report.exit_code == alerts.EXIT_OK and "too few points" in alerts.render_text(report)
    # by default one earlier point is enough: the stated components stand in for the unmeasured ones
    assert finding(alerts.check(History.open(tmp_path), synth_run(3, wf_scale=1.5)), "axpy_f64").verdict == V.SLOWER


def test_a_run_on_another_gpu_starts_a_new_series_and_is_not_judged(tmp_path: Path) -> None:
    build(tmp_path, 6, run_noise=0.002)
    report = alerts.check(History.open(tmp_path), synth_run(6, wf_scale=2.0, gpu_name="NVIDIA H100 80GB HBM3"))
    assert {f.verdict for f in report.findings} == {alerts.NEW_SERIES}
    assert report.exit_code == alerts.EXIT_OK


def test_cli_exit_codes_and_formats(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    build(hist, 6, run_noise=0.0005)
    runner = CliRunner()
    slow = tmp_path / "slow.json"  # a result not yet in history, checked before it is added
    write_result(synth_run(6, wf_scale=1.2, placements=15), slow)
    res = runner.invoke(main, ["check", str(slow), "--history", str(hist)])
    assert res.exit_code == 1, res.output
    assert "SLOWER" in res.stdout and "interval:" in res.stdout
    md = runner.invoke(main, ["check", str(slow), "--history", str(hist), "--markdown"])
    assert md.exit_code == 1 and "**SLOWER**" in md.stdout and md.stdout.startswith("### wfbench check")
    data = json.loads(runner.invoke(main, ["check", str(slow), "--history", str(hist), "--json"]).stdout)
    assert data["exit_code"] == 1 and {f["verdict"] for f in data["findings"]} == {"slower"}
    moved = tmp_path / "moved.json"  # identical code whose gap moved 10 %: the environment
    write_result(synth_run(7, run_offset=1.1, placements=15), moved)
    out = runner.invoke(main, ["check", str(moved), "--history", str(hist)])
    assert out.exit_code == 4 and "SAME (identical code, moved)" in out.stdout
    # the slow file once added: judged against the points before it, not against itself
    assert runner.invoke(main, ["history", "add", str(slow), "--history", str(hist)]).exit_code == 0
    assert runner.invoke(main, ["check", "--history", str(hist)]).exit_code == 1
    assert runner.invoke(main, ["check", "--history", str(hist), "--min-effect", "0.5"]).exit_code == 0

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
    assert finding(alerts.check(History.open(hist), load_result(bad)), "scale_i64").verdict == V.SAME
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
# the stored runs: identical PTX everywhere


def test_the_stored_same_ptx_runs_are_never_slower_or_faster(tmp_path: Path) -> None:
    """Each stored H200 paired run checked against a history of all the others: byte-identical PTX everywhere,
    so every case is SAME by rule, on its own board or on another."""
    from wfbench_core.review.compare import labels_of

    paths = sorted((Path(__file__).parents[1] / "examples" / "history" / "runs").rglob("*.json"))
    paths += sorted((Path(__file__).parent / "fixtures").glob("h200-*.json"))
    runs = [load_result(p) for p in paths]
    runs = [r for r in runs if r.mode == "paired" and not labels_of(r)]
    labels = set()
    for i, run in enumerate(runs):
        root = tmp_path / str(i)
        for other in runs[:i] + runs[i + 1:]:
            if other.created != run.created:
                add_run(root, other)
        report = alerts.check(History.open(root), run, run_name=f"run{i}")
        labels |= {alerts.mark(f) for f in report.findings}
        # (h200-run1.json has no reduce_sum_f64: measured in the run before it, so it is missing there; the run
        # with --ceiling has polynomial_f64, whose every other point in the example history was throttled, so
        # it has no stable point to be judged against: insufficient)
        assert {f.verdict for f in report.findings} <= {V.SAME, alerts.NEW_SERIES, alerts.MISSING, alerts.UNSTABLE,
                                                        alerts.INSUFFICIENT}
    assert {"SAME (identical code)", "SAME (identical code, other board)"} <= labels
