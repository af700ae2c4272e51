"""The workflow tests, WarpForth's ci.yml with the action, as docs/ci.md gives it, run.

The machinery (the evaluator, the runner, the stand-ins) is tests/workflow_kit.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from workflow_kit import (  # tests/ is on sys.path
    ACTION_REF,
    CALLER,
    CALLER_BRANCH,
    CALLER_OWNER,
    DOCS,
    FIXTURES,
    ROOT,
    Continued,
    KeptRun,
    World,
    commit_tree,
    history_files,
    result_of,
    caller_ctx,
    git,
    pr_ctx,
    warpforth_workflow,
)


# -------------------------------------------------------------------------------------------------
# WarpForth's ci.yml with the action, as docs/ci.md gives it, run
# -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _first_push(tmp_path_factory: pytest.TempPathFactory) -> KeptRun:
    """A push of WarpForth's ci.yml (docs/ci.md's) on its default branch's commit, nothing stored yet: run once
    for the module."""
    world = World(tmp_path_factory.mktemp("warpforth-push"))
    push = caller_ctx("push")
    push["sha"] = git("rev-parse", CALLER_BRANCH, cwd=world.origins[CALLER]).strip()
    return KeptRun(world, warpforth_workflow(), push)


@pytest.fixture
def first_push(_first_push: KeptRun) -> Continued:
    """The world just after that push, with the run's results and runners."""
    return _first_push.again()


def test_warpforths_gpu_job_uses_the_binary_it_built_and_persists_only_trusted_runs(first_push: Continued,
                                                                                     tmp_path: Path) -> None:
    wf = warpforth_workflow()
    gpu = wf["jobs"]["gpu-build"]
    uses = [s for s in gpu["steps"] if s.get("uses") == ACTION_REF]
    assert len(uses) == 1 and uses[0]["with"] == {"mode": "build", "warpforthc": "build/bin/warpforthc"}
    build = next(i for i, s in enumerate(gpu["steps"]) if "--target warpforthc" in str(s.get("run", "")))
    assert build < gpu["steps"].index(uses[0])  # after the build step, in the same job
    # the rental job: the action alone, on the artifact, with the key
    assert [s.get("uses") for s in wf["jobs"]["gpu"]["steps"]] == [ACTION_REF]

    world, results, runners = first_push
    assert results == {"build-and-test": "success", "gpu-build": "success", "gpu": "success",
                       "gpu-persist": "success", "gpu-comment": "skipped"}, runners["gpu-build"].text + runners["gpu"].text
    assert (world.artifacts / "wfbench-bundle-1" / "bundle").is_dir()  # the action's default name
    result = result_of(world, "wfbench-result-1")  # the action's default name: WarpForth's job is one GPU
    assert result.source.git_repo == f"https://github.com/{CALLER}" and {c.status for c in result.cases} == {"ok"}
    assert "history/index.json" in history_files(world, CALLER)  # WarpForth's own benchmark-data branch

    world = World(tmp_path / "failed", fail_case="axpy_f64")
    results, runners = world.simulate(wf, caller_ctx("push"))
    assert results == {"build-and-test": "success", "gpu-build": "success", "gpu": "failure",
                       "gpu-persist": "skipped", "gpu-comment": "skipped"}
    assert "| axpy_f64 | FAILED |" in runners["gpu"].summary
    assert (world.artifacts / "wfbench-result-1" / "wfbench-run.json").is_file()
    assert history_files(world, CALLER) == []

    world = World(tmp_path / "manual")
    results, runners = world.simulate(wf, caller_ctx("workflow_dispatch"))
    assert results["gpu-persist"] == "success", runners["gpu-persist"].text
    (bench_action,) = [g for n, g in runners["gpu-persist"].calls if n == "benchmark-action/github-action-benchmark"]
    assert bench_action["github-token"] == "the-run-token"



def test_the_docs_recipes_agree_with_warpforths_own() -> None:
    """The gpu job repeats build-and-test's install and configure steps; wfbench's recipe (which gpu-bench.yml
    and the action's base build use) installs WarpForth's packages and configures with WarpForth's flags."""
    from wfbench_core.compiling.warpforth_build import Toolchain, configure_argv, packages

    wf = warpforth_workflow()
    own = {s.get("name"): s for s in wf["jobs"]["build-and-test"]["steps"]}
    gpu = {s.get("name"): s for s in wf["jobs"]["gpu-build"]["steps"]}
    for name in ("Install LLVM ${{ env.LLVM_VERSION }} and MLIR", "Configure"):
        assert gpu[name]["run"] == own[name]["run"], name
    install = re.sub(r"\\\n\s*", " ", own["Install LLVM ${{ env.LLVM_VERSION }} and MLIR"]["run"])
    theirs = re.search(r"apt-get install -y (.*)$", install, re.M).group(1).replace('"', "").split()
    version = wf["env"]["LLVM_VERSION"]
    assert {p.replace("${LLVM_VERSION}", version) for p in theirs} <= set(packages(version))
    flags = [f.replace('"', "").replace("${LLVM_VERSION}", version)
             for f in re.findall(r"-D\w+=\S+", own["Configure"]["run"])]
    tc = Toolchain(cmake="cmake", ninja="ninja", mlir_dir=Path(f"/usr/lib/llvm-{version}/lib/cmake/mlir"),
                   mlir_version=f"{version}.1.8", cxx="c++", cxx_version="c++")
    assert set(flags) <= set(configure_argv(tc, Path("src"), Path("build")))


def test_the_llvm_version_is_read_from_warpforths_ci(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from wfbench_core.cli import main

    def packages(text: str) -> Any:
        (tmp_path / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
        (tmp_path / ".github" / "workflows" / "ci.yml").write_text(text)
        return CliRunner().invoke(main, ["toolchain", "--packages", str(tmp_path)])

    block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
    assert "llvm-20-dev" in packages(block).stdout.split()
    assert "libmlir-21-dev" in packages("env:\n  LLVM_VERSION: 21 # newer\n").stdout.split()
    for text in ("env:\n  OTHER: 1\n", "env:\n  LLVM_VERSION: '20'\njobs:\n  x:\n    env:\n      LLVM_VERSION: 19\n"):
        r = packages(text)
        assert r.exit_code == 2 and "no single LLVM_VERSION in WarpForth's CI workflow" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_the_gate_refuses_a_failed_or_unreadable_result(tmp_path: Path) -> None:
    import json
    import sys

    script = ROOT / ".github" / "action" / "ci_steps.py"
    run = json.loads((FIXTURES / "h200-run1.json").read_text())
    good = tmp_path / "good.json"
    good.write_text(json.dumps(run))
    run["cases"][1].update(status="error", message="warpforthc failed: x", timing=None)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(run))
    (tmp_path / "torn.json").write_text("{")
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}

    def gate(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(script), "gate", str(path)], capture_output=True, text=True,
                              env=env)

    assert gate(good).returncode == 0
    for path, message in ((bad, "scale_i64 (ERROR)"), (tmp_path / "torn.json", "not a wfbench result (truncated JSON"),
                          (tmp_path / "none.json", "no result to store")):
        proc = gate(path)
        assert proc.returncode == 1 and proc.stdout.count("::error::") == 1 and message in proc.stdout, proc.stdout
        assert "Traceback" not in proc.stderr


def test_the_base_is_the_newest_stored_commit_on_warpforths_default_branch(tmp_path: Path) -> None:
    """A stored run whose commit is not on WarpForth's default branch (a GPU host's forgery, another fork) is
    never the base: the runner would build it in the job that holds the cache."""
    import json
    import os
    import sys

    repo = tmp_path / "warpforth"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}

    def g(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    g("init", "-q", "-b", "main")
    g("commit", "-q", "--allow-empty", "-m", "one")
    on_main = g("rev-parse", "HEAD")
    g("checkout", "-q", "-b", "side")
    g("commit", "-q", "--allow-empty", "-m", "unreviewed")
    side = g("rev-parse", "HEAD")
    g("checkout", "-q", "main")
    history = tmp_path / "history"
    run = json.loads((FIXTURES / "h200-run1.json").read_text())
    for i, (commit, created) in enumerate(((on_main, "2026-01-01T00:00:00+00:00"), (side, "2026-01-02T00:00:00+00:00"),
                                           ("f" * 40, "2099-01-01T00:00:00+00:00"))):
        run["source"] = {**run.get("source", {}), "git_commit": commit}
        run["created"] = created
        (tmp_path / f"r{i}.json").write_text(json.dumps(run))
        proc = subprocess.run([sys.executable, "-m", "wfbench_core", "history", "add", str(tmp_path / f"r{i}.json"),
                               "--history", str(history)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    script = ROOT / ".github" / "action" / "ci_steps.py"
    proc = subprocess.run([sys.executable, str(script), "base-commit", str(history), str(repo), "main"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.strip() == on_main, (proc.stdout, proc.stderr)
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("::warning::")]
    assert len(warnings) == 2 and side in warnings[1] and "f" * 40 in warnings[0], proc.stderr


def test_text_from_a_result_cannot_start_a_workflow_command(tmp_path: Path) -> None:
    """A case message comes from the GPU host: printed in an annotation, its newlines and ``%`` are escaped as
    the runner unescapes them, so it stays one ``::error::`` line and never becomes a command of its own."""
    import json
    import sys

    script = ROOT / ".github" / "action" / "ci_steps.py"
    run = json.loads((FIXTURES / "h200-run1.json").read_text())
    forged = "boom\n::warning::forged\r\n::add-mask::x %0A::notice::too"
    run["cases"][1].update(status="error", message=forged, timing=None)
    results = tmp_path / "results"
    results.mkdir()
    (results / "wfbench-run.json").write_text(json.dumps(run))
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
           "GITHUB_OUTPUT": str(tmp_path / "out.txt")}
    for argv in (["gate", str(results / "wfbench-run.json")], ["summary", str(results)]):
        proc = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, env=env)
        commands = [ln for ln in proc.stdout.splitlines() if ln.startswith("::")]
        assert proc.returncode == 1 and commands and all(ln.startswith("::error::") for ln in commands), proc.stdout
    line = next(ln for ln in commands if "boom" in ln)  # the summary names each failed case with its message
    assert line.endswith("boom%0A::warning::forged%0D%0A::add-mask::x %250A::notice::too"), line


def test_warpforths_pull_request_gets_one_comment_rewritten_on_every_run(first_push: Continued) -> None:
    """WarpForth's ci.yml as docs/ci.md gives it, on an owner-labelled pull request: the gpu job benchmarks base
    (the stored run's commit) against head and writes the comment's text into its artifact; gpu-comment, the
    action in comment mode, posts it once and rewrites it on the next run (a stand-in of GitHub's API)."""
    from github_api import GitHubApi

    world, results, _ = first_push
    wf = warpforth_workflow()
    assert results["gpu-persist"] == "success"  # the base: a stored run
    (world.artifacts / "wfbench-result-1").rename(world.artifacts / "push")
    (world.artifacts / "wfbench-bundle-1").rename(world.artifacts / "push-bundle")
    head = commit_tree(world.origins[CALLER], {"README.md": "slower\n"}, CALLER_BRANCH, "head")
    world.env["STAND_IN_SLOWER"] = "axpy_f64"  # head's WarpForth 5 % slower there

    def artifacts_of(run_id: str) -> list[dict[str, Any]]:  # what the run uploaded
        return [{"id": 100, "name": "wfbench-result-1", "expired": False}]

    api = GitHubApi(CALLER, "the-run-token", artifacts_of=artifacts_of).start()
    world.env["GITHUB_API_URL"] = api.url
    try:
        for action in ("labeled", "synchronize"):
            gh = pr_ctx(action, labels=["gpu-bench"], added="gpu-bench" if action == "labeled" else None,
                        actor=CALLER_OWNER, triggering_actor=CALLER_OWNER, head_repo=CALLER, repository=CALLER,
                        owner=CALLER_OWNER)
            gh["sha"] = head
            results, runners = world.simulate(wf, gh)
            assert results == {"build-and-test": "success", "gpu-build": "success", "gpu": "failure",
                               "gpu-comment": "success", "gpu-persist": "skipped"}, \
                "\n".join(r.text for r in runners.values())
            (world.artifacts / "wfbench-result-1").rename(world.artifacts / f"pr-{action}")
            (world.artifacts / "wfbench-bundle-1").rename(world.artifacts / f"pr-{action}-bundle")
    finally:
        api.stop()
    assert [m for m, _ in api.requests if m != "GET"] == ["POST", "PATCH"]  # one comment, rewritten
    (comment,) = api.comments[7]
    body = comment["body"]
    assert body.splitlines()[0] == "<!-- wfbench:pr-comment -->" and comment["user"]["login"] == "github-actions[bot]"
    assert "axpy_f64" in body and "SLOWER" in body
    assert f"- [wfbench-result-1](https://github.com/{CALLER}/actions/runs/" in body
