"""The timing record: one set of fields from the sampler to the stored result.

:class:`Sampling` holds how one case's samples were taken (launches, order, placements, re-takes, mode, NVML,
the launch floor). The sampler and the GPU edge fill it in; a timer returns it whole as :class:`Sampled` (the
same fields plus the per-launch samples of every side, by label); the stored :class:`Timing` is the same
fields plus the statistics made from the samples. No field is copied by hand from one record to the next:
:func:`sampling_fields` carries all of them, so a field added to :class:`Sampling` reaches the result file.

:mod:`wfbench_core.record.results` re-exports every name here; it is the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

# how a sample is timed (TimingProtocol.timing_mode)
from wfbench_core.case import TIMING_COLD_L2, TIMING_EVENTS, TIMING_GRAPH, TIMING_MODES
from wfbench_core.stats.summary import SideStats

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "TIMING_COLD_L2",
    "TIMING_EVENTS",
    "TIMING_GRAPH",
    "TIMING_MODES",
    "NvmlSummary",
    "Sampled",
    "Sampling",
    "SideStats",
    "Timing",
    "sampled_of",
    "sampling_fields",
]


@attrs.frozen
class NvmlSummary:
    """What NVML reported while one case was timed (read on a thread, about 10 times a second)."""

    n: int = 0  # readings
    sm_mhz_min: int = 0
    sm_mhz_median: int = 0
    sm_mhz_max: int = 0
    mem_mhz_min: int = 0
    mem_mhz_median: int = 0
    power_w_median: float = 0.0
    power_w_max: float = 0.0
    temp_c_max: int = 0
    reasons: tuple[str, ...] = ()  # clock event (throttle) reasons seen in any reading
    power_throttled: bool = False  # a power cap or power brake slowed the clocks at least once
    thermal_throttled: bool = False  # a thermal slowdown slowed the clocks at least once


@attrs.frozen(kw_only=True)
class Sampling:
    """How one case's paired samples were taken (stored with them, field for field, in :class:`Timing`)."""

    # the CUDA (reference) side's launches per sample, of the last sample (earlier ones may have had fewer before a
    # re-take); each side takes its own number (SideStats.launches)
    launches_per_sample: int = 0
    warmup_busy_s: float = 0.0  # measured: how long the warm-up kept the GPU busy (the setting is warmup_s)
    order: tuple[str, ...] = ()  # which side went first in each pair ("wf", "wf:head", "cuda" …)
    clocks_sm_mhz: tuple[int, ...] = ()  # SM clock sampled during timing
    timing_mode: str = TIMING_EVENTS  # see TimingProtocol.timing_mode
    placement_of: tuple[int, ...] = ()  # placement index of each pair (empty: one placement)
    placement_seed: int = 0  # seed of the placements' random offsets (replays them)
    stop_reason: str = ""  # "target", "budget" or "samples": why sampling stopped
    short_retakes: int = 0  # rounds re-taken because a sample came in under min_sample_ms
    buffer_sets: int = 1  # buffer sets each placement's launches rotated over (see TimingProtocol.rotation)
    gate_retakes: int = 0  # rounds re-taken because the host did not release the start gate in time
    nvml: NvmlSummary | None = None
    # per-launch time of an empty kernel, timed the same way in the same process (None: not measured)
    launch_floor_us: float | None = None
    placement_checks: int = 0  # verifying launches on the timed buffers (every placement and side)
    # the mean SM clock (MHz) over each kept pair, measured in-band (empty: not measured, or not for every pair)
    pair_sm_mhz: tuple[float, ...] = ()
    clock_retakes: int = 0  # pairs re-taken because they ran under the clock floor (wfbench_core.gpu.sampling)
    buffer_bytes: int = 0  # bytes of the buffers one launch was given (inputs and outputs; 0: not recorded)
    # each kept pair's sides' own SM clocks (MHz), in the order of samples_us (empty: not measured per side)
    pair_side_mhz: tuple[tuple[float, ...], ...] = ()
    # busy GPU time credited to the warm-up from the case timed just before, its clocks still up (0: none;
    # wfbench_core.gpu.sampling.WarmCarry): the warm-up's own busy time is then warmup_s less this
    warmup_carried_s: float = 0.0
    # the per-thread stack size (bytes) each placement ran with, where the case's kernels keep local memory (its
    # layout: wfbench_core.gpu.sampling.local_stack_bytes); empty: they keep none, or not recorded
    stack_bytes: tuple[int, ...] = ()


@attrs.frozen(kw_only=True)
class Sampled(Sampling):
    """What a timer returns for a correct case: the :class:`Sampling` and every side's samples."""

    samples_us: Mapping[str, tuple[float, ...]] = attrs.Factory(dict)  # label -> per-launch us of each pair
    side_launches: Mapping[str, int] = attrs.Factory(dict)  # label -> launches per sample (the last sample's)
    busy_s: float = 0.0  # kernel time of every round of the case (not stored: the next case's warm-up credit)


@attrs.frozen(kw_only=True)
class Timing(Sampling):
    """The paired samples of one case (sample i of each side was taken back to back), and their statistics."""

    warpforth: SideStats
    cuda: SideStats
    gap: float  # median WarpForth / median CUDA
    gbps_wf: float | None = None
    gbps_cuda: float | None = None
    gflops_wf: float | None = None
    gflops_cuda: float | None = None
    # MAD/median of the per-pair ratios WarpForth/CUDA: what pairing leaves of the noise, since a clock dip
    # that slows both samples of a pair cancels in their ratio
    pair_ratio_noise: float | None = None
    # placement-aware sampling: the pairs were spread over this many fresh buffer placements
    placements: int = 1
    within_placement_noise: float | None = None  # median over placements of the pair ratios' MAD/median
    between_placement_noise: float | None = None  # standard deviation of log per-placement gaps
    gap_lo: float | None = None  # 95 % interval of the gap over placements (see gap_interval)
    gap_hi: float | None = None
    gap_interval: str = ""  # how gap_lo/gap_hi were made
    throttled: bool = False  # power or thermal throttling during timing: kept, marked, out of trends
    # events mode, a side's per-launch time within LAUNCH_BOUND_FACTOR of the launch floor: what was measured
    # is the host's launch rate, not the kernel; kept, marked, out of trends (graph mode times such kernels)
    launch_bound: bool = False
    # --repeat K: the gap of each fresh process (the headline pools their samples; placements are numbered
    # across processes, so the interval covers what changes between processes too)
    repeat_gaps: tuple[float, ...] = ()
    # a base/head run: the compiler label whose WarpForth samples these are, where this label's PTX was
    # byte-identical to it in every configuration, so the kernel was timed once ("" = timed as itself)
    timed_with: str = ""

    def launches(self, side: SideStats) -> int:
        """Launches per sample of ``side`` (``self.warpforth`` or ``self.cuda``); a result from before each side took
        its own number recorded only ``launches_per_sample``, the same for both."""
        return side.launches or self.launches_per_sample


def sampling_fields(record: Sampling) -> dict[str, Any]:
    """Every :class:`Sampling` field of ``record`` (a Sampled or a Timing), to make the next record from."""
    return {f.name: getattr(record, f.name) for f in attrs.fields(Sampling)}


def sampled_of(timing: Timing, wf_label: str = "wf", cuda_label: str = "cuda") -> Sampled:
    """A stored timing as the record a timer returned (its two sides' samples under ``wf_label``/``cuda_label``)."""
    return Sampled(samples_us={wf_label: timing.warpforth.samples_us, cuda_label: timing.cuda.samples_us},
                   side_launches={wf_label: timing.launches(timing.warpforth), cuda_label: timing.launches(timing.cuda)},
                   **sampling_fields(timing))
