"""Identical code is SAME by rule, and identical means the SASS *and* the resources (real ptxas and cuobjdump
on real PTX); runs on a depressed host, and throttled points the throttle rule takes out, stay out of trends."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
from synth_runs import synth_run, with_case

from wfbench_core.compiling import diagnostics as dg
from wfbench_core.compiling.code_identity import IDENTICAL_NOTE, code_identity, differences, identical, sass_note
from wfbench_core.record.results import SideDiagnostics
from wfbench_core.review import alerts, compare, compare_table, verdicts
from wfbench_core.review.history import History, add_run
from wfbench_core.review.series import point_of

needs_tools = pytest.mark.skipif(dg.tools_available() is not None,
                                 reason=f"CUDA binary tools missing: {dg.tools_available()}")


def sass(digest: str, **resources: object) -> SideDiagnostics:
    return SideDiagnostics(arch="sm_90", kernel="axpy_f64", sass_sha256=digest * 64, **resources)  # type: ignore[arg-type]


def test_compare_calls_identical_code_same_whatever_the_timing() -> None:
    base = with_case(synth_run(0, jitter=0.002, placements=15), "axpy_f64", diag_wf=sass("a"))
    worse = with_case(synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002, placements=15), "axpy_f64",
                      diag_wf=sass("a"))
    cmp = compare.compare_runs(base, worse)
    (axpy,) = [c for c in cmp.cases if c.case_id == "axpy_f64"]
    assert axpy.verdict.label == "SAME (identical code, moved)" and cmp.regressions == []
    assert axpy.sass == IDENTICAL_NOTE and f"axpy_f64: {IDENTICAL_NOTE}" in compare_table.render_text(cmp)

    other = with_case(synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002, placements=15), "axpy_f64",
                      diag_wf=sass("b"))
    (axpy,) = [c for c in compare.compare_runs(base, other).cases if c.case_id == "axpy_f64"]
    assert axpy.verdict.verdict == verdicts.SLOWER
    assert "axpy_f64: code differs (SASS): see wfbench explain axpy_f64" in compare_table.render_text(
        compare.compare_runs(base, other))


def test_the_same_sass_with_other_resources_is_not_identical_code() -> None:
    """Same instruction text, 48 KiB of static shared memory instead of 1 KiB: judged by the timing."""
    small, large = sass("a", shared_static=1024), sass("a", shared_static=49152)
    assert not identical(small, large) and code_identity(small) != code_identity(large)
    assert differences(small, large) == ["static shared 1024 -> 49152 B"]
    base = with_case(synth_run(0, jitter=0.002, placements=15), "axpy_f64", diag_wf=small)
    head = with_case(synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002, placements=15), "axpy_f64",
                     diag_wf=large)
    (axpy,) = [c for c in compare.compare_runs(base, head).cases if c.case_id == "axpy_f64"]
    assert axpy.verdict.verdict == verdicts.SLOWER and verdicts.IDENTICAL_CODE not in axpy.verdict.qualifiers
    for field, value in (("registers", 40), ("local_bytes", 16), ("stack_frame", 8), ("shared_dynamic", 512),
                         ("launch_attrs", ("EIATTR_MAX_THREADS=0x80 0x1 0x1",)), ("resources", {"LOCAL": 16})):
        assert not identical(small, attrs.evolve(small, **{field: value})), field


def test_check_calls_identical_code_same_and_says_it_moved(tmp_path: Path) -> None:
    for n in range(6):
        add_run(tmp_path, with_case(synth_run(n, jitter=0.0005, placements=15), "axpy_f64", diag_wf=sass("c")))
    new = with_case(synth_run(6, wf_scale={"axpy_f64": 1.12}, placements=15), "axpy_f64", diag_wf=sass("c"))
    report = alerts.check(History.open(tmp_path), new)
    (f,) = [f for f in report.findings if f.case_id == "axpy_f64"]
    assert f.verdict == verdicts.SAME and f.judged.moved and "the environment changed" in f.message
    assert report.exit_code == alerts.EXIT_DRIFT


def test_throttled_points_and_depressed_hosts_are_kept_but_out_of_trends() -> None:
    run = synth_run(0)
    case = run.case("axpy_f64")
    assert point_of(run, case, "r.json").stable
    # throttled with no clock readings to tell dipped pairs from clean ones: out (wfbench_core.review.throttle)
    throttled = attrs.evolve(case, timing=attrs.evolve(case.timing, throttled=True, clocks_sm_mhz=()))
    assert not point_of(run, throttled, "r.json").stable
    # throttled, but every reading at the full clock: no pair dipped, nothing to take it out for
    assert point_of(run, attrs.evolve(case, timing=attrs.evolve(case.timing, throttled=True)), "r.json").stable
    depressed = attrs.evolve(run, environment=attrs.evolve(run.environment, depressed_host=True))
    assert not point_of(depressed, case, "r.json").stable


def test_a_base_head_run_table_gives_the_verdicts() -> None:
    from wfbench_core.review.report import render

    run = synth_run(0, placements=15)
    case = run.case("axpy_f64")
    base = attrs.evolve(case, compiler_label="base", diag_wf=sass("d"))
    same = attrs.evolve(case, compiler_label="head", diag_wf=sass("d"))
    text = render(attrs.evolve(run, cases=(base, same)))
    assert f"axpy_f64 (base vs head): SAME (identical code), gap +0.00% [+0.00, +0.00]; {IDENTICAL_NOTE}" in text
    other = attrs.evolve(same, diag_wf=sass("d", shared_static=2048))
    text = render(attrs.evolve(run, cases=(base, other)))
    assert "axpy_f64 (base vs head): SAME, gap +0.00%" in text
    assert "; code differs (static shared 0 -> 2048 B): see wfbench explain axpy_f64" in text


# -- with the real tools ------------------------------------------------------------------------------------

# one kernel, {threads} threads of launch bounds and {shared} bytes of static shared memory (str.format)
SHARED_PTX = (Path(__file__).parent / "fixtures" / "shared_stage.ptx.template").read_text()


@needs_tools
def test_real_kernels_that_differ_only_in_static_shared_memory() -> None:
    """Two kernels whose SASS is byte-identical and whose static shared memory is 1 KiB and 48 KiB: ptxas and
    cuobjdump see the difference, occupancy halves (8 -> 4 blocks of 256 threads per SM on sm_90), and the
    code identity tells them apart."""
    small = dg.diagnose(SHARED_PTX.format(threads=256, shared=1024), "stage", "sm_90", 256, 0)
    large = dg.diagnose(SHARED_PTX.format(threads=256, shared=49152), "stage", "sm_90", 256, 0)
    assert small.sass_sha256 == large.sass_sha256, "the instruction text is the same"
    assert (small.shared_static, large.shared_static) == (1024, 49152)
    assert large.resources["SHARED"] - small.resources["SHARED"] == 49152 - 1024  # cuobjdump -res-usage
    assert (small.blocks_per_sm, large.blocks_per_sm) == (8, 4) and (small.occupancy, large.occupancy) == (1.0, 0.5)
    assert small.max_threads == 256 and any(a.startswith("EIATTR_MAX_THREADS=") for a in small.launch_attrs)
    assert not identical(small, large)
    assert sass_note(small, large).startswith("code differs (static shared 1024 -> 49152 B")
    renamed = dg.diagnose(SHARED_PTX.format(threads=256, shared=1024).replace("stage", "other"), "other", "sm_90",
                          256, 0)
    assert identical(small, renamed), "the kernel's name is no part of its identity"
    # launch bounds alone: .maxntid 256 against 128, launched alike
    loose = dg.diagnose(SHARED_PTX.format(threads=256, shared=1024), "stage", "sm_90", 128, 0)
    tight = dg.diagnose(SHARED_PTX.format(threads=128, shared=1024), "stage", "sm_90", 128, 0)
    assert (loose.max_threads, tight.max_threads) == (256, 128) and not identical(loose, tight)
    assert "launch attributes" in sass_note(loose, tight)


@pytest.fixture
def stand_in_gpu(monkeypatch: pytest.MonkeyPatch, nvcc: Path) -> None:
    """The executor's real worker with the stand-in timer of tests/fake_gpu.py: each ``bar.sync`` in a side's
    canonical PTX costs 2 %, every side's samples come from its own PTX."""
    from testkit import use_stand_in_gpu

    use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR="scale_i64=barriers,axpy_f64=barriers")


@needs_tools
def test_a_head_kernel_byte_identical_to_base_is_timed_once(stand_in_gpu: None, tmp_path: Path) -> None:
    """Base/head: axpy_f64's head gets a barrier (other PTX, 2 % slower), scale_i64's head PTX is byte-identical
    to base's. scale is checked and timed once, base against CUDA, and its head result carries those samples,
    marked; compare calls it SAME (identical code, timed once) and takes no A/A floor from it."""
    from click.testing import CliRunner

    from wfbench_core.cli import main
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.results import load_result
    from wfbench_core.testing import base_head_bundle_from_ptx, inject_at_entry, ptx_dir_loader

    base = ptx_dir_loader(Path(__file__).parent / "fixtures" / "ptx")

    def head(case, config: str) -> str:  # type: ignore[no-untyped-def]
        ptx = base(case, config)
        return inject_at_entry(ptx, case.wf_kernel, "bar.sync 0;") if case.id == "axpy_f64" else ptx

    reg = Registry.load()
    base_head_bundle_from_ptx([reg.case("scale_i64"), reg.case("axpy_f64")], tmp_path / "bh",
                              {"base": base, "head": head})
    out = tmp_path / "bh.json"
    r = CliRunner().invoke(main, ["execute", str(tmp_path / "bh"), "-o", str(out), "-q", "--warmup-s", "0",
                                  "--min-sample-ms", "1", "--samples", "20"])
    assert r.exit_code == 0, r.output
    result = load_result(out)
    sb, sh = result.case("scale_i64", "base"), result.case("scale_i64", "head")
    assert sb.timing is not None and sh.timing is not None
    assert sh.timing.timed_with == "base" and not sb.timing.timed_with
    assert set(sb.timing.order) == {"wf:base", "cuda"}  # the head's identical kernel was not a side
    assert sh.timing.warpforth == sb.timing.warpforth and sh.timing.cuda == sb.timing.cuda
    assert sh.compile_wf is not None and sb.compile_wf is not None
    assert sh.compile_wf.ptx_sha256 == sb.compile_wf.ptx_sha256
    ab, ah = result.case("axpy_f64", "base"), result.case("axpy_f64", "head")
    assert ab.timing is not None and ah.timing is not None and not ah.timing.timed_with
    assert set(ab.timing.order) == {"wf:base", "wf:head", "cuda"} and ah.timing.cuda == ab.timing.cuda
    assert ah.timing.warpforth.median_us > ab.timing.warpforth.median_us * 1.01

    cmp = CliRunner().invoke(main, ["compare", str(out)])
    assert cmp.exit_code == 0, cmp.output
    assert re.search(r"^scale_i64 v\d .*SAME \(identical code, timed once\)$", cmp.output, re.MULTILINE)
    assert re.search(r"^axpy_f64 v\d .*SLOWER$", cmp.output, re.MULTILINE)
    assert "Margin: default 0.20% (no A/A floor measured)" in cmp.output


# one kernel whose loop runs for a .const count and adds an initialized .global word (str.format: count, word)
DATA_PTX = """\
.version 8.0
.target sm_90
.address_size 64

.const .align 4 .u32 count = {count};
.global .align 4 .u32 table[2] = {{1, {word}}};

.visible .entry counted(.param .u64 out)
{{
    .reg .b32 %r<6>;
    .reg .b64 %rd<2>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    ld.const.u32 %r1, [count];
    ld.global.u32 %r4, [table+4];
    mov.u32 %r2, 0;
    mov.u32 %r3, 0;
$L_loop:
    add.u32 %r3, %r3, %r2;
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra $L_loop;
    add.u32 %r3, %r3, %r4;
    st.global.u32 [%rd1], %r3;
    ret;
}}
"""


@needs_tools
def test_initialized_const_and_global_data_are_part_of_the_identity() -> None:
    """Loop counts of 10 and 100000 in a ``.const`` variable: the SASS reads the count by address and is
    byte-identical, the kernels are not; the same for an initialized ``.global`` word. Kernels without
    initialized data (every fixture's) have none, so their identity is what it was."""
    ten = dg.diagnose(DATA_PTX.format(count=10, word=7), "counted", "sm_90", 256, 0)
    many = dg.diagnose(DATA_PTX.format(count=100000, word=7), "counted", "sm_90", 256, 0)
    other_word = dg.diagnose(DATA_PTX.format(count=10, word=8), "counted", "sm_90", 256, 0)
    assert ten.sass_sha256 == many.sass_sha256 == other_word.sass_sha256, "the SASS reads the data by address"
    assert ten.data_sha256 and len({ten.data_sha256, many.data_sha256, other_word.data_sha256}) == 3
    assert not identical(ten, many) and not identical(ten, other_word)
    assert sass_note(ten, many) == "code differs (initialized .const/.global data): see wfbench explain"
    again = dg.diagnose(DATA_PTX.format(count=10, word=7).replace("counted", "renamed"), "renamed", "sm_90", 256, 0)
    assert identical(ten, again)
    plain = dg.diagnose((Path(__file__).parent / "fixtures" / "ptx" / "axpy_f64.canonical.ptx").read_text(),
                        "axpy_f64", "sm_90", 256, 0)
    assert plain.data_sha256 == ""
