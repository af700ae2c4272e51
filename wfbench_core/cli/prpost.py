"""``wfbench pr-post``: post the pull-request comment, or rewrite the one posted before (found by its marker)."""

from __future__ import annotations

import os
from pathlib import Path

import click

__all__ = ["pr_post_cmd"]  # internal, not the plugin API


@click.command("pr-post")
@click.argument("comment", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--repo", default=lambda: os.environ.get("GITHUB_REPOSITORY", ""), show_default="$GITHUB_REPOSITORY",
              help="The repository, OWNER/NAME.")
@click.option("--pr", "number", type=click.IntRange(min=1), required=True, help="The pull request's number.")
@click.option("--run-id", default=None, help="List this workflow run's wfbench artifacts at the end, linked "
                                             "(needs actions: read).")
@click.option("--api-url", default=lambda: os.environ.get("GITHUB_API_URL", "https://api.github.com"),
              show_default="$GITHUB_API_URL or https://api.github.com", help="GitHub's REST API.")
@click.option("--server-url", default=lambda: os.environ.get("GITHUB_SERVER_URL", "https://github.com"),
              show_default="$GITHUB_SERVER_URL or https://github.com", help="Where the artifact links point.")
def pr_post_cmd(comment: Path, repo: str, number: int, run_id: str | None, api_url: str, server_url: str) -> None:
    """Post COMMENT (made by pr-comment) on a pull request, or rewrite the comment posted before: one comment
    per pull request, found by its hidden marker. The token comes from GITHUB_TOKEN or GH_TOKEN."""
    from wfbench_core.review import prpost

    gh = prpost.GitHub(api_url, repo, os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or "")
    body = comment.read_text()
    if run_id:
        body = prpost.with_artifacts(body, gh.pages(f"/actions/runs/{run_id}/artifacts", key="artifacts"),
                                     server_url=server_url, repo=repo, run_id=run_id)
    done = prpost.post(gh, number, body)
    click.echo(f"{done.action} comment {done.comment_id} on {repo}#{number}" + (f": {done.url}" if done.url else ""))
