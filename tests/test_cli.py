"""The command line, and every kind of bad input: one line, a non-zero exit, nothing written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from wfbench_core.cli import main


def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def one_error_line(result) -> str:  # type: ignore[no-untyped-def]
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("wfbench: error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr
    return lines[0]


def gpu_present() -> bool:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    return gpu_unavailable_reason() is None


def test_list_table_and_json() -> None:
    r = invoke("list")
    assert r.exit_code == 0
    assert "axpy_f64" in r.output and "scale_i64" in r.output and "(wfbench)" in r.output
    data = json.loads(invoke("list", "--json").output)
    axpy = next(d for d in data if d["id"] == "axpy_f64")
    assert axpy["version"] >= 1 and axpy["priority"] == "P0" and axpy["sizes"]["canonical"]["N"] > 0
    assert axpy["plugin"] == "axpy_f64 (wfbench)"


def test_transports_lists_local() -> None:
    r = invoke("transports")
    assert r.exit_code == 0 and "local" in r.output


def test_unknown_case_lists_known_ids() -> None:
    r = invoke("run", "-c", "nope")
    assert r.exit_code == 2
    assert "unknown case 'nope'; known cases:" in one_error_line(r)


def test_missing_warpforthc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WFBENCH_WARPFORTHC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    r = invoke("build", "-o", str(tmp_path / "b"))
    assert r.exit_code == 2
    assert "warpforthc not found" in one_error_line(r)
    assert not (tmp_path / "b").exists()


def test_bad_transport_option(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["run", "--transport-opt", "novalue", "--warpforthc", str(tmp_path)])
    assert r.exit_code != 0 and "Traceback" not in r.output


def test_plugin_raising_on_import_is_named_and_others_still_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "exploding_cases.py").write_text("raise ImportError('needs libfoo')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    r = invoke("list", env={"WFBENCH_PLUGINS": "exploding_cases"})
    assert r.exit_code == 0
    assert "wfbench: warning: wfbench plugin 'exploding_cases' failed to import" in r.stderr
    assert "needs libfoo" in r.stderr and "axpy_f64" in r.output


def test_validate_only_checks_a_bundle_without_gpu(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    bundle = prebuilt_bundle()
    r = invoke("execute", str(bundle), "--validate-only")
    assert r.exit_code == 0 and "bundle ok: axpy_f64, scale_i64" in r.output
    r = invoke("execute", str(bundle), "--validate-only", "--json")
    assert json.loads(r.output) == {"valid": True, "cases": ["axpy_f64", "scale_i64"]}


def test_tampered_bundle_is_refused(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    bundle = prebuilt_bundle()
    ptx = bundle / "axpy_f64" / "canonical.ptx"
    ptx.write_text(ptx.read_text() + "\n// edited\n")
    r = invoke("execute", str(bundle), "--validate-only")
    assert r.exit_code == 2
    assert "does not match the hash in the bundle's manifest (case axpy_f64, canonical)" in one_error_line(r)


def test_not_a_bundle(tmp_path: Path) -> None:
    r = invoke("execute", str(tmp_path), "--validate-only")
    assert r.exit_code == 2 and "not a wfbench bundle" in one_error_line(r)
    (tmp_path / "manifest.json").write_text("{")
    r = invoke("execute", str(tmp_path), "--validate-only")
    assert "manifest.json: not a wfbench bundle manifest (truncated JSON" in one_error_line(r)
    (tmp_path / "manifest.json").write_text("{x}")
    r = invoke("execute", str(tmp_path), "--validate-only")
    assert "manifest.json: not a wfbench bundle manifest (not valid JSON" in one_error_line(r)


CHANGED_AXPY = """
    import attrs
    from wfbench_core import hookimpl
    from wfbench_cases.axpy_f64 import CASE

    @hookimpl
    def wfbench_register_cases(register):
        register(attrs.evolve(CASE, version=CASE.version + 1))
"""


def test_bundle_from_another_case_version_is_refused(prebuilt_bundle, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = prebuilt_bundle(case_ids=("axpy_f64",))
    (tmp_path / "axpy_v_next.py").write_text(textwrap.dedent(CHANGED_AXPY))
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"WFBENCH_DISABLE_PLUGIN_AUTOLOAD": "1", "WFBENCH_PLUGINS": "axpy_v_next,wfbench_core.default_timer"}
    r = invoke("execute", str(bundle), "--validate-only", env=env)
    assert r.exit_code == 2
    assert "axpy_f64: the case installed here (v2" in one_error_line(r)


def test_execute_without_gpu_is_one_clear_line(prebuilt_bundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if gpu_present():
        pytest.skip("a GPU is present here")
    out = tmp_path / "r.json"
    r = invoke("execute", str(prebuilt_bundle()), "--out", str(out))
    assert r.exit_code == 3
    line = one_error_line(r)
    assert "no NVIDIA GPU or CUDA driver" in line or "numba-cuda is not installed" in line
    assert not out.exists()


# -- with the real warpforthc ------------------------------------------------------------------------

BROKEN_FORTH = """
    import attrs
    from wfbench_core import hookimpl
    from wfbench_cases.scale_i64 import CASE

    @hookimpl
    def wfbench_register_cases(register):
        register(attrs.evolve(CASE, id="broken_forth", warpforth=CASE.warpforth.replace("K *", "K FROB *")))
"""

BROKEN_CUDA = """
    import attrs
    from wfbench_core import hookimpl
    from wfbench_cases.scale_i64 import CASE

    @hookimpl
    def wfbench_register_cases(register):
        register(attrs.evolve(CASE, id="broken_cuda", cuda=CASE.cuda.replace("k * x[i]", "k * x[i] + nonexistent")))
"""


def test_build_writes_a_bundle(warpforthc: Path, tmp_path: Path) -> None:
    r = invoke("build", "--warpforthc", str(warpforthc), "-o", str(tmp_path / "b"), "-q")
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert {c["id"] for c in manifest["cases"]} >= {"axpy_f64", "scale_i64"}
    assert (tmp_path / "b" / "axpy_f64" / "canonical.ptx").read_text().count(".entry axpy_f64") == 1
    r = invoke("execute", str(tmp_path / "b"), "--validate-only")
    assert r.exit_code == 0


@pytest.mark.parametrize("module, case_id, expect", [
    (BROKEN_FORTH, "broken_forth", "broken_forth[check] WarpForth: compile failure (warpforthc): "
                                   "broken_forth[check].forth:"),
    (BROKEN_CUDA, "broken_cuda", "broken_cuda[canonical] CUDA: compile failure (nvcc): broken_cuda[canonical].cu"),
])
def test_compile_errors_are_recorded_and_the_others_built(warpforthc: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          monkeypatch: pytest.MonkeyPatch, module, case_id,
                                                          expect) -> None:
    if case_id == "broken_cuda":
        from wfbench_core.compiling.compile import find_nvcc

        if find_nvcc() is None:
            pytest.skip("nvcc not installed")
    (tmp_path / f"{case_id}_plugin.py").write_text(textwrap.dedent(module))
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {"WFBENCH_PLUGINS": f"{case_id}_plugin"}
    out = tmp_path / "bundle"
    # --fail-fast: the first failure stops the build, and an earlier good bundle survives it
    assert invoke("build", "--warpforthc", str(warpforthc), "-c", "axpy_f64", "-o", str(out), "-q").exit_code == 0
    before = (out / "manifest.json").read_text()
    r = invoke("build", "--warpforthc", str(warpforthc), "-c", case_id, "-c", "axpy_f64", "-o", str(out), "-q",
               "--fail-fast", env=env)
    assert r.exit_code == 1
    line = one_error_line(r)
    assert expect in line and "error" in line.split(expect, 1)[1] and "--fail-fast" in line
    assert (out / "manifest.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".bundle")) == []
    # default: keep going, record the failure in the bundle, exit 1
    r = invoke("build", "--warpforthc", str(warpforthc), "-c", case_id, "-c", "axpy_f64", "-o", str(out), "-q",
               env=env)
    assert r.exit_code == 1
    assert f"1 case(s) did not compile and are recorded as ERROR in the bundle: {case_id}" in one_error_line(r)
    assert f"ERROR: {expect}" in r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["id"] for c in manifest["cases"]] == ["axpy_f64"]
    assert list(manifest["failures"]) == [case_id] and manifest["failures"][case_id].startswith(expect)
    assert not (out / case_id).exists()
    r = invoke("execute", str(out), "--validate-only", env=env)
    assert r.exit_code == 0 and "axpy_f64" in r.output


def test_run_without_gpu_says_so(warpforthc: Path, tmp_path: Path) -> None:
    if gpu_present():
        pytest.skip("a GPU is present here")
    r = invoke("run", "--warpforthc", str(warpforthc), "-o", str(tmp_path / "r.json"))
    line = one_error_line(r)
    assert r.exit_code == 3 and "no NVIDIA GPU" in line and "--transport ssh or --transport vast" in line
    params = {o for p in main.commands["run"].params for o in p.opts}
    assert all(opt in params for _, opt in _options_named(line, "run")), line
    assert not (tmp_path / "r.json").exists()


def test_max_cost_needs_a_transport_that_rents(tmp_path: Path) -> None:
    fake = tmp_path / "warpforthc"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    r = invoke("run", "--warpforthc", str(fake), "--max-cost", "0.2", "-c", "axpy_f64")
    assert r.exit_code == 2
    assert "--max-cost applies to transports that rent machines; 'local' does not" in one_error_line(r)
    from wfbench_core.discover.registry import Registry

    assert "max_cost" in Registry.load().transport("vast").OPTIONS


def test_local_transport_refuses_options(tmp_path: Path) -> None:
    fake = tmp_path / "warpforthc"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    r = invoke("run", "--warpforthc", str(fake), "--transport-opt", "host=x", "-c", "axpy_f64")
    assert r.exit_code == 2 and "the local transport takes no options; got host" in one_error_line(r)


def _options_named(message: str, command: str) -> list[tuple[str, str]]:
    """(command, option) for each option a message names: after ``wfbench CMD`` it is CMD's, else ``command``'s."""
    import re

    out = []
    for m in re.finditer(r"(?:wfbench (?P<cmd>[a-z-]+)[^;']*?)?(?P<opt>--[a-z][a-z-]*)", message):
        out.append((m.group("cmd") or command, m.group("opt")))
    return out


@pytest.mark.parametrize("command", ["execute", "crosscheck"])
def test_the_no_gpu_hint_names_only_options_of_the_command_that_prints_it(prebuilt_bundle, command: str) -> None:
    from wfbench_core.cli import main as group

    if gpu_present():
        pytest.skip("a GPU is present here")
    r = invoke(command, str(prebuilt_bundle()))
    line = one_error_line(r)
    assert r.exit_code == 3 and ("no NVIDIA GPU" in line or "numba-cuda is not installed" in line), line
    assert "GPU host" in line
    for cmd, option in _options_named(line, command):
        params = {o for p in group.load(cmd).params for o in p.opts}  # loaded on demand, as the CLI does
        assert option in params, f"{command} suggests {option} of {cmd}, which {cmd} does not have: {line}"


def test_the_option_finder_reads_whose_option_it_is() -> None:
    text = "x; copy it (or let 'wfbench run --transport ssh|vast' ship it), then --sanitize"
    assert _options_named(text, "execute") == [("run", "--transport"), ("execute", "--sanitize")]
