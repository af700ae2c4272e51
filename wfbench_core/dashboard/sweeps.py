"""The dashboard's sweep section: the newest sweep of each case on each GPU (``wfbench sweep``), gap against size.

Sweeps are read from the history's ``sweeps/`` folder (:mod:`wfbench_core.review.sweeps`), never from its runs: they
are not series, and nothing here reaches the headline, the trends or the geomean.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wfbench_core.record.sweep_record import SweepPoint, SweepResult
from wfbench_core.review.sweeps import newest_sweeps

__all__ = ["sweep_card", "sweep_cards"]  # internal, not the plugin API


def _point(p: SweepPoint, axis: str) -> dict[str, Any]:
    t = p.result.timing
    floor = (p.events or t).launch_floor_us if t is not None else None
    return {
        "x": p.sizes[axis], "sizes": p.sizes, "status": p.result.status, "mode": t.timing_mode if t else "",
        "gap": t.gap if t else None, "gap_lo": t.gap_lo if t else None, "gap_hi": t.gap_hi if t else None,
        "wf": t.warpforth.median_us if t else None, "cuda": t.cuda.median_us if t else None,
        "lb_wf": p.launch_bound_wf, "lb_cuda": p.launch_bound_cuda, "floor": floor,
        "events_gap": p.events.gap if p.events is not None else None,
    }


def sweep_card(sweep: SweepResult, file: str) -> dict[str, Any]:
    env = sweep.environment
    return {
        "case": sweep.case_id, "version": sweep.case_version, "gpu": env.gpu_name, "cc": env.compute_capability,
        "created": sweep.created, "file": file, "axis": sweep.axis, "warpforthc": sweep.warpforthc.version,
        "commit": sweep.source.git_commit, "points": [_point(p, sweep.axis) for p in sweep.points],
    }


def sweep_cards(root: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The newest sweep of each case on each GPU, as the page draws it, and the sweep files that were skipped."""
    found, problems = newest_sweeps(root)
    return [sweep_card(s.sweep, s.file) for s in found], [str(p) for p in problems]
