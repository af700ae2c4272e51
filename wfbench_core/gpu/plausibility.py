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

The rule lives in :mod:`wfbench_core.record.yardsticks`: the worker applies it to every timed case, and every
result read back (``history add``, ``compare``, ``check``, ``export``, the dashboard) is judged by it again
against the yardsticks that result recorded.

A case that breaks any of them is IMPLAUSIBLE: it fails with the figure, and its timing is not kept (so it is
never stored as a timing, exported or charted). A kernel that skips work it finds already done on its output
is what this catches when its outputs stay right.

**Launch-bound**: in ``events`` mode, a case whose faster side takes at most :data:`LAUNCH_BOUND_FACTOR` times
the launch floor per launch is timed at the host's launch rate, not at the kernel's speed. It is kept and
marked (``Timing.launch_bound``), left out of trends, and its line points to ``--timing-mode graph``, which
replays the launches as a CUDA graph without the launch path.
"""

from __future__ import annotations

# the rule itself is in wfbench_core.record.yardsticks, so that every result read back is judged by it too
from wfbench_core.record.results import TIMING_EVENTS, Timing
from wfbench_core.record.yardsticks import MARGIN, Yardsticks, implausible, must_move_bytes  # noqa: F401

LAUNCH_BOUND_FACTOR = 2.0  # events mode: per-launch time within this factor of the launch floor


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
