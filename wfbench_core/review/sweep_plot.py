"""The plot of a sweep: gap against size, and each side's per-launch time against the launch floor.

Drawn with matplotlib (the ``plot`` extra, imported only here, when a plot is asked for), as PNG or SVG by the
file's suffix. Top: the gap at each size with its 95 % interval; a point timed in graph mode (launch-bound in
events mode) is a square, one timed in events mode a dot. Bottom: both sides' median per-launch time, the launch
floor (an empty kernel timed in events mode in the same process) and the band up to
:data:`~wfbench_core.gpu.plausibility.LAUNCH_BOUND_FACTOR` times it, shaded; a side launch-bound in events mode
is marked with a cross at its events-mode time. Sizes where a point failed are named under the plot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wfbench_core.errors import WfbenchError
from wfbench_core.gpu.plausibility import LAUNCH_BOUND_FACTOR
from wfbench_core.record.results import TIMING_GRAPH
from wfbench_core.record.sweep_record import SweepResult

__all__ = ["FORMATS", "plot_sweep"]  # internal, not the plugin API

FORMATS = (".png", ".svg")


def _figure() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise WfbenchError("plotting a sweep needs matplotlib: pip install 'wfbench[plot]' (or leave out the "
                           "plot with --no-plot)") from None
    return Figure(figsize=(7.5, 6.5), layout="constrained")


def plot_sweep(sweep: SweepResult, path: str | Path) -> Path:
    """Write the sweep's plot to ``path`` (``.png`` or ``.svg``); returns the path."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise WfbenchError(f"{path}: a sweep plot is written as {' or '.join(FORMATS)}; name the file so")
    fig = _figure()
    gap_ax, time_ax = fig.subplots(2, 1, sharex=True, height_ratios=(1.2, 1.0))
    timed = [p for p in sweep.points if p.result.timing is not None]
    axis = sweep.axis
    for graph, marker in ((False, "o"), (True, "s")):
        pts = [p for p in timed if (p.timing_mode == TIMING_GRAPH) == graph]
        if not pts:
            continue
        xs = [p.sizes[axis] for p in pts]
        timings = [p.result.timing for p in pts if p.result.timing is not None]
        gaps = [t.gap for t in timings]
        lo = [t.gap - (t.gap_lo or t.gap) for t in timings]
        hi = [(t.gap_hi or t.gap) - t.gap for t in timings]
        gap_ax.errorbar(xs, gaps, yerr=[lo, hi], fmt=marker, color="C0", capsize=3,
                        label="graph mode (launch-bound in events mode)" if graph else "events mode")
    if timed:
        gap_ax.plot([p.sizes[axis] for p in timed], [p.result.timing.gap for p in timed if p.result.timing],
                    color="C0", alpha=0.4)
    gap_ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    gap_ax.set_ylabel("gap (WarpForth / CUDA)")
    gap_ax.set_title(f"{sweep.case_id} v{sweep.case_version} on {sweep.environment.gpu_name or 'unknown GPU'}: "
                     f"gap against {axis}")
    gap_ax.legend(loc="best", fontsize="small")
    _times(time_ax, sweep, timed)
    failed = [f"{axis}={p.sizes[axis]} {p.result.status.upper()}" for p in sweep.points if p.result.timing is None]
    wfc = sweep.warpforthc.version + (f" ({sweep.source.git_commit[:7]})" if sweep.source.git_commit else "")
    fig.supxlabel(f"warpforthc {wfc}; {sweep.created}" + (f"; not timed: {', '.join(failed)}" if failed else ""),
                  fontsize="small")
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Date": None} if path.suffix.lower() == ".svg" else {}
    fig.savefig(path, metadata=metadata)
    return path


def _times(ax: Any, sweep: SweepResult, timed: list[Any]) -> None:
    """Both sides' per-launch time, the launch floor and its launch-bound band, launch-bound sides marked."""
    axis = sweep.axis
    xs = [p.sizes[axis] for p in timed]
    for side, name, color in (("warpforth", "WarpForth", "C1"), ("cuda", "CUDA", "C2")):
        ax.plot(xs, [getattr(p.result.timing, side).median_us for p in timed], marker=".", color=color, label=name)
        flag = "launch_bound_wf" if side == "warpforth" else "launch_bound_cuda"
        bound = [p for p in timed if getattr(p, flag)]
        if bound:
            ax.plot([p.sizes[axis] for p in bound],
                    [getattr(p.events or p.result.timing, side).median_us for p in bound],
                    linestyle="none", marker="x", color=color, label=f"{name}: launch-bound in events mode")
    floors = [(p.sizes[axis], (p.events or p.result.timing).launch_floor_us) for p in timed]
    floors = [(x, f) for x, f in floors if f]
    if floors:
        fx, fy = zip(*floors)
        ax.plot(fx, fy, color="grey", linestyle=":", label="launch floor (empty kernel, events mode)")
        ax.fill_between(fx, fy, [LAUNCH_BOUND_FACTOR * f for f in fy], color="grey", alpha=0.12,
                        label=f"launch-bound: within {LAUNCH_BOUND_FACTOR:g}x of the floor")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(axis)
    ax.set_ylabel("per-launch time (us)")
    ax.legend(loc="best", fontsize="small")
