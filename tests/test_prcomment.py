"""``wfbench pr-comment``: one comment from a real base/head run (the H200 fixture, with one case's head made
slower and one faster) and a base/head bundle of real PTX whose head has one injected instruction."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from wfbench_core.compiling.code_identity import IDENTICAL_NOTE
from wfbench_core.review import compare, prcomment
from wfbench_core.compiling import diagnostics as dg
from wfbench_core.review import verdicts as V
from wfbench_core.review.case_verdict import AMBIGUOUS, FASTER, SAME, SLOWER, base_head, case_verdict
from wfbench_core.cli import main
from wfbench_core.discover.registry import Registry
from wfbench_core.record.results import load_result, write_result
from wfbench_core.testing import base_head_bundle_from_ptx, inject_at_entry, ptx_dir_loader
from synth_runs import evolve_case
from testkit import STORED_PTX  # tests/testkit.py

FIXTURES = Path(__file__).parent / "fixtures"
BH_RUN = FIXTURES / "h200-run-bh.json"
SLOW, FAST = "reduce_sum_f64", "axpy_f64"


def bh_result(tmp_path: Path, scales: dict[str, float]) -> Path:
    """The real base/head run with the head WarpForth samples of some cases scaled (CUDA samples shared)."""
    run = load_result(BH_RUN)
    cases = tuple(evolve_case(c, wf_scale=scales[c.id], cuda_samples=c.timing.cuda.samples_us, rng=None)  # type: ignore[union-attr]
                  if c.compiler_label == "head" and c.id in scales else c for c in run.cases)
    out = tmp_path / "bh.json"
    write_result(attrs.evolve(run, cases=cases), out)
    return out


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    reg = Registry.load()
    cases = [reg.case(c) for c in (SLOW, FAST)]
    base = ptx_dir_loader(STORED_PTX)

    def head(case, config):  # type: ignore[no-untyped-def]
        ptx = base(case, config)
        return inject_at_entry(ptx, case.wf_kernel, "bar.sync 0;") if case.id == SLOW else ptx

    out = tmp_path / "bh-bundle"
    base_head_bundle_from_ptx(cases, out, {"base": base, "head": head})
    return out


def test_verdicts_come_from_compare(tmp_path: Path) -> None:
    cmp, verdicts = base_head(load_result(bh_result(tmp_path, {SLOW: 1.02, FAST: 0.97})))
    assert verdicts[SLOW] == SLOWER and verdicts[FAST] == FASTER
    assert {v for c, v in verdicts.items() if c not in (SLOW, FAST)} == {SAME}
    c = next(x for x in cmp.cases if x.case_id == SLOW)
    assert c.verdict is not None and c.verdict.verdict == V.SLOWER
    assert case_verdict(attrs.evolve(c, verdict=attrs.evolve(c.verdict, verdict=V.AMBIGUOUS))) == AMBIGUOUS
    assert case_verdict(attrs.evolve(c, verdict=attrs.evolve(c.verdict, verdict=V.BASELINE_CHANGED))) == AMBIGUOUS
    assert case_verdict(attrs.evolve(c, compared=False, verdict=None)) == AMBIGUOUS


@pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")
def test_comment_holds_verdicts_explanations_and_links(tmp_path: Path, bundle: Path) -> None:
    result = bh_result(tmp_path, {SLOW: 1.02, FAST: 0.97})
    out = tmp_path / "comment.md"
    r = CliRunner().invoke(main, ["pr-comment", str(result), "--bundle", str(bundle), "-o", str(out), "-q",
                                  "--artifact", "result=https://github.com/o/r/actions/runs/1/artifacts/2",
                                  "--run-url", "https://github.com/o/r/actions/runs/1"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    text = out.read_text()
    assert text.splitlines()[0] == prcomment.MARKER
    assert "**1 SLOWER, 1 FASTER, 6 SAME**" in text
    rows = [ln for ln in text.split("<details>")[0].splitlines() if ln.startswith("| ")]
    assert rows[2].startswith(f"| {SLOW} v1 | **SLOWER** | 1.093x → 1.11") and rows[3].startswith(f"| {FAST} v1 | **FASTER**")
    # the slower case: its one added instruction, placed; the faster one: its SASS did not change
    slow = text.split(f"### {SLOW}: SLOWER, head against base", 1)[1].split("\n### ", 1)[0]
    assert len(re.findall(r"^- Added `BAR\.SYNC\.DEFER_BLOCKING 0x0` at head 0x[0-9a-f]{4} \(instruction \d+ of "
                          r"\d+\), before the first loop", slow, re.MULTILINE)) == 1
    fast = text.split(f"### {FAST}: FASTER, head against base", 1)[1]
    assert fast.lstrip().startswith(f"base and head: {IDENTICAL_NOTE}")
    assert "### scale_i64" not in text  # SAME cases are in the table only
    assert "<summary>Full comparison (wfbench compare)</summary>" in text and "### wfbench compare" in text
    assert "- [result](https://github.com/o/r/actions/runs/1/artifacts/2)" in text
    assert "[the run](https://github.com/o/r/actions/runs/1)" in text


def test_a_comment_over_the_limit_leaves_explanations_out(tmp_path: Path) -> None:
    cmp, verdicts = base_head(load_result(bh_result(tmp_path, {SLOW: 1.02, FAST: 0.97})))
    long = {SLOW: ["x" * 400] * 10, FAST: ["y" * 400] * 10}
    text = prcomment.build(cmp, verdicts, long, limit=len(prcomment.build(cmp, verdicts, {})) + 4500)
    assert text.count("x" * 400) == 10 and "y" * 400 not in text
    assert f"Explanation left out to keep this comment under GitHub's limit: run `wfbench explain {FAST}" in text


def test_a_case_missing_from_the_bundle_costs_only_its_explanation(tmp_path: Path, bundle: Path) -> None:
    result = bh_result(tmp_path, {"scale_i64": 1.03})
    r = CliRunner().invoke(main, ["pr-comment", str(result), "--bundle", str(bundle), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert "### scale_i64: SLOWER, head against base" in r.stdout
    assert "No head-against-base explanation: case 'scale_i64' is not in bundle" in r.stdout


@pytest.mark.parametrize("args, expect", [
    (("--artifact", "result"), "--artifact 'result': expected NAME=URL"),
    (("--arch", "sm_42"), "no occupancy limits known for sm_42"),
])
def test_bad_input_is_one_line(tmp_path: Path, bundle: Path, args: tuple[str, ...], expect: str) -> None:
    r = CliRunner().invoke(main, ["pr-comment", str(BH_RUN), "--bundle", str(bundle), *args])
    assert r.exit_code == 2 and expect in r.stderr and "Traceback" not in r.output + r.stderr


def test_a_run_that_is_not_base_head_is_refused(tmp_path: Path, bundle: Path) -> None:
    r = CliRunner().invoke(main, ["pr-comment", str(FIXTURES / "h200-run1.json"), "--bundle", str(bundle)])
    assert r.exit_code == 2 and "not a base/head run" in r.stderr


def test_a_bundle_of_other_compilers_than_the_result_is_warned_about(tmp_path: Path, bundle: Path) -> None:
    from wfbench_core.record.results import CompilerInfo

    run = load_result(bh_result(tmp_path, {SLOW: 1.02}))
    same = tmp_path / "same.json"  # the bundle's own compilers (base_head_bundle_from_ptx: prebuilt-<label>)
    write_result(attrs.evolve(run, compilers={lb: CompilerInfo(kind="warpforthc", version=f"prebuilt-{lb}")
                                              for lb in ("base", "head")}), same)
    r = CliRunner().invoke(main, ["pr-comment", str(same), "--bundle", str(bundle), "-q"])
    assert r.exit_code == 0 and "wfbench: warning:" not in r.stderr, r.stderr
    other = tmp_path / "other.json"
    write_result(attrs.evolve(run, compilers={"base": CompilerInfo(kind="warpforthc", version="prebuilt-base"),
                                              "head": CompilerInfo(kind="warpforthc", version="build-c7161f232a09")}),
                 other)
    r = CliRunner().invoke(main, ["pr-comment", str(other), "--bundle", str(bundle), "-q"])
    assert r.exit_code == 0, r.stderr
    warned = [ln for ln in r.stderr.splitlines() if ln.startswith("wfbench: warning:")]
    assert warned == [f"wfbench: warning: {bundle}: its head warpforthc (prebuilt-head) is not the one {other} was "
                      f"timed with (build-c7161f232a09); the explanations are of the bundle's PTX, not of the PTX "
                      f"timed"], r.stderr
