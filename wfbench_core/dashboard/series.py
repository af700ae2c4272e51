"""The series part of the dashboard's data: one entry per series, grouped by platform, with its points, its
signature and the steps of its gap (:mod:`wfbench_core.review.changepoints`)."""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from typing import Any, Optional, Sequence

from wfbench_core.review.history import Point, Series, SeriesKey, git_links, point_order
from wfbench_core.record.results import MODE_AA

KIND_CANONICAL = "canonical"  # paired, one warpforthc: the trend the headline follows
KIND_BASEHEAD = "basehead"  # paired, two labelled warpforthc builds interleaved in one run
KIND_AA = "aa"  # CUDA against itself: the method's floor


def kind_of(key: SeriesKey) -> str:
    if key.mode == MODE_AA:
        return KIND_AA
    return KIND_BASEHEAD if key.compiler_label else KIND_CANONICAL


def _utc(created: str) -> Optional[_dt.datetime]:
    try:
        when = _dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc)


def short_date(created: str) -> str:
    when = _utc(created)
    return when.strftime("%Y-%m-%d %H:%M") if when else created


def x_labels(points: Sequence[Point]) -> list[list[str]]:
    """Chart x labels, two lines each (short commit, run time in UTC), distinct within one chart.

    Minutes first; seconds where two points share commit and minute; a running number where they share
    the second too.
    """
    def at(p: Point, fmt: str) -> str:
        when = _utc(p.created)
        return when.strftime(fmt) if when else p.created

    labels: list[list[str]] = []
    for fmt in ("%m-%d %H:%M", "%m-%d %H:%M:%S"):
        labels = [[p.git_commit[:7], at(p, fmt)] if p.git_commit else [at(p, fmt)] for p in points]
        if len({tuple(x) for x in labels}) == len(labels):
            return labels
    total = Counter(tuple(x) for x in labels)
    seen: Counter[tuple[str, ...]] = Counter()
    out = []
    for x in labels:
        seen[tuple(x)] += 1
        out.append(x[:-1] + [f"{x[-1]} #{seen[tuple(x)]}"] if total[tuple(x)] > 1 else x)
    return out


def _point(p: Point, x: list[str]) -> dict[str, Any]:
    commit_url, run_url = git_links(p)
    return {
        "x": x, "created": p.created, "date": short_date(p.created), "run": p.run, "status": p.status,
        "commit": p.git_commit, "commit_url": commit_url, "run_url": run_url, "label": p.label,
        "warpforthc": p.warpforthc_version,
        "gap": p.gap, "gap_lo": p.gap_lo, "gap_hi": p.gap_hi, "gap_mad": p.gap_mad,
        "wf": p.wf.median_us, "wf_lo": p.wf.lo_us, "wf_hi": p.wf.hi_us, "wf_mad": p.wf.mad_us, "wf_p95": p.wf.p95_us,
        "cuda": p.cuda.median_us, "cuda_lo": p.cuda.lo_us, "cuda_hi": p.cuda.hi_us, "cuda_mad": p.cuda.mad_us,
        "cuda_p95": p.cuda.p95_us, "noise": p.noise, "samples": p.samples,
    }


def _cuda_text(k: SeriesKey) -> str:
    return f"{k.cuda_compiler} {k.cuda_compiler_version} {' '.join(k.cuda_flags)}".rstrip()


def _signature(s: Series) -> list[list[str]]:
    k = s.key
    wfc = sorted({p.warpforthc_version for p in s.points})
    timing = {KIND_AA: "A/A: CUDA against itself (the method's floor)",
              KIND_BASEHEAD: f"base/head: two warpforthc builds interleaved in one run; this is '{k.compiler_label}'",
              KIND_CANONICAL: "paired, interleaved"}[kind_of(k)]
    sig = [
        ["GPU", f"{k.gpu_name} (compute {k.compute_capability})"],
        ["CUDA compiler", _cuda_text(k)],
        ["case", f"{k.case_id} v{k.case_version}, fingerprint {k.fingerprint[:12]}"],
        ["CUDA baseline", f"sha256 {k.cuda_source_sha256[:12]}"],
        ["timing", timing],
        ["warpforthc", ", ".join(wfc) if len(wfc) <= 3
         else f"{len(wfc)} builds, latest {s.points[-1].warpforthc_version}"],
        ["series", s.id],
    ]
    if k.compiler_label:
        sig.insert(5, ["compiler label", k.compiler_label])
    return sig


def platform_facts(k: SeriesKey) -> dict[str, Any]:
    return {"gpu": k.gpu_name, "cc": k.compute_capability, "cuda": _cuda_text(k)}


def group(kind: str, members: Sequence[Series]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One chart group (one platform): the group's entry and its series', those of the newest run first."""
    latest_run = max((p for s in members for p in s.points), key=point_order).run
    newest_version: dict[str, int] = {}
    for s in members:
        newest_version[s.key.case_id] = max(newest_version.get(s.key.case_id, 0), s.key.case_version)
    order = sorted(members, key=lambda s: (not any(p.run == latest_run for p in s.points), s.key.case_id,
                                           -s.key.case_version, s.key.compiler_label, s.id))
    out = []
    for s in order:
        current = any(p.run == latest_run for p in s.points)
        superseded = newest_version[s.key.case_id] if newest_version[s.key.case_id] > s.key.case_version else None
        out.append({
            "id": s.id, "kind": kind, "case": s.key.case_id, "version": s.key.case_version,
            "mode": s.key.mode, "label": s.key.compiler_label, "priority": s.points[-1].priority,
            "current": current, "superseded_by": superseded,
            "signature": _signature(s),
            "points": [_point(p, x) for p, x in zip(s.points, x_labels(s.points))],
            "change_points": change_marks(s),
        })
    return {"kind": kind, **platform_facts(members[0].key), "series": [s.id for s in order]}, out


def change_marks(s: Series) -> list[dict[str, Any]]:
    """The steps of a series' gap (E-divisive, :mod:`wfbench_core.review.changepoints`), each at the index of its first
    point after the step among all the series' points (what the chart draws)."""
    from wfbench_core.review.changepoints import change_points

    where = {p.run: n for n, p in enumerate(s.points)}
    if s.key.mode == MODE_AA:
        return []
    return [{"index": where[cp.run_after], "run_before": cp.run_before, "run_after": cp.run_after,
             "commit_before": cp.commit_before, "commit_after": cp.commit_after, "commits": cp.commits,
             "compare_url": cp.compare_url, "gap_before": cp.gap_before, "gap_after": cp.gap_after,
             "change": cp.change, "p_value": cp.p_value} for cp in change_points(s)]
