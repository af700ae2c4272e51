"""The layout by stage: each stage of wfbench_core imports only the stages below it, with no import circles.

The stages and their order are the import-linter contract in pyproject.toml. One test copies the package, adds
one import that points back up, and shows that both checks catch it. The product files are short: none over 500
lines, no function over 60. The import checks need the dev extra's import-linter (and its grimp); without it
they skip, saying so, and the size checks still run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "wfbench_core"


def _dev(name: str) -> ModuleType:
    """A module of the dev extra (``pip install -e '.[dev]'``); the test skips without it."""
    return pytest.importorskip(name, reason=f"{name} is in the dev extra: pip install -e '.[dev]'")


def _use_cases() -> Any:
    _dev("importlinter.api")  # configures import-linter (its readers and contract types)
    return _dev("importlinter.application.use_cases")


def _lint(config: Path) -> bool:
    """import-linter's own check of every contract in ``config``; its report goes to standard output."""
    return _use_cases().lint_imports(config_filename=str(config), cache_dir=None, no_logo=True)


def _circles(package: str, exclude_type_checking: bool) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    graph = _dev("grimp").build_graph(package, exclude_type_checking_imports=exclude_type_checking, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def _exclude_type_checking() -> bool:
    options = _use_cases().read_user_options(str(ROOT / "pyproject.toml"))
    return str(options.session_options.get("exclude_type_checking_imports", "")).lower() in ("true", "1")


def test_stages_import_only_downwards(capsys: pytest.CaptureFixture[str]) -> None:
    kept = _lint(ROOT / "pyproject.toml")
    assert kept, capsys.readouterr().out


def test_no_import_circles() -> None:
    assert _circles(PACKAGE, _exclude_type_checking()) == []


def test_no_import_circles_even_through_type_checking_imports() -> None:
    """A record imported only for its type still points one way: no circle counting those imports either."""
    assert _circles(PACKAGE, exclude_type_checking=False) == []


def test_a_back_arrow_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of the package (renamed, so that the installed one is not found instead) with one import from
    the statistics stage up to the executor: the contract breaks, naming that import, and a circle appears."""
    probe = "wfbench_layout_probe"
    shutil.copytree(ROOT / PACKAGE, tmp_path / probe, ignore=shutil.ignore_patterns("__pycache__", "*.js", "*.css"))
    for path in (tmp_path / probe).rglob("*.py"):
        path.write_text(path.read_text(encoding="utf-8").replace(PACKAGE, probe), encoding="utf-8")
    stats = tmp_path / probe / "stats" / "summary.py"
    stats.write_text(stats.read_text(encoding="utf-8") + f"\nfrom {probe}.run import executor  # back up\n")
    config = tmp_path / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    config.write_text(text[text.index("[tool.importlinter]"):].replace(f'"{PACKAGE}"', f'"{probe}"'))
    monkeypatch.syspath_prepend(str(tmp_path))

    assert _lint(config) is False
    out = " ".join(capsys.readouterr().out.split())  # the report is wrapped to the terminal's width (COLUMNS)
    assert f"{probe}.stats.summary -> {probe}.run.executor" in out
    assert any({f"{probe}.stats.summary", f"{probe}.run.executor"} <= set(group)
               for group in _circles(probe, exclude_type_checking=True))


PUBLIC_API = ("wfbench_core", "wfbench_core.case", "wfbench_core.contracts", "wfbench_core.hookspecs",
              "wfbench_core.testing", "wfbench_core.errors", "wfbench_core.pytest_plugin", "wfbench_core.default_timer")


def _resolves(ref: str, home: str) -> bool:
    """``ref`` names something that exists: absolute (``wfbench_core.x.Y``) or inside ``home``."""
    import importlib

    for candidate in (ref, f"{home}.{ref}"):
        parts = candidate.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attribute in parts[cut:]:
                    obj = getattr(obj, attribute)
            except AttributeError:
                break
            return True
    return False


@pytest.mark.parametrize("module", PUBLIC_API)
def test_public_api_cross_references_resolve(module: str) -> None:
    """Every :class:/:func:/:mod:/:meth: reference in the plugin API's docstrings names something real."""
    import importlib
    import re

    source = Path(importlib.import_module(module).__file__ or "").read_text(encoding="utf-8")
    refs = set(re.findall(r":(?:class|func|mod|meth|data|attr):`~?([\w.]+)`", source))
    assert sorted(r for r in refs if not _resolves(r, module)) == []


PRODUCT = ("wfbench_core", "wfbench_cases", "wfbench_transports")
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60


def _too_long(name: str, source: str) -> list[str]:
    """A file over :data:`MAX_FILE_LINES` lines and each function over :data:`MAX_FUNCTION_LINES` (decorators not
    counted: ``end_lineno - lineno + 1`` of the ``def``)."""
    import ast

    found = []
    lines = len(source.splitlines())
    if lines > MAX_FILE_LINES:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_product_file_over_500_lines_and_no_function_over_60() -> None:
    found = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += _too_long(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    assert found == []


def test_a_long_file_and_a_long_function_are_caught() -> None:
    def function(lines: int) -> str:  # a ``def`` line and ``lines - 1`` statements
        return "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(lines - 1))

    assert _too_long("fits.py", function(MAX_FUNCTION_LINES)) == []
    assert _too_long("long.py", function(MAX_FUNCTION_LINES + 1)) == [f"long.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
    assert _too_long("fits.py", "x = 1\n" * MAX_FILE_LINES) == []
    assert _too_long("big.py", "x = 1\n" * (MAX_FILE_LINES + 1)) == [f"big.py: {MAX_FILE_LINES + 1} lines"]


# the dev extra's modules no test may need to be collected (a GPU host may install only '.[gpu]')
DEV_ONLY = ("grimp", "importlinter", "yaml", "playwright", "setuptools", "wheel", "xdist", "actionlint")


def test_the_gpu_tests_collect_without_the_dev_extra() -> None:
    """``pytest -m gpu`` on a host without the dev extra: every test module is collected (a test that needs a
    dev-only module skips, saying which), none stops the run at collection."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys, pytest
        class Missing:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {DEV_ONLY!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, Missing())
        sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-m", "gpu", "tests"]))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    import re

    assert re.search(r"^\d+/\d+ tests collected", proc.stdout, re.M) and not re.search(r"\d+ errors?\b", proc.stdout)
