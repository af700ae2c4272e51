"""Whether a timed case is physically possible, and whether events mode timed its launches instead of it.

A side is judged against yardsticks measured in the same run (no data sheet figure):

- **bytes**: the bytes the operation must move between DRAM and the SMs per launch, over the side's
  per-launch time, may exceed the run's device-to-device copy bandwidth (``Environment.copy_gbps``) by at most
  :data:`MARGIN`. The operation's bytes are what the case declares, but never more than the buffers it was
  actually given (``Timing.buffer_bytes``: every input and output of one launch). What a launch *must* move:
  all of those bytes where its buffer sets rotate (each set is at least the L2's size, so no launch finds its
  data left in the L2), else the bytes beyond what the L2 can hold; nothing is judged where the L2 size is
  unknown;
- **FLOPs**: the operation's FLOPs per launch over the per-launch time may exceed the peak of *their type*
  (``Work.flop_type``, recorded as ``CaseResult.work_flop_type``; :data:`FLOP_TYPES`) by at most
  :data:`MARGIN`. Every peak comes from the one the run measures, the f64 add/multiply peak
  (``Environment.fp64_peak_gflops``, no FMA), scaled by the device's known ratios (:func:`flop_peak` says
  which in its line): f64 with FMA is twice it (an FMA counts 2 FLOPs); f32 is that times the
  architecture's f32:f64 rate (:data:`F32_PER_F64`; the most lenient known one where the architecture is
  not listed); f16/bf16 at most :data:`HALF_PER_F32` times f32; tensor-core types at most
  :data:`TENSOR_PER_VECTOR` times the f32 peak (tf32, f16, bf16, fp8) or the f64 FMA peak (f64). Each ratio
  is an upper bound across the architectures listed, so a correct kernel is never refused for it. A result
  that records no type is not judged on FLOPs;
- **launch floor**: the per-launch time may be below an empty kernel's, timed the same way in the same
  process (``Timing.launch_floor_us``), by at most :data:`MARGIN`.

- **the same work every launch**: across the warm-up and probe rounds (before any sample), a WarpForth
  side's per-launch time, taken relative to the CUDA side's in the same round (so clocks ramping and the
  launch path cancel), may spread by at most :data:`LAUNCH_SPREAD_LIMIT` times: a kernel that does the work
  on its first launch and skips it once its output is written reads 1.77 to 107 us per launch, 60x. This is
  judged before timing, whatever the per-case time limit (:func:`inconsistent_launches`), and confirmed on a
  second short warm-up over outputs poisoned afresh before a side is refused (one slow round does not repeat).

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

from collections.abc import Mapping, Sequence

from wfbench_core.case import BF16, F16, F32, F64, F64_NO_FMA, FLOP_TYPES, TENSOR_F64
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import TIMING_EVENTS, Timing
from wfbench_core.record.yardsticks import (  # the gate's names, re-exported (the rule lives there: results read back are judged by it too)
    MARGIN,
    TENSOR_PER_VECTOR,
    Yardsticks,
    ceiling_implausible,
    default_flop_type,
    flop_peak,
    implausible,
    implausible_result,
    must_move_bytes,
    sides_implausible,
)

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BF16",
    "F16",
    "F32",
    "F64",
    "F64_NO_FMA",
    "FLOP_TYPES",
    "LAUNCH_BOUND_FACTOR",
    "LAUNCH_SPREAD_LIMIT",
    "MARGIN",
    "TENSOR_F64",
    "TENSOR_PER_VECTOR",
    "InconsistentLaunches",
    "Yardsticks",
    "ceiling_implausible",
    "default_flop_type",
    "flop_peak",
    "implausible",
    "implausible_result",
    "inconsistent_launches",
    "launch_bound",
    "launch_bound_note",
    "launch_bound_sides",
    "must_move_bytes",
    "sides_implausible",
]

LAUNCH_BOUND_FACTOR = 2.0  # events mode: per-launch time within this factor of the launch floor
# a side's per-launch time relative to the reference's in the same rounds may spread this much (clocks ramping
# and the launch path move both sides together; a kernel that skips work once its output is written does not)
LAUNCH_SPREAD_LIMIT = 10.0


def launch_bound_sides(timing: Timing) -> tuple[bool, bool]:
    """(WarpForth, CUDA): events mode, and that side's per-launch time within LAUNCH_BOUND_FACTOR of the launch
    floor (``wfbench sweep`` marks each side where it becomes launch-bound)."""
    floor = timing.launch_floor_us
    if timing.timing_mode != TIMING_EVENTS or not floor:
        return False, False
    return (timing.warpforth.median_us <= LAUNCH_BOUND_FACTOR * floor,
            timing.cuda.median_us <= LAUNCH_BOUND_FACTOR * floor)


def launch_bound(timing: Timing) -> bool:
    """Events mode, and the faster side's per-launch time within LAUNCH_BOUND_FACTOR of the launch floor."""
    return any(launch_bound_sides(timing))


def launch_bound_note(timing: Timing) -> str:
    """The line a launch-bound case carries: what was measured, and the mode that times such kernels."""
    fast = min(timing.warpforth.median_us, timing.cuda.median_us)
    return (f"launch-bound: {fast:.3g} us per launch is within {LAUNCH_BOUND_FACTOR:g}x of an empty kernel's "
            f"{timing.launch_floor_us:.3g} us in events mode, so the host's launch rate was timed; kept, left out "
            f"of trends; time it with --timing-mode graph")


class InconsistentLaunches(WfbenchError):
    """Sides whose launches do not do the same work (:func:`inconsistent_launches`): ``sides`` maps each label
    to its line. Raised before timing; the side is IMPLAUSIBLE, the others are timed without it."""

    def __init__(self, sides: Mapping[str, str]) -> None:
        self.sides = dict(sides)
        super().__init__("; ".join(f"{label}: {why}" for label, why in self.sides.items()))


def inconsistent_launches(per_launch_ms: Mapping[str, Sequence[float]], reference: str) -> dict[str, str]:
    """``{label: line}`` of the sides whose per-launch times over the same rounds (``per_launch_ms[label][r]``
    is round r's), each relative to ``reference``'s in that round, spread over :data:`LAUNCH_SPREAD_LIMIT`."""
    ref = per_launch_ms.get(reference, ())
    out = {}
    for label, values in per_launch_ms.items():
        rel = [v / r for v, r in zip(values, ref) if v > 0 and r > 0]
        if label == reference or len(rel) < 2 or max(rel) / min(rel) <= LAUNCH_SPREAD_LIMIT:
            continue
        out[label] = (f"its launches do not do the same work: {min(values) * 1e3:.3g} to {max(values) * 1e3:.3g} us "
                      f"per launch across the warm-up and probe rounds, while the {reference} side took "
                      f"{min(ref) * 1e3:.3g} to {max(ref) * 1e3:.3g} us in the same rounds (a {max(rel) / min(rel):.0f}x "
                      f"spread relative to it; over {LAUNCH_SPREAD_LIMIT:g}x is implausible)")
    return out
