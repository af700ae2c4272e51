"""The contracts between wfbench and its plugins: what a timer and a transport must offer.

Core modules (the hook specifications, the registry, the executor's worker) and the plugins (the default
timer, the transports) import these interfaces from here; nothing here imports a plugin.

- A **timer** (returned by the ``wfbench_make_timer`` hook) checks and times one case on the GPU host:
  it gets the case and its :class:`Side` objects and returns a :class:`Measurement`.
- A **transport** (registered through ``wfbench_register_transports``) is where a bundle is executed:
  this machine, an SSH host, a rented GPU. The CLI constructs it as ``Transport(registry=...,
  cuda_compiler="auto"|"nvcc"|"nvrtc", progress=callable, **options)``, where ``options`` are the user's
  ``--transport-opt KEY=VALUE`` strings (``-`` in keys becomes ``_``) checked against the class attribute
  ``OPTIONS`` (:class:`Option` specs, parsed by :func:`parse_options`), and calls :meth:`Transport.execute` with a bundle
  built on this machine and the run's :class:`~wfbench_core.record.request.ExecuteRequest`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping, Optional, Protocol as TypingProtocol, Sequence

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import Check, Costs, Environment, KernelAttrs, RunResult
from wfbench_core.record.timing_record import Sampled

if TYPE_CHECKING:
    from wfbench_core.case import Case
    from wfbench_core.record.request import ExecuteRequest


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
    sampled: Optional[Sampled] = None  # None when a check failed (the case is not timed)


class Timer(TypingProtocol):
    """What the executor needs from a timer (the ``wfbench_make_timer`` hook returns one).

    A timer may also offer ``fp64_peak_gflops(compiler) -> float | None``, the f64 add/multiply peak the
    roofline compares with (the default timer does); a run whose timer has none shows no f64 share.
    """

    def environment(self) -> Environment: ...

    def copy_gbps(self) -> float | None: ...

    def measure(self, case: Case, sides: Sequence[Side], *, reference_label: str) -> Measurement: ...


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

        ``out`` is where the caller keeps the result: while the run is under way, or when it breaks off,
        leave there what has finished (``complete=False``) if the transport can; the caller writes the
        whole result there once this returns.
        """

    def close(self) -> None:
        """Release everything the transport holds (connections, rented machines)."""


# -------------------------------------------------------------------------------------------------
# transport options: ``--transport-opt KEY=VALUE``, declared once per transport
# -------------------------------------------------------------------------------------------------
# The CLI hands options over as strings (``port=2222``); Python callers may pass typed values. A transport
# lists its :class:`Option` specs; :func:`parse_options` turns the given mapping into typed values with
# defaults and refuses unknown keys and bad values with one line naming the transport, the option and what
# to do.

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@attrs.frozen
class Option:
    """One transport option: its name, type (``str``, ``int``, ``float``, ``bool``), default and help."""

    name: str
    help: str
    default: Any = None
    kind: str = "str"
    choices: tuple[str, ...] = ()


def _convert(transport: str, spec: Option, value: Any) -> Any:
    where = f"{transport} transport: option {spec.name}={value!r}"
    if spec.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise WfbenchError(f"{where} is not a yes/no value; use true or false")
    if spec.kind == "int":
        try:
            return int(str(value).strip())
        except ValueError:
            raise WfbenchError(f"{where} is not a whole number") from None
    if spec.kind == "float":
        try:
            number = float(str(value).strip())
        except ValueError:
            raise WfbenchError(f"{where} is not a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise WfbenchError(f"{where} is not a finite number")
        return number
    text = str(value)
    if spec.choices and text not in spec.choices:
        raise WfbenchError(f"{where} is not one of: {', '.join(spec.choices)}")
    return text


def parse_options(transport: str, specs: Iterable[Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """Typed values for every spec (defaults filled in); unknown or malformed options are refused."""
    by_name = {s.name: s for s in specs}
    unknown = sorted(k for k in given if k.replace("-", "_") not in by_name)
    if unknown:
        raise WfbenchError(
            f"{transport} transport: unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(by_name))} (see 'wfbench transports')"
        )
    values = {name: spec.default for name, spec in by_name.items()}
    for key, value in given.items():
        spec = by_name[key.replace("-", "_")]
        values[spec.name] = None if value is None else _convert(transport, spec, value)
    return values


def describe_options(specs: Iterable[Option]) -> dict[str, str]:
    """``name -> help`` (with the default), for ``wfbench transports`` and the docs."""
    out = {}
    for s in specs:
        default = "" if s.default in (None, "") else f" [default: {s.default}]"
        out[s.name] = f"{s.help}{default}"
    return out
