"""The HTTP server under the stand-ins of remote APIs (tests/vast_api.py, tests/github_api.py): 127.0.0.1 on
a free port, served from a daemon thread; a subclass answers each request in ``_handle``, with ``_reply``."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar


class LoopbackApi:
    #: the HTTP methods the stand-in answers (each goes to ``_handle``)
    METHODS: ClassVar[tuple[str, ...]] = ("GET",)
    #: the Content-Type of every JSON reply, as the real API sends it
    CONTENT_TYPE: ClassVar[str] = "application/json"
    _server: ThreadingHTTPServer | None = None

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def _reply(self, h: BaseHTTPRequestHandler, status: int, payload: Any,
               headers: dict[str, str] | None = None) -> None:
        """``payload`` as JSON with ``status`` and ``headers``; a client that went away (a slow reply) is let be."""
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", self.CONTENT_TYPE)
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            pass

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Any:
        api = self

        def handle(handler: BaseHTTPRequestHandler) -> None:
            api._handle(handler)

        def quiet(handler: BaseHTTPRequestHandler, *args: Any) -> None:
            pass

        Handler = type("Handler", (BaseHTTPRequestHandler,),
                       {"log_message": quiet, **{f"do_{m}": handle for m in self.METHODS}})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
