"""A head that breaks a case is BROKEN, the worst regression, and the base keeps its timing and its status.

The executor runs for real (worker process, base/head bundle of real PTX, real ptxas for the diagnostics); the
timer is the stand-in of tests/fake_gpu.py, which fails a side's timed buffers as the real timer does when
a compiler drops the last block of large grids: the whole measurement fails, every side's checks together.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from testkit import STORED_PTX  # tests/testkit.py
from wfbench_core.compiling import diagnostics as dg
from wfbench_core.cli import main
from wfbench_core.discover.registry import Registry
from wfbench_core.record.results import FAILED, OK, load_result
from wfbench_core.testing import base_head_bundle_from_ptx, inject_at_entry, ptx_dir_loader

pytestmark = pytest.mark.skipif(dg.tools_available() is not None,
                                reason=f"CUDA binary tools missing: {dg.tools_available()}")
WRONG = "membar.gl;"  # the stand-in timer finds the timed buffers of a side whose PTX holds it wrong
BROKEN_CASE = "axpy_f64"
LOST = "8192 of 33554432 elements never written"


@pytest.fixture
def stand_in_gpu(monkeypatch: pytest.MonkeyPatch, nvcc: Path) -> None:
    from testkit import use_stand_in_gpu

    use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR="scale_i64=barriers,axpy_f64=barriers", FAKE_GPU_WRONG=WRONG)


def run_broken(tmp_path: Path, broken_label: str) -> Path:
    """Execute a base/head bundle whose ``broken_label`` build of axpy_f64 is wrong on the timed buffers."""
    plain = ptx_dir_loader(STORED_PTX)

    def broken(case, config: str) -> str:  # type: ignore[no-untyped-def]
        ptx = plain(case, config)
        return inject_at_entry(ptx, case.wf_kernel, WRONG) if case.id == BROKEN_CASE else ptx

    reg = Registry.load()
    compilers = {"base": plain, "head": plain, broken_label: broken}
    base_head_bundle_from_ptx([reg.case("scale_i64"), reg.case(BROKEN_CASE)], tmp_path / "bh", compilers)
    out = tmp_path / "bh.json"
    r = CliRunner().invoke(main, ["execute", str(tmp_path / "bh"), "-o", str(out), "-q", "--warmup-s", "0",
                                  "--min-sample-ms", "1", "--samples", "20"])
    assert r.exit_code == 1, r.output  # a failed case fails the run
    return out


def test_a_head_that_breaks_a_case_leaves_the_base_timed_and_is_broken(stand_in_gpu: None, tmp_path: Path) -> None:
    out = run_broken(tmp_path, "head")
    result = load_result(out)
    base, head = result.case(BROKEN_CASE, "base"), result.case(BROKEN_CASE, "head")
    assert base.status == OK and base.timing is not None and not base.message
    assert set(base.timing.order) == {"wf:base", "cuda"}  # timed again without the broken head
    assert head.status == FAILED and head.timing is None
    assert head.message.startswith(f"{BROKEN_CASE}[canonical] WarpForth (head): output") and LOST in head.message

    runner = CliRunner()
    text = runner.invoke(main, ["compare", str(out)])
    assert text.exit_code == 0, text.output
    assert re.search(rf"^{BROKEN_CASE} v\d .*BROKEN$", text.stdout, re.MULTILINE)
    assert f"{BROKEN_CASE}: BROKEN: head FAILED: " in text.stdout and LOST in text.stdout
    assert "2 case(s): 1 BROKEN, 1 SAME" in text.stdout
    assert runner.invoke(main, ["compare", str(out), "--fail-on-regression"]).exit_code == 1
    data = json.loads(runner.invoke(main, ["compare", str(out), "--json"]).stdout)
    assert data["regressions"] == [BROKEN_CASE]

    comment = runner.invoke(main, ["pr-comment", str(out), "--bundle", str(tmp_path / "bh"), "--arch", "sm_90", "-q"])
    assert comment.exit_code == 0, comment.output
    lines = [ln for ln in comment.stdout.splitlines() if ln.strip()]
    assert lines[3] == "**1 BROKEN, 1 SAME**"
    assert lines[4] == "**The head breaks 1 case(s) the base passed:**" and LOST in lines[5]
    table = [ln for ln in lines if ln.startswith("| ")]
    assert table[2].startswith(f"| {BROKEN_CASE} v1 | **BROKEN** |")


def test_a_base_that_fails_alone_is_reported_and_is_no_regression(stand_in_gpu: None, tmp_path: Path) -> None:
    out = run_broken(tmp_path, "base")
    result = load_result(out)
    assert result.case(BROKEN_CASE, "head").status == OK and result.case(BROKEN_CASE, "base").status == FAILED
    runner = CliRunner()
    text = runner.invoke(main, ["compare", str(out), "--fail-on-regression"])
    assert text.exit_code == 0, text.output
    assert re.search(rf"^{BROKEN_CASE} v\d .*BASE BROKEN$", text.stdout, re.MULTILINE)
    assert f"{BROKEN_CASE}: BASE BROKEN: base FAILED: " in text.stdout and "WarpForth (base)" in text.stdout


def test_a_head_whose_launches_do_not_do_the_same_work_is_implausible_and_broken(monkeypatch: pytest.MonkeyPatch,
                                                                                  stand_in_gpu: None,
                                                                                  tmp_path: Path) -> None:
    """A head kernel that skips work once its output is written: refused before timing, whatever the time
    limit, as IMPLAUSIBLE; the base is timed without it and compare says BROKEN."""
    from wfbench_core.record.results import IMPLAUSIBLE

    monkeypatch.setenv("FAKE_GPU_WRONG", "")
    monkeypatch.setenv("FAKE_GPU_SKIPS_WORK", WRONG)
    out = run_broken(tmp_path, "head")
    result = load_result(out)
    base, head = result.case(BROKEN_CASE, "base"), result.case(BROKEN_CASE, "head")
    assert base.status == OK and base.timing is not None and set(base.timing.order) == {"wf:base", "cuda"}
    assert head.status == IMPLAUSIBLE and head.timing is None
    assert head.message.startswith(f"{BROKEN_CASE}[canonical] (head) WarpForth: its launches do not do the same work: "
                                   f"1.77 to 107 us per launch") and head.message.endswith("; not kept")
    text = CliRunner().invoke(main, ["compare", str(out), "--fail-on-regression"])
    assert text.exit_code == 1 and f"{BROKEN_CASE}: BROKEN: head IMPLAUSIBLE: " in text.stdout
