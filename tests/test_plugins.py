"""Hooks and the registry: entry points, explicit plugins, duplicates, broken plugins, the timer choice."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path
from typing import Any

import attrs
import pytest

from wfbench_core import hookimpl
from wfbench_core.errors import WfbenchError
from wfbench_core.discover.plugins import PluginLoadWarning, get_plugin_manager
from wfbench_core.discover.registry import DuplicateError, Registry

BUILTIN_CASES = {"axpy_f64", "scale_i64"}


def _write_module(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body))


def _write_dist(folder: Path, dist: str, entry_points: dict[str, str]) -> None:
    """A real installed distribution (dist-info on sys.path) declaring entry points of group wfbench."""
    info = folder / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[wfbench]\n{lines}\n")


COPY_OF_AXPY = """
    import attrs
    from wfbench_core import hookimpl
    from wfbench_cases.axpy_f64 import CASE

    @hookimpl
    def wfbench_register_cases(register):
        register(attrs.evolve(CASE, summary="same id, other plugin"))
"""


def test_builtins_register_through_entry_points() -> None:
    reg = Registry.load()
    assert BUILTIN_CASES <= set(reg.cases)
    assert reg.cases["axpy_f64"].plugin == "axpy_f64 (wfbench)"
    assert "local" in reg.transports
    assert reg.make_timer(protocol=None).__class__.__name__ == "CudaEventTimer"


def test_autoload_switch_turns_off_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WFBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = Registry.load()
    assert reg.cases == {} and reg.transports == {}
    reg = Registry.load(["wfbench_cases.axpy_f64"])
    assert set(reg.cases) == {"axpy_f64"}
    assert reg.cases["axpy_f64"].plugin == "wfbench_cases.axpy_f64"


def test_named_plugins_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WFBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("WFBENCH_PLUGINS", "wfbench_cases.scale_i64, wfbench_transports.local")
    reg = Registry.load()
    assert set(reg.cases) == {"scale_i64"} and set(reg.transports) == {"local"}


def test_duplicate_case_names_both_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_module(tmp_path, "dup_axpy_plugin", COPY_OF_AXPY)
    _write_dist(tmp_path, "wfbench-dup-axpy", {"dup_axpy": "dup_axpy_plugin"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DuplicateError) as exc:
        Registry.load()
    msg = str(exc.value)
    assert "'axpy_f64'" in msg and "axpy_f64 (wfbench)" in msg and "dup_axpy (wfbench-dup-axpy)" in msg


def test_plugin_failing_to_import_is_named_and_others_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_module(tmp_path, "broken_plugin", "raise RuntimeError('missing dependency xyz')\n")
    _write_dist(tmp_path, "wfbench-broken", {"broken": "broken_plugin"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = Registry.load()
    msgs = [str(w.message) for w in caught if issubclass(w.category, PluginLoadWarning)]
    assert len(msgs) == 1
    assert "'broken' (from wfbench-broken)" in msgs[0] and "missing dependency xyz" in msgs[0]
    assert BUILTIN_CASES <= set(reg.cases)


def test_named_plugin_failing_to_import_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WFBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    with pytest.warns(PluginLoadWarning, match="no_such_wfbench_plugin"):
        reg = Registry.load(["no_such_wfbench_plugin", "wfbench_cases.axpy_f64"])
    assert set(reg.cases) == {"axpy_f64"}


def test_registering_something_that_is_not_a_case_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WFBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")

    class Bad:
        @hookimpl
        def wfbench_register_cases(self, register):  # type: ignore[no-untyped-def]
            register({"id": "nope"})

    with pytest.raises(WfbenchError, match="not a wfbench_core.case.Case"):
        Registry.load([Bad()])


def test_a_plugin_timer_replaces_the_default() -> None:
    sentinel = object()

    class MyTimer:
        @hookimpl
        def wfbench_make_timer(self, protocol):  # type: ignore[no-untyped-def]
            return sentinel

    reg = Registry.load([MyTimer()])
    assert reg.make_timer(protocol=None) is sentinel


def test_misspelled_hook_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WFBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")

    class Typo:
        @hookimpl
        def wfbench_register_case(self, register):  # type: ignore[no-untyped-def]
            pass

    from pluggy import PluginValidationError

    with pytest.raises(PluginValidationError):
        get_plugin_manager([Typo()])


def test_unknown_case_lists_known_ones() -> None:
    with pytest.raises(WfbenchError, match=r"unknown case 'nope'; known cases: .*axpy_f64.*scale_i64"):
        Registry.load().case("nope")


def test_a_transport_without_options_is_refused() -> None:
    class Bare:
        name = "bare"
        summary = "a transport that forgot its OPTIONS"

    class Plugin:
        @hookimpl
        def wfbench_register_transports(self, register: Any) -> None:
            register("bare", Bare)

    with pytest.raises(WfbenchError, match=r"registered transport .*Bare.* without an OPTIONS mapping .*"
                                           r"declare OPTIONS = \{\}"):
        Registry.load([Plugin()], autoload=False)


def test_every_hook_is_documented() -> None:
    from wfbench_core import hookspecs

    names = [n for n in dir(hookspecs) if n.startswith("wfbench_")]
    assert names, "no hooks found"
    for name in names:
        doc = getattr(hookspecs, name).__doc__ or ""
        assert doc.strip(), f"hook {name} has no docstring"
        first = doc.strip().splitlines()[0]
        assert first.endswith("."), f"hook {name}: first docstring line should be one sentence"


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    """docs/plugins.md has a heading per hook whose signature is the hook specification's, and no other."""
    import inspect
    import re

    from wfbench_core import hookspecs

    def shown(annotation: object) -> str:
        return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    specs = {name: getattr(hookspecs, name) for name in dir(hookspecs) if name.startswith("wfbench_")}
    doc = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text()
    documented = dict(re.findall(r"^### `(wfbench_\w+)(\(.*\) -> .*)`$", doc, re.M))
    assert set(documented) == set(specs), "docs/plugins.md documents other hooks than hookspecs.py"
    for name, spec in specs.items():
        sig = inspect.signature(spec)
        params = ", ".join(f"{p.name}: {shown(p.annotation)}" for p in sig.parameters.values())
        assert documented[name] == f"({params}) -> {shown(sig.return_annotation)}", f"{name}: signature differs"


def test_selection_orders_p0_first() -> None:
    reg = Registry.load()
    ids = [c.id for c in reg.select()]
    prios = [reg.cases[i].value.priority for i in ids]
    assert prios == sorted(prios)
    assert [c.id for c in reg.select(["scale_i64", "axpy_f64", "scale_i64"])] == ["scale_i64", "axpy_f64"]
    assert attrs.has(type(reg.case("axpy_f64")))
