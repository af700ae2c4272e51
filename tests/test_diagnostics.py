"""Static diagnostics with the real ptxas and cuobjdump on the real WarpForth PTX kept in tests/fixtures/ptx.

Skipped only when ptxas, cuobjdump or nvdisasm are truly absent (CI installs them with the dev extra:
nvidia-cuda-nvcc, nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wfbench_core.compiling import diagnostics as dg
from wfbench_core.compiling.code_identity import IDENTICAL_NOTE, identical, sass_note
from wfbench_core.discover.registry import Registry
from wfbench_core.record.results import SideDiagnostics, converter
from testkit import STORED_PTX  # tests/testkit.py

FIXTURES = Path(__file__).parent / "fixtures"
ARCH = "sm_90"

needs_tools = pytest.mark.skipif(dg.tools_available() is not None,
                                 reason=f"CUDA binary tools missing: {dg.tools_available()}")


def _case(cid: str):  # type: ignore[no-untyped-def]
    return Registry.load().case(cid)


def _launch(case):  # type: ignore[no-untyped-def]
    launch = case.launch(case.sizes["canonical"])
    return launch.block[0] * launch.block[1] * launch.block[2], launch.shared_bytes


def _wf(cid: str) -> SideDiagnostics:
    case = _case(cid)
    threads, dyn = _launch(case)
    return dg.diagnose((STORED_PTX / f"{cid}.canonical.ptx").read_text(), case.wf_kernel, ARCH, threads, dyn)


def _cuda(cid: str) -> SideDiagnostics:
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler

    case = _case(cid)
    threads, dyn = _launch(case)
    ptx = compile_cuda(case.render("canonical")[1], case_id=cid, arch=ARCH, compiler=cuda_compiler("nvcc")).ptx
    return dg.diagnose(ptx, case.cuda_kernel, ARCH, threads, dyn)


PREBUILT = sorted({p.name.split(".")[0] for p in STORED_PTX.glob("*.canonical.ptx")})


# -- occupancy rules (no tools needed) ------------------------------------------------------------


def test_occupancy_matches_what_ncu_reported_for_transpose_on_an_h200() -> None:
    # ncu 2025.3.1 on an H200, transpose_f64 WarpForth side: 28 registers (32 allocated), 8448 B static
    # shared memory, 256 threads: block limits registers 8, warps 8 -> 64 of 64 warps (100 %).
    text = (FIXTURES / "ncu" / "transpose_f64.wf.raw.csv").read_text()
    from wfbench_core.gpu.profile import parse_raw_csv

    row = parse_raw_csv(text)[0]
    regs = int(row["launch__registers_per_thread"][1])
    smem = int(row["launch__shared_mem_per_block_static"][1].replace(",", ""))
    occ = dg.theoretical_occupancy(ARCH, block_threads=256, registers=regs, shared_bytes=smem)
    assert occ.blocks == int(row["launch__occupancy_limit_registers"][1]) == int(row["launch__occupancy_limit_warps"][1])
    assert occ.fraction * 100 == float(row["sm__maximum_warps_per_active_cycle_pct"][1])


@pytest.mark.parametrize("threads, regs, smem, blocks, limiter", [
    (256, 64, 0, 4, "registers"),  # 64 regs x 32 lanes = 2048 per warp: 32 warps of 64
    (256, 32, 48 * 1024, 4, "shared"),  # (48 KiB + 1 KiB reserved) per block into 228 KiB
    (32, 16, 0, 32, "blocks"),  # one warp per block: the 32-block limit binds
    (1024, 16, 0, 2, "warps"),
])
def test_occupancy_limiters(threads: int, regs: int, smem: int, blocks: int, limiter: str) -> None:
    occ = dg.theoretical_occupancy(ARCH, block_threads=threads, registers=regs, shared_bytes=smem)
    assert (occ.blocks, occ.limiter) == (blocks, limiter)
    assert occ.fraction == pytest.approx(blocks * -(-threads // 32) / 64)


def test_occupancy_differs_by_architecture_and_refuses_unknown_ones() -> None:
    assert dg.theoretical_occupancy("sm_75", block_threads=1024, registers=16, shared_bytes=0).fraction == 1.0
    assert dg.theoretical_occupancy("sm_86", block_threads=1024, registers=16, shared_bytes=0).fraction \
        == pytest.approx(32 / 48)
    assert dg.arch_limits("sm_90a") == dg.arch_limits("sm_90")
    with pytest.raises(dg.WfbenchError, match="no occupancy limits known for sm_42"):
        dg.arch_limits("sm_42")


def test_parse_ptxas_picks_the_named_entry_of_several() -> None:
    report = (
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
        "ptxas info    : Function properties for other\n"
        "    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 0 barriers, 8 bytes lmem\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "    16 bytes stack frame, 24 bytes spill stores, 32 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 384 bytes cmem[0], 8 bytes cmem[2]\n"
    )
    r = dg.parse_ptxas(report, "k")
    assert (r.registers, r.stack_frame, r.spill_stores, r.spill_loads) == (40, 16, 24, 32)
    assert (r.shared_bytes, r.constant_bytes, r.barriers) == (2048, 392, 1)
    with pytest.raises(dg.DiagnosticsError, match="no entry function 'missing'"):
        dg.parse_ptxas(report, "missing")


def test_classify_partitions_and_tags() -> None:
    lines = """
        Function : k
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P2 LDG.E.64.CONSTANT R6, desc[UR4][R6.64] ;
        /*0020*/                   LD.E.64 R4, desc[UR6][R4.64] ;
        /*0030*/                   STG.E.128 desc[UR4][R2.64], R8 ;
        /*0040*/                   IMAD.WIDE.U32 R2, R3, 0x8, R4 ;
        /*0050*/                   LEA.HI.X R3, R2, R5, R6, 0x3, P0 ;
        /*0060*/                   DFMA R2, R4, R6, R2 ;
        /*0070*/                   BRA 0x20 ;
        /*0080*/                   EXIT ;
        /*0090*/                   BRA 0x90;
        /*00a0*/                   NOP;
    """
    instrs = dg.parse_sass(lines, "k")
    code = dg.code_of(instrs)
    assert [i.opcode for i in code][-1] == "EXIT"  # padding (self-branch, NOP) dropped
    mix = dg.mix_of(code)
    assert mix["ldg.64"] == 1 and mix["ldg.nc"] == 1 and mix["ld.64"] == 1 and mix["stg.128"] == 1
    assert mix["imad.wide"] == 1 and mix["dfma"] == 1 and mix["addr64"] == 2 and mix["predicated"] == 1
    assert sum(v for k, v in mix.items() if k not in dg.TAGS) == len(code)
    loop = dg.hottest_loop(instrs)
    assert loop is not None and (loop.start, loop.end) == (0x20, 0x70)


# -- the real tools on the real PTX ---------------------------------------------------------------


@needs_tools
@pytest.mark.parametrize("cid", PREBUILT)
def test_every_prebuilt_warpforth_kernel(cid: str) -> None:
    d = _wf(cid)
    assert d.registers > 0 and 0 < d.occupancy <= 1 and d.total > 0
    assert re.fullmatch(r"[0-9a-f]{64}", d.sass_sha256)
    partition = sum(v for k, v in d.mix.items() if k not in dg.TAGS)
    assert partition == d.total, d.mix
    assert converter().structure(converter().unstructure(d), SideDiagnostics) == d


@needs_tools
def test_ptxas_facts_agree_with_the_ptxas_report(nvcc: Path) -> None:
    from wfbench_core.compiling.compile import ptxas_check

    case = _case("reduce_sum_f64")
    ptx = (STORED_PTX / "reduce_sum_f64.canonical.ptx").read_text()
    report = ptxas_check(ptx, arch=ARCH, case_id="reduce_sum_f64")
    regs = int(re.search(r"Used (\d+) registers", report).group(1))  # type: ignore[union-attr]
    smem = int(re.search(r"(\d+) bytes smem", report).group(1))  # type: ignore[union-attr]
    d = _wf("reduce_sum_f64")
    assert (d.registers, d.shared_static, d.kernel) == (regs, smem, case.wf_kernel)


@needs_tools
def test_transpose_sides_differ_in_address_space_and_load_order(nvcc: Path) -> None:
    wf, cu = _wf("transpose_f64"), _cuda("transpose_f64")
    # WarpForth addresses global memory through generic pointers; CUDA's loads go through LDG (read-only path)
    assert (wf.mix.get("ld.64"), wf.mix.get("st.64"), wf.mix.get("ldg.64", 0)) == (4, 4, 0)
    assert (cu.mix.get("ldg.64"), cu.mix.get("ldg.nc"), cu.mix.get("stg.64"), cu.mix.get("ld.64", 0)) == (4, 4, 4, 0)
    assert wf.mix["lds.64"] == cu.mix["lds.64"] == 4 and wf.mix["sts.64"] == cu.mix["sts.64"] == 4
    cell = dg.compact(wf, cu)
    assert cell.startswith(f"regs {wf.registers}/{cu.registers} occ 100/100%") and "ld.64 4/0" in cell
    assert not dg.identical(wf, cu)


@needs_tools
def test_load_order_shows_one_load_in_flight_against_four(nvcc: Path) -> None:
    case = _case("transpose_f64")
    wf = dg.assemble((STORED_PTX / "transpose_f64.canonical.ptx").read_text(), case.wf_kernel, ARCH)
    order = dg.memory_order(wf.sass)
    first = order[: order.index("BAR.SYNC.DEFER_BLOCKING")]
    assert first == ["LD.E.64", "STS.64"] * 4


@needs_tools
def test_identical_code_has_one_hash_whatever_the_kernel_is_called() -> None:
    case = _case("axpy_f64")
    threads, dyn = _launch(case)
    ptx = (STORED_PTX / "axpy_f64.canonical.ptx").read_text()
    renamed = ptx.replace(case.wf_kernel, "renamed_kernel")
    a = dg.diagnose(ptx, case.wf_kernel, ARCH, threads, dyn)
    b = dg.diagnose(renamed, "renamed_kernel", ARCH, threads, dyn)
    assert identical(a, b) and dg.compact(a, b).endswith("same code")
    assert sass_note(a, b) == IDENTICAL_NOTE
    other = _wf("scale_i64")
    assert not identical(a, other) and sass_note(a, other).startswith("code differs (SASS")
    assert sass_note(a, other).endswith("): see wfbench explain") and sass_note(a, None) == ""
    assert a.resources["REG"] == a.registers and a.max_threads == 0  # no launch bounds in WarpForth's PTX


@needs_tools
def test_a_loop_is_found_where_the_kernel_loops() -> None:
    d = _wf("matmul_f64_naive")
    assert d.loop_instructions > 0 and d.loop_mix.get("ld.64") == 2  # A[i,k] and B[k,j] per iteration
    assert d.loop_mix.get("dmul") == 1 and d.loop_mix.get("dadd") == 1


@needs_tools
def test_invalid_ptx_is_one_line_naming_the_side() -> None:
    with pytest.raises(dg.DiagnosticsError, match=r"^mycase \(WarpForth\) \(sm_90\): ptxas failed: "):
        dg.diagnose(".version 8.0\n.target sm_90\n.address_size 64\nbroken\n", "k", ARCH, 256, 0,
                    what="mycase (WarpForth)")


def test_missing_tool_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from wfbench_core.compiling import cudatools

    monkeypatch.setattr(cudatools, "candidates", lambda name: [tmp_path / name])
    monkeypatch.delenv("WFBENCH_CUOBJDUMP", raising=False)
    assert cudatools.find_tool("cuobjdump") is None
    with pytest.raises(dg.WfbenchError, match=r"cuobjdump not found .*nvidia-cuda-cuobjdump"):
        cudatools.require_tool("cuobjdump", why="static diagnostics read the SASS")
    # both binary tools missing: one message naming both (not one, then after installing it, the other)
    monkeypatch.delenv("NVDISASM_PATH", raising=False)
    with pytest.raises(dg.WfbenchError) as err:
        dg.assemble(".version 8.0\n", "k", "sm_90")
    message = str(err.value)
    assert "\n" not in message and message.startswith("ptxas, cuobjdump, nvdisasm not found")
    assert "pip install 'wfbench[gpu]'" in message and "'nvidia-cuda-nvdisasm>=13,<14'" in message
    monkeypatch.setenv("WFBENCH_PTXAS", str(tmp_path / "nope"))
    with pytest.raises(dg.WfbenchError, match="WFBENCH_PTXAS"):
        cudatools.find_tool("ptxas")


def test_the_gpu_extra_brings_every_binary_tool_the_diagnostics_run() -> None:
    from pyproject_data import load

    from wfbench_core.compiling import cudatools

    gpu = load(Path(__file__).parent.parent / "pyproject.toml")["project"][
        "optional-dependencies"]["gpu"]
    for tool in ("cuobjdump", "nvdisasm"):
        assert cudatools.WHEEL[tool] in gpu, tool


@needs_tools
def test_diagnose_case_for_the_executor(nvcc: Path) -> None:
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler

    case = _case("scale_i64")
    cuda_ptx = compile_cuda(case.render("canonical")[1], case_id="scale_i64", arch=ARCH,
                            compiler=cuda_compiler("nvcc")).ptx
    wf_ptx = (STORED_PTX / "scale_i64.canonical.ptx").read_text()
    wf, cu, note = dg.diagnose_case(case, wf_ptx=wf_ptx, cuda_ptx=cuda_ptx, arch=ARCH)
    assert note == "" and wf is not None and cu is not None
    assert (wf.kernel, cu.kernel, wf.block_threads) == (case.wf_kernel, case.cuda_kernel, 256)
    # a broken side never raises: the case goes on without diagnostics, and the note says why
    wf, cu, note = dg.diagnose_case(case, wf_ptx="not ptx", cuda_ptx=cuda_ptx, arch=ARCH)
    assert (wf, cu) == (None, None) and note.startswith("static diagnostics skipped: scale_i64[canonical] WarpForth")


def test_diagnose_case_without_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dg, "tools_available", lambda: "not found: cuobjdump")
    assert dg.diagnose_case(_case("scale_i64"), wf_ptx="", cuda_ptx="", arch=ARCH) == \
        (None, None, "static diagnostics skipped (not found: cuobjdump)")


def test_every_cuda_tool_is_found_in_one_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """nvcc, ptxas, cuobjdump, nvdisasm, ncu and compute-sanitizer: variable, PATH, then the toolkit folders,
    and each place of that order wins over the later ones, for every tool (real files, no stand-ins)."""
    from wfbench_core.compiling import compile as comp
    from wfbench_core.compiling import cudatools

    def tool(folder: Path, name: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
        return folder / name

    for name in cudatools.ENV:
        monkeypatch.delenv(cudatools.ENV[name], raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    for name in cudatools.ENV:
        in_home = tool(tmp_path / "home" / "bin", name)
        assert cudatools.find_tool(name) == in_home, name
        on_path = tool(tmp_path / "path", name)
        assert cudatools.find_tool(name) == on_path, name
        named = tool(tmp_path / "named", name)
        monkeypatch.setenv(cudatools.ENV[name], str(named))
        assert cudatools.find_tool(name) == named, name
    assert comp.find_nvcc() == tmp_path / "named" / "nvcc"  # the compiler asks the same lookup
