"""Statistics of paired samples, with numpy and scipy."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import stats as sps

from wfbench_core.results import SideStats


def summarize(samples_us: Sequence[float]) -> SideStats:
    """Median, 95th percentile, MAD (unscaled), MAD/median and n of per-launch times."""
    x = np.asarray(samples_us, dtype=np.float64)
    if x.size == 0:
        raise ValueError("no samples")
    median = float(np.median(x))
    mad = float(sps.median_abs_deviation(x, scale=1.0))
    return SideStats(
        median_us=median,
        p95_us=float(np.percentile(x, 95)),
        mad_us=mad,
        noise=mad / median if median > 0 else float("inf"),
        n=int(x.size),
        samples_us=tuple(float(v) for v in x),
    )


def gap(wf: SideStats, cuda: SideStats) -> float:
    """The headline: median WarpForth time over median CUDA time (1.0 = parity, lower is better)."""
    return wf.median_us / cuda.median_us


def is_unstable(wf: SideStats, cuda: SideStats, threshold: float) -> bool:
    return wf.noise > threshold or cuda.noise > threshold


def geomean(values: Sequence[float]) -> float:
    return float(sps.gmean(np.asarray(values, dtype=np.float64)))


def pair_ratio_noise(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float]) -> float:
    """MAD/median of the per-pair ratios ``wf[i] / cuda[i]`` (sample i of both sides was taken back to back)."""
    ratios = np.asarray(wf_samples_us, dtype=np.float64) / np.asarray(cuda_samples_us, dtype=np.float64)
    median = float(np.median(ratios))
    return float(sps.median_abs_deviation(ratios, scale=1.0)) / median


# -- placement-aware statistics (the samples of a case are spread over several fresh buffer placements) ----

GAP_INTERVAL_METHOD = "t over log per-placement gaps"


def placement_gaps(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                   placement_of: Sequence[int]) -> np.ndarray:
    """The gap of each placement (median WarpForth / median CUDA of its pairs), in placement order."""
    wf = np.asarray(wf_samples_us, dtype=np.float64)
    cu = np.asarray(cuda_samples_us, dtype=np.float64)
    where = np.asarray(placement_of)
    if not (wf.shape == cu.shape == where.shape):
        raise ValueError("placement_of needs one placement index per pair")
    return np.array([np.median(wf[where == p]) / np.median(cu[where == p]) for p in np.unique(where)])


def gap_interval(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float], placement_of: Sequence[int],
                 level: float = 0.95) -> tuple[float, float] | None:
    """Interval of the gap that covers the placement effect; None with fewer than two placements.

    Placements are the independent replicates (pairs inside one placement share its buffers and are strongly
    correlated), so the interval is Student's t over the log of the per-placement gaps, with P - 1 degrees of
    freedom. A bootstrap over so few units (4 to 10) under-covers: it uses a normal quantile where t with 9 to 3
    degrees of freedom is 15 to 62 % wider, and its variance is biased low by (P - 1) / P.
    """
    g = np.log(placement_gaps(wf_samples_us, cuda_samples_us, placement_of))
    if g.size < 2:
        return None
    half = float(sps.t.ppf(0.5 + level / 2.0, g.size - 1)) * float(g.std(ddof=1)) / float(np.sqrt(g.size))
    mean = float(g.mean())
    return float(np.exp(mean - half)), float(np.exp(mean + half))


def relative_halfwidth(interval: tuple[float, float]) -> float:
    """Half the width of an interval of a ratio, relative (in log terms: 0.0025 = +/- 0.25 %)."""
    lo, hi = interval
    return float(np.log(hi / lo)) / 2.0


def placement_noise(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                    placement_of: Sequence[int]) -> tuple[float | None, float | None]:
    """(within, between): the median over placements of the pair ratios' MAD/median, and the standard
    deviation of the log per-placement gaps (None with fewer than two placements)."""
    wf = np.asarray(wf_samples_us, dtype=np.float64)
    cu = np.asarray(cuda_samples_us, dtype=np.float64)
    where = np.asarray(placement_of)
    within = [pair_ratio_noise(wf[where == p], cu[where == p]) for p in np.unique(where)]
    g = np.log(placement_gaps(wf, cu, where))
    return (float(np.median(within)) if within else None,
            float(g.std(ddof=1)) if g.size >= 2 else None)


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of a few values (e.g. one gap per process of ``--repeat``); 0 for fewer than 2."""
    if len(values) < 2:
        return 0.0
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return (ordered[-1] - ordered[0]) / median
