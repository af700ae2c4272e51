"""Head against base from real PTX: the WarpForth fixture PTX (real warpforthc output) as base, the same PTX
with one real instruction injected as head, assembled by the real ptxas and read by the real cuobjdump."""

from __future__ import annotations

import re
import shlex
import stat
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from wfbench_core.compiling.code_identity import IDENTICAL_NOTE
from wfbench_core.compiling import diagnostics as dg
from wfbench_core.review import sassdiff
from wfbench_core.cli import main
from wfbench_core.review.headbase import Variant, profile_rows, render, variant
from wfbench_core.gpu.profile import parse_raw_csv, to_profile
from wfbench_core.discover.registry import Registry
from wfbench_core.testing import base_head_bundle_from_ptx, inject_at_entry, ptx_dir_loader
from testkit import STORED_PTX  # tests/testkit.py

FIXTURES = Path(__file__).parent / "fixtures"
CASE = "reduce_sum_f64"
INJECTED = "bar.sync 0;"  # an extra barrier at the kernel entry, as an injected regression would add

pytestmark = pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")


def base_ptx(config: str = "canonical", case: str = CASE) -> str:
    return (STORED_PTX / f"{case}.{config}.ptx").read_text()


def slowed(case, config: str) -> str:  # type: ignore[no-untyped-def]
    return inject_at_entry(ptx_dir_loader(STORED_PTX)(case, config), case.wf_kernel, INJECTED)


@pytest.fixture(scope="module")
def case():  # type: ignore[no-untyped-def]
    return Registry.load().case(CASE)


@pytest.fixture(scope="module")
def variants(case):  # type: ignore[no-untyped-def]
    base = base_ptx()
    head = inject_at_entry(base, case.wf_kernel, INJECTED)
    return variant(case, "base", base, "sm_90"), variant(case, "head", head, "sm_90")


def test_injection_is_one_ptx_statement_at_the_entry(case) -> None:  # type: ignore[no-untyped-def]
    base = base_ptx()
    head = inject_at_entry(base, case.wf_kernel, INJECTED)
    added = [ln for ln in head.splitlines() if ln not in base.splitlines()]
    assert added == ["\tbar.sync 0;"]
    body = head.split("{", 1)[1].splitlines()
    statements = [ln.strip() for ln in body if ln.strip() and not re.match(r"\s*(\.reg|\.shared|//)", ln)]
    assert statements[0] == "bar.sync 0;" and statements[1].startswith("ld.param")


def test_alignment_finds_exactly_the_added_instruction(variants) -> None:  # type: ignore[no-untyped-def]
    base, head = variants
    d = sassdiff.diff(base.sass, head.sass)
    changed = [r for r in d.rows if r.changed]
    assert [(r.kind, r.head.opcode) for r in changed] == [("added", "BAR.SYNC.DEFER_BLOCKING")]  # type: ignore[union-attr]
    assert len(d.head) == len(d.base) + 1
    # the barrier sits where ptxas put it: in the code before the one loop, which is itself unchanged
    [pair] = d.loops
    assert not pair.changed and pair.head is not None
    added = changed[0].head
    assert added is not None and added.address < pair.head.start
    [placed] = d.placed()
    assert placed.where == f"before the first loop (0x{pair.head.start:04x})"
    assert d.head[placed.index - 1] == added and placed.of == len(d.head)


def test_report_names_the_instruction_and_its_place(variants) -> None:  # type: ignore[no-untyped-def]
    base, head = variants
    text = "\n".join(render(base, head))
    d = sassdiff.diff(base.sass, head.sass)
    [placed] = d.placed()
    bar = placed.row.head
    assert bar is not None
    expected = (f"- Added `BAR.SYNC.DEFER_BLOCKING 0x0` at head 0x{bar.address:04x} (instruction {placed.index} of "
                f"{len(d.head)}), before the first loop (0x{d.loops[0].head.start:04x}); "  # type: ignore[union-attr]
                f"after `{placed.after.text}`, before `{placed.before.text}`.")  # type: ignore[union-attr]
    assert expected in text.splitlines()
    assert [ln for ln in text.splitlines() if ln.startswith("- Added")] == [expected]
    assert "1 instruction added, 0 removed, 0 changed, 0 moved" in text
    assert "| SASS instructions | 99 | 100 | +1 |" in text and "| registers / thread | 20 | 20 | = |" in text
    assert "No loop changed: every change is outside the loops." in text
    block = text.split("```diff", 1)[1].split("```", 1)[0].splitlines()
    assert [ln for ln in block if ln.startswith(("+", "-"))] == [f"+ /*{bar.address:04x}*/ BAR.SYNC.DEFER_BLOCKING 0x0"]
    assert len([ln for ln in block if ln.startswith("  /*")]) == 6  # three lines of context either side


def test_a_change_inside_the_loop_is_changed_moved_and_shown_side_by_side(case) -> None:  # type: ignore[no-untyped-def]
    base = base_ptx()
    head = base.replace("add.rn.f64 \t%rd45, %rd45, %rd14;", "sub.rn.f64 \t%rd45, %rd45, %rd14;\n\tmembar.cta;", 1)
    assert head != base
    b, h = variant(case, "base", base, "sm_90"), variant(case, "head", head, "sm_90")
    d = sassdiff.diff(b.sass, h.sass)
    [pair] = d.loops
    assert pair.changed
    kinds = {(r.kind, r.head.opcode.split(".")[0]) for r in pair.rows if r.changed and r.head}
    assert ("changed", "DADD") in kinds and ("added", "MEMBAR") in kinds
    dadd = next(r for r in pair.rows if r.kind == "changed")
    assert dadd.base.text == "DADD R6, R4, R6" and "-R" in dadd.head.text  # type: ignore[union-attr]
    text = "\n".join(render(b, h))
    assert f"inside the loop at 0x{pair.head.start:04x}-0x{pair.head.end:04x}" in text  # type: ignore[union-attr]
    assert "**changed**" in text and ", side by side:" in text
    assert "| `0x%04x DADD R6, R4, R6` | `0x%04x DADD R6, -R4, R6` | changed |" % (
        dadd.base.address, dadd.head.address) in text  # type: ignore[union-attr]


def test_identical_sass_is_one_line(case) -> None:  # type: ignore[no-untyped-def]
    v = variant(case, "base", base_ptx(), "sm_90")
    lines = render(v, attrs.evolve(v, label="head"))
    assert lines == [f"base and head: {IDENTICAL_NOTE} (SASS SHA-256 `{v.diag.sass_sha256[:12]}`)."]


def test_register_renaming_alone_is_not_a_change() -> None:
    i = dg.Instr
    base = [i(0x00, "", "S2R", "R2, SR_TID.X"), i(0x10, "", "IADD3", "R4, R2, 0x1, RZ"), i(0x20, "", "EXIT", "")]
    head = [i(0x00, "", "S2R", "R3, SR_TID.X"), i(0x10, "", "IADD3", "R5, R3, 0x1, RZ"), i(0x20, "", "EXIT", "")]
    d = sassdiff.diff(base, head)
    assert [r.kind for r in d.rows] == ["renamed", "renamed", "same"] and d.placed() == []
    other = [head[0], i(0x10, "", "IADD3", "R5, R3, 0x2, RZ"), head[2]]
    assert [r.kind for r in sassdiff.diff(base, other).rows] == ["renamed", "changed", "same"]


def test_profile_deltas(variants) -> None:  # type: ignore[no-untyped-def]
    [row] = parse_raw_csv((FIXTURES / "ncu" / "transpose_f64.wf.raw.csv").read_text())
    p = to_profile(row)
    slower = attrs.evolve(p, duration_us=p.duration_us * 1.02, instructions=(p.instructions or 0) + 4096)
    rows = {r[0]: r[1:] for r in profile_rows(p, slower)}
    assert rows["duration (us)"] == [f"{p.duration_us:.2f}", f"{p.duration_us * 1.02:.2f}", "+2.00%"]
    assert rows["DRAM throughput"][2] == "+0.0 pp"
    assert rows["warp instructions executed"][1] == f"{(p.instructions or 0) + 4096:,}"
    base, head = variants
    text = "\n".join(render(attrs.evolve(base, profile=p), attrs.evolve(head, profile=slower)))
    assert "Nsight Compute, one launch at the canonical size:" in text and "| duration (us) |" in text


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def bh_bundle(case, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path / "bh"
    base_head_bundle_from_ptx([case], out, {"base": ptx_dir_loader(STORED_PTX), "head": slowed})
    return out


def test_explain_bundle_leads_with_head_against_base(nvcc: Path, bh_bundle: Path) -> None:
    r = invoke("explain", CASE, "--bundle", str(bh_bundle), "-q")
    assert r.exit_code == 0, r.stderr
    md = r.stdout
    assert md.startswith(f"### {CASE} v1: head against base, then against CUDA on sm_90")
    head_base, cuda = md.index("#### Head against base"), md.index("#### Findings against CUDA")
    assert head_base < cuda < md.index("#### Static diagnostics")
    assert len(re.findall(r"^- Added `BAR\.SYNC\.DEFER_BLOCKING 0x0` at head 0x[0-9a-f]{4} .*before the first loop",
                          md, re.MULTILINE)) == 1
    assert "the SASS differs (mix below)" not in md


def test_explain_bundle_with_a_stand_in_ncu_shows_metric_deltas(nvcc: Path, bh_bundle: Path, tmp_path: Path) -> None:
    csv_file = FIXTURES / "ncu" / "transpose_f64.wf.raw.csv"
    ncu = tmp_path / "ncu"
    ncu.write_text(f'#!/bin/sh\ncase "$1" in --version) echo "Version 2025.3.1.0";; *) cat {shlex.quote(str(csv_file))};; esac\n')
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    r = invoke("explain", CASE, "--bundle", str(bh_bundle), "--arch", "sm_90", "--profile", "--ncu", str(ncu), "-q")
    assert r.exit_code == 0, r.stderr
    section = r.stdout.split("#### Head against base", 1)[1].split("#### Findings", 1)[0]
    assert "| duration (us) | 101.63 | 101.63 | +0.00% |" in section


@pytest.mark.gpu
def test_explain_bundle_with_profile_on_the_gpu(nvcc: Path, bh_bundle: Path) -> None:
    """On a GPU host with Nsight Compute: the head-against-base section holds the measured metric deltas."""
    from wfbench_core.compiling.cudatools import find_tool

    if find_tool("ncu") is None:
        pytest.skip("Nsight Compute (ncu) not installed")
    r = invoke("explain", CASE, "--bundle", str(bh_bundle), "--profile", "-q")
    assert r.exit_code == 0, r.stderr
    section = r.stdout.split("#### Head against base", 1)[1].split("#### Findings", 1)[0]
    assert "Nsight Compute, one launch at the canonical size:" in section
    row = next(ln for ln in section.splitlines() if ln.startswith("| duration (us) |"))
    assert re.fullmatch(r"\| duration \(us\) \| [\d.]+ \| [\d.]+ \| [+-][\d.]+% \|", row), row
