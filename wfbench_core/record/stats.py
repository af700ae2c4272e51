"""Every statistic wfbench computes, in one place (numpy and scipy, imported when first used).

Within a run: the per-side summary, the gap, the per-pair ratios and their spread, the interval of the gap
over placements. For verdicts (``compare``, ``check``): the cluster-bootstrap estimate of a gap or of a change
of one (processes, then placements), and the between-run variance components of a kernel family (a fresh
process, another board). Across runs: the geometric mean of a case set. Importing this module is cheap: ``wfbench --help`` and
``wfbench list`` must not load numpy or scipy.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

import attrs

from wfbench_core.record.timing_record import SideStats

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def _array(values: Sequence[float]) -> "np.ndarray":
    import numpy as np

    return np.asarray(values, dtype=np.float64)


# --------------------------------------------------------------------------------------------------------
# one sample set


def median(values: Sequence[float]) -> float:
    import numpy as np

    return float(np.median(_array(values)))


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation, unscaled (what ``scipy.stats.median_abs_deviation(x, scale=1.0)`` gives, without
    its per-call overhead: every result read back has its statistics made again from its samples)."""
    import numpy as np

    x = _array(values)
    return float(np.median(np.abs(x - np.median(x))))


def relative_mad(values: Sequence[float]) -> float:
    """MAD / median (unscaled): the noise measure used throughout."""
    m = median(values)
    return mad(values) / m if m > 0 else float("inf")


def percentiles(values: Sequence[float], qs: Sequence[float]) -> tuple[float, ...]:
    import numpy as np

    return tuple(float(v) for v in np.percentile(_array(values), list(qs)))


def summarize(samples_us: Sequence[float]) -> SideStats:
    """Median, 95th percentile, MAD (unscaled), MAD/median and n of per-launch times."""
    x = _array(samples_us)
    if x.size == 0:
        raise ValueError("no samples")
    med = median(x)
    m = mad(x)
    return SideStats(
        median_us=med,
        p95_us=percentiles(x, [95])[0],
        mad_us=m,
        noise=m / med if med > 0 else float("inf"),
        n=int(x.size),
        samples_us=tuple(float(v) for v in x),
    )


def band(stats: SideStats, lo: float = 5.0, hi: float = 95.0) -> tuple[float, float]:
    """The ``lo``-``hi`` percentile band of a side's samples (its median twice when it has none)."""
    if not stats.samples_us:
        return stats.median_us, stats.median_us
    a, b = percentiles(stats.samples_us, [lo, hi])
    return a, b


# --------------------------------------------------------------------------------------------------------
# paired samples of one run


def gap(wf: SideStats, cuda: SideStats) -> float:
    """The headline: median WarpForth time over median CUDA time (1.0 = parity, lower is better)."""
    return wf.median_us / cuda.median_us


def is_unstable(wf: SideStats, cuda: SideStats, threshold: float) -> bool:
    return wf.noise > threshold or cuda.noise > threshold


def pair_ratios(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float]) -> Optional["np.ndarray"]:
    """``wf[i] / cuda[i]`` (sample i of both sides was taken back to back); None unless both sides pair up."""
    wf, cu = _array(wf_samples_us), _array(cuda_samples_us)
    if not wf.size or wf.size != cu.size:
        return None
    return wf / cu


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
                       order: Sequence[str]) -> "np.ndarray":
    """Per pair, the sample of the side that went first (``order[i]``: ``"wf"`` or ``"cuda"``) minus the other
    side's. In an A/A run both sides are one kernel, so this is the position effect alone, free of what
    varies between pairs (placements), which a difference of two medians over different pairs would carry."""
    import numpy as np

    wf, cu = _array(wf_samples_us), _array(cuda_samples_us)
    if not (wf.size == cu.size == len(order)):
        raise ValueError("first_minus_second needs one sample per side and one order entry per pair")
    return np.where(np.array([o == "wf" for o in order], dtype=bool), wf - cu, cu - wf)


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

    d = first_minus_second(timing.warpforth.samples_us, timing.cuda.samples_us, timing.order) \
        * timing.launches_per_sample
    ci = sps.bootstrap((d,), np.median, confidence_level=0.95, method="percentile", n_resamples=4000,
                       random_state=np.random.default_rng(seed)).confidence_interval
    return PositionEffect(float(np.median(d)), float(ci.low), float(ci.high), int((d > 0).sum()), int(d.size))


# -- placement-aware statistics (the samples of a case are spread over several fresh buffer placements) ----

GAP_INTERVAL_METHOD = "t-scaled bootstrap over placements"
GAP_INTERVAL_RESAMPLES = 1000  # resamples of the placements (a fixed seed: the interval is a function of the data)


def placement_gaps(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                   placement_of: Sequence[int]) -> "np.ndarray":
    """The gap of each placement (median WarpForth / median CUDA of its pairs), in placement order."""
    import numpy as np

    wf = _array(wf_samples_us)
    cu = _array(cuda_samples_us)
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
    from scipy import stats as sps

    wf = _array(wf_samples_us)
    cu = _array(cuda_samples_us)
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
    half = float(sps.t.ppf(0.5 + level / 2.0, p - 1)) * s
    centre = math.log(float(np.median(wf)) / float(np.median(cu)))
    return math.exp(centre - half), math.exp(centre + half)


def relative_halfwidth(interval: tuple[float, float]) -> float:
    """Half the width of an interval of a ratio, relative (in log terms: 0.0025 = +/- 0.25 %)."""
    lo, hi = interval
    return math.log(hi / lo) / 2.0


def placement_noise(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                    placement_of: Sequence[int]) -> tuple[float | None, float | None]:
    """(within, between): the median over placements of the pair ratios' MAD/median, and the standard
    deviation of the log per-placement gaps (None with fewer than two placements)."""
    import numpy as np

    wf = _array(wf_samples_us)
    cu = _array(cuda_samples_us)
    where = np.asarray(placement_of)
    within = [pair_ratio_noise(wf[where == p], cu[where == p]) for p in np.unique(where)]
    g = np.log(placement_gaps(wf, cu, where))
    return (float(np.median(within)) if within else None,
            float(g.std(ddof=1)) if g.size >= 2 else None)


def rate(amount: int, median_us: float) -> Optional[float]:
    """Bytes or FLOPs per launch at a median time, in G/s (None where the operation has no such amount)."""
    return amount / (median_us * 1e-6) / 1e9 if amount else None


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


# --------------------------------------------------------------------------------------------------------
# across runs

def geomean(values: Sequence[float]) -> float:
    from scipy import stats as sps

    return float(sps.gmean(_array(values)))


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


def suite_geomean(members: Sequence[SetMember], *, complete: bool = True) -> Optional[SuiteGeomean]:
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


# --------------------------------------------------------------------------------------------------------
# verdict statistics: the interval of a gap or of a change of one, with every level of variation it carries
#
# Pairs share their placement's buffers, placements share their process, processes share their board. A
# measurement's interval resamples the highest level it has several of (processes of a --repeat run, else
# placements), keeping the levels below inside each unit; two separate runs add what a fresh process and,
# on another board, the board add (variance components: wfbench_core.review.evidence). Everything is in log terms.

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


def t_quantile(level: float, df: float) -> float:
    from scipy import stats as sps

    q = 0.5 + level / 2.0
    return float(sps.norm.ppf(q)) if not math.isfinite(df) else float(sps.t.ppf(q, max(df, 1.0)))


def combine(parts: Sequence[LogEstimate], value: float, basis: str = "") -> LogEstimate:
    """A sum of independent parts: variances add, degrees of freedom by Welch-Satterthwaite."""
    var = sum(p.se ** 2 for p in parts)
    den = sum(p.se ** 4 / p.df for p in parts if math.isfinite(p.df) and p.se > 0)
    df = var ** 2 / den if den > 0 else math.inf
    return LogEstimate(value=value, se=math.sqrt(var), df=df, basis=basis)


def process_of(placement_of: Sequence[int]) -> "np.ndarray":
    import numpy as np

    return np.asarray(placement_of, dtype=np.int64) // PROCESS_STRIDE


def _padded(columns: Sequence["np.ndarray"], where: "np.ndarray") -> tuple[list["np.ndarray"], "np.ndarray"]:
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


def _picks(procs: "np.ndarray", resamples: int, seed: int) -> tuple["np.ndarray", int]:
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


def cluster_estimate(columns: Sequence[Sequence[float]], placement_of: Sequence[int], statistic,  # noqa: ANN001
                     *, resamples: int = VERDICT_RESAMPLES, seed: int = 0) -> Optional[LogEstimate]:
    """``statistic`` (a function of one NaN-padded matrix per column, row = resample, giving log values) on
    the data, with its bootstrap standard error over the top level of units (processes, else placements),
    t-scaled: the bootstrap variance times n / (n - 1), and n - 1 degrees of freedom. Resamples whose statistic
    is not finite (a group absent from them) are dropped. None with one unit, or when the statistic cannot be
    had on the data or on half the resamples."""
    import numpy as np

    cols = [_array(c) for c in columns]
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


def row_medians(m: "np.ndarray") -> "np.ndarray":
    """The median of each row, ignoring the NaN padding of a resample (numpy's fast path when there is none)."""
    import numpy as np

    return np.nanmedian(m, axis=1) if np.isnan(m).any() else np.median(m, axis=1)


def _log_gap(m: Sequence["np.ndarray"]) -> "np.ndarray":
    import numpy as np

    return np.log(row_medians(m[0]) / row_medians(m[1]))


def _log_change(m: Sequence["np.ndarray"]) -> "np.ndarray":
    import numpy as np

    wb, wh, cb, ch = (row_medians(x) for x in m)
    return np.log((wh / ch) / (wb / cb))


def gap_estimate(wf_samples_us: Sequence[float], cuda_samples_us: Sequence[float],
                 placement_of: Sequence[int]) -> Optional[LogEstimate]:
    """The log of the reported gap (median WarpForth / median CUDA of all pairs) with its cluster-bootstrap
    standard error: over processes, then placements, in a --repeat run; over placements otherwise."""
    return cluster_estimate([wf_samples_us, cuda_samples_us], placement_of, _log_gap)


def change_in_run(wf_base: Sequence[float], wf_head: Sequence[float], cuda_base: Sequence[float],
                  cuda_head: Sequence[float], placement_of: Sequence[int]) -> Optional[LogEstimate]:
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


def side_estimate(samples_us: Sequence[float], placement_of: Sequence[int]) -> Optional[LogEstimate]:
    """The log of one side's median time with its cluster-bootstrap standard error."""
    import numpy as np

    return cluster_estimate([samples_us], placement_of, lambda m: np.log(row_medians(m[0])))
