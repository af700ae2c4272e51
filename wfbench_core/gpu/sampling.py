"""How a case's samples are taken, apart from the GPU: warm-up, calibration, placements, stopping.

The timer supplies a :class:`Rounds` (the GPU edge: fresh buffers for a placement, one timed round of
launches); :func:`sample_case` decides everything else, so the rules are the same for every timing mode
and can be tested without a GPU.

Rules, each written once here:

- **Warm-up**: alternate the sides until the GPU has been busy for ``warmup_s`` (clocks ramp), at most
  twice that in wall time.
- **Warm-up carried over**: where the same timer timed a case (or measured the run's yardsticks) before this one
  and the GPU has been idle less than :data:`WARM_CARRY_IDLE_S` since, the kernel time of that phase counts
  toward this warm-up (:class:`WarmCarry`): the GPU's clocks are still up. Never all of it: the case's own kernels
  still run for :data:`WARMUP_MIN_S` of busy GPU (calibration needs their launch times, and the consistency
  rule their warm-up launches). What was credited is recorded (``warmup_carried_s``); the matching-clock
  rule below still re-takes any pair that ran at a dipped clock.
- **Calibration**: each of the case's own sides gets its own launches per sample, so that each side's sample
  lasts ``min_sample_ms`` times :data:`SAMPLE_MARGIN` (a side four times slower than the other takes a quarter
  of the launches, not a sample four times as long); a side whose sample still comes in short is re-taken with
  more launches (counted in ``short_retakes``), so every kept sample of the case's sides lasts at least
  ``min_sample_ms`` (except where the mode caps the launches per sample: ``cold-l2`` times each launch with its
  own events); a library ceiling takes as many launches as the case's fastest side, and its samples may be
  shorter.
- **Placements**: the pairs are spread over ``placements`` blocks of equal size; each block runs on freshly
  allocated buffers at random 256-byte-multiple offsets (:func:`placement_offsets`), every one written once
  as it is made (:meth:`Rounds.place`: inputs copied in again, outputs poisoned), outside any timed span.
- **Local memory**: where a side's kernel keeps per-thread local memory (a stack indexed at run time, a spilled
  array), each placement also lays local memory out anew: the context's per-thread stack size, by which the
  driver lays local memory out, is :func:`local_stack_bytes` of the placement (recorded per placement in
  ``stack_bytes``). Such a kernel's time moves with that layout as a buffer-bound kernel's moves with its
  buffers' offsets, and without it would depend on the stack size earlier kernels of the process left behind.
- **Rotation**: inside a placement, a sample's launches rotate over :func:`buffer_sets` sets of buffers, each
  at its own offsets, so every sample averages that many layouts: where the sets all fit in half the L2
  together (each stays resident, as one set would), or where one set is at least the L2's size (one set
  could only partly stay resident between launches, by an amount its layout decides; rotated, no launch
  finds its own data left in the L2). Launches per sample are a multiple of the sets.
- **Checked buffers**: before the last pair of every placement the outputs are poisoned again (work a kernel
  skips on an already-written output then shows as a wrong result), and after the placement's last pair
  its outputs are verified (:meth:`Rounds.verify`) before its buffers go.
- **Matching clocks**: where the GPU edge measures each side's own SM clock in a round
  (:meth:`Rounds.side_mhz`), a pair counts when its sides ran at matching clocks: the slowest side's clock at
  least :data:`CLOCK_FLOOR` of the fastest's. A GPU held at its power cap runs below its top clock the whole
  time, both sides alike, and its pairs count; a pair during which the clock moved (a clock or thermal
  event) does not: it is re-taken (counted in ``clock_retakes``), at most :func:`max_clock_retakes` times per
  case (longer while fewer than :data:`MIN_MATCHED` kept pairs matched); after that a mismatched pair is kept. Every kept pair's side clocks are recorded (``pair_side_mhz``),
  so the throttle rule (:mod:`wfbench_core.review.throttle`) tells matched pairs from mismatched ones with the
  same floor. Where only the round's clock is measured (:meth:`Rounds.sm_mhz`; ``cold-l2``), a pair whose
  clock is below :data:`CLOCK_FLOOR` of the highest of this case's pairs so far is the dipped one, re-taken
  the same way. Every kept pair's clock is recorded (``pair_sm_mhz``).
- **Adaptive stopping**: after each block, from ``min_samples`` pairs on, sampling stops once every
  WarpForth side's gap interval (:func:`wfbench_core.stats.gap_interval`) is narrower than
  ``target_halfwidth``, or ``case_budget_s`` of sampling is spent; never beyond ``samples`` pairs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast
from typing import Protocol as TypingProtocol

from wfbench_core.ceiling import LABEL as CEILING
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import TimingProtocol
from wfbench_core.record.timing_record import Sampled

if TYPE_CHECKING:
    import numpy as np

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CLOCK_FLOOR", "CLOCK_RETAKE_SHARE", "CLOCK_RETAKE_SHORT_SHARE", "LOCAL_STACK_LAYOUTS", "LOCAL_STACK_STEP",
    "MAX_SHORT_RETAKES", "MIN_MATCHED", "PLACEMENT_MAX_OFFSET", "PLACEMENT_STEP",
    "ROTATION_MEMORY_SHARE", "SAMPLE_MARGIN", "STOP_BUDGET", "STOP_SAMPLES", "STOP_TARGET", "WARMUP_MIN_S",
    "WARMUP_STEP_MS", "WARMUP_WALL_FACTOR", "WARM_CARRY_IDLE_S", "Rounds", "WarmCarry", "buffer_sets",
    "clocks_match", "dipped", "launches_for", "local_stack_bytes", "max_clock_retakes", "per_side",
    "placement_blocks", "placement_offsets", "round_order", "sample_case", "stop_reason", "zero_offsets",
]

SAMPLE_MARGIN = 1.10  # calibrate for 10 % above min_sample_ms: clocks and placements move per-launch time
MAX_SHORT_RETAKES = 8  # a case whose samples keep coming in short is an error, not an endless loop
CLOCK_FLOOR = 0.995  # a pair whose SM clock is below this share of the case's highest pair clock is dipped
CLOCK_RETAKE_SHARE = 0.25  # dipped pairs are re-taken at most this share of the samples asked, per case
MIN_MATCHED = 10  # pairs: with fewer matched (or clean) ones, a throttled case's clean gap cannot be had
CLOCK_RETAKE_SHORT_SHARE = 2.0  # while fewer than MIN_MATCHED kept pairs matched: re-takes up to this share
PLACEMENT_STEP = 256  # offsets are multiples of this: every buffer stays 256-byte aligned
PLACEMENT_MAX_OFFSET = 4 << 20  # offsets up to 4 MiB
LOCAL_STACK_STEP = 1024  # bytes: placement k's per-thread stack is the kernels' need plus k mod LAYOUTS steps
LOCAL_STACK_LAYOUTS = 4  # distinct local-memory layouts the placements cycle through
ROTATION_MEMORY_SHARE = 0.25  # the rotated buffer sets take at most this share of the GPU's free memory
WARMUP_STEP_MS = 100.0  # the warm-up doubles its launches until a side's round lasts this long
WARMUP_WALL_FACTOR = 2.0  # the warm-up ends after this many times warmup_s of wall time in any case
WARM_CARRY_IDLE_S = 2.0  # the last timing phase's busy time counts toward the next warm-up within this idle time
WARMUP_MIN_S = 0.1  # the shortest warm-up of a case's own kernels (busy GPU), whatever is carried over

STOP_TARGET = "target"
STOP_BUDGET = "budget"
STOP_SAMPLES = "samples"


class Rounds(TypingProtocol):
    """The GPU edge of sampling (the default timer implements it with CUDA events)."""

    sets: int  # buffer sets a placement's launches rotate over (fit() keeps launches a multiple of it)

    def place(self, index: int, offsets: Callable[[int], np.ndarray]) -> None:
        """Fresh input and output buffers for placement ``index``, each written once before this returns (inputs
        copied in, outputs filled); ``offsets(n)`` gives n byte offsets."""

    def fit(self, launches: int) -> int:
        """The number of launches a sample will really make when ``launches`` are asked (>= launches)."""

    def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> Mapping[str, float]:
        """One round: every side in ``order``, ``launches`` launches each (a mapping: each side its own number,
        see :func:`per_side`); kernel ms of each side."""

    def repoison(self) -> None:
        """Overwrite every output buffer of the placement with the poison (untimed, before a round)."""

    def verify(self, placement: int) -> None:
        """Check the placement's outputs: every buffer set's as the timed launches left them, then one set's after
        a launch of each side into re-poisoned outputs; a wrong output raises (naming the placement)."""

    def sm_mhz(self) -> float | None:
        """The mean SM clock over the span of the last round, in MHz; None where it could not be measured."""

    # optional: ``side_mhz() -> Optional[dict[str, float]]``, each side's own mean SM clock in the last round


class WarmCarry:
    """When a timer's last timing phase ended and how long it kept the GPU busy; what the next warm-up is
    credited (the rule of the module docstring, written once here)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.busy_s = 0.0  # kernel time of the last timing phase (0: none since the last credit)
        self.end = 0.0  # when it ended, on ``clock``

    def ended(self, busy_s: float) -> None:
        """A timing phase has just ended, having kept the GPU busy for ``busy_s``."""
        self.busy_s, self.end = busy_s, self.clock()

    def credit(self, warmup_s: float) -> float:
        """The seconds of busy GPU the next warm-up is credited: the last phase's busy time, up to ``warmup_s``
        less :data:`WARMUP_MIN_S`, where the GPU has been idle less than :data:`WARM_CARRY_IDLE_S` since
        (0 otherwise, and for the first case). Each phase is credited once."""
        busy_s, self.busy_s = self.busy_s, 0.0
        if busy_s <= 0 or self.clock() - self.end >= WARM_CARRY_IDLE_S:
            return 0.0
        return min(busy_s, max(0.0, warmup_s - WARMUP_MIN_S))


def clocks_match(clocks: Sequence[float]) -> bool:
    """Whether the sides of a pair ran at matching clocks (the one home of that rule, with :func:`dipped`)."""
    return not dipped(min(clocks), max(clocks))


def max_clock_retakes(samples: int, matched: int | None = None) -> int:
    """How many dipped or mismatched pairs one case may re-take: :data:`CLOCK_RETAKE_SHARE` of the pairs asked,
    at least one; while fewer than :data:`MIN_MATCHED` (or all ``samples``) of its ``matched`` kept pairs
    matched, :data:`CLOCK_RETAKE_SHORT_SHARE` of them. A board at its power cap moves its clock from launch to
    launch, so that only one pair in three to five matches: the longer budget is what lets such a case reach
    the matched pairs its gap is judged by (:mod:`wfbench_core.review.throttle`), and it is spent only there."""
    if matched is not None and matched < min(MIN_MATCHED, samples):
        return max(1, math.ceil(CLOCK_RETAKE_SHORT_SHARE * samples))
    return max(1, math.ceil(CLOCK_RETAKE_SHARE * samples))


def dipped(mhz: float, top: float) -> bool:
    """A clock below :data:`CLOCK_FLOOR` of the highest one: the GPU throttled (the one home of that rule)."""
    return mhz < CLOCK_FLOOR * top


def local_stack_bytes(need: int, placement: int) -> int:
    """The per-thread stack size (bytes) placement ``placement`` of a case runs with, whose kernels need ``need``
    bytes of local memory per thread (0: none, and no layout is set): the need rounded up to
    :data:`LOCAL_STACK_STEP`, plus ``placement`` mod :data:`LOCAL_STACK_LAYOUTS` steps. Every run of the case
    cycles through the same layouts, whatever earlier kernels of the process asked for."""
    if need <= 0:
        return 0
    return (-(-need // LOCAL_STACK_STEP) + placement % LOCAL_STACK_LAYOUTS) * LOCAL_STACK_STEP


def placement_blocks(samples: int, placements: int) -> list[int]:
    """Pairs per placement block: ``samples`` split as evenly as possible over ``placements`` (at most one
    block per pair), larger blocks first."""
    p = max(1, min(placements, samples))
    base, extra = divmod(samples, p)
    return [base + (1 if i < extra else 0) for i in range(p)]


def buffer_sets(footprint_bytes: int, *, l2_bytes: int, free_bytes: int, limit: int) -> int:
    """How many buffer sets a placement's launches rotate over: the largest power of two up to ``limit``
    whose sets fit in :data:`ROTATION_MEMORY_SHARE` of the free memory and either all fit in half the L2
    together or are each at least the L2's size; 1 otherwise, and 1 where the L2 size is unknown."""
    if footprint_bytes <= 0 or limit <= 1 or l2_bytes <= 0:
        return 1
    sets = 1 << (int(limit).bit_length() - 1)
    while sets > 1 and sets * footprint_bytes > ROTATION_MEMORY_SHARE * free_bytes:
        sets //= 2
    if footprint_bytes < l2_bytes:
        while sets > 1 and sets * footprint_bytes > l2_bytes // 2:
            sets //= 2
    return sets


def zero_offsets(n: int) -> np.ndarray:
    """``n`` offsets of 0: the one placement of ``placements=1``, the plain allocation."""
    import numpy as np

    return np.zeros(n, dtype=np.int64)


def placement_offsets(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` random byte offsets, multiples of :data:`PLACEMENT_STEP` from 0 to :data:`PLACEMENT_MAX_OFFSET`."""
    return rng.integers(0, PLACEMENT_MAX_OFFSET // PLACEMENT_STEP, size=n, endpoint=True) * PLACEMENT_STEP


def launches_for(per_launch_ms: float, min_sample_ms: float) -> int:
    """Launches per sample so a sample lasts at least ``min_sample_ms`` with :data:`SAMPLE_MARGIN` to spare."""
    return max(1, math.ceil(min_sample_ms * SAMPLE_MARGIN / max(per_launch_ms, 1e-9)))


def per_side(order: Sequence[str], launches: int | Mapping[str, int]) -> dict[str, int]:
    """Each side's launches in a round: the same number for every side, or each side's own from a mapping."""
    if isinstance(launches, Mapping):
        return {label: int(launches[label]) for label in order}
    return dict.fromkeys(order, int(launches))


def round_order(labels: Sequence[str], r: int) -> list[str]:
    """Which side goes first in round ``r``: two sides alternate, more sides rotate."""
    labels = list(labels)
    if len(labels) == 2:
        return labels if r % 2 == 0 else labels[::-1]
    k = r % len(labels)
    return labels[k:] + labels[:k]


def stop_reason(samples_us: Mapping[str, Sequence[float]], placement_of: Sequence[int], reference: str,
                elapsed_s: float, protocol: TimingProtocol) -> str:
    """Why sampling should stop now ("" = go on); called after each placement block."""
    n = len(placement_of)
    if n >= protocol.samples:
        return STOP_SAMPLES
    if n < protocol.min_samples:
        return ""
    if protocol.target_halfwidth > 0:
        from wfbench_core.stats import gap_interval, relative_halfwidth

        widths = []
        for label, values in samples_us.items():
            if label in (reference, CEILING):  # the library ceiling never decides when the case's sampling stops
                continue
            interval = gap_interval(values, samples_us[reference], placement_of)
            widths.append(math.inf if interval is None else relative_halfwidth(interval))
        if widths and max(widths) < protocol.target_halfwidth:
            return STOP_TARGET
    if protocol.case_budget_s and elapsed_s >= protocol.case_budget_s:
        return STOP_BUDGET
    return ""


def sample_case(rounds: Rounds, labels: Sequence[str], protocol: TimingProtocol, *, reference: str,
                seed: int | None = None, clock: Callable[[], float] = time.perf_counter,
                carried_s: float = 0.0) -> Sampled:
    """Warm up, calibrate and take the paired samples of one case over its placements.

    With one placement (``placements=1``) the buffers sit at offset 0: the plain allocation, the same one
    every time (what ``wfbench crosscheck`` times with both timers). ``carried_s``: busy GPU time credited to
    the warm-up from the timing phase just before (:meth:`WarmCarry.credit`).
    """
    import numpy as np  # here, not at the top: the throttle rule reads this module's constants (wfbench --help)

    labels = list(labels)
    counted = _Busy(rounds)
    rounds = counted
    if seed is None:
        seed = int(cast(int, np.random.SeedSequence().entropy)) & ((1 << 63) - 1)  # fresh per run, recorded

    def place(p: int) -> None:
        if protocol.placements == 1:
            rounds.place(p, zero_offsets)
            return
        rng = np.random.default_rng([seed, p])
        rounds.place(p, lambda n: placement_offsets(rng, n))

    place(0)
    seen: dict[str, list[float]] = {label: [] for label in labels}  # per-launch ms of each warm-up round
    busy_ms, k = _warm_up(rounds, labels, protocol.warmup_s - carried_s, clock, seen)
    launches = _calibrate(rounds, labels, protocol, k, seen, reference, clock)
    pairs = _Pairs(rounds, protocol, labels, launches)
    reason = ""
    t0 = clock()
    for p, block in enumerate(placement_blocks(protocol.samples, protocol.placements)):
        if p > 0:
            place(p)
        for n in range(block):
            if n == block - 1:
                rounds.repoison()
            pairs.take(p)
        rounds.verify(p)
        reason = stop_reason(pairs.samples, pairs.where, reference, clock() - t0, protocol)
        if reason:
            break
    return Sampled(
        samples_us={label: tuple(v) for label, v in pairs.samples.items()},
        order=tuple(pairs.first),
        placement_of=tuple(pairs.where),
        launches_per_sample=pairs.launches[reference],
        side_launches=dict(pairs.launches),
        warmup_busy_s=busy_ms / 1000.0,
        warmup_carried_s=carried_s,
        busy_s=counted.busy_ms / 1000.0,
        short_retakes=pairs.retakes,
        clock_retakes=pairs.clock_retakes,
        pair_sm_mhz=tuple(pairs.mhz) if len(pairs.mhz) == len(pairs.where) else (),
        pair_side_mhz=tuple(pairs.side_mhz) if len(pairs.side_mhz) == len(pairs.where) else (),
        stop_reason=reason or STOP_SAMPLES,
        placement_seed=seed,
    )


def _warm_up(rounds: Rounds, labels: Sequence[str], warmup_s: float, clock: Callable[[], float],
             seen: dict[str, list[float]]) -> tuple[float, int]:
    """Alternate the sides until the kernels have kept the GPU busy for ``warmup_s`` (clocks ramp up), or for
    WARMUP_WALL_FACTOR x warmup_s of wall time where launches are capped (cold-l2: the flushes between
    launches keep the GPU busy too, and are not kernel time); the busy ms and the launches a round reached.
    Each side's per-launch ms of every round is added to ``seen``."""
    busy_ms, k = 0.0, 1
    t_warm = clock()
    while busy_ms < warmup_s * 1000.0 and clock() - t_warm < WARMUP_WALL_FACTOR * warmup_s:
        n = rounds.fit(k)
        ms = rounds.round(labels, n)
        for label, value in ms.items():
            seen[label].append(value / n)
        busy_ms += sum(ms.values())
        if max(ms.values()) < WARMUP_STEP_MS:
            k *= 2
    return busy_ms, rounds.fit(k)


def _calibrate(rounds: Rounds, labels: Sequence[str], protocol: TimingProtocol, k: int,
               seen: dict[str, list[float]], reference: str, clock: Callable[[], float]) -> dict[str, int]:
    """Each side's launches per sample from a probe round of ``k`` launches. A side whose launches do not do the same work
    across the warm-up and probe rounds (``seen``), and again across a second, short warm-up on outputs poisoned
    afresh, is refused first, whatever the time limit
    (:class:`~wfbench_core.gpu.plausibility.InconsistentLaunches`); then a case too slow for max_case_s, with
    what was measured: each side's per-launch time across those rounds."""
    from wfbench_core.gpu.plausibility import InconsistentLaunches

    probe = rounds.round(labels, k)
    for label, value in probe.items():
        seen[label].append(value / k)
    odd = _odd_launches(seen, reference)
    if odd:
        # confirmed before refusing: one slow round (the host held up a launch, a module loaded lazily on its first
        # launch) does not come back; a kernel that skips work once its output is written does, on outputs
        # poisoned again
        rounds.repoison()
        again: dict[str, list[float]] = {label: [] for label in labels}
        _warm_up(rounds, labels, WARMUP_MIN_S, clock, again)
        odd = {label: why for label, why in odd.items() if label in _odd_launches(again, reference)}
    if odd:
        raise InconsistentLaunches(odd)
    # each of the case's own sides its own launches; a library ceiling many times faster than the case must not
    # multiply the case's launches: it takes as many as the case's fastest side, and may last less than min_sample_ms
    own = {label: ms for label, ms in probe.items() if label != CEILING}
    launches = {label: rounds.fit(launches_for(ms / k, protocol.min_sample_ms)) for label, ms in own.items()}
    for label in probe:
        launches.setdefault(label, max(launches.values()))
    predicted_s = protocol.samples * sum(launches[label] * ms / k for label, ms in probe.items()) / 1000.0
    if predicted_s > protocol.max_case_s:
        ranges = ", ".join(f"{label} {min(v) * 1e3:.3g} to {max(v) * 1e3:.3g} us" for label, v in seen.items())
        slowest = max(own, key=lambda label: own[label])
        raise WfbenchError(
            f"timing would take about {predicted_s:.0f} s, over the {protocol.max_case_s:.0f} s per-case limit "
            f"(--max-case-s): per-launch time across the warm-up and probe launches: {ranges}; a sample of the "
            f"slowest side ({slowest}) is {launches[slowest]} launches, {launches[slowest] * own[slowest] / k:.0f} ms"
        )
    return launches


def _odd_launches(seen: Mapping[str, Sequence[float]], reference: str) -> dict[str, str]:
    """The case's own sides whose launches do not do the same work: the library ceiling never refuses a case (it
    never decides the case's outcome; it is judged against its operation's peak once timed,
    :func:`wfbench_core.record.yardsticks.ceiling_implausible`)."""
    from wfbench_core.gpu.plausibility import inconsistent_launches

    return {label: why for label, why in inconsistent_launches(seen, reference).items() if label != CEILING}


class _Busy:
    """The rounds of one case, counting the kernel time of every round (the next case's warm-up credit); every
    other call goes to the rounds as they are (an optional ``side_mhz`` too)."""

    def __init__(self, rounds: Rounds) -> None:
        self.inner, self.busy_ms = rounds, 0.0

    @property
    def sets(self) -> int:
        return self.inner.sets

    @sets.setter
    def sets(self, value: int) -> None:
        self.inner.sets = value

    def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> Mapping[str, float]:
        ms = self.inner.round(order, launches)
        self.busy_ms += sum(ms.values())
        return ms

    def place(self, index: int, offsets: Callable[[int], np.ndarray]) -> None:
        self.inner.place(index, offsets)

    def fit(self, launches: int) -> int:
        return self.inner.fit(launches)

    def repoison(self) -> None:
        self.inner.repoison()

    def verify(self, placement: int) -> None:
        self.inner.verify(placement)

    def sm_mhz(self) -> float | None:
        return self.inner.sm_mhz()

    def __getattr__(self, name: str) -> object:  # the optional side_mhz, where the rounds have it
        return getattr(self.inner, name)


class _Pairs:
    """The kept pairs of one case so far, and the launches per sample (raised by re-takes of short samples);
    a pair taken under the clock floor is re-taken while re-takes are left."""

    def __init__(self, rounds: Rounds, protocol: TimingProtocol, labels: Sequence[str],
                 launches: Mapping[str, int]) -> None:
        self.rounds, self.protocol, self.labels, self.launches = rounds, protocol, list(labels), dict(launches)
        self.samples: dict[str, list[float]] = {label: [] for label in labels}
        self.first: list[str] = []
        self.where: list[int] = []
        self.retakes = 0
        self.clock_retakes = 0
        self.matched = 0  # kept pairs whose sides ran at matching clocks (or at an undipped clock)
        self.mhz: list[float] = []  # the SM clock of each kept pair (only while every pair's is known)
        self.paired = [label for label in self.labels if label != CEILING]  # the ceiling is never in a pair
        self.side_mhz: list[tuple[float, ...]] = []  # each kept pair's sides' clocks, in ``paired`` order
        self.top = 0.0  # the highest pair clock of the case so far

    def take(self, placement: int) -> None:
        """One pair in this pair's order; a pair under the clock floor is re-taken while re-takes are left."""
        order = round_order(self.labels, len(self.first))
        side_mhz = getattr(self.rounds, "side_mhz", lambda: None)
        while True:
            ms = self._timed(order)
            mhz, sides = self.rounds.sm_mhz(), side_mhz()
            if mhz is None:
                break
            self.top = max(self.top, mhz)
            # the pair is the case's sides': a library ceiling timed in the same round never re-takes it
            ok = clocks_match([sides[label] for label in self.paired]) if sides else not dipped(mhz, self.top)
            if ok or self.clock_retakes >= max_clock_retakes(self.protocol.samples, self.matched):
                break
            self.clock_retakes += 1
        self.matched += mhz is not None and ok
        if mhz is not None:
            self.mhz.append(mhz)
        if sides:
            self.side_mhz.append(tuple(round(sides[label], 1) for label in self.paired))
        for label in self.labels:
            self.samples[label].append(ms[label] * 1000.0 / self.launches[label])
        self.first.append(order[0])
        self.where.append(placement)

    def _timed(self, order: Sequence[str]) -> Mapping[str, float]:
        """One round, the sides in ``order``; a round where a side's sample came in short is re-taken with more
        launches of that side (the ceiling's samples may be shorter: it takes the case's fastest side's launches)."""
        protocol, rounds = self.protocol, self.rounds
        while True:
            ms = rounds.round(order, self.launches)
            short = {label: ms[label] for label in self.paired if ms[label] < protocol.min_sample_ms}
            more = {label: rounds.fit(max(self.launches[label] + 1, math.ceil(
                self.launches[label] * protocol.min_sample_ms * SAMPLE_MARGIN / max(got, 1e-9))))
                for label, got in short.items()}
            more = {label: n for label, n in more.items() if n > self.launches[label]}
            if not more:  # none short, or the mode caps launches per sample (cold-l2): the samples stand
                break
            self.retakes += 1
            if self.retakes > MAX_SHORT_RETAKES:
                label, got = min(short.items(), key=lambda item: item[1])
                raise WfbenchError(
                    f"samples keep coming in under {protocol.min_sample_ms:g} ms ({label}: {got:.2f} ms with "
                    f"{self.launches[label]} launches) after {MAX_SHORT_RETAKES} re-takes; the GPU's speed is not "
                    f"steady"
                )
            self.launches.update(more)
            if CEILING in self.launches:
                self.launches[CEILING] = max(self.launches[label] for label in self.paired)
        return ms
