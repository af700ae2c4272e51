"""The contracts between wfbench and its plugins: what a timer and a transport must offer.

Core modules (the hook specifications, the registry, the executor's worker) and the plugins (the default
timer, the transports) import these interfaces from here; nothing here imports a plugin.

- A **timer** (returned by the ``wfbench_make_timer`` hook) checks and times one case on the GPU host:
  it gets the case and its :class:`Side` objects and returns a :class:`Measurement`.
- A **transport** (registered through ``wfbench_register_transports``) is where a bundle is executed:
  this machine, an SSH host, a rented GPU. The CLI constructs it as ``Transport(registry=...,
  cuda_compiler="auto"|"nvcc"|"nvrtc", progress=callable, **options)``, where ``options`` are the user's
  ``--transport-opt KEY=VALUE`` strings (``-`` in keys becomes ``_``), which the transport checks itself
  (the built-in ones with :func:`parse_options` over their :class:`Option` specs). Its class attribute
  ``OPTIONS`` (``name -> help``, :func:`describe_options` of those specs; empty when it takes none) is what
  ``wfbench transports`` lists; a transport registered without it is refused. The CLI then calls
  :meth:`Transport.execute` with a bundle built on this machine and the run's
  :class:`~wfbench_core.record.request.ExecuteRequest`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from typing import Protocol as TypingProtocol

import attrs

from wfbench_core.host.options import Option, describe_options, parse_options
from wfbench_core.record.results import Check, Costs, Environment, KernelAttrs, RunResult
from wfbench_core.record.timing_record import Sampled

if TYPE_CHECKING:
    from wfbench_core.case import Case
    from wfbench_core.record.request import ExecuteRequest

__all__ = ["Measurement", "Option", "Side", "Timer", "Transport", "describe_options", "parse_options"]


@attrs.frozen
class Side:
    """One implementation of a case: a label (``wf``, ``cuda``, ``wf:head`` …), its kernel and PTX."""

    label: str
    kernel: str
    ptx: Mapping[str, str]  # configuration -> PTX text


@attrs.frozen
class Measurement:
    """What the timer observed for one case: the checks, and for a correct case its samples (``sampled``).

    ``sampled`` is the one timing record (:class:`~wfbench_core.record.timing_record.Sampled`): the result's
    ``timing`` is made from it whole, so every field a timer fills in reaches the result file.
    """

    passed: bool
    message: str
    checks: tuple[Check, ...]
    kernel_attrs: Mapping[str, KernelAttrs]
    costs: Costs
    sampled: Sampled | None = None  # None when a check failed (the case is not timed)
    ceiling: CeilingMeasured | None = None  # asked for with --ceiling (a timer may ignore it: None)
    # why the side cannot have run as timed, found before its samples (its launches do not do the same work):
    # the side is IMPLAUSIBLE with this line (wfbench_core.gpu.plausibility)
    implausible: str = ""


@attrs.frozen
class CeilingMeasured:
    """What the timer observed of a case's library ceiling (``--ceiling``): its check, and why it was not timed
    ("" when it was: its samples are ``sampled.samples_us["ceiling"]``, taken in the same rounds)."""

    checks: tuple[Check, ...] = ()
    problem: str = ""
    status: str = ""  # a CEILING_* status of wfbench_core.record.results when it was not timed
    timing_mode: str = ""  # how its launches were timed (events where graph capture was not possible)
    capture_note: str = ""


class Timer(TypingProtocol):
    """What the executor needs from a timer (the ``wfbench_make_timer`` hook returns one).

    A timer may also offer ``fp64_peak_gflops(compiler) -> float | None``, the f64 add/multiply peak the
    roofline compares with (the default timer does); a run whose timer has none shows no f64 share.
    """

    def environment(self) -> Environment: ...

    def copy_gbps(self) -> float | None: ...

    def measure(self, case: Case, sides: Sequence[Side], *, reference_label: str) -> Measurement: ...


class Transport(TypingProtocol):
    """Where a bundle is executed (the ``wfbench_register_transports`` hook registers the class)."""

    name: ClassVar[str]
    #: one line for ``wfbench transports``
    summary: ClassVar[str]
    #: its ``--transport-opt`` options, ``name -> help`` (:func:`describe_options`); empty when it takes none
    OPTIONS: ClassVar[Mapping[str, str]]

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
        out: Path | None = None,
    ) -> RunResult:
        """Execute the bundle on the transport's GPU and return the result.

        ``out`` is where the caller keeps the result: while the run is under way, or when it breaks off,
        leave there what has finished (``complete=False``) if the transport can; the caller writes the
        whole result there once this returns.
        """

    def close(self) -> None:
        """Release everything the transport holds (connections, rented machines)."""
