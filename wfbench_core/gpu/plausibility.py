"""Whether a timed case is physically possible, and whether events mode timed its launches instead of it.

A side is judged against yardsticks measured in the same run (no data sheet figure):

- **bytes**: the bytes the operation must move between DRAM and the SMs per launch, over the side's
  per-launch time, may exceed the run's device-to-device copy bandwidth (``Environment.copy_gbps``) by at most
  :data:`MARGIN`. What a launch *must* move: all of the operation's bytes where its buffer sets rotate
  (each set is at least the L2's size, so no launch finds its data left in the L2), else the bytes beyond
  what the L2 can hold; nothing is judged where the L2 size is unknown;
- **FLOPs**: the operation's FLOPs per launch over the per-launch time may exceed the measured f64
  add/multiply peak (``Environment.fp64_peak_gflops``) by at most :data:`MARGIN`;
- **launch floor**: the per-launch time may be below an empty kernel's, timed the same way in the same
  process (``Timing.launch_floor_us``), by at most :data:`MARGIN`.

A case that breaks any of them is IMPLAUSIBLE: it fails with the figure, and its timing is not kept (so it is
never stored as a timing, exported or charted). A kernel that skips work it finds already done on its output
is what this catches when its outputs stay right.

**Launch-bound**: in ``events`` mode, a case whose faster side takes at most :data:`LAUNCH_BOUND_FACTOR` times
the launch floor per launch is timed at the host's launch rate, not at the kernel's speed. It is kept and
marked (``Timing.launch_bound``), left out of trends, and its line points to ``--timing-mode graph``, which
replays the launches as a CUDA graph without the launch path.
"""

from __future__ import annotations

from typing import Optional

import attrs

from wfbench_core.record.results import TIMING_EVENTS, Timing

MARGIN = 0.25  # a side may beat a yardstick by this much (measurement noise, the yardstick's own overheads)
LAUNCH_BOUND_FACTOR = 2.0  # events mode: per-launch time within this factor of the launch floor


@attrs.frozen
class Yardsticks:
    """What the run measured to judge its cases by (None where it was not measured)."""

    copy_gbps: Optional[float] = None
    fp64_peak_gflops: Optional[float] = None
    l2_bytes: int = 0


def must_move_bytes(work_bytes: int, *, l2_bytes: int, buffer_sets: int) -> Optional[int]:
    """Bytes a launch must move from DRAM at least (None where the L2 size is unknown)."""
    if l2_bytes <= 0:
        return None
    if buffer_sets > 1 and work_bytes >= l2_bytes:
        return work_bytes  # rotated sets, each at least the L2's size: nothing is left in the L2 for a launch
    return max(0, work_bytes - l2_bytes)


def implausible(timing: Timing, *, work_bytes: int, work_flops: int, yardsticks: Yardsticks) -> str:
    """One line saying which side is faster than the GPU can run it and by what figure ("WarpForth: 0.1 us per
    launch, under …"); "" when none is."""
    return side_implausible((("WarpForth", timing.warpforth.median_us), ("CUDA", timing.cuda.median_us)), timing,
                            work_bytes=work_bytes, work_flops=work_flops, yardsticks=yardsticks)


def side_implausible(sides: tuple[tuple[str, float], ...], timing: Timing, *, work_bytes: int, work_flops: int,
                     yardsticks: Yardsticks, flops_peak: float = 1.0) -> str:
    """:func:`implausible` for named per-launch times; ``flops_peak``: the peak of the operation a side runs over
    the measured f64 add/multiply peak (a library ceiling on tensor cores runs above it)."""
    must = must_move_bytes(work_bytes, l2_bytes=yardsticks.l2_bytes, buffer_sets=timing.buffer_sets)
    peak = yardsticks.fp64_peak_gflops * flops_peak if yardsticks.fp64_peak_gflops else None
    for name, us in sides:
        if timing.launch_floor_us and us * (1 + MARGIN) < timing.launch_floor_us:
            return (f"{name}: {us:.3g} us per launch, under the {timing.launch_floor_us:.3g} us of an empty kernel "
                    f"timed the same way ({timing.timing_mode} mode)")
        if must and yardsticks.copy_gbps and must / (us * 1e3) > yardsticks.copy_gbps * (1 + MARGIN):
            return (f"{name}: at least {must / 2**20:.1f} MiB to move per launch in {us:.3g} us, "
                    f"{must / (us * 1e3):.0f} GB/s, over {1 + MARGIN:g}x this run's copy bandwidth of "
                    f"{yardsticks.copy_gbps:.0f} GB/s")
        if work_flops and peak and work_flops / (us * 1e3) > peak * (1 + MARGIN):
            scaled = f" x {flops_peak:g} (the operation's peak)" if flops_peak != 1.0 else ""
            return (f"{name}: {work_flops:.3g} FLOPs per launch in {us:.3g} us, "
                    f"{work_flops / (us * 1e3):.0f} GFLOP/s, over {1 + MARGIN:g}x this run's f64 peak of "
                    f"{yardsticks.fp64_peak_gflops:.0f} GFLOP/s{scaled}")
    return ""


def launch_bound(timing: Timing) -> bool:
    """Events mode, and the faster side's per-launch time within LAUNCH_BOUND_FACTOR of the launch floor."""
    return bool(timing.timing_mode == TIMING_EVENTS and timing.launch_floor_us and
                min(timing.warpforth.median_us, timing.cuda.median_us) <= LAUNCH_BOUND_FACTOR * timing.launch_floor_us)


def launch_bound_note(timing: Timing) -> str:
    """The line a launch-bound case carries: what was measured, and the mode that times such kernels."""
    fast = min(timing.warpforth.median_us, timing.cuda.median_us)
    return (f"launch-bound: {fast:.3g} us per launch is within {LAUNCH_BOUND_FACTOR:g}x of an empty kernel's "
            f"{timing.launch_floor_us:.3g} us in events mode, so the host's launch rate was timed; kept, left out "
            f"of trends; time it with --timing-mode graph")
