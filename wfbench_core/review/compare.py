"""Base against head, per case, from the raw samples.

Two inputs are accepted: two result files (``BASE.json HEAD.json``), or one result of a base/head run
(``wfbench run --warpforthc base=PATH --warpforthc head=PATH``), whose cases appear once per compiler label
against the same CUDA samples. The second is the reliable one: same GPU, same minutes, interleaved.

For each quantity (the gap, the WarpForth time, the CUDA time) the change is head / base of the medians,
with

* a percentile-bootstrap confidence interval of that ratio of medians (numpy, fixed seed, so a report is
  reproducible); for the gap, pairs are resampled together, so the within-run pairing is kept;
* a two-sided Mann-Whitney U test (scipy) of the raw samples (per-pair ratios for the gap).

A change is *significant* when the interval excludes 1 and p < alpha. A significant change smaller than
``min_effect`` is reported as such (real, but too small to matter). Cases are compared only when their
fingerprints are equal: a changed case is a different measurement.

Two separate runs differ by more than their own samples show: another process, another buffer placement,
another board. So between two runs a significant change is called better or worse only when it also exceeds
the between-run variation of its series (:func:`wfbench_core.record.stats.between_run_variation`: estimated from
the series' stable points in a history given with ``history=``, else from the per-process gaps of a
``--repeat`` run among the two, else a documented floor). It is never
attributed to the compiler when the two runs' WarpForth PTX is byte-identical (``same PTX``), nor when they
ran on different boards (``other board``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import attrs

from wfbench_core.record import stats
from wfbench_core.build.diagnostics import IDENTICAL_NOTE, sass_note
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import UNSTABLE, CaseResult, CompileRecord, RunResult, Timing

if TYPE_CHECKING:  # pragma: no cover
    from wfbench_core.review.history import History

SLOWER, FASTER = "slower", "faster"
WORSE, BETTER = "worse", "better"
NO_CHANGE = "no change"
NEGLIGIBLE = "negligible"
SHARED = "same samples"
WITHIN_RUNS = "within run-to-run variation"  # significant in the samples, not beyond what runs vary by
SAME_PTX = "same PTX"  # the WarpForth PTX is byte-identical: not the compiler
OTHER_BOARD = "other board"  # measured on different boards: not attributed to the compiler
IDENTICAL_SASS = "identical SASS"  # both WarpForth kernels assemble to the same machine code: any change is noise


@attrs.frozen
class Settings:
    alpha: float = 0.01
    confidence: float = 0.95
    min_effect: float = 0.01
    resamples: int = 4000
    seed: int = 20240601
    run_floor: float = stats.RUN_FLOOR  # between two runs: the threshold until a series has run_min points
    run_k: float = stats.RUN_K
    run_min: int = stats.MIN_RUNS


@attrs.frozen
class Change:
    """head / base of one quantity, with its uncertainty and verdict."""

    base: float
    head: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    significant: bool
    verdict: str
    threshold: float = 0.0  # between two runs: the between-run threshold the change was held against

    @property
    def percent(self) -> float:
        return (self.ratio - 1.0) * 100.0


@attrs.frozen
class CaseComparison:
    case_id: str
    version: int
    compared: bool
    reason: str = ""  # why not compared
    base_status: str = ""
    head_status: str = ""
    gap: Optional[Change] = None
    warpforth: Optional[Change] = None
    cuda: Optional[Change] = None
    variation: str = ""  # between two runs: where the gap's between-run threshold came from
    sass: str = ""  # what the two WarpForth kernels' machine code says (wfbench_core.build.diagnostics.sass_note)

    @property
    def noisy(self) -> bool:
        return UNSTABLE in (self.base_status, self.head_status)


@attrs.frozen
class RunComparison:
    base_name: str
    head_name: str
    base_compiler: str
    head_compiler: str
    platform: str
    same_run: bool  # one base/head run: shared CUDA samples, interleaved
    notes: tuple[str, ...]
    cases: tuple[CaseComparison, ...]
    settings: Settings

    @property
    def regressions(self) -> list[CaseComparison]:
        return [c for c in self.cases if c.gap is not None and c.gap.verdict == WORSE]


# --------------------------------------------------------------------------------------------------------
# verdicts (the statistics themselves live in wfbench_core.record.stats)


def _verdict(ratio: float, lo: float, hi: float, p: float, s: Settings, worse: str, better: str) -> tuple[bool, str]:
    significant = (lo > 1.0 or hi < 1.0) and p < s.alpha
    if not significant:
        return False, NO_CHANGE
    if abs(ratio - 1.0) < s.min_effect:
        return True, NEGLIGIBLE
    return True, worse if ratio > 1.0 else better


@attrs.frozen
class Between:
    """What two separate runs add to a comparison: their between-run variation, and why a change that exceeds
    it may still not be the compiler's."""

    variation: stats.RunVariation
    same_ptx: bool = False
    other_board: bool = False


def _between(change: Change, between: Optional[Between]) -> Change:
    """Hold a within-run verdict against the between-run variation of two separate runs."""
    if between is None or change.verdict == SHARED:
        return change
    verdict = change.verdict
    if verdict in (NO_CHANGE, NEGLIGIBLE):
        pass
    elif not between.variation.exceeded(change.ratio - 1.0):
        verdict = WITHIN_RUNS
    elif between.same_ptx:
        verdict = SAME_PTX
    elif between.other_board:
        verdict = OTHER_BOARD
    return attrs.evolve(change, verdict=verdict, threshold=between.variation.threshold)


def compare_samples(base: Sequence[float], head: Sequence[float], s: Settings = Settings(),
                    between: Optional[Between] = None) -> Change:
    """Change of one side's time: ratio of medians head/base, bootstrap interval, Mann-Whitney U."""
    if len(base) == 0 or len(head) == 0:
        raise ValueError("no samples")
    mb, mh = stats.median(base), stats.median(head)
    ratio = mh / mb
    if tuple(base) == tuple(head):
        return Change(mb, mh, ratio, 1.0, 1.0, 1.0, False, SHARED)
    lo, hi = stats.bootstrap_median_ratio(base, head, resamples=s.resamples, seed=s.seed, confidence=s.confidence)
    p = stats.mann_whitney_p(head, base)
    significant, verdict = _verdict(ratio, lo, hi, p, s, SLOWER, FASTER)
    return _between(Change(mb, mh, ratio, lo, hi, p, significant, verdict), between)


def compare_gap(base: Timing, head: Timing, s: Settings = Settings(), *, shared_cuda: bool = False,
                between: Optional[Between] = None) -> Change:
    """Change of the gap: pairs (WarpForth_i, CUDA_i) are resampled together within each run.

    ``shared_cuda``: both timings come from one base/head run against the same CUDA samples; then the
    triples (base_i, head_i, CUDA_i) are resampled together.
    """
    wb, cb = base.warpforth.samples_us, base.cuda.samples_us
    wh, ch = head.warpforth.samples_us, head.cuda.samples_us
    rb, rh = stats.pair_ratios(wb, cb), stats.pair_ratios(wh, ch)
    if rb is None or rh is None:
        raise ValueError("gap comparison needs paired samples of equal count on each side")
    gb = stats.median(wb) / stats.median(cb)
    gh = stats.median(wh) / stats.median(ch)
    ratio = gh / gb
    lo, hi = stats.bootstrap_gap_ratio(wb, cb, wh, ch, shared_cuda=shared_cuda, resamples=s.resamples, seed=s.seed,
                                       confidence=s.confidence)
    p = stats.mann_whitney_p(rh, rb)
    significant, verdict = _verdict(ratio, lo, hi, p, s, WORSE, BETTER)
    return _between(Change(gb, gh, ratio, lo, hi, p, significant, verdict), between)


# --------------------------------------------------------------------------------------------------------
# results


def _same_ptx(a: Optional[CompileRecord], b: Optional[CompileRecord]) -> bool:
    return a is not None and b is not None and bool(a.ptx_sha256) and a.ptx_sha256 == b.ptx_sha256


def _compare_case(b: CaseResult, h: CaseResult, s: Settings, same_run: bool,
                  runs: Optional[tuple[RunResult, RunResult, Optional["History"]]] = None) -> CaseComparison:
    head = dict(case_id=b.id, version=b.version, base_status=b.status, head_status=h.status)
    if b.version != h.version or b.fingerprint != h.fingerprint:
        return CaseComparison(compared=False, reason=(
            f"different case definitions (v{b.version} {b.fingerprint[:12]} vs v{h.version} {h.fingerprint[:12]}); "
            f"only the same fingerprint is comparable"), **head)  # type: ignore[arg-type]
    if b.mode != h.mode:
        return CaseComparison(compared=False, reason=f"different timing modes ({b.mode} vs {h.mode})",
                              **head)  # type: ignore[arg-type]
    if not (b.timed and h.timed):
        bad = ", ".join(f"{side} {c.status}" for side, c in (("base", b), ("head", h)) if not c.timed)
        return CaseComparison(compared=False, reason=f"not timed ({bad})", **head)  # type: ignore[arg-type]
    assert b.timing is not None and h.timing is not None
    shared = same_run and tuple(b.timing.cuda.samples_us) == tuple(h.timing.cuda.samples_us)
    gap_b = wf_b = cuda_b = None
    basis = ""
    if runs is not None:
        base_run, head_run, history = runs
        values = _series_values(history, base_run, head_run, h)
        board = _other_board(base_run, head_run)

        def between(qty: str, ptx: bool) -> Between:
            repeats = [t.repeat_gaps for t in (b.timing, h.timing) if t is not None] if qty == "gap" else []
            v = stats.between_run_variation(values[qty], repeats, floor=s.run_floor, k=s.run_k, min_runs=s.run_min)
            if history is None and v.spread is None:
                v = attrs.evolve(v, basis=f"{s.run_floor:.1%} floor (no history given)")
            return Between(v, same_ptx=ptx, other_board=board)

        same_wf = _same_ptx(b.compile_wf, h.compile_wf)
        gap_b, wf_b = between("gap", same_wf), between("wf", same_wf)
        cuda_b = between("cuda", _same_ptx(b.compile_cuda, h.compile_cuda))
        basis = gap_b.variation.basis
    gap = compare_gap(b.timing, h.timing, s, shared_cuda=shared, between=gap_b)
    wf = compare_samples(b.timing.warpforth.samples_us, h.timing.warpforth.samples_us, s, wf_b)
    sass = sass_note(b.diag_wf, h.diag_wf)
    if sass == IDENTICAL_NOTE:  # the same machine code: no change of the compiler's to test for
        gap = _identical(gap, (WORSE, BETTER))
        wf = _identical(wf, (SLOWER, FASTER))
    return CaseComparison(
        compared=True,
        gap=gap,
        warpforth=wf,
        cuda=compare_samples(b.timing.cuda.samples_us, h.timing.cuda.samples_us, s, cuda_b),
        variation=basis,
        sass=sass,
        **head,  # type: ignore[arg-type]
    )


def _identical(change: Change, directions: tuple[str, str]) -> Change:
    return attrs.evolve(change, verdict=IDENTICAL_SASS) if change.verdict in directions else change


def _other_board(base: RunResult, head: RunResult) -> bool:
    a, b = base.environment.gpu_uuid, head.environment.gpu_uuid
    return bool(a and b and a != b)


def _series_values(history: Optional["History"], base: RunResult, head: RunResult,
                   case: CaseResult) -> dict[str, list[float]]:
    """Gap, WarpForth and CUDA medians of the stable points of this case's series (one per run), the two runs
    being compared left out; empty without a history."""
    out: dict[str, list[float]] = {"gap": [], "wf": [], "cuda": []}
    if history is None:
        return out
    from wfbench_core.review.history import series_key

    series = history.find_series(series_key(head, case))
    if series is None:
        return out
    skip = {base.created, head.created}
    for p in series.stable_points:
        if p.created in skip:
            continue
        out["gap"].append(p.gap)
        out["wf"].append(p.wf.median_us)
        out["cuda"].append(p.cuda.median_us)
    return out


def _platform(r: RunResult) -> str:
    e, c = r.environment, r.cuda_compiler
    return f"{e.gpu_name} ({e.compute_capability}), {c.kind} {c.version} {' '.join(c.flags)}".rstrip()


def labels_of(result: RunResult) -> list[str]:
    seen: list[str] = []
    for label in list(result.compilers) + [c.compiler_label for c in result.cases]:
        if label and label not in seen:
            seen.append(label)
    return seen


def split_labels(result: RunResult, base_label: Optional[str] = None,
                 head_label: Optional[str] = None, *, where: str = "result") -> tuple[str, str]:
    """Which compiler labels of a base/head run are base and head."""
    labels = labels_of(result)
    if base_label is None and head_label is None:
        if "base" in labels and "head" in labels:
            base_label, head_label = "base", "head"
        elif len(labels) == 2:
            base_label, head_label = labels
    if not base_label or not head_label or base_label not in labels or head_label not in labels:
        found = ", ".join(labels) or "none"
        raise WfbenchError(f"{where}: not a base/head run with the labels asked for (labels in it: {found}); "
                           f"give two result files, or run 'wfbench run --warpforthc base=PATH --warpforthc "
                           f"head=PATH'")
    return base_label, head_label


def compare_runs(base: RunResult, head: RunResult, *, base_name: str = "base", head_name: str = "head",
                 settings: Settings = Settings(), history: Optional["History"] = None) -> RunComparison:
    """Two separate runs, matched by case ID (and compiler label "" on both sides).

    A change counts only beyond the between-run variation of the case's series, estimated from ``history``
    when given (its stable points), else ``settings.run_floor``.
    """
    notes = []
    if base.environment.gpu_name != head.environment.gpu_name \
            or base.environment.compute_capability != head.environment.compute_capability:
        notes.append(f"different GPUs ({_platform(base)} vs {_platform(head)}): a GPU change moves both sides, and "
                     f"the gap too; no change is attributed to the compiler")
    elif _other_board(base, head):
        notes.append(f"different boards of one GPU model ({base.environment.gpu_uuid} vs "
                     f"{head.environment.gpu_uuid}): a board moves the gap by itself, so changes are reported as "
                     f"'{OTHER_BOARD}', never as better or worse; compare runs on one board, or one base/head run")
    elif not (base.environment.gpu_uuid and head.environment.gpu_uuid):
        notes.append("the board (GPU UUID) of one run is unknown: a board change cannot be ruled out")
    if history is None:
        notes.append(f"no history given (--history): a change must exceed the {settings.run_floor:.1%} between-run "
                     f"floor; with {settings.run_min} or more stable runs of a series, its own spread sets it")
    if (base.cuda_compiler.kind, base.cuda_compiler.version, base.cuda_compiler.flags) != \
            (head.cuda_compiler.kind, head.cuda_compiler.version, head.cuda_compiler.flags):
        notes.append("different CUDA compilers or flags: the CUDA baseline itself changed")
    for r, name in ((base, base_name), (head, head_name)):
        if labels_of(r):
            raise WfbenchError(f"{name}: a base/head run; compare it alone ('wfbench compare {name}')")
    bmap = {c.id: c for c in base.cases}
    hmap = {c.id: c for c in head.cases}
    cases = []
    for cid in sorted(set(bmap) | set(hmap)):
        if cid not in hmap or cid not in bmap:
            side = head_name if cid not in hmap else base_name
            c = bmap.get(cid) or hmap[cid]
            cases.append(CaseComparison(case_id=cid, version=c.version, compared=False,
                                        reason=f"not in {side}"))
            continue
        cases.append(_compare_case(bmap[cid], hmap[cid], settings, same_run=False, runs=(base, head, history)))
    if base.environment.gpu_name != head.environment.gpu_name \
            or base.environment.compute_capability != head.environment.compute_capability:
        cases = [_not_attributed(c) for c in cases]
    return RunComparison(base_name=base_name, head_name=head_name, base_compiler=base.warpforthc.version,
                      head_compiler=head.warpforthc.version, platform=_platform(head), same_run=False,
                      notes=tuple(notes), cases=tuple(cases), settings=settings)


def _not_attributed(c: CaseComparison) -> CaseComparison:
    """Different GPU models: no verdict on the compiler (the gap itself moves with the GPU)."""
    if not c.compared or c.gap is None or c.gap.verdict not in (WORSE, BETTER):
        return c
    return attrs.evolve(c, gap=attrs.evolve(c.gap, verdict=OTHER_BOARD))


def compare_labels(result: RunResult, base_label: Optional[str] = None, head_label: Optional[str] = None, *,
                   name: str = "result", settings: Settings = Settings()) -> RunComparison:
    """One base/head run: the two compiler labels against the same CUDA samples."""
    bl, hl = split_labels(result, base_label, head_label, where=name)
    bmap = {c.id: c for c in result.cases if c.compiler_label == bl}
    hmap = {c.id: c for c in result.cases if c.compiler_label == hl}
    cases = []
    for cid in sorted(set(bmap) | set(hmap)):
        if cid not in bmap or cid not in hmap:
            c = bmap.get(cid) or hmap[cid]
            cases.append(CaseComparison(case_id=cid, version=c.version, compared=False,
                                        reason=f"no {'head' if cid not in hmap else 'base'} result"))
            continue
        cases.append(_compare_case(bmap[cid], hmap[cid], settings, same_run=True))

    def version(label: str) -> str:
        info = result.compilers.get(label)
        return info.version if info else "?"

    return RunComparison(base_name=bl, head_name=hl, base_compiler=version(bl), head_compiler=version(hl),
                      platform=_platform(result), same_run=True, notes=(), cases=tuple(cases),
                      settings=settings)


# --------------------------------------------------------------------------------------------------------
# rendering


def _pct(c: Change) -> str:
    if c.verdict == SHARED:
        return "shared"
    return f"{c.percent:+.2f}% [{(c.ci_low - 1) * 100:+.2f}, {(c.ci_high - 1) * 100:+.2f}]"


def _rows(cmp: RunComparison, bold: bool) -> list[list[str]]:
    rows = []
    for c in cmp.cases:
        name = f"{c.case_id} v{c.version}"
        if not c.compared:
            rows.append([name, "-", "-", "-", "-", "-", "-", "not compared"])
            continue
        assert c.gap and c.warpforth and c.cuda
        verdict = c.gap.verdict
        if bold and verdict in (WORSE, BETTER):
            verdict = f"**{verdict}**"
        if c.noisy:
            verdict += " (noisy)"
        rows.append([
            name,
            f"{c.gap.base:.3f}x -> {c.gap.head:.3f}x",
            _pct(c.gap),
            f"{c.warpforth.base:.2f} -> {c.warpforth.head:.2f}",
            f"{_pct(c.warpforth)} {c.warpforth.verdict}",
            f"{c.cuda.base:.2f} -> {c.cuda.head:.2f}",
            _pct(c.cuda) + ("" if c.cuda.verdict == SHARED else f" {c.cuda.verdict}"),
            verdict,
        ])
    return rows


HEADER = ["case", "gap", "gap change [CI]", "WF us", "WF change [CI]", "CUDA us", "CUDA change [CI]", "verdict"]


def _footer(cmp: RunComparison) -> list[str]:
    s = cmp.settings
    lines = [f"change = head/base of the medians; [CI] = {s.confidence:.0%} bootstrap interval; significant when "
             f"it excludes 0 and Mann-Whitney p < {s.alpha:g}; 'negligible' = significant but under "
             f"{s.min_effect:.0%}"]
    if not cmp.same_run:
        lines.append(f"two runs: a significant change counts only beyond the between-run variation ('{WITHIN_RUNS}' "
                     f"otherwise); '{SAME_PTX}': byte-identical WarpForth PTX, so not the compiler; '{OTHER_BOARD}': "
                     f"different boards or GPUs, not attributed to the compiler")
        bases = sorted({c.variation for c in cmp.cases if c.variation})
        if len(bases) == 1:
            lines.append(f"between-run threshold: {bases[0]}")
        else:
            lines += [f"{c.case_id}: between-run threshold: {c.variation}" for c in cmp.cases if c.variation]
    for c in cmp.cases:
        if c.sass:
            lines.append(f"{c.case_id}: {c.sass}" + (f" {c.case_id}" if c.sass.endswith("wfbench explain") else ""))
        if not c.compared:
            lines.append(f"{c.case_id}: not compared: {c.reason}")
        elif c.noisy:
            lines.append(f"{c.case_id}: noisy on one side (base {c.base_status}, head {c.head_status}); read the "
                         f"verdict with care")
    lines += [f"note: {n}" for n in cmp.notes]
    return lines


def _title(cmp: RunComparison) -> str:
    how = "one interleaved base/head run" if cmp.same_run else "two runs"
    return (f"{cmp.base_name} (warpforthc {cmp.base_compiler}) -> {cmp.head_name} (warpforthc "
            f"{cmp.head_compiler}); {cmp.platform}; {how}")


def render_text(cmp: RunComparison) -> str:
    from wfbench_core.review.report import render_table

    return "\n".join([_title(cmp), "", render_table([HEADER] + _rows(cmp, bold=False)), ""] + _footer(cmp))


def render_markdown(cmp: RunComparison) -> str:
    out = ["### wfbench compare", "", _title(cmp).replace(" -> ", " → "), "",
           "| " + " | ".join(HEADER) + " |", "|---|" + "---:|" * (len(HEADER) - 2) + "---|"]
    for row in _rows(cmp, bold=True):
        out.append("| " + " | ".join(cell.replace(" -> ", " → ") for cell in row) + " |")
    out.append("")
    out += [f"- {line}" for line in _footer(cmp)]
    return "\n".join(out) + "\n"
