"""The broken-kernel plugin (examples/broken-cases): its cases load through the wfbench entry-point group,
their CUDA twins compile, and (with the real warpforthc) each WarpForth kernel compiles to PTX that really
does the bad thing it is named for; the syntax error is a classified compile failure."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wfbench_core.case import CONFIGS, sha256_text

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "broken-cases"
PREBUILT = Path(__file__).resolve().parent / "fixtures" / "ptx-broken"
BAD_PTX = ("fault_oob_store", "fault_misaligned_store", "fault_hang", "fault_skip_tail", "fault_no_write",
           "fault_smem_race", "fault_too_many_threads")


def _entry_points() -> dict[str, str]:
    from pyproject_data import entry_points

    return entry_points(PLUGIN / "pyproject.toml")


@pytest.fixture
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The plugin importable as if installed; its entry points, ``{name: module}``."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    for name in list(sys.modules):
        if name.startswith("wfbench_broken_cases"):
            monkeypatch.delitem(sys.modules, name)
    return _entry_points()


@pytest.fixture
def registry(plugin_path):  # type: ignore[no-untyped-def]
    from wfbench_core.discover.registry import Registry

    return Registry.load(list(plugin_path.values()), autoload=False)


def test_installed_it_registers_through_the_entry_point_group(plugin_path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Install metadata as pip writes it (a .dist-info with entry_points.txt), then let wfbench discover it."""
    from wfbench_core.discover.registry import Registry

    dist = tmp_path / "site" / "wfbench_broken_cases-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: wfbench-broken-cases\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[wfbench]\n" + "".join(f"{k} = {v}\n" for k, v in plugin_path.items()))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delenv("WFBENCH_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("WFBENCH_PLUGINS", raising=False)
    reg = Registry.load(autoload=True)
    for name in plugin_path:
        case = reg.cases[name].value
        assert reg.cases[name].plugin == f"{name} (wfbench-broken-cases)"
        assert case.priority == "P1" and case.wf_kernel == case.cuda_kernel == name
    assert "axpy_f64" in reg.cases  # next to the built-in cases


def test_cases_are_well_formed_and_cuda_twins_compile(registry) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler, find_nvcc, ptxas_check
    from wfbench_core.testing import check_case

    for case in (r.value for r in registry.cases.values()):
        if case.id == "fault_too_many_threads":  # its launch is over the block limit on purpose
            assert case.launch(case.sizes["check"]).block == (2048, 1, 1)
            if find_nvcc() is not None:
                ptx = compile_cuda(case.render("check")[1], case_id=case.id, arch="sm_90",
                                   compiler=cuda_compiler("nvcc")).ptx
                ptxas_check(ptx, arch="sm_90", case_id=case.id)
            continue
        check_case(case)


def test_prebuilt_ptx_matches_the_sources(registry) -> None:  # type: ignore[no-untyped-def]
    for cid in BAD_PTX + ("fault_good_scale",):
        case = registry.case(cid)
        for config in CONFIGS:
            recorded = (PREBUILT / f"{cid}.{config}.forth.sha256").read_text().strip()
            assert recorded == sha256_text(case.render(config)[0]), f"{cid}[{config}]: regenerate the PTX fixture"


def _what_is_wrong(cid: str, ptx: str) -> None:
    """Read the PTX: assert it really does the bad thing the case is named for."""
    body = ptx[ptx.index(".entry"):]
    stores = re.findall(r"^\s*st\.\S+\s+\[([^\]]+)\]", body, re.MULTILINE)
    if cid == "fault_oob_store":  # the stored-to base is Y + 2**40
        assert re.search(r"add\.s64\s+%rd\d+, %rd\d+, 1099511627776;", body) and stores
    elif cid == "fault_misaligned_store":  # i64 stored as two b32 halves at Y + 8i + 1: odd addresses
        assert re.search(r"add\.s64\s+%rd\d+, %rd\d+, 1;", body) and any(s.endswith("+4") for s in stores)
        assert all(".b32" in ln for ln in re.findall(r"^\s*st\.\S+", body, re.MULTILINE))
    elif cid == "fault_hang":  # no way out: no ret, and the loop branches back unconditionally
        assert "ret;" not in body and re.search(r"bra\.uni\s+\$L__BB0_\d+;", body)
    elif cid == "fault_skip_tail":  # the loop bound is N - 7
        assert re.search(r"add\.s64\s+%rd\d+, %rd\d+, -7;", body) and stores
    elif cid == "fault_no_write":  # no store at all
        assert stores == []
    elif cid == "fault_smem_race":  # a shared store then a shared load, no barrier between
        assert "st.shared" in body and "ld.shared" in body and "bar.sync" not in body and "barrier" not in body
        assert body.index("st.shared") < body.index("ld.shared")
    elif cid in ("fault_too_many_threads", "fault_good_scale"):
        assert "ret;" in body and stores


@pytest.mark.parametrize("cid", BAD_PTX + ("fault_good_scale",))
def test_prebuilt_ptx_does_the_bad_thing_and_assembles(registry, cid: str) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.compiling.compile import find_nvcc, ptxas_check

    for config in CONFIGS:
        ptx = (PREBUILT / f"{cid}.{config}.ptx").read_text()
        _what_is_wrong(cid, ptx)
        if find_nvcc() is not None:
            ptxas_check(ptx, arch="sm_90", case_id=f"{cid}[{config}]")


@pytest.mark.warpforthc
@pytest.mark.parametrize("cid", BAD_PTX + ("fault_good_scale",))
def test_warpforthc_output_does_what_the_prebuilt_ptx_does(registry, warpforthc: Path, cid: str) -> None:  # type: ignore[no-untyped-def]
    """Whatever LLVM/MLIR this warpforthc was built against (the PTX text differs between builds), it still
    emits the bad thing the case is named for, with the prebuilt kernel's signature."""
    from wfbench_core.compiling.compile import compile_warpforth

    case = registry.case(cid)
    for config in CONFIGS:
        ptx = compile_warpforth(case.render(config)[0], binary=warpforthc, case_id=f"{cid}[{config}]").ptx
        _what_is_wrong(cid, ptx)
        prebuilt = (PREBUILT / f"{cid}.{config}.ptx").read_text()
        assert _signature(ptx) == _signature(prebuilt), \
            f"{cid}[{config}]: warpforthc's kernel signature changed; regenerate tests/fixtures/ptx-broken"


def _signature(ptx: str) -> tuple[str, list[str]]:
    """The entry's name and parameter types, which the source fixes (the body is the compiler's business)."""
    m = re.search(r"\.entry\s+(\w+)\s*\(([^)]*)\)", ptx)
    assert m, "no .entry in the PTX"
    return m.group(1), re.findall(r"\.param\s+\.(\w+)", m.group(2))


@pytest.mark.warpforthc
def test_building_the_plugin_bundle_records_the_syntax_error(plugin_path, warpforthc: Path,  # type: ignore[no-untyped-def]
                                                             tmp_path: Path) -> None:
    from wfbench_core.cli import main

    env = {"WFBENCH_PLUGINS": ",".join(plugin_path.values())}
    ids = ["fault_syntax", "fault_good_scale", "fault_oob_store", "fault_skip_tail"]
    out = tmp_path / "b"
    r = CliRunner().invoke(main, ["build", "--warpforthc", str(warpforthc), "-o", str(out), "-q",
                                  *[a for cid in ids for a in ("-c", cid)]], env=env, catch_exceptions=False)
    assert r.exit_code == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("wfbench: error:")]
    assert errors == ["wfbench: error: 1 case(s) did not compile and are recorded as ERROR in the bundle: "
                      "fault_syntax"]
    assert re.search(r"^ERROR: fault_syntax\[check\] WarpForth: compile failure \(warpforthc\): "
                     r"fault_syntax\[check\]\.forth:\d+:\d+: error: unknown word: FROB$", r.stderr, re.MULTILINE)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["id"] for c in manifest["cases"]] == ids[1:]
    assert list(manifest["failures"]) == ["fault_syntax"]


def test_a_bundle_of_the_prebuilt_ptx_validates_without_a_gpu(plugin_path, registry, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.cli import main
    from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

    ids = list(BAD_PTX) + ["fault_good_scale"]
    bundle_from_ptx([registry.case(c) for c in ids], tmp_path / "b", ptx_dir_loader(PREBUILT))
    r = CliRunner().invoke(main, ["execute", str(tmp_path / "b"), "--validate-only", "--json"],
                           env={"WFBENCH_PLUGINS": ",".join(plugin_path.values())}, catch_exceptions=False)
    assert r.exit_code == 0 and json.loads(r.output)["cases"] == ids
