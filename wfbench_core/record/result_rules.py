"""What a stored result must satisfy beyond its shape, and how a result of an older schema is read.

:func:`wfbench_core.record.results.parse_result`, the one result loader, uses both: it upgrades the JSON of an older
schema (:data:`UPGRADES`), structures it, then asks :func:`problem` whether the figures can be a measurement at
all. A result that no wfbench could have written (unequal, empty, zero, negative or non-finite samples, a gap
that is not positive, placements that do not match the pairs) is refused there, so that no command that reads
it (``export``, ``check``, ``compare``, ``history add`` …) can print a figure made of it. A result whose
summaries contradict its samples, or whose figures its own yardsticks rule out, is refused there too
(:mod:`wfbench_core.record.consistency`).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from wfbench_core.record.status import STATUSES

if TYPE_CHECKING:
    from wfbench_core.record.schema import CaseResult, RunResult, SideStats, Timing

__all__ = ["UPGRADES", "case_problem", "index_problem", "problem"]  # internal, not the plugin API

# how a result of an older schema is read: version -> function that rewrites its JSON to the next version
# (2: Timing.warmup_s, the measured busy time of the warm-up, became warmup_busy_s, apart from the setting;
# 3: the protocol gained ``rotation``, which runs before it did not do: they read as rotation 1;
# 4: the launch floor, the checks of the timed buffers and the IMPLAUSIBLE status, none of which older runs had;
# 5: the runtime-stack tax: stack-addressing instructions in the diagnostics, local traffic in the profiles;
# 6: the library ceiling of a case (CaseResult.ceiling), which older runs did not time)


def _from_1(raw: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: the measured warm-up time is named ``warmup_busy_s``; a protocol from before placements
    and adaptive stopping reads as what it did: one placement, every sample taken."""
    cases = []
    for case in raw["cases"]:
        timing = case.get("timing") if isinstance(case, dict) else None
        if isinstance(timing, dict) and "warmup_s" in timing:
            timing = {("warmup_busy_s" if k == "warmup_s" else k): v for k, v in timing.items()}
            case = {**case, "timing": timing}
        cases.append(case)
    protocol = raw.get("protocol")
    if isinstance(protocol, dict) and "placements" not in protocol:
        before = {"placements": 1, "min_samples": protocol.get("samples", 30), "target_halfwidth": 0.0,
                  "case_budget_s": 0.0}
        raw = {**raw, "protocol": {**before, **protocol}}
    return {**raw, "cases": cases, "schema_version": 2}


def _from_2(raw: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 -> 3: a run from before buffer rotation used one buffer set per placement."""
    protocol = raw.get("protocol")
    if isinstance(protocol, dict) and "rotation" not in protocol:
        raw = {**raw, "protocol": {**protocol, "rotation": 1}}
    return {**raw, "schema_version": 3}


def _from_3(raw: dict[str, Any]) -> dict[str, Any]:
    """Schema 3 -> 4: the fields schema 4 added (launch floor, checks of the timed buffers) read as not measured."""
    return {**raw, "schema_version": 4}


def _from_4(raw: dict[str, Any]) -> dict[str, Any]:
    """Schema 4 -> 5: the stack-tax fields schema 5 added (stack addressing, local traffic) read as not counted."""
    return {**raw, "schema_version": 5}


def _from_5(raw: dict[str, Any]) -> dict[str, Any]:
    """Schema 5 -> 6: a run from before library ceilings has none (``CaseResult.ceiling`` reads as None)."""
    return {**raw, "schema_version": 6}


UPGRADES = {1: _from_1, 2: _from_2, 3: _from_3, 4: _from_4, 5: _from_5}


def _iso_time(value: str) -> bool:
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _positive(values: Iterable[Any]) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in values)


def _side_problem(name: str, side: SideStats) -> str:
    if not side.samples_us:
        return f"no {name} samples"
    if not _positive(side.samples_us):
        bad = next(v for v in side.samples_us if not _positive([v]))
        return f"a {name} sample of {bad!r} us; every sample must be a positive time"
    if not _positive([side.median_us]):
        return f"a {name} median of {side.median_us!r} us"
    return ""


def _timing_problem(t: Timing) -> str:
    for name, side in (("WarpForth", t.warpforth), ("CUDA", t.cuda)):
        why = _side_problem(name, side)
        if why:
            return why
    pairs = len(t.warpforth.samples_us)
    if len(t.cuda.samples_us) != pairs:
        return f"{pairs} WarpForth samples but {len(t.cuda.samples_us)} CUDA samples; they come in pairs"
    if not _positive([t.gap]):
        return f"a gap of {t.gap!r}; times must be positive"
    for field, values in (("placement_of", t.placement_of), ("order", t.order)):
        if values and len(values) != pairs:
            return f"{len(values)} entries in {field} for {pairs} pairs"
    if t.placement_of and min(t.placement_of) < 0:
        return "a negative placement index"
    if not _positive(t.repeat_gaps):
        return f"a repeat gap that is not positive ({', '.join(map(repr, t.repeat_gaps))})"
    return ""


def case_problem(case: CaseResult) -> str:
    """Why a case's figures cannot be a measurement ("" when they can)."""
    if case.status not in STATUSES:
        return f"status {case.status!r}, not one of {', '.join(STATUSES)}"
    c = case.ceiling
    if c is not None:
        from wfbench_core.record.ceiling_record import CEILING_STATUSES

        if c.status not in CEILING_STATUSES:
            return f"a ceiling status {c.status!r}, not one of {', '.join(CEILING_STATUSES)}"
        if c.stats is not None:
            why = _side_problem("ceiling", c.stats)
            if why:
                return why
        if c.ratio is not None and not _positive([c.ratio]):
            return f"a ceiling ratio of {c.ratio!r}; times must be positive"
    if case.timing is not None:
        return _timing_problem(case.timing)
    return ""


def problem(result: RunResult) -> str:
    """Why a structured result cannot be one wfbench wrote ("" when it can)."""
    if not _iso_time(result.created):
        return f"'created' is {result.created!r}, not an ISO 8601 time"
    from wfbench_core.record import consistency

    for case in result.cases:
        why = case_problem(case)
        if why:
            return f"case {case.id!r} has {why}"
    return consistency.problem(result)  # summaries against samples, absurd figures, the run's own yardsticks


def index_problem(index: Any) -> str:
    """Why a history index (``wfbench_core.review.history.Index``, derived from the run files) cannot be trusted ("" when
    it can): a series without points, a point of a run it does not list, or a point no stored run can give."""
    runs = {entry.file for entry in index.runs}
    for series in index.series:
        if not series.points or series.id != series.key.id:
            return f"series {series.id!r} is empty or not named by its key"
        for p in series.points:
            if p.run not in runs:
                return f"a point of series {series.id!r} comes from {p.run!r}, which the index does not list"
            if p.status not in ("ok", "unstable") or p.samples < 1 \
                    or not _positive([p.gap, p.wf.median_us, p.cuda.median_us]):
                return f"a point of series {series.id!r} has figures no stored run gives"
    return ""
