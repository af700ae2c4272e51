"""Compiling both sides: finding warpforthc, the recorded command lines, real nvcc/ptxas/NVRTC."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from wfbench_cases.axpy_f64 import CASE as AXPY
from wfbench_core.compiling.compile import (
    NVCC_FLAGS,
    CompileError,
    compile_cuda,
    compile_warpforth,
    cuda_compiler,
    find_warpforthc,
    ptx_target,
    ptxas_check,
    warpforthc_info,
)
from wfbench_core.errors import WfbenchError


def test_missing_warpforthc_says_how_to_point_at_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WFBENCH_WARPFORTHC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(WfbenchError) as exc:
        find_warpforthc()
    msg = str(exc.value)
    assert "warpforthc not found" in msg and "WFBENCH_WARPFORTHC" in msg and "--warpforthc" in msg
    assert "\n" not in msg


def test_warpforthc_lookup_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def exe(name: str) -> Path:
        p = tmp_path / name / "warpforthc"
        p.parent.mkdir()
        p.write_text("#!/bin/sh\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
        return p

    on_path, from_env, from_flag = exe("path"), exe("env"), exe("flag")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.delenv("WFBENCH_WARPFORTHC", raising=False)
    assert find_warpforthc() == on_path.resolve()
    monkeypatch.setenv("WFBENCH_WARPFORTHC", str(from_env))
    assert find_warpforthc() == from_env.resolve()
    assert find_warpforthc(from_flag) == from_flag.resolve()
    monkeypatch.setenv("WFBENCH_WARPFORTHC", str(tmp_path / "nope"))
    with pytest.raises(WfbenchError, match="given by WFBENCH_WARPFORTHC is not an executable file"):
        find_warpforthc()


def test_ptx_target() -> None:
    assert ptx_target(".version 6.0\n.target sm_70\n.address_size 64\n") == "sm_70"
    assert ptx_target(".target sm_90a, debug\n") == "sm_90a"
    assert ptx_target("") == ""


def test_canonical_cuda_flags_forbid_fma_contraction() -> None:
    assert "-fmad=false" in NVCC_FLAGS and "-O3" in NVCC_FLAGS


def test_nvcc_compiles_axpy_without_fma_and_records_the_command(nvcc: Path) -> None:
    compiler = cuda_compiler("nvcc")
    assert compiler.kind == "nvcc" and re.match(r"\d+\.\d+", compiler.version)
    out = compile_cuda(AXPY.render("check")[1], case_id="axpy_f64", arch="sm_90", compiler=compiler)
    assert out.record.command[:4] == ("nvcc", "-O3", "-fmad=false", "-std=c++17")
    assert "-arch=sm_90" in out.record.command and "-ptx" in out.record.command
    assert out.record.ptx_target == "sm_90"
    assert "fma.rn.f64" not in out.ptx
    assert "mul.rn.f64" in out.ptx and "add.rn.f64" in out.ptx
    ptxas_check(out.ptx, arch="sm_90", case_id="axpy_f64")


def test_default_nvcc_would_fuse_which_is_why_the_flag_is_fixed(nvcc: Path) -> None:
    from wfbench_core.record.results import CompilerInfo

    fused = CompilerInfo(kind="nvcc", version="x", flags=("-O3",))
    out = compile_cuda(AXPY.render("check")[1], case_id="axpy_f64", arch="sm_90", compiler=fused)
    assert "fma.rn.f64" in out.ptx


def test_nvcc_error_names_the_case_and_carries_the_diagnostic(nvcc: Path) -> None:
    bad = 'extern "C" __global__ void k(double* x) { x[0] = undefined_name; }\n'
    with pytest.raises(CompileError) as exc:
        compile_cuda(bad, case_id="broken_case", arch="sm_90", compiler=cuda_compiler("nvcc"))
    msg = str(exc.value)
    assert msg.startswith("broken_case: nvcc failed:") and "undefined_name" in msg and "\n" not in msg


def test_prefetched_cuda_compiles_run_in_parallel_and_are_taken_once(nvcc: Path, monkeypatch: pytest.MonkeyPatch
                                                                        ) -> None:
    import threading

    from wfbench_core.compiling import compile as comp
    from wfbench_core.record.results import CompilerInfo

    compiler = cuda_compiler("nvcc")
    ok = AXPY.render("canonical")[1]
    bad = 'extern "C" __global__ void k(double* x) { x[0] = undefined_name; }\n'
    running, peak, lock = [0], [0], threading.Lock()
    real = comp._compile_nvcc

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(comp, "_compile_nvcc", counted)
    started = comp.prefetch_cuda([("pf_a[canonical]", ok), ("pf_b[canonical]", ok), ("pf_bad[check]", bad)],
                                 arch="sm_90", compiler=compiler)
    assert started == 3
    first = compile_cuda(ok, case_id="pf_a[canonical]", arch="sm_90", compiler=compiler)
    with pytest.raises(CompileError, match=r"^pf_bad\[check\]: nvcc failed:.*undefined_name"):
        compile_cuda(bad, case_id="pf_bad[check]", arch="sm_90", compiler=compiler)
    compile_cuda(ok, case_id="pf_b[canonical]", arch="sm_90", compiler=compiler)
    assert peak[0] >= 2  # the three ran side by side, not one after another
    assert "pf_a[canonical].cu" in first.record.command and "fma.rn.f64" not in first.ptx

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("nvcc ran again")

    monkeypatch.setattr(comp, "_compile_nvcc", refuse)
    assert comp.prefetch_cuda([], arch="sm_90", compiler=compiler) == 0
    with pytest.raises(AssertionError, match="ran again"):  # taken once: a second ask compiles anew
        compile_cuda(ok, case_id="pf_a[canonical]", arch="sm_90", compiler=compiler)
    nvrtc = CompilerInfo(kind="nvrtc", version="x")
    assert comp.prefetch_cuda([("pf_c", ok)], arch="sm_90", compiler=nvrtc) == 0  # NVRTC stays on demand


def test_ptxas_rejects_invalid_ptx(nvcc: Path) -> None:
    with pytest.raises(CompileError, match="broken: ptxas rejected the PTX"):
        ptxas_check(".version 8.0\n.target sm_90\n.address_size 64\nnot ptx at all\n", arch="sm_90", case_id="broken")


def test_nvrtc_compiles_without_fma() -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    compiler = cuda_compiler("nvrtc")
    if compiler.kind != "nvrtc":
        pytest.skip("NVRTC library not available")
    assert "-fmad=false" in compiler.flags
    out = compile_cuda(AXPY.render("check")[1], case_id="axpy_f64", arch="sm_90", compiler=compiler)
    assert out.record.compiler == "nvrtc" and "--gpu-architecture=compute_90" in out.record.command
    assert "fma.rn.f64" not in out.ptx and "mul.rn.f64" in out.ptx
    with pytest.raises(CompileError, match=r"^bad: NVRTC failed: .*undefined_name"):
        compile_cuda('extern "C" __global__ void k() { undefined_name; }', case_id="bad", arch="sm_90",
                     compiler=compiler)


# -- the real warpforthc (skipped where it is not installed) ----------------------------------------


def test_warpforthc_compiles_axpy_to_unfused_f64(warpforthc: Path) -> None:
    info = warpforthc_info(warpforthc)
    assert info.kind == "warpforthc" and len(info.binary_sha256) == 64 and info.version
    out = compile_warpforth(AXPY.render("check")[0], binary=warpforthc, case_id="axpy_f64")
    assert ".entry axpy_f64" in out.ptx
    assert "mul.rn.f64" in out.ptx and "add.rn.f64" in out.ptx and "fma.rn" not in out.ptx
    assert out.record.ptx_target.startswith("sm_")
    assert out.record.command[0] == "warpforthc" and os.sep not in " ".join(out.record.command)
    if _has_ptxas():
        ptxas_check(out.ptx, arch="sm_90", case_id="axpy_f64")


def test_arch_flag_used_only_when_supported(warpforthc: Path) -> None:
    info = warpforthc_info(warpforthc)
    out = compile_warpforth(AXPY.render("check")[0], binary=warpforthc, case_id="axpy_f64", arch="sm_90")
    if info.arch_flag:
        assert "--arch" in out.record.command and out.record.ptx_target == "sm_90"
    else:
        assert "--arch" not in out.record.command  # the target it emitted is recorded instead
        assert out.record.ptx_target


def test_forth_compile_error_names_case_and_diagnostic(warpforthc: Path) -> None:
    src = "\\! kernel k\n\\! param X i64[4]\nGLOBAL-ID NO-SUCH-WORD X !\n"
    with pytest.raises(CompileError) as exc:
        compile_warpforth(src, binary=warpforthc, case_id="broken_forth")
    msg = str(exc.value)
    assert msg.startswith("broken_forth: warpforthc failed:") and "NO-SUCH-WORD" in msg.upper()
    assert "/tmp" not in msg and "\n" not in msg


def _has_ptxas() -> bool:
    from wfbench_core.compiling.compile import find_nvcc

    return find_nvcc() is not None
