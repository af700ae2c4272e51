"""The runtime-stack tax, from real compiler output assembled by the real ptxas and read by the real cuobjdump.

tests/fixtures/ptx-stack holds what warpforthc (WarpForth 83c30d0) and nvcc 13.0 made of:

- ``stack_pick.forth``: per element, six stack values, the top K of them summed with ``I 1 + PICK``, K a
  kernel parameter: the stack is indexed at run time and stays in local memory;
- ``stack_pick_static.forth``: the same kernel with a literal trip count: every index is known at compile
  time and the stack is promoted to registers (what stack flattening would do to the first);
- ``stack_pick_cuda.cu``: the CUDA version of the first, a local array indexed by the loop counter;
- ``local_window_cuda.cu``: a local array whose address goes to a function that is not inlined, through the
  local window.

tests/fixtures/ptx holds the suite's WarpForth PTX, none of which has a stack frame.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import attrs
import pytest

from wfbench_core.compiling import diagnostics as dg
from wfbench_core.compiling import stack_tax as st
from wfbench_core.gpu import profile as pf
from wfbench_core.record.results import KernelProfile, SideDiagnostics, load_result

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
STACK = FIXTURES / "ptx-stack"
ARCH = "sm_90"

tools = pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")


def assembled(path: Path, kernel: str = "stack_pick") -> tuple[dg.Assembled, SideDiagnostics]:
    a = dg.assemble(path.read_text(), kernel, ARCH, what=path.name)
    return a, dg.summarize(a, kernel, ARCH, 256, 0)


@pytest.fixture(scope="module")
def sides() -> dict[str, tuple[dg.Assembled, SideDiagnostics]]:
    if dg.tools_available() is not None:
        pytest.skip("CUDA binary tools missing")
    return {"wf": assembled(STACK / "stack_pick.ptx"), "flat": assembled(STACK / "stack_pick_static.ptx"),
            "cuda": assembled(STACK / "stack_pick_cuda.ptx", "stack_pick_cuda")}


# -------------------------------------------------------------------------------------------------
# the counting rule


def test_the_rule_counts_what_forms_a_stack_address_and_not_the_frame_set_up() -> None:
    assert not st.addresses_stack("LDC", "R1, c[0x0][0x28]")  # the frame set-up writes the stack pointer
    assert not st.addresses_stack("VIADD", "R1, R1, 0xfffff800")
    assert not st.addresses_stack("STL.64", "[R1+0x8], R2")  # local loads and stores are counted apart
    assert not st.addresses_stack("LDL.64", "R6, [R24]")
    assert st.addresses_stack("VIADD", "R20, R1, 0x38")  # the address of a stack cell
    assert st.addresses_stack("IMAD.MOV.U32", "R12, RZ, RZ, R1")
    assert st.addresses_stack("ULDC", "UR6, c[0x0][0x20]")  # the local window
    assert not st.addresses_stack("IADD3", "R10, R11, R12, RZ")  # R10, R11 are not R1


@tools
def test_a_stack_indexed_at_run_time_stays_in_local_memory(sides) -> None:  # type: ignore[no-untyped-def]
    a, d = sides["wf"]
    t = st.tax_of(d)
    assert d.stack_frame == 2048  # WarpForth's 256-cell stack array, as ptxas -v reports it
    assert t.stores == ((64, 17),) and t.loads == ((64, 1),)
    # the loop that sums the top K: one pick (LDL) and the stores of the accumulator and loop variables
    assert (t.loop_loads, t.loop_stores) == (1, 4)
    addressing = [i.text for i in dg.code_of(a.sass) if st.addresses_stack(i.opcode, i.operands)]
    assert addressing == ["VIADD R20, R1, 0x38"] and t.addressing == 1  # the address of the deepest cell
    assert t.carried
    # the counts are the SASS's own: every LDL/STL line of the listing, nothing else
    assert t.stl == sum(1 for i in a.sass if i.opcode.startswith("STL")) and t.ldl == 1


@tools
def test_the_flattened_stack_pays_nothing(sides) -> None:  # type: ignore[no-untyped-def]
    t = st.tax_of(sides["flat"][1])
    assert (t.frame, t.loads, t.stores, t.addressing, t.carried) == (0, (), (), 0, False)


@tools
def test_the_cuda_local_array_by_width(sides) -> None:  # type: ignore[no-untyped-def]
    t = st.tax_of(sides["cuda"][1])
    assert t.frame == 48 and t.stores == ((128, 9),) and t.loads == ((64, 3), (128, 2))
    assert t.addressing == 2 and t.loop_loads == 2


@tools
def test_a_local_address_made_generic_goes_through_the_local_window() -> None:
    a, d = assembled(STACK / "local_window_cuda.ptx", "local_window")
    window = [i.text for i in dg.code_of(a.sass) if any(w in i.operands for w in st.LOCAL_WINDOW)]
    assert window and d.stack_addressing is not None and d.stack_addressing >= len(window)


#: The suite's one kernel that keeps WarpForth's stack in memory on purpose: the stack-flattening probe.
TAXED = {"stack_pick_f64.canonical.ptx"}


@tools
@pytest.mark.parametrize("ptx", sorted((FIXTURES / "ptx").glob("*.canonical.ptx")), ids=lambda p: p.name)
def test_only_the_probe_pays_a_stack_tax(ptx: Path) -> None:
    kernel = re.search(r"\.entry\s+(\w+)", ptx.read_text()).group(1)  # type: ignore[union-attr]
    t = st.tax_of(assembled(ptx, kernel)[1])
    if ptx.name in TAXED:  # a PICK at a run-time index: the whole stack in local memory
        assert t.carried and t.addressing
    else:
        assert not t.carried and t.addressing == 0


# -------------------------------------------------------------------------------------------------
# the views


def _case():  # type: ignore[no-untyped-def]
    from wfbench_core.discover.registry import Registry

    return Registry.load().case("axpy_f64")  # the report's frame (title, launch); the kernels are the fixtures'


@tools
def test_head_against_base_shows_the_stack_going(sides) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.review.headbase import Variant, render

    base, head = (Variant(k, sides[s][1], sides[s][0].sass) for k, s in (("base", "wf"), ("head", "flat")))
    text = "\n".join(render(base, head))
    assert "Runtime stack: stack frame 2048 → 0 B, STL 17 → 0, LDL 1 → 0, stack addressing 1 → 0." in text
    assert "| local stores (STL) | 17 | 0 | -17 |" in text and "| stack-addressing instructions | 1 | 0 | -1 |" in text
    # profiled: the local traffic moves too, in the line and in the Nsight Compute table
    p = KernelProfile(duration_us=10.0, local_load_bytes=800_000, local_store_bytes=400_000)
    q = attrs.evolve(p, local_load_bytes=0, local_store_bytes=0)
    text = "\n".join(render(attrs.evolve(base, profile=p), attrs.evolve(head, profile=q)))
    assert ", local traffic 1.2 MB → 0." in text
    assert "| local bytes loaded | 800,000 | 0 | -100.00% |" in text


@tools
def test_explain_says_what_each_side_pays(sides) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.review.explain import ExplainedSide, SideReport, render_markdown

    reports = [SideReport(ExplainedSide(label, d.kernel, ""), d, dg.hottest_loop(a.sass), sass=a.sass)
               for label, (a, d) in (("WarpForth", sides["wf"]), ("CUDA", sides["cuda"]))]
    md = render_markdown(_case(), reports, arch=ARCH)
    findings = md.split("#### Findings", 1)[1].split("####", 1)[0]
    assert ("- WarpForth pays a runtime-stack tax in local memory: 2048 B stack frame; 17 local stores (STL.64 x17) and "
            "1 local load (LDL.64 x1), 5 of them in the innermost loop; 1 more instruction forms stack "
            "addresses.") in findings
    assert "- CUDA pays a runtime-stack tax in local memory: 48 B stack frame; 9 local stores (STL.128 x9)" in findings
    assert "| local stores (STL) | 17 (STL.64 x17) | 9 (STL.128 x9) |" in md
    assert "| local loads (LDL) | 1 (LDL.64 x1) | 5 (LDL.64 x3, LDL.128 x2) |" in md
    assert "local traffic" not in md  # not profiled: no row, no words
    profiled = [attrs.evolve(r, profile=KernelProfile(duration_us=1.0, local_load_bytes=n, local_store_bytes=2 * n))
                for r, n in zip(reports, (640, 0))]
    md = render_markdown(_case(), profiled, arch=ARCH)
    assert "| local traffic, loaded / stored (ncu) | 640 B / 1.3 kB | 0 / 0 |" in md
    assert "| local bytes, loaded / stored | 640 / 1,280 | 0 / 0 |" in md
    assert "local traffic 640 B loaded and 1.3 kB stored." in md


@tools
def test_the_table_static_column_carries_the_tax(sides) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.review.report import table_rows

    run = load_result(ROOT / "docs" / "results" / "h200-suite.json")
    plain = table_rows(run)[1][8]
    assert "stack" not in plain and "stl" not in plain  # no stack tax, no words about it
    wf, cu = sides["wf"][1], sides["cuda"][1]
    case = attrs.evolve(run.cases[0], diag_wf=wf, diag_cuda=cu)
    static = table_rows(attrs.evolve(run, cases=(case,)))[1][8]
    assert "stack 2048/48B stl 17/9 ldl 1/5" in static
    assert "stl.64" not in static and "ldl.128" not in static  # said once
    profiled = attrs.evolve(case, profile_wf=KernelProfile(local_load_bytes=10**6, local_store_bytes=2 * 10**5),
                            profile_cuda=KernelProfile(local_load_bytes=0, local_store_bytes=0))
    assert "ldl 1/5 local 1.2MB/0 " in table_rows(attrs.evolve(run, cases=(profiled,)))[1][8]


@tools
def test_the_doc_quotes_what_the_fixtures_give(sides) -> None:  # type: ignore[no-untyped-def]
    doc = (ROOT / "docs" / "stack-tax.md").read_text()
    m = re.search(r"<!-- stack-change: (\S+) (\S+) -->\n(.*?)\n<!-- /stack-change -->", doc)
    assert m is not None
    base, head = (st.tax_of(assembled(ROOT / p)[1]) for p in m.group(1, 2))
    assert m.group(3) == f"Runtime stack: {st.change(base, head)}."
    cell = st.cell(st.tax_of(sides["wf"][1]), st.tax_of(sides["cuda"][1]))
    assert f"for the kernel below, `{cell}`" in doc.replace("\n  ", " ")
    assert f"in a {sides['cuda'][1].stack_frame}-byte frame" in doc.replace("\n", " ")


# -------------------------------------------------------------------------------------------------
# Nsight Compute and the stored record


def _with_local_metrics(text: str, load: str, store: str, unit: str = "byte") -> str:
    """The real ncu raw page with the two local-traffic columns added, written as ncu writes its columns."""
    lines = text.splitlines()
    start = next(n for n, ln in enumerate(lines) if ln.startswith('"ID",'))
    names = ",".join(f'"{m}"' for m in pf.LOCAL_METRICS.values())
    lines[start] += "," + names
    lines[start + 1] += f',"{unit}","{unit}"'
    lines[start + 2] += f',"{load}","{store}"'
    return "\n".join(lines) + "\n"


def test_local_traffic_is_asked_of_ncu_and_read_back(tmp_path: Path) -> None:
    cmd = pf.ncu_command(Path("/x/ncu"), case_id="axpy_f64", ptx=tmp_path / "k.ptx", kernel="axpy_f64")
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert set(pf.LOCAL_METRICS.values()) <= set(metrics)
    real = (FIXTURES / "ncu" / "transpose_f64.wf.raw.csv").read_text()
    [row] = pf.parse_raw_csv(_with_local_metrics(real, "1,261,568", "630,784"))
    p = pf.to_profile(row)
    assert (p.local_load_bytes, p.local_store_bytes) == (1_261_568, 630_784)
    assert p.duration_us == pf.to_profile(pf.parse_raw_csv(real)[0]).duration_us  # nothing else moved
    [row] = pf.parse_raw_csv(_with_local_metrics(real, "1.26", "0", unit="kbyte"))
    assert (pf.to_profile(row).local_load_bytes, pf.to_profile(row).local_store_bytes) == (1260, 0)
    old = pf.to_profile(pf.parse_raw_csv(real)[0])  # a page without them: not measured, not zero
    assert old.local_load_bytes is None and st.tax_of(SideDiagnostics(arch=ARCH, kernel="k"), old).traffic is None


def test_results_of_schema_4_read_with_the_stack_fields_not_counted() -> None:
    from wfbench_core.record.results import SCHEMA_VERSION, dumps, parse_result

    run = load_result(ROOT / "docs" / "results" / "h200-suite.json")
    assert run.schema_version == SCHEMA_VERSION  # read up to the current schema, whatever it added
    d = run.cases[0].diag_wf
    assert d is not None and d.stack_addressing is None and st.tax_of(d).addressing is None
    counted = attrs.evolve(run, cases=(attrs.evolve(run.cases[0], diag_wf=attrs.evolve(d, stack_addressing=3),
                                                    profile_wf=KernelProfile(local_load_bytes=7)),))
    assert parse_result(dumps(counted)) == counted


# -------------------------------------------------------------------------------------------------
# the fixtures are what the compilers make


@pytest.mark.warpforthc
@pytest.mark.parametrize("name", ["stack_pick", "stack_pick_static"])
def test_the_warpforth_fixtures_are_warpforthc_output(name: str, warpforthc: Path, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.ptx"
    subprocess.run([str(warpforthc), str(STACK / f"{name}.forth"), "-o", str(out)], check=True, timeout=120)
    assert out.read_text() == (STACK / f"{name}.ptx").read_text()


@pytest.mark.parametrize("name", ["stack_pick_cuda", "local_window_cuda"])
def test_the_cuda_fixtures_are_nvcc_output(name: str, nvcc: Path, tmp_path: Path) -> None:
    from wfbench_core.compiling.compile import NVCC_FLAGS

    stored = (STACK / f"{name}.ptx").read_text()
    version = re.search(r"V\d+\.\d+\.\d+", stored).group(0)  # type: ignore[union-attr]
    if version not in subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout:
        pytest.skip(f"the fixture was made by nvcc {version}")
    out = tmp_path / f"{name}.ptx"
    subprocess.run([str(nvcc), *NVCC_FLAGS, "-ptx", f"-arch={ARCH}", str(STACK / f"{name}.cu"), "-o", str(out)],
                   check=True, timeout=300, cwd=tmp_path)
    assert out.read_text() == stored


def test_fixture_sources_are_kept_beside_their_output() -> None:
    for ptx in STACK.glob("*.ptx"):
        assert any(ptx.with_suffix(ext).exists() for ext in (".forth", ".cu")), ptx.name


@pytest.mark.gpu
@pytest.mark.parametrize("case_id", ["transpose_f64"])
def test_ncu_on_the_gpu_reports_the_local_traffic_metrics(case_id: str) -> None:
    """On a GPU host with Nsight Compute: ncu knows both metric names (an unknown name profiles nothing) and
    a suite kernel without a stack frame moves no local bytes."""
    from wfbench_core.compiling.cudatools import find_tool

    if find_tool("ncu") is None:
        pytest.skip("Nsight Compute (ncu) not installed")
    ptx = (FIXTURES / "ptx" / f"{case_id}.canonical.ptx").read_text()
    p = pf.profile_side(case_id=case_id, ptx=ptx, kernel=case_id, label="wf")
    assert (p.local_load_bytes, p.local_store_bytes) == (0, 0)
