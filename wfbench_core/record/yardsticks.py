"""The rule of what a GPU can run: a timed side against the yardsticks its run measured (no data sheet figure).

See :mod:`wfbench_core.gpu.plausibility` for the yardsticks and what the worker does with a case that breaks
them. The rule is here, below every stage, so that the worker judging a case it has just timed and every
command reading a result back (:mod:`wfbench_core.record.consistency`) apply the same one.
"""

from __future__ import annotations

from typing import Optional

import attrs

from wfbench_core.record.timing_record import Timing

MARGIN = 0.25  # a side may beat a yardstick by this much (measurement noise, the yardstick's own overheads)


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
    must = must_move_bytes(work_bytes, l2_bytes=yardsticks.l2_bytes, buffer_sets=timing.buffer_sets)
    for name, us in (("WarpForth", timing.warpforth.median_us), ("CUDA", timing.cuda.median_us)):
        if timing.launch_floor_us and us * (1 + MARGIN) < timing.launch_floor_us:
            return (f"{name}: {us:.3g} us per launch, under the {timing.launch_floor_us:.3g} us of an empty kernel "
                    f"timed the same way ({timing.timing_mode} mode)")
        if must and yardsticks.copy_gbps and must / (us * 1e3) > yardsticks.copy_gbps * (1 + MARGIN):
            return (f"{name}: at least {must / 2**20:.1f} MiB to move per launch in {us:.3g} us, "
                    f"{must / (us * 1e3):.0f} GB/s, over {1 + MARGIN:g}x this run's copy bandwidth of "
                    f"{yardsticks.copy_gbps:.0f} GB/s")
        if work_flops and yardsticks.fp64_peak_gflops and \
                work_flops / (us * 1e3) > yardsticks.fp64_peak_gflops * (1 + MARGIN):
            return (f"{name}: {work_flops:.3g} FLOPs per launch in {us:.3g} us, "
                    f"{work_flops / (us * 1e3):.0f} GFLOP/s, over {1 + MARGIN:g}x this run's f64 peak of "
                    f"{yardsticks.fp64_peak_gflops:.0f} GFLOP/s")
    return ""
