"""The timer's correctness protocol against a stand-in for the CUDA driver (no GPU needed).

The stand-in plays the driver's part only: device buffers in host memory, kernels as Python functions of
those buffers, a stream that runs launches in order, events on a simulated clock, and errors raised the way
numba-cuda raises them (``CudaAPIError`` carrying the ``CUresult``), sticky ones failing every later call.
Everything else (poisoning, launching twice, comparing, the after-timing checks, classification) is the
real timer code.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np
import pytest

from wfbench_core.case import Case, Launch, Param, Tolerance, Work
from wfbench_core.compiling.faults import ILLEGAL_ADDRESS, KernelFault
from wfbench_core.record.results import TimingProtocol
from wfbench_core.contracts import Side
from wfbench_core.gpu.device import Device, Driver
from wfbench_core.gpu.timer import CudaEventTimer

N = 64


class FakeDriver:
    """Device memory, modules, one stream and events; errors as numba-cuda raises them."""

    def __init__(self, kernels: dict[str, Callable[..., None]]) -> None:
        from wfbench_core.gpu.correctness import DIFFER_KERNEL
        from wfbench_core.gpu.helper_kernels import CLOCK_KERNEL, EMPTY, GATE_KERNEL

        # the clean rounds' gate kernel, the timed buffers' comparison and the empty kernel of the launch floor
        self.kernels = {GATE_KERNEL: self.gate, DIFFER_KERNEL: self.differ, EMPTY: lambda launch, *args: 0.001,
                        CLOCK_KERNEL: self.stamp, **kernels}
        # the SM clock (MHz) while the kernels after the n-th opening clock probe run; SM cycles count at it
        self.sm_mhz: Callable[[int], float] = lambda n: 1980.0
        # or each side's own clock: (n, k) -> MHz while the kernels after the k-th probe of round n run
        self.side_mhz: Callable[[int, int], float] | None = None
        self.probes_opened = 0  # opening clock probes (slot 0) so far: the round the kernels belong to
        self.slot = 0  # the latest probe's slot
        self.cycles = 0.0
        self.gate_misses = 0  # the next this many gates open by themselves (the host "missed" them)
        self.memory: dict[int, np.ndarray] = {}
        self._ptrs = itertools.count(0x7F0000000000, 1 << 32)  # far apart: placements offset into allocations
        self.pending: list[Any] = []
        self.sticky: Any = None
        self.clock_ms = 0.0
        self.launches: dict[str, int] = {}
        self.read_sizes: list[int] = []  # elements of every buffer read back to the host
        outer = self

        class DeviceArray:
            def __init__(self, host: np.ndarray, ptr: int | None = None) -> None:
                # a fresh allocation copies; a slice or view shares the memory of its base (as on a GPU)
                self.ptr = next(outer._ptrs) if ptr is None else ptr
                self.host = host.copy() if ptr is None else host
                outer.memory[self.ptr] = self.host  # a kernel sees the latest (typed) view of an address
                self.device_ctypes_pointer = type("P", (), {"value": self.ptr})()
                self.nbytes = self.host.nbytes

            # what the timer reads of a numba-cuda DeviceNDArray besides its pointer and size
            shape = property(lambda self: self.host.shape)
            dtype = property(lambda self: self.host.dtype)
            size = property(lambda self: self.host.size)

            def __getitem__(self, item: slice) -> "DeviceArray":
                return DeviceArray(self.host[item], self.ptr + (item.start or 0) * self.host.itemsize)

            def view(self, dtype: Any) -> "DeviceArray":
                return DeviceArray(self.host.view(dtype), self.ptr)

            def reshape(self, *shape: Any) -> "DeviceArray":
                return DeviceArray(self.host.reshape(*shape), self.ptr)

            def copy_to_device(self, host: Any, stream: Any = None) -> None:
                outer.api()
                outer.run_pending()
                self.host[...] = host.host.reshape(self.host.shape) if isinstance(host, DeviceArray) else host

            def copy_to_host(self, stream: Any = None) -> np.ndarray:
                outer.api()
                outer.run_pending()
                outer.read_sizes.append(self.host.size)
                return self.host.copy()

        class Stream:
            handle = 1

            def synchronize(self) -> None:
                outer.api()
                outer.run_pending()

        class Event:
            """Recorded into the stream: complete once the stream reaches it (as cuEventRecord)."""

            done = True  # never recorded: cuEventSynchronize returns at once
            t = 0.0

            def record(self, stream: Any) -> None:
                self.done = False
                outer.pending.append(("@event", self))

            def synchronize(self) -> None:
                outer.api()
                if not self.done:  # a completed event waits for nothing (not for later work on the stream)
                    outer.run_pending(until=self)

            def elapsed_time(self, other: "Event") -> float:
                if not (self.done and other.done):  # cuEventElapsedTime on an event the stream has not reached
                    outer.raise_api("CUDA_ERROR_NOT_READY", "cuEventElapsedTime")
                return other.t - self.t

        class Function:
            def __init__(self, name: str) -> None:
                self.kernel = name
                self.attrs = type("A", (), {"regs": 16, "local": 0, "shared": 0, "maxthreads": 1024})()

        class Module:
            def __init__(self, ptx: str) -> None:
                self.ptx = ptx

            def get_function(self, name: str) -> Function:
                if ".shared" in self.ptx:  # the stand-in's JIT takes no shared memory (cuda.core loads lazily)
                    outer.raise_api("CUDA_ERROR_INVALID_PTX", "cuLibraryLoadData")
                if name not in outer.kernels:
                    outer.raise_api("CUDA_ERROR_NOT_FOUND", "cuModuleGetFunction")
                return Function(name)

        class Context:
            device = type("D", (), {"MAX_SHARED_MEMORY_PER_BLOCK": 49152, "MAX_REGISTERS_PER_BLOCK": 65536,
                                    "L2_CACHE_SIZE": 1 << 20, "compute_capability": (9, 0)})()

            @staticmethod
            def get_memory_info() -> tuple[int, int]:
                return 16 << 30, 16 << 30

            def create_module_ptx(self, ptx: str) -> Module:
                outer.api()
                return Module(ptx)

        class Cuda:
            @staticmethod
            def to_device(host: np.ndarray, stream: Any = None) -> DeviceArray:
                outer.api()
                return DeviceArray(np.asarray(host))

            @staticmethod
            def device_array(shape: Any, dtype: Any, stream: Any = None) -> DeviceArray:
                outer.api()
                return DeviceArray(np.zeros(shape, dtype=dtype))

            @staticmethod
            def event(timing: bool = True) -> Event:
                return Event()

            @staticmethod
            def mapped_array(shape: Any, dtype: Any) -> np.ndarray:
                # host memory the device sees at an address of its own (cuMemHostAlloc with DEVICEMAP)
                host = np.zeros(shape, dtype=dtype)
                dev = DeviceArray(host, next(outer._ptrs))
                mapped = host.view(type("Mapped", (np.ndarray,), {}))
                mapped.device_ctypes_pointer = dev.device_ctypes_pointer
                return mapped

        self.cuda, self.ctx, self.stream = Cuda(), Context(), Stream()

    # driver behaviour ----------------------------------------------------------------------------

    def raise_api(self, name: str, call: str) -> None:
        from cuda.bindings import driver as binding
        from numba.cuda.cudadrv.driver import CudaAPIError

        code = getattr(binding.CUresult, name)
        raise CudaAPIError(code, f"Call to {call} results in {code.name}")

    def api(self) -> None:
        if self.sticky:
            self.raise_api(self.sticky, "cuMemcpy")

    def launch(self, stream: Any, cfg: Any, kernel: str, *args: Any) -> None:
        self.api()
        if int(np.prod(cfg[1])) > 1024:  # cuda.core's launch: cuLaunchKernel's error as CUDAError "NAME: why"
            from cuda.core._utils.cuda_utils import CUDAError

            raise CUDAError("CUDA_ERROR_INVALID_VALUE: This indicates that one or more of the parameters passed "
                            "to the API call is not within an acceptable range of values.")
        self.pending.append((kernel, [a.value for a in args]))

    def gate(self, launch: int, flag: np.ndarray, timeout_ns: int) -> None:
        """The gate kernel: it opens when the host set flag[0]; a missed gate opens by itself, marking flag[1]."""
        if self.gate_misses:
            self.gate_misses -= 1
            flag[1] = 1

    def stamp(self, launch: int, out: np.ndarray, slot: int) -> None:
        """The clock probe: the global timer (ns) and the SM cycle counter into out[2 slot], out[2 slot + 1]."""
        self.probes_opened += slot == 0
        self.slot = int(slot)
        out[2 * slot], out[2 * slot + 1] = round(self.clock_ms * 1e6), round(self.cycles)

    @staticmethod
    def differ(launch: int, a: np.ndarray, b: np.ndarray, words: int, count: np.ndarray) -> None:
        """Count the 32-bit words in which two buffers differ (as the real comparison kernel does)."""
        count[0] += np.count_nonzero(a.reshape(-1).view(np.uint32)[:words] != b.reshape(-1).view(np.uint32)[:words])

    def run_pending(self, until: Any = None) -> None:
        """Run the stream's work in order: all of it, or up to and including the event ``until``."""
        while self.pending:
            kernel, args = self.pending.pop(0)
            if kernel == "@event":
                args.t, args.done = self.clock_ms, True
                if args is until:
                    return
                continue
            self.launches[kernel] = self.launches.get(kernel, 0) + 1
            arrays = [self.memory.get(a, a) for a in args]
            fault = self.kernels[kernel](self.launches[kernel], *arrays)
            ms = fault if isinstance(fault, float) else 0.01  # a kernel may say how long it ran (ms)
            self.clock_ms += ms
            mhz = self.side_mhz(self.probes_opened, self.slot) if self.side_mhz else self.sm_mhz(self.probes_opened)
            self.cycles += ms * 1e3 * mhz
            if isinstance(fault, str):
                self.sticky = fault
                self.pending.clear()
                self.raise_api(fault, "cuStreamSynchronize")


def ptxas_log(ptx: str, arch: str) -> str:
    """The stand-in's JIT log: what the real ptxas says about the PTX (as the driver's JIT would)."""
    import subprocess
    import tempfile

    from wfbench_core.compiling.cudatools import require_tool

    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        r = subprocess.run([str(require_tool("ptxas")), f"-arch={arch}", "-o", "/dev/null", f.name],
                           capture_output=True, text=True, check=False)
    return r.stderr


def make_timer(driver: FakeDriver) -> CudaEventTimer:
    parts = Driver(cuda=driver.cuda, context=driver.ctx, stream=driver.stream, launch=driver.launch,
                   launch_config=lambda grid, block, shmem_size: (grid, block, shmem_size), launch_stream=driver.stream,
                   jit_log=ptxas_log)
    return CudaEventTimer(TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=5), Device(parts))


CASE = Case(
    id="scale", version=1, priority="P1", summary="y = k*x", warpforth="\\! kernel wf_scale\n",
    cuda="extern \"C\" __global__ void cu_scale() {}", wf_kernel="wf_scale", cuda_kernel="cu_scale",
    params=(Param("K", "i64"), Param("X", "ptr", "int64"), Param("Y", "ptr", "int64", output=True),
            Param("N", "i64")),
    sizes={"check": {"N": N}, "canonical": {"N": N}},
    launch=lambda s: Launch(grid=1, block=64),
    inputs=lambda s, rng: {"K": 3, "X": (2**53 // 3) + np.arange(s["N"], dtype=np.int64), "N": s["N"]},
    reference=lambda inp, s: {"Y": inp["K"] * inp["X"]},
    tolerances={"Y": Tolerance(0.0, 0.0)},
    work=lambda s: Work(bytes=16 * s["N"]),
)
SIDES = [Side("wf", "wf_scale", {"check": "", "canonical": ""}), Side("cuda", "cu_scale", {"check": "", "canonical": ""})]


def good(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
    y[:n] = k * x[:n]


def measure(wf: Callable[..., Any]) -> Any:
    driver = FakeDriver({"wf_scale": wf, "cu_scale": good})
    return make_timer(driver).measure(CASE, SIDES, reference_label="cuda"), driver


def test_correct_sides_pass_with_every_check_per_side() -> None:
    m, driver = measure(good)
    assert m.passed, m.message
    whats = {(c.config, c.side, c.what) for c in m.checks}
    for side in ("wf", "cuda"):
        assert {("check", side, "reference"), ("check", side, "idempotent"), ("canonical", side, "reference"),
                ("canonical", side, "after-timing")} <= whats
    assert ("canonical", "wf~cuda", "cross") in whats
    assert len(m.sampled.samples_us["wf"]) == 5


def test_a_correct_output_crosses_to_the_host_once_per_side_and_configuration() -> None:
    """axpy_f64 spent 1.1 s of its 6 s on the H200 reading 256 MB outputs back five times per side; the second
    launch, the launch after timing and the timed buffers' checks compare on the device with the first output."""
    m, driver = measure(good)
    assert m.passed, m.message
    outputs = [n for n in driver.read_sizes if n == N]  # the rest: the device comparison's one-word counts
    assert len(outputs) == 2 * 2  # check and canonical, WarpForth and CUDA: the first launch of each
    assert {c.what for c in m.checks if c.config == "canonical"} >= {"reference", "idempotent", "after-timing",
                                                                     "timed-buffers"}


def test_a_second_launch_that_skips_the_tail_is_caught() -> None:
    def second_skips(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        y[: n - (3 if launch == 2 else 0)] = k * x[: n - (3 if launch == 2 else 0)]

    m, _ = measure(second_skips)
    assert not m.passed and m.sampled is None
    assert m.message.startswith("scale[check] WarpForth: output Y changes on a second launch into re-poisoned "
                                "outputs: 3 of 64 elements differ (3 not written by the second launch)")


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def test_a_kernel_wrong_once_timing_began_fails_on_the_first_timed_placement() -> None:
    def wrong_late(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        y[:n] = k * x[:n] + (1 if launch > 10 else 0)  # right while checked, off by one once timing began

    m, _ = measure(wrong_late)
    assert not m.passed and m.sampled is None
    (bad,) = [c for c in m.checks if not c.passed]
    assert (bad.config, bad.side, bad.what, bad.mismatches, bad.placement, bad.buffer_set) == (
        "canonical", "wf", "timed-buffers", N, 0, 0)
    assert m.message == ("scale[canonical] WarpForth: output Y of timed placement 0 (buffer set 0) is wrong on a "
                         "verifying launch into the re-poisoned timed buffers: 64 of 64 written elements outside "
                         "tolerance (rtol 0, atol 0), max abs err 1, max rel err 1.11e-16")


def test_after_timing_every_side_is_launched_again_into_poison_on_its_own_buffers() -> None:
    own: list[int] = []  # the correctness phase's output buffers: the first two this side writes

    def wrong_late_on_own(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        if len(own) < 2 and _address(y) not in own:
            own.append(_address(y))
        y[:n] = k * x[:n] + (1 if launch > 10 and _address(y) in own else 0)

    m, _ = measure(wrong_late_on_own)
    assert not m.passed
    (bad,) = [c for c in m.checks if not c.passed]
    assert (bad.config, bad.side, bad.what, bad.mismatches) == ("canonical", "wf", "after-timing", N)
    assert m.message == ("scale[canonical] WarpForth: output Y is wrong after timing: 64 of 64 written elements "
                         "outside tolerance (rtol 0, atol 0), max abs err 1, max rel err 1.11e-16")


def test_half_the_work_on_buffers_other_than_the_checked_ones_fails_naming_the_placement() -> None:
    checked: list[int] = []  # the first two output buffers it sees: the check and canonical correctness buffers

    def half_elsewhere(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        if len(checked) < 2 and _address(y) not in checked:
            checked.append(_address(y))
        m = n if _address(y) in checked else n // 2
        y[:m] = k * x[:m]

    m, driver = measure(half_elsewhere)
    assert not m.passed and m.sampled is None
    (bad,) = [c for c in m.checks if not c.passed]
    assert (bad.what, bad.placement, bad.buffer_set, bad.unwritten) == ("timed-buffers", 0, 0, N // 2)
    assert m.message == ("scale[canonical] WarpForth: output Y of timed placement 0 (buffer set 0) is wrong on a "
                         "verifying launch into the re-poisoned timed buffers: 32 of 64 elements never written "
                         "(still hold the sentinel 0x5a5a5a5a5a5a5a5a)")
    assert all(c.passed for c in m.checks if c.what in ("reference", "idempotent", "cross"))  # it passed those


def test_every_placement_and_side_is_verified_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from wfbench_core.gpu.correctness import TimedBuffers

    verified: list[tuple[int, int, str]] = []  # (placement, buffer set, side) of every verifying launch pair
    real = TimedBuffers.verify_launch

    def counted(self, go, outs, label, *, placement, buffer_set):  # type: ignore[no-untyped-def]
        verified.append((placement, buffer_set, label))
        real(self, go, outs, label, placement=placement, buffer_set=buffer_set)

    monkeypatch.setattr(TimedBuffers, "verify_launch", counted)
    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    m = _timed(driver, samples=16, placements=8, min_samples=16)
    assert m.passed, m.message
    s = m.sampled
    placements = len(set(s.placement_of))
    assert s.buffer_sets == placements == 8
    # each placement verifies one buffer set with each side, a different set each time: every set in turn
    assert sorted(verified) == [(p, p, side) for p in range(8) for side in ("cuda", "wf")]
    assert s.placement_checks == placements * 2 * 2  # two verifying launches per placement and side, on one set
    timed = {c.side: c for c in m.checks if c.what == "timed-buffers"}
    assert set(timed) == {"wf", "cuda"} and all(c.passed and c.total == N * placements * 2
                                                for c in timed.values())
    assert s.launch_floor_us == pytest.approx(1.0)  # the stand-in's empty kernel: 0.001 ms per launch
    assert m.costs.placement_checks_s > 0


def test_a_kernel_that_outputs_right_only_into_poison_is_wrong_as_timing_left_it() -> None:
    from wfbench_core.gpu.comparison import poison_value

    sentinel = poison_value("int64")[0]

    def only_into_poison(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        fresh = y[:n] == sentinel
        y[:n] = np.where(fresh, k * x[:n], y[:n] + 1)  # right on a poisoned output, off by one on a written one

    for samples in (5, 6):  # the last pair's second side is CUDA, then WarpForth: caught either way
        m = _timed(FakeDriver({"wf_scale": only_into_poison, "cu_scale": good}), placements=1, rotation=1,
                   samples=samples, min_samples=samples)
        assert not m.passed
        (bad,) = [c for c in m.checks if not c.passed]
        assert bad.placement == 0 and bad.what == ("relaunch" if samples == 5 else "left-by-timing"), bad
        assert m.message.startswith("scale[canonical] WarpForth: output Y of timed placement 0 (buffer set 0) is wrong ")


def test_a_kernel_that_skips_work_on_an_answered_output_is_implausible() -> None:
    from wfbench_core.gpu.outcome import case_result, measured
    from wfbench_core.gpu.plausibility import Yardsticks
    from wfbench_core.record.results import IMPLAUSIBLE

    def skips_when_answered(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> float:
        if np.array_equal(y[:n], k * x[:n]):
            return 0.0001  # 0.1 us: it only looked
        y[:n] = k * x[:n]
        return 0.01

    driver = FakeDriver({"wf_scale": skips_when_answered, "cu_scale": good})
    m = _timed(driver)
    assert m.passed, m.message  # every output it left is right: only its time gives it away
    result = measured(case_result(CASE, mode="paired", plugin="test"), m, "wf", unstable_noise=0.03,
                      yardsticks=Yardsticks())
    assert result.status == IMPLAUSIBLE and result.timing is None
    assert result.message.startswith("scale[canonical] WarpForth: ") and "of an empty kernel timed the same way " \
        "(events mode): faster than this GPU can run it; not kept" in result.message


def test_int64_off_by_one_above_2_53_fails_at_tolerance_0() -> None:
    def off_by_one(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        y[:n] = k * x[:n]
        y[0] += 1

    m, _ = measure(off_by_one)
    assert not m.passed
    assert m.message.startswith("scale[check] WarpForth: output Y differs from the numpy reference: 1 of 64 "
                                "written elements outside tolerance (rtol 0, atol 0), max abs err 1,")


def test_a_faulting_launch_is_a_classified_sticky_kernel_fault() -> None:
    def oob(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> str:
        return "CUDA_ERROR_ILLEGAL_ADDRESS"

    with pytest.raises(KernelFault) as err:
        measure(oob)
    assert err.value.kind == ILLEGAL_ADDRESS and err.value.sticky and err.value.side == "wf"
    assert str(err.value) == "scale[check] WarpForth: launch: illegal address (CUDA_ERROR_ILLEGAL_ADDRESS)"


def test_a_missing_kernel_is_a_load_failure() -> None:
    driver = FakeDriver({"cu_scale": good})
    with pytest.raises(KernelFault) as err:
        make_timer(driver).measure(CASE, SIDES, reference_label="cuda")
    assert str(err.value) == ("scale[check] WarpForth: load: load failure (CUDA_ERROR_NOT_FOUND): kernel 'wf_scale' "
                              "not found in its PTX")
    assert not err.value.sticky


BIG_SHARED_PTX = """\
.version 7.5
.target sm_75
.address_size 64

.visible .entry wf_scale(.param .u64 k, .param .u64 x, .param .u64 y, .param .u64 n)
{
    .reg .b64 %rd<3>;
    .shared .align 8 .b8 big[262144];
    mov.u64 %rd1, big;
    ld.param.u64 %rd2, [k];
    st.shared.u64 [%rd1], %rd2;
    ret;
}
"""


def test_a_load_failure_keeps_the_jit_log() -> None:
    from wfbench_core.compiling.cudatools import find_tool

    if find_tool("ptxas") is None:
        pytest.skip("no ptxas here (the stand-in's JIT)")
    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    sides = [Side("wf", "wf_scale", {"check": BIG_SHARED_PTX, "canonical": BIG_SHARED_PTX}), SIDES[1]]
    with pytest.raises(KernelFault) as err:
        make_timer(driver).measure(CASE, sides, reference_label="cuda")
    assert not err.value.sticky
    assert str(err.value) == ("scale[check] WarpForth: load: load failure (CUDA_ERROR_INVALID_PTX): the JIT says: "
                              "ptxas error : Entry function 'wf_scale' uses too much shared data (0x40000 bytes, "
                              "0xc000 max)")


def test_a_block_over_the_thread_limit_is_out_of_resources_naming_threads() -> None:
    import attrs

    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    case = attrs.evolve(CASE, launch=lambda s: Launch(grid=1, block=2048))
    with pytest.raises(KernelFault) as err:
        make_timer(driver).measure(case, SIDES, reference_label="cuda")
    assert not err.value.sticky
    assert str(err.value) == ("scale[check] WarpForth: launch: out of resources (CUDA_ERROR_INVALID_VALUE): "
                              "2048 threads per block, the kernel allows 1024")


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_float_outputs_are_poisoned_with_the_payload_nan(dtype: str) -> None:
    import attrs

    def skip_tail(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        y[: n - 5] = x[: n - 5] * 2

    def cuda_good(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        y[:n] = x[:n] * 2

    case = attrs.evolve(
        CASE, params=(Param("K", "i64"), Param("X", "ptr", dtype), Param("Y", "ptr", dtype, output=True),
                      Param("N", "i64")),
        inputs=lambda s, rng: {"K": 2, "X": np.arange(s["N"], dtype=dtype), "N": s["N"]},
        reference=lambda inp, s: {"Y": inp["X"] * 2})
    driver = FakeDriver({"wf_scale": skip_tail, "cu_scale": cuda_good})
    m = make_timer(driver).measure(case, SIDES, reference_label="cuda")
    assert not m.passed
    assert m.message.startswith("scale[check] WarpForth: output Y differs from the numpy reference: 5 of 64 "
                                "elements never written (still hold the NaN poison);")


# -- timing on the stand-in: rotation, placements, the gate ----------------------------------------------


def _timed(driver: FakeDriver, **protocol: Any) -> Any:
    timer = make_timer(driver)
    timer.protocol = TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, **{"samples": 6, "placements": 3,
                                                                        "min_samples": 6, **protocol})
    return timer.measure(CASE, SIDES, reference_label="cuda")


def test_launches_rotate_over_buffer_sets_each_holding_the_inputs() -> None:
    seen: dict[int, int] = {}

    def counting(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        good(launch, k, x, y, n)
        seen[id(x)] = seen.get(id(x), 0) + 1

    driver = FakeDriver({"wf_scale": counting, "cu_scale": good})
    m = _timed(driver)
    assert m.passed, m.message
    assert m.sampled.buffer_sets == 8  # 1 KiB of buffers: 8 sets fit in half the stand-in's 1 MiB L2
    assert m.sampled.launches_per_sample % 8 == 0 and len(m.sampled.samples_us["wf"]) == 6
    # 3 placements x 8 sets of timing buffers, plus the correctness phase's own inputs
    assert len(seen) == 3 * 8 + 2
    # every timing set was launched equally often inside its placement (the correctness buffers aside):
    # placements differ by the warm-up of the first one, and each placement's verified set by its two
    # verifying launches
    timing_counts = sorted(seen.values())[2:]
    assert max(timing_counts) - min(timing_counts) <= 1 + 2 and timing_counts.count(max(timing_counts)) <= 3


def test_every_timed_buffer_is_written_before_a_launch_touches_it() -> None:
    """A placement's fresh outputs are poisoned as they are made, not by an untimed round of the case's launches
    (which cost a long kernel's case a second on the H200): no launch of either side finds a fresh allocation
    (zeros in the stand-in; the poison and every result here are not)."""
    fresh: list[int] = []

    def watching(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> None:
        if not y[:n].any():
            fresh.append(launch)
        good(launch, k, x, y, n)

    driver = FakeDriver({"wf_scale": watching, "cu_scale": watching})
    m = _timed(driver)
    assert m.passed, m.message
    assert len(set(m.sampled.placement_of)) == 3 and fresh == []


def test_one_placement_sits_at_offset_zero_and_rotation_one_is_one_set() -> None:
    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    m = _timed(driver, placements=1, rotation=1)
    assert m.passed and m.sampled.buffer_sets == 1 and set(m.sampled.placement_of) == {0}


def test_a_gate_the_host_missed_is_retaken_and_counted() -> None:
    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    driver.gate_misses = 2
    m = _timed(driver)
    assert m.passed and m.sampled.gate_retakes == 2


def test_a_host_that_keeps_missing_the_gate_is_an_error_naming_the_case() -> None:
    from wfbench_core.errors import WfbenchError

    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    driver.gate_misses = 10**6
    with pytest.raises(WfbenchError, match=r"^scale: the host did not open the start gate within 0.2 s in 4 rounds"):
        _timed(driver)


def test_each_sides_clock_is_measured_in_band_and_a_pair_whose_sides_differ_is_retaken() -> None:
    """A clock trace where, every 5th round, the second side ran at 1900 MHz and the first at 1980: those
    pairs' sides ran at different clocks and are re-taken; every kept pair's sides match."""
    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    driver.side_mhz = lambda n, k: 1900.0 if n % 5 == 0 and k == 1 else 1980.0
    m = _timed(driver, samples=12, min_samples=12)
    assert m.passed and m.sampled.clock_retakes >= 1
    assert m.sampled.pair_sm_mhz == pytest.approx((1980.0,) * 12, rel=1e-6)
    assert [pytest.approx(p, rel=1e-6) for p in m.sampled.pair_side_mhz] == [(1980.0, 1980.0)] * 12


def test_a_gpu_at_its_power_cap_keeps_its_pairs() -> None:
    """A clock trace of a board at its power cap: every round at its own clock, 1750 to 1870 MHz, both sides
    alike. Each pair's sides match, nothing is re-taken, and the clocks are recorded (the case stays in trends,
    wfbench_core.review.throttle)."""
    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    driver.sm_mhz = lambda n: 1750.0 + 20.0 * (n % 7)
    m = _timed(driver, samples=12, min_samples=12)
    assert m.passed and m.sampled.clock_retakes == 0 and len(m.sampled.pair_side_mhz) == 12
    assert all(a == pytest.approx(b, rel=1e-6) for a, b in m.sampled.pair_side_mhz)
    assert len({round(c) for c in m.sampled.pair_sm_mhz}) > 1


def test_clock_retakes_stop_at_the_bound_and_mismatched_pairs_stay_marked() -> None:
    from wfbench_core.gpu.sampling import clocks_match, max_clock_retakes

    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    driver.side_mhz = lambda n, k: 1900.0 if n % 2 and k == 1 else 1980.0  # every other round, a side dips
    m = _timed(driver)
    sides = m.sampled.pair_side_mhz
    # re-takes go on while fewer than all 6 pairs asked matched (the longer budget): every pair matches
    assert m.passed and 0 < m.sampled.clock_retakes <= max_clock_retakes(6, matched=0) == 12
    assert len(sides) == 6 and all(clocks_match(p) for p in sides)
    driver.side_mhz = lambda n, k: 1900.0 if k == 1 else 1980.0  # a side always dips: no pair can match
    m = _timed(driver)
    sides = m.sampled.pair_side_mhz
    assert m.passed and m.sampled.clock_retakes == max_clock_retakes(6, matched=0) == 12
    assert len(sides) == 6 and not any(clocks_match(p) for p in sides)



def test_a_case_timed_right_after_another_is_credited_the_warm_up_and_after_an_idle_gap_is_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import attrs

    from wfbench_core.gpu.sampling import WARM_CARRY_IDLE_S, WARMUP_MIN_S

    def slow(launch: int, k: int, x: np.ndarray, y: np.ndarray, n: int) -> float:
        good(launch, k, x, y, n)
        return 1.0  # ms: a warm-up of 0.3 s is 300 launches

    timer = make_timer(FakeDriver({"wf_scale": slow, "cu_scale": slow}))
    timer.protocol = attrs.evolve(timer.protocol, warmup_s=0.3)
    now = [0.0]
    timer.warmth.clock = lambda: now[0]  # the idle time between cases, on a clock the test moves
    first = timer.measure(CASE, SIDES, reference_label="cuda").sampled
    assert first.warmup_carried_s == 0.0 and first.warmup_busy_s >= 0.3 and first.busy_s > 0.3
    now[0] += WARM_CARRY_IDLE_S / 2
    second = timer.measure(CASE, SIDES, reference_label="cuda").sampled
    assert second.warmup_carried_s == pytest.approx(0.3 - WARMUP_MIN_S)
    assert WARMUP_MIN_S <= second.warmup_busy_s < 0.3
    now[0] += WARM_CARRY_IDLE_S
    third = timer.measure(CASE, SIDES, reference_label="cuda").sampled
    assert third.warmup_carried_s == 0.0 and third.warmup_busy_s >= 0.3
    # the copy yardstick, measured just before a worker's first case, kept the GPU busy for its own warm-up
    # (1 GiB copies: the stand-in driver copies in host memory, so the measurement itself is left out here)
    from wfbench_core.gpu import roofline

    monkeypatch.setattr(roofline, "measure_copy_gbps", lambda device, warmup_s: 4000.0)
    now[0] += WARM_CARRY_IDLE_S
    assert timer.copy_gbps() == 4000.0
    after_yardstick = timer.measure(CASE, SIDES, reference_label="cuda").sampled
    assert after_yardstick.warmup_carried_s == pytest.approx(0.3 - WARMUP_MIN_S)


def test_the_checker_takes_the_arrays_made_ahead_and_makes_them_itself_without() -> None:
    import attrs

    from wfbench_core.gpu.host_prep import handing, make_host_arrays

    timer = make_timer(FakeDriver({"wf_scale": good, "cu_scale": good}))
    ahead = {c: attrs.evolve(make_host_arrays(CASE, c), inputs_s=100.0, reference_s=200.0) for c in ("check", "canonical")}
    with handing(timer, ahead):
        m = timer.measure(CASE, SIDES, reference_label="cuda")
    assert m.passed and (m.costs.inputs_s, m.costs.reference_s) == (200.0, 400.0)  # made ahead: their own costs
    assert timer.host_arrays == {}  # handed for the case only
    wrong = {c: attrs.evolve(a, want={"Y": a.want["Y"] + 1}) for c, a in ahead.items()}
    with handing(timer, wrong):
        m = timer.measure(CASE, SIDES, reference_label="cuda")
    assert not m.passed and "differs from the numpy reference" in m.message  # the handed reference is the one used
    other = attrs.evolve(CASE, sizes={"check": {"N": N // 2}, "canonical": {"N": N // 2}})
    with handing(timer, wrong):
        m = timer.measure(other, SIDES, reference_label="cuda")  # not arrays of this case's sizes: made here
    assert m.passed and m.costs.inputs_s < 100.0


def test_the_launch_floor_launches_an_empty_kernel_with_each_buffer_sets_arguments() -> None:
    """An empty kernel without parameters read 2.9 us a launch on an H200 host where axpy_f64's five arguments
    made a launch cost about 9 us: events-mode points that the host's launch rate bounded were not marked."""
    from wfbench_core.gpu.helper_kernels import EMPTY, empty_ptx

    seen: list[tuple[Any, ...]] = []
    driver = FakeDriver({"wf_scale": good, "cu_scale": good})
    driver.kernels[EMPTY] = lambda launch, *args: seen.append(args) or 0.001
    m = _timed(driver)
    assert m.passed and m.sampled.launch_floor_us == pytest.approx(1.0)
    assert seen and all(len(args) == len(CASE.params) for args in seen)
    pointers = [i for i, p in enumerate(CASE.params) if p.kind == "ptr"]
    timed = [args for args in seen if all(isinstance(args[i], np.ndarray) for i in pointers)]
    assert len(timed) >= len(seen) - 1  # every floor launch had a buffer set's arguments (one untimed load: nulls)
    # the PTX the real assembler takes, with the case's parameters in order
    ptx = empty_ptx([p.kind for p in CASE.params])
    assert ptxas_log(ptx, "sm_90") == ""
    assert ".param .s64 p0, .param .u64 p1, .param .u64 p2" in ptx
