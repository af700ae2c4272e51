"""Nsight Compute: the command wfbench runs, and the parser on real ncu 2025.3.1 output from an H200.

tests/fixtures/ncu/transpose_f64.{wf,cuda}.raw.csv are the stdout of ``ncu --csv --page raw --clock-control
none`` with the SpeedOfLight, Occupancy, WarpStateStats and LaunchStats sections, profiling one launch of each
side of transpose_f64 at its canonical size (ncu's own notes before the table included).
tests/fixtures/ncu/fp64_peak.raw.csv is the output of exactly :func:`ncu_command`'s options (extra metrics,
base units, the last of three launches) on the roofline's f64 peak kernel.
"""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from wfbench_core.gpu import profile as pf
from wfbench_core.record.results import KernelProfile, converter

NCU = Path(__file__).parent / "fixtures" / "ncu"


def _row(side: str) -> dict:  # type: ignore[type-arg]
    rows = pf.parse_raw_csv((NCU / f"transpose_f64.{side}.raw.csv").read_text())
    assert len(rows) == 1
    return rows[0]


def test_parses_the_real_raw_page() -> None:
    wf, cu = pf.to_profile(_row("wf"), ncu_version="2025.3.1.0"), pf.to_profile(_row("cuda"))
    # values as ncu printed them (gpu__time_duration.sum in ns, percentages of peak)
    assert wf.duration_us == pytest.approx(101.632) and cu.duration_us == pytest.approx(103.904)
    assert (wf.dram_pct, cu.dram_pct) == (63.17, 62.07)
    assert (wf.l2_pct, cu.l2_pct) == (83.32, 80.17)
    assert (wf.l1_pct, cu.l1_pct) == (30.81, 29.83)
    assert (wf.achieved_occupancy_pct, wf.theoretical_occupancy_pct) == (95.75, 100.0)
    assert (wf.registers, cu.registers) == (28, 30)
    assert wf.instructions is None  # smsp__inst_executed.sum was not asked for in that run
    assert list(wf.stalls)[:2] == ["long_scoreboard", "barrier"] and wf.stalls["barrier"] == 13.57
    assert cu.stalls["barrier"] == 19.02 and cu.stalls["mio_throttle"] == 2.53
    assert list(wf.stalls.values()) == sorted(wf.stalls.values(), reverse=True)
    top = pf.top_stalls(wf, 2)
    assert [k for k, _ in top] == ["long_scoreboard", "barrier"]
    assert top[0][1] == pytest.approx(47.93 / sum(wf.stalls.values()))
    assert converter().structure(converter().unstructure(wf), KernelProfile) == wf


def test_parses_the_output_of_the_exact_command_wfbench_runs() -> None:
    p = pf.to_profile(pf.parse_raw_csv((NCU / "fp64_peak.raw.csv").read_text())[0])
    assert p.duration_us == pytest.approx(4241.632) and p.sm_pct == 99.92
    assert p.instructions == 2_389_195_776 and p.dram_bytes == 17_152 + 262_144
    assert "selected" not in p.stalls and list(p.stalls)[0] == "math_pipe_throttle"


def test_scaled_units_and_missing_metrics() -> None:
    header = '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum"'
    text = "\n".join(["==PROF== Connected to process 1", "program output", header,
                      '"","","usecond","Mbyte","Kbyte"', '"0","k","1,234.5","2.5","500"'])
    p = pf.to_profile(pf.parse_raw_csv(text)[0])
    assert p.duration_us == 1234.5 and p.dram_bytes == 2_500_000 + 500_000
    assert p.dram_pct is None and p.stalls == {}
    with pytest.raises(pf.ProfileError, match="no kernel duration"):
        pf.to_profile({"ID": ("", "0")})
    assert pf.parse_raw_csv("==PROF== nothing profiled\n") == []


def test_ncu_command_profiles_only_the_last_launch_of_the_named_kernel(tmp_path: Path) -> None:
    cmd = pf.ncu_command(Path("/x/ncu"), case_id="transpose_f64", ptx=tmp_path / "k.ptx", kernel="transpose_f64",
                         python="python3")
    assert cmd[:7] == ["/x/ncu", "--csv", "--page", "raw", "--print-units", "base", "--clock-control"]
    i = cmd.index("--launch-skip")
    assert cmd[i + 1] == str(pf.LAUNCHES - 1) and cmd[cmd.index("--launch-count") + 1] == "1"
    assert cmd[cmd.index("--kernel-name") + 1] == "transpose_f64"
    tail = cmd[cmd.index("python3"):]
    assert tail[:3] == ["python3", "-m", "wfbench_core.gpu.profile"] and len(tail) == 4
    spec = json.loads(tail[3])
    assert (spec["case_id"], spec["kernel"], spec["config"]) == ("transpose_f64", "transpose_f64", "canonical")
    assert spec["launches"] == pf.LAUNCHES and spec["ptx"] == str(tmp_path / "k.ptx")


def _fake_ncu(tmp_path: Path, body: str) -> Path:
    """A stand-in for the ncu binary (the external edge): prints what the real one prints."""
    script = tmp_path / "ncu"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_profile_side_runs_ncu_and_parses_its_stdout(tmp_path: Path) -> None:
    csv_file = NCU / "transpose_f64.cuda.raw.csv"
    args_file, csv = shlex.quote(str(tmp_path / "args")), shlex.quote(str(csv_file))
    ncu = _fake_ncu(tmp_path, f'case "$1" in --version) echo "Version 2025.3.1.0 (build 1)";; '
                              f'*) for a in "$@"; do echo "$a"; done > {args_file}; cat {csv};; esac\n')
    p = pf.profile_side(case_id="transpose_f64", ptx="// ptx", kernel="transpose_f64", label="cuda", ncu=ncu)
    assert p.duration_us == pytest.approx(103.904) and p.ncu_version == "2025.3.1.0"
    spec = json.loads((tmp_path / "args").read_text().splitlines()[-1])  # the launcher's one argument
    assert spec["case_id"] == "transpose_f64" and spec["kernel"] == "transpose_f64"


def test_profile_side_reports_ncu_permission_errors_in_one_line(tmp_path: Path) -> None:
    ncu = _fake_ncu(tmp_path, 'echo "==PROF== Connected to process 7"\n'
                              'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access '
                              'NVIDIA GPU Performance Counters on the target device 0." \n'
                              'echo "==PROF== Disconnected from process 7"\nexit 0\n')
    with pytest.raises(pf.ProfileError) as err:
        pf.profile_side(case_id="reduce_sum_f64", ptx="// ptx", kernel="k", label="wf", ncu=ncu)
    msg = str(err.value)
    assert msg.startswith("reduce_sum_f64[canonical] wf: ncu profiled nothing: ERR_NVGPUCTRPERM") and "\n" not in msg
    assert "root" in msg


def test_missing_ncu_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from wfbench_core.compiling import cudatools

    monkeypatch.setattr(cudatools, "candidates", lambda name: [])
    monkeypatch.delenv("WFBENCH_NCU", raising=False)
    with pytest.raises(pf.WfbenchError, match="ncu not found .*--ncu PATH"):
        pf.profile_side(case_id="x", ptx="", kernel="k", label="wf")


def test_launcher_without_a_gpu_says_so_in_one_line(tmp_path: Path) -> None:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present: the launcher would launch")
    ptx = tmp_path / "k.ptx"
    ptx.write_text("// no GPU here\n")
    proc = subprocess.run(pf.ncu_command(Path("ncu"), case_id="axpy_f64", ptx=ptx, kernel="axpy_f64")[-4:],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("wfbench: error: ") and "Traceback" not in proc.stderr
