"""The result files: the schema's records (:mod:`wfbench_core.record.schema`, every name offered here), one
cattrs converter, JSON in and out, and the one result loader.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfbench_core.errors import WfbenchError
from wfbench_core.record import schema
from wfbench_core.record.schema import *  # noqa: F403  (the schema offered whole, its __all__ the one list)
from wfbench_core.record.schema import (  # the schema, read and written here
    SCHEMA_VERSION,
    RunResult,
)

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "RESULT", "converter", "dumps", "load_result", "loads", "parse_result", "structure", "write_result",
]
__all__ += schema.__all__  # every name of the schema is offered here too

if TYPE_CHECKING:
    import cattrs


@functools.lru_cache(maxsize=1)
def converter() -> cattrs.Converter:
    """The one converter for every stored or sent record (cattrs is imported on first use)."""
    from cattrs.preconf.json import make_converter

    conv = make_converter(forbid_extra_keys=True)
    # strict scalars: cattrs would call str(), int() or float() on whatever a file holds (a list becomes a
    # string, "nan" a float); a stored or sent record has exactly the JSON types it was written with
    for kind, ok in ((str, lambda v: isinstance(v, str)), (bool, lambda v: isinstance(v, bool)),
                     (int, lambda v: isinstance(v, int) and not isinstance(v, bool)),
                     (float, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))):
        conv.register_structure_hook(kind, _strict(kind, ok))
    return conv


def _strict(kind: type, ok: Any) -> Any:
    def structure(value: Any, _: Any) -> Any:
        if not ok(value):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise TypeError(f"expected {'a finite number' if kind is float else kind.__name__}, got {shown}")
        return kind(value)

    return structure


def dumps(record: Any) -> str:
    return json.dumps(converter().unstructure(record), indent=1, sort_keys=False, allow_nan=False) + "\n"


def loads(text: str, cls: type = RunResult, *, where: str = "result") -> Any:
    """A record from JSON text; a :class:`RunResult` goes through :func:`parse_result`, the one result loader."""
    if cls is RunResult:
        return parse_result(text, where)
    from wfbench_core.record.fsutil import parse_json

    return structure(parse_json(text, where, f"a wfbench {cls.__name__}"), cls, where, f"not a wfbench {cls.__name__}")


def structure(data: Any, cls: type, where: str, what: str) -> Any:
    import cattrs

    try:
        return converter().structure(data, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            errors = cattrs.transform_error(exc)
            detail = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
        else:
            detail = str(exc) or type(exc).__name__
        raise WfbenchError(f"{where}: {what} ({detail})") from None


RESULT = "a wfbench result"


def parse_result(data: str | bytes, where: str = "result") -> RunResult:
    """The one result loader: every command that reads a result file reads it through here.

    Whatever the bytes are (binary, not UTF-8, truncated, JSON of another tool, a result with impossible
    values such as unequal or non-positive samples), the answer is a :class:`RunResult` or one line,
    ``WHERE: not a wfbench result (why)`` (see :mod:`wfbench_core.record.result_rules` for what a result must satisfy).
    """
    from wfbench_core.record import result_rules
    from wfbench_core.record.fsutil import decode_text, not_a, parse_json

    text = decode_text(data, where, RESULT, kind="JSON text") if isinstance(data, bytes) else data
    raw = parse_json(text.removeprefix("\ufeff"), where, RESULT)
    if not isinstance(raw, dict):
        raise not_a(where, RESULT, f"a JSON {type(raw).__name__.replace('dict', 'object')}, not an object")
    if raw.get("kind") == "sweep":
        raise not_a(where, RESULT, "a sweep of 'wfbench sweep': sweeps are their own series, never runs; 'wfbench "
                                   "history add' stores them apart and the dashboard draws them")
    if "schema_version" not in raw or "cases" not in raw:
        keys = ", ".join(sorted(map(str, raw))[:5]) or "none"
        raise not_a(where, RESULT, f"no schema_version or cases; its keys: {keys}")
    found = raw["schema_version"]
    if not isinstance(raw["cases"], list):
        raise not_a(where, RESULT, f"'cases' is a JSON {type(raw['cases']).__name__.replace('dict', 'object')}, "
                                   f"not a list")
    while type(found) is int and found in result_rules.UPGRADES:
        raw, found = result_rules.UPGRADES[found](raw), found + 1
    if found != SCHEMA_VERSION:
        raise WfbenchError(f"{where}: a wfbench result of schema version {found!r}; this wfbench reads versions "
                           f"1 to {SCHEMA_VERSION}; use the wfbench version that wrote it")
    result: RunResult = structure(raw, RunResult, where, "not a wfbench result")
    why = result_rules.problem(result)
    if why:
        raise not_a(where, RESULT, why)
    return result


def load_result(path: str | Path) -> RunResult:
    """Read a result file (see :func:`parse_result`)."""
    from wfbench_core.record.fsutil import read_bytes

    return parse_result(read_bytes(path, "a result file"), str(path))


def write_result(result: RunResult, path: str | Path) -> None:
    """Write atomically: a reader never sees half a file."""
    from wfbench_core.record.fsutil import atomic_write

    atomic_write(Path(path), dumps(result))
