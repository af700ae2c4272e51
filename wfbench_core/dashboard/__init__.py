"""The static dashboard: one HTML page, its script and style, and the vendored Chart.js.

Everything the page shows is embedded in it as JSON, so it works from ``file://`` with no network and no
server. It leads with ONE headline: the newest geometric-mean gap of the canonical series (paired, one
warpforthc) of the headline GPU, with the case set it is taken over named, and the per-case gaps of that run.
Other GPUs, base/head runs (two labelled warpforthc builds in one run) and the A/A floor (CUDA against itself)
follow, each named as what it is. Then one chart group per series (never a mixed one): gap, WarpForth time
and CUDA time over the runs, with the 5th-95th percentile band of the samples, unstable points marked,
commit and CI-run links, and the series' signature. Last, apart from every series, the newest size sweep of each
case (:mod:`wfbench_core.dashboard.sweeps`).
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections import Counter
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from wfbench_core import __version__
from wfbench_core.dashboard.browser import BROWSER_ENV, BROWSER_NAMES, find_browser, screenshot
from wfbench_core.dashboard.models import ceiling_rows, gpu_matrix
from wfbench_core.dashboard.newest_run import diagnostics
from wfbench_core.dashboard.steps import change_marks
from wfbench_core.dashboard.sweeps import sweep_cards
from wfbench_core.errors import WfbenchError
from wfbench_core.record.fsutil import atomic_write
from wfbench_core.record.results import MODE_AA
from wfbench_core.review.evidence import aa_run_floor, board_aa_floor
from wfbench_core.review.history import History, git_links, point_order, utc_sortable
from wfbench_core.review.series import STABLE, Point, Series, SeriesKey

__all__ = [  # internal: the names the rest of wfbench uses (README: Layout)
    "BROWSER_ENV", "BROWSER_NAMES", "build_data", "build_site", "diagnostics", "find_browser", "render_page",
    "screenshot", "x_labels",
]

ASSETS = ("chart.umd.js", "LICENSE-chart.js.md", "app.js", "style.css")


KIND_CANONICAL = "canonical"  # paired, one warpforthc: the trend the headline follows
KIND_BASEHEAD = "basehead"  # paired, two labelled warpforthc builds interleaved in one run
KIND_AA = "aa"  # CUDA against itself: the method's floor


def kind_of(key: SeriesKey) -> str:
    if key.mode == MODE_AA:
        return KIND_AA
    return KIND_BASEHEAD if key.compiler_label else KIND_CANONICAL


def _utc(created: str) -> _dt.datetime | None:
    try:
        when = _dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc)


def _short(created: str) -> str:
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
        "x": x, "created": p.created, "date": _short(p.created), "run": p.run, "status": p.status,
        "stable": p.stable,  # counted in trends: stable, and not left out as throttled, depressed or launch-bound
        "standing": p.standing[0], "why": p.standing[1],
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


def _by_run(members: Sequence[Series]) -> dict[str, list[tuple[Series, Point]]]:
    """The points of a group of series, per run file, oldest run first."""
    runs: dict[str, list[tuple[Series, Point]]] = {}
    for s in members:
        for p in s.points:
            runs.setdefault(p.run, []).append((s, p))
    return dict(sorted(runs.items(), key=lambda kv: point_order(kv[1][0][1])))


def _verdict_cells(v: Any | None) -> dict[str, Any]:
    """The Δ cell of a judged change (a wfbench_core.review.verdicts.Verdict): the change, the verdict and its label."""
    if v is None:
        return {"change": None, "verdict": None, "verdict_label": None}
    return {"change": v.change, "verdict": v.verdict, "verdict_label": v.label}


def _case_rows(entries: Sequence[tuple[Series, Point]], history: History | None = None) -> list[dict[str, Any]]:
    """One row per case of one run; with ``history``, its change against the series' reference and the verdict,
    by the rule ``wfbench check`` applies."""
    from wfbench_core.review.alerts import verdict_of

    rows = []
    for s, p in entries:
        v = verdict_of(s, p, history)[0] if history is not None and p.stable else None
        rows.append({
            "series": s.id, "case": s.key.case_id, "version": s.key.case_version, "label": s.key.compiler_label,
            "priority": p.priority, "gap": p.gap, "gap_lo": p.gap_lo, "gap_hi": p.gap_hi, "wf": p.wf.median_us,
            "cuda": p.cuda.median_us, "noise": p.noise, "status": p.status, "warpforthc": p.warpforthc_version,
            "standing": p.standing[0], "why": p.standing[1],  # the one word every view shows, and why
            **_verdict_cells(v),
        })
    rows.sort(key=lambda r: (r["priority"], r["case"], r["version"], r["label"]))
    return rows


def geomean_set(rows: Sequence[dict[str, Any]]) -> tuple[float | None, list[str]]:
    """The headline statistic of one run: the geometric mean of its P0 gaps, and that case set.

    The mean is withheld (None) unless every P0 case of the run is stable: an unstable member never
    shrinks the set silently. A run without some P0 case has a smaller set, and a mean over another set is
    never compared with this one.
    """
    from wfbench_core.stats import SetMember, suite_geomean

    p0 = sorted((r for r in rows if r["priority"] == "P0"), key=lambda r: (r["case"], r["version"]))
    names = [f"{r['case']} v{r['version']}" for r in p0]
    suite = suite_geomean([SetMember(r["case"], r["version"], r["gap"], r["standing"] == STABLE) for r in p0])
    return (suite.value if suite else None), names


def _run_facts(p: Point) -> dict[str, Any]:
    commit_url, run_url = git_links(p)
    return {"run": p.run, "created": p.created, "date": _short(p.created), "commit": p.git_commit,
            "commit_url": commit_url, "run_url": run_url, "warpforthc": p.warpforthc_version}


def _platform_facts(k: SeriesKey) -> dict[str, Any]:
    return {"gpu": k.gpu_name, "cc": k.compute_capability, "cuda": _cuda_text(k)}


def _canonical_summary(members: Sequence[Series], history: History | None = None) -> dict[str, Any]:
    """A canonical platform's newest run: per-case gaps, the geomean and its case set, and its trend."""
    runs = _by_run(members)
    order = list(runs)
    latest = order[-1]
    rows = _case_rows(runs[latest], history)
    g, case_set = geomean_set(rows)
    anchors = [runs[r][0][1] for r in order]
    labels = x_labels(anchors)
    trend, previous = [], None
    for run, anchor, x in zip(order, anchors, labels):
        g_r, set_r = (g, case_set) if run == latest else geomean_set(_case_rows(runs[run]))
        trend.append({"x": x, "geomean": g_r, "cases": len(set_r), "same_set": set_r == case_set,
                      **_run_facts(anchor)})
        if run != latest and set_r == case_set and g_r is not None:
            previous = trend[-1]
    missing: list[str] = []
    if len(order) > 1:
        here = {r["case"] for r in rows}
        missing = sorted({s.key.case_id for s, p in runs[order[-2]] if p.priority == "P0"} - here)
    return {
        **_platform_facts(members[0].key), **_run_facts(anchors[-1]),
        "geomean": g, "case_set": case_set,
        "left_out": [f"{r['case']} v{r['version']}" for r in rows if r["priority"] == "P0" and r["standing"] != STABLE],
        "missing": missing,
        "previous": None if previous is None or g is None else {**previous, "change": g / previous["geomean"] - 1.0},
        "trend": trend, "cases": rows,
    }


def _judged(history: History | None, run: str) -> dict[str, Any]:
    """The verdict on each case of a stored base/head run, by ``wfbench compare``'s rule ({} when not one)."""
    from wfbench_core.review.compare import compare_labels

    if history is None:
        return {}
    try:
        cmp = compare_labels(history.load_run(run), name=run)
    except WfbenchError:
        return {}
    return {c.case_id: c.verdict for c in cmp.cases if c.verdict is not None}


def _comparisons(members: Sequence[Series], history: History | None = None) -> list[dict[str, Any]]:
    """Base/head runs of one platform, newest first: the labelled builds side by side, case by case, with the
    verdict on each head against its base."""
    out = []
    for run, entries in reversed(_by_run(members).items()):
        judged = _judged(history, run)
        labels = sorted({s.key.compiler_label for s, _ in entries}, key=lambda lb: (lb != "base", lb != "head", lb))
        builds = {s.key.compiler_label: p.warpforthc_version for s, p in entries}
        case_rows = _case_rows(entries)
        by_case: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
        for r in case_rows:
            by_case.setdefault((r["case"], r["version"]), {})[r["label"]] = r
        rows = []
        for (case, version), per in sorted(by_case.items(), key=lambda kv: (min(r["priority"] for r in kv[1].values()),
                                                                             kv[0])):
            base, head = per.get("base"), per.get("head")
            rows.append({
                "case": case, "version": version, "priority": min(r["priority"] for r in per.values()),
                "gaps": {lb: r["gap"] for lb, r in per.items()}, "status": {lb: r["status"] for lb, r in per.items()},
                "standing": {lb: r["standing"] for lb, r in per.items()}, "why": {lb: r["why"] for lb, r in per.items()},
                "series": {lb: r["series"] for lb, r in per.items()},
                **_verdict_cells(judged.get(case)),
                "change": (head["gap"] / base["gap"] - 1.0) if base and head else None,
            })
        per_label = {lb: geomean_set([r for r in case_rows if r["label"] == lb]) for lb in labels}
        sets = {tuple(names) for _, names in per_label.values()}
        out.append({
            **_platform_facts(entries[0][0].key), **_run_facts(entries[0][1]),
            "labels": labels, "builds": builds, "rows": rows,
            # one case set for every build, or None: means over different sets are not set side by side
            "case_set": list(next(iter(sets))) if len(sets) == 1 else None,
            "geomeans": {lb: g if len(sets) == 1 else None for lb, (g, _) in per_label.items()},
        })
    return out


def _floor(members: Sequence[Series]) -> dict[str, Any]:
    """The newest A/A run of one platform: how far from 1.000x the method reads a kernel against itself."""
    runs = _by_run(members)
    entries = runs[list(runs)[-1]]
    rows = _case_rows(entries)
    return {**_platform_facts(entries[0][0].key), **_run_facts(entries[0][1]), "rows": rows,
            "spread": aa_run_floor([p for _, p in entries])}


# --------------------------------------------------------------------------------------------------------
# the page's data


def _series_groups(grouped: Sequence[tuple[str, Sequence[Series]]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(groups, series) of the page: per platform group, its series in order (those of the group's newest run
    first), each with its signature and points."""
    groups, out_series = [], []
    for kind, group_members in grouped:
        latest_run = max((p for s in group_members for p in s.points), key=point_order).run
        newest_version: dict[str, int] = {}
        for s in group_members:
            newest_version[s.key.case_id] = max(newest_version.get(s.key.case_id, 0), s.key.case_version)
        order = sorted(group_members, key=lambda s: (not any(p.run == latest_run for p in s.points), s.key.case_id,
                                                     -s.key.case_version, s.key.compiler_label, s.id))
        groups.append({"kind": kind, **_platform_facts(group_members[0].key), "series": [s.id for s in order]})
        for s in order:
            current = any(p.run == latest_run for p in s.points)
            superseded = newest_version[s.key.case_id] if newest_version[s.key.case_id] > s.key.case_version else None
            out_series.append({
                "id": s.id, "kind": kind, "case": s.key.case_id, "version": s.key.case_version,
                "mode": s.key.mode, "label": s.key.compiler_label, "priority": s.points[-1].priority,
                "current": current, "superseded_by": superseded,
                "signature": _signature(s),
                "change_points": change_marks(s),
                "points": [_point(p, x) for p, x in zip(s.points, x_labels(s.points))],
            })
    return groups, out_series


def _board_floor(history: History, members: Sequence[Series], run: str) -> float | None:
    """The A/A floor of the board ``run`` was timed on, as ``wfbench check`` takes it for its margin; None when
    that board has no A/A run (another board's floor is not this one's)."""
    for s in members:
        for p in s.points:
            if p.run == run:
                floor, _ = board_aa_floor(history, s.key, p.gpu_uuid)
                if floor is not None:
                    return floor
    return None


def _headline_first(canonical: list[list[Series]], headline_gpu: str | None, root: Path) -> list[list[Series]]:
    """The canonical platforms with the one of ``headline_gpu`` first (when named)."""
    if headline_gpu is None:
        return canonical
    chosen = [m for m in canonical if m[0].key.gpu_name == headline_gpu]
    if not chosen:
        gpus = sorted({m[0].key.gpu_name for m in canonical})
        raise WfbenchError(f"--headline-gpu {headline_gpu!r}: no canonical (paired, unlabelled) series on that "
                           f"GPU in {root}; GPUs there: {', '.join(gpus) or 'none'}")
    return chosen[:1] + [m for m in canonical if m is not chosen[0]]


def build_data(history: History, *, title: str = "WarpForth vs CUDA",
               headline_gpu: str | None = None) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-able data.

    ``headline_gpu`` (an NVML name as results record it, e.g. ``NVIDIA H200``) picks the GPU whose canonical
    series the headline follows; by default, the GPU of the newest canonical run.
    """
    platforms: dict[tuple[str, ...], list[Series]] = {}
    for s in history.series.values():
        platforms.setdefault(s.key.platform, []).append(s)

    def newest(members: Sequence[Series]) -> tuple[str, str]:
        return max(point_order(p) for s in members for p in s.points)

    canonical = _headline_first(sorted((m for m in platforms.values() if kind_of(m[0].key) == KIND_CANONICAL),
                                       key=newest, reverse=True), headline_gpu, history.root)
    summaries = [_canonical_summary(m, history) for m in canonical]
    headline = summaries[0] if summaries else None
    if headline is not None:
        try:
            raw = json.loads((history.root / headline["run"]).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = {}
        headline["diagnostics"] = diagnostics(raw if isinstance(raw, dict) else {}, headline["cases"])
        headline["ceilings"] = ceiling_rows(raw)  # their own section: never in the headline's gap or geomean

    basehead: dict[tuple[str, ...], list[Series]] = {}
    for m in platforms.values():
        if kind_of(m[0].key) == KIND_BASEHEAD:
            basehead.setdefault(m[0].key.platform[:-1], []).extend(m)
    comparisons = sorted((c for m in basehead.values() for c in _comparisons(m, history)),
                         key=lambda c: utc_sortable(c["created"]), reverse=True)
    aa = sorted((m for m in platforms.values() if kind_of(m[0].key) == KIND_AA), key=newest, reverse=True)
    floors = [_floor(m) for m in aa]
    if headline is not None:
        headline["floor"] = _board_floor(history, canonical[0], headline["run"])

    # the series, one group per platform: canonical (headline first), base/head, A/A
    groups, out_series = _series_groups([(KIND_CANONICAL, m) for m in canonical]
                                        + [(KIND_BASEHEAD, m) for m in basehead.values()] + [(KIND_AA, m) for m in aa])
    sweeps, sweep_problems = sweep_cards(history.root)  # sweeps/: their own section, never a series
    return {
        "title": title,
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "wfbench_version": __version__,
        "runs": len(history.runs),
        "problems": [str(p) for p in history.problems] + sweep_problems,
        "headline": headline,
        "other_gpus": summaries[1:],
        "models": gpu_matrix(summaries),
        "comparisons": comparisons,
        "floors": floors,
        "groups": groups,
        "series": out_series,
        "sweeps": sweeps,
    }


def _embed(data: dict[str, Any]) -> str:
    text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    # inside <script>: no "</" (ends the element) and no "<!--"
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def render_page(data: dict[str, Any]) -> str:
    template = resources.files(__package__).joinpath("template.html").read_text(encoding="utf-8")
    return (template.replace("{{title}}", html.escape(data["title"]))
            .replace("{{data}}", _embed(data)))


def build_site(history: History, out: str | Path, *, title: str | None = None,
               headline_gpu: str | None = None) -> Path:
    """Write the site into ``out`` (created if needed); returns the path of index.html."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise WfbenchError(f"{out}: exists and is not a directory; --out takes the site directory")
    data = build_data(history, title=title or "WarpForth vs CUDA", headline_gpu=headline_gpu)
    out.mkdir(parents=True, exist_ok=True)
    pkg = resources.files(__package__)
    for name in ASSETS:  # written like every file wfbench writes: an error names the file in the site
        atomic_write(out / name, pkg.joinpath(name).read_bytes())
    index = out / "index.html"
    atomic_write(index, render_page(data))
    return index
