"""Small helpers several test modules share: a tool of tools/ loaded as a module, a bundle from the stored PTX,
whether a process lives, and the stand-in GPU for the executor's worker."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wfbench_core.discover.registry import Registry

TOOLS = Path(__file__).resolve().parents[1] / "tools"
TESTS = Path(__file__).resolve().parent
STORED_PTX = TESTS / "fixtures" / "ptx"  # the suite's WarpForth PTX, made earlier by the real warpforthc


def load_tool(name: str) -> ModuleType:
    """``tools/NAME.py`` as a module (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stored_ptx_bundle(case_ids: tuple[str, ...], out: Path, registry: Registry | None = None) -> Path:
    """A real bundle of the built-in cases ``case_ids`` at ``out``, its WarpForth side from :data:`STORED_PTX`."""
    from wfbench_core.discover.registry import Registry
    from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

    reg = registry or Registry.load()
    bundle_from_ptx([reg.case(c) for c in case_ids], out, ptx_dir_loader(STORED_PTX))
    return out


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def use_stand_in_gpu(monkeypatch: Any, **env: str) -> None:
    """The executor's worker times with the stand-in timer of tests/fake_gpu.py: ``WFBENCH_PLUGINS=fake_gpu``, this
    folder on the worker's PYTHONPATH and on this process's sys.path; ``env``: its ``FAKE_GPU_*`` settings."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("WFBENCH_PLUGINS", "fake_gpu")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(TESTS))
