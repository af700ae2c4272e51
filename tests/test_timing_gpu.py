"""The timing paths on a real GPU (skipped without one): placements, clean rounds, the three modes, NVML,
and the nvbench cross-check. WarpForth PTX comes from tests/fixtures/ptx, so no warpforthc is needed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

from wfbench_core.run.executor import execute
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import OK, TIMING_COLD_L2, TIMING_EVENTS, TIMING_GRAPH, UNSTABLE, TimingProtocol
from wfbench_core.stats import first_minus_second

pytestmark = pytest.mark.gpu

QUICK = TimingProtocol(warmup_s=0.3, min_sample_ms=10.0, samples=12, placements=4, min_samples=8)


def _sides(case, bundle: Path, small: bool):  # type: ignore[no-untyped-def]
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler
    from wfbench_core.contracts import Side
    from wfbench_core.gpu.timer import CudaEventTimer

    timer = CudaEventTimer(QUICK)
    cuda = cuda_compiler("auto")
    source = {c: ("check" if small else c) for c in ("check", "canonical")}
    wf = {c: (bundle / case.id / f"{source[c]}.ptx").read_text() for c in source}
    cu = {c: compile_cuda((bundle / case.id / f"{source[c]}.cu").read_text(), case_id=case.id, arch=timer.arch(),
                          compiler=cuda).ptx for c in source}
    return timer, [Side("wf", case.wf_kernel, wf), Side("cuda", case.cuda_kernel, cu)]


def test_placements_interval_nvml_and_sample_length(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    result = execute(prebuilt_bundle(case_ids=("reduce_sum_f64", "axpy_f64")), registry=Registry.load(),
                     request=ExecuteRequest(protocol=QUICK))
    for case in result.cases:
        assert case.status in (OK, UNSTABLE), case.message
        assert all(c.passed for c in case.checks)  # the last placement's outputs too
        t = case.timing
        assert t is not None and t.timing_mode == TIMING_EVENTS
        assert 2 <= t.placements <= QUICK.placements and len(set(t.placement_of)) == t.placements
        # 256+ MiB of buffers stream from DRAM: the launches rotate over buffer sets (fewer on a small GPU)
        assert t.buffer_sets >= 2 and t.gate_retakes == 0
        assert t.launches(t.warpforth) % t.buffer_sets == 0 and t.launches(t.cuda) % t.buffer_sets == 0
        assert t.gap_lo is not None and t.gap_hi is not None and t.gap_lo <= t.gap <= t.gap_hi
        assert t.stop_reason in ("target", "budget", "samples") and t.warpforth.n >= QUICK.min_samples
        if t.short_retakes == 0:  # every sample of a side was taken with that side's launches
            shortest = min(min(s.samples_us) * t.launches(s) for s in (t.warpforth, t.cuda))
            assert shortest >= QUICK.min_sample_ms * 1000
        if importlib.util.find_spec("pynvml") is not None:
            assert t.nvml is not None and t.nvml.n >= 1 and t.nvml.sm_mhz_max > 0
    assert result.environment.default_power_limit_w >= 0


def test_the_gate_holds_the_stream_until_the_host_opens_it_or_its_timeout() -> None:
    import ctypes
    import time

    from wfbench_core.gpu.device import Device
    from wfbench_core.gpu.helper_kernels import GATE_KERNEL, GATE_PTX

    device = Device().open()
    kernel = device.load(GATE_PTX, GATE_KERNEL, case_id="gate")
    flag = device.mapped(2, np.uint32)
    config = device.config((1, 1, 1), (1, 1, 1))
    ptr = ctypes.c_uint64(device.address(flag))

    def gate(timeout_s: float) -> None:
        flag[0] = flag[1] = 0
        device.launch(kernel, config, (ptr, ctypes.c_uint64(int(timeout_s * 1e9))))

    # never opened: it gives up after its timeout and says so
    t0 = time.perf_counter()
    gate(0.05)
    device.synchronize()
    assert time.perf_counter() - t0 >= 0.05 and flag[1] == 1
    # opened by the host after 30 ms: the stream was held that long, and no timeout is reported
    t0 = time.perf_counter()
    gate(5.0)
    behind = device.event(timing=False)
    device.record(behind)
    time.sleep(0.03)
    held = not behind.query()
    flag[0] = 1
    device.synchronize()
    waited = time.perf_counter() - t0
    assert held and waited >= 0.03 and flag[1] == 0  # held until opened, and opened before its timeout


def test_clean_rounds_leave_no_first_side_excess(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    # short samples: the submission latency is per sample (39-107 us in the stored runs), the noise scales
    # with the sample's length, so 10 ms samples separate the two clearly
    proto = attrs.evolve(QUICK, samples=24, min_samples=24)
    result = execute(prebuilt_bundle(case_ids=("axpy_f64",)), registry=Registry.load(),
                     request=ExecuteRequest(protocol=proto, mode="aa"))
    (case,) = result.cases
    t = case.timing
    assert t is not None and t.short_retakes == 0
    # within each pair, the first side's sample minus the second's: the position effect alone
    d = first_minus_second(t.warpforth.samples_us, t.cuda.samples_us, t.order) * t.launches_per_sample
    excess = float(np.median(d))
    se = 1.2533 * 1.4826 * float(np.median(np.abs(d - excess))) / float(np.sqrt(len(d)))  # of the median
    assert abs(excess) < max(10.0, 3 * se), f"the first side carries {excess:.1f} us per sample (se {se:.1f})"


def test_graph_mode_matches_events_on_a_large_kernel(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    bundle = prebuilt_bundle(case_ids=("axpy_f64",))
    reg = Registry.load()
    case = reg.case("axpy_f64")
    timer, sides = _sides(case, bundle, small=False)
    medians = {}
    for mode in (TIMING_EVENTS, TIMING_GRAPH):
        timer.protocol = attrs.evolve(QUICK, timing_mode=mode)
        m = timer.measure(case, sides, reference_label="cuda")
        assert m.passed, m.message
        assert m.sampled.timing_mode == mode
        medians[mode] = float(np.median(m.sampled.samples_us["cuda"]))
    assert medians[TIMING_GRAPH] == pytest.approx(medians[TIMING_EVENTS], rel=0.01)


def test_cold_l2_is_slower_than_hot_on_a_small_kernel(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.studies.crosscheck import small_case

    bundle = prebuilt_bundle(case_ids=("axpy_f64",))
    case = small_case(Registry.load().case("axpy_f64"))  # 100003 doubles: 2.4 MB, resident in L2 when hot
    timer, sides = _sides(case, bundle, small=True)
    medians = {}
    for mode in (TIMING_EVENTS, TIMING_GRAPH, TIMING_COLD_L2):
        timer.protocol = attrs.evolve(QUICK, timing_mode=mode, min_sample_ms=5.0)
        m = timer.measure(case, sides, reference_label="cuda")
        assert m.passed, m.message
        medians[mode] = float(np.median(m.sampled.samples_us["cuda"]))
    assert medians[TIMING_COLD_L2] > medians[TIMING_GRAPH]
    assert medians[TIMING_GRAPH] <= medians[TIMING_EVENTS] * 1.02  # no launch overhead to add


@pytest.mark.skipif(importlib.util.find_spec("cuda.bench") is None, reason="cuda-bench is not installed")
def test_crosscheck_agrees_with_nvbench(prebuilt_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from wfbench_core.studies.crosscheck import floor_name

    bundle = prebuilt_bundle(case_ids=("axpy_f64", "scale_i64"))
    # nvbench keeps its benchmarks for the life of a process: its own process
    r = subprocess.run([sys.executable, "-m", "wfbench_core", "crosscheck", str(bundle), "--quiet",
                        "--samples", "12"], capture_output=True, text=True, env={**os.environ}, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "axpy_f64" in r.stdout and "worst per-kernel disagreement" in r.stdout
    # each case's floor is nvbench's empty kernel launched with that case's arguments: its own benchmark
    nv_json = tmp_path / "nvbench.json"
    r = subprocess.run([sys.executable, "-m", "wfbench_core", "crosscheck", str(bundle), "--quiet", "--samples", "12",
                        "--json", "--nvbench-json", str(nv_json)], capture_output=True, text=True,
                       env={**os.environ}, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    names = {b["name"] for b in json.loads(nv_json.read_text())["benchmarks"]}
    assert {floor_name("axpy_f64"), floor_name("scale_i64")} <= names
    floors = {k["case"]: k["nvbench_floor_us"] for k in json.loads(r.stdout)["kernels"]}
    assert set(floors) == {"axpy_f64", "scale_i64"} and all(f is not None and f > 0 for f in floors.values())
    print(f"nvbench's launch floor per case: {floors}")


def test_cold_l2_times_no_launch_latency_even_when_the_host_falls_behind(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    import time

    from wfbench_core.compiling.compile import cuda_compiler
    from wfbench_core.compiling.prepare import prepare
    from wfbench_core.gpu.device import Device
    from wfbench_core.stats import median
    from wfbench_core.studies.crosscheck import _case_rounds, small_case

    bundle = prebuilt_bundle(case_ids=("scale_i64",))
    _, (prep,) = prepare(bundle, Registry.load(), ("scale_i64",))
    device = Device().open()
    rounds = _case_rounds(device, prep, small_case(prep.case), True, cuda_compiler("auto"), rotation=8)
    rounds.mode = TIMING_COLD_L2
    launches = rounds.fit(128)

    def per_launch_us() -> float:
        return median([rounds.round(["cuda"], launches)["cuda"] / launches for _ in range(5)]) * 1000.0

    per_launch_us()  # untimed: the flush buffer, the events, a warm launch path
    # (crosscheck's rounds launch a side's kernel first here: that launch loads it, which may outlast the gate)
    warm_retakes = rounds.gate_retakes
    prompt = per_launch_us()

    def late(go):  # type: ignore[no-untyped-def]
        def slow() -> None:
            time.sleep(50e-6)  # the host falls 50 us behind before each launch
            go()
        return slow

    rounds.launchers["cuda"] = [late(go) for go in rounds.launchers["cuda"]]
    behind = per_launch_us()
    rounds.close()
    # a start event stamped before its launch is queued would time the host's 50 us too
    assert rounds.gate_retakes == warm_retakes and behind == pytest.approx(prompt, rel=0.05, abs=0.5)


@pytest.mark.parametrize("mode", [TIMING_EVENTS, TIMING_COLD_L2])
def test_each_pairs_sm_clock_is_measured_and_retakes_recorded(prebuilt_bundle, mode: str) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.gpu.sampling import max_clock_retakes

    protocol = attrs.evolve(QUICK, timing_mode=mode)
    result = execute(prebuilt_bundle(case_ids=("axpy_f64",)), registry=Registry.load(),
                     request=ExecuteRequest(protocol=protocol))
    (case,) = result.cases
    t = case.timing
    assert t is not None, case.message
    # every kept pair's own clock, read in-band from SM 0's cycle counter against the global timer
    assert len(t.pair_sm_mhz) == t.warpforth.n and all(200.0 < mhz < 4000.0 for mhz in t.pair_sm_mhz)
    if result.environment.max_sm_clock_mhz:
        assert max(t.pair_sm_mhz) <= 1.02 * result.environment.max_sm_clock_mhz
    # a board at its power cap may re-take up to the longer budget, spent only while few pairs matched
    assert 0 <= t.clock_retakes <= max_clock_retakes(protocol.samples, matched=0)
    print(f"{mode}: pair SM clock {min(t.pair_sm_mhz):.0f}-{max(t.pair_sm_mhz):.0f} MHz, "
          f"{t.clock_retakes} pairs re-taken")


def test_local_memory_is_laid_out_anew_for_each_placement(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    """stack_pick_f64 keeps its stack in local memory (WarpForth's frame is larger than the CUDA side's array):
    each placement runs at the per-thread stack size the rule gives it; axpy_f64 keeps none and sets none. The
    device's stack size is read and set through the driver, as the rounds do."""
    from wfbench_core.gpu.device import Device
    from wfbench_core.gpu.sampling import LOCAL_STACK_STEP, local_stack_bytes

    device = Device().open()
    ptx = (Path(__file__).parent / "fixtures" / "ptx" / "stack_pick_f64.canonical.ptx").read_text()
    need = device.load(ptx, "stack_pick_f64", case_id="stack_pick_f64").resources().local_bytes
    assert need > 0
    before = device.stack_bytes()
    device.set_stack_bytes(before + LOCAL_STACK_STEP)
    assert device.stack_bytes() == before + LOCAL_STACK_STEP
    device.set_stack_bytes(before)
    assert device.stack_bytes() == before

    result = execute(prebuilt_bundle(case_ids=("stack_pick_f64", "axpy_f64")), registry=Registry.load(),
                     request=ExecuteRequest(protocol=QUICK))
    pick, axpy = result.cases
    assert pick.timing is not None and axpy.timing is not None, (pick.message, axpy.message)
    placements = sorted(set(pick.timing.placement_of))
    assert len(placements) >= 2
    assert pick.timing.stack_bytes == tuple(local_stack_bytes(need, p) for p in placements)
    assert len(set(pick.timing.stack_bytes)) == len(placements)
    assert axpy.timing.stack_bytes == ()
    print(f"stack_pick_f64: gap {pick.timing.gap:.4f}, stack bytes per placement {pick.timing.stack_bytes}, "
          f"between-placement noise {pick.timing.between_placement_noise:.2%}")
