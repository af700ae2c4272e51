"""Whether a case timed while the GPU throttled leaves the trends: only when its gap demonstrably moved with
the clock, or when clean samples could not be had.

A power or thermal throttle event during a case (``timing.throttled``, from NVML) used to take the case out
of every trend, although pairing cancels what a clock dip does to both sides of a pair: on an H200 a normal
suite run lost two of eight cases that way while their gaps' intervals were +/-0.05 %. The rule here reads
the data a result already holds:

* the SM clock readings taken while the case was timed (``timing.clocks_sm_mhz``, every
  :data:`wfbench_core.gpu.nvml.PERIOD_S`), less the first ``warmup_busy_s`` of them, spread evenly over the pairs
  in the order they were taken: each pair gets the lowest clock read during its share of the time;
* a pair is **dipped** when that clock is below :data:`DIP` of the highest clock read, **clean** otherwise;
* with fewer than :data:`MIN_CLEAN` clean pairs, or fewer clean than dipped, clean samples could not be had:
  the case leaves the trends;
* otherwise the gap of the dipped pairs (median WarpForth / median CUDA) against that of the clean pairs:
  when the 95 % interval of that difference (placements resampled, :func:`wfbench_core.record.stats.cluster_estimate`)
  excludes zero, the gap moved with the clock and the case leaves the trends; when it does not, the case stays.

The readings carry no timestamps in a result, so the spread of readings over pairs is an approximation
(placement changes between blocks take time that no sample holds); a per-pair clock would replace it.
"""

from __future__ import annotations

import math
from typing import Optional

import attrs

from wfbench_core.record.results import Timing

DIP = 0.995  # a pair is dipped when its clock is below this share of the highest clock read during the case
MIN_CLEAN = 10  # pairs: fewer clean ones, and the case's clean gap cannot be had


@attrs.frozen
class ThrottleCall:
    """What the throttle rule says of one case."""

    leaves_trends: bool
    why: str
    dipped: int = 0
    clean: int = 0
    moved: Optional[float] = None  # the dipped pairs' gap over the clean pairs', minus 1
    moved_lo: Optional[float] = None
    moved_hi: Optional[float] = None


def pair_clocks(t: Timing) -> Optional[list[int]]:
    """The lowest SM clock read during each pair's share of the sampling time; None without readings."""
    from wfbench_core.gpu.nvml import PERIOD_S

    n = len(t.warpforth.samples_us)
    warm = int(round(t.warmup_busy_s / PERIOD_S))
    readings = list(t.clocks_sm_mhz[warm:]) if len(t.clocks_sm_mhz) > warm else list(t.clocks_sm_mhz)
    if not readings or not n:
        return None
    out = []
    for i in range(n):
        lo, hi = i * len(readings) // n, (i + 1) * len(readings) // n
        out.append(min(readings[lo:max(hi, lo + 1)]))
    return out


def judge_throttle(t: Timing) -> ThrottleCall:
    """Whether a case leaves the trends because of throttling, and why."""
    if not t.throttled:
        return ThrottleCall(False, "")
    clocks = pair_clocks(t)
    if clocks is None:
        return ThrottleCall(True, "throttled, and no clock readings to tell dipped pairs from clean ones")
    top = max(t.clocks_sm_mhz)
    dipped = [c < DIP * top for c in clocks]
    n_dip, n_clean = sum(dipped), len(dipped) - sum(dipped)
    if n_clean < max(MIN_CLEAN, n_dip):
        return ThrottleCall(True, f"clean samples could not be had: {n_clean} of {len(dipped)} pairs at the full "
                                  f"clock ({top} MHz)", n_dip, n_clean)
    if not n_dip:
        return ThrottleCall(False, f"throttled, but no pair ran below {DIP:.1%} of {top} MHz", 0, n_clean)
    est = _dipped_against_clean(t, dipped)
    if est is None:
        return ThrottleCall(False, "throttled; too few placements to compare dipped and clean pairs: kept",
                            n_dip, n_clean)
    lo, hi = (x - 1.0 for x in est.interval())
    moved = math.exp(est.value) - 1.0
    leaves = lo > 0.0 or hi < 0.0
    what = (f"the gap of {n_dip} dipped pairs differs from that of {n_clean} clean ones by {moved:+.2%} "
            f"[{lo:+.2%}, {hi:+.2%}]")
    return ThrottleCall(leaves, f"{what}: {'it moved with the clock' if leaves else 'within noise, kept'}",
                        n_dip, n_clean, moved, lo, hi)


def _dipped_against_clean(t: Timing, dipped: list[bool]):  # type: ignore[no-untyped-def]
    import numpy as np

    from wfbench_core.record import stats

    wf, cu = np.asarray(t.warpforth.samples_us), np.asarray(t.cuda.samples_us)
    mask = np.asarray(dipped)
    where = t.placement_of if len(t.placement_of) == wf.size else tuple(range(wf.size))
    cols = [np.where(mask, wf, np.nan), np.where(mask, cu, np.nan), np.where(mask, np.nan, wf),
            np.where(mask, np.nan, cu)]

    def stat(m):  # type: ignore[no-untyped-def]
        d = np.log(stats.row_medians(m[0]) / stats.row_medians(m[1]))
        c = np.log(stats.row_medians(m[2]) / stats.row_medians(m[3]))
        return d - c

    return stats.cluster_estimate(cols, where, stat)
