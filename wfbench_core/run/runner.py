"""The one build-and-execute path: a :class:`RunRequest` in, a bundle and a result out.

``wfbench build``, ``wfbench run`` and the pytest plugin all come through here, so a case is selected,
its compiler resolved, its source detected and its bundle built the same way whoever asked.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from wfbench_core.compiling.bundle import BundleManifest, build_bundle
from wfbench_core.record.request import RunRequest
from wfbench_core.record.results import CompilerInfo, RunResult, write_result

__all__ = ["Progress", "build", "compiler_arg", "run"]  # internal, not the plugin API

Progress = Callable[[str], None]


def compiler_arg(request: RunRequest) -> Path | dict[str, Path]:
    """What :func:`build_bundle` takes: one binary, or ``{label: binary}`` for base/head."""
    if list(request.compilers) == [""]:
        return request.compilers[""]
    return dict(request.compilers)


def _cuda_checker(enabled: bool) -> CompilerInfo | None:
    """The nvcc to check CUDA sources with at build time, or None (not asked for, or no nvcc here)."""
    from wfbench_core.compiling.compile import cuda_compiler, find_nvcc

    return cuda_compiler("nvcc") if enabled and find_nvcc() is not None else None


def build(request: RunRequest, registry: Any, out_dir: Path, *, arch: str | None = None,
          progress: Progress = lambda msg: None, keep_going: bool = True,
          sweeps: dict[str, list[dict[str, int]]] | None = None) -> BundleManifest:
    """Compile the request's cases into a bundle folder (see :mod:`wfbench_core.compiling.bundle`); with
    ``request.check_cuda`` the CUDA sources are also compiled here, to fail before anything is shipped.
    ``sweeps`` (case id -> sizes) adds those sweep points (``wfbench sweep --bundle``)."""
    from wfbench_core.compiling.provenance import detect_source

    cases = [registry.cases[ref.id].value for ref in request.cases]
    # the tree under test: the head compiler's in a base/head run
    first = request.compilers.get("head") or next(iter(request.compilers.values()))
    return build_bundle(cases, out_dir, warpforthc=compiler_arg(request), arch=arch,
                        source=detect_source(request.commit, first),
                        plugins={ref.id: str(ref.origin) for ref in request.cases}, progress=progress,
                        keep_going=keep_going, check_cuda=_cuda_checker(request.check_cuda), sweeps=sweeps)


def run(request: RunRequest, registry: Any, transport: Any, *, progress: Progress = lambda msg: None,
        out: Path | None = None, bundle: Path | None = None) -> RunResult:
    """Build the bundle here, execute it on ``transport``, return the result (also written to ``out``).

    With ``bundle`` (made earlier by ``wfbench build``) nothing is compiled here: no warpforthc runs in the
    process that holds a transport's credentials. The CUDA sources are checked here only for a remote
    transport: the local one compiles them right away.
    """
    if bundle is not None:
        result: RunResult = transport.execute(bundle, request.execute, progress=progress, out=out)
        if out is not None:
            write_result(result, out)
        return result
    arch = transport.gpu_arch()
    with tempfile.TemporaryDirectory(prefix="wfbench-bundle-") as tmp:
        built = Path(tmp) / "bundle"
        build(attrs.evolve(request, check_cuda=request.check_cuda and request.transport != "local"), registry,
              built, arch=arch, progress=progress)
        result = transport.execute(built, request.execute, progress=progress, out=out)
    if out is not None:  # the transport may have left partial results there; the whole result replaces them
        write_result(result, out)
    return result
