"""``wfbench explain``: the Markdown report from real PTX (prebuilt WarpForth, CUDA through nvcc), bundles,
results that keep the diagnostics, and bad input as one line."""

from __future__ import annotations

import shlex
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from wfbench_core.compiling import diagnostics as dg
from wfbench_core.cli import main
from wfbench_core.record.results import load_result
from testkit import STORED_PTX  # tests/testkit.py

FIXTURES = Path(__file__).parent / "fixtures"

pytestmark = pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_error_line(result) -> str:  # type: ignore[no-untyped-def]
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("wfbench: error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr
    return lines[0]


def test_report_from_prebuilt_ptx(nvcc: Path) -> None:
    r = invoke("explain", "transpose_f64", "--wf-ptx", str(STORED_PTX / "transpose_f64.canonical.ptx"), "-q")
    assert r.exit_code == 0, r.stderr
    md = r.stdout
    assert md.startswith("### transpose_f64 v")
    for heading in ("#### Findings", "#### Static diagnostics", "#### SASS mix: largest differences",
                    "#### Memory instructions in program order", "#### Hottest loop in SASS"):
        assert heading in md
    assert "| `ld.64` | 4 | 0 |" in md and "| `ldg.64` | 0 | 4 |" in md
    assert "`LD.E.64 STS.64 LD.E.64 STS.64" in md and "`LDG.E.64.CONSTANT LDG.E.64.CONSTANT" in md
    assert "Nsight Compute" not in md


def test_loop_is_shown_and_report_written_to_a_file(nvcc: Path, tmp_path: Path) -> None:
    out = tmp_path / "why.md"
    r = invoke("explain", "matmul_f64_naive", "--wf-ptx", str(STORED_PTX / "matmul_f64_naive.canonical.ptx"),
               "--out", str(out), "--loop-lines", "5", "-q")
    assert r.exit_code == 0 and r.stdout == ""
    md = out.read_text()
    assert "**WarpForth**: innermost loop at 0x" in md and "(first 5 shown)" in md
    block = md.split("**WarpForth**: innermost loop", 1)[1].split("```")[1]
    assert len([ln for ln in block.splitlines() if ln.startswith("/*")]) == 5


def test_result_is_read_only_and_save_result_keeps_the_diagnostics(nvcc: Path, prebuilt_bundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle = prebuilt_bundle(("reduce_sum_f64",))
    result = tmp_path / "run.json"
    shutil.copy(FIXTURES / "h200-suite1.json", result)
    before, before_bytes = load_result(result), result.read_bytes()
    assert before.case("reduce_sum_f64").diag_wf is None  # results written before diagnostics still load
    r = invoke("explain", "reduce_sum_f64", "--bundle", str(bundle), "--result", str(result))
    assert r.exit_code == 0, r.stderr
    assert "Timed: WarpForth" in r.stdout and "roofline (WarpForth/CUDA) copy" in r.stdout
    assert result.read_bytes() == before_bytes  # a read-only command never changes a stored result
    saved = tmp_path / "run+diag.json"
    r = invoke("explain", "reduce_sum_f64", "--bundle", str(bundle), "--result", str(result), "--save-result",
               str(saved))
    assert r.exit_code == 0, r.stderr
    assert result.read_bytes() == before_bytes
    after = load_result(saved)
    case = after.case("reduce_sum_f64")
    assert case.diag_wf is not None and case.diag_cuda is not None and case.diag_wf.arch == "sm_90"
    assert case.diag_wf.kernel == "reduce_sum_f64" and case.diag_cuda.registers > 0
    assert [c.id for c in after.cases] == [c.id for c in before.cases]
    assert after.case("axpy_f64") == before.case("axpy_f64")
    # never over an existing file, the result itself included
    r = invoke("explain", "reduce_sum_f64", "--bundle", str(bundle), "--result", str(result), "--save-result",
               str(result))
    assert r.exit_code == 2 and "exists; --save-result writes a new file" in one_error_line(r)
    assert result.read_bytes() == before_bytes


def test_save_result_warns_when_the_ptx_explained_is_not_the_ptx_timed(nvcc: Path, tmp_path: Path) -> None:
    result = tmp_path / "run.json"
    shutil.copy(FIXTURES / "h200-suite1.json", result)
    other = (STORED_PTX / "reduce_sum_f64.canonical.ptx").read_text() + "\n// another build\n"
    (tmp_path / "other.ptx").write_text(other)
    r = invoke("explain", "reduce_sum_f64", "--wf-ptx", str(tmp_path / "other.ptx"), "--result", str(result),
               "--save-result", str(tmp_path / "saved.json"), "-q")
    assert r.exit_code == 0, r.stderr
    assert f"wfbench: warning: {result}: reduce_sum_f64 was timed with other WarpForth PTX" in r.stderr


def test_profile_with_a_stand_in_ncu(nvcc: Path, tmp_path: Path) -> None:
    csv_file = FIXTURES / "ncu" / "transpose_f64.wf.raw.csv"
    ncu = tmp_path / "ncu"
    ncu.write_text(f'#!/bin/sh\ncase "$1" in --version) echo "Version 2025.3.1.0";; *) cat {shlex.quote(str(csv_file))};; esac\n')
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    r = invoke("explain", "transpose_f64", "--wf-ptx", str(STORED_PTX / "transpose_f64.canonical.ptx"),
               "--arch", "sm_90", "--profile", "--ncu", str(ncu), "-q")
    assert r.exit_code == 0, r.stderr
    assert "#### Nsight Compute (one launch at the canonical size)" in r.stdout
    assert "| duration (us) | 101.63 | 101.63 |" in r.stdout
    assert "WarpForth warps mostly wait on long_scoreboard" in r.stdout


@pytest.mark.parametrize("args, expect", [
    (("explain", "no_such_case", "--wf-ptx", str(STORED_PTX / "axpy_f64.canonical.ptx")),
     "unknown case 'no_such_case'"),
    (("explain", "axpy_f64", "--wf-ptx", str(STORED_PTX / "axpy_f64.canonical.ptx"), "--bundle", str(FIXTURES)),
     "give the WarpForth PTX one way"),
    (("explain", "axpy_f64", "--bundle", str(FIXTURES)), "not a wfbench bundle"),
    (("explain", "axpy_f64", "--wf-ptx", str(STORED_PTX / "scale_i64.canonical.ptx")),
     "scale_i64.canonical.ptx: no kernel 'axpy_f64' in the PTX (its entries: scale_i64)"),
    (("explain", "axpy_f64", "--wf-ptx", str(STORED_PTX / "axpy_f64.canonical.ptx"), "--arch", "sm_42"), "sm_42"),
])
def test_bad_input_is_one_line(args: tuple[str, ...], expect: str, nvcc: Path) -> None:
    r = invoke(*args)
    assert r.exit_code != 0
    assert expect in one_error_line(r)


def test_result_without_the_case_is_refused_and_left_alone(nvcc: Path, tmp_path: Path) -> None:
    result = tmp_path / "run.json"
    shutil.copy(FIXTURES / "h200-aa.json", result)
    before = result.read_bytes()
    ids = [c.id for c in load_result(result).cases]
    missing = next(c for c in ("transpose_f64", "polynomial_f64", "matmul_f64_tiled") if c not in ids)
    r = invoke("explain", missing, "--wf-ptx", str(STORED_PTX / f"{missing}.canonical.ptx"), "--result", str(result))
    assert r.exit_code != 0 and "has no result for case" in one_error_line(r)
    assert result.read_bytes() == before


@pytest.mark.warpforthc
def test_base_head_bundle_with_one_compiler_is_identical_sass(warpforthc: Path, nvcc: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bh"
    r = invoke("build", "-c", "axpy_f64", "--warpforthc", f"base={warpforthc}", "--warpforthc",
               f"head={warpforthc}", "--no-check-cuda", "-o", str(bundle), "-q")
    assert r.exit_code == 0, r.stderr
    r = invoke("explain", "axpy_f64", "--bundle", str(bundle), "-q")
    assert r.exit_code == 0, r.stderr
    from wfbench_core.compiling.code_identity import IDENTICAL_NOTE

    assert f"base and head: {IDENTICAL_NOTE} (SASS SHA-256 `" in r.stdout
    assert "#### Head against base" not in r.stdout
    assert "| registers / thread |" in r.stdout and r.stdout.count("**WarpForth ") >= 2
