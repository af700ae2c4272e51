"""Whether a result agrees with itself: the one check of every result wfbench reads back.

:func:`wfbench_core.record.results.parse_result`, the one result loader, asks :func:`problem` about every result
it reads, so ``compare``, ``check``, ``export``, ``history add`` and the dashboard (which reads its history's
run files through it) all refuse the same results, each with one line. A timed case must satisfy:

- **its summary is its samples'**: each side's median, p95, MAD and noise, the gap, the noise of the pair
  ratios, the placement noise and the gap's interval are made again from the raw samples with the functions
  the timer used (:func:`wfbench_core.stats.paired_statistics`), and must agree within a relative
  :data:`TOLERANCE`. A statistic the result does not hold (an older wfbench did not compute it) is not
  compared; one it holds is;
- **no absurd figure**: no per-launch time longer than the protocol lets a whole case take
  (``max_case_s``), and a case marked OK is not noisier than the protocol's ``unstable_noise``;
- **plausible by its own yardsticks**: the rule the worker applied when it timed the case
  (:func:`wfbench_core.record.yardsticks.implausible`: copy bandwidth, f64 peak, launch floor), against the
  yardsticks this result recorded. A result gets no pass for its wfbench version or for where it came from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wfbench_core.record.schema import CaseResult, RunResult, Timing

__all__ = ["TOLERANCE", "case_problem", "problem", "summary_problem"]  # internal, not the plugin API

#: relative disagreement allowed between a stored statistic and the same statistic made again from the
#: samples (the same functions on the same numbers agree to the last bit; this leaves room for another
#: numpy's rounding, and none for a figure that was changed)
TOLERANCE = 1e-6

_SIDE_FIELDS = ("median_us", "p95_us", "mad_us", "noise")
_TIMING_FIELDS = ("gap", "pair_ratio_noise", "within_placement_noise", "between_placement_noise", "gap_lo", "gap_hi")


def _differs(stored: float | None, made: float | None) -> bool:
    if stored is None:
        return False  # not recorded (an older wfbench): nothing to contradict
    if made is None:
        return True
    return abs(stored - made) > TOLERANCE * max(abs(made), abs(stored))


def _shown(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def summary_problem(t: Timing) -> str:
    """Which stored statistic of ``t`` its samples do not give ("" when all agree)."""
    from wfbench_core.stats import paired_statistics

    where = t.placement_of or (0,) * len(t.warpforth.samples_us)
    made = paired_statistics(t.warpforth.samples_us, t.cuda.samples_us, where)
    for side_name, side in (("warpforth", t.warpforth), ("cuda", t.cuda)):
        if side.n != len(side.samples_us):
            return f"{side_name}.n of {side.n} for {len(side.samples_us)} samples"
        for name in _SIDE_FIELDS:
            stored, again = getattr(side, name), getattr(made[side_name], name)
            if _differs(stored, again):
                return f"{side_name}.{name} {_shown(stored)}, but its samples give {_shown(again)}"
    for name in _TIMING_FIELDS:
        stored, again = getattr(t, name), made[name]
        if _differs(stored, again):
            return f"{name} {_shown(stored)}, but its samples give {_shown(again)}"
    return ""


def case_problem(case: CaseResult, run: RunResult) -> str:
    """Why a timed case's figures contradict its samples, are absurd or are faster than its run's yardsticks
    allow ("" when they are none of these)."""
    from wfbench_core.record.status import OK, UNSTABLE
    from wfbench_core.record.yardsticks import Yardsticks, ceiling_implausible, implausible_result
    from wfbench_core.stats import is_unstable

    t = case.timing
    if t is None:
        return ""
    longest = max(max(t.warpforth.samples_us), max(t.cuda.samples_us))
    if longest > run.protocol.max_case_s * 1e6:
        return (f"a per-launch time of {longest:.6g} us, longer than the {run.protocol.max_case_s:g} s a whole case "
                f"may take")
    why = summary_problem(t)
    if why:
        return f"a summary that contradicts its samples: {why}"
    if case.status == OK and is_unstable(t.warpforth, t.cuda, run.protocol.unstable_noise):
        return (f"status ok at a noise of {max(t.warpforth.noise, t.cuda.noise):.2%}, over the "
                f"{run.protocol.unstable_noise:.2%} that makes a case unstable")
    if case.status in (OK, UNSTABLE):
        why = implausible_result(case, run.environment)
        if why:
            return f"status {case.status}, but {why}: faster than this GPU can run it"
    why = ceiling_implausible(case, Yardsticks.of(run.environment))
    if why:
        return f"a timed library ceiling, but {why}: faster than this GPU can run it"
    return ""


def problem(result: RunResult) -> str:
    """Why ``result`` cannot be taken in ("" when it can): the first case that contradicts itself."""
    for case in result.cases:
        why = case_problem(case, result)
        if why:
            label = f" [{case.compiler_label}]" if case.compiler_label else ""
            return f"case {case.id!r}{label} has {why}; refused"
    return ""

