"""The transport interface: where a bundle is executed (this machine, an SSH host, a rented GPU).

A transport is a class registered through ``wfbench_register_transports``. The CLI constructs it as
``Transport(registry=..., cuda_compiler="auto"|"nvcc"|"nvrtc", progress=callable, **options)``, where
``options`` are the user's ``--transport-opt KEY=VALUE`` strings (``-`` in keys becomes ``_``), and calls
:meth:`Transport.execute` with a bundle built on this machine. A class attribute ``OPTIONS`` (name ->
help) lists the options ``wfbench transports NAME`` shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol as TypingProtocol, Sequence

from wfbench_core.results import Protocol, RunResult


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
        *,
        protocol: Protocol,
        mode: str,
        case_ids: Sequence[str],
        progress: Callable[[str], None],
    ) -> RunResult:
        """Execute the bundle on the transport's GPU and return the result."""

    def close(self) -> None:
        """Release everything the transport holds (connections, rented machines)."""
