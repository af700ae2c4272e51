"""Posting the one pull-request comment: find the comment that carries the hidden marker and rewrite it,
else create it. Optionally the run's artifacts are listed at its end, each linked.

GitHub's REST API, with the job's token (``pull-requests: write`` to post; ``actions: read`` to list artifacts):

- ``GET /repos/{owner}/{repo}/issues/{number}/comments`` (paged by the ``Link`` header), the comments;
- ``POST /repos/{owner}/{repo}/issues/{number}/comments``, a new comment;
- ``PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}``, rewriting one;
- ``GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts``, the run's artifacts.

Only a comment whose first line is the marker *and* whose author is the posting account (``github-actions[bot]``
for the job's token) is rewritten: anyone can write the marker into a comment of their own.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.review import markdown as md
from wfbench_core.review.prcomment import LIMIT, MARKER

__all__ = ["API_VERSION", "BOT", "GitHub", "Posted", "post", "with_artifacts"]  # internal, not the plugin API

BOT = "github-actions[bot]"  # the author of comments made with a workflow's GITHUB_TOKEN
API_VERSION = "2022-11-28"


@attrs.frozen
class Posted:
    action: str  # "created" or "updated"
    comment_id: int
    url: str


class GitHub:
    """The few REST calls the comment needs; errors are one line naming the call, never the token."""

    def __init__(self, api_url: str, repo: str, token: str, *, timeout: float = 30.0) -> None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise WfbenchError(f"--repo {repo!r}: expected OWNER/NAME")
        if not token:
            raise WfbenchError("no token: set GITHUB_TOKEN (or GH_TOKEN) to the job's token")
        self.api, self.repo, self.token, self.timeout = api_url.rstrip("/"), repo, token, timeout

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
        url = path if path.startswith(("http://", "https://")) else f"{self.api}/repos/{self.repo}{path}"
        req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Accept": "application/vnd.github+json",
                                              "X-GitHub-Api-Version": API_VERSION,
                                              "Content-Type": "application/json", "User-Agent": "wfbench"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read() or b"null"), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            said = exc.read().decode(errors="replace")
            try:
                said = json.loads(said).get("message", said)
            except (ValueError, AttributeError):
                pass
            raise WfbenchError(f"GitHub: {method} {url.split('?')[0]}: HTTP {exc.code}: "
                               f"{str(said).replace(self.token, '***')[:200]}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise WfbenchError(f"GitHub: {method} {url.split('?')[0]}: {reason}") from None

    def pages(self, path: str, key: str | None = None) -> list[Any]:
        """Every item of a paged list (``per_page=100``, following ``Link: <…>; rel="next"``); ``key`` names
        the list in an object reply (``artifacts``)."""
        items: list[Any] = []
        url: str | None = f"{path}{'&' if '?' in path else '?'}per_page=100"
        while url:
            data, headers = self.call("GET", url)
            page = (data or {}).get(key, []) if key else data
            items += page if isinstance(page, list) else []
            link = next((v for k, v in headers.items() if k.lower() == "link"), "")
            m = re.search(r'<([^>]+)>;\s*rel="next"', link)
            url = m.group(1) if m else None
        return items


def with_artifacts(body: str, artifacts: list[dict[str, Any]], *, server_url: str, repo: str, run_id: str,
                   prefix: str = "wfbench-") -> str:
    """The comment with a list of the run's artifacts (those named ``prefix``…), each linked."""
    keep = sorted((a for a in artifacts if str(a.get("name", "")).startswith(prefix) and not a.get("expired")),
                  key=lambda a: a["name"])
    if not keep:
        return body
    links = [f"[{a['name']}]({server_url.rstrip('/')}/{repo}/actions/runs/{run_id}/artifacts/{a['id']})" for a in keep]
    return body.rstrip("\n") + "\n\n" + "\n".join(["### Artifacts", "", *md.bullets(links)]) + "\n"


def post(gh: GitHub, number: int, body: str, *, author: str = BOT) -> Posted:
    """Rewrite the pull request's wfbench comment, or create it: one comment per pull request."""
    if not body.startswith(MARKER):
        raise WfbenchError(f"the comment does not start with the marker {MARKER}: make it with wfbench pr-comment")
    if len(body) > LIMIT:
        raise WfbenchError(f"the comment has {len(body)} characters; GitHub takes at most {LIMIT}")
    ours = [c for c in gh.pages(f"/issues/{number}/comments")
            if str(c.get("body", "")).startswith(MARKER) and (c.get("user") or {}).get("login") == author]
    if ours:
        data, _ = gh.call("PATCH", f"/issues/comments/{int(ours[0]['id'])}", {"body": body})
        return Posted("updated", int(data["id"]), str(data.get("html_url", "")))
    data, _ = gh.call("POST", f"/issues/{number}/comments", {"body": body})
    return Posted("created", int(data["id"]), str(data.get("html_url", "")))
