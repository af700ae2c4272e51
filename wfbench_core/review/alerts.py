"""Regression alerts: the newest run of each series against that series' own history.

First correctness: a case that is FAILED or ERROR in the run, or missing from it (measured in the previous
run of the same GPU, toolchain and protocol but absent now), is a correctness regression.

For every timed case, the baseline is the last ``window`` *stable* points of the same series measured before
it. A change counts when it exceeds the series' between-run variation, ``max(min_change, k x MAD / median)``
of the baseline (:func:`wfbench_core.record.stats.run_variation`: the spread of the series' own points, one per
run), separately for

* the gap (WarpForth / CUDA): the headline;
* the WarpForth time;
* the CUDA time: it has no WarpForth in it, so when it moves while the gap holds, the host or driver moved
  (environment drift), not the compiler.

A change is not attributed to the compiler when the WarpForth PTX is byte-identical to the baseline's
(``drift``), nor when the run is on a board (GPU UUID) the baseline was not measured on (``board``): boards of
one model differ by several percent on their own.

Verdicts, most severe first: ``failed`` and ``missing`` (correctness), ``regression`` (gap up, or
WarpForth time up while CUDA held), ``drift`` (CUDA time moved with the gap steady, or the gap moved with
the same PTX), ``board`` (the gap moved on a board the series has not seen), ``improvement`` (gap down),
``ok``; and the cases that are not judged: ``unstable`` (the new point itself is noisy), ``insufficient``
(fewer than ``min_points`` stable points before it: no alert yet) and ``new-series`` (no earlier point).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional, Sequence

import attrs

from wfbench_core.record import stats
from wfbench_core.errors import WfbenchError
from wfbench_core.review.history import (
    History, Point, Series, SeriesKey, point_of, point_order, series_key, utc_sortable,
)
from wfbench_core.record.results import ERROR, FAILED, RunResult, load_result

# exit codes of `wfbench check` (documented in docs/history.md)
EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_DRIFT = 4

FAILED_CASE = "failed"
MISSING = "missing"
REGRESSION = "regression"
DRIFT = "drift"
BOARD = "board"
IMPROVEMENT = "improvement"
STEADY = "ok"
UNSTABLE = "unstable"
INSUFFICIENT = "insufficient"
NEW_SERIES = "new-series"
VERDICT_ORDER = (FAILED_CASE, MISSING, REGRESSION, DRIFT, BOARD, IMPROVEMENT, UNSTABLE, INSUFFICIENT, NEW_SERIES,
                 STEADY)
EXIT_OF = {FAILED_CASE: EXIT_REGRESSION, MISSING: EXIT_REGRESSION, REGRESSION: EXIT_REGRESSION,
           DRIFT: EXIT_DRIFT, BOARD: EXIT_DRIFT}


@attrs.frozen
class Rules:
    """Thresholds of ``wfbench check``."""

    min_change: float = 0.05  # never alert on less than this relative change
    mad_k: float = 3.0  # ... nor on less than k x the historical relative MAD
    min_points: int = 5  # stable points a series needs before it can alert
    window: int = 20  # the baseline is the last this many stable points


@attrs.frozen
class Metric:
    """One quantity of one case: the new value against the baseline."""

    value: float
    reference: float  # median of the baseline
    mad: float  # MAD of the baseline values (unscaled)
    threshold: float  # relative change that counts
    change: float  # value / reference - 1

    @property
    def up(self) -> bool:
        return self.change > self.threshold

    @property
    def down(self) -> bool:
        return self.change < -self.threshold

    @property
    def moved(self) -> bool:
        return self.up or self.down


@attrs.frozen
class Finding:
    case_id: str
    case_version: int
    compiler_label: str
    series_id: str
    verdict: str
    message: str
    stable_points: int  # stable points of the series before the new one
    value_gap: Optional[float] = None  # the new point, judged or not (None: the case was not timed)
    value_wf_us: Optional[float] = None
    value_cuda_us: Optional[float] = None
    gap: Optional[Metric] = None
    warpforth: Optional[Metric] = None
    cuda: Optional[Metric] = None


@attrs.frozen
class CheckReport:
    run: str  # the run checked: a file in the history or the path given
    created: str
    rules: Rules
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        codes = {EXIT_OF.get(f.verdict, EXIT_OK) for f in self.findings}
        for code in (EXIT_REGRESSION, EXIT_DRIFT):
            if code in codes:
                return code
        return EXIT_OK


def _metric(value: float, history: Sequence[float], rules: Rules) -> Metric:
    ref = stats.median(history)
    variation = stats.run_variation(history, floor=rules.min_change, k=rules.mad_k, min_runs=1)
    return Metric(value=value, reference=ref, mad=stats.mad(history), threshold=variation.threshold,
                  change=value / ref - 1.0 if ref > 0 else float("inf"))


def judge(series: Series, point: Point, rules: Rules = Rules()) -> Finding:
    """The verdict for ``point`` (a point of ``series``, stored or not) against the points before it."""
    key = series.key
    before = [p for p in series.points if p.run != point.run and point_order(p) < point_order(point)]
    stable = [p for p in before if p.stable][-rules.window:]

    def finding(verdict: str, message: str, **metrics: Metric) -> Finding:
        return Finding(case_id=key.case_id, case_version=key.case_version, compiler_label=key.compiler_label,
                       series_id=series.id, verdict=verdict, message=message, stable_points=len(stable),
                       value_gap=point.gap, value_wf_us=point.wf.median_us, value_cuda_us=point.cuda.median_us,
                       **metrics)

    if not point.stable:
        return finding(UNSTABLE, f"noisy (MAD/median {point.noise:.1%}); not judged, and left out of trends")
    if not before:
        return finding(NEW_SERIES, "first point of a new series; nothing to compare with yet")
    if len(stable) < rules.min_points:
        return finding(INSUFFICIENT, f"{len(stable)} of {rules.min_points} stable points so far; "
                                     f"no alert until the series has {rules.min_points}")
    gap = _metric(point.gap, [p.gap for p in stable], rules)
    wf = _metric(point.wf.median_us, [p.wf.median_us for p in stable], rules)
    cuda = _metric(point.cuda.median_us, [p.cuda.median_us for p in stable], rules)
    metrics = {"gap": gap, "warpforth": wf, "cuda": cuda}

    def pct(m: Metric) -> str:
        return f"{m.change:+.1%} (threshold {m.threshold:.1%})"

    moved = gap.moved or (wf.up and not cuda.moved)
    same_ptx = bool(point.ptx_sha256) and all(p.ptx_sha256 == point.ptx_sha256 for p in stable)
    same_sass = bool(point.sass_sha256) and all(p.sass_sha256 == point.sass_sha256 for p in stable)
    boards = {p.gpu_uuid for p in stable}
    if moved and same_ptx:
        return finding(DRIFT, f"gap {gap.reference:.3f}x -> {gap.value:.3f}x, {pct(gap)}, with the WarpForth PTX "
                              f"byte-identical to the baseline's (sha256 {point.ptx_sha256[:12]}): the environment "
                              f"changed, not the compiler", **metrics)
    if moved and same_sass:
        return finding(DRIFT, f"gap {gap.reference:.3f}x -> {gap.value:.3f}x, {pct(gap)}, with identical SASS "
                              f"(sha256 {point.sass_sha256[:12]}): any difference is noise, not the compiler",
                       **metrics)
    if moved and point.gpu_uuid and "" not in boards and point.gpu_uuid not in boards:
        return finding(BOARD, f"gap {gap.reference:.3f}x -> {gap.value:.3f}x, {pct(gap)}, on a board the baseline "
                              f"was not measured on ({point.gpu_uuid}); boards of one model differ by themselves: "
                              f"not attributed to the compiler; confirm with a base/head run on one board",
                       **metrics)
    if gap.up:
        return finding(REGRESSION, f"gap {gap.reference:.3f}x -> {gap.value:.3f}x, {pct(gap)}", **metrics)
    if wf.up and not cuda.moved:
        return finding(REGRESSION, f"WarpForth time {wf.reference:.2f} -> {wf.value:.2f} us, {pct(wf)}; "
                                   f"CUDA steady ({cuda.change:+.1%})", **metrics)
    if cuda.moved:
        return finding(DRIFT, f"CUDA time {cuda.reference:.2f} -> {cuda.value:.2f} us, {pct(cuda)}, with the gap "
                              f"steady ({_signed(gap.change)}): the host or driver changed, not the compiler",
                       **metrics)
    if gap.down:
        return finding(IMPROVEMENT, f"gap {gap.reference:.3f}x -> {gap.value:.3f}x, {pct(gap)}", **metrics)
    return finding(STEADY, f"gap {gap.value:.3f}x, {gap.change:+.1%} against {gap.reference:.3f}x "
                           f"(threshold {gap.threshold:.1%})", **metrics)


def _untimed(key: SeriesKey, verdict: str, message: str, stable: int = 0, sid: str = "") -> Finding:
    return Finding(case_id=key.case_id, case_version=key.case_version, compiler_label=key.compiler_label,
                   series_id=sid or key.id, verdict=verdict, message=message, stable_points=stable)


def missing_cases(history: History, keys: Iterable[SeriesKey], created: str, run_file: str) -> list[Finding]:
    """Cases measured in the previous run of the same platform (GPU, toolchain, mode, label, protocol) that the
    run being checked does not have at all."""
    present: dict[tuple[str, ...], set[str]] = {}
    for k in keys:
        present.setdefault(k.platform, set()).add(k.case_id)
    now = utc_sortable(created)
    out = []
    for platform, ids in present.items():
        members = [s for s in history.series.values() if s.key.platform == platform]
        earlier = [(point_order(p), p.run) for s in members for p in s.points
                   if p.run != run_file and utc_sortable(p.created) < now]
        if not earlier:
            continue
        previous = max(earlier)[1]
        for s in members:
            if s.key.case_id in ids or not any(p.run == previous for p in s.points):
                continue
            out.append(_untimed(s.key, MISSING, f"measured in the previous run ({previous}) of this GPU and "
                                                f"suite, absent from this one; a case that no longer runs is a "
                                                f"correctness regression (if it was removed on purpose, this "
                                                f"clears with the next run)",
                                sum(1 for p in s.points if p.stable), s.id))
    return out


def check(history: History, result: Optional[RunResult] = None, *, run_name: str = "",
          rules: Rules = Rules()) -> CheckReport:
    """Judge every case of ``result`` (default: the newest run in ``history``) against its series."""
    notes: list[str] = []
    findings: list[Finding] = []
    if result is None:
        newest = history.newest_run()
        if newest is None:
            raise WfbenchError(f"{history.root}: the history has no runs yet; add one with 'wfbench history add'")
        pairs = history.points_of_run(newest.file)
        run_name, created = newest.file, newest.created
        keys = [s.key for s, _ in pairs]
    else:
        if not result.cases:
            raise WfbenchError(f"{run_name or 'result'}: the run has no cases; nothing to check (was it cut short?)")
        stored = _stored_as(history, result)
        name = stored or run_name or "result"
        pairs = []
        keys = []
        for case in result.cases:
            key = series_key(result, case)
            keys.append(key)
            series = history.series.get(key.id) or Series(key.id, key, ())
            if case.status in (FAILED, ERROR) or not case.timed:
                findings.append(_untimed(key, FAILED_CASE, f"{case.status.upper()}: {case.message or 'not timed'}",
                                         len(series.stable_points)))
                continue
            point = point_of(result, case, name)
            if stored is None or not any(p.run == name for p in series.points):
                series = attrs.evolve(series, points=tuple(sorted(series.points + (point,), key=point_order)))
            pairs.append((series, point))
        run_name, created = name, result.created
        if not result.complete:
            notes.append(f"an incomplete run: {len(result.cases)} cases finished before it stopped")
    findings += [judge(series, point, rules) for series, point in pairs]
    findings += missing_cases(history, keys, created, run_name)
    findings.sort(key=lambda f: (VERDICT_ORDER.index(f.verdict), f.case_id, f.compiler_label))
    return CheckReport(run=run_name, created=created, rules=rules, findings=tuple(findings), notes=tuple(notes))


def _stored_as(history: History, result: RunResult) -> Optional[str]:
    """The history file holding ``result`` if it was already added (then it is not counted twice)."""
    for entry in history.runs.values():
        if entry.created == result.created and entry.gpu_name == result.environment.gpu_name \
                and entry.mode == result.mode:
            return entry.file
    return None


# --------------------------------------------------------------------------------------------------------
# rendering

_MARK = {FAILED_CASE: "FAILED", MISSING: "MISSING", REGRESSION: "REGRESSION", DRIFT: "drift",
         BOARD: "other board", IMPROVEMENT: "improved", STEADY: "ok", UNSTABLE: "unstable",
         INSUFFICIENT: "too few points", NEW_SERIES: "new series"}
_SEVERE = {_MARK[v] for v in (FAILED_CASE, MISSING, REGRESSION)}


def _signed(change: float) -> str:
    text = f"{change:+.1%}"
    return "+0.0%" if text == "-0.0%" else text


def _cells(f: Finding) -> list[str]:
    def m(x: Optional[Metric], value: Optional[float], fmt: str) -> str:
        if value is None:
            return "-"
        return format(value, fmt) if x is None else f"{format(x.value, fmt)} ({_signed(x.change)})"

    name = f"{f.case_id} v{f.case_version}" + (f" [{f.compiler_label}]" if f.compiler_label else "")
    thr = f"{f.gap.threshold:.1%}" if f.gap else "-"
    return [name, _MARK[f.verdict], m(f.gap, f.value_gap, ".3f"), m(f.warpforth, f.value_wf_us, ".2f"),
            m(f.cuda, f.value_cuda_us, ".2f"), thr,
            str(f.stable_points)]


HEADER = ["case", "verdict", "gap", "WF us", "CUDA us", "gap thr", "history"]


def summary_line(report: CheckReport) -> str:
    counts: dict[str, int] = {}
    for f in report.findings:
        counts[f.verdict] = counts.get(f.verdict, 0) + 1
    parts = [f"{n} {_MARK[v]}" for v, n in sorted(counts.items(), key=lambda kv: VERDICT_ORDER.index(kv[0]))]
    return f"{report.run} ({report.created}): " + ", ".join(parts) + f"; exit {report.exit_code}"


def render_text(report: CheckReport) -> str:
    from wfbench_core.review.report import render_table

    rows = [HEADER] + [_cells(f) for f in report.findings]
    lines = [render_table(rows), ""]
    lines += [f"  {f.case_id}{' [' + f.compiler_label + ']' if f.compiler_label else ''}: {f.message}"
              for f in report.findings]
    r = report.rules
    lines += [f"note: {n}" for n in report.notes]
    lines += ["", f"thresholds: the run-to-run variation, max({r.min_change:.0%}, {r.mad_k:g} x historical MAD) "
                  f"over the last {r.window} stable points; alerts need {r.min_points}", summary_line(report)]
    return "\n".join(lines)


def render_markdown(report: CheckReport) -> str:
    rows = [HEADER] + [_cells(f) for f in report.findings]
    out = [f"### wfbench check: `{report.run}`", "",
           "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    for row in rows[1:]:
        if row[1] in _SEVERE:
            row = [row[0], f"**{row[1]}**"] + row[2:]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out += [f"- **{f.case_id}**: {f.message}" for f in report.findings if f.verdict != STEADY]
    out += [f"- note: {n}" for n in report.notes]
    r = report.rules
    out += ["", f"Thresholds: the run-to-run variation, max({r.min_change:.0%}, {r.mad_k:g} x historical MAD) over "
                f"the last {r.window} stable points; a series alerts once it has {r.min_points}. "
                f"Exit code {report.exit_code}."]
    return "\n".join(out) + "\n"


def load_for_check(history_dir: Path, run_path: Optional[Path]) -> tuple[History, Optional[RunResult]]:
    run = load_result(run_path) if run_path is not None else None  # a bad file is reported before anything else
    return History.open(history_dir, must_exist=run_path is None), run
