"""The dashboard's diagnostics of the newest canonical run: each side's registers, occupancy, spills and share
of the copy bandwidth or of the f64 peak, and what NVML read while it was timed. Every field is optional: shown
only where a result carries it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "DIAG_KEYS", "diagnostics",
]

DIAG_KEYS = ("registers", "occupancy")  # diag_wf / diag_cuda scalars (SideDiagnostics) shown as they are


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _range(v: Any) -> list[float] | None:
    """A number or a list of numbers as [min, max]; None for anything else."""
    if _num(v):
        return [v, v]
    if isinstance(v, (list, tuple)) and v and all(_num(x) for x in v):
        return [min(v), max(v)]
    return None


def _side_diag(case: dict[str, Any], side: str, copy_gbps: Any, fp64_peak: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kattrs = case.get(f"attrs_{side}")
    if isinstance(kattrs, dict):
        out.update({k: kattrs[k] for k in ("registers", "local_bytes", "shared_bytes") if _num(kattrs.get(k))})
    diag = case.get(f"diag_{side}")
    if isinstance(diag, dict):
        out.update({k: diag[k] for k in DIAG_KEYS if _num(diag.get(k))})
        if _num(diag.get("spill_stores")) and _num(diag.get("spill_loads")):
            out["spill_bytes"] = diag["spill_stores"] + diag["spill_loads"]
        mix = diag.get("mix")
        if isinstance(mix, dict) and mix and all(isinstance(k, str) and _num(v) for k, v in mix.items()):
            out["mix"] = {k: v for k, v in mix.items() if k != "predicated"}  # a tag, not a class
    timing = case.get("timing")
    gbps = timing.get(f"gbps_{side}") if isinstance(timing, dict) else None
    if _num(gbps) and _num(copy_gbps) and copy_gbps > 0 and case.get("metric", "bandwidth") == "bandwidth":
        out["copy_pct"] = gbps / copy_gbps
    gflops = timing.get(f"gflops_{side}") if isinstance(timing, dict) else None
    if _num(gflops) and _num(fp64_peak) and fp64_peak > 0 and case.get("metric") == "compute":
        out["roofline"] = gflops / fp64_peak  # share of the f64 add/multiply peak measured in the same run
    return out


def _nvml(raw: Any) -> dict[str, Any]:
    """What NVML saw while a case was timed (``timing.nvml``, an NvmlSummary), as ranges and reasons."""
    if not isinstance(raw, dict) or not _num(raw.get("n")) or not raw["n"]:
        return {}
    out: dict[str, Any] = {}
    for key, lo, hi in (("sm_clock_mhz", "sm_mhz_min", "sm_mhz_max"), ("power_w", "power_w_median", "power_w_max"),
                        ("temperature_c", "temp_c_max", "temp_c_max")):
        if _num(raw.get(lo)) and _num(raw.get(hi)) and raw[hi]:
            out[key] = [raw[lo], raw[hi]]
    reasons = raw.get("reasons")
    if isinstance(reasons, (list, tuple)) and all(isinstance(r, str) for r in reasons):
        out["throttle"] = list(reasons)
    return out


def diagnostics(raw: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per case of one run (the rows shown), what both kernels look like and what the GPU did while timed.

    Reads, per case: ``attrs_wf``/``attrs_cuda`` (``registers``, ``local_bytes``, ``shared_bytes``),
    ``diag_wf``/``diag_cuda`` (:class:`~wfbench_core.record.results.SideDiagnostics`: ``registers``, ``spill_stores``
    + ``spill_loads``, ``occupancy``, ``mix`` {class: count}), ``timing.gbps_wf``/``gbps_cuda`` against
    ``environment.copy_gbps`` and ``timing.gflops_wf``/``gflops_cuda`` against
    ``environment.fp64_peak_gflops`` (the roofline), ``timing.clocks_sm_mhz`` and ``timing.nvml``
    (:class:`~wfbench_core.record.results.NvmlSummary`: SM clock, power and temperature ranges, throttle
    ``reasons``). Anything absent or of another shape is left out; a case with nothing to show has no entry.
    """
    env_raw = raw.get("environment")
    env: dict[str, Any] = env_raw if isinstance(env_raw, dict) else {}
    copy_gbps = env.get("copy_gbps")
    raw_cases = {(c.get("id"), c.get("version"), c.get("compiler_label", "")): c
                 for c in raw.get("cases") or [] if isinstance(c, dict)}
    cases = []
    for r in rows:
        case = raw_cases.get((r["case"], r["version"], r["label"]))
        if case is None:
            continue
        peak = env.get("fp64_peak_gflops")
        wf, cuda = _side_diag(case, "wf", copy_gbps, peak), _side_diag(case, "cuda", copy_gbps, peak)
        nvml: dict[str, Any] = {}
        timing_raw = case.get("timing")
        timing: dict[str, Any] = timing_raw if isinstance(timing_raw, dict) else {}
        clocks = _range(timing.get("clocks_sm_mhz"))
        if clocks:
            nvml["sm_clock_mhz"] = clocks
        nvml.update(_nvml(timing.get("nvml")))
        if wf or cuda or nvml:
            cases.append({"case": r["case"], "version": r["version"], "label": r["label"], "wf": wf, "cuda": cuda,
                          "nvml": nvml})
    gpu = {k: env[k] for k in ("sm_clock_mhz", "max_sm_clock_mhz", "mem_clock_mhz", "max_mem_clock_mhz",
                               "power_limit_w", "temperature_c", "copy_gbps") if _num(env.get(k)) and env[k]}
    return {"cases": cases, "gpu": gpu}
