"""The Vast.ai API key and the SDK behind it, every failure one scrubbed line.

The key comes from ``api_key_file`` (read when the rental starts, not before), else ``VAST_API_KEY``, else the
file ``vastai set api-key`` writes (the vastai CLI's order). It is never printed, stored or put in an error
message, and it is sent only to ``api_url``, an address given on the command line (default
``https://console.vast.ai``): ``VAST_URL`` in the environment, which the vastai SDK would otherwise follow
and an earlier step of a CI job can set, is refused unless it names that same address.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wfbench_transports.vast_config import API_URL, VastError

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["KEY_ENV", "URL_ENV", "VastClient", "api_address", "find_api_key", "key_files"]

KEY_ENV = "VAST_API_KEY"  #: the variable the vastai CLI and SDK read
URL_ENV = "VAST_URL"  #: the variable the vastai SDK reads its address from (refused unless it is api_url)


def key_files() -> list[Path]:
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [config / "vastai" / "vast_api_key", Path.home() / ".vast_api_key"]


def find_api_key(key_file: str | None = None, *, read: bool = True) -> str:
    """From ``key_file``, else ``VAST_API_KEY``, else the file ``vastai set api-key`` writes (the vastai CLI's
    order). With ``read=False`` only whether there is one is checked (the key is read when it is used)."""
    from wfbench_core.record.fsutil import read_text  # here: listing the transports loads no file helpers

    if key_file:
        path = Path(key_file).expanduser()
        if not path.is_file():
            raise VastError(f"api_key_file={key_file}: no such file; write the Vast.ai API key there")
        key = read_text(path, "a Vast.ai API key file").strip() if read else "?"
        if not key:
            raise VastError(f"api_key_file={key_file}: the file is empty; write the Vast.ai API key there")
        return key
    if os.environ.get(KEY_ENV, "").strip():
        return os.environ[KEY_ENV].strip()
    for path in key_files():
        if path.is_file():
            key = read_text(path, "a Vast.ai API key file").strip()
            if key:
                return key
    raise VastError(f"no Vast.ai API key: pass api_key_file=FILE, set {KEY_ENV}, or save it with 'vastai set "
                    f"api-key KEY' (it goes to {key_files()[0]})")


def api_address(api_url: str | None) -> str:
    """Where the key may be sent: ``api_url`` (the command line), never an address from the environment."""
    url = (api_url or API_URL).rstrip("/")
    env = os.environ.get(URL_ENV, "").strip().rstrip("/")
    if env and env != url:
        raise VastError(f"{URL_ENV}={env} is set in the environment: wfbench sends the Vast.ai key only to "
                        f"api_url ({url}), given on the command line; unset {URL_ENV}, or pass "
                        f"--transport-opt api_url=URL to use another address")
    return url


class VastClient:
    """The ``vastai.VastAI`` SDK (:attr:`sdk`, made by :meth:`open`) and the one place its failures are worded.

    ``key`` replaces the key lookup (else ``key_file``, then the environment and the vastai CLI's file, read
    when the SDK is opened); ``url`` is ``api_url``; ``timeout`` is the seconds each API request may take.
    """

    def __init__(self, key: str | None, *, timeout: float, key_file: str | None = None, url: str | None = None
                 ) -> None:
        self.key = key
        self.key_file = key_file
        self.url = url
        self.timeout = timeout
        self.sdk: Any = None

    def open(self) -> None:
        """Find the key and make the SDK client (once); the SDK is imported here, not for listing."""
        url = api_address(self.url)  # before the key is read: nothing is sent to an address from the environment
        if self.key is None:
            self.key = find_api_key(self.key_file)
        if self.sdk is None:
            try:
                from vastai import VastAI
            except ImportError:
                raise VastError("the Vast.ai SDK is not installed: pip install 'wfbench[vast]'") from None
            # always explicit: the SDK's own default is VAST_URL, read from the environment at import
            self.sdk = self.call("client setup", VastAI, api_key=self.key, server_url=url, quiet=True)
            self.sdk.client.timeout = self.timeout  # per request; VastAI() does not take it

    def scrub(self, text: str) -> str:
        if self.key and len(self.key) >= 4:
            text = text.replace(self.key, "***")
        return text

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # every SDK/HTTP failure becomes one scrubbed line
            raise VastError(f"Vast.ai {what} failed: {self.explain(exc)}") from None

    def explain(self, exc: Exception) -> str:
        """One line for an SDK failure: the HTTP status with Vast's own message and what to do, or the error."""
        response: Any = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            try:
                body = response.json()
            except Exception:  # not JSON: the status says enough
                body = None
            said = str(body.get("msg") or body.get("error") or "") if isinstance(body, dict) else ""
            text = f"HTTP {status} {getattr(response, 'reason', '') or ''}".rstrip() + (f" ({said})" if said else "")
            if status in (401, 403):
                text += f"; check the API key ({KEY_ENV})"
            elif status == 429:
                text += "; Vast.ai is rate-limiting this key, try again later"
            elif status >= 500:
                text += "; a Vast.ai server error, try again later"
        elif "Timeout" in type(exc).__name__ or isinstance(exc, TimeoutError):
            text = f"no reply within api_timeout_s={self.timeout:g} s"
        else:
            text = f"{type(exc).__name__}: {exc}"
        lines = self.scrub(text).strip().splitlines() or [type(exc).__name__]
        return lines[0][:400]

    def said(self, reply: Any) -> str:
        """What a ``success: false`` (or malformed) reply says, scrubbed, in one line."""
        if isinstance(reply, dict):
            text = str(reply.get("msg") or reply.get("error") or reply)
        else:
            text = f"unexpected reply {reply!r}"
        return (self.scrub(text).strip().splitlines() or ["no message"])[0][:300]
