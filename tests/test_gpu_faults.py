"""Broken kernels on a real GPU (skipped without one): every fault class ends as its own classified line.

The bundle is made from the broken-kernel plugin's PTX kept in tests/fixtures/ptx-broken (made by the real
warpforthc), so no warpforthc is needed. Each case runs in its own ``wfbench execute`` process: a sticky
error kills the CUDA context of its process, and these tests check what the timer reports, not how the
executor recovers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wfbench_core.build.cudatools import find_tool
from wfbench_core.record.results import ERROR, FAILED, OK, UNSTABLE

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "broken-cases"
PREBUILT = Path(__file__).resolve().parent / "fixtures" / "ptx-broken"
MODULES = ("oob_store", "misaligned_store", "hang", "skip_tail", "no_write", "smem_race", "too_many_threads",
           "good_scale", "syntax")
QUICK = ["--samples", "5", "--warmup-s", "0.1", "--min-sample-ms", "5"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN), str(ROOT), env.get("PYTHONPATH", "")])
    env["WFBENCH_PLUGINS"] = ",".join(f"wfbench_broken_cases.{m}" for m in MODULES)
    return env


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(PLUGIN))
    try:
        from wfbench_core.discover.registry import Registry
        from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

        reg = Registry.load([f"wfbench_broken_cases.{m}" for m in MODULES if m != "syntax"], autoload=False)
        out = tmp_path_factory.mktemp("broken") / "bundle"
        bundle_from_ptx(list(r.value for r in reg.cases.values()), out, ptx_dir_loader(PREBUILT))
        return out
    finally:
        sys.path.remove(str(PLUGIN))


def _execute(bundle: Path, case_id: str, tmp_path: Path, *extra: str, timeout: float = 300) -> tuple[int, dict, str]:
    out = tmp_path / f"{case_id}.json"
    r = subprocess.run([sys.executable, "-m", "wfbench_core", "execute", str(bundle), "-c", case_id, "-o", str(out),
                        "-q", *QUICK, *extra], capture_output=True, text=True, env=_env(), timeout=timeout)
    assert "Traceback" not in r.stderr, r.stderr
    data = json.loads(out.read_text()) if out.exists() else {}
    (case,) = data.get("cases", [{}])
    return r.returncode, case, r.stderr


@pytest.mark.parametrize("case_id, status, message", [
    ("fault_oob_store", ERROR,
     "fault_oob_store[check] WarpForth: launch: illegal address (CUDA_ERROR_ILLEGAL_ADDRESS)"),
    ("fault_misaligned_store", ERROR,
     "fault_misaligned_store[check] WarpForth: launch: misaligned address (CUDA_ERROR_MISALIGNED_ADDRESS)"),
    ("fault_too_many_threads", ERROR,
     "fault_too_many_threads[check] WarpForth: launch: out of resources (CUDA_ERROR_INVALID_VALUE): "
     "2048 threads per block, the kernel allows 1024"),
    ("fault_skip_tail", FAILED,
     "fault_skip_tail[check] WarpForth: output Z differs from the numpy reference: 7 of 100003 elements never "
     "written (still hold the NaN poison)"),
    ("fault_no_write", FAILED,
     "fault_no_write[check] WarpForth: output Z differs from the numpy reference: 100003 of 100003 elements "
     "never written (still hold the NaN poison)"),
])
def test_each_fault_is_one_classified_line(bundle: Path, tmp_path: Path, case_id: str, status: str,
                                           message: str) -> None:
    rc, case, stderr = _execute(bundle, case_id, tmp_path)
    assert rc == 1, stderr
    assert case["status"] == status and case["message"].startswith(message), case["message"]
    assert "e+308" not in case["message"] and "\n" not in case["message"]
    assert "RuntimeWarning" not in stderr and "All-NaN" not in stderr


def test_good_case_is_timed_and_checked_per_side_after_timing(bundle: Path, tmp_path: Path) -> None:
    rc, case, stderr = _execute(bundle, "fault_good_scale", tmp_path)
    assert rc == 0, stderr
    assert case["status"] in (OK, UNSTABLE) and case["timing"]["gap"] > 0
    whats = {(c["config"], c["side"], c["what"]) for c in case["checks"]}
    assert {("canonical", "wf", "after-timing"), ("canonical", "cuda", "after-timing"),
            ("check", "wf", "idempotent"), ("check", "cuda", "idempotent")} <= whats
    assert all(c["passed"] for c in case["checks"])


def test_hang_ends_at_the_case_deadline(bundle: Path, tmp_path: Path) -> None:
    help_text = subprocess.run([sys.executable, "-m", "wfbench_core", "execute", "--help"], capture_output=True,
                               text=True, env=_env()).stdout
    if "--case-timeout" not in help_text:
        pytest.skip("this wfbench has no --case-timeout (the watchdog) yet")
    rc, case, stderr = _execute(bundle, "fault_hang", tmp_path, "--case-timeout", "10", timeout=120)
    assert rc == 1 and case["status"] == ERROR
    assert "fault_hang" in case["message"] and "did not finish within" in case["message"], case["message"]


def test_sanitizer_finds_the_bad_store_and_the_race(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wfbench_core.gpu import sanitize

    if find_tool("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer not installed")
    for key in ("PYTHONPATH", "WFBENCH_PLUGINS"):  # the sanitizer's child finds the plugin the same way
        monkeypatch.setenv(key, _env()[key])
    monkeypatch.syspath_prepend(str(PLUGIN))
    from wfbench_core.build.compile import compile_cuda, cuda_compiler
    from wfbench_core.discover.registry import Registry
    from wfbench_core.gpu.timer import gpu_unavailable_reason

    assert gpu_unavailable_reason() is None
    reg = Registry.load()
    oob, race, good = reg.case("fault_oob_store"), reg.case("fault_smem_race"), reg.case("fault_good_scale")
    ptx = {c.id: (PREBUILT / f"{c.id}.check.ptx").read_text() for c in (oob, race, good)}

    f = sanitize.sanitize_case(oob, "wf", ptx[oob.id], oob.wf_kernel)
    assert f is not None and f.tool == "memcheck" and "Invalid __global__ write" in f.line, f
    f = sanitize.sanitize_case(race, "wf", ptx[race.id], race.wf_kernel)
    assert f is not None and f.tool == "racecheck", f
    assert sanitize.sanitize_case(good, "wf", ptx[good.id], good.wf_kernel) is None
    from numba import cuda

    arch = "sm_" + "".join(str(x) for x in cuda.get_current_device().compute_capability)
    cuda_ptx = compile_cuda(race.render("check")[1], case_id=race.id, arch=arch, compiler=cuda_compiler()).ptx
    assert sanitize.sanitize_case(race, "cuda", cuda_ptx, race.cuda_kernel) is None  # the twin has its barrier
