"""A stand-in for the Vast.ai HTTP API on 127.0.0.1, for the real ``vastai`` SDK (``VAST_URL`` points it here).

It serves the requests the vast transport makes through the SDK (vastai >= 1.5.6), in the SDK's own shapes:

=======  ==========================  ====================================================================
POST     /api/v0/bundles/            search offers: filters, order, limit; prices with allocated_storage
PUT      /api/v0/asks/OFFER/         rent: ``{"success": true, "new_contract": ID}``
GET      /api/v1/instances/          the account's instances, paged (``show_instances``)
GET      /api/v0/instances/ID/       one instance: ``{"instances": row}``, ``null`` once it is gone
POST     /api/v0/instances/ID/ssh/   attach a public key: appended to the local sshd's authorized_keys
DELETE   /api/v0/instances/ID/       destroy
=======  ==========================  ====================================================================

Every request needs ``Authorization: Bearer KEY``; anything else gets HTTP 401. A rented instance is the real
OpenSSH server of tests/sshd.py: its rows point at 127.0.0.1 and that server's port.

Faults (:meth:`VastApi.fault`), per route (``search``, ``create``, ``list``, ``show``, ``attach``,
``destroy``), each for the next ``times`` requests of that route:

- an HTTP status (401, 429, 500, 502, 503 …): that status and ``{"success": false, "msg": …}``, nothing done;
- ``"refuse"``: HTTP 200 with ``{"success": false, "msg": …}``, nothing done;
- ``"lost"``: the work is done, then the connection is closed without a reply;
- ``"slow"``: the work is done, the reply comes after ``delay`` seconds (after the client gave up);
- ``"sigint"``: the work is done, then this process gets SIGINT (the user's Ctrl-C while the SDK waits).

A rented instance's ``onstart`` command runs here as its container would run it (``sh -c``, its own process
group, stopped with the server), with the instance's ``env`` and Vast's ``CONTAINER_ID`` and
``CONTAINER_API_KEY``: that instance key (:meth:`VastApi.instance_key`) may destroy its own instance and
nothing else; :attr:`destroyed_by` says which key destroyed an instance.

An instance rented from an offer named in ``fail_start`` never runs: its first status is ``exited`` with that
offer's message (a host whose container cannot start). :attr:`peak` is the most instances rented here that were
alive at once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from loopback import LoopbackApi

#: hours in the month that Vast's storage_cost ($/GB/month) is spread over in the stand-in's prices
HOURS_PER_MONTH = 30 * 24

_ROUTES = (
    ("POST", r"/api/v0/bundles/", "search"),
    ("PUT", r"/api/v0/asks/(\d+)/", "create"),
    ("GET", r"/api/v1/instances/", "list"),
    ("GET", r"/api/v0/instances/(\d+)/", "show"),
    ("POST", r"/api/v0/instances/(\d+)/ssh/", "attach"),
    ("DELETE", r"/api/v0/instances/(\d+)/", "destroy"),
)


def offer(oid: int, name: str = "RTX 4090", cc: int = 890, dph: float = 0.40, **extra: Any) -> dict[str, Any]:
    """An offer as the search returns it; ``dph`` is the GPU's price (``dph_base``) before storage."""
    base = {"id": oid, "ask_contract_id": oid, "gpu_name": name, "compute_cap": cc, "dph_base": dph,
            "storage_cost": 0.10, "num_gpus": 1, "gpu_ram": 24564.0, "disk_space": 200.0, "reliability": 0.99, "reliability2": 0.99,
            "inet_down": 500.0, "inet_down_cost": 0.0, "inet_up_cost": 0.0, "cuda_max_good": 13.0, "machine_id": 50_000 + oid, "host_id": 7,
            "verified": True, "external": False, "rentable": True, "rented": False, "available": 1}
    base.update(extra)
    return base


class VastApi(LoopbackApi):
    """The stand-in server; start it with :meth:`start`, point ``VAST_URL`` at :attr:`url`, :meth:`stop` it."""

    METHODS = ("GET", "PUT", "POST", "DELETE")

    def __init__(self, offers: list[dict[str, Any]], api_key: str, *, sshd: Any = None, port: int | None = None,
                 existing: list[dict[str, Any]] | None = None, ready_after: int | None = 1,
                 fail_start: dict[int, str] | None = None) -> None:
        self.offers = {int(o["id"]): dict(o) for o in offers}
        self.api_key = api_key
        self.sshd = sshd
        self.ssh_port = port if port is not None else (sshd.port if sshd is not None else 22)
        #: show requests before a new instance reports "running" (None: never)
        self.ready_after = ready_after
        self.fail_start = dict(fail_start or {})
        self.peak = 0
        self.instances: dict[int, dict[str, Any]] = {}
        for row in existing or []:
            self.instances[int(row["id"])] = self._row(int(row["id"]), row.get("label"), None, status="running")
        self.created: list[int] = []
        #: instance id -> how many destroy requests removed it (exactly once is right)
        self.destroyed: dict[int, int] = {}
        #: instance id -> "account" or "instance": whose key destroyed it
        self.destroyed_by: dict[int, str] = {}
        #: the containers' onstart commands, running
        self.onstarts: list[subprocess.Popen] = []  # type: ignore[type-arg]
        #: every request that reached the server: (route, path id or None, fault applied or "")
        self.requests: list[tuple[str, int | None, str]] = []
        #: bodies of the rent and search requests, in order
        self.bodies: dict[str, list[dict[str, Any]]] = {"search": [], "create": []}
        self._faults: dict[str, list[list[Any]]] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._next = 9000

    # -- control ------------------------------------------------------------------------------------

    def stop(self) -> None:
        self._closing.set()
        for proc in self.onstarts:  # the "containers" end with the server: their whole process groups
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        super().stop()

    @staticmethod
    def instance_key(iid: int) -> str:
        """The key Vast.ai gives instance ``iid`` for itself (``CONTAINER_API_KEY``)."""
        return f"instance-key-{iid}"

    def fault(self, route: str, kind: int | str, times: int | None = 1, delay: float = 5.0) -> None:
        """Make the next ``times`` requests of ``route`` fail as ``kind`` (None: all of them)."""
        assert route in {r for _, _, r in _ROUTES}, route
        self._faults.setdefault(route, []).append([kind, times, delay])

    def leaked(self) -> list[int]:
        """Instances rented here and still alive."""
        return [i for i in self.created if i in self.instances]

    def destroy_requests(self, iid: int) -> int:
        return sum(1 for route, rid, _ in self.requests if route == "destroy" and rid == iid)

    # -- serving -------------------------------------------------------------------------------------

    def _take_fault(self, route: str) -> tuple[Any, float] | None:
        with self._lock:
            for entry in self._faults.get(route, []):
                kind, times, delay = entry
                if times is None or times > 0:
                    if times is not None:
                        entry[1] = times - 1
                    return kind, delay
        return None

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return self._reply(h, 400, {"success": False, "msg": "body is not JSON"})
        for method, pattern, route in _ROUTES:
            m = re.fullmatch(pattern, parts.path)
            if method == h.command and m:
                break
        else:
            return self._reply(h, 404, {"success": False, "msg": f"no route {h.command} {parts.path}"})
        rid = int(m.group(1)) if m.groups() else None
        fault = self._take_fault(route)
        with self._lock:
            self.requests.append((route, rid, "" if fault is None else str(fault[0])))
        own = route == "destroy" and h.headers.get("Authorization") == f"Bearer {self.instance_key(rid or 0)}"
        if h.headers.get("Authorization") != f"Bearer {self.api_key}" and not own:
            return self._reply(h, 401, {"success": False, "error": "invalid_api_key",
                                        "msg": "please log in or sign up"})
        if fault is not None and isinstance(fault[0], int):
            status = fault[0]
            headers = {"Retry-After": "0"} if status == 429 else {}
            return self._reply(h, status, {"success": False, "error": f"status_{status}",
                                           "msg": f"injected HTTP {status}"}, headers)
        if fault is not None and fault[0] == "refuse":
            return self._reply(h, 200, {"success": False, "error": "refused", "msg": f"injected refusal of {route}"})
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        status, payload = getattr(self, f"_{route}")(rid, body, query)
        if route == "destroy" and status == 200:
            self.destroyed_by[int(rid or 0)] = "instance" if own else "account"
        if fault is None:
            return self._reply(h, status, payload)
        kind, delay = fault
        if kind == "lost":
            h.close_connection = True  # the work is done; the reply never comes
            return None
        if kind == "sigint":
            os.kill(os.getpid(), signal.SIGINT)
        self._closing.wait(delay)  # "slow" and "sigint": the client has given up by now
        return self._reply(h, status, payload)

    # -- the routes ------------------------------------------------------------------------------------

    def _search(self, rid: Any, q: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        self.bodies["search"].append(q)
        storage = float(q.get("allocated_storage", 5.0))
        rows = []
        for o in self.offers.values():
            row = dict(o)
            row["dph_total"] = round(o["dph_base"] + o["storage_cost"] * storage / HOURS_PER_MONTH, 6)
            row["rented"] = o["available"] <= 0
            if all(_matches(row.get(f), cond) for f, cond in q.items()
                   if f not in ("order", "type", "limit", "allocated_storage") and isinstance(cond, dict)):
                rows.append(row)
        for field, direction in reversed(q.get("order") or []):
            rows.sort(key=lambda r: (r.get(field) is None, r.get(field)), reverse=direction == "desc")
        return 200, {"offers": rows[: int(q.get("limit") or len(rows) or 1)]}

    def _create(self, oid: int, body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        self.bodies["create"].append(body)
        with self._lock:
            o = self.offers.get(oid)
            if o is None or o["available"] <= 0:
                return 400, {"success": False, "error": "no_such_ask", "msg": f"offer {oid} is no longer available"}
            o["available"] -= 1
            self._next += 1
            iid = self._next
            self.instances[iid] = self._row(iid, body.get("label"), o)
            if oid in self.fail_start:
                self.instances[iid].update(actual_status="exited", intended_status="running",
                                           status_msg=self.fail_start[oid])
            self.created.append(iid)
            self.peak = max(self.peak, len(self.leaked()))
        if body.get("onstart"):  # the container starts: its onstart runs with the instance's environment
            env = {"PATH": os.environ["PATH"], "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
                   **{str(k): str(v) for k, v in (body.get("env") or {}).items()},
                   "CONTAINER_ID": str(iid), "CONTAINER_API_KEY": self.instance_key(iid)}
            self.onstarts.append(subprocess.Popen(["sh", "-c", str(body["onstart"])], env=env, start_new_session=True,
                                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL))
        return 200, {"success": True, "new_contract": iid}

    def _row(self, iid: int, label: str | None, o: dict[str, Any] | None, status: str = "loading") -> dict[str, Any]:
        o = o or {}
        return {"id": iid, "label": label, "actual_status": status, "intended_status": "running",
                "cur_state": "running", "status_msg": "", "start_date": time.time(), "extra_env": [],
                "machine_id": o.get("machine_id"), "host_id": o.get("host_id"), "gpu_name": o.get("gpu_name"),
                "ssh_host": "127.0.0.1", "ssh_port": self.ssh_port, "public_ipaddr": "127.0.0.1",
                "ports": {"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": str(self.ssh_port)}]}, "polls": 0}

    def _list(self, rid: Any, body: Any, query: dict[str, str]) -> tuple[int, Any]:
        limit = int(json.loads(query.get("limit", "25")))
        start = int(json.loads(query["after_token"])) if "after_token" in query else 0
        with self._lock:
            rows = [dict(r) for _, r in sorted(self.instances.items())]
        page = rows[start:start + limit]
        more = start + limit < len(rows)
        return 200, {"instances": page, "next_token": str(start + limit) if more else None,
                     "total_instances": len(rows)}

    def _show(self, iid: int, body: Any, query: dict[str, str]) -> tuple[int, Any]:
        with self._lock:
            row = self.instances.get(iid)
            if row is None:
                return 200, {"instances": None}
            row["polls"] += 1
            if self.ready_after is not None and row["polls"] > self.ready_after and row["actual_status"] == "loading":
                row["actual_status"] = "running"
            return 200, {"instances": dict(row)}

    def _attach(self, iid: int, body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        if iid not in self.instances:
            return 404, {"success": False, "error": "no_such_instance", "msg": f"no instance {iid}"}
        if self.sshd is not None:
            with open(self.sshd.authorized_keys, "a") as fh:
                fh.write(str(body["ssh_key"]).strip() + "\n")
        return 200, {"success": True, "msg": "ssh key attached"}

    def _destroy(self, iid: int, body: Any, query: dict[str, str]) -> tuple[int, Any]:
        with self._lock:
            if self.instances.pop(iid, None) is None:
                return 404, {"success": False, "error": "no_such_instance", "msg": f"no instance {iid}"}
            self.destroyed[iid] = self.destroyed.get(iid, 0) + 1
        return 200, {"success": True}


def _matches(value: Any, cond: dict[str, Any]) -> bool:
    """One field's condition of a search query, as the SDK's ``parse_query`` writes it."""
    for op, want in cond.items():
        if value is None:
            return False
        if isinstance(value, bool) or isinstance(want, bool):
            got, exp = bool(value), (want if isinstance(want, bool) else str(want).lower() == "true")
        elif isinstance(value, (int, float)):
            got = float(value)
            exp = [float(w) for w in want] if isinstance(want, list) else float(want)
        else:
            got, exp = str(value), ([str(w) for w in want] if isinstance(want, list) else str(want))
        ok = {"eq": lambda: got == exp, "neq": lambda: got != exp, "gt": lambda: got > exp,
              "gte": lambda: got >= exp, "lt": lambda: got < exp, "lte": lambda: got <= exp,
              "in": lambda: got in exp, "notin": lambda: got not in exp}[op]()
        if not ok:
            return False
    return True
