"""Change points (E-divisive means): a known step is found and placed at its commit range, a flat noisy series
has none, ``wfbench check`` reports a step once (with the run that makes it certain), the dashboard marks it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from synth_runs import commit_of, synth_run
from wfbench_core.review import alerts, verdicts
from wfbench_core.review.changepoints import Settings, best_split, change_points, e_divisive
from wfbench_core.cli import main
from wfbench_core.dashboard import build_data
from wfbench_core.review.history import History, add_run

STEP = 8  # the first run of the slower compiler
CASE = "axpy_f64"


def noisy(n: int, seed: int, noise: float = 0.002, level: float = 1.09) -> np.ndarray:
    return level * (1.0 + np.random.default_rng(seed).normal(0.0, noise, n))


def test_a_known_step_is_found_where_it_is() -> None:
    x = noisy(30, seed=1)
    x[18:] *= 1.02
    [split] = e_divisive(x, seed=7)
    assert split.index == 18 and split.p <= Settings().p_value


def test_two_steps_are_both_found() -> None:
    x = noisy(36, seed=2)
    x[12:] *= 1.03
    x[25:] *= 0.96
    assert [s.index for s in e_divisive(x, seed=3)] == [12, 25]


@pytest.mark.parametrize("seed", range(10))
def test_a_flat_noisy_series_has_no_step(seed: int) -> None:
    assert e_divisive(noisy(40, seed=seed, noise=0.005), seed=seed) == []


def test_a_constant_or_short_series_has_none() -> None:
    assert e_divisive([1.0] * 20) == []
    assert best_split(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 3) == (0, 0.0)


def test_the_same_series_gives_the_same_answer() -> None:
    x = noisy(24, seed=4)
    x[10:] *= 1.015
    assert e_divisive(x, seed=11) == e_divisive(x, seed=11)


def make_history(root: Path, runs: int) -> None:
    """Runs 0..runs-1; from run STEP on the WarpForth compiler makes axpy_f64 3 % slower (its PTX changes)."""
    for n in range(runs):
        add_run(root, synth_run(n, wf_scale={CASE: 1.03 if n >= STEP else 1.0}, jitter=0.002))


def test_the_step_of_a_history_is_placed_at_its_commit_range(tmp_path: Path) -> None:
    make_history(tmp_path, 12)
    h = History.open(tmp_path)
    found = {s.key.case_id: change_points(s) for s in h.series.values()}
    assert found["scale_i64"] == []
    [cp] = found[CASE]
    assert (cp.commit_before, cp.commit_after) == (commit_of(STEP - 1), commit_of(STEP))
    assert cp.index == STEP and cp.change == pytest.approx(0.03, abs=0.004)
    assert cp.compare_url.endswith(f"/compare/{commit_of(STEP - 1)}...{commit_of(STEP)}")
    assert cp.describe().startswith(f"{CASE}: gap ") and f"between commits {commit_of(STEP - 1)[:10]}.." in cp.describe()


def test_check_reports_a_new_step_once(tmp_path: Path) -> None:
    """Three runs after the step make it certain: the check of that run reports it, later checks do not."""
    reported = {}
    for n in range(STEP + 5):
        add_run(tmp_path, synth_run(n, wf_scale={CASE: 1.03 if n >= STEP else 1.0}, jitter=0.002))
        reported[n] = alerts.check(History.open(tmp_path)).change_points
    first = STEP + Settings().min_size - 1
    assert all(not reported[n] for n in range(first))
    [cp] = reported[first]
    assert (cp.case_id, cp.commit_after) == (CASE, commit_of(STEP))
    assert all(not reported[n] for n in range(first + 1, STEP + 5))
    # per-point alerts do not see a 3 % step (below the 5 % floor): the change point is what places it
    report = alerts.check(History.open(tmp_path))
    assert {f.verdict for f in report.findings} == {verdicts.SAME}
    r = CliRunner().invoke(main, ["check", "--history", str(tmp_path), str(tmp_path / reported_run(tmp_path, first))])
    assert r.exit_code == 0, r.output
    assert f"new change point: {CASE}: gap " in r.stdout and f"between commits {commit_of(STEP - 1)[:10]}.." in r.stdout


def reported_run(root: Path, n: int) -> str:
    created = synth_run(n).created
    return next(e.file for e in History.open(root).runs.values() if e.created == created)


def test_dashboard_data_marks_the_step(tmp_path: Path) -> None:
    make_history(tmp_path, 12)
    data = build_data(History.open(tmp_path))
    series = {s["case"]: s for s in data["series"]}
    assert series["scale_i64"]["change_points"] == []
    [mark] = series[CASE]["change_points"]
    assert mark["index"] == STEP and series[CASE]["points"][STEP]["commit"] == commit_of(STEP)
    assert mark["commits"] == f"{commit_of(STEP - 1)[:10]}..{commit_of(STEP)[:10]}"
    assert mark["gap_after"] > mark["gap_before"]
