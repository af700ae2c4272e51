"""NVML during timing without a GPU: the summary, the throttle flag, the host's health, and the sampler
thread driven through a stand-in for pynvml that has pynvml's names and behaviour (NVMLError on a value
the board does not report)."""

from __future__ import annotations

import sys
import time
import types

import attrs
import pytest

from wfbench_core.gpu import nvml
from wfbench_core.gpu.nvml import NvmlSampler, Reading, host_health, mark_host, reason_names, summarize, throttled
from wfbench_core.record.results import CaseResult, Environment, NvmlSummary, SideStats, Timing


def test_reason_bits_match_pynvml() -> None:
    pynvml = pytest.importorskip("pynvml")
    assert nvml.REASON_BITS[pynvml.nvmlClocksEventReasonSwPowerCap] == "sw_power_cap"
    assert nvml.REASON_BITS[pynvml.nvmlClocksEventReasonHwThermalSlowdown] == "hw_thermal_slowdown"
    assert nvml.REASON_BITS[pynvml.nvmlClocksEventReasonSwThermalSlowdown] == "sw_thermal_slowdown"
    assert nvml.REASON_BITS[pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown] == "hw_power_brake_slowdown"
    assert nvml.REASON_BITS[pynvml.nvmlClocksEventReasonGpuIdle] == "gpu_idle"
    assert reason_names(0x4 | 0x1 | 0x400) == ("gpu_idle", "sw_power_cap", "bit0x400")


def _r(sm: int, mem: int = 2619, power: float = 400.0, temp: int = 50, reasons: int = 0) -> Reading:
    return Reading(t=0.0, sm_mhz=sm, mem_mhz=mem, power_w=power, temp_c=temp, reasons=reasons)


def test_summary_and_throttle_flags() -> None:
    assert summarize([]) is None
    s = summarize([_r(1980), _r(1440, power=690.5, reasons=0x4), _r(1965, temp=61)])
    assert s is not None
    assert (s.n, s.sm_mhz_min, s.sm_mhz_median, s.sm_mhz_max) == (3, 1440, 1965, 1980)
    assert s.power_w_max == 690.5 and s.temp_c_max == 61 and s.reasons == ("sw_power_cap",)
    assert s.power_throttled and not s.thermal_throttled and throttled(s)
    calm = summarize([_r(1980, reasons=0x1), _r(1980)])  # idle between rounds is not a throttle
    assert calm is not None and not throttled(calm) and calm.reasons == ("gpu_idle",)
    hot = summarize([_r(1700, reasons=0x40)])
    assert hot is not None and hot.thermal_throttled and throttled(hot)
    # a value NVML could not read is left out, not counted as zero
    partial = summarize([Reading(t=0.0, sm_mhz=1900), Reading(t=0.1, sm_mhz=1800, power_w=300.0)])
    assert partial is not None and partial.power_w_median == 300.0 and partial.mem_mhz_median == 0
    assert "throttled: sw_power_cap" in nvml.describe(s) and nvml.describe(None) == "-"


def test_depressed_host_from_memory_clock_or_power_limit() -> None:
    env = Environment(max_mem_clock_mhz=3201, power_limit_w=700.0, default_power_limit_w=700.0)
    ok = NvmlSummary(n=5, mem_mhz_median=3201)
    assert host_health(env, [ok, None]) == (False, "")
    low_mem = NvmlSummary(n=5, mem_mhz_median=2619)
    depressed, why = host_health(env, [low_mem, low_mem, ok])
    assert depressed and "memory clock 2619 MHz" in why and "3201" in why
    capped = attrs.evolve(env, power_limit_w=500.0)
    depressed, why = host_health(capped, [ok])
    assert depressed and "power limit 500 W" in why
    assert host_health(Environment(), [low_mem]) == (False, "")  # nothing to compare with: not judged

    stats = SideStats(1.0, 1.0, 0.0, 0.0, 1, (1.0,))
    timing = Timing(launches_per_sample=1, warmup_busy_s=0.0, warpforth=stats, cuda=stats, gap=1.0, order=("wf",),
                    nvml=low_mem)
    case = CaseResult(id="x", version=1, priority="P0", fingerprint="f", status="ok", timing=timing)
    marked = mark_host(env, [case])
    assert marked.depressed_host and "memory clock" in marked.depressed_why


class _NVMLError(Exception):
    pass


def _fake_pynvml(calls: list[str], *, power_fails: bool = False) -> types.ModuleType:
    """pynvml's names for what the sampler reads (values as the real one returns them: MHz, mW, C, bits)."""
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_TEMPERATURE_GPU = 1, 2, 0
    m.NVMLError = _NVMLError
    m.nvmlInit = lambda: calls.append("init")
    m.nvmlDeviceGetHandleByPciBusId = lambda bus: calls.append(f"bus {bus}") or "h"
    m.nvmlDeviceGetHandleByIndex = lambda i: "h"
    m.nvmlDeviceGetClockInfo = lambda h, which: {1: 1980, 2: 3201}[which]

    def power(h: str) -> int:
        if power_fails:
            raise _NVMLError("Not Supported")
        return 412345

    m.nvmlDeviceGetPowerUsage = power
    m.nvmlDeviceGetTemperature = lambda h, sensor: 47
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x4
    return m


def test_sampler_thread_reads_about_ten_times_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(calls))
    sampler = NvmlSampler("00000000:19:00.0").start()
    time.sleep(0.55)
    readings = sampler.stop()
    assert "bus 00000000:19:00.0" in calls
    assert 5 <= len(readings) <= 9  # one at start, ~10 Hz, one at the end
    r = readings[0]
    assert (r.sm_mhz, r.mem_mhz, r.power_w, r.temp_c, r.reasons) == (1980, 3201, 412.345, 47, 0x4)
    summary = summarize(readings)
    assert summary is not None and summary.power_throttled


def test_sampler_survives_missing_values_and_missing_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml([], power_fails=True))
    readings = NvmlSampler(None, period_s=0.01).start().stop()
    assert readings and all(r.power_w is None and r.sm_mhz == 1980 for r in readings)
    broken = types.ModuleType("pynvml")

    def no_driver() -> None:
        raise _NVMLError("Driver Not Loaded")

    broken.nvmlInit = no_driver
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    sampler = NvmlSampler(None)
    assert sampler.handle is None and "Driver Not Loaded" in sampler.why_not
    assert sampler.start().stop() == []


def test_the_table_marks_throttled_cases_and_a_depressed_host() -> None:
    from pathlib import Path

    from wfbench_core.review.report import render
    from wfbench_core.record.results import load_result

    run = load_result(Path(__file__).parent / "fixtures" / "h200-run1.json")
    assert "throttled" not in render(run) and "depressed" not in render(run)
    first = next(c for c in run.cases if c.timing is not None)
    hot = NvmlSummary(n=4, sm_mhz_min=1440, sm_mhz_max=1980, mem_mhz_median=2619, power_w_median=690.0,
                      temp_c_max=70, reasons=("sw_power_cap",), power_throttled=True)
    cases = tuple(attrs.evolve(c, timing=attrs.evolve(c.timing, nvml=hot, throttled=True)) if c is first else c
                  for c in run.cases)
    env = attrs.evolve(run.environment, max_mem_clock_mhz=3201)
    marked = attrs.evolve(run, cases=cases, environment=mark_host(env, cases))
    text = render(marked)
    assert f"{first.id}: throttled while timed (SM 1440-1980 MHz" in text and "sw_power_cap" in text
    assert "depressed host: memory clock 2619 MHz under load is below the board's 3201 MHz" in text


def test_environment_facts_read_the_default_power_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_pynvml([])
    fake.nvmlDeviceGetEnforcedPowerLimit = lambda h: 500000  # mW, as pynvml returns it
    fake.nvmlDeviceGetPowerManagementDefaultLimit = lambda h: 700000
    fake.nvmlDeviceGetMaxClockInfo = lambda h, which: {1: 1980, 2: 3201}[which]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    got = nvml.facts("00000000:19:00.0")
    assert got["power_limit_w"] == 500.0 and got["default_power_limit_w"] == 700.0
    assert got["max_mem_clock_mhz"] == 3201 and got["sm_clock_mhz"] == 1980
    assert "gpu_uuid" not in got  # what NVML cannot give is left out
    env = Environment(**got)
    assert host_health(env, [])[0]  # a 500 W limit on a 700 W board
