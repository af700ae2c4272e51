"""gpu-bench.yml on a pull request: plan -> build -> bench -> summary -> comment, every step's script for real (the
runner of tests/workflow_kit.py); the comment goes to a stand-in of GitHub's REST comments API
(tests/github_api.py) and is made once, then rewritten by the next run. (Its own file, apart from the rentals of
tests/test_workflow_matrix.py: ``--dist loadfile`` gives each of the two long tests a worker.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import workflow_kit as tw
from github_api import GitHubApi

pytest.importorskip("paramiko")  # as beside the rentals (tests/test_workflow_matrix.py)
pytest.importorskip("vastai")


def test_a_pull_request_gets_one_comment_rewritten_on_every_run(tmp_path: Path) -> None:
    world = tw.World(tmp_path)
    wf = tw.load("gpu-bench.yml")
    assert world.simulate(wf, tw.github_ctx("push"))[0]["persist"] == "success"  # the base: a stored run
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
