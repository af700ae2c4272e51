"""The ``vast`` transport: rent one Vast.ai GPU, run the bundle there over SSH, always destroy it.

Canonical runs pin one exact GPU model of :data:`GPU_MODELS` (default ``RTX_4090``), with its compute
capability, and fail when no offer matches exactly — a near miss such as "RTX 4090D" is never taken; a
model outside the table is refused rather than guessed. ``mode=broad`` takes the
cheapest GPU with at least ``min_arch``, for correctness-only runs. The CUDA toolkit is fixed by the image
(default ``nvidia/cuda:12.4.0-devel-ubuntu22.04``): the CUDA baseline is compiled there.

Lifecycle of a :class:`VastSession` (also usable on its own, e.g. by a pytest plugin holding one rental
for a whole test session): destroy leftovers carrying our label -> search -> pick the offer -> show the
cost estimate (``$/h x budget``) and refuse above ``max_cost`` -> rent (labelled) -> attach a fresh SSH
key -> wait until running -> wait until sshd accepts -> hand the host to the ``ssh`` transport. The
instance is destroyed exactly once — on success, on any exception, on Ctrl-C, on SIGTERM/SIGHUP and at
interpreter exit — with retries; if that finally fails the instance id is printed loudly with the command
that kills it. The API key (``VAST_API_KEY`` or the file ``vastai set api-key`` writes, as the vastai CLI
reads it) is never printed, stored or put in an error message; ``VAST_URL`` replaces the API's address, as
for the vastai CLI.
"""

from __future__ import annotations

import atexit
import io
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import attrs

from wfbench_core import hookimpl
from wfbench_core.errors import WfbenchError
from wfbench_core.record.options import Option, describe_options, parse_options

if TYPE_CHECKING:  # the schema and the request load when a run starts, not for listing
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import RunResult

Progress = Callable[[str], None]

DEFAULT_IMAGE = "nvidia/cuda:12.4.0-devel-ubuntu22.04"
#: Fixed shell text run once on a fresh instance: the CUDA images ship without Python.
BOOTSTRAP = (
    "command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || "
    "(export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && "
    "apt-get install -y -qq --no-install-recommends python3 python3-venv python3-pip >/dev/null)"
)


@attrs.frozen
class GpuModel:
    """A GPU model the canonical pin knows: how Vast.ai offers it and how the GPU names itself on the host."""

    key: str  #: the ``gpu_name`` option's spelling
    vast: str  #: Vast.ai's ``gpu_name`` of its offers
    reported: str  #: the name NVML and the CUDA driver report (the result's ``environment.gpu_name``)
    cc: int  #: compute capability as Vast writes it (890 = 8.9)
    vram_gb: int | None = None  #: set where one Vast name covers several memory sizes (the A100s)

    def vram_range_mb(self) -> tuple[float, float] | None:
        """The offers' ``gpu_ram`` (MB) that mean this model's memory size."""
        return None if self.vram_gb is None else (self.vram_gb * 900.0, self.vram_gb * 1150.0)


#: Vast.ai names <-> the names the GPU reports, for the models a canonical run may pin. A name outside
#: this table is refused: matching names loosely would take a neighbouring model (RTX 4090D, H100 NVL)
#: for the pinned one.
GPU_MODELS = (
    GpuModel("RTX_4090", "RTX 4090", "NVIDIA GeForce RTX 4090", 890),
    GpuModel("RTX_3090", "RTX 3090", "NVIDIA GeForce RTX 3090", 860),
    GpuModel("L40S", "L40S", "NVIDIA L40S", 890),
    GpuModel("A100_PCIE_40GB", "A100 PCIE", "NVIDIA A100-PCIE-40GB", 800, 40),
    GpuModel("A100_PCIE_80GB", "A100 PCIE", "NVIDIA A100 80GB PCIe", 800, 80),
    GpuModel("A100_SXM4_40GB", "A100 SXM4", "NVIDIA A100-SXM4-40GB", 800, 40),
    GpuModel("A100_SXM4_80GB", "A100 SXM4", "NVIDIA A100-SXM4-80GB", 800, 80),
    GpuModel("H100_SXM", "H100 SXM", "NVIDIA H100 80GB HBM3", 900),
    GpuModel("H100_PCIE", "H100 PCIE", "NVIDIA H100 PCIe", 900),
    GpuModel("H100_NVL", "H100 NVL", "NVIDIA H100 NVL", 900),
    GpuModel("H200", "H200", "NVIDIA H200", 900),
    GpuModel("H200_NVL", "H200 NVL", "NVIDIA H200 NVL", 900),
)


def _spelling(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", str(name).strip()).upper()


def gpu_model(name: str) -> GpuModel:
    """The table entry for ``RTX_4090``, ``RTX 4090``, ``h100_sxm`` …; one clear line for anything else."""
    want = _spelling(name)
    for model in GPU_MODELS:
        if want == model.key:
            return model
    shared = [m.key for m in GPU_MODELS if _spelling(m.vast) == want]
    if shared:
        raise VastError(f"vast transport: gpu_name={name!r} names several memory sizes on Vast.ai; pick one of "
                        f"{', '.join(shared)}")
    raise VastError(f"vast transport: gpu_name={name!r} is not a GPU model wfbench can pin; known: "
                    f"{', '.join(m.key for m in GPU_MODELS)} (mode=broad takes any GPU, for correctness only)")


VAST_OPTIONS = (
    Option("mode", "canonical: exactly gpu_name and arch (comparable series); broad: any GPU with at least "
           "min_arch (correctness only)", "canonical", "str", ("canonical", "broad")),
    Option("gpu_name", "canonical GPU model, one of: " + ", ".join(m.key for m in GPU_MODELS), "RTX_4090"),
    Option("arch", "canonical compute capability, matched exactly [default: the model's]"),
    Option("min_arch", "broad mode: the lowest compute capability accepted", "sm_75"),
    Option("max_dph", "ceiling on the offer's total $/hour", 0.50, "float"),
    Option("min_reliability", "lowest host reliability accepted (0..1)", 0.95, "float"),
    Option("min_inet_down", "lowest download bandwidth accepted, Mbit/s", 100.0, "float"),
    Option("min_cuda", "lowest CUDA version the host driver must support (the gpu extra uses CUDA 13 wheels)",
           13.0, "float"),
    Option("image", "container image (fixes the CUDA toolkit that compiles the baseline)", DEFAULT_IMAGE),
    Option("disk_gb", "disk to rent, GB (offers are searched and priced with it)", 20.0, "float"),
    Option("label", "label put on the instance; leftover instances with this label are destroyed first",
           "wfbench"),
    Option("budget_min", "whole-run time budget in minutes (renting, setup and the run)", 45.0, "float"),
    Option("max_cost", "refuse to rent when $/hour x budget exceeds this many dollars", 0.50, "float"),
    Option("wait_running_s", "seconds to wait for the instance to run", 600.0, "float"),
    Option("wait_ssh_s", "seconds to wait for its sshd to accept the key", 300.0, "float"),
    Option("poll_s", "seconds between status polls", 10.0, "float"),
    Option("api_timeout_s", "seconds for each Vast.ai API request (the SDK retries timeouts, lost connections, "
           "429 and 502-504 itself)", 60.0, "float"),
    Option("destroy_retries", "attempts to destroy the instance before giving up loudly", 5, "int"),
    Option("ssh", "which SSH endpoint: auto (direct when offered), direct, proxy", "auto", "str",
           ("auto", "direct", "proxy")),
    Option("key_file", "private key already registered with your Vast.ai account [default: a fresh key for this "
           "rental, attached to the instance]"),
    Option("user", "SSH user on the instance", "root"),
    Option("python", "Python interpreter on the instance", "python3"),
    Option("env", "as for the ssh transport: auto, reuse or venv", "auto", "str", ("auto", "reuse", "venv")),
    Option("venv", "venv on the instance (relative to the remote home)", ".cache/wfbench/venv"),
    Option("remote_tmp", "folder on the instance that holds the per-run work directory"),
    Option("wheels", "folder of prebuilt wheels to ship instead of the ones made here"),
    Option("connect_timeout", "seconds for each SSH connection attempt", 20.0, "float"),
    Option("gpu_tests", "as for the ssh transport: a wfbench checkout whose GPU tests (pytest -m gpu) run on the "
           "rented GPU before the bundle"),
)


class VastError(WfbenchError):
    """A Vast.ai step failed; the message never contains the API key."""


# -------------------------------------------------------------------------------------------------
# API key
# -------------------------------------------------------------------------------------------------

KEY_ENV = "VAST_API_KEY"  #: the variable the vastai CLI and SDK read


def key_files() -> list[Path]:
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [config / "vastai" / "vast_api_key", Path.home() / ".vast_api_key"]


def find_api_key() -> str:
    """From ``VAST_API_KEY``, else the file ``vastai set api-key`` writes (the vastai CLI's order)."""
    if os.environ.get(KEY_ENV, "").strip():
        return os.environ[KEY_ENV].strip()
    from wfbench_core.record.fsutil import read_text  # here: listing the transports loads no file helpers

    for path in key_files():
        if path.is_file():
            key = read_text(path, "a Vast.ai API key file").strip()
            if key:
                return key
    raise VastError(f"no Vast.ai API key: set {KEY_ENV}, or save it with 'vastai set api-key KEY' "
                    f"(it goes to {key_files()[0]})")


# -------------------------------------------------------------------------------------------------
# offers
# -------------------------------------------------------------------------------------------------


def cc_of(arch: str) -> int:
    """``sm_89`` or ``8.9`` -> Vast's ``compute_cap`` (890)."""
    text = str(arch).strip().lower()
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)", text)
    if m and len(m.group(1)) >= 2:
        return int(m.group(1)) * 10
    m = re.fullmatch(r"(\d+)\.(\d)", text)
    if m:
        return int(m.group(1)) * 100 + int(m.group(2)) * 10
    raise VastError(f"arch {arch!r} is not a compute capability such as sm_89 or 8.9")


def arch_of(cc: int) -> str:
    """Vast's integer compute capability (890) as a PTX target (``sm_89``)."""
    from wfbench_core.record.results import sm_arch

    return sm_arch((int(cc) // 100, int(cc) // 10 % 10))


def vast_name(name: str) -> str:
    """An offer's model with underscores and runs of spaces as one space (Vast's query spelling); case kept."""
    return re.sub(r"[\s_]+", " ", str(name).strip())


@attrs.frozen
class OfferFilter:
    """What an offer must satisfy; canonical mode pins a model of :data:`GPU_MODELS` and its architecture."""

    mode: str
    model: GpuModel | None  # canonical: the pinned model; broad: None
    cc: int  # canonical: exact; broad: minimum
    max_dph: float
    min_reliability: float
    min_inet_down: float
    min_cuda: float
    disk_gb: float  # the rental's disk: offers are searched and priced with it

    @classmethod
    def from_options(cls, cfg: dict[str, Any]) -> OfferFilter:
        model = None
        if cfg["mode"] == "canonical":
            model = gpu_model(cfg["gpu_name"])
            cc = model.cc
            if cfg["arch"] is not None and cc_of(cfg["arch"]) != cc:
                raise VastError(f"vast transport: arch={cfg['arch']} contradicts gpu_name={model.key}, which is "
                                f"{arch_of(cc)}; leave arch out or pin another model")
        else:
            cc = cc_of(cfg["min_arch"])
        return cls(cfg["mode"], model, cc, cfg["max_dph"], cfg["min_reliability"], cfg["min_inet_down"],
                   cfg["min_cuda"], cfg["disk_gb"])

    def query(self) -> str:
        """The search string for ``VastAI.search_offers`` (the server's filter; :meth:`reject` re-checks)."""
        parts = ["num_gpus=1"]
        if self.model is not None:
            parts += [f"gpu_name={self.model.vast.replace(' ', '_')}", f"compute_cap={self.cc}"]
            vram = self.model.vram_range_mb()
            if vram:
                parts += [f"gpu_ram>={vram[0] / 1000:g}", f"gpu_ram<={vram[1] / 1000:g}"]
        else:
            parts.append(f"compute_cap>={self.cc}")
        parts += [f"disk_space>={self.disk_gb:g}", f"dph_total<={self.max_dph:g}",
                  f"reliability>={self.min_reliability:g}", f"inet_down>={self.min_inet_down:g}",
                  f"cuda_max_good>={self.min_cuda:g}"]
        return " ".join(parts)

    def describe(self) -> str:
        what = (f"exactly {self.model.key} / {arch_of(self.cc)}" if self.model is not None
                else f"any GPU with at least {arch_of(self.cc)}")
        return (f"{what}, at most ${self.max_dph:.2f}/h with {self.disk_gb:g} GB disk, reliability >= "
                f"{self.min_reliability:g}, download >= {self.min_inet_down:g} Mbit/s, driver CUDA >= "
                f"{self.min_cuda:g}")

    def reject(self, offer: dict[str, Any]) -> str | None:
        """Why this offer does not qualify, or None."""

        def num(key: str, *alts: str) -> float | None:
            for k in (key, *alts):
                v = offer.get(k)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return float(v)
            return None

        name = str(offer.get("gpu_name", ""))
        cc, dph = num("compute_cap"), num("dph_total")
        if num("num_gpus") != 1:
            return f"{offer.get('num_gpus')} GPUs"
        if cc is None or dph is None:
            return "no compute_cap or dph_total"
        if self.model is not None:
            if vast_name(name) != self.model.vast:
                return f"model {name!r} is not {self.model.vast!r}"
            if int(cc) != self.cc:
                return f"{arch_of(int(cc))}, not {arch_of(self.cc)}"
            vram, ram = self.model.vram_range_mb(), num("gpu_ram")
            if vram and (ram is None or not vram[0] <= ram <= vram[1]):
                return f"{ram} MB of GPU memory is not the {self.model.vram_gb} GB model"
        elif int(cc) < self.cc:
            return f"{arch_of(int(cc))} is below {arch_of(self.cc)}"
        if dph > self.max_dph:
            return f"${dph:.3f}/h is over the ${self.max_dph:.2f}/h ceiling"
        disk = num("disk_space")
        if disk is None or disk < self.disk_gb:
            return f"{disk} GB of disk < {self.disk_gb:g} GB"
        rel = num("reliability2", "reliability")
        if rel is None or rel < self.min_reliability:
            return f"reliability {rel} < {self.min_reliability:g}"
        down = num("inet_down")
        if down is None or down < self.min_inet_down:
            return f"download {down} < {self.min_inet_down:g} Mbit/s"
        cuda = num("cuda_max_good")
        if cuda is None or cuda < self.min_cuda:
            return f"driver CUDA {cuda} < {self.min_cuda:g}"
        return None


def choose_offer(offers: Sequence[Any], filt: OfferFilter) -> dict[str, Any]:
    """The cheapest qualifying offer (then the most reliable); a clear error when none qualifies."""
    good, rejected = [], []
    for offer in offers if isinstance(offers, (list, tuple)) else []:
        if not isinstance(offer, dict):
            continue
        why = filt.reject(offer)
        (rejected.append((offer, why)) if why else good.append(offer))
    if good:
        return min(good, key=lambda o: (float(o["dph_total"]), -float(o.get("reliability2") or
                                                                        o.get("reliability") or 0), o.get("id", 0)))
    near = "; ".join(f"offer {o.get('id')} {o.get('gpu_name')!r}: {why}" for o, why in rejected[:3])
    raise VastError(
        f"no Vast.ai offer is {filt.describe()}"
        + (f" (rejected {len(rejected)}: {near})" if rejected else " (the search returned none)")
        + ("; try again later or raise max_dph" + ("; mode=broad takes other models for correctness-only runs"
                                                  if filt.mode == "canonical" else ""))
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
    from wfbench_transports.ssh import paramiko_module

    paramiko = paramiko_module()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption()).decode()
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return paramiko.Ed25519Key(file_obj=io.StringIO(pem)), pub.decode() + " wfbench-rental"


# -------------------------------------------------------------------------------------------------
# the session
# -------------------------------------------------------------------------------------------------


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
        self._sdk: Any = None  # the vastai.VastAI client, made at start
        self._key = api_key
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
            self._open_sdk()
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
        from wfbench_transports.ssh import RemoteTimeout

        self._left("the run")  # the ssh transport stops every setup and run command at the same deadline
        try:
            result = self.transport.execute(bundle, request, progress=progress, out=out)
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
                except Exception:  # noqa: BLE001 - never let SSH trouble skip the destroy
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

    # -- SDK calls, scrubbed --------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        if self._key and len(self._key) >= 4:
            text = text.replace(self._key, "***")
        return text

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every SDK/HTTP failure becomes one scrubbed line
            raise VastError(f"Vast.ai {what} failed: {self._explain(exc)}") from None

    def _explain(self, exc: Exception) -> str:
        """One line for an SDK failure: the HTTP status with Vast's own message and what to do, or the error."""
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            try:
                body = response.json()  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - not JSON: the status says enough
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
            text = f"no reply within api_timeout_s={self.cfg['api_timeout_s']:g} s"
        else:
            text = f"{type(exc).__name__}: {exc}"
        lines = self._scrub(text).strip().splitlines() or [type(exc).__name__]
        return lines[0][:400]

    def _open_sdk(self) -> None:
        if self._key is None:
            self._key = find_api_key()
        if self._sdk is None:
            try:
                from vastai import VastAI
            except ImportError:
                raise VastError("the Vast.ai SDK is not installed: pip install 'wfbench[vast]'") from None
            url = os.environ.get("VAST_URL", "").strip() or None  # as the vastai CLI; read now, not at import
            self._sdk = self._call("client setup", VastAI, api_key=self._key, server_url=url, quiet=True)
            self._sdk.client.timeout = self.cfg["api_timeout_s"]  # per request; VastAI() does not take it

    def _left(self, what: str) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise VastError(f"the time budget of {self.cfg['budget_min']:g} min ran out before {what}; "
                            f"raise budget_min")
        return left

    # -- steps ------------------------------------------------------------------------------------

    def _ours(self) -> list[dict[str, Any]]:
        found = self._call("listing instances", self._sdk.show_instances)
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
        offers = self._call("offer search", self._sdk.search_offers, query=query, order="dph_total", limit=64,
                            storage=self.cfg["disk_gb"])  # priced with the disk the rental takes
        return choose_offer(offers, self.filter)

    def _check_cost(self, offer: dict[str, Any]) -> None:
        dph = float(offer["dph_total"])
        budget = self.cfg["budget_min"]
        estimate = dph * budget / 60
        self.progress(
            f"vast: offer {offer.get('id')}: {offer.get('gpu_name')} {arch_of(int(offer['compute_cap']))}, machine "
            f"{offer.get('machine_id')}, ${dph:.3f}/h; budget {budget:g} min -> at most ${estimate:.2f} "
            f"(max_cost ${self.cfg['max_cost']:.2f})"
        )
        if estimate > self.cfg["max_cost"]:
            raise VastError(f"the cost estimate ${estimate:.2f} (${dph:.3f}/h for {budget:g} min) is over "
                            f"max_cost=${self.cfg['max_cost']:.2f}; lower budget_min or raise max_cost")

    def _create(self, offer: dict[str, Any]) -> None:
        label = self.cfg["label"]
        before = {int(i["id"]) for i in self._ours()}
        refused = ""
        try:
            with self._lock:
                self.offer = offer
                reply = self._call("renting", self._sdk.create_instance, id=int(offer["id"]), image=self.cfg["image"],
                                   disk=self.cfg["disk_gb"], label=label, ssh=True, direct=True)
                new = reply.get("new_contract") if isinstance(reply, dict) else None
                if not isinstance(reply, dict) or reply.get("success") is False:
                    refused = f"Vast.ai refused to rent offer {offer.get('id')}: {self._said(reply)}"
                elif not new:
                    refused = f"renting offer {offer.get('id')} returned no instance id ({self._said(reply)})"
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

    def _said(self, reply: Any) -> str:
        """What a ``success: false`` (or malformed) reply says, scrubbed, in one line."""
        if isinstance(reply, dict):
            text = str(reply.get("msg") or reply.get("error") or reply)
        else:
            text = f"unexpected reply {reply!r}"
        return (self._scrub(text).strip().splitlines() or ["no message"])[0][:300]

    def _adopt_unknown(self, before: set[int]) -> None:
        try:
            fresh = sorted(int(i["id"]) for i in self._ours() if int(i["id"]) not in before)
        except BaseException:  # noqa: BLE001 - nothing to adopt when we cannot even list
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
                inst = self._call("instance status", self._sdk.show_instance, id=self.instance_id)
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
                    msg = self._scrub((str(inst.get("status_msg") or "").strip().splitlines() or [""])[0])
                    raise VastError(f"instance {self.instance_id} stopped while starting ({status}: {msg})")
            if time.monotonic() + self.cfg["poll_s"] > deadline:
                raise VastError(f"instance {self.instance_id} was not running after {limit:g} s (status {status})")
            time.sleep(self.cfg["poll_s"])

    def _connect(self, inst: dict[str, Any]) -> None:
        from wfbench_transports.ssh import SshError, SshTransport

        host, port = ssh_endpoint(inst, self.cfg["ssh"])  # type: ignore[misc]
        pkey = None
        if not self.cfg["key_file"]:
            pkey, public = _new_key()
            reply = self._call("attaching the SSH key", self._sdk.attach_ssh, instance_id=self.instance_id,
                               ssh_key=public)
            if not isinstance(reply, dict) or reply.get("success") is False:
                raise VastError(f"Vast.ai refused to attach the SSH key to instance {self.instance_id}: "
                                f"{self._said(reply)}")
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
                reply = self._call(f"destroying instance {iid}", self._sdk.destroy_instance, id=iid)
                if isinstance(reply, dict) and reply.get("success") is False:
                    raise VastError(f"Vast.ai refused to destroy instance {iid}: {self._said(reply)}")
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
            return self._sdk.show_instance(id=iid) is None
        except Exception as exc:  # noqa: BLE001
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
        atexit.register(self._at_exit)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is not None:
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _remove_guards(self) -> None:
        atexit.unregister(self._at_exit)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, old in self._old_handlers.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, old)
        self._old_handlers.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
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
        if threading.current_thread() is not threading.main_thread():
            return None

        def hold(signum: int, frame: Any) -> None:
            print("wfbench: destroying the Vast.ai instance first, please wait", file=sys.stderr)

        return signal.signal(signal.SIGINT, hold)

    def _unmask_sigint(self, previous: Any) -> None:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


class VastTransport:
    """``wfbench run --transport vast``: a :class:`VastSession` rented at the first execute, destroyed at close."""

    name = "vast"
    summary = "a rented Vast.ai GPU (exact model pin by default), destroyed after the run"
    OPTIONS = describe_options(VAST_OPTIONS)

    def __init__(self, *, registry: Any = None, cuda_compiler: str = "auto", progress: Progress | None = None,
                 api_key: str | None = None, **options: Any) -> None:
        import importlib.util

        from wfbench_transports.ssh import paramiko_module

        # fail before the bundle is built, not after
        if importlib.util.find_spec("vastai") is None:
            raise VastError("the Vast.ai SDK is not installed: pip install 'wfbench[vast]'")
        paramiko_module()
        self.session = VastSession(registry=registry, cuda_compiler=cuda_compiler, progress=progress,
                                   api_key=api_key or find_api_key(), **options)

    def gpu_arch(self) -> str | None:
        return self.session.target_arch()

    def execute(self, bundle: Path, request: ExecuteRequest, *, progress: Progress | None = None,
                out: Path | None = None) -> RunResult:
        self.session.start()
        return self.session.execute(bundle, request, progress=progress, out=out)

    def close(self) -> None:
        self.session.stop()


@hookimpl
def wfbench_register_transports(register: Callable[[str, Any], None]) -> None:
    register("vast", VastTransport)
