"""The adversarial part of the broken-kernel plugin (examples/broken-cases): WarpForth kernels that pass every
correctness check made on poisoned outputs in fresh buffers, and go wrong only where the checks do not look
(a written output, many launches, another placement, past the end of an input). Each has a correct CUDA twin.

Without a GPU these tests read the PTX the real warpforthc made of each kernel (tests/fixtures/ptx-broken)
and assert that it really does the thing the case is named for, and that the twins compile. What catches
each of them on a GPU is in tests/test_gpu_faults.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from wfbench_core.case import CONFIGS, sha256_text

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "broken-cases"
PREBUILT = Path(__file__).resolve().parent / "fixtures" / "ptx-broken"
ADVERSARIAL = ("fault_nan_only", "fault_accumulate", "fault_launch_count", "fault_alignment", "fault_first_buffers",
               "fault_oob_read")


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from wfbench_core.discover.registry import Registry

    monkeypatch.syspath_prepend(str(PLUGIN))
    for name in list(sys.modules):
        if name.startswith("wfbench_broken_cases"):
            monkeypatch.delitem(sys.modules, name)
    return Registry.load([f"wfbench_broken_cases.{cid.removeprefix('fault_')}" for cid in ADVERSARIAL],
                         autoload=False)


def _body(ptx: str) -> str:
    return ptx[ptx.index(".entry"):]


def _param(body: str, kernel: str, index: int) -> str:
    """The register a kernel parameter is loaded into (``ld.param.b64 %rdN, [kernel_param_i]``)."""
    m = re.search(rf"ld\.param\.b64\s+(%rd\d+), \[{kernel}_param_{index}\];", body)
    assert m, f"{kernel}: parameter {index} is never loaded"
    return m.group(1)


def _stores(body: str) -> list[str]:
    return re.findall(r"^\s*st\.\S+\s+\[([^\]]+)\]", body, re.MULTILINE)


def _branch_block(body: str, label: str) -> str:
    """The straight-line code from ``label:`` to the next branch."""
    start = body.index(f"{label}:")
    end = re.search(r"\bbra(\.uni)?\s", body[start:])
    assert end, f"no branch after {label}"
    return body[start:start + end.start()]


def what_is_wrong(cid: str, ptx: str) -> None:
    """Read the PTX: assert it does the adversarial thing the case is named for."""
    body = _body(ptx)
    if cid == "fault_nan_only":
        # a NaN test of the loaded output element; the store only on the branch the NaN takes
        m = re.search(r"setp\.nan\.f64\s+(%p\d+), (%rd\d+), \2;\s*@\1 bra\s+(\$L__BB0_\d+);", body)
        assert m, "no branch on a NaN output element"
        taken = _branch_block(body, m.group(3))
        assert len(_stores(body)) == 1 and _stores(taken), "the store is not only on the NaN branch"
        assert "mul.rn.f64" in taken and "add.rn.f64" in taken, "the work is not only on the NaN branch"
    elif cid == "fault_accumulate":
        # the output element is loaded, a NaN replaced by 0, added to a*x + y and stored back to that address
        z = _param(body, cid, 3)
        m = re.search(rf"add\.s64\s+(%rd\d+), {z}, %rd\d+;\s*ld\.b64\s+(%rd\d+), \[\1\];", body)
        assert m, "the output element is never loaded"
        addr, old = m.groups()
        kept = re.search(rf"setp\.num\.f64\s+(%p\d+), {old}, {old};\s*selp\.f64\s+(%rd\d+), {old}, "
                         rf"0d0000000000000000, \1;", body)
        assert kept, "a NaN in the output is not read as 0"
        assert re.search(rf"add\.rn\.f64\s+(%rd\d+), %rd\d+, {kept.group(2)};\s*st\.b64\s+\[{addr}\], \1;", body)
    elif cid == "fault_launch_count":
        w = _param(body, cid, 4)
        assert re.search(rf"cvta\.to\.global\.u64\s+(%rd\d+), {w};", body), "the workspace is not used"
        assert re.search(r"setp\.lt\.s64\s+%p\d+, %rd\d+, 8;", body), "no test of the launch count against 8"
        assert re.search(r"shr\.s64\s+%rd\d+, %rd\d+, 1;", body), "the bound is never halved"
        # thread 0 adds one to the count after its loop
        tail = body[body.rindex("setp.ne.b64"):]
        assert re.search(r"add\.s64\s+%rd\d+, %rd\d+, 1;", tail) and "st.global" in tail
    elif cid == "fault_alignment":
        y = _param(body, cid, 2)
        m = re.search(rf"and\.b64\s+(%rd\d+), {y}, 511;\s*setp\.ne\.b64\s+(%p\d+), \1, 0;\s*"
                      rf"selp\.b64\s+(%rd\d+), -1, 0, \2;", body)
        assert m, "no test of Y's 512-byte alignment"
        assert re.search(rf"mad\.lo\.s64\s+%rd\d+, %rd\d+, %rd\d+, {m.group(3)};", body), \
            "the alignment flag is not added to the result"
    elif cid == "fault_first_buffers":
        x = _param(body, cid, 1)
        assert re.search(rf"and\.b64\s+(%rd\d+), {x}, 4095;", body), "no test of X's 4 KiB alignment"
        assert re.search(r"setp\.gt\.s64\s+%p\d+, %rd\d+, 1048575;", body), "no large-size test"
        assert re.search(r"shr\.s64\s+%rd\d+, %rd\d+, 1;", body), "the bound is never halved"
    elif cid == "fault_oob_read":
        # X[i+1] is loaded (8 bytes past X[i]) and multiplied by K & 4 (0 for K = 3)
        m = re.search(r"add\.s64\s+(%rd\d+), (%rd\d+), %rd\d+;\s*ld\.b32\s+%rd\d+, \[\1\];", body)
        assert m and m.group(2) == _param(body, cid, 1), "X[i] is not loaded"
        assert re.search(rf"ld\.b32\s+%rd\d+, \[{re.escape(m.group(1))}\+8\];", body), "X[i+1] is not loaded"
        k = _param(body, cid, 0)
        assert re.search(rf"and\.b64\s+%rd\d+, {k}, 4;", body)
        assert "setp" not in body.split("$L__BB0_2:")[1].split("st.b32")[0], "the read of X[i+1] is guarded"
    else:
        raise AssertionError(f"no PTX check for {cid}")
    assert "ret;" in body


def test_every_adversarial_case_is_registered_and_well_formed(registry) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.testing import check_case

    from pyproject_data import entry_points as declared

    entry_points = declared(PLUGIN / "pyproject.toml")
    for cid in ADVERSARIAL:
        assert entry_points[cid] == f"wfbench_broken_cases.{cid.removeprefix('fault_')}"
        case = registry.case(cid)
        assert case.wf_kernel == case.cuda_kernel == cid and case.priority == "P1"
        check_case(case)  # with nvcc here: the correct CUDA twin compiles and assembles


@pytest.mark.parametrize("cid", ADVERSARIAL)
def test_prebuilt_ptx_is_fresh_does_the_thing_and_assembles(registry, cid: str) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.compiling.compile import find_nvcc, ptxas_check

    case = registry.case(cid)
    for config in CONFIGS:
        recorded = (PREBUILT / f"{cid}.{config}.forth.sha256").read_text().strip()
        assert recorded == sha256_text(case.render(config)[0]), f"{cid}[{config}]: regenerate the PTX fixture"
        ptx = (PREBUILT / f"{cid}.{config}.ptx").read_text()
        what_is_wrong(cid, ptx)
        if find_nvcc() is not None:
            ptxas_check(ptx, arch="sm_90", case_id=f"{cid}[{config}]")


def test_the_ptx_checks_fail_on_the_correct_kernel() -> None:
    """Each PTX check rejects the plugin's correct kernel (of the same shape): the checks can fail."""
    good = (PREBUILT / "fault_good_scale.canonical.ptx").read_text()
    for cid in ADVERSARIAL:
        with pytest.raises(AssertionError):
            what_is_wrong(cid, good.replace("fault_good_scale", cid))


@pytest.mark.warpforthc
@pytest.mark.parametrize("cid", ADVERSARIAL)
def test_warpforthc_still_makes_the_adversarial_kernel(registry, warpforthc: Path, cid: str) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.compiling.compile import compile_warpforth

    case = registry.case(cid)
    for config in CONFIGS:
        what_is_wrong(cid, compile_warpforth(case.render(config)[0], binary=warpforthc, case_id=f"{cid}[{config}]").ptx)


def test_the_reference_is_what_the_kernel_computes_on_poisoned_outputs(registry) -> None:  # type: ignore[no-untyped-def]
    """Where each kernel is right (a poisoned output, few launches, a fresh allocation), its answer is the
    twin's: a numpy model of each kernel's rule, applied to the check inputs, gives the reference."""
    import numpy as np

    from wfbench_core.gpu.comparison import poison_value

    for cid in ADVERSARIAL:
        case = registry.case(cid)
        inp = case.make_inputs("check")
        want = case.make_reference(inp, "check")
        out = case.outputs[0].name
        poisoned = np.full_like(want[out], poison_value(want[out].dtype)[0])
        if cid in ("fault_nan_only", "fault_accumulate"):
            fresh = inp["A"] * inp["X"] + inp["Y"]
            z = np.where(np.isnan(poisoned), fresh, poisoned) if cid == "fault_nan_only" \
                else fresh + np.where(np.isnan(poisoned), 0.0, poisoned)
            np.testing.assert_array_equal(z, want[out])
            if cid == "fault_accumulate":  # a second launch into the written output: every element doubled
                assert not np.array_equal(fresh + z, want[out])
        elif cid == "fault_oob_read":
            assert inp["K"] & 4 == 0  # the out-of-bounds term is multiplied by K & 4
            np.testing.assert_array_equal(inp["K"] * inp["X"], want[out])
        else:
            np.testing.assert_array_equal(inp["K"] * inp["X"], want[out])
        if cid == "fault_launch_count":
            assert np.array_equal(inp["W"], [0])  # the count starts at 0 in every fresh copy of the inputs
        if cid == "fault_first_buffers":  # it cheats only at the size that is timed
            assert case.sizes["check"]["N"] < 1 << 20 <= case.sizes["canonical"]["N"]


def test_the_out_of_bounds_read_stays_inside_the_allocators_padding(registry) -> None:  # type: ignore[no-untyped-def]
    """X[N] lies past X's bytes but not at a 512-byte boundary, where the next page could be unmapped (the
    read must not fault: only compute-sanitizer may see it)."""
    case = registry.case("fault_oob_read")
    for config in CONFIGS:
        assert (8 * case.sizes[config]["N"]) % 512 != 0


def test_the_whole_corpus_bundle_validates_without_a_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle the GPU corpus run executes (every case but the syntax error, from the prebuilt PTX) is whole."""
    from click.testing import CliRunner

    from wfbench_core.cli import main
    from wfbench_core.discover.registry import Registry
    from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

    from test_gpu_faults import MODULES, _env  # tests/ is on sys.path, as for conftest
    monkeypatch.syspath_prepend(str(PLUGIN))
    reg = Registry.load([f"wfbench_broken_cases.{m}" for m in MODULES if m != "syntax"], autoload=False)
    assert set(ADVERSARIAL) <= set(reg.cases)
    bundle_from_ptx([r.value for r in reg.cases.values()], tmp_path / "b", ptx_dir_loader(PREBUILT))
    r = CliRunner().invoke(main, ["execute", str(tmp_path / "b"), "--validate-only", "--json"],
                           env={"WFBENCH_PLUGINS": _env()["WFBENCH_PLUGINS"]}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert set(json.loads(r.output)["cases"]) == {f"fault_{m}" for m in MODULES if m != "syntax"}
