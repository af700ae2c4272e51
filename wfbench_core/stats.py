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
