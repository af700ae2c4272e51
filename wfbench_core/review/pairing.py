"""Which results of a case can be compared, and what a case that failed on one side alone says.

A base/head pair (or two runs' results) of one case is compared when both were timed under the same case
definition and timing mode. When only one side failed (FAILED, IMPLAUSIBLE or ERROR) while the other was timed,
that is itself the finding, not a gap to leave out: a head that breaks a case is **BROKEN**, the worst
regression there is; a base that fails alone is **BASE BROKEN** (the head repaired it, or the base was already
broken), reported with the base's message and never counted as a regression.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from wfbench_core.record.results import FAILING, CaseResult

__all__ = ["T", "failed_alone", "matched", "refusal"]  # internal, not the plugin API

T = TypeVar("T")
HEAD, BASE = "head", "base"


def refusal(b: CaseResult, h: CaseResult) -> str:
    """Why two results of a case cannot be compared ("" when they can)."""
    if b.version != h.version or b.fingerprint != h.fingerprint:
        return (f"different case definitions (v{b.version} {b.fingerprint[:12]} vs v{h.version} {h.fingerprint[:12]}); "
                f"only the same fingerprint is comparable")
    if b.mode != h.mode:
        return f"different timing modes ({b.mode} vs {h.mode})"
    if not (b.timed and h.timed):
        bad = ", ".join(f"{side} {c.status}" for side, c in (("base", b), ("head", h)) if not c.timed)
        return f"not timed ({bad})"
    return ""


def failed_alone(b: CaseResult, h: CaseResult) -> str:
    """``head`` when the head failed and the base was timed, ``base`` for the reverse, else ""."""
    if b.timed and h.status in FAILING:
        return HEAD
    if h.timed and b.status in FAILING:
        return BASE
    return ""


def matched(bmap: dict[str, CaseResult], hmap: dict[str, CaseResult], missing: str, make: Callable[..., T]
            ) -> tuple[list[tuple[CaseResult, CaseResult]], list[T]]:
    """The pairs to compare, and for each case that cannot be (missing, refused, failed alone) ``make`` called
    with the fields of a comparison that was not made (:class:`wfbench_core.review.compare.CaseComparison`)."""
    pairs: list[tuple[CaseResult, CaseResult]] = []
    skipped: list[T] = []
    for cid in sorted(set(bmap) | set(hmap)):
        if cid not in bmap or cid not in hmap:
            c = bmap.get(cid) or hmap[cid]
            side = "head" if cid not in hmap else "base"
            skipped.append(make(case_id=cid, version=c.version, compared=False,
                                          reason=missing.format(side=side)))
            continue
        b, h = bmap[cid], hmap[cid]
        why = refusal(b, h)
        alone = failed_alone(b, h) if why.startswith("not timed") else ""
        if alone:
            bad = h if alone == HEAD else b
            why = f"{alone} {bad.status.upper()}: {bad.message or 'no message'}"
        if why:
            skipped.append(make(case_id=cid, version=b.version, compared=False, reason=why,
                                          base_status=b.status, head_status=h.status, broken=alone))
        else:
            pairs.append((b, h))
    return pairs, skipped
