"""Verdict statistics: the interval of a gap or of a change of one, with every level of variation it carries.

Pairs share their placement's buffers, placements share their process, processes share their board. A
measurement's interval resamples the highest level it has several of (processes of a --repeat run, else
placements), keeping the levels below inside each unit; two separate runs add what a fresh process and,
on another board, the board add (variance components: wfbench_core.review.evidence). Everything is in log terms.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from wfbench_core.stats.summary import (
    GAP_INTERVAL_METHOD,
    as_array,
    gap,
    gap_interval,
    pair_ratio_noise,
    placement_noise,
    summarize,
    t_quantile,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "HIERARCHICAL_INTERVAL",
    "PROCESS_STRIDE",
    "VERDICT_RESAMPLES",
    "LogEstimate",
    "change_in_run",
    "cluster_estimate",
    "combine",
    "gap_estimate",
    "paired_statistics",
    "process_of",
    "row_medians",
    "run_gap_interval",
    "side_estimate",
    "t_quantile",
]

PROCESS_STRIDE = 10_000  # --repeat: placement index = process x PROCESS_STRIDE + placement within the process
HIERARCHICAL_INTERVAL = "t-scaled bootstrap over processes, then placements"
VERDICT_RESAMPLES = 1000


@attrs.frozen
class LogEstimate:
    """A value in log terms with its standard error and degrees of freedom (``math.inf``: a stated default,
    taken as known). A variance component is an estimate of value 0."""

    value: float
    se: float
    df: float
    basis: str = ""

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The ratio interval exp(value -/+ t_df x se)."""
        half = t_quantile(level, self.df) * self.se
        return math.exp(self.value - half), math.exp(self.value + half)


def combine(parts: Sequence[LogEstimate], value: float, basis: str = "") -> LogEstimate:
    """A sum of independent parts: variances add, degrees of freedom by Welch-Satterthwaite."""
    var = sum(p.se ** 2 for p in parts)
    den = sum(p.se ** 4 / p.df for p in parts if math.isfinite(p.df) and p.se > 0)
    df = var ** 2 / den if den > 0 else math.inf
    return LogEstimate(value=value, se=math.sqrt(var), df=df, basis=basis)


def process_of(placement_of: Sequence[int]) -> np.ndarray:
    import numpy as np

    return np.asarray(placement_of, dtype=np.int64) // PROCESS_STRIDE


def _padded(columns: Sequence[np.ndarray], where: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Each column as a (units x block) matrix padded with NaN, and the process of each unit."""
    import numpy as np

    units = np.unique(where)
    block = int(max(np.count_nonzero(where == u) for u in units))
    out = []
    for col in columns:
        m = np.full((units.size, block), np.nan)
        for i, u in enumerate(units):
            sel = col[where == u]
            m[i, :sel.size] = sel
        out.append(m)
    return out, units // PROCESS_STRIDE


def _picks(procs: np.ndarray, resamples: int, seed: int) -> tuple[np.ndarray, int]:
    """Resampled unit indices (R x M, -1 = none): whole processes with replacement and, inside each, its units
    with replacement when there are several processes; units alone otherwise. Also the number of top units."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tops = np.unique(procs)
    if tops.size < 2:
        return rng.integers(0, procs.size, size=(resamples, procs.size)), procs.size
    members = [np.flatnonzero(procs == p) for p in tops]
    widest = max(m.size for m in members)
    table = np.full((tops.size, widest), -1)
    counts = np.array([m.size for m in members])
    for i, m in enumerate(members):
        table[i, :m.size] = m
    chosen = rng.integers(0, tops.size, size=(resamples, tops.size))
    slot = (rng.random((resamples, tops.size, widest)) * counts[chosen][..., None]).astype(np.int64)
    picked = np.take_along_axis(table[chosen], slot, axis=2)
    picked[np.arange(widest)[None, None, :] >= counts[chosen][..., None]] = -1
    return picked.reshape(resamples, -1), tops.size


def cluster_estimate(columns: Sequence[Collection[float]], placement_of: Sequence[int],
                     statistic: Callable[[Sequence[np.ndarray]], np.ndarray],
                     *, resamples: int = VERDICT_RESAMPLES, seed: int = 0) -> LogEstimate | None:
    """``statistic`` (a function of one NaN-padded matrix per column, row = resample, giving log values) on
    the data, with its bootstrap standard error over the top level of units (processes, else placements),
    t-scaled: the bootstrap variance times n / (n - 1), and n - 1 degrees of freedom. Resamples whose statistic
    is not finite (a group absent from them) are dropped. None with one unit, or when the statistic cannot be
    had on the data or on half the resamples."""
    import numpy as np

    cols = [as_array(c) for c in columns]
    where = np.asarray(placement_of)
    if not all(c.shape == where.shape for c in cols):
        raise ValueError("placement_of needs one placement index per pair")
    if np.unique(where).size < 2:
        return None
    mats, procs = _padded(cols, where)
    pick, n = _picks(procs, resamples, seed)
    valid = pick >= 0
    boots = []
    for m in mats:
        g = m[np.where(valid, pick, 0)]
        g[~valid] = np.nan
        boots.append(g.reshape(resamples, -1))
    with warnings.catch_warnings():  # a resample may hold none of a group's pairs (all-NaN rows): dropped
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(statistic([c[None, :] for c in cols])[0])
        boot = np.asarray(statistic(boots), dtype=np.float64)
    boot = boot[np.isfinite(boot)]
    if not math.isfinite(value) or boot.size < resamples // 2:
        return None
    se = float(boot.std(ddof=1)) * math.sqrt(n / (n - 1))
    levels = "processes, then placements" if np.unique(procs).size >= 2 else "placements"
    return LogEstimate(value=value, se=se, df=float(n - 1), basis=f"bootstrap over {n} {levels}")


def row_medians(m: np.ndarray) -> np.ndarray:
    """The median of each row, ignoring the NaN padding of a resample (numpy's fast path when there is none)."""
    import numpy as np

    return np.asarray(np.nanmedian(m, axis=1) if np.isnan(m).any() else np.median(m, axis=1))


def _log_gap(m: Sequence[np.ndarray]) -> np.ndarray:
    import numpy as np

    return np.asarray(np.log(row_medians(m[0]) / row_medians(m[1])))


def _log_change(m: Sequence[np.ndarray]) -> np.ndarray:
    import numpy as np

    wb, wh, cb, ch = (row_medians(x) for x in m)
    return np.asarray(np.log((wh / ch) / (wb / cb)))


#: estimates made in this process, by what they were made of: comparing one run with several others (a history, the
#: boards' pairs) estimates its sides again for each; the bootstrap is a function of the numbers (a fixed seed)
_MADE: dict[tuple[str, ...], LogEstimate | None] = {}
_MADE_MAX = 4096


def _once(kind: str, arrays: Sequence[Collection[float]], make: Callable[[], LogEstimate | None]) -> LogEstimate | None:
    """``make()``, or what it gave before for the same ``kind`` of estimate of the same numbers."""
    import hashlib

    import numpy as np

    key = (kind, *(hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest() for a in arrays))
    if key not in _MADE:
        if len(_MADE) >= _MADE_MAX:
            del _MADE[next(iter(_MADE))]  # the oldest
        _MADE[key] = make()
    return _MADE[key]


def gap_estimate(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                 placement_of: Sequence[int]) -> LogEstimate | None:
    """The log of the reported gap (median WarpForth / median CUDA of all pairs) with its cluster-bootstrap
    standard error: over processes, then placements, in a --repeat run; over placements otherwise."""
    return _once("gap", [wf_samples_us, cuda_samples_us, placement_of],
                 lambda: cluster_estimate([wf_samples_us, cuda_samples_us], placement_of, _log_gap))


def change_in_run(wf_base: Sequence[float], wf_head: Sequence[float], cuda_base: Sequence[float],
                  cuda_head: Sequence[float], placement_of: Sequence[int]) -> LogEstimate | None:
    """log(gap head / gap base) of two builds timed in the same rounds of one run (shared placements), with
    the standard error of the same cluster bootstrap, the (base, head, CUDA) rows resampled together."""
    return cluster_estimate([wf_base, wf_head, cuda_base, cuda_head], placement_of, _log_change)


def run_gap_interval(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float], placement_of: Sequence[int],
                     level: float = 0.95) -> tuple[tuple[float, float] | None, str]:
    """The stored interval of a run's gap and how it was made: :func:`gap_interval` for one process; for the
    processes of a --repeat run, the bootstrap over processes, then placements (the process is a level above
    the placement), scaled by t with K - 1 degrees of freedom."""
    if len(set(process_of(placement_of).tolist())) < 2:
        interval = gap_interval(wf_samples_us, cuda_samples_us, placement_of, level)
        return interval, GAP_INTERVAL_METHOD if interval else ""
    est = gap_estimate(wf_samples_us, cuda_samples_us, placement_of)
    assert est is not None
    return est.interval(level), HIERARCHICAL_INTERVAL


def side_estimate(samples_us: Sequence[float], placement_of: Sequence[int]) -> LogEstimate | None:
    """The log of one side's median time with its cluster-bootstrap standard error."""
    import numpy as np

    return _once("side", [samples_us, placement_of],
                 lambda: cluster_estimate([samples_us], placement_of, lambda m: np.log(row_medians(m[0]))))


def paired_statistics(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                      placement_of: Sequence[int]) -> dict[str, Any]:
    """What a stored timing says about its paired samples, by field: each side's summary, the gap, the noise of
    the pair ratios, and the placement-aware noise and interval of the gap."""
    wf, cu = summarize(wf_samples_us), summarize(cuda_samples_us)
    within, between = placement_noise(wf_samples_us, cuda_samples_us, placement_of)
    interval, method = run_gap_interval(wf_samples_us, cuda_samples_us, placement_of)
    return {
        "warpforth": wf, "cuda": cu, "gap": gap(wf, cu),
        "pair_ratio_noise": pair_ratio_noise(wf.samples_us, cu.samples_us),
        "placements": len(set(placement_of)),
        "within_placement_noise": within, "between_placement_noise": between,
        "gap_lo": interval[0] if interval else None, "gap_hi": interval[1] if interval else None,
        "gap_interval": method,
    }
