"""The rented instance's own deadline: it destroys itself, whatever happens to the process that rented it.

The controller (``wfbench run``, a CI job) destroys the instance on every exit path it lives through, but a
``kill -9``, a lost runner or a power cut leaves it billing. So every rental starts, as its container's
``onstart`` command, this fixed shell text: it sleeps until the rental's deadline (``budget_min`` left when the
instance was rented, plus ``grace_s``) and then asks Vast.ai's API to destroy the instance, with the key Vast.ai
gives every instance for itself (``CONTAINER_API_KEY``, for ``CONTAINER_ID``) — never the account's key, which
does not leave this machine. It tries curl, wget, then python3 (whichever the image has), up to ten times, 30 s
apart. Its values reach it only as environment variables of the instance (:func:`onstart_env`).

What a killed controller leaves: the instance, billing until that deadline, then destroyed by itself; should
every attempt fail (no instance key, the API unreachable from the host), until the next run with the same
``label`` destroys it as a leftover, or until it is destroyed by hand (``vastai destroy instance ID -y``).
"""

from __future__ import annotations

__all__ = ["ONSTART", "onstart_env"]  # internal, not the plugin API

ONSTART = r"""(
  sleep "${WFBENCH_DESTROY_AFTER_S:?}"
  url="${WFBENCH_VAST_API:?}/api/v0/instances/${CONTAINER_ID:?}/"
  export url
  n=0
  while [ "$n" -lt 10 ]; do
    if command -v curl >/dev/null 2>&1; then
      curl -fsS -m 60 -X DELETE -H "Authorization: Bearer ${CONTAINER_API_KEY:?}" "$url" && break
    elif command -v wget >/dev/null 2>&1; then
      wget -q -O- -T 60 --method=DELETE --header="Authorization: Bearer ${CONTAINER_API_KEY:?}" "$url" && break
    elif command -v python3 >/dev/null 2>&1; then
      python3 -c 'import os, urllib.request as u; u.urlopen(u.Request(os.environ["url"], method="DELETE", headers={"Authorization": "Bearer " + os.environ["CONTAINER_API_KEY"]}), timeout=60)' && break
    fi
    n=$((n + 1))
    sleep 30
  done
) >"${TMPDIR:-/tmp}/wfbench-self-destroy.log" 2>&1 &
"""


def onstart_env(seconds_left: float, api_url: str) -> dict[str, str]:
    """The instance's environment for :data:`ONSTART`: when it destroys itself, and through which API."""
    return {"WFBENCH_DESTROY_AFTER_S": str(max(1, int(seconds_left))), "WFBENCH_VAST_API": api_url.rstrip("/")}
