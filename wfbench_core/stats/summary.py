"""The statistics of one run: one side's samples, the paired samples of both sides, and across runs.

The per-side summary (:class:`SideStats`), the gap, the per-pair ratios and their spread, the interval of the
gap over placements, the geometric mean of a case set. numpy and scipy are imported when first used.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [  # internal: the names the rest of wfbench uses (README: Layout)
    "GAP_INTERVAL_METHOD", "GAP_INTERVAL_RESAMPLES", "PositionEffect", "SetMember", "SideStats", "SuiteGeomean",
    "as_array", "band", "case_set_id", "first_minus_second", "gap", "gap_interval", "geomean", "geomean_noise",
    "is_unstable", "mad", "median", "pair_ratio_mad", "pair_ratio_noise", "pair_ratios", "percentiles",
    "placement_gaps", "placement_noise", "position_effect", "rate", "relative_halfwidth", "relative_mad", "spread",
    "suite_geomean", "summarize", "t_quantile",
]

def as_array(values: Collection[float]) -> np.ndarray:
    import numpy as np

    return np.asarray(values, dtype=np.float64)


# -- one sample set ---------------------------------------------------------------------------------------------------


@attrs.frozen
class SideStats:
    """Per-launch kernel time of one side, in microseconds, and the raw per-sample values."""

    median_us: float
    p95_us: float
    mad_us: float
    noise: float  # MAD / median
    n: int
    samples_us: tuple[float, ...]
    launches: int = 0  # launches per sample (the last sample's; 0: not recorded, see Timing.launches)



def median(values: Collection[float]) -> float:
    import numpy as np

    return float(np.median(as_array(values)))


def mad(values: Collection[float]) -> float:
    """Median absolute deviation, unscaled (what ``scipy.stats.median_abs_deviation(x, scale=1.0)`` gives, without
    its per-call overhead: every result read back has its statistics made again from its samples)."""
    import numpy as np

    x = as_array(values)
    return float(np.median(np.abs(x - np.median(x))))


def relative_mad(values: Collection[float]) -> float:
    """MAD / median (unscaled): the noise measure used throughout."""
    m = median(values)
    return mad(values) / m if m > 0 else float("inf")


def percentiles(values: Collection[float], qs: Sequence[float]) -> tuple[float, ...]:
    import numpy as np

    return tuple(float(v) for v in np.percentile(as_array(values), list(qs)))


def summarize(samples_us: Sequence[float]) -> SideStats:
    """Median, 95th percentile, MAD (unscaled), MAD/median and n of per-launch times."""
    x = as_array(samples_us)
    if x.size == 0:
        raise ValueError("no samples")
    med = median(x)
    m = mad(x)
    return SideStats(median_us=med, p95_us=percentiles(x, [95])[0], mad_us=m,
                     noise=m / med if med > 0 else float("inf"), n=int(x.size), samples_us=tuple(float(v) for v in x))


def band(stats: SideStats, lo: float = 5.0, hi: float = 95.0) -> tuple[float, float]:
    """The ``lo``-``hi`` percentile band of a side's samples (its median twice when it has none)."""
    if not stats.samples_us:
        return stats.median_us, stats.median_us
    a, b = percentiles(stats.samples_us, [lo, hi])
    return a, b


# -- paired samples of one run ----------------------------------------------------------------------------------------


def gap(wf: SideStats, cuda: SideStats) -> float:
    """The headline: median WarpForth time over median CUDA time (1.0 = parity, lower is better)."""
    return wf.median_us / cuda.median_us


def is_unstable(wf: SideStats, cuda: SideStats, threshold: float) -> bool:
    return wf.noise > threshold or cuda.noise > threshold


def pair_ratios(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float]) -> np.ndarray | None:
    """``wf[i] / cuda[i]`` (sample i of both sides was taken back to back); None unless both sides pair up."""
    wf, cu = as_array(wf_samples_us), as_array(cuda_samples_us)
    if not wf.size or wf.size != cu.size:
        return None
    return as_array(wf / cu)


def pair_ratio_mad(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float]) -> float:
    """MAD (unscaled) of the per-pair ratios: the noise of the gap; 0.0 when the samples do not pair up."""
    r = pair_ratios(wf_samples_us, cuda_samples_us)
    return mad(r) if r is not None else 0.0


def pair_ratio_noise(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float]) -> float:
    """MAD/median of the per-pair ratios ``wf[i] / cuda[i]``."""
    r = pair_ratios(wf_samples_us, cuda_samples_us)
    if r is None:
        raise ValueError("pair_ratio_noise needs paired samples of equal count on each side")
    return relative_mad(r)


def first_minus_second(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                       order: Sequence[str]) -> np.ndarray:
    """Per pair, the sample of the side that went first (``order[i]``: ``"wf"`` or ``"cuda"``) minus the other
    side's. In an A/A run both sides are one kernel, so this is the position effect alone, free of what
    varies between pairs (placements), which a difference of two medians over different pairs would carry."""
    import numpy as np

    wf, cu = as_array(wf_samples_us), as_array(cuda_samples_us)
    if not (wf.size == cu.size == len(order)):
        raise ValueError("first_minus_second needs one sample per side and one order entry per pair")
    return np.asarray(np.where(np.array([o == "wf" for o in order], dtype=bool), wf - cu, cu - wf))


@attrs.frozen
class PositionEffect:
    """Within the pairs of an A/A timing, the first side's sample minus the second's, in us per sample."""

    median_us: float
    lo_us: float  # its 95 % percentile-bootstrap interval (fixed seed: a function of the data)
    hi_us: float
    first_slower: int  # pairs whose first side was slower
    pairs: int


def position_effect(timing: Any, *, seed: int = 0) -> PositionEffect:
    """The position effect of an A/A timing (:func:`first_minus_second`, scaled to whole samples)."""
    import numpy as np
    from scipy import stats as sps

    # per launch, scaled to a sample of the CUDA side (both sides are one kernel; their launches may differ a little)
    d = first_minus_second(timing.warpforth.samples_us, timing.cuda.samples_us, timing.order) \
        * timing.launches_per_sample
    ci = sps.bootstrap((d,), np.median, confidence_level=0.95, method="percentile", n_resamples=4000,
                       random_state=np.random.default_rng(seed)).confidence_interval
    return PositionEffect(float(np.median(d)), float(ci.low), float(ci.high), int((d > 0).sum()), int(d.size))


# -- placement-aware statistics (the samples of a case are spread over several fresh buffer placements) ----

GAP_INTERVAL_METHOD = "t-scaled bootstrap over placements"
GAP_INTERVAL_RESAMPLES = 1000  # resamples of the placements (a fixed seed: the interval is a function of the data)


def placement_gaps(wf_samples_us: Collection[float], cuda_samples_us: Collection[float],
                   placement_of: Collection[int]) -> np.ndarray:
    """The gap of each placement (median WarpForth / median CUDA of its pairs), in placement order."""
    import numpy as np

    wf = as_array(wf_samples_us)
    cu = as_array(cuda_samples_us)
    where = np.asarray(placement_of)
    if not (wf.shape == cu.shape == where.shape):
        raise ValueError("placement_of needs one placement index per pair")
    return np.array([np.median(wf[where == p]) / np.median(cu[where == p]) for p in np.unique(where)])


def gap_interval(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float], placement_of: Sequence[int],
                 level: float = 0.95) -> tuple[float, float] | None:
    """Interval of the reported gap (median WarpForth / median CUDA of all pairs) that covers the placement
    effect; None with fewer than two placements.

    Placements are the independent replicates (pairs inside one placement share its buffers and are strongly
    correlated), so the bootstrap resamples whole placements and recomputes the reported gap from the pooled
    pairs of each resample. With so few units (15 to 30) a percentile bootstrap under-covers: its variance is
    biased low by (P - 1) / P, and it uses a normal quantile where t with P - 1 degrees of freedom is wider. So
    the interval is the reported gap times/divided by exp(t_{P-1} x s), s the bootstrap standard deviation of
    the log gap scaled by sqrt(P / (P - 1)): symmetric in log terms around the gap it belongs to. Where both
    sides' times move together from one placement to the next by much more than their ratio, the ratio of
    the medians is set by the few placements at the median rank, and this is the interval that sees it.
    """
    import numpy as np

    wf = as_array(wf_samples_us)
    cu = as_array(cuda_samples_us)
    where = np.asarray(placement_of)
    if not (wf.shape == cu.shape == where.shape):
        raise ValueError("placement_of needs one placement index per pair")
    units = np.unique(where)
    p = units.size
    if p < 2:
        return None
    # pairs by placement, padded with NaN to the largest block: a resample is a (P x block) pick of rows
    block = int(max(np.count_nonzero(where == u) for u in units))
    w = np.full((p, block), np.nan)
    c = np.full((p, block), np.nan)
    for i, u in enumerate(units):
        m = where == u
        w[i, :m.sum()] = wf[m]
        c[i, :m.sum()] = cu[m]
    pick = np.random.default_rng(0).integers(0, p, size=(GAP_INTERVAL_RESAMPLES, p))
    boot = np.log(np.nanmedian(w[pick].reshape(GAP_INTERVAL_RESAMPLES, -1), axis=1)
                  / np.nanmedian(c[pick].reshape(GAP_INTERVAL_RESAMPLES, -1), axis=1))
    s = float(boot.std(ddof=1)) * math.sqrt(p / (p - 1))
    half = t_quantile(level, p - 1) * s
    centre = math.log(float(np.median(wf)) / float(np.median(cu)))
    return math.exp(centre - half), math.exp(centre + half)


def t_quantile(level: float, df: float) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom (at least 1), the normal
    one where ``df`` is infinite: the same numbers as ``scipy.stats`` (its ``t.ppf`` and ``norm.ppf`` are these
    functions of ``scipy.special``), without importing ``scipy.stats``, which costs every command that reads a
    result file about a second."""
    from scipy import special

    q = 0.5 + level / 2.0
    return float(special.ndtri(q)) if not math.isfinite(df) else float(special.stdtrit(max(df, 1.0), q))


def relative_halfwidth(interval: tuple[float, float]) -> float:
    """Half the width of an interval of a ratio, relative (in log terms: 0.0025 = +/- 0.25 %)."""
    lo, hi = interval
    return math.log(hi / lo) / 2.0


def placement_noise(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                    placement_of: Sequence[int]) -> tuple[float | None, float | None]:
    """(within, between): the median over placements of the pair ratios' MAD/median, and the standard
    deviation of the log per-placement gaps (None with fewer than two placements)."""
    import numpy as np

    wf = as_array(wf_samples_us)
    cu = as_array(cuda_samples_us)
    where = np.asarray(placement_of)
    within = [pair_ratio_noise(wf[where == p], cu[where == p]) for p in np.unique(where)]
    g = np.log(placement_gaps(wf, cu, where))
    return (float(np.median(within)) if within else None,
            float(g.std(ddof=1)) if g.size >= 2 else None)


def rate(amount: int, median_us: float) -> float | None:
    """Bytes or FLOPs per launch at a median time, in G/s (None where the operation has no such amount)."""
    return amount / (median_us * 1e-6) / 1e9 if amount else None


# --------------------------------------------------------------------------------------------------------
# across runs

def geomean(values: Sequence[float]) -> float:
    """exp of the mean log: what ``scipy.stats.gmean`` computes, without importing ``scipy.stats`` (about a
    second of every command that exports or renders a run)."""
    import numpy as np

    with np.errstate(divide="ignore"):
        return float(np.exp(np.mean(np.log(as_array(values)))))


def geomean_noise(values: Sequence[float], mads: Sequence[float]) -> float:
    """Noise of a geometric mean: the members' relative noises add in quadrature, divided by their count."""
    rel = [m / v for v, m in zip(values, mads)]
    return geomean(values) * math.sqrt(sum(r * r for r in rel)) / len(rel)


def case_set_id(members: Iterable[tuple[str, int]]) -> str:
    """A short name for a set of (case ID, version): a geomean over another set is another series."""
    text = "\n".join(sorted(f"{cid}/v{version}" for cid, version in set(members)))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@attrs.frozen
class SetMember:
    case_id: str
    version: int
    gap: float
    stable: bool  # correct, timed and stable in this run


@attrs.frozen
class SuiteGeomean:
    """The geometric-mean gap over a complete, stable case set, named by that set."""

    value: float
    set_id: str
    members: tuple[tuple[str, int], ...]


def suite_geomean(members: Sequence[SetMember], *, complete: bool = True) -> SuiteGeomean | None:
    """The geomean of the gaps, or None unless the run is complete and every member is stable.

    A failed, unstable or missing member never shrinks the set silently: the geomean is withheld, and a
    smaller (or larger) set has another ``set_id``.
    """
    if not complete or not members or not all(m.stable and m.gap > 0 for m in members):
        return None
    ids = tuple(sorted((m.case_id, m.version) for m in members))
    return SuiteGeomean(value=geomean([m.gap for m in members]), set_id=case_set_id(ids), members=ids)


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of a few values (e.g. one gap per process of ``--repeat``); 0 for fewer than 2."""
    if len(values) < 2:
        return 0.0
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return (ordered[-1] - ordered[0]) / median
