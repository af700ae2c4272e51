"""Base against head, per case, from the raw samples, judged by the one rule of :mod:`wfbench_core.review.verdicts`.

Two inputs are accepted: two result files (``BASE.json HEAD.json``), or one result of a base/head run
(``wfbench run --warpforthc base=PATH --warpforthc head=PATH``), whose cases appear once per compiler label
against the same CUDA samples. The second is the reliable one: same GPU, same process, interleaved.

The change of the gap (head / base) gets a 95 % interval that resamples what is independent, as the gap's
own interval does (:func:`wfbench_core.stats.gap_interval`): whole placements (whole processes first in a
``--repeat`` run), never single pairs. In a base/head run the two builds were timed in the same rounds, so the
(base, head, CUDA) rows of each placement are resampled together. Between two runs each run's interval is its
own, and what two separate runs do not share is added as variance components: a fresh process each, and each
board's own effect when the boards differ (estimated from the case's family in ``--history``, from the
processes of a ``--repeat`` run, else stated defaults). The verdict is SAME, SLOWER, FASTER or AMBIGUOUS by
that interval against the margin; identical code is SAME by rule; a changed CUDA side is "baseline changed".
The sides' times get intervals from their own samples only (boards move absolute times far more than the gap).
Cases are compared only when their fingerprints are equal, on one GPU model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from wfbench_core import stats
from wfbench_core.compiling.code_identity import code_identity, sass_note
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import UNSTABLE, CaseResult, CompileRecord, RunResult, Timing
from wfbench_core.review import evidence, pairing, verdicts

if TYPE_CHECKING:  # pragma: no cover
    from wfbench_core.review.history import History

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "SHARED", "CaseComparison", "Change", "RunComparison", "Settings", "baseline_change", "compare_labels",
    "compare_runs", "labels_of", "split_labels",
]

SHARED = "same samples"


@attrs.frozen
class Settings:
    margin: float = verdicts.DEFAULT_MARGIN  # the stated default; a wider measured A/A floor replaces it
    min_effect: float | None = None  # SLOWER / FASTER need the interval beyond this (default: the margin)


@attrs.frozen
class Change:
    """head / base of one quantity, with its 95 % interval."""

    base: float
    head: float
    ratio: float
    ci_low: float
    ci_high: float
    basis: str = ""  # what the interval resamples and adds
    shared: bool = False  # both labels share these samples (the CUDA side of a base/head run)

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
    gap: Change | None = None
    warpforth: Change | None = None
    cuda: Change | None = None
    verdict: verdicts.Verdict | None = None  # the verdict on the gap's change
    sass: str = ""  # what the two WarpForth kernels' code says (wfbench_core.compiling.code_identity.sass_note)
    broken: str = ""  # "head" or "base": that side alone failed, the other was timed (wfbench_core.review.pairing)

    @property
    def noisy(self) -> bool:
        return UNSTABLE in (self.base_status, self.head_status)

    @property
    def regression(self) -> bool:
        """SLOWER, or BROKEN (the head failed a case the base passed)."""
        return self.broken == pairing.HEAD or (self.verdict is not None and self.verdict.regression)


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
        """The cases that count as regressions: BROKEN and SLOWER (nothing else)."""
        return [c for c in self.cases if c.regression]


# --------------------------------------------------------------------------------------------------------
# estimates


def _where(t: Timing) -> tuple[int, ...]:
    """The placement of each pair; a result from before placements were recorded resamples its pairs."""
    n = len(t.warpforth.samples_us)
    return t.placement_of if len(t.placement_of) == n else tuple(range(n))


def _change(est: stats.LogEstimate, base: float, head: float, shared: bool = False) -> Change:
    lo, hi = est.interval(verdicts.LEVEL)
    return Change(base=base, head=head, ratio=head / base, ci_low=lo, ci_high=hi, basis=est.basis, shared=shared)


def _side_change(b: Sequence[float], h: Sequence[float], wb: Sequence[int], wh: Sequence[int],
                 same_rounds: bool) -> Change:
    mb, mh = stats.median(b), stats.median(h)
    if tuple(b) == tuple(h):
        return Change(mb, mh, mh / mb, 1.0, 1.0, SHARED, shared=True)
    if same_rounds:
        import numpy as np

        est = stats.cluster_estimate([b, h], wb, lambda m: np.log(stats.row_medians(m[1]) / stats.row_medians(m[0])))
    else:
        eb, eh = stats.side_estimate(b, wb), stats.side_estimate(h, wh)
        est = None if eb is None or eh is None else stats.combine(
            [eb, eh], eh.value - eb.value, f"{eb.basis} per run; within-run only")
    if est is None:
        return Change(mb, mh, mh / mb, math.nan, math.nan, "one placement: no interval")
    return _change(est, mb, mh)


def _gap_in_run(b: Timing, h: Timing) -> stats.LogEstimate | None:
    """The change of the gap of two builds timed in the same rounds of one run."""
    est = stats.change_in_run(b.warpforth.samples_us, h.warpforth.samples_us, b.cuda.samples_us,
                              h.cuda.samples_us, _where(b))
    return est and attrs.evolve(est, basis=f"the run's {_units(b)} resampled, base, head and CUDA together")


def _processes(t: Timing) -> int:
    return len(set(stats.process_of(_where(t)).tolist()))


def _gap_between_runs(b: Timing, h: Timing, comps: evidence.Components, other_board: bool
                      ) -> stats.LogEstimate | None:
    """The change of the gap between two runs: each run's own interval, a fresh process for each run that is
    one process, and each board's own effect when the boards differ."""
    eb = stats.gap_estimate(b.warpforth.samples_us, b.cuda.samples_us, _where(b))
    eh = stats.gap_estimate(h.warpforth.samples_us, h.cuda.samples_us, _where(h))
    if eb is None or eh is None:
        return None
    nb, pr = comps.new_board, comps.process
    board_only = stats.LogEstimate(0.0, math.sqrt(max(nb.se ** 2 - pr.se ** 2, 0.0)), nb.df)
    parts, added = [eb, eh], []
    for t in (b, h):
        single = _processes(t) < 2
        extra = (nb if single else board_only) if other_board else (pr if single else None)
        if extra is not None:
            parts.append(extra)
            added.append(extra.basis)
    what = "its board and process" if other_board else "its process"
    basis = (f"each run's own {_units(b)} / {_units(h)} resampled; per run, {what} added: "
             f"{'; '.join(dict.fromkeys(added)) or 'covered by its own processes'}")
    return stats.combine(parts, eh.value - eb.value, basis)


def _units(t: Timing) -> str:
    if len(t.placement_of) != len(t.warpforth.samples_us):
        return f"{len(t.warpforth.samples_us)} pairs (no placements recorded)"
    k = _processes(t)
    return f"{k} processes, then placements" if k > 1 else f"{len(set(t.placement_of))} placements"


# --------------------------------------------------------------------------------------------------------
# one case


def _same_code(b: CaseResult, h: CaseResult) -> bool:
    """Identical WarpForth code: the code identities (SASS and resources) where both sides have one, else
    byte-identical PTX."""
    ib, ih = code_identity(b.diag_wf), code_identity(h.diag_wf)
    return ib == ih if ib and ih else _same_ptx(b.compile_wf, h.compile_wf)


def _timed_once(b: CaseResult, h: CaseResult) -> bool:
    """One kernel timed for both labels of a base/head run (byte-identical PTX): the samples are the same. A
    result timed with a third label's kernel (a run of several labels) was not timed with the other's."""
    if b.timing is None or h.timing is None or not (b.timing.timed_with or h.timing.timed_with):
        return False
    return (b.timing.timed_with or b.compiler_label) == (h.timing.timed_with or h.compiler_label)


def _same_ptx(a: CompileRecord | None, b: CompileRecord | None) -> bool:
    return a is not None and b is not None and bool(a.ptx_sha256) and a.ptx_sha256 == b.ptx_sha256


def baseline_change(base: RunResult, head: RunResult, b: CaseResult, h: CaseResult) -> str:
    """What changed on the CUDA side between two runs of a case ("" when nothing did)."""
    cb, ch = base.cuda_compiler, head.cuda_compiler
    if (cb.kind, cb.version, cb.flags) != (ch.kind, ch.version, ch.flags):
        return f"CUDA compiler {cb.kind} {cb.version} -> {ch.kind} {ch.version}"
    if b.cuda_source_sha256 and h.cuda_source_sha256 and b.cuda_source_sha256 != h.cuda_source_sha256:
        return "CUDA source"
    if b.compile_cuda and h.compile_cuda and b.compile_cuda.ptx_sha256 and h.compile_cuda.ptx_sha256 \
            and b.compile_cuda.ptx_sha256 != h.compile_cuda.ptx_sha256:
        return "CUDA PTX"
    ib, ih = code_identity(b.diag_cuda), code_identity(h.diag_cuda)
    return "CUDA code (SASS or resources)" if ib and ih and ib != ih else ""


def _qualifiers(b: CaseResult, h: CaseResult) -> list[str]:
    out = []
    if UNSTABLE in (b.status, h.status):
        out.append(verdicts.NOISY)
    if any(c.timing is not None and c.timing.throttled for c in (b, h)):
        out.append(verdicts.THROTTLED)
    return out


def _case(b: CaseResult, h: CaseResult, est: stats.LogEstimate | None, margin: verdicts.Margin, *,
          same_run: bool, baseline: str = "", qualifiers: Sequence[str] = ()) -> CaseComparison:
    assert b.timing is not None and h.timing is not None
    head: dict[str, Any] = dict(case_id=b.id, version=b.version, base_status=b.status, head_status=h.status)
    if est is None:
        return CaseComparison(compared=False, reason="fewer than two placements on a side: no interval",
                              **head)
    v = verdicts.judge(est, margin, identical_code=_same_code(b, h), baseline_changed=bool(baseline),
                       qualifiers=list(qualifiers) + _qualifiers(b, h))
    tb, th = b.timing, h.timing
    wb, wh = _where(tb), _where(th)
    return CaseComparison(
        compared=True, verdict=v, sass=sass_note(b.diag_wf, h.diag_wf),
        gap=_change(est, tb.gap, th.gap),
        warpforth=_side_change(tb.warpforth.samples_us, th.warpforth.samples_us, wb, wh, same_run),
        cuda=_side_change(tb.cuda.samples_us, th.cuda.samples_us, wb, wh, same_run),
        reason=f"baseline changed: {baseline}" if baseline else "",
        **head,
    )


# --------------------------------------------------------------------------------------------------------
# results


def _platform(r: RunResult) -> str:
    e, c = r.environment, r.cuda_compiler
    return f"{e.gpu_name} ({e.compute_capability}), {c.kind} {c.version} {' '.join(c.flags)}".rstrip()


def labels_of(result: RunResult) -> list[str]:
    seen: list[str] = []
    for label in list(result.compilers) + [c.compiler_label for c in result.cases]:
        if label and label not in seen:
            seen.append(label)
    return seen


def split_labels(result: RunResult, base_label: str | None = None,
                 head_label: str | None = None, *, where: str = "result") -> tuple[str, str]:
    """Which compiler labels of a base/head run are base and head: each one asked for, else ``base`` / ``head``
    where the run has it, else the other of a run's two labels."""
    labels = labels_of(result)

    def other(given: str | None) -> str | None:
        rest = [x for x in labels if x != given]
        return rest[0] if len(rest) == 1 else None

    if base_label is None and head_label is None and not {"base", "head"} <= set(labels) and len(labels) == 2:
        base_label, head_label = labels
    base_label = base_label or ("base" if "base" in labels and head_label != "base" else other(head_label))
    head_label = head_label or ("head" if "head" in labels and base_label != "head" else other(base_label))
    if not base_label or not head_label or base_label == head_label or not {base_label, head_label} <= set(labels):
        found = ", ".join(labels) or "none"
        how = ("name the two to compare with --base-label and --head-label" if len(labels) > 1 else
               "give two result files, or run 'wfbench run --warpforthc base=PATH --warpforthc head=PATH'")
        raise WfbenchError(f"{where}: not a base/head run with the labels asked for (base {base_label or '?'}, "
                           f"head {head_label or '?'}; labels in it: {found}); {how}")
    return base_label, head_label


def _ordered(cases: list[CaseComparison]) -> tuple[CaseComparison, ...]:
    return tuple(sorted(cases, key=lambda c: c.case_id))


def compare_labels(result: RunResult, base_label: str | None = None, head_label: str | None = None, *,
                   name: str = "result", settings: Settings = Settings()) -> RunComparison:
    """One base/head run: the two compiler labels against the same CUDA samples, in the same rounds.

    The margin is the same run's A/A floor where cases of identical code give one (wider than the default)."""
    bl, hl = split_labels(result, base_label, head_label, where=name)
    bmap = {c.id: c for c in result.cases if c.compiler_label == bl}
    hmap = {c.id: c for c in result.cases if c.compiler_label == hl}
    pairs, cases = pairing.matched(bmap, hmap, "no {side} result", CaseComparison)
    estimates = [(b, h, _gap_in_run(b.timing, h.timing) if b.timing and h.timing else None) for b, h in pairs]
    # a kernel timed once for both labels reads no change by construction: it measures nothing of the method;
    # a noisy or throttled case reads its own circumstances, not the method's
    same = [math.exp(e.value) - 1.0 for b, h, e in estimates
            if e is not None and _same_code(b, h) and not _timed_once(b, h) and not _qualifiers(b, h)]
    floor = verdicts.same_run_floor(same)
    margin = verdicts.margin_of(floor, f"same run, second largest of {len(same)} steady case(s) of identical "
                                       f"code timed twice", default=settings.margin, min_effect=settings.min_effect)
    cases += [_case(b, h, e, margin, same_run=True, qualifiers=[verdicts.TIMED_ONCE] if _timed_once(b, h) else [])
              for b, h, e in estimates]

    def version(label: str) -> str:
        info = result.compilers.get(label)
        return info.version if info else "?"

    return RunComparison(base_name=bl, head_name=hl, base_compiler=version(bl), head_compiler=version(hl),
                      platform=_platform(result), same_run=True, notes=(), cases=_ordered(cases), settings=settings)


def _run_notes(base: RunResult, head: RunResult, history: History | None) -> list[str]:
    notes = []
    ub, uh = base.environment.gpu_uuid, head.environment.gpu_uuid
    if ub and uh and ub != uh:
        notes.append(f"different boards of one GPU model ({ub} vs {uh}): each board's own effect is in the "
                     f"interval, so a change must exceed what boards differ by")
    elif not (ub and uh):
        notes.append("the board (GPU UUID) of one run is unknown: treated as another board")
    if history is None:
        notes.append("no history given (--history): the between-run components are the stated defaults unless "
                     "a --repeat run measures the process one")
    return notes


def compare_runs(base: RunResult, head: RunResult, *, base_name: str = "base", head_name: str = "head",
                 settings: Settings = Settings(), history: History | None = None) -> RunComparison:
    """Two separate runs, matched by case ID (compiler label "" on both sides)."""
    for r, name in ((base, base_name), (head, head_name)):
        if labels_of(r):
            raise WfbenchError(f"{name}: a base/head run; compare it alone ('wfbench compare {name}')")
    if (base.environment.gpu_name, base.environment.compute_capability) != \
            (head.environment.gpu_name, head.environment.compute_capability):
        why = f"different GPU models ({_platform(base)} vs {_platform(head)}): the gap itself moves with the GPU"
        refused = tuple(CaseComparison(case_id=c.id, version=c.version, compared=False, reason=why)
                        for c in head.cases)
        return RunComparison(base_name, head_name, base.warpforthc.version, head.warpforthc.version, _platform(head),
                          False, (why,), refused, settings)
    pairs, cases = pairing.matched({c.id: c for c in base.cases}, {c.id: c for c in head.cases}, "not in {side}",
                                   CaseComparison)
    cases += [_run_pair(base, head, b, h, settings, history) for b, h in pairs]
    return RunComparison(base_name=base_name, head_name=head_name, base_compiler=base.warpforthc.version,
                      head_compiler=head.warpforthc.version, platform=_platform(head), same_run=False,
                      notes=tuple(_run_notes(base, head, history)), cases=_ordered(cases), settings=settings)


def _run_pair(base: RunResult, head: RunResult, b: CaseResult, h: CaseResult, s: Settings,
              history: History | None) -> CaseComparison:
    from wfbench_core.review.series import point_of, series_key

    ub, uh = base.environment.gpu_uuid, head.environment.gpu_uuid
    other = not (ub and uh and ub == uh)
    key = series_key(head, h)
    points = evidence.family_points(history, key, skip_runs=(base.created, head.created))
    extra = []
    for run, c in ((base, b), (head, h)):
        p = point_of(run, c, "")
        extra += evidence.repeat_observations(f"{p.code}/{p.cuda_code}", run.environment.gpu_uuid,
                                              c.timing.repeat_gaps if c.timing else ())
    one = any(c.timing is not None and len(c.timing.placement_of) < 2 for c in (b, h))
    comps = evidence.components(points, extra, gpu_name=key.gpu_name, one_placement=one)
    floor, where = evidence.board_aa_floor(history, key, uh)
    margin = verdicts.margin_of(floor, where, default=s.margin, min_effect=s.min_effect)
    quals = [verdicts.OTHER_BOARD if ub and uh else verdicts.UNKNOWN_BOARD] if other else []
    est = _gap_between_runs(b.timing, h.timing, comps, other) if b.timing and h.timing else None
    return _case(b, h, est, margin, same_run=False, baseline=baseline_change(base, head, b, h), qualifiers=quals)
