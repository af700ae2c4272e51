"""cold-l2 timing against the stand-in driver with a host clock beside the GPU's: what a cold sample holds.

The stand-in of ``test_timer_protocol`` runs the stream's work in order; here every call the host makes also
costs host time, and the GPU starts a queued item no earlier than the host queued it, a gate no earlier than
the host opened it. An event is stamped when the GPU reaches it. So a start event recorded before its launch
is queued carries the host's launch latency into the timed span, as on a real GPU.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from test_timer_protocol import CASE, SIDES, FakeDriver, good, make_timer
from wfbench_core.gpu.timer import CudaEventTimer
from wfbench_core.gpu.helper_kernels import CLOCK_KERNEL, EMPTY, GATE_KERNEL
from wfbench_core.record.results import TIMING_COLD_L2, TimingProtocol

KERNEL_MS = {"wf_scale": 0.003, "cu_scale": 0.002, EMPTY: 0.001}  # each launch's time on the GPU
FLUSH_MS = 0.010  # the L2-sized memset
API_MS = 0.006  # what each call costs the host: four per cold launch, slower than the GPU's 13 us


class Stamped(list):  # type: ignore[type-arg]
    """The stream's queue: each item with the host time it was queued at (each queueing costs API_MS)."""

    def __init__(self, driver: "HostClockDriver") -> None:
        super().__init__()
        self.driver, self.at = driver, []  # type: ignore[var-annotated]

    def append(self, item: Any) -> None:
        self.driver.host_ms += API_MS
        super().append(item)
        self.at.append(self.driver.host_ms)

    def pop(self, index: int = -1) -> Any:
        self.at.pop(index)
        return super().pop(index)

    def clear(self) -> None:
        super().clear()
        self.at.clear()


class HostClockDriver(FakeDriver):
    def __init__(self) -> None:
        super().__init__({"wf_scale": good, "cu_scale": good})
        self.host_ms = 0.0
        self.pending = Stamped(self)
        self.opened: list[float] = []  # host times at which the host set the gate's flag
        self.log: list[str] = []  # the stream's items in the order the GPU ran them
        outer, plain = self, self.cuda.mapped_array

        class Flag(np.ndarray):
            def __setitem__(self, key: Any, value: Any) -> None:
                if key == 0 and value:
                    outer.opened.append(outer.host_ms)
                super().__setitem__(key, value)

        def mapped_array(shape: Any, dtype: Any) -> Any:
            m = plain(shape, dtype)
            flag = m.view(Flag)
            flag.device_ctypes_pointer = m.device_ctypes_pointer
            return flag

        self.cuda.mapped_array = mapped_array

    def memset(self, buf: Any, byte: int, stream: Any) -> None:
        self.api()
        self.pending.append(("@memset", buf))

    def run_pending(self, until: Any = None) -> None:
        while self.pending:
            queued_at = self.pending.at[0]
            kernel, args = self.pending.pop(0)
            start = max(self.clock_ms, queued_at)
            if kernel == GATE_KERNEL:
                self.clock_ms = max([start] + [t for t in self.opened if t >= queued_at][:1])
                self.log.append("gate")
            elif kernel == "@memset":
                args.host[...] = 0
                self.clock_ms = start + FLUSH_MS
                self.log.append("flush")
            elif kernel == "@event":
                args.t, args.done = start, True
                self.clock_ms = start
                self.log.append("event")
                if args is until:
                    break
            else:
                self.launches[kernel] = self.launches.get(kernel, 0) + 1
                self.kernels[kernel](self.launches[kernel], *[self.memory.get(a, a) for a in args])
                self.clock_ms = start + KERNEL_MS.get(kernel, 0.01)
                self.log.append(kernel)
        self.host_ms = max(self.host_ms, self.clock_ms)  # the host waited for the GPU


def _cold_timer(driver: HostClockDriver) -> Any:
    from wfbench_core.gpu.device import Device

    device = make_timer(driver).device
    protocol = TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=6, placements=3, min_samples=6,
                              timing_mode=TIMING_COLD_L2)
    return CudaEventTimer(protocol, Device(attrs.evolve(device._d, memset=driver.memset)))


def test_a_cold_sample_is_the_kernels_own_time_though_the_host_is_slower_than_the_gpu() -> None:
    driver = HostClockDriver()
    m = _cold_timer(driver).measure(CASE, SIDES, reference_label="cuda")
    assert m.passed, m.message
    assert m.sampled.timing_mode == TIMING_COLD_L2 and m.sampled.launches_per_sample > 1
    per_launch = {label: np.array(v) for label, v in m.sampled.samples_us.items()}  # us per launch
    # the host needs 24 us per cold launch, the GPU 13 us: any start event stamped before its launch was queued
    # would add the launch latency (6 us and more) to that launch
    assert per_launch["wf"] == pytest.approx(1000 * KERNEL_MS["wf_scale"], rel=1e-9)
    assert per_launch["cuda"] == pytest.approx(1000 * KERNEL_MS["cu_scale"], rel=1e-9)
    assert m.sampled.launch_floor_us == pytest.approx(1000 * KERNEL_MS[EMPTY], rel=1e-9)


def test_each_cold_launch_is_a_finished_flush_then_start_kernel_end_behind_its_own_gate() -> None:
    driver = HostClockDriver()
    m = _cold_timer(driver).measure(CASE, SIDES, reference_label="cuda")
    assert m.passed, m.message
    cold = [i for i, item in enumerate(driver.log) if item == "flush"]
    assert cold, "no cold launch was timed"
    for i in cold:  # as nvbench's cold measurement: flush, (host waits), gate, probe, start, launch, end, probe
        assert driver.log[i + 1:i + 3] == ["gate", CLOCK_KERNEL]
        assert driver.log[i + 3] == "event" and driver.log[i + 5] == "event" and driver.log[i + 6] == CLOCK_KERNEL
        assert driver.log[i + 4] in ("wf_scale", "cu_scale", EMPTY)


def test_the_docs_state_how_a_cold_launch_is_queued() -> None:
    from pathlib import Path

    text = " ".join((Path(__file__).parents[1] / "docs" / "timing.md").read_text().split())
    assert "the host waits for the flush, then queues the start event, the launch and the end event behind the gate" in text
