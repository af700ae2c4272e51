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
that kills it. The API key (``api_key_file``, else ``VAST_API_KEY`` or the file ``vastai set api-key`` writes,
read when the rental starts) is never printed, stored or put in an error message, and is sent only to
``api_url`` (``VAST_URL`` from the environment is refused unless it is the same address).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfbench_core import hookimpl
from wfbench_core.host.options import describe_options
from wfbench_transports.vast_client import find_api_key
from wfbench_transports.vast_config import (
    DEFAULT_IMAGE,
    GPU_MODELS,
    VAST_OPTIONS,
    GpuModel,
    OfferFilter,
    VastError,
    cc_of,
    choose_offer,
    gpu_model,
)
from wfbench_transports.vast_session import VastSession, destroy_command

if TYPE_CHECKING:  # the schema and the request load when a run starts, not for listing
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import RunResult

#: each name lives in the module of its concern (vast_config, vast_client, vast_session)
#: the transport's names (internal to wfbench, not the plugin API)
__all__ = ["DEFAULT_IMAGE", "GPU_MODELS", "VAST_OPTIONS", "GpuModel", "OfferFilter", "VastError", "VastSession",
           "VastTransport", "cc_of", "choose_offer", "destroy_command", "find_api_key", "gpu_model",
           "wfbench_register_transports"]

Progress = Callable[[str], None]


class VastTransport:
    """``wfbench run --transport vast``: a :class:`VastSession` rented at the first execute, destroyed at close."""

    name = "vast"
    summary = "a rented Vast.ai GPU (exact model pin by default), destroyed after the run"
    OPTIONS = describe_options(VAST_OPTIONS)

    def __init__(self, *, registry: Any = None, cuda_compiler: str = "auto", progress: Progress | None = None,
                 api_key: str | None = None, **options: Any) -> None:
        import importlib.util

        from wfbench_transports.ssh_host import paramiko_module

        # fail before the bundle is built, not after
        if importlib.util.find_spec("vastai") is None:
            raise VastError("the Vast.ai SDK is not installed: pip install 'wfbench[vast]'")
        paramiko_module()
        self.session = VastSession(registry=registry, cuda_compiler=cuda_compiler, progress=progress,
                                   api_key=api_key, **options)
        if api_key is None:  # there is a key (fail before the bundle is built); it is read when the rental starts
            find_api_key(self.session.cfg["api_key_file"], read=False)

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
