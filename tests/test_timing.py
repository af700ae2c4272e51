"""The timing rules without a GPU: placement schedule, calibration and re-takes, adaptive stopping,
the placement interval, and the timer's GPU edge driven by a fake that behaves like a GPU's clock."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping, Sequence

import attrs
import numpy as np
import pytest

from wfbench_core.gpu import sampling
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import TimingProtocol
from wfbench_core.gpu.sampling import (
    PLACEMENT_MAX_OFFSET,
    PLACEMENT_STEP,
    SAMPLE_MARGIN,
    launches_for,
    per_side,
    placement_blocks,
    placement_offsets,
    round_order,
    buffer_sets,
    sample_case,
)
from wfbench_core.stats import gap_interval, placement_gaps, placement_noise, relative_halfwidth


class FakeRounds:
    """Kernel time per launch = base[label] x placement effect x (1 + noise); ms of a side in a round = its
    launches x that. Each round is recorded with each side's launches.

    ``drift(t)`` scales every side after calibration (a GPU that speeds up makes short samples);
    ``mhz(r)`` is the SM clock of round r (None: the clock is not measured).
    """

    def __init__(self, base_ms: Mapping[str, float], *, placement_sd: float = 0.0, noise: float = 0.0,
                 seed: int = 1, cap: int | None = None, drift: Callable[[int], float] = lambda r: 1.0,
                 clock_step_s: float = 0.0, mhz: Callable[[int], float | None] = lambda r: None) -> None:
        self.base = dict(base_ms)
        self.placement_sd = placement_sd
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        self.cap = cap
        self.drift = drift
        self.placed: list[tuple[int, tuple[int, ...]]] = []
        self.effect = {label: 1.0 for label in base_ms}
        self.rounds: list[tuple[tuple[str, ...], dict[str, int]]] = []
        self.steps: list[tuple[str, int]] = []  # re-poison and verify, with the rounds taken before each
        self.now = 0.0
        self.clock_step_s = clock_step_s
        self.mhz = mhz

    def clock(self) -> float:
        return self.now

    def place(self, index: int, offsets: Callable[[int], np.ndarray]) -> None:
        self.placed.append((index, tuple(int(o) for o in offsets(3))))
        # the placement moves each side by its own factor (different buffers, different DRAM channels)
        self.effect = {label: float(np.exp(self.rng.normal(0, self.placement_sd))) for label in self.base}

    def fit(self, launches: int) -> int:
        return launches if self.cap is None else min(launches, self.cap)

    def repoison(self) -> None:
        self.steps.append(("repoison", len(self.rounds)))

    def verify(self, placement: int) -> None:
        self.steps.append((f"verify {placement}", len(self.rounds)))

    def sm_mhz(self) -> float | None:
        return self.mhz(len(self.rounds))

    def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> dict[str, float]:
        n = per_side(order, launches)
        self.rounds.append((tuple(order), n))
        self.now += self.clock_step_s
        f = self.drift(len(self.rounds))
        return {label: n[label] * self.base[label] * self.effect[label] * f *
                (1 + self.noise * self.rng.standard_normal()) for label in order}


FAST = TimingProtocol(warmup_s=0.05, min_sample_ms=10.0, samples=30, placements=6, min_samples=20,
                target_halfwidth=0.0025, case_budget_s=0.0)


def test_placement_blocks_split_the_samples_evenly() -> None:
    assert placement_blocks(30, 6) == [5] * 6
    assert placement_blocks(10, 6) == [2, 2, 2, 2, 1, 1]
    assert placement_blocks(3, 6) == [1, 1, 1]
    assert placement_blocks(7, 1) == [7]
    for n in range(1, 40):
        for p in range(1, 9):
            blocks = placement_blocks(n, p)
            assert sum(blocks) == n and max(blocks) - min(blocks) <= 1


def test_placement_offsets_are_seeded_aligned_and_spread() -> None:
    a = placement_offsets(np.random.default_rng([7, 0]), 200)
    b = placement_offsets(np.random.default_rng([7, 0]), 200)
    c = placement_offsets(np.random.default_rng([7, 1]), 200)
    assert (a == b).all() and not (a == c).all()
    assert (a % PLACEMENT_STEP == 0).all() and a.min() >= 0 and a.max() <= PLACEMENT_MAX_OFFSET
    assert len(set(a.tolist())) > 150  # 16385 possible offsets


def test_local_memory_layouts_cycle_from_the_kernels_need_whatever_came_before() -> None:
    """A case whose kernels keep local memory runs each placement at its own per-thread stack size: the need
    rounded up to whole steps, then one step more per placement, cycling; a case that keeps none sets none."""
    from wfbench_core.gpu.sampling import LOCAL_STACK_LAYOUTS, LOCAL_STACK_STEP, local_stack_bytes

    assert [local_stack_bytes(0, p) for p in range(3)] == [0, 0, 0]
    step = LOCAL_STACK_STEP
    assert [local_stack_bytes(2048, p) for p in range(LOCAL_STACK_LAYOUTS + 1)] == [
        2 * step + k * step for k in range(LOCAL_STACK_LAYOUTS)] + [2 * step]
    assert local_stack_bytes(48, 0) == step and local_stack_bytes(step + 1, 1) == 3 * step
    layouts = {local_stack_bytes(100, p) for p in range(4 * LOCAL_STACK_LAYOUTS)}
    assert len(layouts) == LOCAL_STACK_LAYOUTS and all(b % step == 0 and b >= 100 for b in layouts)


def test_the_report_says_at_which_stack_sizes_a_local_memory_case_was_laid_out() -> None:
    """A stored run of stack_pick_f64 (its placements at four stack sizes) gets one line naming them and the
    spread left between placements; the same run with no stack sizes recorded (a case that keeps no local
    memory) gets none."""
    from pathlib import Path

    from wfbench_core.record.results import load_result
    from wfbench_core.review.report import layout_notes, render

    path = sorted((Path(__file__).parents[1] / "docs" / "results" / "local-layouts").glob("*.json"))[0]
    run = load_result(path)
    t = run.cases[0].timing
    assert t is not None and len(set(t.stack_bytes)) == 4
    line = (f"  stack_pick_f64: local memory laid out anew per placement, at 4 stack sizes "
            f"({min(t.stack_bytes)}-{max(t.stack_bytes)} B per thread); between placements "
            f"{t.between_placement_noise:.2%}")
    assert layout_notes(run) == "\n" + line and line in render(run).splitlines()
    plain = attrs.evolve(run, cases=(attrs.evolve(run.cases[0], timing=attrs.evolve(t, stack_bytes=())),))
    assert layout_notes(plain) == "" and "local memory laid out" not in render(plain)


def test_calibration_leaves_a_margin() -> None:
    assert launches_for(0.1, 50.0) == math.ceil(50.0 * SAMPLE_MARGIN / 0.1)
    assert launches_for(0.1, 50.0) * 0.1 >= 50.0 * SAMPLE_MARGIN - 1e-9
    assert launches_for(200.0, 50.0) == 1


def test_round_order_alternates_two_sides_and_rotates_more() -> None:
    assert [round_order(["wf", "cuda"], r)[0] for r in range(4)] == ["wf", "cuda", "wf", "cuda"]
    assert [round_order(["a", "b", "c"], r)[0] for r in range(3)] == ["a", "b", "c"]


def test_samples_spread_over_fresh_placements() -> None:
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.18}, placement_sd=0.01, noise=0.001)
    s = sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, target_halfwidth=0.0), reference="cuda", seed=42,
                    clock=rounds.clock)
    assert [i for i, _ in rounds.placed] == list(range(6))
    assert s.placement_of == tuple(p for p in range(6) for _ in range(5))
    assert len(set(s.placement_of)) == 6 and s.stop_reason == sampling.STOP_SAMPLES and s.placement_seed == 42
    assert len(s.samples_us["wf"]) == len(s.samples_us["cuda"]) == 30
    # every placement draws its own offsets, and the same seed draws the same ones again
    offsets = [o for _, o in rounds.placed]
    assert len(set(offsets)) == 6
    again = FakeRounds({"wf": 0.2, "cuda": 0.18}, placement_sd=0.01, noise=0.001)
    sample_case(again, ["wf", "cuda"], attrs.evolve(FAST, target_halfwidth=0.0), reference="cuda", seed=42,
                clock=again.clock)
    assert [o for _, o in again.placed] == offsets
    # a new placement's buffers are written as they are made (the GPU edge's place): no side runs alone
    assert [r for r in rounds.rounds if len(r[0]) == 1] == []


WARMUP_AND_PROBE_ROUNDS = 9  # FAST on a 0.2/0.18 ms kernel: warm-up k = 1, 2, ... 128, then the probe (256)


def test_every_kept_sample_lasts_min_sample_ms_even_when_the_gpu_speeds_up() -> None:
    # right after calibration the GPU gets 15 % faster: samples calibrated with a 10 % margin come in short
    speedup = lambda r: 1.0 if r <= WARMUP_AND_PROBE_ROUNDS else 0.85  # noqa: E731
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.18}, drift=speedup)
    s = sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, target_halfwidth=0.0), reference="cuda", seed=1,
                    clock=rounds.clock)
    assert rounds.rounds[WARMUP_AND_PROBE_ROUNDS - 1][1] == {"wf": 256, "cuda": 256}  # the probe, where expected
    assert s.short_retakes >= 1
    # the short rounds were re-taken, not kept: 30 kept + re-takes, and no other round
    assert len(rounds.rounds) == WARMUP_AND_PROBE_ROUNDS + 30 + s.short_retakes
    for label, base in (("wf", 0.2), ("cuda", 0.18)):
        assert all(us / 1000 == pytest.approx(base * 0.85, rel=1e-12) for us in s.samples_us[label])
        assert s.side_launches[label] * base * 0.85 >= FAST.min_sample_ms
    # without the re-take rule the first samples would have been kept short
    assert math.ceil(FAST.min_sample_ms * SAMPLE_MARGIN / 0.18) * 0.18 * 0.85 < FAST.min_sample_ms


def test_each_side_takes_its_own_launches_so_each_sample_lasts_about_min_sample_ms() -> None:
    """stack_pick_f64 on the H200: WarpForth 1016 us, CUDA 229 us a launch. With one launch count for both, the
    WarpForth sample lasted 4.4 x min_sample_ms and a pair 291 ms instead of about 2 x 55 ms."""
    rounds = FakeRounds({"wf": 1.016, "cuda": 0.229})
    protocol = attrs.evolve(FAST, min_sample_ms=50.0, target_halfwidth=0.0)
    s = sample_case(rounds, ["wf", "cuda"], protocol, reference="cuda", seed=1, clock=rounds.clock)
    assert s.side_launches == {"wf": launches_for(1.016, 50.0), "cuda": launches_for(0.229, 50.0)}
    assert s.side_launches["wf"] < s.side_launches["cuda"] and s.launches_per_sample == s.side_launches["cuda"]
    for label, base in rounds.base.items():
        sample_ms = s.side_launches[label] * base
        assert 50.0 <= sample_ms <= 50.0 * SAMPLE_MARGIN + base  # each side's own sample: min_sample_ms, margin
        assert all(us / 1000 == pytest.approx(base, rel=1e-12) for us in s.samples_us[label])
    sampled = [n for order, n in rounds.rounds if len(order) == 2][-30:]
    assert all(n == s.side_launches for n in sampled)  # every pair took each side's own launches


def test_a_short_side_is_retaken_with_more_of_its_own_launches_only() -> None:
    # after calibration the WarpForth side alone gets 15 % faster: only its launches go up
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.5})
    faster = {"wf": 0.2 * 0.85, "cuda": 0.5}
    s0 = sample_case(FakeRounds(dict(rounds.base)), ["wf", "cuda"], attrs.evolve(FAST, target_halfwidth=0.0),
                     reference="cuda", seed=1)
    calibrated = s0.side_launches

    class WfSpeedsUp(FakeRounds):
        def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> dict[str, float]:
            if len(self.rounds) == WARMUP_AND_PROBE_ROUNDS - 1:
                self.base = dict(faster)
            return super().round(order, launches)

    rounds = WfSpeedsUp(dict(rounds.base))
    s = sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, target_halfwidth=0.0), reference="cuda", seed=1,
                    clock=rounds.clock)
    assert s.short_retakes >= 1
    assert s.side_launches["cuda"] == calibrated["cuda"] and s.side_launches["wf"] > calibrated["wf"]
    assert min(s.samples_us["wf"]) * s.side_launches["wf"] / 1000 >= FAST.min_sample_ms


def test_samples_that_stay_short_end_the_case_with_a_clear_error() -> None:
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.18}, drift=lambda r: 1.0 if r < 8 else 0.5 ** (r - 7))
    with pytest.raises(WfbenchError, match="under 10 ms .* re-takes"):
        sample_case(rounds, ["wf", "cuda"], FAST, reference="cuda", seed=1, clock=rounds.clock)


def test_a_mode_that_caps_launches_keeps_its_short_samples() -> None:
    rounds = FakeRounds({"wf": 0.02, "cuda": 0.018}, cap=256)  # 256 launches = 4.6 ms < 10 ms
    s = sample_case(rounds, ["wf", "cuda"], FAST, reference="cuda", seed=1, clock=rounds.clock)
    assert s.launches_per_sample == 256 and s.short_retakes == 0 and len(s.samples_us["wf"]) >= 20


def test_adaptive_stopping_stops_at_the_minimum_when_placements_agree() -> None:
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.18}, placement_sd=0.0, noise=0.0005)
    s = sample_case(rounds, ["wf", "cuda"], FAST, reference="cuda", seed=3, clock=rounds.clock)
    assert s.stop_reason == sampling.STOP_TARGET
    assert len(s.placement_of) == 20 and len(set(s.placement_of)) == 4  # the first block boundary at >= 20 pairs


def test_adaptive_stopping_runs_on_when_placements_disagree() -> None:
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.18}, placement_sd=0.01, noise=0.0005)
    s = sample_case(rounds, ["wf", "cuda"], FAST, reference="cuda", seed=3, clock=rounds.clock)
    assert s.stop_reason == sampling.STOP_SAMPLES and len(s.placement_of) == 30


def test_adaptive_stopping_respects_the_time_budget() -> None:
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.18}, placement_sd=0.01, clock_step_s=0.2)
    s = sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, case_budget_s=3.0), reference="cuda", seed=3,
                    clock=rounds.clock)
    assert s.stop_reason == sampling.STOP_BUDGET and len(s.placement_of) == 20  # never below min_samples


class SkipsOnceWritten(FakeRounds):
    """The demonstrated skip-work kernel: the first launch of a round on a fresh output does the work (107 us),
    every later one finds it done (1.77 us)."""

    def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> dict[str, float]:
        ms = super().round(order, launches)
        return {**ms, "wf": 0.107 + (per_side(order, launches)["wf"] - 1) * 0.00177} if "wf" in order else ms


@pytest.mark.parametrize("max_case_s", [60.0, 400.0])
def test_a_side_whose_launches_do_not_do_the_same_work_is_implausible_whatever_the_limit(max_case_s: float) -> None:
    from wfbench_core.gpu.plausibility import InconsistentLaunches

    rounds = SkipsOnceWritten({"wf": 0.00177, "cuda": 0.105})
    protocol = attrs.evolve(FAST, warmup_s=0.5, min_sample_ms=50.0, samples=60, max_case_s=max_case_s)
    with pytest.raises(InconsistentLaunches) as err:
        sample_case(rounds, ["wf", "cuda"], protocol, reference="cuda", seed=1, clock=rounds.clock)
    (why,) = err.value.sides.values()
    assert list(err.value.sides) == ["wf"]
    assert re.match(r"its launches do not do the same work: 1\.8\d to 107 us per launch across the warm-up and "
                    r"probe rounds, while the cuda side took 105 to 105 us in the same rounds \(a 5\dx spread "
                    r"relative to it; over 10x is implausible\)$", why), why


def test_clocks_ramping_and_the_launch_path_are_not_inconsistent_launches() -> None:
    """Both sides 5x slower in the first rounds (a GPU at idle clocks) and a 3 us launch path on a 1 us
    WarpForth kernel when a round has one launch: its launches read 1 to 20 us, the same rounds move the CUDA side
    too, and it is timed."""
    class Ramping(FakeRounds):
        def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> dict[str, float]:
            ms = super().round(order, launches)
            slow = 5.0 if len(self.rounds) <= 3 else 1.0
            one = per_side(order, launches)
            return {label: (v + (0.003 if one[label] == 1 and label == "wf" else 0.0)) * slow
                    for label, v in ms.items()}

    rounds = Ramping({"wf": 0.001, "cuda": 0.1})
    s = sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, warmup_s=0.5, min_sample_ms=5.0), reference="cuda",
                    seed=1, clock=rounds.clock)
    assert len(s.samples_us["wf"]) >= 20


def test_one_slow_round_is_not_inconsistent_launches() -> None:
    """A sweep point on the H200 was refused for one slow round: axpy_f64 at 65536 elements read 1.34 to 32.1 us
    per launch (the CUDA side 1.51 to 2.8 us), the host having held up one launch. One slow round does not come
    back on a second warm-up, where a kernel that skips written outputs does: it is timed."""
    class Hiccup(FakeRounds):
        def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> dict[str, float]:
            ms = super().round(order, launches)
            return {**ms, "wf": ms["wf"] + 0.030} if len(self.rounds) == 1 else ms  # the first round, one launch

    rounds = Hiccup({"wf": 0.00134, "cuda": 0.00151})
    s = sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, warmup_s=0.5, min_sample_ms=5.0), reference="cuda",
                    seed=1, clock=rounds.clock)
    assert len(s.samples_us["wf"]) >= 20
    assert "repoison" in [name for name, _ in rounds.steps][:1]  # the confirming warm-up ran on fresh poison


def test_a_case_too_long_for_the_limit_is_refused_saying_what_was_measured() -> None:
    rounds = FakeRounds({"wf": 0.5, "cuda": 0.45})
    with pytest.raises(WfbenchError) as err:
        sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, warmup_s=0.5, min_sample_ms=500.0, samples=60,
                                                         max_case_s=60.0), reference="cuda", seed=1, clock=rounds.clock)
    text = str(err.value)
    assert text.startswith("timing would take about ") and "over the 60 s per-case limit (--max-case-s)" in text
    assert "per-launch time across the warm-up and probe launches: wf 500 to 500 us, cuda 450 to 450 us" in text


def test_every_placement_is_repoisoned_before_its_last_pair_and_verified_after_it() -> None:
    rounds = FakeRounds({"wf": 0.2, "cuda": 0.18})
    s = sample_case(rounds, ["wf", "cuda"], attrs.evolve(FAST, target_halfwidth=0.0), reference="cuda", seed=2,
                    clock=rounds.clock)
    assert [name for name, _ in rounds.steps] == [step for p in range(6) for step in ("repoison", f"verify {p}")]
    # the re-poison comes right before the last pair of each placement (5 pairs each here), the check right after
    for (_, before), (_, after) in zip(rounds.steps[::2], rounds.steps[1::2]):
        assert after - before == 1 and rounds.rounds[before][0] in (("wf", "cuda"), ("cuda", "wf"))
    assert len(s.placement_of) == 30


def test_three_sides_stop_only_when_every_warpforth_side_is_narrow() -> None:
    rounds = FakeRounds({"wf:base": 0.2, "wf:head": 0.21, "cuda": 0.18}, placement_sd=0.0, noise=0.0005)
    s = sample_case(rounds, ["wf:base", "wf:head", "cuda"], FAST, reference="cuda", seed=3, clock=rounds.clock)
    assert s.stop_reason == sampling.STOP_TARGET and set(s.order) == {"wf:base", "wf:head", "cuda"}


# -- the placement interval ----------------------------------------------------------------------------


def _synthetic_run(rng: np.random.Generator, gap: float, placement_sd: float, noise: float,
                   placements: int = 6, pairs: int = 5, common_sd: float = 0.0
                   ) -> tuple[list[float], list[float], list[int]]:
    """Pairs over placements: each placement moves the gap by ``placement_sd`` and both sides together by
    ``common_sd`` (both log-normal), each sample has its own ``noise``."""
    wf, cu, where = [], [], []
    for p in range(placements):
        e = np.exp(rng.normal(0, placement_sd))
        both = np.exp(rng.normal(0, common_sd))
        for _ in range(pairs):
            c = 60.0 * both * (1 + noise * rng.standard_normal())
            cu.append(c)
            wf.append(c * gap * e * (1 + noise * rng.standard_normal()))
            where.append(p)
    return wf, cu, where


@pytest.mark.parametrize("shape", ["placement effect in the gap", "sides moving together"])
def test_gap_interval_covers_the_placement_effect_95_percent_of_the_time(shape: str) -> None:
    from scipy import stats as sps

    rng = np.random.default_rng(11)
    trials, hits, naive_hits, paired_misses = 600, 0, 0, 0
    for _ in range(trials):
        if shape == "placement effect in the gap":
            wf, cu, where = _synthetic_run(rng, 1.125, placement_sd=0.003, noise=0.0005)
        else:  # as matmul_f64_naive with one buffer set on an H200: ~3 % per side, 0.15 % in the ratio
            wf, cu, where = _synthetic_run(rng, 1.125, placement_sd=0.0015, noise=0.0006, placements=15,
                                           pairs=2, common_sd=0.01)
        lo, hi = gap_interval(wf, cu, where)  # type: ignore[misc]
        hits += lo <= 1.125 <= hi
        reported = float(np.median(wf) / np.median(cu))
        assert lo < reported < hi  # the interval belongs to the gap it is printed beside
        # the within-run view: a percentile bootstrap over pairs, blind to placements
        ratios = np.asarray(wf) / np.asarray(cu)
        boots = np.median(rng.choice(ratios, size=(200, ratios.size)), axis=1)
        naive_hits += np.percentile(boots, 2.5) <= 1.125 <= np.percentile(boots, 97.5)
        # the interval of the paired estimate (t over the log per-placement gaps) is centred elsewhere
        g = np.log(placement_gaps(wf, cu, where))
        half = float(sps.t.ppf(0.975, g.size - 1)) * g.std(ddof=1) / np.sqrt(g.size)
        paired_misses += not (np.exp(g.mean() - half) <= reported <= np.exp(g.mean() + half))
    assert 0.93 <= hits / trials <= 0.995
    # what within-run statistics would have claimed
    assert naive_hits / trials < (0.75 if shape == "placement effect in the gap" else 0.9)
    if shape == "sides moving together":
        assert paired_misses / trials > 0.1  # why the interval is the reported gap's own


def test_gap_interval_needs_two_placements_and_placement_noise_splits_the_variation() -> None:
    rng = np.random.default_rng(5)
    wf, cu, where = _synthetic_run(rng, 1.0, placement_sd=0.0, noise=0.001, placements=1, pairs=10)
    assert gap_interval(wf, cu, where) is None
    assert placement_noise(wf, cu, where)[1] is None
    wf, cu, where = _synthetic_run(rng, 1.0, placement_sd=0.02, noise=0.0005, placements=40, pairs=5)
    within, between = placement_noise(wf, cu, where)
    assert between == pytest.approx(0.02, rel=0.3)
    assert within is not None and within < 0.002
    g = placement_gaps(wf, cu, where)
    assert g.size == 40
    assert relative_halfwidth((1.0 / 1.01, 1.01)) == pytest.approx(math.log(1.01))
    with pytest.raises(ValueError):
        placement_gaps(wf, cu, where[:-1])


# -- through the executor: the Timing record a run stores ----------------------------------------------


class _SamplingFakeTimer:
    """A timer whose GPU edge is FakeRounds: the real sampling rules, the real executor, a stated NVML."""

    def __init__(self, protocol: TimingProtocol) -> None:
        self.protocol = protocol

    def environment(self):  # type: ignore[no-untyped-def]
        from wfbench_core.record.results import Environment

        return Environment(gpu_name="Fake GPU", compute_capability="9.0", max_mem_clock_mhz=3201,
                           power_limit_w=700.0, default_power_limit_w=700.0)

    def copy_gbps(self) -> None:
        return None

    def measure(self, case, sides, *, reference_label):  # type: ignore[no-untyped-def]
        from wfbench_core.record.results import Costs, NvmlSummary
        from wfbench_core.contracts import Measurement

        labels = [s.label for s in sides]
        rounds = FakeRounds({label: (0.225 if label.startswith("wf") else 0.2) for label in labels},
                            placement_sd=0.003, noise=0.0005, seed=9)
        s = sample_case(rounds, labels, self.protocol, reference=reference_label, seed=5, clock=rounds.clock)
        throttle = 0x4 if case.id == "axpy_f64" else 0
        nv = NvmlSummary(n=12, sm_mhz_min=1900, sm_mhz_median=1980, sm_mhz_max=1980, mem_mhz_min=2619,
                         mem_mhz_median=2619, reasons=("sw_power_cap",) if throttle else (),
                         power_throttled=bool(throttle))
        return Measurement(passed=True, message="", checks=(), kernel_attrs={}, costs=Costs(),
                           sampled=attrs.evolve(s, nvml=nv))


def test_a_run_records_placements_interval_nvml_and_a_depressed_host(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core import hookimpl
    from wfbench_core.run.executor import execute
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.results import RunResult, dumps, loads

    class Plugin:
        @hookimpl(tryfirst=True)
        def wfbench_make_timer(self, protocol):  # type: ignore[no-untyped-def]
            return _SamplingFakeTimer(protocol)

    from wfbench_core.record.request import ExecuteRequest

    reg = Registry.load(plugins=[Plugin()])  # an in-process plugin: the executor runs the cases in-process
    run = execute(prebuilt_bundle(), registry=reg,
                  request=ExecuteRequest(protocol=attrs.evolve(FAST, target_halfwidth=0.0)))
    by_id = {c.id: c for c in run.cases}
    for c in run.cases:
        t = c.timing
        assert t is not None and t.placements == 6 and len(t.placement_of) == t.warpforth.n == 30
        assert t.gap_lo is not None and t.gap_hi is not None and t.gap_lo < t.gap < t.gap_hi
        assert t.gap_lo < 1.125 < t.gap_hi and t.gap_interval == "t-scaled bootstrap over placements"
        assert t.between_placement_noise is not None and t.within_placement_noise is not None
        assert t.stop_reason == "samples" and t.placement_seed == 5 and t.timing_mode == "events"
    assert by_id["axpy_f64"].timing.throttled and not by_id["scale_i64"].timing.throttled
    assert run.environment.depressed_host and "2619 MHz" in run.environment.depressed_why
    again = loads(dumps(run), RunResult)
    assert again == run


def test_results_written_before_placements_still_load() -> None:
    from pathlib import Path

    from wfbench_core.record.results import load_result

    run = load_result(Path(__file__).parent / "fixtures" / "h200-run1.json")
    t = next(c.timing for c in run.cases if c.timing is not None)
    assert t.placements == 1 and t.gap_lo is None and t.nvml is None and not t.throttled
    assert run.protocol.timing_mode == "events" and not run.environment.depressed_host


def test_warm_up_ends_on_wall_time_where_launches_are_capped() -> None:
    # cold-l2 on a 3 us kernel: 256 launches keep the GPU 0.8 ms busy with kernels, far longer with flushes
    rounds = FakeRounds({"wf": 0.003, "cuda": 0.003}, cap=256, clock_step_s=0.02)
    proto = attrs.evolve(FAST, warmup_s=1.0)
    s = sample_case(rounds, ["wf", "cuda"], proto, reference="cuda", seed=1, clock=rounds.clock)
    warm_rounds = len(rounds.rounds) - len(s.placement_of) - 1  # minus the samples and the probe
    assert warm_rounds == pytest.approx(2.0 / 0.02, abs=2)
    assert s.warmup_busy_s < proto.warmup_s  # kernel time: the flushes are not counted


@pytest.mark.parametrize("arch", ["sm_75", "sm_89", "sm_90"])
def test_the_gate_kernel_assembles_and_polls_with_volatile_loads(arch: str) -> None:
    import shutil

    from wfbench_core.compiling.compile import find_nvcc, ptxas_check
    from wfbench_core.gpu.helper_kernels import GATE_KERNEL, GATE_PTX

    if not shutil.which("ptxas") and not find_nvcc():
        pytest.skip("ptxas is not installed")
    report = ptxas_check(GATE_PTX, arch=arch, case_id="gate")
    assert GATE_KERNEL in report and "0 bytes stack frame" in report
    # a plain load could be hoisted out of the loop: the gate would never see the host open it
    assert "ld.volatile.global.u32" in GATE_PTX and "%globaltimer" in GATE_PTX


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_the_clock_probe_assembles_and_reads_both_timers_on_sm_0_only(arch: str) -> None:
    import shutil

    from wfbench_core.compiling.compile import find_nvcc, ptxas_check
    from wfbench_core.gpu.helper_kernels import CLOCK_KERNEL, CLOCK_PTX

    if not shutil.which("ptxas") and not find_nvcc():
        pytest.skip("ptxas is not installed")
    assert CLOCK_KERNEL in ptxas_check(CLOCK_PTX, arch=arch, case_id="clock")
    assert all(reg in CLOCK_PTX for reg in ("%smid", "%globaltimer", "%clock64"))


def test_buffer_sets_rotate_where_all_sets_stay_resident_or_no_set_can() -> None:
    mib = 1 << 20
    l2, free = 50 * mib, 100 << 30
    assert buffer_sets(768 * mib, l2_bytes=l2, free_bytes=free, limit=8) == 8  # streams from DRAM anyway
    assert buffer_sets(96 * mib, l2_bytes=l2, free_bytes=free, limit=8) == 8  # over the L2: partly cached alone
    assert buffer_sets(50 * mib, l2_bytes=l2, free_bytes=free, limit=8) == 8  # exactly the L2
    assert buffer_sets(40 * mib, l2_bytes=l2, free_bytes=free, limit=8) == 1  # resident alone: no rotation
    assert buffer_sets(25 * mib, l2_bytes=l2, free_bytes=free, limit=8) == 1  # resident alone; two would not fit in half the L2
    assert buffer_sets(12 * mib, l2_bytes=l2, free_bytes=free, limit=8) == 2  # 2 sets fit in half the L2
    assert buffer_sets(1 * mib, l2_bytes=l2, free_bytes=free, limit=8) == 8
    assert buffer_sets(768 * mib, l2_bytes=l2, free_bytes=free, limit=6) == 4  # a power of two
    assert buffer_sets(768 * mib, l2_bytes=l2, free_bytes=8 << 30, limit=8) == 2  # a quarter of free memory
    assert buffer_sets(768 * mib, l2_bytes=l2, free_bytes=free, limit=1) == 1
    assert buffer_sets(768 * mib, l2_bytes=0, free_bytes=free, limit=8) == 1  # unknown L2: no rotation


def _clocked(mhz: Callable[[int], float | None], samples: int = 30) -> tuple[FakeRounds, Any]:
    rounds = FakeRounds({"wf": 0.01, "cuda": 0.01}, mhz=mhz)
    protocol = attrs.evolve(FAST, samples=samples, min_samples=samples)
    return rounds, sample_case(rounds, ["wf", "cuda"], protocol, reference="cuda", seed=3)


def test_pairs_under_the_clock_floor_are_retaken_counted_and_their_clocks_kept() -> None:
    dips: set[int] = set()

    def mhz(r: int) -> float:  # every 5th round of sampling throttles once (its re-take runs at full clock)
        if r % 5 == 0 and r - 1 not in dips:
            dips.add(r)
            return 1900.0
        return 1980.0

    rounds, got = _clocked(mhz)
    assert got.clock_retakes == len(dips) > 0
    assert len(got.pair_sm_mhz) == len(got.samples_us["wf"]) == 30
    assert set(got.pair_sm_mhz) == {1980.0}  # every kept pair ran at the full clock
    paired = [r for r in rounds.rounds if r[1] == got.side_launches]
    assert len(paired) >= 30 + got.clock_retakes  # each re-take is a round of its own


def test_clock_retakes_are_bounded_and_the_dipped_pairs_kept_and_marked() -> None:
    full = {"seen": False}

    def mhz(r: int) -> float:  # the first pair runs at the full clock, every later one throttled
        if not full["seen"]:
            full["seen"] = True
            return 1980.0
        return 1800.0

    _, got = _clocked(mhz, samples=40)
    # one pair at the full clock: fewer than MIN_MATCHED clean ones, so the longer budget, then no more
    assert got.clock_retakes == sampling.max_clock_retakes(40, matched=1) == 80 > sampling.max_clock_retakes(40)
    assert len(got.pair_sm_mhz) == 40 and got.pair_sm_mhz.count(1800.0) == 39
    assert all(sampling.dipped(c, max(got.pair_sm_mhz)) for c in got.pair_sm_mhz[1:])


def test_without_clock_evidence_nothing_is_retaken_and_no_pair_clock_recorded() -> None:
    _, got = _clocked(lambda r: None)
    assert got.clock_retakes == 0 and got.pair_sm_mhz == ()


def test_a_case_timed_right_after_another_gets_the_short_warm_up_and_after_an_idle_gap_the_full_one() -> None:
    from wfbench_core.gpu.sampling import WARM_CARRY_IDLE_S, WARMUP_MIN_S, WarmCarry

    rounds = FakeRounds({"wf": 0.5, "cuda": 0.4})
    proto = attrs.evolve(FAST, warmup_s=1.0, target_halfwidth=0.0)
    warmth = WarmCarry(clock=rounds.clock)

    def timed(idle_s: float) -> tuple[Any, int]:
        rounds.now += idle_s
        before = len(rounds.rounds)
        s = sample_case(rounds, ["wf", "cuda"], proto, reference="cuda", seed=1, clock=rounds.clock,
                        carried_s=warmth.credit(proto.warmup_s))
        warmth.ended(s.busy_s)
        return s, len(rounds.rounds) - before

    first, first_rounds = timed(0.0)  # the first case: nothing to carry
    assert first.warmup_carried_s == 0.0 and first.warmup_busy_s >= proto.warmup_s
    kernel_ms = sum(sum(launches[side] * rounds.base[side] for side in order) for order, launches in rounds.rounds)
    assert first.busy_s == pytest.approx(kernel_ms / 1000.0)  # every round of the case, warm-up to last pair
    right_after, after_rounds = timed(WARM_CARRY_IDLE_S / 2)
    assert right_after.warmup_carried_s == pytest.approx(proto.warmup_s - WARMUP_MIN_S)
    assert WARMUP_MIN_S <= right_after.warmup_busy_s < proto.warmup_s / 2  # its own kernels still warm up
    assert after_rounds < first_rounds
    idle, _ = timed(WARM_CARRY_IDLE_S * 1.5)  # the clocks may have dropped: the full warm-up again
    assert idle.warmup_carried_s == 0.0 and idle.warmup_busy_s >= proto.warmup_s


def test_the_warm_up_credit_is_at_most_what_the_last_phase_kept_busy_and_is_given_once() -> None:
    from wfbench_core.gpu.sampling import WARMUP_MIN_S, WarmCarry

    now = [0.0]
    warmth = WarmCarry(clock=lambda: now[0])
    assert warmth.credit(1.0) == 0.0  # no phase before
    warmth.ended(0.3)
    now[0] += 0.5
    assert warmth.credit(1.0) == pytest.approx(0.3)
    assert warmth.credit(1.0) == 0.0  # that phase is credited once
    warmth.ended(5.0)
    assert warmth.credit(1.0) == pytest.approx(1.0 - WARMUP_MIN_S)
    warmth.ended(5.0)
    assert warmth.credit(WARMUP_MIN_S / 2) == 0.0  # a warm-up shorter than the floor is the case's own


def test_the_docs_state_the_warm_up_carry_rule_with_its_constants() -> None:
    from pathlib import Path

    from wfbench_core.gpu.sampling import WARM_CARRY_IDLE_S, WARMUP_MIN_S

    text = (Path(__file__).resolve().parent.parent / "docs" / "timing.md").read_text()
    assert f"`WARM_CARRY_IDLE_S` ({WARM_CARRY_IDLE_S:g} s)" in text and f"`WARMUP_MIN_S` ({WARMUP_MIN_S:g} s)" in text
    assert "timing.warmup_carried_s" in text
