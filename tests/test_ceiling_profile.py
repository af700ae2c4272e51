"""``wfbench explain CASE --ceiling --profile``: Nsight Compute on a library ceiling's call, without a GPU here.

docs/results/ceiling-profiles/h200-*.raw.csv are ncu 2025.3's stdout for exactly :func:`ncu_command` on an H200
(one call of the ceiling of reduce_sum_f64 and of matmul_f64_tiled); ncu itself is the external edge, stood in
for by a script that prints such a page. The real profile runs in tests/test_ceiling_gpu.py.
"""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from testkit import STORED_PTX  # tests/testkit.py
from wfbench_core.cli import main
from wfbench_core.discover.registry import Registry
from wfbench_core.gpu import ceiling_profile as cp
from wfbench_core.gpu.profile import LAUNCHES, parse_raw_csv

ROOT = Path(__file__).parent.parent
PAGES = ROOT / "docs" / "results" / "ceiling-profiles"
SIDE_PAGE = Path(__file__).parent / "fixtures" / "ncu" / "transpose_f64.wf.raw.csv"


def _kernels(case_id: str) -> list[cp.LibraryKernel]:
    return cp.library_kernels(parse_raw_csv((PAGES / f"h200-{case_id}.raw.csv").read_text()))


def test_the_command_profiles_every_kernel_of_one_call_and_counts_tensor_operations(tmp_path: Path) -> None:
    cmd = cp.ncu_command(Path("/x/ncu"), case_id="reduce_sum_f64", python="python3")
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert "--kernel-name" not in cmd and "--launch-skip" not in cmd  # the library's kernels have its own names
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert set(cp.TENSOR_METRICS.values()) <= set(metrics) and "gpu__time_duration.sum" in metrics
    tail = cmd[cmd.index("python3"):]
    assert tail[:3] == ["python3", "-m", cp.MODULE] and len(tail) == 4
    spec = json.loads(tail[3])
    assert (spec["case_id"], spec["ptx"], spec["config"], spec["launches"]) == ("reduce_sum_f64", "", "canonical",
                                                                                 LAUNCHES)


def test_the_h200_pages_parse_into_the_library_kernels() -> None:
    reduce = _kernels("reduce_sum_f64")
    assert [k.name.split("<")[0] for k in reduce] == ["void cub::DeviceReduceKernel",
                                                      "void cub::DeviceReduceSingleTileKernel",
                                                      "cupy_copy__float64_float64"]
    assert reduce[0].profile.duration_us == pytest.approx(63.296) and reduce[0].tensor_ops == {
        "fp64": 0.0, "fp16": 0.0, "int8": 0.0}  # ncu 2025.3 has no bf16/tf32 tensor counters for an H200
    (gemm,) = _kernels("matmul_f64_tiled")
    n = Registry.load().case("matmul_f64_tiled").sizes["canonical"]["N"]
    assert gemm.name.startswith("sm90_xmma_gemm_f64") and gemm.tensor_ops is not None
    assert gemm.tensor_ops["fp64"] == 2 * n**3  # every multiply-add of the DGEMM on the FP64 tensor cores
    side = cp.library_kernels(parse_raw_csv(SIDE_PAGE.read_text()))
    assert side[0].tensor_ops is None  # a page without the counters: "not counted"


def _fake_ncu(tmp_path: Path, ceiling: str) -> Path:
    """ncu's stand-in: a side's page for a launch picked by name, ``ceiling`` (a shell command) for the call."""
    script = tmp_path / "ncu"
    script.write_text("#!/bin/sh\n"
                      'case "$1" in --version) echo "Version 2025.3.1.0 (build 1)"; exit 0;; esac\n'
                      f'case " $* " in *" --kernel-name "*) cat {shlex.quote(str(SIDE_PAGE))};; *) {ceiling};; esac\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def _explain(ncu: Path) -> str:
    wf_ptx = STORED_PTX / "reduce_sum_f64.canonical.ptx"
    r = CliRunner().invoke(main, ["explain", "reduce_sum_f64", "--wf-ptx", str(wf_ptx),
                                  "--arch", "sm_90", "--profile", "--ncu", str(ncu), "--ceiling", "-q"])
    assert r.exit_code == 0, r.output
    return r.output.split("### Nsight Compute: the library's kernels beside the case's", 1)[1]


def test_explain_shows_each_library_kernel_beside_both_sides(nvcc: Path, tmp_path: Path) -> None:
    section = _explain(_fake_ncu(tmp_path, f"cat {shlex.quote(str(PAGES / 'h200-reduce_sum_f64.raw.csv'))}"))
    assert "| Nsight Compute | WarpForth | CUDA | library 1 | library 2 | library 3 |" in section
    assert "| duration (us) | 101.63 | 101.63 | 63.30 | 4.35 | 1.98 |" in section
    assert "| tensor-path operations | - | - | none | none | none |" in section
    assert "3 kernel(s), 69.63 us in all" in section
    assert "- library 3: `cupy_copy__float64_float64` (matches `cupy_copy`)" in section


def test_a_ceiling_that_cannot_be_profiled_is_one_line_of_the_report(nvcc: Path, tmp_path: Path) -> None:
    section = _explain(_fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission '
                                           'to access NVIDIA GPU Performance Counters on the target device 0."'))
    line = next(ln for ln in section.splitlines() if ln.startswith("Not profiled: "))
    assert line.startswith("Not profiled: reduce_sum_f64[canonical] ceiling: ncu profiled nothing: ERR_NVGPUCTRPERM")
    assert "root" in line


def test_the_launcher_without_a_gpu_says_so_in_one_line() -> None:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present: the launcher would launch")
    cmd = cp.ncu_command(Path("ncu"), case_id="reduce_sum_f64")
    proc = subprocess.run(cmd[cmd.index("-m") - 1:], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and proc.stderr.startswith("wfbench: error: "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
