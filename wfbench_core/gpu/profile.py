"""Nsight Compute profiles of one side's kernel: the launcher that ``ncu`` runs, the command, the CSV parser.

``ncu`` runs ``python -m wfbench_core.gpu.profile SPEC`` (a launcher, :mod:`wfbench_core.gpu.launcher`; ncu is
a child of :mod:`wfbench_core.gpu.child`: its own process group, killed whole at its deadline, dead with its
parent), which loads the side's PTX and launches the case's canonical configuration (the device module's loading, argument and launch
code, on the case's own inputs) a few times; ``ncu`` profiles the last launch only, so module loading and
first-launch effects stay out. Metrics come back as ``--csv --page raw`` (one row per profiled launch:
column names, then units, then values) and are parsed into :class:`~wfbench_core.record.results.KernelProfile`.

The clocks are left as they are (``--clock-control none``): the profile then matches the timed run, which also
runs at the GPU's own clocks. This module imports nothing heavy until ``launch`` runs on the GPU host.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wfbench_core.case import CaseKey
from wfbench_core.compiling.cudatools import require_tool
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu import child
from wfbench_core.gpu.child import Recipe
from wfbench_core.gpu.launcher import LaunchSpec, command, serve
from wfbench_core.host.childenv import child_env
from wfbench_core.record.results import KernelProfile

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CLOCK_CONTROL", "EXTRA_METRICS", "LAUNCHES", "LOCAL_METRICS", "METRICS", "NCU_TIMEOUT_S", "SECTIONS",
    "ProfileError", "launch", "ncu_command", "ncu_errors", "ncu_number", "ncu_options", "ncu_rows", "ncu_version", "parse_raw_csv", "profile_side",
    "to_profile", "top_stalls",
]

NCU_TIMEOUT_S = 600
#: Launches the launcher makes; ncu profiles only the last one.
LAUNCHES = 3
CLOCK_CONTROL = "none"
SECTIONS = ("SpeedOfLight", "Occupancy", "WarpStateStats", "LaunchStats")
#: Local memory (the runtime stack, spills) as it passes L1: bytes of local loads and stores at the tag stage,
#: every lane's access counted (KernelProfile field -> ncu metric; the runtime-stack tax, docs/stack-tax.md)
LOCAL_METRICS: Mapping[str, str] = {
    "local_load_bytes": "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "local_store_bytes": "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
}
EXTRA_METRICS = ("gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum",
                 "dram__bytes_write.sum", *LOCAL_METRICS.values())

# KernelProfile field -> ncu metric (raw page names, ncu 2025.x on sm_70 and newer)
METRICS: Mapping[str, str] = {
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
}
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
_TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6,
               "second": 1e6}
_BYTE_UNITS = {"byte": 1, "kbyte": 10**3, "mbyte": 10**6, "gbyte": 10**9, "tbyte": 10**12}


class ProfileError(WfbenchError):
    """ncu could not profile a side; the message carries ncu's own words."""


# -------------------------------------------------------------------------------------------------
# The ncu command and its output
# -------------------------------------------------------------------------------------------------


def ncu_options(ncu: Path, metrics: Sequence[str] = EXTRA_METRICS) -> list[str]:
    """ncu and the options of every profile: the raw page as CSV in base units, the GPU's own clocks, the
    sections and ``metrics``."""
    cmd = [str(ncu), "--csv", "--page", "raw", "--print-units", "base", "--clock-control", CLOCK_CONTROL]
    for section in SECTIONS:
        cmd += ["--section", section]
    return [*cmd, "--metrics", ",".join(metrics)]


def ncu_command(ncu: Path, *, case_id: str, ptx: Path, kernel: str, python: str = sys.executable) -> list[str]:
    """The whole command line: ncu's options, the one launch profiled (the last), then the launcher."""
    spec = LaunchSpec(case_id, "", kernel, str(ptx), "canonical", LAUNCHES)
    return [*ncu_options(ncu), "--kernel-name", kernel, "--launch-skip", str(LAUNCHES - 1), "--launch-count", "1",
            *command(spec, "wfbench_core.gpu.profile", python)]


def ncu_number(text: str) -> float | None:
    """A value of ncu's raw page as a number (thousands separators dropped); None for an empty cell, n/a, nan or
    ncu's ``(!)``."""
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "(!)"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_raw_csv(output: str) -> list[dict[str, tuple[str, str]]]:
    """Rows of ``ncu --csv --page raw`` output: ``{metric: (unit, value)}`` per profiled launch.

    The output may hold the profiled program's own lines and ``==PROF==`` notes before the table; the table
    starts at the header line (its first cell is ``ID``).
    """
    lines = output.splitlines()
    start = next((n for n, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        return []
    table = [ln for ln in lines[start:] if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(table))))
    if len(rows) < 3:
        return []
    header, units = rows[0], rows[1]
    return [{name: (units[i] if i < len(units) else "", row[i] if i < len(row) else "")
             for i, name in enumerate(header)} for row in rows[2:]]


def ncu_errors(output: str) -> list[str]:
    return [ln.split("==ERROR==", 1)[1].strip() for ln in output.splitlines() if "==ERROR==" in ln]


def to_profile(row: Mapping[str, tuple[str, str]], *, ncu_version: str = "") -> KernelProfile:
    """One raw row as a :class:`KernelProfile` (metrics ncu did not report stay None)."""

    def value(name: str) -> float | None:
        return ncu_number(row[name][1]) if name in row else None

    duration = None
    for name in ("gpu__time_duration.sum", "gpu__time_duration.avg"):
        if name in row and (number := ncu_number(row[name][1])) is not None:
            unit = row[name][0].strip().lower()
            if unit not in _TIME_UNITS:
                raise ProfileError(f"ncu reported {name} in unknown unit {row[name][0]!r}")
            duration = number * _TIME_UNITS[unit]
            break
    if duration is None:
        raise ProfileError("ncu output has no kernel duration (gpu__time_duration); was the kernel profiled?")
    stalls = {}
    for name, (_, text) in row.items():
        m = _STALL.match(name)
        v = ncu_number(text)
        if m and v is not None and m.group(1) != "selected":  # "selected" is issuing, not a stall
            stalls[m.group(1)] = v
    def nbytes(name: str) -> float | None:
        v = value(name)
        scale = _BYTE_UNITS.get(row[name][0].strip().lower()) if name in row else None
        return v * scale if v is not None and scale is not None else None

    reads, writes = nbytes("dram__bytes_read.sum"), nbytes("dram__bytes_write.sum")
    inst, regs = value("smsp__inst_executed.sum"), value("launch__registers_per_thread")
    local = {field: round(v) if (v := nbytes(metric)) is not None else None for field, metric in LOCAL_METRICS.items()}
    percents: dict[str, Any] = {field: value(metric) for field, metric in METRICS.items()}
    return KernelProfile(
        ncu_version=ncu_version, duration_us=duration, **percents,
        instructions=int(inst) if inst is not None else None,
        registers=int(regs) if regs is not None else None,
        dram_bytes=int(reads + writes) if reads is not None and writes is not None else None,
        stalls=dict(sorted(stalls.items(), key=lambda kv: -kv[1])),
        clock_control=CLOCK_CONTROL, **local,
    )


def top_stalls(p: KernelProfile, n: int = 3) -> list[tuple[str, float]]:
    """The ``n`` largest stall reasons, as a share of all stalls (0..1)."""
    total = sum(p.stalls.values())
    if not total:
        return []
    return [(k, v / total) for k, v in sorted(p.stalls.items(), key=lambda kv: -kv[1])[:n]]


def ncu_version(ncu: Path) -> str:
    try:
        out = subprocess.run([str(ncu), "--version"], capture_output=True, text=True, timeout=60,
                             env=child_env()).stdout
    except OSError:
        return ""
    m = re.search(r"Version\s+([\d.]+)", out)
    return m.group(1) if m else ""


def profile_side(*, case_id: str, ptx: str, kernel: str, label: str, ncu: str | Path | None = None,
                 recipe: Recipe | None = None) -> KernelProfile:
    """Run ncu on the launcher for one side's PTX; needs a GPU and permission to read its counters.

    :param recipe: the plugins the launcher loads (:attr:`Registry.recipe`); None: this environment's.
    """
    binary = require_tool("ncu", ncu, why="--profile runs Nsight Compute")
    with tempfile.TemporaryDirectory(prefix="wfbench-ncu-") as tmp:
        ptx_path = Path(tmp) / f"{label}.ptx"
        ptx_path.write_text(ptx)
        rows = ncu_rows(ncu_command(binary, case_id=case_id, ptx=ptx_path, kernel=kernel),
                        where=f"{CaseKey(case_id, config='canonical')} {label}", recipe=recipe)
    return to_profile(rows[-1], ncu_version=ncu_version(binary))


def ncu_rows(cmd: list[str], *, where: str, recipe: Recipe | None = None) -> list[dict[str, tuple[str, str]]]:
    """Run an ncu command line (:func:`ncu_command`) in its own process group under :data:`NCU_TIMEOUT_S`; the
    rows of its raw CSV (:func:`parse_raw_csv`), at least one. ``where`` leads the one line of a failure."""
    proc = child.run(cmd, timeout_s=NCU_TIMEOUT_S, recipe=recipe)
    if proc.returncode is None:
        raise ProfileError(f"{where}: ncu took over {NCU_TIMEOUT_S} s")
    out = proc.stdout + "\n" + proc.stderr
    errors = ncu_errors(out)
    rows = parse_raw_csv(proc.stdout)
    if proc.returncode != 0 or not rows:
        why = "; ".join(errors[:2]) or _last_lines(out) or f"exit status {proc.returncode}"
        hint = " (profiling needs root or NVreg_RestrictProfilingToAdminUsers=0)" if "ERR_NVGPUCTRPERM" in out else ""
        raise ProfileError(f"{where}: ncu profiled nothing: {why}{hint}")
    return rows


def _last_lines(text: str, n: int = 2) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("==PROF==")]
    return "; ".join(lines[-n:])


# -------------------------------------------------------------------------------------------------
# The launcher ncu runs (on the GPU host)
# -------------------------------------------------------------------------------------------------


def launch(case_id: str, ptx: str, kernel: str, launches: int = LAUNCHES) -> None:
    """Load ``ptx`` and launch ``kernel`` on the case's canonical inputs ``launches`` times, then synchronise."""
    from wfbench_core.discover.registry import Registry
    from wfbench_core.gpu.device import Device

    case = Registry.load().case(case_id)  # the plugins its environment names
    device = Device().open()
    loaded = device.load(ptx, kernel, case_id=case_id, label=case_id)
    inputs = case.make_inputs("canonical")
    want = case.make_reference(inputs, "canonical")  # only the outputs' shapes and types are used
    bufs = {p.name: device.to_device(inputs[p.name]) for p in case.params if p.kind == "ptr" and not p.output}
    bufs.update({p.name: device.empty(want[p.name].shape, want[p.name].dtype) for p in case.outputs})
    scalars = {p.name: inputs[p.name] for p in case.params if p.kind != "ptr"}
    go = device.case_launcher(loaded, case, "canonical", device.args(case, bufs, scalars))
    for _ in range(launches):
        go()
    device.synchronize()


def _launch_spec(spec: LaunchSpec, ptx: str) -> None:
    launch(spec.case_id, ptx, spec.kernel, spec.launches)


if __name__ == "__main__":
    sys.exit(serve(_launch_spec, prog="wfbench_core.gpu.profile"))
