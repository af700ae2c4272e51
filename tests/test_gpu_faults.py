"""Broken kernels on a real GPU (skipped without one): every case of the broken-kernel plugin ends as its own
classified line, in one run of the whole corpus.

The bundle is made from the plugin's PTX kept in tests/fixtures/ptx-broken (made by the real warpforthc), so
no warpforthc is needed. The whole corpus runs in ONE ``wfbench execute`` (the executor isolates each case in
a worker process, so a sticky error or a hang costs only its case), then the kernels only the sanitizer can
catch run again under ``--sanitize``. ``pytest -s`` prints one line per case and the wall time of each run;
with ``WFBENCH_CORPUS_OUT=DIR`` both result files are kept there.

The adversarial cases pass every check made on poisoned outputs in fresh buffers; what is meant to catch each:

- fault_nan_only (computes only where its output holds a NaN): timed, it only reads its output, 8 of the 24
  bytes per element: faster than the run's copy bandwidth allows (the plausibility gate).
- fault_accumulate (adds into its output): right from a poisoned output, wrong after a second launch into
  a written one: a check of an output that launches wrote without a re-poison in between.
- fault_launch_count (half the work from its 8th launch on the same buffers): too fast (the gate); wrong in the
  timed placement's buffers (the timed-buffer check).
- fault_alignment (off by one unless Y is 512-byte aligned, same work): wrong in about half of the timed
  placements (the timed-buffer check, which names the placement).
- fault_first_buffers (half the work unless X is 4 KiB aligned, at the timed size): too fast (the gate) and
  wrong in 15 of 16 placements (the timed-buffer check).
- fault_oob_read (reads X[N], writes the right answer): correct without the sanitizer; memcheck's invalid
  read under ``--sanitize``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wfbench_core.compiling.cudatools import find_tool
from wfbench_core.record.results import ERROR, FAILED, OK, UNSTABLE

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "broken-cases"
PREBUILT = Path(__file__).resolve().parent / "fixtures" / "ptx-broken"
MODULES = ("oob_store", "misaligned_store", "hang", "skip_tail", "no_write", "smem_race", "too_many_threads",
           "nan_only", "accumulate", "launch_count", "alignment", "first_buffers", "oob_read", "good_scale", "syntax")
# 30 placements, one pair each: a kernel that is wrong in half of them is wrong in one with odds 1 - 2**-30
PROTOCOL = ["--samples", "30", "--placements", "30", "--warmup-s", "0.1", "--min-sample-ms", "5"]
CORPUS = [*PROTOCOL, "--case-timeout", "10"]  # the hang ends after 10 s
SANITIZED = ("fault_oob_read",)  # the race and a good case under the sanitizer: the last test below
TIMED = (OK, UNSTABLE)


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


def _execute(bundle: Path, out: Path, *extra: str, timeout: float = 540) -> tuple[int, dict[str, dict], str]:
    """One ``wfbench execute`` of the bundle: exit code, ``{case id: case result}``, stderr; prints one line per case."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "wfbench_core", "execute", str(bundle), "-o", str(out), "-q", *extra],
                       capture_output=True, text=True, env=_env(), timeout=timeout)
    wall = time.perf_counter() - t0
    assert "Traceback" not in r.stderr, r.stderr
    cases = {c["id"]: c for c in json.loads(out.read_text())["cases"]} if out.exists() else {}
    for cid, c in cases.items():
        timing = c.get("timing") or {}
        what = c["message"] or f"gap {timing.get('gap', 0):.3f}x"
        print(f"{cid}: {c['status'].upper()}: {what}")
    print(f"{' '.join(extra)}: {len(cases)} cases, exit {r.returncode}, wall {wall:.1f} s")
    keep = os.environ.get("WFBENCH_CORPUS_OUT")
    if keep and out.exists():
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(keep) / out.name)
    return r.returncode, cases, r.stderr


@pytest.fixture(scope="module")
def corpus(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    rc, cases, stderr = _execute(bundle, tmp_path_factory.mktemp("corpus") / "corpus.json", *CORPUS)
    assert rc == 1, stderr  # failed cases: exit 1, never a crash (2) or a lost run
    assert set(cases) == {f"fault_{m}" for m in MODULES if m != "syntax"}, stderr
    return cases


# (status or statuses, message pattern) of each case in the corpus run
EXPECTED: dict[str, tuple[tuple[str, ...], str]] = {
    "fault_oob_store": ((ERROR,), r"^fault_oob_store\[check\] WarpForth: launch: illegal address "
                                  r"\(CUDA_ERROR_ILLEGAL_ADDRESS\)"),
    "fault_misaligned_store": ((ERROR,), r"^fault_misaligned_store\[check\] WarpForth: launch: misaligned address "
                                        r"\(CUDA_ERROR_MISALIGNED_ADDRESS\)"),
    "fault_too_many_threads": ((ERROR,), r"^fault_too_many_threads\[check\] WarpForth: launch: out of resources "
                                        r"\(CUDA_ERROR_INVALID_VALUE\): 2048 threads per block, the kernel allows 1024"),
    "fault_hang": ((ERROR,), r"fault_hang.*did not finish within"),
    "fault_skip_tail": ((FAILED,), r"^fault_skip_tail\[check\] WarpForth: output Z differs from the numpy "
                                   r"reference: 7 of 100003 elements never written \(still hold the NaN poison\)"),
    "fault_no_write": ((FAILED,), r"^fault_no_write\[check\] WarpForth: output Z differs from the numpy reference: "
                                  r"100003 of 100003 elements never written \(still hold the NaN poison\)"),
    "fault_smem_race": ((OK, UNSTABLE, FAILED), r""),  # right or wrong by chance without the sanitizer
    "fault_good_scale": (TIMED, r"^$"),
    "fault_oob_read": (TIMED, r"^$"),  # it writes the right answer: only the sanitizer sees the read
    # the adversarial cases: anything but a timed status, for the reason that can catch them
    "fault_nan_only": ((), r"over 1\.25x this run's copy bandwidth.*faster than this GPU can run it"),
    "fault_accumulate": ((), r"fault_accumulate\[canonical\]"),
    "fault_launch_count": ((), r"(?i)implausib|placement"),
    "fault_alignment": ((FAILED,), r"(?i)placement"),
    "fault_first_buffers": ((), r"(?i)implausib|placement"),
}


@pytest.mark.parametrize("case_id", sorted(EXPECTED))
def test_each_case_of_the_corpus_is_one_classified_line(corpus: dict[str, dict], case_id: str) -> None:
    statuses, pattern = EXPECTED[case_id]
    case = corpus[case_id]
    if statuses:
        assert case["status"] in statuses, case
    else:
        assert case["status"] not in TIMED, f"{case_id} was not caught: {case['status']} {case['message']}"
    assert re.search(pattern, case["message"]), case["message"]
    assert "\n" not in case["message"] and "e+308" not in case["message"]
    if case["status"] not in TIMED:  # a case that was not timed cannot have been stored as a figure
        assert case["status"] != OK


def test_good_case_is_timed_and_checked_per_side_after_timing(corpus: dict[str, dict]) -> None:
    case = corpus["fault_good_scale"]
    assert case["timing"]["gap"] > 0 and case["timing"]["placements"] > 1
    whats = {(c["config"], c["side"], c["what"]) for c in case["checks"]}
    assert {("canonical", "wf", "after-timing"), ("canonical", "cuda", "after-timing"),
            ("check", "wf", "idempotent"), ("check", "cuda", "idempotent")} <= whats
    assert all(c["passed"] for c in case["checks"])


def test_the_sanitizer_catches_the_out_of_bounds_read(bundle: Path, tmp_path: Path) -> None:
    from wfbench_core.compiling.cudatools import find_tool

    if find_tool("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer not installed")
    rc, cases, stderr = _execute(bundle, tmp_path / "sanitized.json", "--sanitize",
                                 *[a for cid in SANITIZED for a in ("-c", cid)], *PROTOCOL)
    assert rc == 1, stderr
    assert cases["fault_oob_read"]["status"] == FAILED
    assert re.match(r"fault_oob_read\[check\] WarpForth: compute-sanitizer memcheck: Invalid __global__ read of "
                    r"size \d+ bytes", cases["fault_oob_read"]["message"]), cases["fault_oob_read"]["message"]


def test_sanitizer_finds_the_bad_store_and_the_race(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wfbench_core.gpu import sanitize

    if find_tool("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer not installed")
    for key in ("PYTHONPATH", "WFBENCH_PLUGINS"):  # the sanitizer's child finds the plugin the same way
        monkeypatch.setenv(key, _env()[key])
    monkeypatch.syspath_prepend(str(PLUGIN))
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler
    from wfbench_core.discover.registry import Registry
    from wfbench_core.gpu.device import gpu_unavailable_reason

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
