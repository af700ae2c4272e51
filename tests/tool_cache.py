"""What ptxas and cuobjdump printed for a PTX, kept for the test session: the same PTX is assembled once.

Many tests run the executor's real worker (with the stand-in timer of tests/fake_gpu.py) on the same few PTX files,
and every case run assembles both sides for its static diagnostics (``ptxas -v``, ``cuobjdump -sass`` through
nvdisasm, ``cuobjdump -res-usage -elf``: about a second a side). :func:`cached` wraps
:func:`wfbench_core.compiling.diagnostics.tool_outputs`: the first call for a PTX runs the real tools, a later one
for the same PTX, architecture and tools (their paths, sizes and modification times) reads what they printed from
``folder``. Every parser still reads the tools' real output each time; a tool that fails is never recorded.

The conftest installs it in this process for every test not marked ``gpu`` and names the folder in
:data:`ENV`, which tests/fake_gpu.py reads in the worker it is loaded into.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

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
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_text(json.dumps(list(out)))
        os.replace(part, path)  # whole or absent: several processes share the folder
        return out

    return tool_outputs


def install_from_env() -> None:
    """In a worker process: wrap diagnostics.tool_outputs when :data:`ENV` names a folder."""
    folder = os.environ.get(ENV)
    if folder:
        from wfbench_core.compiling import diagnostics

        if not getattr(diagnostics.tool_outputs, "_test_cached", False):
            wrapped = cached(diagnostics.tool_outputs, Path(folder))
            wrapped._test_cached = True  # type: ignore[attr-defined]
            diagnostics.tool_outputs = wrapped
