"""A stand-in for the few GitHub REST endpoints the pull-request comment uses, on 127.0.0.1.

=======  ==================================================  ==============================================
GET      /repos/{owner}/{repo}/issues/{number}/comments      the comments, paged (``per_page``, ``page``, and
                                                             a ``Link: <…>; rel="next"`` header as GitHub's)
POST     /repos/{owner}/{repo}/issues/{number}/comments      ``{"body"}`` -> 201 and the new comment
PATCH    /repos/{owner}/{repo}/issues/comments/{id}          ``{"body"}`` -> 200 and the comment; 403 when
                                                             the token's account did not write it
GET      /repos/{owner}/{repo}/actions/runs/{id}/artifacts   ``{"total_count", "artifacts"}``, paged the same
=======  ==================================================  ==============================================

With ``read_only`` (a token without ``pull-requests: write``) every write gets 403.

Every request needs ``Authorization: Bearer TOKEN`` (else 401, ``{"message": "Bad credentials"}``); the token
posts as ``github-actions[bot]``. Shapes follow GitHub's documentation (the fields wfbench reads, and a few more).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from loopback import LoopbackApi

BOT = "github-actions[bot]"


class GitHubApi(LoopbackApi):
    METHODS = ("GET", "POST", "PATCH")
    CONTENT_TYPE = "application/json; charset=utf-8"

    def __init__(self, repo: str, token: str, *, comments: dict[int, list[dict[str, Any]]] | None = None,
                 artifacts: dict[str, list[dict[str, Any]]] | None = None,
                 artifacts_of: Any = None) -> None:
        self.repo, self.token = repo, token
        self.comments: dict[int, list[dict[str, Any]]] = comments or {}  # pull request -> its comments
        self.artifacts = artifacts or {}  # run id -> artifacts
        self.artifacts_of = artifacts_of  # or a function of the run id that lists them (what a run uploaded)
        self.requests: list[tuple[str, str]] = []  # (method, path without the query)
        self.read_only = False  # a token without pull-requests: write: every write is refused with 403
        self._next_id = 500
        self._lock = threading.Lock()

    def add_comment(self, number: int, body: str, login: str = BOT) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            c = {"id": self._next_id, "body": body, "user": {"login": login, "type": "Bot" if login == BOT else "User"},
                 "html_url": f"https://github.com/{self.repo}/pull/{number}#issuecomment-{self._next_id}"}
            self.comments.setdefault(number, []).append(c)
            return c

    # -- serving -----------------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        with self._lock:
            self.requests.append((h.command, parts.path))
        if h.headers.get("Authorization") != f"Bearer {self.token}":
            return self._reply(h, 401, {"message": "Bad credentials"})
        length = int(h.headers.get("Content-Length") or 0)
        body = json.loads(h.rfile.read(length)) if length else {}
        base = f"/repos/{self.repo}"
        if self.read_only and h.command != "GET":
            return self._reply(h, 403, {"message": "Resource not accessible by integration"})
        if m := re.fullmatch(rf"{re.escape(base)}/issues/(\d+)/comments", parts.path):
            number = int(m.group(1))
            if h.command == "GET":
                return self._page(h, parts.path, query, list(self.comments.get(number, [])))
            if h.command == "POST":
                return self._reply(h, 201, self.add_comment(number, str(body["body"])))
        if (m := re.fullmatch(rf"{re.escape(base)}/issues/comments/(\d+)", parts.path)) and h.command == "PATCH":
            found = [c for cs in self.comments.values() for c in cs if c["id"] == int(m.group(1))]
            if not found:
                return self._reply(h, 404, {"message": "Not Found"})
            if found[0]["user"]["login"] != BOT:
                return self._reply(h, 403, {"message": "Resource not accessible by integration"})
            found[0]["body"] = str(body["body"])
            return self._reply(h, 200, found[0])
        if (m := re.fullmatch(rf"{re.escape(base)}/actions/runs/(\d+)/artifacts", parts.path)) and h.command == "GET":
            items = self.artifacts_of(m.group(1)) if self.artifacts_of else self.artifacts.get(m.group(1), [])
            return self._page(h, parts.path, query, items, key="artifacts")
        return self._reply(h, 404, {"message": "Not Found"})

    def _page(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, str], items: list[Any],
              key: str | None = None) -> None:
        per_page, page = min(100, int(query.get("per_page", 30))), int(query.get("page", 1))
        chunk = items[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(items):
            headers["Link"] = f'<{self.url}{path}?per_page={per_page}&page={page + 1}>; rel="next"'
        payload: Any = {"total_count": len(items), key: chunk} if key else chunk
        return self._reply(h, 200, payload, headers)
