"""Whether a case timed while the GPU throttled leaves the trends: only when its gap demonstrably moved with
the clock, or when clean samples could not be had.

A power or thermal throttle event during a case (``timing.throttled``, from NVML) used to take the case out
of every trend, although pairing cancels what a clock dip does to both sides of a pair: on an H200 a normal
suite run lost two of eight cases that way while their gaps' intervals were +/-0.05 %. The rule here reads
the data a result already holds.

Where each pair's sides' own SM clocks were measured in-band (``timing.pair_side_mhz``, the default timer's
``events`` and ``graph`` modes), the rule is that a pair counts when its two sides ran at matching clocks
(:func:`wfbench_core.gpu.sampling.clocks_match`): a board held at its power cap runs below its top clock the
whole time, both sides of every pair alike, so such a case stays in the trends, with its power and clocks in
the result; only pairs whose sides ran at different clocks (a clock or thermal event inside the pair) are
told apart, as dipped pairs are below. nvbench, too, judges a clock against a fixed floor (75 % of the
device's default clock, per trial) rather than against the highest clock seen; pairing lets wfbench ask the
stricter question of each pair directly. At the cap the clock also moves from launch to launch, both ways: on
an H200 at 693 W, 19 of 30 pairs of polynomial_f64 had one side more than 0.5 % below the other, the WarpForth
side in 5, the CUDA side in 14 (docs/results/boards/). So, from :data:`MIN_CLEAN` matched pairs on, the
mismatched pairs' gap is weighed against the matched pairs' however many of each there are (below), and the
case leaves only when its gap moved; with fewer matched pairs, clean samples could not be had. Otherwise
(older results, ``cold-l2``):

* each pair's own SM clock where the timer measured it in-band (``timing.pair_sm_mhz``: the mean clock over
  the pair, see :mod:`wfbench_core.gpu.sampling`, which re-takes pairs under the same floor while it may);
  otherwise, for results without it, the SM clock readings taken while the case was timed (``timing.clocks_sm_mhz``, every
  :data:`wfbench_core.gpu.nvml.PERIOD_S`), less the first ``warmup_busy_s`` of them, spread evenly over the pairs
  in the order they were taken: each pair gets the lowest clock read during its share of the time;
* a pair is **dipped** when that clock is below :data:`~wfbench_core.gpu.sampling.CLOCK_FLOOR` of the highest
  clock (:func:`~wfbench_core.gpu.sampling.dipped`), **clean** otherwise;
* with fewer than :data:`MIN_CLEAN` clean pairs, or fewer clean than dipped, clean samples could not be had:
  the case leaves the trends;
* otherwise the gap of the dipped pairs (median WarpForth / median CUDA) against that of the clean pairs:
  when the 95 % interval of that difference (placements resampled, :func:`wfbench_core.stats.cluster_estimate`)
  excludes zero, the gap moved with the clock and the case leaves the trends; when it does not, the case stays.

The NVML readings carry no timestamps in a result, so their spread over pairs is an approximation (placement
changes between blocks take time that no sample holds); the per-pair clock replaces it where recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from wfbench_core.gpu.sampling import MIN_MATCHED
from wfbench_core.record.results import Timing

if TYPE_CHECKING:
    import numpy as np

    from wfbench_core.stats import LogEstimate

__all__ = ["MIN_CLEAN", "ThrottleCall", "judge_throttle", "pair_clocks"]  # internal, not the plugin API

MIN_CLEAN = MIN_MATCHED  # pairs: fewer clean ones, and the case's clean gap cannot be had (the sampler re-takes
# mismatched pairs longer until it has them: wfbench_core.gpu.sampling.max_clock_retakes)


@attrs.frozen
class ThrottleCall:
    """What the throttle rule says of one case."""

    leaves_trends: bool
    why: str
    dipped: int = 0
    clean: int = 0
    moved: float | None = None  # the dipped pairs' gap over the clean pairs', minus 1
    moved_lo: float | None = None
    moved_hi: float | None = None


def pair_clocks(t: Timing) -> list[float] | None:
    """Each pair's SM clock: its own, measured in-band, where recorded; else the lowest NVML reading during its
    share of the sampling time; None without either."""
    from wfbench_core.gpu.nvml import PERIOD_S

    n = len(t.warpforth.samples_us)
    if n and len(t.pair_sm_mhz) == n:
        return list(t.pair_sm_mhz)
    warm = round(t.warmup_busy_s / PERIOD_S)
    readings = list(t.clocks_sm_mhz[warm:]) if len(t.clocks_sm_mhz) > warm else list(t.clocks_sm_mhz)
    if not readings or not n:
        return None
    out: list[float] = []
    for i in range(n):
        lo, hi = i * len(readings) // n, (i + 1) * len(readings) // n
        out.append(min(readings[lo:max(hi, lo + 1)]))
    return out


def _by_sides(t: Timing) -> ThrottleCall | None:
    """The rule by each pair's sides' clocks (matching or not), where they were recorded for every pair."""
    from wfbench_core.gpu.sampling import clocks_match

    n = len(t.warpforth.samples_us)
    if not n or len(t.pair_side_mhz) != n:
        return None
    mismatched = [not clocks_match(p) for p in t.pair_side_mhz]
    n_mis, n_ok = sum(mismatched), n - sum(mismatched)
    every = [c for p in t.pair_side_mhz for c in p]
    at = f"{min(every):.0f}-{max(every):.0f} MHz"
    if n_ok < MIN_CLEAN:
        return ThrottleCall(True, f"clean samples could not be had: {n_ok} of {n} pairs with their sides at "
                                  f"matching clocks ({at})", n_mis, n_ok)
    if not n_mis:
        return ThrottleCall(False, f"every pair's sides ran at matching clocks ({at}): kept", 0, n_ok)
    return _moved(t, mismatched, f"{n_mis} pairs whose sides ran at different clocks", f"{n_ok} matched ones")


def judge_throttle(t: Timing) -> ThrottleCall:
    """Whether a case leaves the trends because of throttling, and why."""
    if not t.throttled:
        return ThrottleCall(False, "")
    by_sides = _by_sides(t)
    if by_sides is not None:
        return by_sides
    from wfbench_core.gpu.sampling import CLOCK_FLOOR
    from wfbench_core.gpu.sampling import dipped as is_dipped

    clocks = pair_clocks(t)
    if clocks is None:
        return ThrottleCall(True, "throttled, and no clock readings to tell dipped pairs from clean ones")
    top = max(clocks) if len(t.pair_sm_mhz) == len(clocks) else max(t.clocks_sm_mhz)
    dipped = [is_dipped(c, top) for c in clocks]
    n_dip, n_clean = sum(dipped), len(dipped) - sum(dipped)
    if n_clean < max(MIN_CLEAN, n_dip):
        return ThrottleCall(True, f"clean samples could not be had: {n_clean} of {len(dipped)} pairs at the full "
                                  f"clock ({top:.0f} MHz)", n_dip, n_clean)
    if not n_dip:
        return ThrottleCall(False, f"throttled, but no pair ran below {CLOCK_FLOOR:.1%} of {top:.0f} MHz", 0, n_clean)
    return _moved(t, dipped, f"{n_dip} dipped pairs", f"{n_clean} clean ones")


def _moved(t: Timing, dipped: list[bool], these: str, others: str) -> ThrottleCall:
    """Whether the gap of the ``dipped`` pairs differs from the others' beyond noise (the case leaves)."""
    n_dip, n_clean = sum(dipped), len(dipped) - sum(dipped)
    est = _dipped_against_clean(t, dipped)
    if est is None:
        return ThrottleCall(False, f"throttled; too few placements to compare {these} and {others}: kept",
                            n_dip, n_clean)
    lo, hi = (x - 1.0 for x in est.interval())
    moved = math.exp(est.value) - 1.0
    leaves = lo > 0.0 or hi < 0.0
    what = f"the gap of {these} differs from that of {others} by {moved:+.2%} [{lo:+.2%}, {hi:+.2%}]"
    return ThrottleCall(leaves, f"{what}: {'it moved with the clock' if leaves else 'within noise, kept'}",
                        n_dip, n_clean, moved, lo, hi)


def _dipped_against_clean(t: Timing, dipped: list[bool]) -> LogEstimate | None:
    import numpy as np

    from wfbench_core import stats

    wf, cu = np.asarray(t.warpforth.samples_us), np.asarray(t.cuda.samples_us)
    mask = np.asarray(dipped)
    where = t.placement_of if len(t.placement_of) == wf.size else tuple(range(wf.size))
    cols = [np.where(mask, wf, np.nan), np.where(mask, cu, np.nan), np.where(mask, np.nan, wf),
            np.where(mask, np.nan, cu)]

    def stat(m: Sequence[np.ndarray]) -> np.ndarray:
        d = np.log(stats.row_medians(m[0]) / stats.row_medians(m[1]))
        c = np.log(stats.row_medians(m[2]) / stats.row_medians(m[3]))
        return np.asarray(d - c)

    return stats.cluster_estimate(cols, where, stat)
