"""Public faces: no product module reaches into another's private names, and every module says what it exports.

A private reach is an attribute access ``x._name`` where ``x`` is not ``self`` or ``cls`` and ``_name`` is not
defined in the module that reads it (dunder names aside): such a read couples the reader to another module's
insides. Every product module declares ``__all__``, whose names exist, and the modules the README lists as
the plugin API are the only ones not marked internal.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("wfbench_core", "wfbench_transports", "wfbench_cases")
INTERNAL_MARK = "internal"
# documented, public functions of the standard library despite their underscore
STDLIB_PUBLIC = {"os._exit"}


def _product_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _defined_here(tree: ast.AST) -> set[str]:
    """Every name the module itself defines or binds: functions, classes, assignments, attributes it sets,
    parameters and import aliases."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def private_reaches(source: str) -> list[tuple[int, str]]:
    """(line, ``x._name``) for each read of another module's private name in ``source``."""
    tree = ast.parse(source)
    own = _defined_here(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        expr = f"{ast.unparse(node.value)}.{node.attr}"
        if node.attr in own or expr in STDLIB_PUBLIC:
            continue
        found.append((node.lineno, expr))
    return found


def test_the_check_sees_a_reach_and_its_absence() -> None:
    reach = "def f(run):\n    return run.t._client.open_sftp()\n"
    assert private_reaches(reach) == [(2, "run.t._client")]
    own = "class A:\n    def __init__(self):\n        self._x = 1\n\ndef f(a):\n    return a._x\n"
    assert private_reaches(own) == []
    assert private_reaches("def f(self):\n    return self._y, type(self).__name__\n") == []


def test_no_product_module_reaches_into_another_modules_private_names() -> None:
    reaches = [f"{path.relative_to(ROOT)}:{line}: {expr}"
               for path in _product_files() for line, expr in private_reaches(path.read_text())]
    assert reaches == [], "reads of another module's private names; give the owner a public method:\n" + \
        "\n".join(reaches)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _readme_public_modules() -> set[str]:
    """The top-level modules the README's layout section names as the plugin API."""
    text = (ROOT / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `wfbench_core` |"))
    api = re.search(r"the public plugin API at its top \(([^)]*)\)", row)
    assert api, "README's layout row of wfbench_core no longer names the plugin API"
    return {"wfbench_core"} | {f"wfbench_core.{name}" for name in re.findall(r"`(\w+)`", api.group(1))}


@pytest.mark.parametrize("path", _product_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_declares_what_it_exports(path: Path) -> None:
    name = _module_name(path)
    tree = ast.parse(path.read_text())
    declared = [node for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                and any(isinstance(t, ast.Name) and t.id == "__all__"
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    assert declared, f"{name}: no __all__; list the names other modules may use"
    if name == "wfbench_core.__main__":
        return  # running it runs the command line
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what the module does not define: {missing}"
    line = path.read_text().splitlines()[declared[0].lineno - 2: declared[0].lineno]
    marked = any(INTERNAL_MARK in ln for ln in line)
    if name.startswith("wfbench_cases"):
        assert not marked, f"{name}: a case module is a plugin of its own, not wfbench's insides"
        return
    public = name in _readme_public_modules()
    assert marked != public, (f"{name}: " + ("part of the plugin API (README: Layout) but marked internal" if public
                                           else "not in the README's plugin API: mark its __all__ internal"))
