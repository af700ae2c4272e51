"""One Vast.ai rental, start to end: :class:`VastSession`.

Destroy leftovers carrying our label -> search -> pick the offer -> show the cost estimate (``$/h x budget``)
and refuse above ``max_cost`` -> rent (labelled) -> attach a fresh SSH key -> wait until running -> wait until
sshd accepts -> hand the host to the ``ssh`` transport. The instance is destroyed exactly once — on success,
on any exception, on Ctrl-C, on SIGTERM/SIGHUP and at interpreter exit — with retries; if that finally fails
the instance id is printed loudly with the command that kills it.
"""

from __future__ import annotations

import atexit
import io
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfbench_core.host.options import parse_options
from wfbench_transports import vast_selfstop
from wfbench_transports.vast_client import VastClient
from wfbench_transports.vast_config import VAST_OPTIONS, OfferFilter, VastError, arch_of, choose_offer

if TYPE_CHECKING:  # the schema and the request load when a run starts, not for listing
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import RunResult

__all__ = ["BOOTSTRAP", "Progress", "VastSession", "destroy_command", "ssh_endpoint"]  # internal, not the plugin API

Progress = Callable[[str], None]

#: Fixed shell text run once on a fresh instance: the CUDA images ship without Python.
BOOTSTRAP = (
    "command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || "
    "(export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && "
    "apt-get install -y -qq --no-install-recommends python3 python3-venv python3-pip >/dev/null)"
)


def ssh_endpoint(inst: dict[str, Any], via: str) -> tuple[str, int] | None:
    """``(host, port)`` of the instance's sshd: direct (public IP, mapped port 22) or Vast's proxy."""
    direct = None
    ports = inst.get("ports") or {}
    mapped = ports.get("22/tcp") if isinstance(ports, dict) else None
    if inst.get("public_ipaddr") and isinstance(mapped, list) and mapped and mapped[0].get("HostPort"):
        direct = (str(inst["public_ipaddr"]).strip(), int(mapped[0]["HostPort"]))
    proxy = (str(inst["ssh_host"]), int(inst["ssh_port"])) if inst.get("ssh_host") and inst.get("ssh_port") else None
    if via == "direct":
        return direct
    if via == "proxy":
        return proxy
    return direct or proxy


def destroy_command(iid: int) -> str:
    """The vastai CLI command that destroys an instance unattended (without ``-y`` it asks and aborts)."""
    return f"vastai destroy instance {iid} -y"


def _new_key() -> tuple[Any, str]:
    """A fresh ed25519 key for one rental: (paramiko key, public line)."""
    from wfbench_transports.ssh_host import paramiko_module

    paramiko = paramiko_module()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption()).decode()
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return paramiko.Ed25519Key(file_obj=io.StringIO(pem)), pub.decode() + " wfbench-rental"


class VastSession:
    """One Vast.ai rental, as a context manager; :attr:`transport` is an ``ssh`` transport to it.

    ``with VastSession(registry=reg, progress=print, gpu_name="RTX_4090") as s: s.execute(bundle, ...)``.
    ``api_key`` replaces the key lookup.
    """

    def __init__(self, *, registry: Any = None, cuda_compiler: str = "auto", progress: Progress | None = None,
                 api_key: str | None = None, **options: Any) -> None:
        self.cfg = parse_options("vast", VAST_OPTIONS, options)
        self.filter = OfferFilter.from_options(self.cfg)
        self.registry = registry
        self.cuda_compiler = cuda_compiler
        self.progress: Progress = progress or (lambda msg: print(msg, file=sys.stderr))
        self.api = VastClient(api_key, timeout=self.cfg["api_timeout_s"], key_file=self.cfg["api_key_file"],
                              url=self.cfg["api_url"])  # the SDK, opened at start (the key is read then)
        self.offer: dict[str, Any] | None = None
        self.instance_id: int | None = None
        self.transport: Any = None
        self.started = False
        self._rented_at = 0.0
        self._deadline = 0.0
        self._lock = threading.RLock()
        self._destroying = False
        self._gone: set[int] = set()  # instances whose destroy was attempted (each exactly once)
        self._failure = ""  # why the session cannot be used (after a failed start or a signal)
        self._old_handlers: dict[int, Any] = {}

    # -- public -----------------------------------------------------------------------------------

    def target_arch(self) -> str:
        """What to build for: the pinned arch, or the broad minimum (PTX runs on newer GPUs)."""
        return arch_of(self.filter.cc)

    def __enter__(self) -> VastSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Rent and connect; on any failure (or signal) the instance is destroyed before this returns."""
        if self.started:
            return
        self.started = True
        self._deadline = time.monotonic() + self.cfg["budget_min"] * 60
        self._install_guards()
        try:
            self.api.open()
            self._destroy_orphans()
            offer = self._search()
            self._check_cost(offer)
            self._create(offer)
            inst = self._wait_running()
            self._connect(inst)
        except BaseException as exc:
            self._failure = self._failure or str(exc) or type(exc).__name__
            self.stop()
            raise

    def execute(self, bundle: Path, request: ExecuteRequest, *, progress: Progress | None = None,
                out: Path | None = None) -> RunResult:
        """Run a bundle on the rented GPU; in canonical mode the GPU the executor saw must be the pinned one.

        When the run breaks off, the cases it finished are left in ``out`` (marked incomplete).
        """
        if self._failure:
            raise VastError(f"the Vast.ai rental is not available: {self._failure}")
        if self.transport is None:
            raise VastError("the Vast.ai session is not started (use it as a context manager)")
        from wfbench_transports.ssh_host import RemoteTimeout

        self._left("the run")  # the ssh transport stops every setup and run command at the same deadline
        try:
            result: RunResult = self.transport.execute(bundle, request, progress=progress, out=out)
        except RemoteTimeout:
            if self._deadline - time.monotonic() <= 1.0:
                raise VastError(f"the time budget of {self.cfg['budget_min']:g} min ran out during the run (it was "
                                f"stopped); raise budget_min") from None
            raise
        self._check_gpu(result)
        return result

    def stop(self) -> None:
        """Close SSH, destroy the instance (once), remove the signal and exit guards."""
        try:
            if self.transport is not None:
                try:
                    self.transport.close()
                except Exception:  # never let SSH trouble skip the destroy
                    pass
        finally:
            self.destroy()
            self._remove_guards()

    def facts(self) -> dict[str, str]:
        o = self.offer or {}
        return {
            "transport": "vast", "vast_mode": self.cfg["mode"], "vast_instance_id": str(self.instance_id or ""),
            "vast_offer_id": str(o.get("id", "")), "vast_machine_id": str(o.get("machine_id", "")),
            "vast_host_id": str(o.get("host_id", "")), "vast_gpu_name": str(o.get("gpu_name", "")),
            "vast_compute_cap": str(o.get("compute_cap", "")), "vast_dph_total": f"{float(o.get('dph_total', 0)):.4f}",
            "vast_cuda_max_good": str(o.get("cuda_max_good", "")), "vast_image": self.cfg["image"],
            "vast_label": self.cfg["label"],
        }

    def _left(self, what: str) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise VastError(f"the time budget of {self.cfg['budget_min']:g} min ran out before {what}; "
                            f"raise budget_min")
        return left

    # -- steps ------------------------------------------------------------------------------------

    def _ours(self) -> list[dict[str, Any]]:
        found = self.api.call("listing instances", self.api.sdk.show_instances)
        label = self.cfg["label"]
        rows = found if isinstance(found, list) else []
        return [i for i in rows if isinstance(i, dict) and i.get("label") == label]

    def _destroy_orphans(self) -> None:
        for inst in self._ours():
            iid = int(inst["id"])
            self.progress(f"vast: destroying leftover instance {iid} (label {self.cfg['label']!r})")
            self._destroy_id(iid, "leftover")

    def _search(self) -> dict[str, Any]:
        query = self.filter.query()
        self.progress(f"vast: searching offers: {self.filter.describe()}")
        offers = self.api.call("offer search", self.api.sdk.search_offers, query=query, order="dph_total", limit=64,
                               storage=self.cfg["disk_gb"])  # priced with the disk the rental takes
        return choose_offer(offers, self.filter)

    def _check_cost(self, offer: dict[str, Any]) -> None:
        dph = float(offer["dph_total"])
        budget = self.cfg["budget_min"]
        estimate, network = self.filter.estimate(offer)
        self.progress(
            f"vast: offer {offer.get('id')}: {offer.get('gpu_name')} {arch_of(int(offer['compute_cap']))}, machine "
            f"{offer.get('machine_id')}, ${dph:.3f}/h; budget {budget:g} min and network ${network:.2f} -> at most "
            f"${estimate:.2f} (max_cost ${self.cfg['max_cost']:.2f})"
        )
        if estimate > self.cfg["max_cost"]:
            raise VastError(f"the cost estimate ${estimate:.2f} (${dph:.3f}/h for {budget:g} min, network "
                            f"${network:.2f} for {self.cfg['download_gb']:g} GB down and {self.cfg['upload_gb']:g} GB "
                            f"up) is over max_cost=${self.cfg['max_cost']:.2f}; lower budget_min or raise max_cost")

    def _create(self, offer: dict[str, Any]) -> None:
        label = self.cfg["label"]
        before = {int(i["id"]) for i in self._ours()}
        refused = ""
        try:
            with self._lock:
                self.offer = offer
                # the instance's own deadline: it destroys itself then, even if this process is killed
                left = self._deadline - time.monotonic() + self.cfg["grace_s"]
                reply = self.api.call("renting", self.api.sdk.create_instance, id=int(offer["id"]),
                                      image=self.cfg["image"], disk=self.cfg["disk_gb"], label=label, ssh=True,
                                      direct=True, onstart_cmd=vast_selfstop.ONSTART,
                                      env=vast_selfstop.onstart_env(left, self.cfg["api_url"]))
                new = reply.get("new_contract") if isinstance(reply, dict) else None
                if not isinstance(reply, dict) or reply.get("success") is False:
                    refused = f"Vast.ai refused to rent offer {offer.get('id')}: {self.api.said(reply)}"
                elif not new:
                    refused = f"renting offer {offer.get('id')} returned no instance id ({self.api.said(reply)})"
                else:
                    self.instance_id = int(new)
                    self._rented_at = time.monotonic()
        finally:
            # The request may have created an instance although the reply was lost or refused, and the SDK
            # repeats a request whose reply timed out: every fresh instance with our label is ours to destroy.
            self._adopt_unknown(before)
        if refused:
            raise VastError(refused)
        self.progress(f"vast: rented instance {self.instance_id} (label {label!r}, image {self.cfg['image']})")

    def _adopt_unknown(self, before: set[int]) -> None:
        try:
            fresh = sorted(int(i["id"]) for i in self._ours() if int(i["id"]) not in before)
        except BaseException:  # nothing to adopt when we cannot even list
            return
        with self._lock:
            if self.instance_id is None and fresh:
                self.instance_id = fresh[0]
                self._rented_at = time.monotonic()
            for iid in fresh:
                if iid != self.instance_id and iid not in self._gone:
                    self.progress(f"vast: destroying duplicate instance {iid} (a repeated rent request)")
                    self._destroy_id(iid, "duplicate")
                    self._gone.add(iid)

    def _wait_running(self) -> dict[str, Any]:
        limit = min(self.cfg["wait_running_s"], self._left("the instance started"))
        deadline = time.monotonic() + limit
        status, errors = "unknown", 0
        while True:
            try:
                inst = self.api.call("instance status", self.api.sdk.show_instance, id=self.instance_id)
                errors = 0
            except VastError:
                errors += 1
                if errors >= 5:
                    raise
                inst = None
            if isinstance(inst, dict):
                status = str(inst.get("actual_status") or inst.get("status") or "starting")
                if status == "running" and ssh_endpoint(inst, self.cfg["ssh"]):
                    return inst
                if status in ("exited", "offline") or inst.get("intended_status") == "stopped":
                    msg = self.api.scrub((str(inst.get("status_msg") or "").strip().splitlines() or [""])[0])
                    raise VastError(f"instance {self.instance_id} stopped while starting ({status}: {msg})")
            if time.monotonic() + self.cfg["poll_s"] > deadline:
                raise VastError(f"instance {self.instance_id} was not running after {limit:g} s (status {status})")
            time.sleep(self.cfg["poll_s"])

    def _connect(self, inst: dict[str, Any]) -> None:
        from wfbench_transports.ssh import SshTransport
        from wfbench_transports.ssh_host import SshError

        endpoint = ssh_endpoint(inst, self.cfg["ssh"])
        if endpoint is None:
            raise VastError(f"instance {self.instance_id} offers no SSH endpoint (ssh={self.cfg['ssh']})")
        host, port = endpoint
        pkey = None
        if not self.cfg["key_file"]:
            pkey, public = _new_key()
            reply = self.api.call("attaching the SSH key", self.api.sdk.attach_ssh, instance_id=self.instance_id,
                                  ssh_key=public)
            if not isinstance(reply, dict) or reply.get("success") is False:
                raise VastError(f"Vast.ai refused to attach the SSH key to instance {self.instance_id}: "
                                f"{self.api.said(reply)}")
        opts = {k: self.cfg[k] for k in ("user", "python", "env", "venv", "remote_tmp", "wheels", "key_file",
                                         "connect_timeout", "gpu_tests") if self.cfg[k] is not None}
        t = SshTransport(registry=self.registry, cuda_compiler=self.cuda_compiler, progress=self.progress,
                         pkey=pkey, bootstrap=BOOTSTRAP if self.cfg["python"] == "python3" else None,
                         facts=self.facts(), deadline=self._deadline,
                         host=host, port=port, host_key="ephemeral", agent=False, ssh_config="none", **opts)
        limit = min(self.cfg["wait_ssh_s"], self._left("sshd answered"))
        deadline = time.monotonic() + limit
        self.progress(f"vast: instance {self.instance_id} is running; waiting for sshd at {host}:{port}")
        while True:
            try:
                t.connect()
                break
            except SshError as exc:
                if time.monotonic() + self.cfg["poll_s"] > deadline:
                    raise VastError(f"sshd of instance {self.instance_id} at {host}:{port} did not accept the key "
                                    f"within {limit:g} s: {exc}") from None
                time.sleep(self.cfg["poll_s"])
        self.transport = t

    def _check_gpu(self, result: RunResult) -> None:
        env = result.environment
        if self.cfg["mode"] != "canonical":
            return
        model = self.filter.model
        assert model is not None
        want_cc = f"{model.cc // 100}.{model.cc // 10 % 10}"
        if env.compute_capability != want_cc or env.gpu_name.strip() != model.reported:
            raise VastError(f"instance {self.instance_id} ran on {env.gpu_name} (compute capability "
                            f"{env.compute_capability}), not the pinned {model.key} ({model.reported}, {want_cc}); "
                            f"the result is not canonical and was discarded")

    # -- destroy: exactly once, loudly when impossible ------------------------------------------------

    def _destroy_id(self, iid: int, what: str) -> bool:
        """Destroy one instance with retries; True when the API confirmed it."""
        last = ""
        for attempt in range(max(1, self.cfg["destroy_retries"])):
            try:
                reply = self.api.call(f"destroying instance {iid}", self.api.sdk.destroy_instance, id=iid)
                if isinstance(reply, dict) and reply.get("success") is False:
                    raise VastError(f"Vast.ai refused to destroy instance {iid}: {self.api.said(reply)}")
                return True
            except VastError as exc:
                last = str(exc)
                if self._is_gone(iid):  # destroyed after all (a lost reply to the first request)
                    return True
                if attempt + 1 < self.cfg["destroy_retries"]:
                    time.sleep(min(30.0, self.cfg["poll_s"] * 2 ** attempt))
        print(f"\nwfbench: ERROR: Vast.ai {what} instance {iid} could NOT be destroyed ({last}).\n"
              f"wfbench: ERROR: it may still be running and billing. Destroy it now:  {destroy_command(iid)}\n"
              f"wfbench: ERROR: (or in the console: https://cloud.vast.ai/instances/)\n", file=sys.stderr, flush=True)
        return False

    def _is_gone(self, iid: int) -> bool:
        """Whether Vast.ai says the instance no longer exists (never True when it cannot tell)."""
        try:
            return self.api.sdk.show_instance(id=iid) is None
        except Exception as exc:
            return getattr(getattr(exc, "response", None), "status_code", None) == 404

    def destroy(self) -> None:
        """Destroy the rented instance (exactly once); safe to call any number of times, from any path."""
        with self._lock:
            iid = self.instance_id
            if self._destroying or iid is None or iid in self._gone:
                return
            self._destroying = True
            previous = self._mask_sigint()
            try:
                minutes = (time.monotonic() - self._rented_at) / 60 if self._rented_at else 0.0
                if self._destroy_id(iid, "rented"):
                    dph = float((self.offer or {}).get("dph_total", 0))
                    self.progress(f"vast: destroyed instance {iid} after {minutes:.1f} min (about "
                                  f"${dph * minutes / 60:.2f})")
            finally:
                self._gone.add(iid)
                self._destroying = False
                self._unmask_sigint(previous)

    # -- guards: signals and interpreter exit -----------------------------------------------------------

    def _install_guards(self) -> None:
        import signal  # here: listing the transports sets no handlers

        atexit.register(self._at_exit)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is not None:
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _remove_guards(self) -> None:
        import signal

        atexit.unregister(self._at_exit)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, old in self._old_handlers.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, old)
        self._old_handlers.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        import signal

        if self._destroying:
            return  # already cleaning up: let it finish
        name = signal.Signals(signum).name
        self._failure = f"ended by {name}"
        self.progress(f"vast: got {name}; destroying instance {self.instance_id}")
        # Destroy now, not only on the way out: a caller may catch SystemExit (pytest does, per test).
        self.destroy()
        raise SystemExit(128 + signum)

    def _at_exit(self) -> None:
        if self.instance_id is not None and self.instance_id not in self._gone:
            self.progress(f"vast: interpreter exiting; destroying instance {self.instance_id}")
            self.destroy()

    def _mask_sigint(self) -> Any:
        import signal

        if threading.current_thread() is not threading.main_thread():
            return None

        def hold(signum: int, frame: Any) -> None:
            print("wfbench: destroying the Vast.ai instance first, please wait", file=sys.stderr)

        previous = signal.signal(signal.SIGINT, hold)
        # None: a handler set outside Python, which cannot be put back; Python's own keeps Ctrl-C working
        return signal.default_int_handler if previous is None else previous

    def _unmask_sigint(self, previous: Any) -> None:
        import signal

        if previous is not None:
            signal.signal(signal.SIGINT, previous)
