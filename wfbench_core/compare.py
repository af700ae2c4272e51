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
"""

from __future__ import annotations

from typing import Optional, Sequence

import attrs
import numpy as np
from scipy import stats as sps

from wfbench_core.errors import WfbenchError
from wfbench_core.results import OK, UNSTABLE, CaseResult, RunResult, Timing

SLOWER, FASTER = "slower", "faster"
WORSE, BETTER = "worse", "better"
NO_CHANGE = "no change"
NEGLIGIBLE = "negligible"
SHARED = "same samples"


@attrs.frozen
class Settings:
    alpha: float = 0.01
    confidence: float = 0.95
    min_effect: float = 0.01
    resamples: int = 4000
    seed: int = 20240601


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

    @property
    def noisy(self) -> bool:
        return UNSTABLE in (self.base_status, self.head_status)


@attrs.frozen
class Comparison:
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
# statistics


def _boot_medians(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.median(x[idx], axis=1)


def _interval(stat: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(stat, [tail, 100.0 - tail])
    return float(lo), float(hi)


def _verdict(ratio: float, lo: float, hi: float, p: float, s: Settings, worse: str, better: str) -> tuple[bool, str]:
    significant = (lo > 1.0 or hi < 1.0) and p < s.alpha
    if not significant:
        return False, NO_CHANGE
    if abs(ratio - 1.0) < s.min_effect:
        return True, NEGLIGIBLE
    return True, worse if ratio > 1.0 else better


def compare_samples(base: Sequence[float], head: Sequence[float], s: Settings = Settings()) -> Change:
    """Change of one side's time: ratio of medians head/base, bootstrap interval, Mann-Whitney U."""
    b = np.asarray(base, dtype=np.float64)
    h = np.asarray(head, dtype=np.float64)
    if b.size == 0 or h.size == 0:
        raise ValueError("no samples")
    mb, mh = float(np.median(b)), float(np.median(h))
    ratio = mh / mb
    if b.shape == h.shape and np.array_equal(b, h):
        return Change(mb, mh, ratio, 1.0, 1.0, 1.0, False, SHARED)
    rng = np.random.default_rng(s.seed)
    boot = (_boot_medians(h, rng.integers(0, h.size, (s.resamples, h.size)))
            / _boot_medians(b, rng.integers(0, b.size, (s.resamples, b.size))))
    lo, hi = _interval(boot, s.confidence)
    p = float(sps.mannwhitneyu(h, b, alternative="two-sided").pvalue)
    significant, verdict = _verdict(ratio, lo, hi, p, s, SLOWER, FASTER)
    return Change(mb, mh, ratio, lo, hi, p, significant, verdict)


def compare_gap(base: Timing, head: Timing, s: Settings = Settings(), *, shared_cuda: bool = False) -> Change:
    """Change of the gap: pairs (WarpForth_i, CUDA_i) are resampled together within each run.

    ``shared_cuda``: both timings come from one base/head run against the same CUDA samples; then the
    triples (base_i, head_i, CUDA_i) are resampled together.
    """
    wb = np.asarray(base.warpforth.samples_us, dtype=np.float64)
    cb = np.asarray(base.cuda.samples_us, dtype=np.float64)
    wh = np.asarray(head.warpforth.samples_us, dtype=np.float64)
    ch = np.asarray(head.cuda.samples_us, dtype=np.float64)
    if not (wb.size and wb.size == cb.size and wh.size and wh.size == ch.size):
        raise ValueError("gap comparison needs paired samples of equal count on each side")
    gb = float(np.median(wb) / np.median(cb))
    gh = float(np.median(wh) / np.median(ch))
    ratio = gh / gb
    rng = np.random.default_rng(s.seed)
    ib = rng.integers(0, wb.size, (s.resamples, wb.size))
    ih = ib if shared_cuda and wh.size == wb.size else rng.integers(0, wh.size, (s.resamples, wh.size))
    boot = ((_boot_medians(wh, ih) / _boot_medians(ch, ih)) / (_boot_medians(wb, ib) / _boot_medians(cb, ib)))
    lo, hi = _interval(boot, s.confidence)
    p = float(sps.mannwhitneyu(wh / ch, wb / cb, alternative="two-sided").pvalue)
    significant, verdict = _verdict(ratio, lo, hi, p, s, WORSE, BETTER)
    return Change(gb, gh, ratio, lo, hi, p, significant, verdict)


# --------------------------------------------------------------------------------------------------------
# results


def _timed(c: CaseResult) -> bool:
    return c.status in (OK, UNSTABLE) and c.timing is not None


def _compare_case(b: CaseResult, h: CaseResult, s: Settings, same_run: bool) -> CaseComparison:
    head = dict(case_id=b.id, version=b.version, base_status=b.status, head_status=h.status)
    if b.version != h.version or b.fingerprint != h.fingerprint:
        return CaseComparison(compared=False, reason=(
            f"different case definitions (v{b.version} {b.fingerprint[:12]} vs v{h.version} {h.fingerprint[:12]}); "
            f"only the same fingerprint is comparable"), **head)  # type: ignore[arg-type]
    if b.mode != h.mode:
        return CaseComparison(compared=False, reason=f"different timing modes ({b.mode} vs {h.mode})",
                              **head)  # type: ignore[arg-type]
    if not (_timed(b) and _timed(h)):
        bad = ", ".join(f"{side} {c.status}" for side, c in (("base", b), ("head", h)) if not _timed(c))
        return CaseComparison(compared=False, reason=f"not timed ({bad})", **head)  # type: ignore[arg-type]
    assert b.timing is not None and h.timing is not None
    shared = same_run and np.array_equal(b.timing.cuda.samples_us, h.timing.cuda.samples_us)
    return CaseComparison(
        compared=True,
        gap=compare_gap(b.timing, h.timing, s, shared_cuda=shared),
        warpforth=compare_samples(b.timing.warpforth.samples_us, h.timing.warpforth.samples_us, s),
        cuda=compare_samples(b.timing.cuda.samples_us, h.timing.cuda.samples_us, s),
        **head,  # type: ignore[arg-type]
    )


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
                 settings: Settings = Settings()) -> Comparison:
    """Two separate runs, matched by case ID (and compiler label "" on both sides)."""
    notes = []
    if base.environment.gpu_name != head.environment.gpu_name \
            or base.environment.compute_capability != head.environment.compute_capability:
        notes.append(f"different GPUs ({_platform(base)} vs {_platform(head)}): a GPU change moves both sides; "
                     f"compare the gap, not the times")
    elif base.environment.gpu_uuid and base.environment.gpu_uuid != head.environment.gpu_uuid:
        notes.append("same GPU model, different boards: absolute times may differ by the board; the gap is the "
                     "robust signal (a base/head run on one GPU is better still)")
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
        cases.append(_compare_case(bmap[cid], hmap[cid], settings, same_run=False))
    return Comparison(base_name=base_name, head_name=head_name, base_compiler=base.warpforthc.version,
                      head_compiler=head.warpforthc.version, platform=_platform(head), same_run=False,
                      notes=tuple(notes), cases=tuple(cases), settings=settings)


def compare_labels(result: RunResult, base_label: Optional[str] = None, head_label: Optional[str] = None, *,
                   name: str = "result", settings: Settings = Settings()) -> Comparison:
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

    return Comparison(base_name=bl, head_name=hl, base_compiler=version(bl), head_compiler=version(hl),
                      platform=_platform(result), same_run=True, notes=(), cases=tuple(cases),
                      settings=settings)


# --------------------------------------------------------------------------------------------------------
# rendering


def _pct(c: Change) -> str:
    if c.verdict == SHARED:
        return "shared"
    return f"{c.percent:+.2f}% [{(c.ci_low - 1) * 100:+.2f}, {(c.ci_high - 1) * 100:+.2f}]"


def _rows(cmp: Comparison, bold: bool) -> list[list[str]]:
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


def _footer(cmp: Comparison) -> list[str]:
    s = cmp.settings
    lines = [f"change = head/base of the medians; [CI] = {s.confidence:.0%} bootstrap interval; significant when "
             f"it excludes 0 and Mann-Whitney p < {s.alpha:g}; 'negligible' = significant but under "
             f"{s.min_effect:.0%}"]
    for c in cmp.cases:
        if not c.compared:
            lines.append(f"{c.case_id}: not compared: {c.reason}")
        elif c.noisy:
            lines.append(f"{c.case_id}: noisy on one side (base {c.base_status}, head {c.head_status}); read the "
                         f"verdict with care")
    lines += [f"note: {n}" for n in cmp.notes]
    return lines


def _title(cmp: Comparison) -> str:
    how = "one interleaved base/head run" if cmp.same_run else "two runs"
    return (f"{cmp.base_name} (warpforthc {cmp.base_compiler}) -> {cmp.head_name} (warpforthc "
            f"{cmp.head_compiler}); {cmp.platform}; {how}")


def render_text(cmp: Comparison) -> str:
    from wfbench_core.report import render_table

    return "\n".join([_title(cmp), "", render_table([HEADER] + _rows(cmp, bold=False)), ""] + _footer(cmp))


def render_markdown(cmp: Comparison) -> str:
    out = ["### wfbench compare", "", _title(cmp).replace(" -> ", " → "), "",
           "| " + " | ".join(HEADER) + " |", "|---|" + "---:|" * (len(HEADER) - 2) + "---|"]
    for row in _rows(cmp, bold=True):
        out.append("| " + " | ".join(cell.replace(" -> ", " → ") for cell in row) + " |")
    out.append("")
    out += [f"- {line}" for line in _footer(cmp)]
    return "\n".join(out) + "\n"
