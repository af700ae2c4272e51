"""The vast transport: exact GPU pinning, cost cap, and a destroy that always happens exactly once.

Only the Vast.ai SDK is faked (:class:`FakeVast`, which checks every call against the real ``VastAI``
method signature when the SDK is installed). The rented "instance" is the real OpenSSH server on
127.0.0.1 from tests/sshd.py: the fake reports its address, and the key the session attaches is appended
to that server's authorized_keys, so everything after renting runs for real.
"""

from __future__ import annotations

import inspect
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from wfbench_core.errors import WfbenchError
from wfbench_core.registry import Registry
from wfbench_core.results import Protocol, dumps
from wfbench_transports.vast import (
    OfferFilter,
    VastError,
    VastSession,
    VastTransport,
    cc_of,
    choose_offer,
    find_api_key,
)

from sshd import fake_gpu_python, gpu_result, gpu_stack_missing  # tests/sshd.py

pytest.importorskip("paramiko")

TESTS = Path(__file__).parent
PROTOCOL = Protocol(warmup_s=0.0, min_sample_ms=12.5, samples=7)
API_KEY = "vk_9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def offer(oid: int, name: str = "RTX 4090", cc: int = 890, dph: float = 0.40, **extra: Any) -> dict[str, Any]:
    base = {"id": oid, "gpu_name": name, "compute_cap": cc, "dph_total": dph, "num_gpus": 1, "reliability2": 0.99,
            "inet_down": 500.0, "cuda_max_good": 13.0, "machine_id": 50_000 + oid, "host_id": 7}
    base.update(extra)
    return base


class FakeVast:
    """The ``vastai.VastAI`` client at its edge: offers, instances and injected faults, all in memory.

    ``faults[method] = (when, exc, times)`` raises ``exc`` ``before`` or ``after`` the method did its work,
    ``times`` times (None: always). With ``log`` every call is appended to that file as a JSON line.
    """

    def __init__(self, offers: list[dict[str, Any]], sshd: Any = None, *, port: int | None = None,
                 faults: dict[str, tuple[str, BaseException, int | None]] | None = None,
                 existing: list[dict[str, Any]] | None = None, log: Path | None = None,
                 starting_polls: int = 1) -> None:
        self.offers = offers
        self.sshd = sshd
        self.port = port if port is not None else (sshd.port if sshd else 22)
        self.faults = dict(faults or {})
        self.instances: dict[int, dict[str, Any]] = {int(i["id"]): dict(i) for i in existing or []}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.destroyed: list[int] = []
        self.created: list[int] = []
        self.log = log
        self.starting_polls = starting_polls
        self._next = 9000

    def _call(self, name: str, when: str, **kwargs: Any) -> None:
        if when == "before":
            self._check_signature(name, kwargs)
            self.calls.append((name, kwargs))
            self._write({"call": name, **{k: v for k, v in kwargs.items() if k != "ssh_key"}})
        fault = self.faults.get(name)
        if fault and fault[0] == when and fault[2] != 0:
            self.faults[name] = (fault[0], fault[1], None if fault[2] is None else fault[2] - 1)
            raise fault[1]

    @staticmethod
    def _check_signature(name: str, kwargs: dict[str, Any]) -> None:
        try:
            from vastai import VastAI
        except ImportError:
            return
        inspect.signature(getattr(VastAI, name)).bind(None, **kwargs)  # the real SDK accepts this call

    def _write(self, entry: dict[str, Any]) -> None:
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write(json.dumps(entry) + "\n")

    # -- the VastAI methods the transport uses ----------------------------------------------------

    def search_offers(self, query: Any = None, order: str = "score-", limit: int | None = None) -> list:
        self._call("search_offers", "before", query=query, order=order, limit=limit)
        self._call("search_offers", "after")
        return [dict(o) for o in self.offers]

    def create_instance(self, id: int, image: str | None = None, disk: float = 10, label: str | None = None,
                        ssh: bool = False, direct: bool = False) -> dict:
        self._call("create_instance", "before", id=id, image=image, disk=disk, label=label, ssh=ssh, direct=direct)
        self._next += 1
        iid = self._next
        src = next(o for o in self.offers if o["id"] == id)
        self.instances[iid] = {"id": iid, "label": label, "actual_status": "loading", "machine_id": src["machine_id"],
                               "ssh_host": "127.0.0.1", "ssh_port": self.port, "public_ipaddr": "127.0.0.1",
                               "ports": {"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": str(self.port)}]},
                               "polls": 0}
        self.created.append(iid)
        self._write({"created": iid})
        self._call("create_instance", "after")
        return {"success": True, "new_contract": iid}

    def show_instances(self) -> list:
        self._call("show_instances", "before")
        self._call("show_instances", "after")
        return [dict(i) for i in self.instances.values()]

    def show_instance(self, id: int) -> dict | None:
        self._call("show_instance", "before", id=id)
        inst = self.instances.get(id)
        if inst is not None:
            inst["polls"] += 1
            if inst["polls"] > self.starting_polls and inst["actual_status"] == "loading":
                inst["actual_status"] = "running"
        self._call("show_instance", "after")
        return dict(inst) if inst else None

    def attach_ssh(self, instance_id: int, ssh_key: str) -> dict:
        self._call("attach_ssh", "before", instance_id=instance_id, ssh_key=ssh_key)
        if self.sshd is not None:
            with open(self.sshd.authorized_keys, "a") as fh:
                fh.write(ssh_key + "\n")
        self._call("attach_ssh", "after")
        return {"success": True}

    def destroy_instance(self, id: int) -> dict:
        self._call("destroy_instance", "before", id=id)
        self.instances.pop(id, None)
        self.destroyed.append(id)
        self._write({"destroyed": id})
        self._call("destroy_instance", "after")
        return {"success": True}

    # -- checks ---------------------------------------------------------------------------------

    def leaked(self) -> list[int]:
        """Our instances still alive at the end (must be none)."""
        return [i for i in self.created if i in self.instances]

    def destroy_count(self, iid: int) -> int:
        return self.destroyed.count(iid)


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load()


@pytest.fixture(scope="module")
def bundle(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

    if gpu_stack_missing():  # this Python plays the GPU host's interpreter (never a venv from PyPI in tests)
        pytest.skip(f"the host's Python needs wfbench's gpu extra: {gpu_stack_missing()}")
    out = tmp_path_factory.mktemp("bundle") / "bundle"
    bundle_from_ptx([registry.case("scale_i64")], out, ptx_dir_loader(TESTS / "fixtures" / "ptx"))
    return out


def session_options(sshd: Any, **extra: Any) -> dict[str, Any]:
    opts = {"user": sshd.user, "python": sys.executable, "env": "reuse", "remote_tmp": str(sshd.remote_tmp),
            "poll_s": "0.01",
            "wait_running_s": "5", "wait_ssh_s": "5", "connect_timeout": "5"}
    opts.update(extra)
    return opts


def make(fake: FakeVast, sshd: Any, registry: Registry, lines: list[str] | None = None, **extra: Any) -> VastSession:
    return VastSession(registry=registry, progress=(lines.append if lines is not None else lambda m: None), sdk=fake,
                       api_key=API_KEY, **session_options(sshd, **extra))


# -------------------------------------------------------------------------------------------------
# offer selection: exact pin, near misses, broad mode
# -------------------------------------------------------------------------------------------------

CANONICAL = OfferFilter("canonical", "RTX_4090", 890, 0.50, 0.95, 100.0, 13.0)
NEAR_MISSES = [
    offer(1, "RTX 4090 D", dph=0.20),  # a different model that shares the prefix
    offer(2, "RTX 4090", dph=0.62),  # over the ceiling
    offer(3, "RTX 4090", cc=860, dph=0.21),  # misreported architecture
    offer(4, "RTX 4090 Ti", dph=0.22),
    offer(5, "RTX 4090", dph=0.23, num_gpus=2),
    offer(6, "RTX 4090", dph=0.24, reliability2=0.80),
    offer(7, "RTX 4090", dph=0.25, inet_down=20.0),
    offer(8, "RTX 4090", dph=0.26, cuda_max_good=12.4),
    offer(9, "RTX_4090X", dph=0.18),
    offer(10, "rtx 4090", dph=0.19),
]


def test_canonical_takes_only_the_exact_model_and_architecture() -> None:
    chosen = choose_offer([*NEAR_MISSES, offer(20, "RTX 4090", dph=0.41), offer(21, "RTX 4090", dph=0.35)], CANONICAL)
    assert chosen["id"] == 21
    assert choose_offer([offer(30, "RTX_4090", dph=0.3)], CANONICAL)["id"] == 30  # Vast's underscore spelling


def test_near_misses_only_is_a_clear_error() -> None:
    with pytest.raises(VastError) as err:
        choose_offer(NEAR_MISSES, CANONICAL)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("no Vast.ai offer is exactly RTX_4090 / sm_89, at most $0.50/h")
    assert "rejected 10" in msg and "offer 1 'RTX 4090 D': model 'RTX 4090 D' is not RTX_4090" in msg
    assert "mode=broad" in msg


def test_empty_search_is_a_clear_error() -> None:
    with pytest.raises(VastError, match=r"no Vast.ai offer is exactly RTX_4090 / sm_89.*\(the search returned none\)"):
        choose_offer([], CANONICAL)


def test_broad_mode_takes_the_cheapest_capable_gpu() -> None:
    broad = OfferFilter("broad", "RTX_4090", 750, 0.50, 0.95, 100.0, 13.0)
    offers = [offer(1, "GTX 1080", cc=610, dph=0.05), offer(2, "RTX 3060", cc=860, dph=0.09),
              offer(3, "RTX 4090 D", dph=0.2)]
    assert choose_offer(offers, broad)["id"] == 2
    assert "compute_cap>=750" in broad.query() and "gpu_name" not in broad.query()


def test_query_is_what_the_real_sdk_parses() -> None:
    pytest.importorskip("vastai")
    from vastai.api.query import offers_alias, offers_fields, offers_mult, parse_query

    parsed = parse_query(CANONICAL.query(), {}, offers_fields, offers_alias, offers_mult)
    assert parsed["gpu_name"] == {"eq": "RTX 4090"}
    assert parsed["compute_cap"] == {"eq": "890"}
    assert parsed["num_gpus"] == {"eq": "1"} and parsed["dph_total"] == {"lte": "0.5"}


def test_arch_spellings() -> None:
    assert cc_of("sm_89") == cc_of("8.9") == 890
    assert cc_of("sm_90") == 900 and cc_of("sm_100") == 1000 and cc_of("12.0") == 1200
    with pytest.raises(VastError, match="not a compute capability"):
        cc_of("ampere")


# -------------------------------------------------------------------------------------------------
# before renting: key, cost cap, orphans
# -------------------------------------------------------------------------------------------------


def test_api_key_from_environment_or_vast_config(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    for var in ("VAST_API_KEY", "VASTAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with pytest.raises(VastError, match="no Vast.ai API key: set VAST_API_KEY"):
        find_api_key()
    (tmp_path / ".vast_api_key").write_text("legacy-key\n")
    assert find_api_key() == "legacy-key"
    (tmp_path / "config" / "vastai").mkdir(parents=True)
    (tmp_path / "config" / "vastai" / "vast_api_key").write_text("xdg-key\n")
    assert find_api_key() == "xdg-key"
    monkeypatch.setenv("VASTAI_API_KEY", "env-key-2")
    assert find_api_key() == "env-key-2"
    monkeypatch.setenv("VAST_API_KEY", "env-key-1")
    assert find_api_key() == "env-key-1"


def test_cost_cap_refuses_before_renting(sshd, registry) -> None:  # type: ignore[no-untyped-def]
    fake = FakeVast([offer(1, dph=0.45)], sshd)
    lines: list[str] = []
    s = make(fake, sshd, registry, lines, budget_min="120", max_cost="0.50")
    with pytest.raises(VastError, match=r"cost estimate \$0.90 \(\$0.450/h for 120 min\) is over max_cost=\$0.50"):
        s.start()
    assert "create_instance" not in [c for c, _ in fake.calls]
    assert any("budget 120 min -> at most $0.90" in ln for ln in lines)  # the estimate is shown first


def test_orphans_with_our_label_are_destroyed_first(sshd, registry, bundle) -> None:  # type: ignore[no-untyped-def]
    existing = [{"id": 11, "label": "wfbench", "actual_status": "running"},
                {"id": 12, "label": "someone-else", "actual_status": "running"}]
    fake = FakeVast([], sshd, existing=existing)
    with pytest.raises(VastError, match="the search returned none"):
        make(fake, sshd, registry).start()
    assert fake.destroyed == [11] and 12 in fake.instances
    names = [c for c, _ in fake.calls]
    assert names.index("destroy_instance") < names.index("search_offers")


def test_sdk_errors_never_show_the_api_key(sshd, registry) -> None:  # type: ignore[no-untyped-def]
    boom = RuntimeError(f"401 Client Error: Unauthorized for url: https://console.vast.ai/api/v0/bundles/?api_key={API_KEY}")
    fake = FakeVast([offer(1)], sshd, faults={"search_offers": ("before", boom, None)})
    with pytest.raises(VastError) as err:
        make(fake, sshd, registry).start()
    assert API_KEY not in str(err.value) and "api_key=***" in str(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__


# -------------------------------------------------------------------------------------------------
# the whole rental against the loopback sshd
# -------------------------------------------------------------------------------------------------


def test_rental_runs_the_bundle_and_records_the_instance(sshd, registry, bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL))
    py = fake_gpu_python(tmp_path / "host", f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    fake = FakeVast([offer(5, dph=0.30)], sshd)
    lines: list[str] = []
    t = VastTransport(registry=registry, progress=lines.append, sdk=fake, api_key=API_KEY,
                      **session_options(sshd, python=str(py)))
    assert t.gpu_arch() == "sm_89"  # known before renting: the bundle is built for the pinned GPU
    try:
        result = t.execute(bundle, protocol=PROTOCOL, mode="paired", case_ids=["scale_i64"], progress=lines.append)
    finally:
        t.close()
    iid = fake.created[0]
    extra = result.environment.extra
    assert extra["transport"] == "vast" and extra["vast_instance_id"] == str(iid)
    assert extra["vast_offer_id"] == "5" and extra["vast_machine_id"] == "50005"
    assert extra["vast_dph_total"] == "0.3000" and extra["ssh_host_key_sha256"].startswith("SHA256:")
    assert result.environment.gpu_uuid == "GPU-1234"
    create = dict(fake.calls)["create_instance"]
    assert create["label"] == "wfbench" and create["image"] == "nvidia/cuda:12.4.0-devel-ubuntu22.04"
    assert fake.destroy_count(iid) == 1 and fake.leaked() == []
    assert sshd.leftovers() == []
    t.close()  # closing again destroys nothing more
    assert fake.destroy_count(iid) == 1
    text = dumps(result) + "\n".join(lines)
    assert API_KEY not in text


def test_a_result_from_another_gpu_model_is_discarded(sshd, registry, bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, gpu_name="NVIDIA GeForce RTX 4090 D"))
    py = fake_gpu_python(tmp_path / "host", f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    fake = FakeVast([offer(5)], sshd)
    with pytest.raises(VastError, match=r"ran on NVIDIA GeForce RTX 4090 D .* not the pinned RTX_4090 / sm_89; "
                                        r"the result is not canonical"):
        with make(fake, sshd, registry, python=str(py)) as s:
            s.execute(bundle, protocol=PROTOCOL, mode="paired", case_ids=["scale_i64"])
    assert fake.destroy_count(fake.created[0]) == 1 and fake.leaked() == []


FAULTS = {
    # step: (fault at the SDK edge, or None for faults on the host, expected message)
    "search": ({"search_offers": ("before", RuntimeError("HTTP 502"), None)}, "offer search failed"),
    "create (refused)": ({"create_instance": ("before", RuntimeError("HTTP 400"), None)}, "renting failed"),
    "create (reply lost)": ({"create_instance": ("after", TimeoutError("read timed out"), None)}, "renting failed"),
    "wait (status errors)": ({"show_instance": ("before", RuntimeError("HTTP 500"), None)}, "instance status failed"),
    "attach key": ({"attach_ssh": ("before", RuntimeError("HTTP 404"), None)}, "attaching the SSH key failed"),
    "attach key, destroy flaky": ({"attach_ssh": ("before", RuntimeError("HTTP 404"), None),
                                   "destroy_instance": ("before", RuntimeError("HTTP 503"), 2)},
                                  "attaching the SSH key failed"),
    "ctrl-c at search": ({"search_offers": ("before", KeyboardInterrupt(), None)}, None),
    "ctrl-c at create": ({"create_instance": ("after", KeyboardInterrupt(), None)}, None),
    "ctrl-c at wait": ({"show_instance": ("after", KeyboardInterrupt(), None)}, None),
}


@pytest.mark.parametrize("step", list(FAULTS))
def test_sdk_fault_at_every_step_leaks_nothing(step, sshd, registry) -> None:  # type: ignore[no-untyped-def]
    faults, message = FAULTS[step]
    fake = FakeVast([offer(5)], sshd, faults=dict(faults))
    s = make(fake, sshd, registry)
    expected = KeyboardInterrupt if message is None else VastError
    with pytest.raises(expected) as err:
        s.start()
    if message:
        assert message in str(err.value) and "\n" not in str(err.value)
    for iid in fake.created:
        assert fake.destroy_count(iid) == 1, f"{step}: instance {iid} destroyed {fake.destroy_count(iid)} times"
    assert fake.leaked() == []
    s.stop()
    s.destroy()
    assert all(fake.destroy_count(i) == 1 for i in fake.created)  # never twice
    if step in ("search", "create (refused)", "ctrl-c at search"):
        assert fake.created == []
    else:
        assert len(fake.created) == 1


def test_wait_timeout_and_ssh_unreachable(sshd, registry) -> None:  # type: ignore[no-untyped-def]
    import sshd as helper

    fake = FakeVast([offer(5)], sshd, starting_polls=10**9)
    with pytest.raises(VastError, match=r"instance 9001 was not running after 0.2 s \(status loading\)"):
        make(fake, sshd, registry, wait_running_s="0.2").start()
    assert fake.destroy_count(9001) == 1 and fake.leaked() == []

    fake = FakeVast([offer(5)], sshd, port=helper.free_port())
    with pytest.raises(VastError, match=r"sshd of instance 9001 at 127.0.0.1:\d+ did not accept the key within 0.5 s: "
                                        r".*connection refused"):
        make(fake, sshd, registry, wait_ssh_s="0.5").start()
    assert fake.destroy_count(9001) == 1 and fake.leaked() == []


@pytest.mark.parametrize("fault", ["remote run", "fetch", "ctrl-c during the run"])
def test_host_fault_during_the_run_leaks_nothing(fault, sshd, registry, bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL))
    body = {
        "remote run": 'echo "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS" >&2; exit 1',
        "fetch": f'head -c 100 {shlex.quote(str(result_file))} > "$out"; exit 0',
        "ctrl-c during the run": 'echo "timing" >&2; sleep 300',
    }[fault]
    py = fake_gpu_python(tmp_path / "host", body)
    fake = FakeVast([offer(5)], sshd)

    def progress(line: str) -> None:
        if line.endswith("] timing"):
            raise KeyboardInterrupt

    t = VastTransport(registry=registry, progress=progress, sdk=fake, api_key=API_KEY,
                      **session_options(sshd, python=str(py)))
    expected = KeyboardInterrupt if fault.startswith("ctrl-c") else WfbenchError
    with pytest.raises(expected) as err:
        try:
            t.execute(bundle, protocol=PROTOCOL, mode="paired", case_ids=["scale_i64"], progress=progress)
        finally:
            t.close()
    if fault == "remote run":
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in str(err.value)
    if fault == "fetch":
        assert "not a wfbench result (truncated JSON" in str(err.value)
    assert fake.destroy_count(fake.created[0]) == 1 and fake.leaked() == []
    assert sshd.leftovers() == []


def test_destroy_that_never_succeeds_is_loud(sshd, registry, capsys) -> None:  # type: ignore[no-untyped-def]
    fake = FakeVast([offer(5)], sshd, port=0, faults={
        "destroy_instance": ("before", RuntimeError(f"HTTP 500 key={API_KEY}"), None),
        "show_instance": ("before", RuntimeError("HTTP 500"), None),
    })
    with pytest.raises(VastError, match="instance status failed"):
        make(fake, sshd, registry, destroy_retries="3").start()
    err = capsys.readouterr().err
    assert "instance 9001 could NOT be destroyed" in err
    assert "vastai destroy instance 9001" in err
    assert API_KEY not in err
    assert [c for c, _ in fake.calls].count("destroy_instance") == 3


# -------------------------------------------------------------------------------------------------
# signals and interpreter exit, in a real subprocess
# -------------------------------------------------------------------------------------------------

CHILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import test_vast_transport as T
from wfbench_core.registry import Registry
from wfbench_transports.vast import VastSession
cfg = json.loads(sys.argv[1])
sshd = type("S", (), {{"port": cfg["port"], "authorized_keys": cfg["authorized_keys"]}})()
fake = T.FakeVast([T.offer(5)], sshd, log=Path(cfg["log"]))
s = VastSession(registry=Registry.load(), sdk=fake, api_key=T.API_KEY, **cfg["options"])
if cfg["how"] == "exit":
    s.start()
    print("rented", flush=True)
    sys.exit(0)  # no stop(): the exit guard must destroy
with s:
    s.execute(Path(cfg["bundle"]), protocol=T.PROTOCOL, mode="paired", case_ids=["scale_i64"])
"""


def _child(how: str, sshd, bundle, tmp_path, python: str):  # type: ignore[no-untyped-def]
    log = tmp_path / f"{how}.log"
    cfg = {"how": how, "port": sshd.port, "authorized_keys": str(sshd.authorized_keys), "log": str(log),
           "bundle": str(bundle), "options": session_options(sshd, python=python)}
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(tests=str(TESTS)))
    proc = subprocess.Popen([sys.executable, str(script), json.dumps(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return proc, log


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def test_sigterm_during_the_run_destroys_once(sshd, bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    started = tmp_path / "started"
    py = fake_gpu_python(tmp_path / "host", f'touch {shlex.quote(str(started))}; sleep 300')
    proc, log = _child("run", sshd, bundle, tmp_path, str(py))
    deadline = time.monotonic() + 60
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), proc.communicate(timeout=30)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    events = _events(log)
    created = [e["created"] for e in events if "created" in e]
    destroyed = [e["destroyed"] for e in events if "destroyed" in e]
    assert len(created) == 1 and destroyed == created, (events, err)
    assert "got SIGTERM; destroying instance" in err
    assert "Traceback" not in err
    assert sshd.leftovers() == []


def test_interpreter_exit_destroys_once(sshd, bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc, log = _child("exit", sshd, bundle, tmp_path, sys.executable)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "rented" in out, err
    events = _events(log)
    created = [e["created"] for e in events if "created" in e]
    assert len(created) == 1 and [e["destroyed"] for e in events if "destroyed" in e] == created, (events, err)
    assert "interpreter exiting; destroying instance" in err


def test_sigterm_destroys_even_when_the_caller_catches_system_exit(sshd, registry, bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A pytest session holding the rental turns SystemExit into one failed test: the instance must be gone."""
    py = fake_gpu_python(tmp_path / "host", 'echo "timing" >&2; sleep 300')
    fake = FakeVast([offer(5)], sshd)

    def progress(line: str) -> None:
        if line.endswith("] timing"):
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    s = VastSession(registry=registry, progress=progress, sdk=fake, api_key=API_KEY,
                    **session_options(sshd, python=str(py)))
    s.start()
    with pytest.raises(SystemExit) as err:
        s.execute(bundle, protocol=PROTOCOL, mode="paired", case_ids=["scale_i64"], progress=progress)
    assert err.value.code == 128 + signal.SIGTERM
    iid = fake.created[0]
    assert fake.destroy_count(iid) == 1 and fake.leaked() == []  # before anyone calls stop()
    assert sshd.leftovers() == []
    with pytest.raises(VastError, match="the Vast.ai rental is not available: ended by SIGTERM"):
        s.execute(bundle, protocol=PROTOCOL, mode="paired", case_ids=["scale_i64"])
    s.stop()
    assert fake.destroy_count(iid) == 1
    assert signal.getsignal(signal.SIGTERM) == before  # the session's handler is gone again


def test_missing_key_fails_before_anything_is_built(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("vastai")
    for var in ("VAST_API_KEY", "VASTAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with pytest.raises(VastError, match="no Vast.ai API key"):
        VastTransport(registry=None)
    with pytest.raises(WfbenchError, match=r"vast transport: option max_dph='cheap' is not a number"):
        VastTransport(registry=None, sdk=object(), max_dph="cheap")
    with pytest.raises(WfbenchError, match=r"option mode='fast' is not one of: canonical, broad"):
        VastTransport(registry=None, sdk=object(), mode="fast")
