"""--sanitize plumbing without a GPU: finding compute-sanitizer, reading its reports, the child's command line.

The real compute-sanitizer needs a GPU; here a stand-in script takes its place on the command line and
behaves as it does: it writes its report to ``--log-file`` and exits with ``--error-exitcode`` when it
found an error, else runs the application and returns the application's exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wfbench_cases.axpy_f64 import CASE as AXPY
from wfbench_cases.reduce_sum_f64 import CASE as REDUCE
from wfbench_core.gpu import sanitize
from wfbench_core.errors import WfbenchError
from wfbench_core.compiling.faults import HANG, KernelFault

import standins  # tests/standins.py

MEMCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at fault_oob_store+0x1d0
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f1a40000000 is out of bounds
=========     and is 1099511627776 bytes after the nearest allocation at 0x7f1940000000 of size 800024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f3d1d] in libcuda.so.1
=========
========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuStreamSynchronize.
=========
========= Target application returned an error
========= ERROR SUMMARY: 2 errors
"""

RACECHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at fault_smem_race+0x130
=========     and Read access at fault_smem_race+0x170 [8192 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

CLEAN_LOG = """\
========= COMPUTE-SANITIZER
========= ERROR SUMMARY: 0 errors
"""


def test_first_report_line() -> None:
    assert sanitize.first_report(MEMCHECK_LOG) == "Invalid __global__ write of size 4 bytes"
    assert sanitize.first_report(RACECHECK_LOG) == ("Error: Race reported between Write access at "
                                                    "fault_smem_race+0x130 and Read access at fault_smem_race+0x170 "
                                                    "[8192 hazards]")
    assert sanitize.first_report(CLEAN_LOG) is None
    assert sanitize.first_report("") is None


def test_racecheck_only_for_shared_memory() -> None:
    assert sanitize.tools_for(AXPY, "\t.reg .b64 %rd<9>;\n") == ("memcheck",)
    assert sanitize.tools_for(REDUCE, "\t.shared .align 8 .b8 __wg_S[2048];\n") == ("memcheck", "racecheck")
    assert sanitize.tools_for(REDUCE, "\t.extern .shared .align 16 .b8 dyn[];\n") == ("memcheck", "racecheck")


def _fake_sanitizer(tmp_path: Path, log: str, found_error: bool) -> Path:
    """A stand-in with compute-sanitizer's command line and exit behaviour."""
    script = tmp_path / "compute-sanitizer"
    (tmp_path / "report.txt").write_text(log)
    script.write_text(standins.shebang() + "\n" + textwrap.dedent(f"""\
        import json, shutil, subprocess, sys
        args = sys.argv[1:]
        opts = {{}}
        while args and args[0].startswith("--"):
            opts[args[0]] = args[1]
            args = args[2:]
        assert opts["--tool"] in ("memcheck", "racecheck"), opts
        with open({str(tmp_path / 'calls.txt')!r}, "a") as f:
            f.write(json.dumps([opts["--tool"], *args]) + "\\n")
        shutil.copy({str(tmp_path / 'report.txt')!r}, opts["--log-file"])
        if {found_error!r}:
            sys.exit(int(opts["--error-exitcode"]))
        sys.exit(subprocess.run(args).returncode)
        """))
    script.chmod(0o755)
    return script


def test_a_memcheck_report_is_a_finding(tmp_path: Path) -> None:
    fake = _fake_sanitizer(tmp_path, MEMCHECK_LOG, found_error=True)
    finding = sanitize.sanitize_case(AXPY, "wf", ".version 8.0\n", "axpy_f64", sanitizer=fake)
    assert finding is not None and finding.tool == "memcheck"
    assert finding.message == ("axpy_f64[check] WarpForth: compute-sanitizer memcheck: "
                               "Invalid __global__ write of size 4 bytes")
    call = json.loads((tmp_path / "calls.txt").read_text())
    assert call[0] == "memcheck" and call[1] == sys.executable and call[2:4] == ["-m", "wfbench_core.gpu.sanitize"]
    spec = json.loads(call[4])
    assert (spec["case_id"], spec["side"], spec["kernel"], spec["config"]) == ("axpy_f64", "wf", "axpy_f64", "check")


def test_racecheck_runs_for_shared_memory_kernels(tmp_path: Path) -> None:
    fake = _fake_sanitizer(tmp_path, RACECHECK_LOG, found_error=True)
    finding = sanitize.sanitize_case(REDUCE, "cuda", "\t.shared .align 8 .b8 s[2048];\n", "reduce_sum_f64",
                                     sanitizer=fake, tools=("racecheck",))
    assert finding is not None and finding.tool == "racecheck" and finding.line.startswith("Error: Race reported")


def test_the_child_runs_and_its_failure_is_one_line(tmp_path: Path) -> None:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present here")
    fake = _fake_sanitizer(tmp_path, CLEAN_LOG, found_error=False)  # clean report: the child's status counts
    with pytest.raises(WfbenchError) as err:
        sanitize.sanitize_case(AXPY, "wf", ".version 8.0\n", "axpy_f64", sanitizer=fake)
    assert str(err.value).startswith("axpy_f64[check] WarpForth: compute-sanitizer memcheck could not run the "
                                     "kernel: wfbench: error: no NVIDIA GPU")


def test_a_sanitized_run_past_its_deadline_is_a_hang(tmp_path: Path) -> None:
    script = tmp_path / "compute-sanitizer"
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(0o755)
    with pytest.raises(KernelFault) as err:
        sanitize.sanitize_case(AXPY, "wf", ".version 8.0\n", "axpy_f64", sanitizer=script, timeout_s=0.5)
    assert err.value.kind == HANG and not err.value.sticky  # only the child was killed
    assert str(err.value) == ("axpy_f64[check] WarpForth: hang: did not finish within 0.5 s under "
                              "compute-sanitizer memcheck")


def test_finding_compute_sanitizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wfbench_core.compiling.cudatools import ENV, find_tool

    monkeypatch.delenv(ENV["compute-sanitizer"], raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    tool = home / "bin" / "compute-sanitizer"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert find_tool("compute-sanitizer") == tool
    monkeypatch.setenv(ENV["compute-sanitizer"], str(tmp_path / "nope"))
    with pytest.raises(WfbenchError, match="WFBENCH_COMPUTE_SANITIZER.*is not an executable file"):
        find_tool("compute-sanitizer")


def test_no_sanitizer_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wfbench_core.compiling import cudatools

    monkeypatch.delenv(cudatools.ENV["compute-sanitizer"], raising=False)
    monkeypatch.setattr(cudatools, "candidates", lambda name: [tmp_path / name])  # a machine without it
    with pytest.raises(WfbenchError, match=r"compute-sanitizer not found \(--sanitize runs it\): install the CUDA"):
        sanitize.sanitize_case(AXPY, "wf", "", "axpy_f64")


def test_child_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    from wfbench_core.gpu.launcher import LaunchSpec, command

    (tmp_path / "k.ptx").write_text("// ptx\n")
    for argv, first_words in (
        (command(LaunchSpec("nope", "wf", "k", str(tmp_path / "k.ptx")), "wfbench_core.gpu.sanitize"),
         "wfbench: error: unknown case 'nope'"),
        (command(LaunchSpec("axpy_f64", "wf", "k", str(tmp_path / "none.ptx")), "wfbench_core.gpu.sanitize"),
         f"wfbench: error: {tmp_path / 'none.ptx'}: cannot read the PTX"),
        ([sys.executable, "-m", "wfbench_core.gpu.sanitize", "{not json"], "wfbench: error: launch spec: not a wfbench LaunchSpec (not valid JSON"),
        ([sys.executable, "-m", "wfbench_core.gpu.sanitize"], "wfbench: error: usage: "),
    ):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.startswith(first_words), r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
