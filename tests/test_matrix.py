"""gpu-bench's GPU-model matrix: the plan (one rental per model within a total cost cap) and the merge of every
model's artifact into one table, with real results (the recorded H200 base/head run, one case's head made
slower) and the action's own step script (.github/action/ci_steps.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import FAILED, load_result, write_result
from wfbench_core.review import matrix, prcomment
from wfbench_core.review.case_verdict import base_head
from synth_runs import evolve_case

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CI_STEPS = ROOT / ".github" / "action" / "ci_steps.py"
SLOW = "reduce_sum_f64"


def resolve(name: str) -> tuple[str, str]:
    from wfbench_transports.vast_config import arch_of, gpu_model

    model = gpu_model(name)
    return model.key, arch_of(model.cc)


def make_plan(models: str, total: float = 4.0) -> list[matrix.Leg]:
    return matrix.plan(models, max_dph=0.5, rental_min=30, max_total_cost=total, resolve=resolve)


def test_the_plan_pins_each_model_with_its_own_caps() -> None:
    legs = make_plan("RTX 4090, L40S@1.20,\nH100 SXM@2.50, H200@3.50")
    assert [(x.gpu, x.arch, x.max_dph, x.max_cost) for x in legs] == [
        ("RTX_4090", "sm_89", 0.5, 0.25), ("L40S", "sm_89", 1.2, 0.6), ("H100_SXM", "sm_90", 2.5, 1.25),
        ("H200", "sm_90", 3.5, 1.75)]
    assert matrix.legs_of(json.dumps([x.as_json() for x in legs])) == legs  # what the jobs get back
    # a cap is never rounded below what the price allows for the whole rental
    (odd,) = matrix.plan("H200@0.33", max_dph=0.5, rental_min=7, max_total_cost=1, resolve=resolve)
    assert odd.max_cost >= 0.33 * 7 / 60 and odd.max_cost - 0.33 * 7 / 60 < 1e-4


@pytest.mark.parametrize("models, total, expect", [
    ("RTX 4090, L40S@1.20, H100 SXM@2.50, H200@3.50", 3.0,
     "4 rental(s) of up to 30 min at RTX_4090 $0.50/h + L40S $1.20/h + H100_SXM $2.50/h + H200 $3.50/h may cost "
     "$3.85, over max-total-cost $3.00: raise max-total-cost"),
    ("RTX 4090, rtx_4090", 4.0, "RTX_4090 is listed twice"),
    ("H200@cheap", 4.0, "'H200@cheap': the price after @ must be a positive $/hour"),
    ("H200@-1", 4.0, "the price after @ must be a positive"),
    (" , ", 4.0, "gpu-models is empty"),
    ("RTX 5090", 4.0, "gpu_name='RTX 5090' is not a GPU model wfbench can pin"),
    ("A100 PCIE", 4.0, "names several memory sizes on Vast.ai"),
])
def test_a_plan_over_the_cap_or_with_bad_models_is_refused_in_one_line(models: str, total: float, expect: str) -> None:
    with pytest.raises(WfbenchError) as err:
        make_plan(models, total)
    assert expect in str(err.value) and "\n" not in str(err.value)


def ci_step(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CI_STEPS), *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_the_plan_step_writes_the_matrix_and_refuses_in_one_annotation(tmp_path: Path) -> None:
    out, summary = tmp_path / "out", tmp_path / "summary"
    env = {"GPU_MODELS": "RTX 4090, H200@3.50", "MAX_DPH": "0.50", "RENTAL_MIN": "30", "MAX_TOTAL_COST": "2.00",
           "GITHUB_RUN_ATTEMPT": "1", "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)}
    proc = ci_step("plan", str(tmp_path / "matrix.json"), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = out.read_text().splitlines()
    assert line.startswith("matrix=")
    assert [leg["gpu"] for leg in json.loads(line[7:])] == ["RTX_4090", "H200"]
    assert "| H200 | sm_90 | 3.50 | 1.7500 |" in summary.read_text() and "At most $2.00 in all" in summary.read_text()
    proc = ci_step("plan", str(tmp_path / "matrix.json"), env={**env, "MAX_TOTAL_COST": "1.00"})
    assert proc.returncode == 1 and proc.stdout.count("::error::") == 1 and "over max-total-cost $1.00" in proc.stdout
    assert "Traceback" not in proc.stderr


# -------------------------------------------------------------------------------------------------
# the merge
# -------------------------------------------------------------------------------------------------


def bh_run(out: Path, scales: dict[str, float]) -> Path:
    """The recorded base/head run, with the head WarpForth samples of some cases scaled."""
    run = load_result(FIXTURES / "h200-run-bh.json")
    cases = tuple(evolve_case(c, wf_scale=scales[c.id], cuda_samples=c.timing.cuda.samples_us, rng=None)  # type: ignore[union-attr]
                  if c.compiler_label == "head" and c.id in scales else c for c in run.cases)
    out.mkdir(parents=True, exist_ok=True)
    write_result(attrs.evolve(run, cases=cases), out / matrix.RESULT_NAME)
    return out / matrix.RESULT_NAME


def art(leg: matrix.Leg, attempt: str = "1") -> str:
    return matrix.result_artifact(leg.gpu, attempt)


def artifacts(tmp_path: Path, *, slower: bool = True, with_failure: bool = True) -> tuple[list[matrix.Leg], Path]:
    """Four models: a base/head run (one case slower, or not), a first run (head alone), a rental that failed
    (its log says why) and a job that uploaded nothing."""
    legs = make_plan("H200, RTX 4090, L40S, H100 SXM", total=10)
    root = tmp_path / "artifacts"
    bh_run(root / art(legs[0]), {SLOW: 1.02} if slower else {})
    (root / art(legs[1])).mkdir(parents=True)
    (root / art(legs[1]) / matrix.RESULT_NAME).write_text((FIXTURES / "h200-suite1.json").read_text())
    if with_failure:
        (root / art(legs[2])).mkdir()
        (root / art(legs[2]) / matrix.RUN_LOG).write_text(
            "vast: offer 3: L40S sm_89\nwfbench: error: instance 9003 stopped while starting (exited: no GPU)\n")
        return legs, root
    return legs[:2], root


def test_the_merge_puts_every_model_and_case_in_one_table(tmp_path: Path) -> None:
    legs, root = artifacts(tmp_path)
    outcomes = matrix.merge(legs, root)
    h200, rtx, l40s, h100 = outcomes
    assert (h200.state, h200.regressed, h200.storable) == ("base/head", True, True)
    assert (rtx.state, rtx.regressed, rtx.storable, rtx.verdicts) == ("head alone", False, True, {})
    assert (l40s.state, l40s.storable) == ("no result", False)
    assert l40s.problem == "wfbench: error: instance 9003 stopped while starting (exited: no GPU)"
    assert h100.problem == "its job uploaded no result: see that job's log"
    text = matrix.summary(outcomes)
    rows = {ln.split(" | ")[0].lstrip("| "): ln for ln in text.splitlines() if ln.startswith("| ")}
    assert rows["H200 (sm_90)"] == "| H200 (sm_90) | base/head | 1 SLOWER, 7 SAME |"
    assert rows["RTX_4090 (sm_89)"] == "| RTX_4090 (sm_89) | head alone | head alone: no stored base yet, gaps only |"
    assert rows["case"] == "| case | H200 | RTX_4090 | L40S | H100_SXM |"
    slow = rows[f"{SLOW} v1"].split(" | ")
    cmp, _ = base_head(load_result(root / art(legs[0]) / matrix.RESULT_NAME))
    gap = next(c for c in cmp.cases if c.case_id == SLOW).gap
    suite = {c.id: c for c in load_result(FIXTURES / "h200-suite1.json").cases}
    assert slow[1:] == [f"**SLOWER** {gap.head:.3f}x ({gap.percent:+.2f}%)",  # type: ignore[union-attr]
                        f"{suite[SLOW].timing.gap:.3f}x", "-", "- |"]  # type: ignore[union-attr]
    assert f"- **H200**: head is slower than base on {SLOW}" in text
    assert "- **L40S**: wfbench: error: instance 9003 stopped while starting" in text
    assert matrix.exit_status(outcomes) == matrix.REGRESSED
    # no regression: the failed rentals still make the merge fail, with its own status; all good: 0
    assert matrix.exit_status(matrix.merge(*artifacts(tmp_path / "b", slower=False))) == matrix.INCOMPLETE
    assert matrix.exit_status(matrix.merge(*artifacts(tmp_path / "c", slower=False, with_failure=False))) == 0


def test_a_run_with_a_failed_case_is_named_and_never_storable(tmp_path: Path) -> None:
    (leg,) = make_plan("H200")
    run = load_result(FIXTURES / "h200-suite1.json")
    cases = tuple(attrs.evolve(c, status=FAILED, timing=None, message="output mismatch") if c.id == SLOW else c
                  for c in run.cases)
    (tmp_path / art(leg)).mkdir()
    write_result(attrs.evolve(run, cases=cases), tmp_path / art(leg) / matrix.RESULT_NAME)
    (o,) = matrix.merge([leg], tmp_path)
    assert not o.storable and o.problem == f"1 case(s) failed: {SLOW} v1 (FAILED)" and o.cells[f"{SLOW} v1"] == "FAILED"
    assert matrix.exit_status([o]) == matrix.INCOMPLETE


def test_a_head_that_breaks_a_case_is_a_regression_and_never_storable(tmp_path: Path) -> None:
    """The base/head run with the head of one case FAILED and its base timed: BROKEN, the model regressed (not
    merely incomplete), the summary names it, and the run is not stored."""
    (leg,) = make_plan("H200")
    run = load_result(FIXTURES / "h200-run-bh.json")
    cases = tuple(attrs.evolve(c, status=FAILED, timing=None, message="8192 of 33554432 elements never written")
                  if c.id == SLOW and c.compiler_label == "head" else c for c in run.cases)
    (tmp_path / art(leg)).mkdir()
    write_result(attrs.evolve(run, cases=cases), tmp_path / art(leg) / matrix.RESULT_NAME)
    (o,) = matrix.merge([leg], tmp_path)
    assert o.verdicts[SLOW] == "BROKEN" and o.regressed and not o.storable and not o.problem
    assert matrix.exit_status([o]) == matrix.REGRESSED
    assert f"- **H200**: head breaks {SLOW} (failed where base was timed)" in matrix.summary([o])


def test_the_merge_step_writes_the_summary_the_storable_models_and_the_comment(tmp_path: Path) -> None:
    legs, root = artifacts(tmp_path)
    part = prcomment.build(*base_head(load_result(root / art(legs[0]) / matrix.RESULT_NAME)),
                           {SLOW: ["- Added `BAR.SYNC` at head 0x0040"]})
    (root / art(legs[0]) / matrix.COMMENT_PART).write_text(part)
    out, summary, comment = tmp_path / "out", tmp_path / "summary", tmp_path / "c" / "comment.md"
    proc = ci_step("merge", str(root), env={"MATRIX": json.dumps([x.as_json() for x in legs]),
                                            "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary),
                                            "COMMENT_OUT": str(comment)})
    assert proc.returncode == matrix.REGRESSED, proc.stdout + proc.stderr
    assert json.loads(out.read_text().removeprefix("storable=")) == [
        {**legs[0].as_json(), "artifact": art(legs[0])}, {**legs[1].as_json(), "artifact": art(legs[1])}]
    assert "::error::H200: head is slower than base" in proc.stdout
    assert "::error::L40S: wfbench: error: instance 9003 stopped while starting" in proc.stdout
    assert "| H200 (sm_90) | base/head | 1 SLOWER, 7 SAME |" in summary.read_text()
    text = comment.read_text()
    assert text.splitlines()[0] == prcomment.MARKER and text.count(prcomment.MARKER) == 1
    assert "### H200: head against base" in text and f"#### {SLOW}: SLOWER, head against base" in text
    assert "- Added `BAR.SYNC` at head 0x0040" in text and "| H200 (sm_90) | base/head |" in text
    proc = ci_step("merge", str(root), env={"MATRIX": "not json"})
    assert proc.returncode == 1 and "the matrix is not the plan job's JSON" in proc.stdout


def test_a_comment_part_over_its_share_keeps_its_verdict_table(tmp_path: Path) -> None:
    legs, root = artifacts(tmp_path)
    cmp, verdicts = base_head(load_result(root / art(legs[0]) / matrix.RESULT_NAME))
    (root / art(legs[0]) / matrix.COMMENT_PART).write_text(
        prcomment.build(cmp, verdicts, {SLOW: ["y" * 300] * 40}))
    outcomes = matrix.merge(legs, root)
    whole = matrix.comment(outcomes)
    assert whole.count("y" * 300) == 40
    cut = matrix.comment(outcomes, limit=len(whole) - 1000)
    assert "y" * 300 not in cut and f"| {SLOW} v1 | **SLOWER** |" in cut
    assert f"the artifact {art(legs[0])} holds pr-comment.md" in cut and len(cut) < len(whole) - 1000


def test_a_rerun_job_is_read_from_its_newest_attempt(tmp_path: Path) -> None:
    """Re-running a failed job uploads a new artifact (attempt 2); the model's first attempt is not read, and a
    model whose job was not re-run keeps its first."""
    legs = make_plan("H200, RTX 4090")
    (tmp_path / art(legs[0], "1")).mkdir()
    (tmp_path / art(legs[0], "1") / matrix.RUN_LOG).write_text("wfbench: error: no offer\n")
    bh_run(tmp_path / art(legs[0], "2"), {})
    (tmp_path / art(legs[0], "12")).mkdir()  # attempts compare as numbers, not text
    (tmp_path / art(legs[0], "12") / matrix.RUN_LOG).write_text("wfbench: error: the twelfth\n")
    bh_run(tmp_path / art(legs[1], "1"), {})
    h200, rtx = matrix.merge(legs, tmp_path)
    assert (h200.artifact, h200.problem) == (art(legs[0], "12"), "wfbench: error: the twelfth")
    assert (rtx.artifact, rtx.state, rtx.storable) == (art(legs[1], "1"), "base/head", True)
    (tmp_path / art(legs[0], "12") / matrix.RUN_LOG).unlink()
    (tmp_path / art(legs[0], "12")).rmdir()
    assert matrix.merge(legs, tmp_path)[0].artifact == art(legs[0], "2")


def test_the_workflow_names_each_models_artifact_as_the_merge_reads_it() -> None:
    import yaml

    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "gpu-bench.yml").read_text())
    (step,) = [s for s in wf["jobs"]["bench"]["steps"] if s.get("uses") == "./"]
    name = step["with"]["result-artifact"]
    assert name.replace("${{ matrix.gpu }}", "H200").replace("${{ github.run_attempt }}", "3") == \
        matrix.result_artifact("H200", "3")
