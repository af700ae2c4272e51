"""The one build-and-execute path: a :class:`RunRequest` in, a bundle and a result out.

``wfbench build``, ``wfbench run`` and the pytest plugin all come through here, so a case is selected,
its compiler resolved, its source detected and its bundle built the same way whoever asked.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from wfbench_core.bundle import BundleManifest, build_bundle
from wfbench_core.request import RunRequest
from wfbench_core.results import CompilerInfo, RunResult, write_result

Progress = Callable[[str], None]


def compiler_arg(request: RunRequest) -> Path | dict[str, Path]:
    """What :func:`build_bundle` takes: one binary, or ``{label: binary}`` for base/head."""
    if list(request.compilers) == [""]:
        return request.compilers[""]
    return dict(request.compilers)


def build(request: RunRequest, registry: Any, out_dir: Path, *, arch: Optional[str] = None,
          progress: Progress = lambda msg: None, keep_going: bool = True,
          check_cuda: Optional[CompilerInfo] = None) -> BundleManifest:
    """Compile the request's cases into a bundle folder (see :mod:`wfbench_core.bundle`)."""
    from wfbench_core.executor import detect_source

    cases = [registry.cases[ref.id].value for ref in request.cases]
    first = next(iter(request.compilers.values()))
    return build_bundle(cases, out_dir, warpforthc=compiler_arg(request), arch=arch,
                        source=detect_source(request.commit, first),
                        plugins={ref.id: str(ref.origin) for ref in request.cases}, progress=progress,
                        keep_going=keep_going, check_cuda=check_cuda)


def run(request: RunRequest, registry: Any, transport: Any, *, progress: Progress = lambda msg: None,
        out: Optional[Path] = None, check_cuda: Optional[CompilerInfo] = None) -> RunResult:
    """Build the bundle here, execute it on ``transport``, return the result (also written to ``out``)."""
    arch = transport.gpu_arch()
    with tempfile.TemporaryDirectory(prefix="wfbench-bundle-") as tmp:
        bundle = Path(tmp) / "bundle"
        build(request, registry, bundle, arch=arch, progress=progress, check_cuda=check_cuda)
        result: RunResult = transport.execute(bundle, request.execute, progress=progress, out=out)
    if out is not None:  # the transport may have left partial results there; the whole result replaces them
        write_result(result, out)
    return result
