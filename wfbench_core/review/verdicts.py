"""The four verdicts and the one rule that gives them, for ``compare``, ``check``, the base/head table, the
dashboard and the job-summary / pull-request text.

A change of the gap (head / base, or a new run against its series) is judged by its 95 % interval, which
carries every level of variation the two measurements do not share (placements, processes, boards; see
:mod:`wfbench_core.stats`), against a **margin**:

* **SAME**: the whole interval lies within +/- margin (equivalent within the stated margin);
* **SLOWER** / **FASTER**: the whole interval lies beyond +min_effect / -min_effect;
* **AMBIGUOUS**: neither can be shown (the interval straddles a bound).

The margin is the measured A/A floor where one exists (cases of identical code in the same run, or an A/A run
on the same board: how far the method reads a kernel against itself), never below :data:`DEFAULT_MARGIN`. In
the same run it is the second-largest reading of the steady identical cases (:func:`same_run_floor`): no single
case, and no noisy or throttled one, widens the margin of every case;
``min_effect`` is the margin unless a wider one is asked for. Two rules come before the statistics:
identical code (SASS and resources, or byte-identical PTX) is SAME whatever the timing says, with the
qualifier ``moved`` when the gap moved beyond its interval anyway (the environment, not the code); and a
change of the CUDA side is ``baseline changed``, never a verdict on WarpForth. Circumstances that widen an
interval (another board, a noisy or throttled case) are qualifiers on a verdict, never verdicts that hide one.
Only SLOWER counts as a regression among these; a case the head breaks (it failed where the base was timed) is
BROKEN, a regression before any statistics (:mod:`wfbench_core.review.pairing`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from wfbench_core.stats import LogEstimate

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "AMBIGUOUS", "BASELINE_CHANGED", "BROKEN_WORDS", "DEFAULT_MARGIN", "FASTER", "IDENTICAL_CODE", "LEVEL", "MOVED",
    "NOISY", "OTHER_BOARD", "SAME", "SLOWER", "THROTTLED", "TIMED_ONCE", "UNKNOWN_BOARD", "VERDICTS", "Margin",
    "Verdict", "aa_floor", "judge", "margin_of", "rule", "rule_text", "same_run_floor",
]

SAME = "same"
SLOWER = "slower"
FASTER = "faster"
AMBIGUOUS = "ambiguous"
VERDICTS = (SLOWER, FASTER, AMBIGUOUS, SAME)
BASELINE_CHANGED = "baseline changed"  # the CUDA side changed: not a verdict on WarpForth
# a case that failed on one side alone, by that side (wfbench_core.review.pairing): a head that breaks a case
# is a regression; a base that fails alone is reported as such, never as one
BROKEN_WORDS = {"head": "BROKEN", "base": "BASE BROKEN"}

# qualifiers
IDENTICAL_CODE = "identical code"
MOVED = "moved"  # identical code whose gap moved beyond its interval: the environment changed
TIMED_ONCE = "timed once"  # byte-identical PTX in a base/head run: one kernel, timed once for both labels
OTHER_BOARD = "other board"
UNKNOWN_BOARD = "board unknown"
NOISY = "noisy"
THROTTLED = "throttled"

DEFAULT_MARGIN = 0.002  # 0.2 %: under half the smallest regression a base/head run is to detect (0.5 %)
LEVEL = 0.95


@attrs.frozen
class Margin:
    """The equivalence margin (SAME within it) and the minimum effect (SLOWER / FASTER beyond it)."""

    margin: float
    min_effect: float
    basis: str


def margin_of(aa_floor: float | None = None, aa_basis: str = "", *, default: float = DEFAULT_MARGIN,
              min_effect: float | None = None) -> Margin:
    """The margin: the measured A/A floor where there is one and it is wider than ``default``, else the
    default; the minimum effect is the margin, or ``min_effect`` when that is wider."""
    if aa_floor is not None and aa_floor > default:
        margin, basis = aa_floor, f"A/A floor {aa_floor:.2%} ({aa_basis})"
    elif aa_floor is not None:
        margin, basis = default, f"default {default:.2%} (A/A floor {aa_floor:.2%}, {aa_basis})"
    else:
        margin, basis = default, f"default {default:.2%} (no A/A floor measured)"
    effect = max(margin, min_effect) if min_effect is not None else margin
    if effect > margin:
        basis += f"; minimum effect {effect:.2%}"
    return Margin(margin=margin, min_effect=effect, basis=basis)


def aa_floor(changes: Iterable[float]) -> float | None:
    """The A/A floor of a set of relative changes of identical code (or of gaps of a kernel against itself,
    minus 1): the farthest any of them reads from zero; None when there are none."""
    values = [abs(c) for c in changes if math.isfinite(c)]
    return max(values) if values else None


def same_run_floor(changes: Iterable[float]) -> float | None:
    """The same-run A/A floor of the relative changes of identical code timed twice: the second-largest distance
    from zero, so that at least two cases must read as far (one odd case moves its own reading, not the margin
    of every case); None with fewer than two."""
    values = sorted((abs(c) for c in changes if math.isfinite(c)), reverse=True)
    return values[1] if len(values) > 1 else None


def rule(lo: float, hi: float, margin: Margin) -> str:
    """The verdict of a relative change whose interval is [lo, hi] (head / base - 1)."""
    if lo > margin.min_effect:
        return SLOWER
    if hi < -margin.min_effect:
        return FASTER
    if -margin.margin <= lo and hi <= margin.margin:
        return SAME
    return AMBIGUOUS


@attrs.frozen
class Verdict:
    """A judged change of the gap: the verdict, the change with its interval, the margin, the qualifiers."""

    verdict: str
    change: float  # relative: head / base - 1
    lo: float
    hi: float
    margin: float
    min_effect: float
    qualifiers: tuple[str, ...] = ()
    basis: str = ""  # what the interval carries
    margin_basis: str = ""

    @property
    def regression(self) -> bool:
        return self.verdict == SLOWER

    @property
    def label(self) -> str:
        """``SLOWER``, ``SAME (identical code)``, ``AMBIGUOUS (other board, noisy)`` ..."""
        word = self.verdict.upper() if self.verdict in VERDICTS else self.verdict
        return f"{word} ({', '.join(self.qualifiers)})" if self.qualifiers else word

    @property
    def moved(self) -> bool:
        return MOVED in self.qualifiers


def judge(estimate: LogEstimate, margin: Margin, *, identical_code: bool = False, baseline_changed: bool = False,
          qualifiers: Sequence[str] = (), level: float = LEVEL) -> Verdict:
    """The verdict on a change estimated in log terms (head / base), by the one rule."""
    lo, hi = (x - 1.0 for x in estimate.interval(level))
    change = math.exp(estimate.value) - 1.0
    quals = tuple(dict.fromkeys(qualifiers))
    if baseline_changed:
        verdict = BASELINE_CHANGED
    elif identical_code:
        verdict = SAME
        moved = rule(lo, hi, margin) in (SLOWER, FASTER)
        quals = (IDENTICAL_CODE,) + ((MOVED,) if moved else ()) + quals
    else:
        verdict = rule(lo, hi, margin)
    return Verdict(verdict=verdict, change=change, lo=lo, hi=hi, margin=margin.margin, min_effect=margin.min_effect,
                   qualifiers=quals, basis=estimate.basis, margin_basis=margin.basis)


def rule_text(margin: Margin) -> str:
    """One line stating the rule with its figures (for footers)."""
    return (f"{SLOWER.upper()}/{FASTER.upper()}: the gap change's {LEVEL:.0%} interval lies beyond "
            f"+/-{margin.min_effect:.2%}; {SAME.upper()}: it lies within +/-{margin.margin:.2%}; "
            f"{AMBIGUOUS.upper()}: neither. Identical code is {SAME.upper()} by rule; a changed CUDA side is "
            f"'{BASELINE_CHANGED}'. Margin: {margin.basis}")
