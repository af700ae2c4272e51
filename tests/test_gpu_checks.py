"""Correctness and plausibility on a real GPU (skipped without one): the timed buffers are verified, the launch
floor is measured, a kernel that skips work it finds done is IMPLAUSIBLE, one that does half the work on buffers
it was not checked on FAILS naming the placement, and a load failure keeps the JIT's words.

The adversarial kernels are CUDA C++ compiled here (nvcc or NVRTC) and timed as the WarpForth side of
``scale_i64``; the bundle cases come from tests/fixtures/ptx, so no warpforthc is needed.
"""

from __future__ import annotations

import attrs
import pytest

from wfbench_core.run.executor import execute
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import IMPLAUSIBLE, OK, TIMING_EVENTS, TIMING_GRAPH, UNSTABLE, TimingProtocol

pytestmark = pytest.mark.gpu

QUICK = TimingProtocol(warmup_s=0.3, min_sample_ms=10.0, samples=12, placements=4, min_samples=8)

# y = k * x, but the whole grid returns at once where y[0] already holds k * x[0]: after the first launch on an
# output, a launch only looks (what the stand-in's skipping kernel does, on a GPU)
SKIPS_WHEN_ANSWERED = r"""
extern "C" __global__ void scale_skip(long long k, const long long* __restrict__ x, long long* __restrict__ y,
                                      long long n) {
    if (n > 0 && y[0] == k * x[0]) return;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = k * x[i];
}
"""

# y = k * x, a correct kernel
SCALE = r"""
extern "C" __global__ void scale_plain(long long k, const long long* __restrict__ x, long long* __restrict__ y,
                                       long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = k * x[i];
}
"""

# y = k * x on the first two output buffers the module sees (the correctness phase's, the first timed set),
# only the first half of y on any other
HALF_ELSEWHERE = r"""
__device__ unsigned long long seen_y[2];
extern "C" __global__ void scale_half(long long k, const long long* __restrict__ x, long long* __restrict__ y,
                                      long long n) {
    __shared__ int known;
    if (threadIdx.x == 0) {  // one thread per block registers y among the first two outputs it sees
        unsigned long long a = (unsigned long long)y;
        unsigned long long prev = atomicCAS(&seen_y[0], 0ULL, a);
        known = prev == 0ULL || prev == a;
        if (!known) { prev = atomicCAS(&seen_y[1], 0ULL, a); known = prev == 0ULL || prev == a; }
    }
    __syncthreads();
    const long long m = known ? n : n / 2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride) y[i] = k * x[i];
}
"""


def _timer_and_sides(source: str, kernel: str, protocol: TimingProtocol = QUICK):  # type: ignore[no-untyped-def]
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler
    from wfbench_core.contracts import Side
    from wfbench_core.gpu.timer import CudaEventTimer

    case = Registry.load().case("scale_i64")
    timer = CudaEventTimer(protocol)
    compiler = cuda_compiler("auto")

    def ptx(src: str) -> str:
        return compile_cuda(src, case_id=case.id, arch=timer.arch(), compiler=compiler).ptx

    wf = ptx(source)
    cuda = {config: ptx(case.render(config)[1]) for config in ("check", "canonical")}
    return case, timer, [Side("wf", kernel, {"check": wf, "canonical": wf}), Side("cuda", case.cuda_kernel, cuda)]


def test_timed_buffers_are_verified_and_the_launch_floor_is_measured(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    result = execute(prebuilt_bundle(case_ids=("axpy_f64", "scale_i64")), registry=Registry.load(),
                     request=ExecuteRequest(protocol=QUICK))
    for case in result.cases:
        assert case.status in (OK, UNSTABLE), case.message
        t = case.timing
        assert t is not None and t.launch_floor_us is not None and 0 < t.launch_floor_us < t.cuda.median_us
        assert t.placement_checks == t.placements * 2 * 2  # 2 verifying launches per placement and side
        timed = {c.side for c in case.checks if c.what == "timed-buffers" and c.passed}
        assert timed == {"wf", "cuda"}
        assert 0 < case.costs.placement_checks_s < case.costs.timing_s
        print(f"{case.id}: floor {t.launch_floor_us:.2f} us, {t.placement_checks} verifying launches in "
              f"{case.costs.placement_checks_s:.3f} s of {case.costs.timing_s:.2f} s timing")


def test_a_kernel_that_skips_work_it_finds_done_is_caught() -> None:
    """Its blocks return at once when y[0] already holds the answer. On a real GPU that is a race: blocks that
    start after another wrote y[0] skip their part of even the first launch, and the reference check finds the
    elements never written (as the H200 showed). Where every launch wrote everything first, only the time gives
    it away: IMPLAUSIBLE. Either way it is never timed as a result."""
    from wfbench_core.gpu.outcome import case_result, measured
    from wfbench_core.gpu.plausibility import Yardsticks

    from wfbench_core.gpu.plausibility import InconsistentLaunches

    case, timer, sides = _timer_and_sides(SKIPS_WHEN_ANSWERED, "scale_skip")
    try:
        m = timer.measure(case, sides, reference_label="cuda")
    except InconsistentLaunches as odd:  # its launches before timing already differ: IMPLAUSIBLE in the worker
        print(odd)
        assert list(odd.sides) == ["wf"] and "its launches do not do the same work" in odd.sides["wf"]
        return
    if not m.passed:
        print(m.message)
        assert m.sampled is None and "never written" in m.message
        return
    yardsticks = Yardsticks(copy_gbps=timer.copy_gbps(), l2_bytes=timer.device.l2_bytes)
    result = measured(case_result(case, mode="paired", plugin="test"), m, "wf", unstable_noise=0.03,
                      yardsticks=yardsticks)
    print(result.message)
    assert result.status == IMPLAUSIBLE and result.timing is None
    assert result.message.startswith("scale_i64[canonical] WarpForth: ")


def test_half_the_work_on_buffers_it_was_not_checked_on_fails_naming_the_placement() -> None:
    case, timer, sides = _timer_and_sides(HALF_ELSEWHERE, "scale_half")
    m = timer.measure(case, sides, reference_label="cuda")
    print(m.message)
    assert not m.passed and m.sampled is None
    (bad,) = [c for c in m.checks if not c.passed]
    assert bad.placement is not None and bad.what in ("left-by-timing", "timed-buffers", "relaunch")
    assert "of timed placement" in m.message and "elements never written" in m.message


@pytest.mark.parametrize("mode", [TIMING_EVENTS, TIMING_GRAPH])
def test_small_kernels_in_events_mode_are_launch_bound(mode: str) -> None:
    from wfbench_core.studies.crosscheck import small_case
    from wfbench_core.gpu.outcome import case_result, measured

    scale = Registry.load().case("scale_i64")
    case, timer, sides = _timer_and_sides(scale.render("check")[1], scale.cuda_kernel,
                                          attrs.evolve(QUICK, timing_mode=mode, min_sample_ms=5.0))
    small = small_case(case)  # 100 003 elements: a kernel of about 2 us
    sides = [attrs.evolve(s, ptx={"check": s.ptx["check"], "canonical": s.ptx["check"]}) for s in sides]
    m = timer.measure(small, sides, reference_label="cuda")
    assert m.passed, m.message
    result = measured(case_result(small, mode="paired", plugin="test"), m, "wf", unstable_noise=0.03)
    t = result.timing
    assert t is not None and t.launch_floor_us is not None
    print(f"{mode}: {t.cuda.median_us:.2f} us per launch, floor {t.launch_floor_us:.2f} us, "
          f"launch-bound {t.launch_bound}")
    assert t.launch_bound == (mode == TIMING_EVENTS), result.message


def test_a_load_failure_keeps_the_jit_log() -> None:
    from wfbench_core.gpu.device import Device
    from wfbench_core.compiling.faults import KernelFault

    ptx = """\
.version 7.5
.target sm_75
.address_size 64

.visible .entry wf_big(.param .u64 out)
{
    .reg .b64 %rd<3>;
    .shared .align 8 .b8 big[262144];
    mov.u64 %rd1, big;
    ld.param.u64 %rd2, [out];
    st.shared.u64 [%rd1], %rd2;
    ret;
}
"""
    with pytest.raises(KernelFault) as err:
        Device().load(ptx, "wf_big", case_id="big", config="check", label="wf")
    print(err.value)
    assert "uses too much shared data (0x40000 bytes" in str(err.value) and not err.value.sticky


def test_a_refused_case_says_what_it_measured() -> None:
    # 60 pairs of 50 ms samples cannot fit in a 1 s limit: the case is refused before timing, and the refusal
    # gives the per-launch times its probes measured, not a guess about the case's size
    case, timer, sides = _timer_and_sides(SCALE, "scale_plain",
                                          attrs.evolve(QUICK, min_sample_ms=50.0, samples=60, max_case_s=1.0))
    from wfbench_core.errors import WfbenchError

    with pytest.raises(WfbenchError) as err:
        timer.measure(case, sides, reference_label="cuda")
    print(err.value)
    assert "over the 1 s per-case limit" in str(err.value)
    assert "per-launch time across the warm-up and probe launches: wf " in str(err.value)
    assert "too large for this GPU" not in str(err.value)
