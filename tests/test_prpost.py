"""``wfbench pr-post``: one comment per pull request, rewritten on every run, against a stand-in of GitHub's REST
comments API on 127.0.0.1 (tests/github_api.py: the documented endpoints, paging by ``Link`` header)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner, Result

from wfbench_core.cli import main
from wfbench_core.review.prcomment import MARKER
from github_api import GitHubApi

REPO, TOKEN, PR = "owner/wfbench", "ghs_0123456789abcdefABCDEF", 7


@pytest.fixture
def api() -> Iterator[GitHubApi]:
    server = GitHubApi(REPO, TOKEN).start()
    yield server
    server.stop()


def post(api: GitHubApi, tmp_path: Path, text: str, *extra: str, token: str = TOKEN) -> Result:
    comment = tmp_path / "comment.md"
    comment.write_text(text)
    return CliRunner().invoke(main, ["pr-post", str(comment), "--repo", REPO, "--pr", str(PR), "--api-url", api.url,
                                     *extra], env={"GITHUB_TOKEN": token, "GH_TOKEN": None})


def ours(api: GitHubApi) -> list[dict[str, Any]]:
    return [c for c in api.comments.get(PR, []) if c["body"].startswith(MARKER)]


def test_the_first_run_creates_the_comment_and_every_later_run_rewrites_it(api: GitHubApi, tmp_path: Path) -> None:
    r = post(api, tmp_path, f"{MARKER}\nfirst run\n")
    assert r.exit_code == 0, r.output
    (first,) = ours(api)
    assert r.stdout.startswith(f"created comment {first['id']} on {REPO}#{PR}")
    for n in (2, 3):
        r = post(api, tmp_path, f"{MARKER}\nrun {n}\n")
        assert r.exit_code == 0 and r.stdout.startswith(f"updated comment {first['id']}"), r.output
    assert [c["body"] for c in ours(api)] == [f"{MARKER}\nrun 3\n"]
    writes = [(m, p) for m, p in api.requests if m != "GET"]
    assert writes == [("POST", f"/repos/{REPO}/issues/{PR}/comments"),
                      ("PATCH", f"/repos/{REPO}/issues/comments/{first['id']}"),
                      ("PATCH", f"/repos/{REPO}/issues/comments/{first['id']}")]


def test_it_finds_its_comment_on_a_later_page_and_leaves_everyone_elses_alone(api: GitHubApi, tmp_path: Path) -> None:
    for i in range(130):  # two pages of 100 before it: found only by following the Link header
        api.add_comment(PR, f"review comment {i}", login="reviewer")
    forged = api.add_comment(PR, f"{MARKER}\nwritten by someone else", login="someone")
    other_bot = api.add_comment(PR, "another workflow's comment")  # the bot's, without the marker
    mine = api.add_comment(PR, f"{MARKER}\nold")
    r = post(api, tmp_path, f"{MARKER}\nnew\n")
    assert r.exit_code == 0 and f"updated comment {mine['id']}" in r.stdout, r.output
    assert mine["body"] == f"{MARKER}\nnew\n"
    assert forged["body"] == f"{MARKER}\nwritten by someone else" and other_bot["body"] == "another workflow's comment"
    assert sum(1 for m, p in api.requests if m == "GET" and p.endswith(f"/issues/{PR}/comments")) == 2
    assert len(api.comments[PR]) == 133


def test_the_runs_artifacts_are_listed_with_their_links(api: GitHubApi, tmp_path: Path) -> None:
    api.artifacts["4242"] = [{"id": 11, "name": "wfbench-result-H200-1", "expired": False},
                             {"id": 12, "name": "wfbench-result-RTX_4090-1", "expired": False},
                             {"id": 13, "name": "coverage", "expired": False},
                             {"id": 14, "name": "wfbench-result-L40S-1", "expired": True}]
    r = post(api, tmp_path, f"{MARKER}\nbody\n", "--run-id", "4242", "--server-url", "https://github.example")
    assert r.exit_code == 0, r.output
    (c,) = ours(api)
    assert c["body"].endswith(
        "### Artifacts\n\n"
        "- [wfbench-result-H200-1](https://github.example/owner/wfbench/actions/runs/4242/artifacts/11)\n"
        "- [wfbench-result-RTX_4090-1](https://github.example/owner/wfbench/actions/runs/4242/artifacts/12)\n")


@pytest.mark.parametrize("text, token, expect", [
    ("no marker\n", TOKEN, f"does not start with the marker {MARKER}"),
    (f"{MARKER}\nx\n", "wrong-token", "HTTP 401: Bad credentials"),
    (f"{MARKER}\nx\n", "", "no token: set GITHUB_TOKEN"),
    (f"{MARKER}\n" + "x" * 70_000, TOKEN, "GitHub takes at most 65536"),
])
def test_bad_input_is_one_line_and_posts_nothing(api: GitHubApi, tmp_path: Path, text: str, token: str,
                                                 expect: str) -> None:
    r = post(api, tmp_path, text, token=token)
    assert r.exit_code != 0 and expect in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.output
    assert "Traceback" not in r.output and TOKEN not in r.output
    assert api.comments.get(PR, []) == [] and [m for m, _ in api.requests if m != "GET"] == []


def test_a_token_without_write_permission_is_a_clear_error(api: GitHubApi, tmp_path: Path) -> None:
    """A job token without ``pull-requests: write``: GitHub answers 403, the step says so in one line."""
    api.read_only = True
    r = post(api, tmp_path, f"{MARKER}\nnew\n")
    assert r.exit_code != 0 and len(r.stderr.strip().splitlines()) == 1
    assert (f"GitHub: POST {api.url}/repos/{REPO}/issues/{PR}/comments: HTTP 403: Resource not accessible by "
            "integration") in r.stderr
    assert api.comments.get(PR, []) == []
