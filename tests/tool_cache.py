"""What ptxas and cuobjdump printed for a PTX, and nvcc's PTX of a CUDA source, kept for the test session: the same
PTX is assembled once, the same source compiled once.

Many tests run the executor's real worker (with the stand-in timer of tests/fake_gpu.py) on the same few PTX files,
and every case run assembles both sides for its static diagnostics (``ptxas -v``, ``cuobjdump -sass`` through
nvdisasm, ``cuobjdump -res-usage -elf``: about a second a side). :func:`cached` wraps
:func:`wfbench_core.compiling.diagnostics.tool_outputs`: the first call for a PTX runs the real tools, a later one
for the same PTX, architecture and tools (their paths, sizes and modification times) reads what they printed from
``folder``. Every parser still reads the tools' real output each time; a tool that fails is never recorded.
:func:`cached_nvcc` does the same for :func:`wfbench_core.compiling.compile._compile_nvcc` (each worker compiles
its cases' CUDA side, about half a second a configuration): the same source, case, architecture, flags and nvcc
give the PTX and compile record nvcc gave the first time; a source nvcc refuses is compiled every time.

The conftest installs both in this process for every test not marked ``gpu`` and names the folder in
:data:`ENV`, which tests/fake_gpu.py reads in the worker it is loaded into, tests/cached_cli.py in a CLI process,
and the plugin ``kept_tools`` in every wfbench process of a simulated workflow job (tests/workflow_kit.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ENV = "WFBENCH_TEST_TOOL_CACHE"

ToolOutputs = Callable[..., tuple[str, str, str]]


def _stamp(path: Path) -> list[object]:
    st = Path(path).resolve().stat()
    return [str(path), st.st_size, st.st_mtime_ns]


def cached(run: ToolOutputs, folder: Path) -> ToolOutputs:
    """``run`` (diagnostics.tool_outputs) with its answers kept in ``folder``, by PTX, architecture and tools."""

    def tool_outputs(ptx: str, arch: str, tools: Mapping[str, Path], *, what: str) -> tuple[str, str, str]:
        key = json.dumps([ptx, arch, sorted((name, *_stamp(p)) for name, p in tools.items())])
        path = Path(folder) / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
        try:
            report, listing, elf = json.loads(path.read_text())
            return report, listing, elf
        except (OSError, ValueError):
            pass
        out = run(ptx, arch, tools, what=what)
        _keep(path, list(out))
        return out

    return tool_outputs


def _keep(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    part.write_text(json.dumps(value))
    os.replace(part, path)  # whole or absent: several processes share the folder


def cached_nvcc(run: Callable[..., Any], folder: Path) -> Callable[..., Any]:
    """``run`` (compile._compile_nvcc) with its answers kept in ``folder``, by source, case, architecture, flags
    and nvcc."""
    from wfbench_core.compiling.compile import Compiled, find_nvcc
    from wfbench_core.record.results import CompileRecord

    def compile_nvcc(source: str, *, case_id: Any, arch: str, flags: tuple[str, ...]) -> Any:
        nvcc = find_nvcc()
        if nvcc is None:
            return run(source, case_id=case_id, arch=arch, flags=flags)
        key = json.dumps([source, str(case_id), arch, list(flags), _stamp(nvcc)])
        path = Path(folder) / f"nvcc-{hashlib.sha256(key.encode()).hexdigest()}.json"
        try:
            kept = json.loads(path.read_text())
            record = kept["record"]
            return Compiled(kept["ptx"], CompileRecord(record[0], tuple(record[1]), *record[2:]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        out = run(source, case_id=case_id, arch=arch, flags=flags)
        r = out.record
        _keep(path, {"ptx": out.ptx, "record": [r.compiler, list(r.command), r.source_sha256, r.ptx_sha256,
                                                 r.ptx_target, r.wall_s]})
        return out

    return compile_nvcc


def install(setattr: Callable[[Any, str, Any], None], folder: Path) -> None:
    """Wrap diagnostics.tool_outputs and compile._compile_nvcc with ``setattr`` (a monkeypatch's, or the
    built-in one in a worker process)."""
    from wfbench_core.compiling import compile as comp
    from wfbench_core.compiling import diagnostics

    if not getattr(diagnostics.tool_outputs, "_test_cached", False):
        wrapped = cached(diagnostics.tool_outputs, folder)
        wrapped._test_cached = True  # type: ignore[attr-defined]
        setattr(diagnostics, "tool_outputs", wrapped)
    if not getattr(comp._compile_nvcc, "_test_cached", False):
        nvcc = cached_nvcc(comp._compile_nvcc, folder)
        nvcc._test_cached = True  # type: ignore[attr-defined]
        setattr(comp, "_compile_nvcc", nvcc)


def install_from_env() -> None:
    """In a worker process: :func:`install` when :data:`ENV` names a folder."""
    folder = os.environ.get(ENV)
    if folder:
        install(setattr, Path(folder))
