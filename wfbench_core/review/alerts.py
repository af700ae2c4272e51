"""Regression alerts: the newest run of each series against that series' own history, by the one rule of
:mod:`wfbench_core.review.verdicts`.

First correctness: a case that is FAILED or ERROR in the run, or missing from it (measured in the previous
run of the same GPU, toolchain and protocol but absent now), is a correctness regression.

Then every timed case's gap is judged against the **reference**: the stable points, among the last
``window`` of its series, that timed the same WarpForth code as the newest of them (the level of today's
compiler output). The change is the new gap over the reference's geometric mean, and its 95 % interval
carries what a run on a board, in a process, varies by: the series family's variance components
(:func:`wfbench_core.review.evidence.change_against_reference`; measured from the boards, processes, base/head and
``--repeat`` runs it has seen, stated defaults until it has enough). A run on a board the reference was not
measured on gets the board's own effect in its interval, so a regression beyond what boards differ by is
still SLOWER; ``other board`` is only a qualifier. Identical code is SAME by rule (``moved`` when the gap moved
anyway: the environment changed); a changed CUDA side is ``baseline changed``. Not judged: ``unstable``
(the new point itself is noisy or throttled), ``new-series`` (no earlier point) and ``insufficient`` (fewer
than ``min_points`` stable points before it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import ERROR, FAILED, RunResult, load_result
from wfbench_core.review import evidence, verdicts
from wfbench_core.review.changepoints import ChangePoint, new_change_points
from wfbench_core.review.history import History, point_order, utc_sortable
from wfbench_core.review.series import Point, Series, SeriesKey, point_of, series_key

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "EXIT_DRIFT", "EXIT_OK", "EXIT_REGRESSION", "FAILED_CASE", "HEADER", "INSUFFICIENT", "MISSING", "NEW_SERIES",
    "UNSTABLE", "VERDICT_ORDER", "CheckReport", "Finding", "Rules", "check", "judge", "load_for_check", "mark",
    "missing_cases", "reference_points", "render_markdown", "render_text", "summary_line", "verdict_of",
]

# exit codes of `wfbench check` (documented in docs/history.md)
EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_DRIFT = 4

FAILED_CASE = "failed"
MISSING = "missing"
UNSTABLE = "unstable"
INSUFFICIENT = "insufficient"
NEW_SERIES = "new-series"
VERDICT_ORDER = (FAILED_CASE, MISSING, verdicts.SLOWER, verdicts.BASELINE_CHANGED, verdicts.FASTER,
                 verdicts.AMBIGUOUS, UNSTABLE, INSUFFICIENT, NEW_SERIES, verdicts.SAME)


@attrs.frozen
class Rules:
    """Settings of ``wfbench check``."""

    margin: float = verdicts.DEFAULT_MARGIN  # the stated default; a wider A/A floor on the board replaces it
    min_effect: float | None = None  # SLOWER / FASTER need the interval beyond this (default: the margin)
    min_points: int = 1  # stable points a series needs before it is judged
    window: int = 20  # the reference is drawn from the last this many stable points


@attrs.frozen
class Finding:
    case_id: str
    case_version: int
    compiler_label: str
    series_id: str
    verdict: str  # a verdict of wfbench_core.review.verdicts, or failed / missing / unstable / insufficient / new-series
    message: str
    stable_points: int  # stable points of the series before the new one
    value_gap: float | None = None  # the new point, judged or not (None: the case was not timed)
    value_wf_us: float | None = None
    value_cuda_us: float | None = None
    reference_gap: float | None = None  # geometric mean of the reference points
    reference_runs: int = 0
    judged: verdicts.Verdict | None = None

    @property
    def exit_code(self) -> int:
        if self.verdict in (FAILED_CASE, MISSING, verdicts.SLOWER):
            return EXIT_REGRESSION
        if self.verdict == verdicts.BASELINE_CHANGED or (self.judged is not None and self.judged.moved):
            return EXIT_DRIFT
        return EXIT_OK


@attrs.frozen
class CheckReport:
    run: str  # the run checked: a file in the history or the path given
    created: str
    rules: Rules
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()
    # steps in a series that this run brings (E-divisive, wfbench_core.review.changepoints); reported, not an exit code
    change_points: tuple[ChangePoint, ...] = ()

    @property
    def exit_code(self) -> int:
        codes = {f.exit_code for f in self.findings}
        for code in (EXIT_REGRESSION, EXIT_DRIFT):
            if code in codes:
                return code
        return EXIT_OK


def reference_points(series: Series, point: Point, rules: Rules = Rules()) -> tuple[list[Point], list[Point]]:
    """(the stable points before ``point`` within the window, the reference among them: those of the newest
    one's WarpForth and CUDA code)."""
    before = [p for p in series.points if p.run != point.run and point_order(p) < point_order(point)]
    stable = [p for p in before if p.stable][-rules.window:]
    if not stable:
        return stable, []
    newest = stable[-1]
    if not newest.code:
        return stable, [newest]
    return stable, [p for p in stable if p.code == newest.code and p.cuda_code == newest.cuda_code]


def verdict_of(series: Series, point: Point, history: History | None, rules: Rules = Rules()
               ) -> tuple[verdicts.Verdict | None, list[Point]]:
    """The verdict on ``point`` against its reference (None when there is none), and the reference."""
    _, ref = reference_points(series, point, rules)
    if not ref or point.gap <= 0:
        return None, ref
    boards = [p.gpu_uuid for p in ref]
    value = math.log(point.gap) - sum(math.log(p.gap) for p in ref) / len(ref)
    comps = evidence.components(evidence.family_points(history, series.key, skip_runs=(point.run,)),
                                gpu_name=series.key.gpu_name,
                                one_placement=any(p.placements < 2 for p in ref + [point]))
    where = "of the same code" if point.code and point.code == ref[-1].code else "of the reference code"
    est = evidence.change_against_reference(value, comps, reference_boards=boards, board=point.gpu_uuid,
                                         basis=f"{len(ref)} reference run(s) {where} on {len(set(boards))} "
                                               f"board(s); {comps.new_board.basis}")
    floor, aa_where = evidence.board_aa_floor(history, series.key, point.gpu_uuid)
    margin = verdicts.margin_of(floor, aa_where, default=rules.margin, min_effect=rules.min_effect)
    quals = []
    if not point.gpu_uuid or point.gpu_uuid not in boards:
        quals.append(verdicts.OTHER_BOARD if point.gpu_uuid else verdicts.UNKNOWN_BOARD)
    cuda_changed = bool(point.cuda_code and ref[-1].cuda_code and point.cuda_code != ref[-1].cuda_code)
    v = verdicts.judge(est, margin, identical_code=bool(point.code) and point.code == ref[-1].code,
                       baseline_changed=cuda_changed, qualifiers=quals)
    return v, ref


def judge(series: Series, point: Point, rules: Rules = Rules(), history: History | None = None) -> Finding:
    """The finding for ``point`` (a point of ``series``, stored or not) against the points before it."""
    key = series.key
    stable, _ = reference_points(series, point, rules)

    def finding(verdict: str, message: str, **more: Any) -> Finding:
        return Finding(case_id=key.case_id, case_version=key.case_version, compiler_label=key.compiler_label,
                       series_id=series.id, verdict=verdict, message=message, stable_points=len(stable),
                       value_gap=point.gap, value_wf_us=point.wf.median_us, value_cuda_us=point.cuda.median_us,
                       **more)

    if not point.stable:
        return finding(UNSTABLE, f"{point.standing[1]}; not judged, and left out of trends")
    if not any(p.run != point.run and point_order(p) < point_order(point) for p in series.points):
        return finding(NEW_SERIES, "first point of a new series; nothing to compare with yet")
    if len(stable) < rules.min_points:
        return finding(INSUFFICIENT, f"{len(stable)} of {rules.min_points} stable points so far; "
                                     f"not judged until the series has {rules.min_points}")
    v, ref = verdict_of(series, point, history, rules)
    if v is None:
        return finding(INSUFFICIENT, "no stable point to compare with")
    reference = math.exp(sum(math.log(p.gap) for p in ref) / len(ref))
    message = (f"gap {reference:.3f}x -> {point.gap:.3f}x, {v.change:+.2%} [{v.lo:+.2%}, {v.hi:+.2%}]: "
               f"{v.label}")
    if v.verdict == verdicts.BASELINE_CHANGED:
        message += "; the CUDA side's code changed: not a verdict on WarpForth"
    elif v.moved:
        message += "; identical WarpForth code moved beyond its interval: the environment changed, not the compiler"
    return finding(v.verdict, message, reference_gap=reference, reference_runs=len(ref), judged=v)


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


def check(history: History, result: RunResult | None = None, *, run_name: str = "",
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
    findings += [judge(series, point, rules, history) for series, point in pairs]
    findings += missing_cases(history, keys, created, run_name)
    findings.sort(key=lambda f: (VERDICT_ORDER.index(f.verdict), f.case_id, f.compiler_label))
    steps = tuple(cp for series, point in pairs for cp in new_change_points(series, point.run))
    return CheckReport(run=run_name, created=created, rules=rules, findings=tuple(findings), notes=tuple(notes),
                       change_points=steps)


def _stored_as(history: History, result: RunResult) -> str | None:
    """The history file holding ``result`` if it was already added (then it is not counted twice)."""
    for entry in history.runs.values():
        if entry.created == result.created and entry.gpu_name == result.environment.gpu_name \
                and entry.mode == result.mode:
            return entry.file
    return None


# --------------------------------------------------------------------------------------------------------
# rendering

_MARK = {FAILED_CASE: "FAILED", MISSING: "MISSING", UNSTABLE: "unstable", INSUFFICIENT: "too few points",
         NEW_SERIES: "new series", verdicts.BASELINE_CHANGED: verdicts.BASELINE_CHANGED}
_SEVERE = (FAILED_CASE, MISSING, verdicts.SLOWER)


def mark(f: Finding) -> str:
    """The verdict cell: ``SLOWER (other board)``, ``SAME (identical code)``, ``FAILED`` ..."""
    if f.judged is not None and f.verdict in verdicts.VERDICTS:
        return f.judged.label
    return _MARK.get(f.verdict, f.verdict)


def _cells(f: Finding) -> list[str]:
    name = f"{f.case_id} v{f.case_version}" + (f" [{f.compiler_label}]" if f.compiler_label else "")
    v = f.judged
    gap = "-" if f.value_gap is None else (f"{f.reference_gap:.3f}x -> {f.value_gap:.3f}x" if f.reference_gap
                                           else f"{f.value_gap:.3f}x")
    change = "-" if v is None else f"{v.change * 100:+.2f}% [{v.lo * 100:+.2f}, {v.hi * 100:+.2f}]"
    return [name, mark(f), gap, change, _us(f.value_wf_us), _us(f.value_cuda_us), str(f.reference_runs),
            str(f.stable_points)]


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


HEADER = ["case", "verdict", "gap", "change [95% CI]", "WF us", "CUDA us", "reference", "history"]


def summary_line(report: CheckReport) -> str:
    counts: dict[str, int] = {}
    for f in report.findings:
        counts[f.verdict] = counts.get(f.verdict, 0) + 1
    parts = [f"{n} {_MARK.get(v, v.upper())}" for v, n in
             sorted(counts.items(), key=lambda kv: VERDICT_ORDER.index(kv[0]))]
    return f"{report.run} ({report.created}): " + ", ".join(parts) + f"; exit {report.exit_code}"


def _rule_lines(report: CheckReport) -> list[str]:
    judged = [f.judged for f in report.findings if f.judged is not None]
    r = report.rules
    lines = [f"reference: the stable points of the newest code among the last {r.window} of each series"]
    if judged:
        v = judged[0]
        lines.insert(0, verdicts.rule_text(verdicts.Margin(v.margin, v.min_effect, v.margin_basis)))
        bases = sorted({j.basis for j in judged})
        lines += [f"interval: {b}" for b in bases[:3]] + ([f"... and {len(bases) - 3} more"] if len(bases) > 3 else [])
    return lines


def render_text(report: CheckReport) -> str:
    from wfbench_core.review.table import render_table

    rows = [HEADER] + [_cells(f) for f in report.findings]
    lines = [render_table(rows), ""]
    lines += [f"  {f.case_id}{' [' + f.compiler_label + ']' if f.compiler_label else ''}: {f.message}"
              for f in report.findings]
    lines += [f"new change point: {cp.describe()}" for cp in report.change_points]
    lines += [f"note: {n}" for n in report.notes]
    lines += [""] + _rule_lines(report) + [summary_line(report)]
    return "\n".join(lines)


def render_markdown(report: CheckReport) -> str:
    out = [f"### wfbench check: `{report.run}`", "", f"**{summary_line(report)}**", "",
           "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for f in report.findings:
        row = _cells(f)
        if f.verdict in _SEVERE:
            row = [row[0], f"**{row[1]}**"] + row[2:]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out += [f"- **{f.case_id}**: {f.message}" for f in report.findings if f.verdict != verdicts.SAME]
    out += [f"- **new change point**: {cp.describe()}" + (f" ([commits]({cp.compare_url}))" if cp.compare_url else "")
            for cp in report.change_points]
    out += [f"- note: {n}" for n in report.notes]
    out += [""] + [f"- {line}" for line in _rule_lines(report)] + ["", f"Exit code {report.exit_code}."]
    return "\n".join(out) + "\n"


def load_for_check(history_dir: Path, run_path: Path | None) -> tuple[History, RunResult | None]:
    run = load_result(run_path) if run_path is not None else None  # a bad file is reported before anything else
    return History.open(history_dir, must_exist=run_path is None), run
