"""What the ``vast`` transport rents: its options, the GPU models a canonical run may pin, and the offer filter.

Canonical runs pin one exact model of :data:`GPU_MODELS` and its compute capability; a near miss such as
"RTX 4090D" is never taken, and a model outside the table is refused rather than guessed. ``mode=broad``
takes the cheapest GPU with at least ``min_arch``, for correctness-only runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.host.options import Option

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "API_URL", "DEFAULT_IMAGE", "GPU_MODELS", "VAST_OPTIONS", "GpuModel", "OfferFilter", "VastError", "arch_of",
    "cc_of", "choose_offer", "gpu_model", "vast_name",
]

DEFAULT_IMAGE = "nvidia/cuda:12.4.0-devel-ubuntu22.04"


class VastError(WfbenchError):
    """A Vast.ai step failed; the message never contains the API key."""


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


API_URL = "https://console.vast.ai"  #: Vast.ai's API, the one address the key goes to by default

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
    Option("max_cost", "refuse to rent when $/hour x budget plus the offer's network prices for download_gb and "
           "upload_gb exceed this many dollars", 0.50, "float"),
    Option("download_gb", "GB the rental downloads (the image, apt packages, the venv's wheels), priced at the "
           "offer's inet_down_cost", 15.0, "float"),
    Option("upload_gb", "GB the rental uploads, priced at the offer's inet_up_cost", 1.0, "float"),
    Option("grace_s", "seconds after budget_min at which the instance destroys itself, even if this process "
           "was killed (its onstart deadline)", 300.0, "float"),
    Option("wait_running_s", "seconds to wait for the instance to run", 600.0, "float"),
    Option("wait_ssh_s", "seconds to wait for its sshd to accept the key", 300.0, "float"),
    Option("poll_s", "seconds between status polls", 10.0, "float"),
    Option("api_timeout_s", "seconds for each Vast.ai API request (the SDK retries timeouts, lost connections, "
           "429 and 502-504 itself)", 60.0, "float"),
    Option("api_key_file", "file holding the Vast.ai API key, read when the rental starts [default: "
           "VAST_API_KEY, else the vastai CLI's key file]"),
    Option("api_url", "the Vast.ai API's address: the key is sent only there (VAST_URL in the environment is "
           "refused unless it is the same)", API_URL),
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
    budget_min: float = 0.0  # the whole rental, minutes: with the network prices, what an offer costs at most
    download_gb: float = 0.0
    upload_gb: float = 0.0

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
                   cfg["min_cuda"], cfg["disk_gb"], *(cfg.get(k, 0.0) for k in ("budget_min", "download_gb", "upload_gb")))

    def estimate(self, offer: dict[str, Any]) -> tuple[float, float]:
        """``(total, network)``: the most this offer costs over the whole rental, in dollars: its $/hour (GPU
        and disk) for ``budget_min``, plus its network prices ($/GB) for ``download_gb`` and ``upload_gb``."""
        network = (float(offer["inet_down_cost"]) * self.download_gb + float(offer["inet_up_cost"]) * self.upload_gb)
        return float(offer["dph_total"]) * self.budget_min / 60 + network, network

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
        if num("inet_down_cost") is None or num("inet_up_cost") is None:
            return "no network prices (inet_down_cost, inet_up_cost)"
        return None


def choose_offer(offers: Sequence[Any], filt: OfferFilter) -> dict[str, Any]:
    """The qualifying offer that costs least over the whole rental, network included (then the most
    reliable); a clear error when none qualifies."""
    good, rejected = [], []
    for offer in offers if isinstance(offers, (list, tuple)) else []:
        if not isinstance(offer, dict):
            continue
        why = filt.reject(offer)
        (rejected.append((offer, why)) if why else good.append(offer))
    if good:
        return min(good, key=lambda o: (filt.estimate(o)[0], float(o["dph_total"]),
                                        -float(o.get("reliability2") or o.get("reliability") or 0), o.get("id", 0)))
    near = "; ".join(f"offer {o.get('id')} {o.get('gpu_name')!r}: {why}" for o, why in rejected[:3])
    raise VastError(
        f"no Vast.ai offer is {filt.describe()}"
        + (f" (rejected {len(rejected)}: {near})" if rejected else " (the search returned none)")
        + ("; try again later or raise max_dph" + ("; mode=broad takes other models for correctness-only runs"
                                                  if filt.mode == "canonical" else ""))
    )
