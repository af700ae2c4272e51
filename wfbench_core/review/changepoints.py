"""Change points in a series: where its gap stepped, placed at a commit range.

The method is E-divisive means (Matteson & James, "A nonparametric approach for multiple change point
analysis of multivariate data", JASA 2014), the one MongoDB's ``signal-processing-algorithms`` and Apache
Otava (formerly Hunter) use on performance series. Neither fits as a dependency here (the first supports one
Python minor version and numpy < 2; the second pins numpy exactly and brings database and chat clients), so
the method is written out below on numpy, as MongoDB's library does it:

* the energy statistic of splitting a window ``z`` at ``τ`` into ``x = z[:τ]`` and ``y = z[τ:]`` is
  ``q = n m / (n + m) · (2 mean|x - y| - mean|x - x'| - mean|y - y'|)`` (within-sample means over distinct
  pairs); the candidate is the ``τ`` that maximises it, each part holding at least ``min_size`` points;
* a candidate is significant when a permutation test says so: the points of every window are shuffled
  ``permutations`` times (a seeded generator, so a series always gives the same answer) and
  ``p = (1 + #{shuffled maximum >= q}) / (1 + permutations)`` must not exceed ``p_value``;
* a significant split divides its window and the search repeats on the parts (hierarchical, divisive),
  until no candidate is significant.

The series is the gap of a series' stable points (unstable and throttled points are left out, as in trends
and alerts). A split at ``τ`` means the step happened between the run of point ``τ - 1`` and the run of point
``τ``: its commit range is (commit of ``τ - 1``, commit of ``τ``]. A step smaller than ``min_change`` is
significant but too small to matter, and is not reported. A step is found once it has held for ``min_size``
runs: the newest point alone is judged by ``wfbench check``'s own alert.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

import attrs

from wfbench_core import stats
from wfbench_core.review.series import Point, Series

if TYPE_CHECKING:  # numpy loads when a series is first searched, not when check or the CLI is imported
    import numpy as np

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["ChangePoint", "Settings", "Split", "best_split", "change_points", "e_divisive", "new_change_points"]


@attrs.frozen
class Settings:
    p_value: float = 0.05
    permutations: int = 199
    min_size: int = 3  # points on each side of a split
    min_change: float = 0.01  # smaller steps are not reported
    max_points: int = 200  # the newest this many stable points of a series are searched


@attrs.frozen
class Split:
    index: int  # first point after the step
    q: float  # energy statistic
    p: float  # permutation-test p-value


@attrs.frozen
class ChangePoint:
    """A step in one series' gap, between two runs."""

    series_id: str
    case_id: str
    compiler_label: str
    index: int  # among the series' stable points: the first point after the step
    run_before: str  # run file of the last point before the step
    run_after: str  # and of the first point after it
    created: str  # when the first point after the step was measured
    commit_before: str
    commit_after: str
    repo: str
    gap_before: float  # median gap of the segment before the step
    gap_after: float  # and after it
    p_value: float

    @property
    def change(self) -> float:
        return self.gap_after / self.gap_before - 1.0

    @property
    def commits(self) -> str:
        """``abc1234..def5678`` (the step is in ``(before, after]``), or "" when the runs carry no commit."""
        if not self.commit_after:
            return ""
        return f"{self.commit_before[:10] or '?'}..{self.commit_after[:10]}"

    @property
    def compare_url(self) -> str:
        repo = self.repo.rstrip("/")
        if not (self.commit_before and self.commit_after and repo.startswith(("https://", "http://"))):
            return ""
        return f"{repo}/compare/{self.commit_before}...{self.commit_after}"

    def describe(self) -> str:
        label = f" [{self.compiler_label}]" if self.compiler_label else ""
        where = f"commits {self.commits}" if self.commits else f"runs {self.run_before} and {self.run_after}"
        return (f"{self.case_id}{label}: gap {self.gap_before:.3f}x -> {self.gap_after:.3f}x ({self.change:+.1%}) "
                f"between {where} (E-divisive, p = {self.p_value:.3f})")


# -------------------------------------------------------------------------------------------------
# E-divisive means


def best_split(z: np.ndarray, min_size: int) -> tuple[int, float]:
    """The split of one window with the largest energy statistic: ``(τ, q)``; ``(0, 0.0)`` when the window
    is too short to split."""
    import numpy as np

    size = len(z)
    min_size = max(2, min_size)
    if size < 2 * min_size:
        return 0, 0.0
    prefix = np.abs(z[:, None] - z[None, :]).cumsum(axis=0).cumsum(axis=1)
    taus = np.arange(min_size, size - min_size + 1)
    n, m = taus.astype(np.float64), (size - taus).astype(np.float64)
    within_x = prefix[taus - 1, taus - 1]  # both triangles of x's distances
    between = prefix[taus - 1, size - 1] - within_x
    within_y = prefix[size - 1, size - 1] - 2 * between - within_x
    e = 2 * between / (n * m) - within_x / (n * (n - 1)) - within_y / (m * (m - 1))
    q = n * m / (n + m) * e
    k = int(np.argmax(q))
    return int(taus[k]), float(q[k])


def e_divisive(values: Sequence[float], settings: Settings = Settings(), *, seed: int = 0) -> list[Split]:
    """Every significant split of ``values``, in index order."""
    import numpy as np

    z = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    found: list[Split] = []
    while True:
        windows = list(pairwise([0, *sorted(s.index for s in found), len(z)]))
        candidates = [(a + t, q) for a, b in windows for t, q in [best_split(z[a:b], settings.min_size)] if t]
        if not candidates:
            break
        index, q = max(candidates, key=lambda c: c[1])
        exceed = 0
        for _ in range(settings.permutations):
            shuffled = max(best_split(rng.permutation(z[a:b]), settings.min_size)[1] for a, b in windows)
            exceed += shuffled >= q
        p = (1 + exceed) / (1 + settings.permutations)
        if p > settings.p_value:
            break
        found.append(Split(index, q, p))
    return sorted(found, key=lambda s: s.index)


# -------------------------------------------------------------------------------------------------
# series


def _seed(series_id: str) -> int:
    """A fixed seed per series: the same series always gives the same answer, whatever else is in the history."""
    try:
        return int(series_id[:8], 16)
    except ValueError:
        return sum(series_id.encode())


def change_points(series: Series, settings: Settings = Settings(), *,
                  points: Sequence[Point] | None = None) -> list[ChangePoint]:
    """The steps of a series' gap worth reporting (at least ``min_change``), oldest first. ``points`` (the
    series' stable points by default) limits the search, e.g. to the points before a run."""
    given = list(points if points is not None else series.stable_points)
    pts = given[-settings.max_points:]
    splits = e_divisive([p.gap for p in pts], settings, seed=_seed(series.id))
    bounds = [0, *(s.index for s in splits), len(pts)]
    out = []
    for k, s in enumerate(splits):
        before = stats.median([p.gap for p in pts[bounds[k]:s.index]])
        after = stats.median([p.gap for p in pts[s.index:bounds[k + 2]]])
        if abs(after / before - 1.0) < settings.min_change:
            continue
        a, b = pts[s.index - 1], pts[s.index]
        out.append(ChangePoint(
            series_id=series.id, case_id=series.key.case_id, compiler_label=series.key.compiler_label,
            index=len(given) - len(pts) + s.index,
            run_before=a.run, run_after=b.run, created=b.created, commit_before=a.git_commit,
            commit_after=b.git_commit, repo=b.git_repo or a.git_repo, gap_before=before, gap_after=after,
            p_value=s.p))
    return out


def new_change_points(series: Series, run: str, settings: Settings = Settings()) -> list[ChangePoint]:
    """The steps that the point of ``run`` brings: found with the series up to and including that point, and
    not (within ``min_size`` points) without it. None when that point is not stable."""
    stable = list(series.stable_points)
    at = next((n for n, p in enumerate(stable) if p.run == run), None)
    if at is None:
        return []
    now = change_points(series, settings, points=stable[:at + 1])
    before = change_points(series, settings, points=stable[:at])
    return [cp for cp in now if all(abs(cp.index - old.index) >= settings.min_size for old in before)]
