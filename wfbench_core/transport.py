"""The transport interface: where a bundle is executed (this machine, an SSH host, a rented GPU).

A transport is a class registered through ``wfbench_register_transports``. The CLI constructs it as
``Transport(registry=..., cuda_compiler="auto"|"nvcc"|"nvrtc", progress=callable, **options)``, where
``options`` are the user's ``--transport-opt KEY=VALUE`` strings (``-`` in keys becomes ``_``), and calls
:meth:`Transport.execute` with a bundle built on this machine. A class attribute ``OPTIONS`` (name ->
help) lists the options ``wfbench transports NAME`` shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Optional, Protocol as TypingProtocol

from wfbench_core.request import ExecuteRequest
from wfbench_core.results import RunResult


class Transport(TypingProtocol):
    name: ClassVar[str]
    #: one line for ``wfbench transports``
    summary: ClassVar[str]

    def __init__(self, *, registry: Any, cuda_compiler: str = "auto", progress: Callable[[str], None] = ...,
                 **options: Any) -> None: ...

    def gpu_arch(self) -> str | None:
        """The target GPU's ``sm_XX`` when known before building (so warpforthc can target it)."""

    def execute(
        self,
        bundle: Path,
        request: ExecuteRequest,
        *,
        progress: Callable[[str], None],
        out: Optional[Path] = None,
    ) -> RunResult:
        """Execute the bundle on the transport's GPU and return the result.

        With ``out``, leave the result there; when the execution breaks off, leave there what finished
        (``complete=False``) before raising.
        """

    def close(self) -> None:
        """Release everything the transport holds (connections, rented machines)."""
