"""Transport options: ``--transport-opt KEY=VALUE``, declared once per transport.

The CLI hands options over as strings (``port=2222``); Python callers may pass typed values. A transport
lists its :class:`Option` specs; :func:`parse_options` turns the given mapping into typed values with
defaults and refuses unknown keys and bad values with one line naming the transport, the option and what
to do. Part of the transport contract (:mod:`wfbench_core.contracts` offers the same names); a small module,
so that listing the transports loads nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from wfbench_core.errors import WfbenchError

__all__ = ["Option", "describe_options", "parse_options"]  # internal, not the plugin API

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
