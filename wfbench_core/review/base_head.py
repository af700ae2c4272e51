"""One compiler of a base/head run, as a run of that compiler alone.

A base/head run times two warpforthc builds against the same CUDA samples; its cases carry the compiler's
label (``base``, ``head``), so they form series of their own. CI judges a change by the base/head run and
keeps the *head* gaps in the history's ordinary series: :func:`one_compiler` is that view.
"""

from __future__ import annotations

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import RunResult

__all__ = ["labels", "one_compiler"]  # internal, not the plugin API


def labels(result: RunResult) -> list[str]:
    """The compiler labels of a base/head run (empty for a run of one compiler)."""
    return sorted({c.compiler_label for c in result.cases} - {""})


def one_compiler(result: RunResult, label: str, *, where: str = "result") -> RunResult:
    """``label``'s cases as a run of that compiler alone; a run of one compiler is returned as it is."""
    found = labels(result)
    if not found:
        return result
    if label not in found:
        raise WfbenchError(f"{where}: no compiler label {label!r} (labels: {', '.join(found)})")
    cases = tuple(attrs.evolve(c, compiler_label="") for c in result.cases if c.compiler_label == label)
    return attrs.evolve(result, cases=cases, warpforthc=result.compilers.get(label, result.warpforthc), compilers={})
