"""The ``local`` transport: execute the bundle on this machine's GPU (through the executor's worker process)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from wfbench_core import hookimpl
from wfbench_core.errors import NoGpuError, WfbenchError

if TYPE_CHECKING:
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import RunResult

__all__ = ["LocalTransport", "wfbench_register_transports"]  # internal, not the plugin API


class LocalTransport:
    name = "local"
    summary = "this machine's GPU (cases run in a supervised worker process)"

    OPTIONS: ClassVar[Mapping[str, str]] = {}

    def __init__(self, *, registry: Any, cuda_compiler: str = "auto", progress: Any = None, **options: Any) -> None:
        if options:
            raise WfbenchError(f"the local transport takes no options; got {', '.join(sorted(options))}")
        self.registry = registry
        self.cuda_compiler = cuda_compiler

    def gpu_arch(self) -> str | None:
        from wfbench_core.gpu.device import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        if reason:
            raise NoGpuError(reason)
        from numba import cuda

        from wfbench_core.record.results import sm_arch

        return sm_arch(tuple(cuda.get_current_device().compute_capability))

    def execute(self, bundle: Path, request: ExecuteRequest, *, progress: Callable[[str], None],
                out: Path | None = None) -> RunResult:
        from wfbench_core.run.executor import execute

        return execute(bundle, registry=self.registry, request=request, progress=progress, out=out)

    def close(self) -> None:
        pass


@hookimpl
def wfbench_register_transports(register: Callable[[str, Any], None]) -> None:
    register("local", LocalTransport)
