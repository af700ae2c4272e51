"""The steps of a series' gap for the dashboard's charts (E-divisive means, :mod:`wfbench_core.review.changepoints`)."""

from __future__ import annotations

from typing import Any

from wfbench_core.record.results import MODE_AA
from wfbench_core.review.series import Series

__all__ = ["change_marks"]  # internal, not the plugin API


def change_marks(s: Series) -> list[dict[str, Any]]:
    """Each step at the index of its first point after the step among all the series' points (what the chart
    draws); an A/A series has none."""
    from wfbench_core.review.changepoints import change_points

    if s.key.mode == MODE_AA:
        return []
    where = {p.run: n for n, p in enumerate(s.points)}
    return [{"index": where[cp.run_after], "run_before": cp.run_before, "run_after": cp.run_after,
             "commit_before": cp.commit_before, "commit_after": cp.commit_after, "commits": cp.commits,
             "compare_url": cp.compare_url, "gap_before": cp.gap_before, "gap_after": cp.gap_after,
             "change": cp.change, "p_value": cp.p_value} for cp in change_points(s)]
