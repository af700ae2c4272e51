"""The coverage map as ``wfbench coverage`` prints it (a plain table, then what it found) and as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wfbench_core.compiling.coverage import CoverageMap, FamilyRow

__all__ = ["HEADER", "NONE", "as_json", "render", "supported", "table"]  # internal, not the plugin API

HEADER = ("family", "words used", "cases", "words no case uses")
NONE = "(none)"  # an empty cell ("-" is a word)


def supported(m: CoverageMap, verdicts: Mapping[str, str]) -> set[str]:
    """The families of which the probed warpforthc accepts at least one word."""
    return {r.family.id for r in m.rows if any(verdicts.get(w) == "" for w in r.family.words)}


def _cases_cell(m: CoverageMap, row: FamilyRow, verdicts: Mapping[str, str] | None) -> str:
    if row.cases:
        n = len(m.case_ids)
        return f"all {n}" if len(row.cases) == n > 1 else " ".join(row.cases)
    if row.excuse:
        return f"excused: {row.excuse}"
    if verdicts is not None and row.family.id not in supported(m, verdicts):
        return f"{NONE}: this warpforthc accepts none of its words"
    return NONE


def table(m: CoverageMap, verdicts: Mapping[str, str] | None = None) -> str:
    rows = [HEADER] + [(r.family.title, " ".join(r.used) or NONE, _cases_cell(m, r, verdicts),
                        " ".join(r.unused) or NONE) for r in m.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def render(m: CoverageMap, verdicts: Mapping[str, str] | None = None, binary: str = "") -> str:
    """The table, the tally, the words the reference does not list, and (probed) what ``binary`` rejects."""
    lang = m.language
    families = len(m.rows)
    used = sum(1 for r in m.rows if r.cases)
    excused = sum(1 for r in m.rows if r.excuse and not r.cases)
    keep = None if verdicts is None else supported(m, verdicts)
    uncovered = m.uncovered(keep)
    out = [table(m, verdicts), "",
           f"{len(m.case_ids)} case{'' if len(m.case_ids) == 1 else 's'}; words from WarpForth's {lang.path} at {lang.commit[:7]}: {families} families, "
           f"{used} used by a case, {excused} excused, {len(uncovered)} uncovered"
           + (":" if uncovered else "")]
    out += [f"  {r.family.title}" for r in uncovered]
    if m.unknown:
        ask = "" if verdicts is not None else " (--probe asks a warpforthc whether it knows them)"
        out += ["", f"words the reference at {lang.commit[:7]} does not list{ask}:"]
        for u in m.unknown:
            seen = "" if verdicts is None else "; this warpforthc " + (
                "accepts it" if verdicts.get(u.word) == "" else f"rejects it: {verdicts.get(u.word)}")
            out.append(f"  {u.case_id} {u.line}:{u.column}: {u.word}{seen}")
    if verdicts is not None:
        listed = [w for r in m.rows for w in dict.fromkeys(r.family.words)]
        rejected = {w: verdicts[w] for w in dict.fromkeys(listed) if verdicts.get(w)}
        out += ["", f"warpforthc {binary} accepts {len(set(listed)) - len(rejected)} of {len(set(listed))} "
                    "listed words" + (":" if rejected else "")]
        out += [f"  rejects {w}: {why}" for w, why in rejected.items()]
    return "\n".join(out)


def as_json(m: CoverageMap, verdicts: Mapping[str, str] | None = None, binary: str = "") -> dict[str, Any]:
    keep = None if verdicts is None else supported(m, verdicts)
    families = []
    for r in m.rows:
        entry: dict[str, Any] = {"id": r.family.id, "title": r.family.title, "words": list(r.family.words),
                                 "used": list(r.used), "unused": list(r.unused), "cases": list(r.cases),
                                 "excuse": r.excuse or None, "covered": r.covered}
        if keep is not None and verdicts is not None:
            entry["supported"] = r.family.id in keep
            entry["rejected"] = {w: verdicts[w] for w in r.family.words if verdicts.get(w)}
        families.append(entry)
    unknown = [{"case": u.case_id, "word": u.word, "line": u.line, "column": u.column,
                **({} if verdicts is None else {"accepted": verdicts.get(u.word) == ""})} for u in m.unknown]
    return {
        "language": {"repository": m.language.repository, "commit": m.language.commit, "path": m.language.path},
        "cases": list(m.case_ids), "families": families, "unknown": unknown,
        "uncovered": [r.family.id for r in m.uncovered(keep)],
        "probe": None if verdicts is None else {"warpforthc": binary},
    }
