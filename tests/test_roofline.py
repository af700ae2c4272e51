"""Roofline: the f64 peak micro-kernel's machine code (real nvcc/ptxas/cuobjdump), its measurement on a GPU,
and both sides' shares of the run's yardsticks."""

from __future__ import annotations

from pathlib import Path

import pytest

from wfbench_core.compiling import diagnostics as dg
from wfbench_core.gpu import roofline as rl
from wfbench_core.record.results import CaseResult, Environment, SideStats, Timing

ARCH = "sm_90"


@pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")
def test_peak_kernel_runs_separate_dmul_and_dadd_through_the_project_compile_path(nvcc: Path) -> None:
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler

    ptx = compile_cuda(rl.SOURCE, case_id="fp64-peak", arch=ARCH, compiler=cuda_compiler("nvcc")).ptx
    d = dg.diagnose(ptx, rl.KERNEL, ARCH, rl.BLOCK, 0)
    assert d.spill_stores == 0 and d.occupancy == 1.0
    loop = d.loop_mix
    assert loop.get("dfma", 0) == 0 and loop["dmul"] == loop["dadd"] > 0
    assert loop["dmul"] % rl.CHAINS == 0  # whole iterations of all chains per loop trip
    # the f64 work dominates the loop: the FLOP count per iteration is what the kernel executes
    assert loop["dmul"] + loop["dadd"] > 4 * (loop.get("ialu", 0) + loop.get("imad", 0) + loop.get("branch", 0))


@pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")
def test_static_loop_accounts_for_the_instructions_ncu_counted(nvcc: Path) -> None:
    """ncu on an H200 (132 SMs) counted the warp instructions of one launch of this kernel; the SASS loop,
    run ITERS / unroll times per warp, must account for nearly all of them: the FLOPs per launch are right."""
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler
    from wfbench_core.gpu.profile import parse_raw_csv, to_profile

    p = to_profile(parse_raw_csv((Path(__file__).parent / "fixtures/ncu/fp64_peak.raw.csv").read_text())[0])
    ptx = compile_cuda(rl.SOURCE, case_id="fp64-peak", arch=ARCH, compiler=cuda_compiler("nvcc")).ptx
    d = dg.diagnose(ptx, rl.KERNEL, ARCH, rl.BLOCK, 0)
    unroll = d.loop_mix["dmul"] // rl.CHAINS
    warps = 132 * rl.BLOCKS_PER_SM * rl.BLOCK // 32
    in_loop = rl.ITERS // unroll * d.loop_instructions
    per_warp = p.instructions / warps  # type: ignore[operator]
    assert in_loop <= per_warp <= in_loop + (d.total - d.loop_instructions)


def _stats(us: float) -> SideStats:
    return SideStats(us, us, 0.0, 0.0, 1, (us,))


def _case(metric: str, gbps: tuple[float | None, float | None], gflops: tuple[float | None, float | None]) -> CaseResult:
    t = Timing(launches_per_sample=1, warpforth=_stats(2.0), cuda=_stats(1.0), gap=2.0, order=("wf",), gbps_wf=gbps[0], gbps_cuda=gbps[1],
               gflops_wf=gflops[0], gflops_cuda=gflops[1])
    return CaseResult(id="c", version=1, priority="P0", fingerprint="f", status="ok", metric=metric, timing=t)


def test_shares_of_copy_bandwidth_and_fp64_peak() -> None:
    env = Environment(copy_gbps=4000.0, fp64_peak_gflops=16000.0)
    r = rl.roofline(_case("compute", (100.0, 200.0), (4000.0, 8000.0)), env)
    assert (r.copy_wf, r.copy_cuda, r.fp64_wf, r.fp64_cuda) == (0.025, 0.05, 0.25, 0.5)
    assert rl.format_roofline(r, "compute") == "fp64 25/50% copy 2/5%"
    assert rl.format_roofline(r, "bandwidth") == "copy 2/5% fp64 25/50%"


def test_missing_yardsticks_or_rates_stay_none() -> None:
    r = rl.roofline(_case("bandwidth", (3000.0, 2000.0), (None, None)), Environment(copy_gbps=4000.0))
    assert (r.copy_wf, r.copy_cuda, r.fp64_wf, r.fp64_cuda) == (0.75, 0.5, None, None)
    assert rl.format_roofline(r) == "copy 75/50%"
    untimed = CaseResult(id="c", version=1, priority="P0", fingerprint="f", status="error")
    assert rl.roofline(untimed, Environment(copy_gbps=1.0)) == rl.Roofline()
    assert rl.format_roofline(rl.Roofline()) == "-"


@pytest.mark.gpu
def test_measured_peak_on_this_gpu() -> None:
    from wfbench_core.gpu.device import Device

    device = Device().open()
    peak = rl.measure_fp64_peak(device, warmup_s=0.2)
    sms = device.sm_count
    # at most one DADD or DMUL per lane per clock: 64 f64 lanes per SM at most, at no more than 3 GHz
    assert 0 < peak < sms * 64 * 3.0


def test_the_f64_peak_right_after_the_copy_yardstick_takes_no_second_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker measures the copy yardstick, then the f64 peak: the copy has just kept the GPU busy for warmup_s,
    so the peak's own warm-up is the shortest (0.2 s); after anything else, the full one."""
    from wfbench_core.gpu.timer import CudaEventTimer
    from wfbench_core.record.results import TimingProtocol

    seen: list[tuple[str, float]] = []
    monkeypatch.setattr(rl, "measure_copy_gbps", lambda device, warmup_s: seen.append(("copy", warmup_s)) or 4e3)
    monkeypatch.setattr(rl, "measure_fp64_peak",
                        lambda device, warmup_s, compiler=None: seen.append(("fp64", warmup_s)) or 6e4)
    timer = CudaEventTimer(TimingProtocol(warmup_s=1.0), device=object())  # type: ignore[arg-type]
    timer.copy_gbps()
    timer.fp64_peak_gflops()
    timer.fp64_peak_gflops()
    assert seen == [("copy", 1.0), ("fp64", 0.0), ("fp64", 1.0)]


def test_the_worker_that_measures_the_yardsticks_compiles_the_f64_kernel_first(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from wfbench_core.compiling import compile as cc
    from wfbench_core.gpu.worker import Worker

    started: list[tuple[object, str]] = []
    monkeypatch.setattr(cc, "prefetch_cuda", lambda sources, arch, compiler: started.extend(sources) or len(sources))
    worker = Worker(io.StringIO())
    worker._prefetch([], fp64_peak=True)
    assert started == [(rl.FP64_CASE_ID, rl.SOURCE)]
    started.clear()
    worker._prefetch([], fp64_peak=False)
    assert started == []
