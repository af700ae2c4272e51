"""NVML during timing: a sampler thread, its per-case summary, the throttle flag and the host's health.

The sampler reads SM and memory clocks, power, temperature and the clock event (throttle) reasons about
10 times a second while a case is timed. A case during which a power or thermal reason slowed the clocks
is flagged (``Timing.throttled``: kept, marked, left out of trends). A run whose memory clock under load,
or whose enforced power limit, sits below the board's healthy band is a *depressed host*
(``Environment.depressed_host``): its deltas are not trusted.

pynvml is imported lazily; without it (or without a driver) the sampler reads nothing and says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from wfbench_core.record.results import CaseResult, Environment, NvmlSummary
from wfbench_core.stats import median

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "HEALTHY_FRACTION", "PERIOD_S", "POWER_REASONS", "REASON_BITS", "THERMAL_REASONS", "NvmlSampler", "Reading",
    "describe", "facts", "host_health", "mark_host", "reason_names", "summarize", "throttled",
]

PERIOD_S = 0.1

# NVML clock event reasons (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*): bit -> name
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",  # the hardware halves the clocks or more: too hot, power brake or power draw too high
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks",
}
POWER_REASONS = frozenset({"sw_power_cap", "hw_power_brake_slowdown", "hw_slowdown"})
THERMAL_REASONS = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"})

HEALTHY_FRACTION = 0.95  # memory clock under load and enforced power limit: at least this share of the board's


@attrs.frozen
class Reading:
    t: float  # seconds, monotonic
    sm_mhz: int | None = None
    mem_mhz: int | None = None
    power_w: float | None = None
    temp_c: int | None = None
    reasons: int | None = None  # bit mask of REASON_BITS


def reason_names(mask: int) -> tuple[str, ...]:
    """The names of the reasons set in a clock event bit mask (unknown bits as ``bit0x...``)."""
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    unknown = mask & ~sum(REASON_BITS)
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"bit{bit:#x}")
            unknown &= ~bit
        bit <<= 1
    return tuple(names)


def summarize(readings: Sequence[Reading]) -> NvmlSummary | None:
    """One case's readings as a summary; None when NVML gave nothing."""
    if not readings:
        return None

    def values(field: str) -> list[float]:
        return [float(getattr(r, field)) for r in readings if getattr(r, field) is not None]

    sm, mem, power, temp = values("sm_mhz"), values("mem_mhz"), values("power_w"), values("temp_c")
    mask = 0
    for r in readings:
        mask |= r.reasons or 0
    names = reason_names(mask)

    def mid(a: list[float]) -> float:
        return median(a) if a else 0.0

    return NvmlSummary(
        n=len(readings),
        sm_mhz_min=int(min(sm, default=0.0)),
        sm_mhz_median=round(mid(sm)),
        sm_mhz_max=int(max(sm, default=0.0)),
        mem_mhz_min=int(min(mem, default=0.0)),
        mem_mhz_median=round(mid(mem)),
        power_w_median=round(mid(power), 1),
        power_w_max=round(max(power, default=0.0), 1),
        temp_c_max=int(max(temp, default=0.0)),
        reasons=names,
        power_throttled=bool(POWER_REASONS.intersection(names)),
        thermal_throttled=bool(THERMAL_REASONS.intersection(names)),
    )


def throttled(summary: NvmlSummary | None) -> bool:
    """A power or thermal throttle event during the case's timing."""
    return bool(summary and (summary.power_throttled or summary.thermal_throttled))


def host_health(env: Environment, summaries: Iterable[NvmlSummary | None]) -> tuple[bool, str]:
    """(depressed, why): memory clock under load or enforced power limit below the board's healthy band."""
    why = []
    if env.default_power_limit_w and env.power_limit_w and \
            env.power_limit_w < HEALTHY_FRACTION * env.default_power_limit_w:
        why.append(f"power limit {env.power_limit_w:.0f} W is below the board's default "
                   f"{env.default_power_limit_w:.0f} W")
    mem = [s.mem_mhz_median for s in summaries if s is not None and s.mem_mhz_median]
    if mem and env.max_mem_clock_mhz:
        under_load = median(mem)
        if under_load < HEALTHY_FRACTION * env.max_mem_clock_mhz:
            why.append(f"memory clock {under_load:.0f} MHz under load is below the board's "
                       f"{env.max_mem_clock_mhz} MHz")
    return bool(why), "; ".join(why)


def mark_host(env: Environment, cases: Iterable[CaseResult]) -> Environment:
    """The run's environment with ``depressed_host`` set from its cases' NVML summaries."""
    depressed, why = host_health(env, (c.timing.nvml for c in cases if c.timing is not None))
    return attrs.evolve(env, depressed_host=depressed, depressed_why=why)


def describe(summary: NvmlSummary | None) -> str:
    """One short line for tables: SM and memory clock range, power, temperature, throttle reasons."""
    if summary is None:
        return "-"
    text = (f"SM {summary.sm_mhz_min}-{summary.sm_mhz_max} MHz, mem {summary.mem_mhz_median} MHz, "
            f"{summary.power_w_median:.0f} W, {summary.temp_c_max} C")
    slow = [r for r in summary.reasons if r in POWER_REASONS | THERMAL_REASONS]
    return text + (f", throttled: {'+'.join(slow)}" if slow else "")


class NvmlSampler:
    """Reads NVML on a daemon thread every ``period_s`` between ``start()`` and ``stop()``."""

    def __init__(self, bus_id: str | None, period_s: float = PERIOD_S) -> None:
        self.period_s = period_s
        self.handle: Any = None
        self.why_not = ""
        self._readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id) if bus_id else \
                pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as exc:  # NVML is metadata: timing goes on without it
            self.why_not = f"NVML not readable ({type(exc).__name__}: {exc})"
            self.handle = None

    def read(self) -> Reading:
        """One reading; a value NVML cannot give stays None."""
        nv, h = self._nvml, self.handle

        def get(fn: Any) -> Any:
            try:
                return fn()
            except Exception:  # each value is optional
                return None

        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        power_mw = get(lambda: nv.nvmlDeviceGetPowerUsage(h))
        return Reading(
            t=time.monotonic(),
            sm_mhz=get(lambda: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
            mem_mhz=get(lambda: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))),
            power_w=None if power_mw is None else power_mw / 1000.0,
            temp_c=get(lambda: int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
            reasons=get(lambda: int(reasons_fn(h))),
        )

    def _loop(self) -> None:
        while True:
            self._readings.append(self.read())
            if self._stop.wait(self.period_s):
                return

    def start(self) -> NvmlSampler:
        if self.handle is not None and self._thread is None:
            self._readings = []
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="wfbench-nvml", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> list[Reading]:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            if self.handle is not None:
                self._readings.append(self.read())  # the state at the end of timing, too
        return list(self._readings)


def facts(bus_id: str | None) -> dict[str, Any]:
    """GPU facts from NVML; any that cannot be read are left out."""
    try:
        import pynvml
    except ImportError:
        return {}
    out: dict[str, Any] = {}
    try:
        pynvml.nvmlInit()
    except Exception:
        return {}
    try:
        h = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id) if bus_id else pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    reads: dict[str, Callable[[], Any]] = {
        "gpu_uuid": lambda: pynvml.nvmlDeviceGetUUID(h),
        "driver_version": lambda: pynvml.nvmlSystemGetDriverVersion(),
        "sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        "mem_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "max_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
        "max_mem_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "power_limit_w": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0,
        "default_power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0,
        "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        "memory_bytes": lambda: pynvml.nvmlDeviceGetMemoryInfo(h).total,
    }
    for key, read in reads.items():
        try:
            value = read()
            out[key] = value.decode() if isinstance(value, bytes) else value
        except Exception:  # each fact is optional
            pass
    try:
        v = pynvml.nvmlSystemGetCudaDriverVersion()
        out["cuda_driver_version"] = f"{v // 1000}.{(v % 1000) // 10}"
    except Exception:
        pass
    for k in ("sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz", "max_mem_clock_mhz", "temperature_c",
              "memory_bytes"):
        if k in out:
            out[k] = int(out[k])
    return out
