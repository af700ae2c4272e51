"""A run request: what the user asked for, built once by the CLI or the pytest plugin and passed down.

:class:`RunRequest` is the whole request on the machine where the bundle is built (cases with their
plugin origin, compilers, transport). :class:`ExecuteRequest` is the part the GPU host needs; transports
ship it as JSON through the one converter (``wfbench execute BUNDLE --request FILE``), never as flags.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from wfbench_core.record.origin import PluginOrigin
from wfbench_core.record.results import MODE_PAIRED, TimingProtocol, dumps, loads

__all__ = ["CaseRef", "ExecuteRequest", "RunRequest"]  # internal, not the plugin API


@attrs.frozen
class ExecuteRequest:
    """What the GPU host does with a bundle."""

    case_ids: tuple[str, ...] = ()  # empty: every case of the bundle
    protocol: TimingProtocol = TimingProtocol()
    mode: str = MODE_PAIRED
    cuda_compiler: str = "auto"  # "auto" | "nvcc" | "nvrtc"
    #: a fixed deadline for every wait on the GPU, in seconds; None: derived from the case (watchdog)
    case_timeout_s: float | None = None
    sanitize: bool = False  # compute-sanitizer on the check configuration of each side
    repeat: int = 1  # fresh worker processes, one after another, each running every case
    ceiling: bool = False  # also time each case's library ceiling, where one is declared (wfbench_core.ceiling)

    def to_json(self) -> str:
        return dumps(self)

    @classmethod
    def from_json(cls, text: str, where: str = "request") -> ExecuteRequest:
        request: ExecuteRequest = loads(text, cls, where=where)
        return request


@attrs.frozen
class CaseRef:
    """A selected case and the plugin that registered it."""

    id: str
    origin: PluginOrigin


@attrs.frozen
class RunRequest:
    """Everything ``wfbench run`` (or the pytest plugin) was asked to do."""

    cases: tuple[CaseRef, ...]
    execute: ExecuteRequest
    #: warpforthc binaries: ``{"": path}`` for one compiler, ``{"base": …, "head": …}`` for base/head
    compilers: dict[str, Path] = attrs.Factory(dict)
    transport: str = "local"
    transport_options: dict[str, str] = attrs.Factory(dict)
    commit: str | None = None
    check_cuda: bool = True  # also compile the CUDA side at build time when nvcc is here

    @property
    def case_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases)
