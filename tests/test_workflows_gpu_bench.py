"""The workflow tests, gpu-bench.yml, run: WarpForth checked out and built here, the action, trusted-only history,
the pull-request comment.

The machinery (the evaluator, the runner, the stand-ins) is tests/workflow_kit.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from workflow_kit import (  # tests/ is on sys.path
    ACTION_REF,
    ARTIFACT,
    BUILD,
    BUNDLE,
    BENCH,
    CALLER,
    CALLER_BRANCH,
    DOCS,
    RAN_ALL,
    REPO,
    SIM_CASES,
    Continued,
    KeptRun,
    StepFailed,
    World,
    commit_tree,
    history_files,
    result_of,
    caller_ctx,
    git,
    github_ctx,
    load,
    load_action,
    step_of,
)


@pytest.fixture(scope="module")
def _first_push(tmp_path_factory: pytest.TempPathFactory) -> KeptRun:
    """The first push of gpu-bench.yml (nothing stored yet), run once for the module."""
    return KeptRun(World(tmp_path_factory.mktemp("first-push")), load("gpu-bench.yml"), github_ctx("push"))


@pytest.fixture
def first_push(_first_push: KeptRun) -> Continued:
    """The world just after the first push run, its results and runners, for every test that continues from there."""
    return _first_push.again()


def test_gpu_bench_builds_warpforth_with_its_recipe_benchmarks_and_persists(first_push: Continued) -> None:
    import json

    world, results, runners = first_push
    bench, build = runners[BENCH], runners[BUILD]
    assert results == RAN_ALL, build.text + bench.text + runners["persist/RTX_4090"].text
    # the compilers ran in the build job, which never held the Vast.ai key; the rental job, on a fresh runner,
    # got the bundle artifact and compiled nothing
    assert world.stubbed("warpforthc:") == [] and build.outcome("Compile every selected case") == ["success"]
    assert set(bench.outcome("Compile every selected case") + bench.outcome("Build the compilers")) == {"skipped"}
    assert bench.outcome("Download the bundle") == ["success"]
    assert not [c for c in build.calls if "vast-api-key" in c[1]] and "k3y" not in build.text
    # nothing stored yet: head alone, built by wfbench with WarpForth's recipe at the LLVM its ci.yml installs
    assert f"::notice::WarpForth tetsuo-cpp/warpforth@{world.warpforth_commit}" in build.text
    assert "no stored run names a WarpForth commit of its default branch yet: benchmarking head alone" in build.text
    installs = [line for line in world.stubbed("apt-get") if " install " in line]
    assert installs == ["apt-get install -y -qq --no-install-recommends cmake ninja-build g++ llvm-20-dev "
                        "libmlir-20-dev mlir-20-tools ccache"]
    (configure,) = world.cmake_calls()
    assert {"-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"} <= set(configure["args"])
    assert configure["memref"] == ["static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);"]  # MLIR 22 here
    assert configure["runner"] is False
    assert [c["target"] for c in world.cmake_calls("build")] == ["warpforthc"]
    # the warpforthc tests ran here, then one rental ran the GPU tests and the cases, after every case compiled
    assert any("-m warpforthc" in line for line in world.stubbed("pytest"))
    (rent,) = [json.loads(line[5:]) for line in world.stubbed("rent")]
    assert rent["gpu_name"] == "RTX_4090" and rent["arch"] == "sm_89" and rent["label"] == "wfbench-ci-4242-RTX_4090"
    assert rent["gpu_tests"] == str(bench.workspace)
    # the result names the WarpForth commit; the job summary shows the tests, the table; the raw JSON is an artifact
    result = result_of(world)
    assert (result.source.git_commit, result.source.git_repo) == (world.warpforth_commit,
                                                                  "https://github.com/tetsuo-cpp/warpforth")
    assert result.warpforthc.git_commit == world.warpforth_commit and not result.warpforthc.git_dirty
    assert {c.status for c in result.cases} == {"ok"} and {c.id for c in result.cases} == set(SIM_CASES)
    assert "## wfbench: WarpForth vs CUDA on RTX_4090 (sm_89)" in bench.summary
    assert "| `pytest -m gpu` on the rented GPU | 30 | 0 | 0 | 2 |" in bench.summary
    assert "| `pytest -m warpforthc` here, with the head warpforthc | 1 | 0 | 0 | 0 |" in bench.summary
    assert "scale_i64" in bench.summary and "case(s) failed" not in bench.summary
    assert (world.artifacts / ARTIFACT / "table.txt").read_text().startswith("case")
    # persist: the history branch is started, with the run and github-action-benchmark's data
    files = history_files(world, REPO)
    assert "history/index.json" in files and "github-action-benchmark/data.json" in files
    assert len([f for f in files if f.startswith("history/runs/")]) == 1 and "action.yml" not in files
    message = git("log", "-1", "--format=%s", "benchmark-data", cwd=world.origins[REPO]).strip()
    assert message == f"wfbench: RTX_4090 run 4242.1, https://github.com/tetsuo-cpp/warpforth@{world.warpforth_commit}"

    # WarpForth moves on: base is the stored run's commit (from the cache, no build), head the new commit
    # (built); one interleaved base/head run, judged by wfbench compare; the history keeps head's gaps
    (world.artifacts / ARTIFACT).rename(world.artifacts / "first")
    (world.artifacts / BUNDLE).rename(world.artifacts / "first-bundle")
    world.log.write_text("")
    newer = commit_tree(world.origins[CALLER], {"README.md": "a change\n"}, CALLER_BRANCH, "head")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results == RAN_ALL, bench.text
    assert len(world.cmake_calls()) == 1  # head only: base came from the cache
    assert f"warpforthc base: {world.warpforth_commit[:12]}, cached build" in runners[BUILD].text
    result = result_of(world)
    assert {label: c.git_commit for label, c in result.compilers.items()} == {"base": world.warpforth_commit,
                                                                                "head": newer}
    assert result.source.git_commit == newer
    assert f"against base {world.warpforth_commit}" in bench.summary and "SAME" in bench.summary
    assert "### wfbench check" not in bench.summary  # the verdict is the base/head run's, not a trend's
    files = history_files(world, REPO)
    stored = [f for f in files if f.startswith("history/runs/")]
    assert len(stored) == 2
    from wfbench_core.record.results import loads

    newest = max(stored)
    text = git("show", f"benchmark-data:{newest}", cwd=world.origins[REPO])
    kept = loads(text)
    assert {c.compiler_label for c in kept.cases} == {""} and kept.warpforthc.git_commit == newer


def test_a_regression_fails_the_bench_job_and_is_still_stored(first_push: Continued) -> None:
    world, results, _ = first_push
    assert results["persist"] == "success"
    (world.artifacts / ARTIFACT).rename(world.artifacts / "first")
    (world.artifacts / BUNDLE).rename(world.artifacts / "first-bundle")
    world.env["STAND_IN_SLOWER"] = "axpy_f64"  # head's WarpForth 5 % slower there
    commit_tree(world.origins[CALLER], {"README.md": "slower\n"}, CALLER_BRANCH, "slower")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results == {**RAN_ALL, "bench": "failure", "summary": "failure"}, bench.text
    assert bench.outcome("Job summary") == ["failure"] and bench.outcome("Upload the raw result") == ["success"]
    assert "::error::RTX_4090: head is slower than base" in runners["summary"].text
    assert "| axpy_f64 v1 | **SLOWER** " in runners["summary"].summary
    assert "::error::head is slower than base or breaks a case (wfbench compare --fail-on-regression exited 1)" in bench.text
    assert len([f for f in history_files(world, REPO) if f.startswith("history/runs/")]) == 2


def test_a_failed_gpu_test_fails_the_job_and_is_named(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.env["STAND_IN_GPU_TEST_FAIL"] = "tests/test_gpu.py::test_paired_run_checks_then_times"
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results["bench"] == "failure" and bench.outcome("Benchmark (GPU tests") == ["success"]
    assert "| `pytest -m gpu` on the rented GPU | 30 | 1 | 0 | 2 |" in bench.summary
    assert ("::error::pytest -m gpu on the rented GPU: tests/test_gpu.py::test_paired_run_checks_then_times failed"
            in bench.text)


def test_a_failed_case_fails_the_bench_job_names_it_uploads_the_json_and_stores_nothing(tmp_path: Path) -> None:
    world = World(tmp_path, fail_case="scale_i64")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results == {**RAN_ALL, "bench": "failure", "summary": "failure", "persist": "skipped"}, bench.text
    assert "::error::RTX_4090: 1 case(s) failed: scale_i64 v1 (FAILED)" in runners["summary"].text
    # the benchmark step itself fails: wfbench run's exit status survives "| tee" (pipefail)
    assert bench.outcome("Benchmark (GPU tests") == ["failure"]
    assert "wfbench: error: 1 case(s) failed or could not run: scale_i64" in bench.text
    # the summary still runs and names the case and its reason; the step fails the job on its own too
    assert bench.outcome("Job summary") == ["failure"]
    assert ("| scale_i64 | FAILED | output mismatch: 3 of 1048576 elements differ (max abs err 0.5) |"
            in bench.summary)
    assert "1 case(s) failed: this run is not stored in the history" in bench.summary
    assert "::error::scale_i64 FAILED: output mismatch" in bench.text
    # the raw JSON is uploaded all the same, the clean-up ran, and nothing reached the history
    assert bench.outcome("Upload the raw result") == ["success"]
    assert [c.status for c in result_of(world).cases if c.id == "scale_i64"] == ["failed"]
    assert bench.outcome("Destroy any instance left") == ["success"]
    assert history_files(world, REPO) == [] and not any(r.startswith("persist") for r in runners)


def test_a_manual_run_benchmarks_the_given_ref_and_its_persist_gets_a_token(tmp_path: Path) -> None:
    world = World(tmp_path)
    older = world.warpforth_commit  # its ci.yml installs LLVM/MLIR 20
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
    newer = commit_tree(world.origins[CALLER], {".github/workflows/ci.yml": block.replace('"20"', '"21"')},
                         CALLER_BRANCH, "LLVM 21")
    gh = github_ctx("workflow_dispatch", inputs={"warpforth-ref": older})
    assert "head_commit" not in gh["event"]  # a manual run's payload has no commit
    results, runners = world.simulate(load("gpu-bench.yml"), gh)
    assert results == RAN_ALL, runners[BENCH].text
    # the ref asked for, not the branch head, built with the MLIR version of the ref's own ci.yml
    assert result_of(world).source.git_commit == older != newer
    installs = " ".join(line for line in world.stubbed("apt-get") if " install " in line)
    assert "llvm-20-dev" in installs and "llvm-21" not in installs
    persist = runners["persist/RTX_4090"]
    (bench_action,) = [given for name, given in persist.calls if name == "benchmark-action/github-action-benchmark"]
    assert bench_action["github-token"] == "the-run-token"
    (work,) = [given for name, given in persist.calls
               if name == "actions/checkout" and given.get("path") == ".wfbench-history-work"]
    assert work["token"] == "the-run-token"
    # without the token the real action cannot find the commit of a manual run
    with pytest.raises(StepFailed, match="no 'github-token' provided"):
        world.benchmark_action({k: v for k, v in bench_action.items() if k != "github-token"}, persist)
    assert "history/index.json" in history_files(world, REPO)


def test_a_cached_warpforthc_restored_under_another_home_is_rebuilt_not_used(first_push: Continued) -> None:
    """warpforthc reads libdevice at the absolute path it was built with: a cache entry made under another
    home (a renamed runner user, say) would compile nothing, so wfbench builds it again where it is now."""
    world, results, _ = first_push
    assert results["bench"] == "success"
    (entry,) = world.cache.iterdir()
    for provenance in entry.rglob("warpforthc.wfbench.json"):  # as if built under /home/someone-else
        text = provenance.read_text()
        assert str(world.tmp) in text
        provenance.write_text(text.replace(str(world.tmp), "/home/someone-else"))
    (world.artifacts / ARTIFACT).rename(world.artifacts / "first")
    (world.artifacts / BUNDLE).rename(world.artifacts / "first-bundle")
    world.log.write_text("")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    build = runners[BUILD]
    assert results["bench"] == "success", build.text + runners[BENCH].text
    assert build.outcome("Restore the warpforthc builds") == ["success"]
    assert "holds no finished build made there, or not the files its build recorded; building it again" in build.text
    assert len(world.cmake_calls()) == 1 and build.outcome("Compile every selected case") == ["success"]


def test_executables_come_only_from_the_exact_cache_entry_a_successful_run_saved() -> None:
    """No restore-keys (another commit's entry is never restored), the key names this repository and WarpForth's,
    and a failed run saves nothing."""
    steps = load("gpu-bench.yml")["jobs"]["build"]["steps"]
    restores = [s for s in [*steps, *load_action()["runs"]["steps"]]
                if str(s.get("uses", "")).startswith("actions/cache/restore@")]
    assert len(restores) == 2 and not any("restore-keys" in s["with"] for s in restores)
    (save,) = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/save@")]
    prune = step_of(load("gpu-bench.yml"), "build", "Keep only the warpforthc builds")
    assert save["if"].startswith("success() &&") and prune["if"].startswith("success() &&")
    key = restores[0]["with"]["key"]
    assert "${{ github.repository }}" in key and "${{ env.WARPFORTH_REPOSITORY }}" in key
    with_ = step_of(load("gpu-bench.yml"), "build", "Build base and head")["with"]
    assert key.startswith(with_["cache-key-prefix"])


def test_the_action_refuses_bad_inputs_in_one_line(tmp_path: Path) -> None:
    world = World(tmp_path)
    wf = {"on": "push", "jobs": {"gpu": {"runs-on": "ubuntu-24.04", "steps": [
        {"uses": "actions/checkout@v4"}, {"uses": ACTION_REF, "with": {}}]}}}
    gh = caller_ctx("push")
    for given, message in (({"warpforth": "nowhere"}, "warpforth 'nowhere' is not a git checkout of WarpForth"),
                           ({"base": ""}, "base is empty: give auto, none, or a commit"),
                           ({"warpforthc": "build/bin/warpforthc"}, "is not an executable file"),
                           ({"warpforthc": "CMakeLists.txt"}, "is not an executable file"),
                           ({"vast-api-key": "k3y"}, "mode build runs the tree under test: give 'vast-api-key' only"),
                           ({"mode": "execute"}, "'vast-api-key' is empty"),
                           ({"mode": "execute", "vast-api-key": "k3y", "rental-min": "half"},
                            "rental-min 'half' and suite-budget-s '1200' must be whole numbers"),
                           ({"mode": "bench", "vast-api-key": "k3y"}, "mode bench is now two jobs"),
                           ({"mode": "other"}, "mode 'other' is neither build, execute, persist nor comment"),
                           ({"mode": "comment"}, "mode comment writes a pull request's comment; this is a push run")):
        wf["jobs"]["gpu"]["steps"][1]["with"] = given
        results, runners = world.simulate(wf, gh)
        errors = [line for line in runners["gpu"].text.splitlines() if line.startswith("::error::")]
        assert results == {"gpu": "failure"} and len(errors) == 1 and message in errors[0], runners["gpu"].text
        assert world.stubbed("rent") == []
    # persist refuses an untrusted event even when a job condition let it through
    wf["jobs"]["gpu"]["steps"][1]["with"] = {"mode": "persist"}
    results, runners = world.simulate(wf, caller_ctx("push", ref="refs/heads/feature"))
    assert results == {"gpu": "failure"}
    assert "stores only pushes and manual runs on the default branch" in runners["gpu"].text


def test_a_pull_request_gets_one_comment_rewritten_on_every_run(first_push: Continued) -> None:
    """gpu-bench.yml on a pull request after the first push: plan -> build -> bench -> summary -> comment, every
    step's script for real; the comment goes to a stand-in of GitHub's REST comments API (tests/github_api.py)
    and is made once, then rewritten by the next run."""
    import subprocess

    import workflow_kit as tw
    from github_api import GitHubApi

    pytest.importorskip("paramiko")  # as beside the rentals (tests/test_workflow_matrix.py)
    pytest.importorskip("vastai")
    world, results, _ = first_push
    wf = tw.load("gpu-bench.yml")
    assert results["persist"] == "success"  # the base: a stored run
    tw.commit_tree(world.origins[tw.CALLER], {"README.md": "slower\n"}, tw.CALLER_BRANCH, "head")
    world.env["STAND_IN_SLOWER"] = "axpy_f64"  # head's WarpForth 5 % slower there
    (world.artifacts / tw.ARTIFACT).rename(world.artifacts / "push")
    (world.artifacts / tw.BUNDLE).rename(world.artifacts / "push-bundle")

    def artifacts_of(run_id: str) -> list[dict[str, Any]]:  # what the run uploaded
        return [{"id": 100 + i, "name": a.name, "expired": False}
                for i, a in enumerate(sorted(world.artifacts.iterdir())) if a.name.endswith("-1")]

    api = GitHubApi(tw.REPO, "the-run-token", artifacts_of=artifacts_of).start()
    world.env["GITHUB_API_URL"] = api.url
    try:
        bodies = []
        for action in ("labeled", "synchronize"):
            gh = tw.pr_ctx(action, labels=["gpu-bench"], added="gpu-bench" if action == "labeled" else None,
                           actor=tw.OWNER, triggering_actor=tw.OWNER, head_repo=tw.REPO)
            results, runners = world.simulate(wf, gh)
            assert results == {"plan": "success", "build": "success", "bench": "failure", "summary": "failure",
                               "persist": "skipped", "comment": "success"}, "\n".join(r.text for r in runners.values())
            (comment,) = api.comments[7]
            bodies.append(comment["body"])
            for a in [a for a in world.artifacts.iterdir() if a.name.endswith("-1")]:
                a.rename(world.artifacts / f"{a.name}-{action}")
    finally:
        api.stop()
    writes = [m for m, _ in api.requests if m != "GET"]
    assert writes == ["POST", "PATCH"]  # one comment: made once, rewritten by the next run
    body = bodies[-1]
    print(body)
    assert body.splitlines()[0] == "<!-- wfbench:pr-comment -->"
    assert "| RTX_4090 (sm_89) | base/head | 1 SLOWER, 1 SAME |" in body
    assert "### RTX_4090: head against base" in body and "#### axpy_f64: SLOWER, head against base" in body
    assert "#### scale_i64" not in body  # SAME: in the table only
    assert "- [wfbench-result-RTX_4090-1](https://github.com/owner/wfbench/actions/runs/4242/artifacts/" in body
    bench = runners[tw.BENCH]
    assert bench.outcome("This model's part of the pull-request comment") == ["success"]
    assert any("[vast,explain]" in line for line in world.stubbed("pip"))  # the explanation's tools
    assert subprocess.run(["git", "rev-parse", "--verify", "-q", "benchmark-data"], cwd=world.origins[tw.REPO],
                          capture_output=True).returncode == 0  # stored by the push run only
