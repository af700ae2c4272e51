"""Identical machine code is inert: compare and check say so instead of testing for a change; throttled
points and runs on a depressed host stay out of trends."""

from __future__ import annotations

from pathlib import Path

import attrs

from synth_runs import synth_run, with_case
from wfbench_core.review import alerts, compare
from wfbench_core.build.diagnostics import IDENTICAL_NOTE
from wfbench_core.review.history import History, add_run, point_of
from wfbench_core.record.results import SideDiagnostics


def sass(digest: str) -> SideDiagnostics:
    return SideDiagnostics(arch="sm_90", kernel="axpy_f64", sass_sha256=digest * 64)


def test_compare_says_identical_sass_instead_of_worse() -> None:
    base = with_case(synth_run(0, jitter=0.002), "axpy_f64", diag_wf=sass("a"))
    worse = with_case(synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002), "axpy_f64", diag_wf=sass("a"))
    cmp = compare.compare_runs(base, worse)
    (axpy,) = [c for c in cmp.cases if c.case_id == "axpy_f64"]
    assert axpy.gap.verdict == compare.IDENTICAL_SASS and axpy.warpforth.verdict == compare.IDENTICAL_SASS
    assert axpy.sass == IDENTICAL_NOTE and cmp.regressions == []
    assert f"axpy_f64: {IDENTICAL_NOTE}" in compare.render_text(cmp)

    other = with_case(synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002), "axpy_f64", diag_wf=sass("b"))
    cmp = compare.compare_runs(base, other)
    (axpy,) = [c for c in cmp.cases if c.case_id == "axpy_f64"]
    assert axpy.gap.verdict == compare.WORSE and [c.case_id for c in cmp.regressions] == ["axpy_f64"]
    assert "axpy_f64: SASS differs: see wfbench explain axpy_f64" in compare.render_text(cmp)


def test_check_calls_a_move_with_identical_sass_noise(tmp_path: Path) -> None:
    for n in range(6):
        add_run(tmp_path, with_case(synth_run(n, jitter=0.0005), "axpy_f64", diag_wf=sass("c")))
    new = with_case(synth_run(6, wf_scale={"axpy_f64": 1.12}), "axpy_f64", diag_wf=sass("c"))
    report = alerts.check(History.open(tmp_path), new)
    (f,) = [f for f in report.findings if f.case_id == "axpy_f64"]
    assert f.verdict == alerts.DRIFT and "identical SASS" in f.message and "noise" in f.message
    assert report.exit_code != alerts.EXIT_REGRESSION


def test_throttled_points_and_depressed_hosts_are_kept_but_out_of_trends() -> None:
    run = synth_run(0)
    case = run.case("axpy_f64")
    assert point_of(run, case, "r.json").stable
    throttled = attrs.evolve(case, timing=attrs.evolve(case.timing, throttled=True))
    assert not point_of(run, throttled, "r.json").stable
    depressed = attrs.evolve(run, environment=attrs.evolve(run.environment, depressed_host=True))
    assert not point_of(depressed, case, "r.json").stable


def test_a_base_head_run_names_identical_machine_code() -> None:
    from wfbench_core.review.report import render

    run = synth_run(0)
    case = run.case("axpy_f64")
    base = attrs.evolve(case, compiler_label="base", diag_wf=sass("d"))
    same = attrs.evolve(case, compiler_label="head", diag_wf=sass("d"))
    text = render(attrs.evolve(run, cases=(base, same)))
    assert f"axpy_f64 (base vs head): {IDENTICAL_NOTE}" in text
    other = attrs.evolve(same, diag_wf=sass("e"))
    assert "axpy_f64 (base vs head): SASS differs: see wfbench explain axpy_f64" in render(
        attrs.evolve(run, cases=(base, other)))
