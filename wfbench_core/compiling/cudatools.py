"""Finding the CUDA toolkit's command-line tools: nvcc, ptxas, cuobjdump, nvdisasm, ncu, compute-sanitizer.

The one place wfbench looks for them, in one search order for every tool:

1. an explicit path (a command-line option), then the tool's environment variable (:data:`ENV`);
2. ``PATH``;
3. the toolkit folders: ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, ``/usr/local/cuda/bin``, then versioned
   ``/usr/local/cuda-*/bin`` (newest first);
4. the folder of the ``nvcc`` on ``PATH`` (resolved through links);
5. where the tool itself ships outside ``bin``: Nsight Compute in ``<toolkit>/nsight-compute-<version>`` and
   ``/opt/nvidia/nsight-compute/<version>``; compute-sanitizer in ``<toolkit>/compute-sanitizer``; ptxas,
   cuobjdump and nvdisasm in NVIDIA's PyPI wheels (``nvidia-cuda-nvcc``, ``nvidia-cuda-cuobjdump``,
   ``nvidia-cuda-nvdisasm``: ``site-packages/nvidia/cu13/bin`` and the older per-package layouts).
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

from wfbench_core.errors import WfbenchError

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["ENV", "INSTALL_HINT", "WHEEL", "candidates", "find_tool", "require_tool", "require_tools", "toolkit_roots"]

#: Environment variable that names each tool's binary (checked before the search).
ENV = {"nvcc": "WFBENCH_NVCC", "ptxas": "WFBENCH_PTXAS", "cuobjdump": "WFBENCH_CUOBJDUMP",
       "nvdisasm": "NVDISASM_PATH", "ncu": "WFBENCH_NCU", "compute-sanitizer": "WFBENCH_COMPUTE_SANITIZER"}

#: The PyPI wheel of each tool (wfbench's gpu extra installs all three).
WHEEL = {"ptxas": "nvidia-cuda-nvcc>=13,<14", "cuobjdump": "nvidia-cuda-cuobjdump>=13,<14",
         "nvdisasm": "nvidia-cuda-nvdisasm>=13,<14"}

#: What to install when a tool is missing (one line each).
INSTALL_HINT = {
    **{name: f"install the CUDA toolkit or pip install 'wfbench[gpu]' (or '{wheel}')" for name, wheel in WHEEL.items()},
    "ncu": "install Nsight Compute (part of the CUDA toolkit) or pass --ncu PATH",
    "nvcc": "install the CUDA toolkit, put its bin folder on PATH or set CUDA_HOME",
    "compute-sanitizer": "install the CUDA toolkit, put its bin folder on PATH or set CUDA_HOME",
}

#: tools that NVIDIA's PyPI wheels ship (the wheels' nvcc is not used: the toolkit's nvcc or NVRTC is)
_IN_WHEELS = ("ptxas", "cuobjdump", "nvdisasm")

# sub-folders of site-packages/nvidia/ that hold the wheels' binaries (CUDA 13 layout first)
_WHEEL_BIN_DIRS = ("cu13/bin", "cu12/bin", "cuda_nvcc/bin", "cuda_cuobjdump/bin", "cuda_nvdisasm/bin")


def _executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def _wheel_dirs() -> list[Path]:
    """``bin`` folders of the installed ``nvidia-*`` wheels (found without importing anything heavy)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec else []
    return [Path(root) / sub for root in roots for sub in _WHEEL_BIN_DIRS]


def toolkit_roots() -> list[Path]:
    """The CUDA toolkit folders, in search order: ``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda``, versioned."""
    roots = [Path(os.environ[var]) for var in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(var)]
    roots.append(Path("/usr/local/cuda"))
    roots.extend(Path(p) for p in sorted(glob.glob("/usr/local/cuda-*"), reverse=True))
    return roots


def candidates(name: str) -> list[Path]:
    """Every place searched for ``name`` after its explicit path and variable, in order (existing or not)."""
    out: list[Path] = []
    found = shutil.which(name)
    if found:
        out.append(Path(found))
    roots = toolkit_roots()
    out.extend(root / "bin" / name for root in roots)
    nvcc = shutil.which("nvcc")
    if nvcc and name != "nvcc":
        out.append(Path(nvcc).resolve().parent / name)
    if name == "ncu":
        for root in roots:
            out.extend(Path(p) for p in sorted(glob.glob(f"{root}/nsight-compute*/ncu"), reverse=True))
        out.extend(Path(p) for p in sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True))
    elif name == "compute-sanitizer":
        out.extend(root / "compute-sanitizer" / name for root in roots)
    elif name in _IN_WHEELS:
        out.extend(d / name for d in _wheel_dirs())
    return out


def find_tool(name: str, explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The tool's binary, or None when it is nowhere to be found. An explicit path must exist."""
    given = explicit or os.environ.get(ENV.get(name, ""), "")
    if given:
        p = Path(given).expanduser()
        if _executable(p):
            return p
        how = "the given path" if explicit else ENV[name]
        raise WfbenchError(f"{name} at {p} ({how}) is not an executable file; fix the path or unset it")
    for p in candidates(name):
        if _executable(p):
            return p
    return None


def require_tool(name: str, explicit: str | os.PathLike[str] | None = None, *, why: str = "") -> Path:
    """Like :func:`find_tool`, but a missing tool is an error that says what to install."""
    found = find_tool(name, explicit)
    if found is None:
        raise WfbenchError(f"{name} not found{f' ({why})' if why else ''}: {INSTALL_HINT[name]}, "
                           f"or set {ENV[name]}=/path/to/{name}")
    return found


def require_tools(names: tuple[str, ...], *, why: str = "") -> dict[str, Path]:
    """Every tool of ``names``, or one error naming all that are missing and one way to install them all."""
    found = {name: find_tool(name) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        wheels = " ".join(f"'{WHEEL[n]}'" for n in missing if n in WHEEL)
        raise WfbenchError(
            f"{', '.join(missing)} not found{f' ({why})' if why else ''}: install the CUDA toolkit or pip install "
            f"'wfbench[gpu]' (or {wheels}), or set {', '.join(f'{ENV[n]}=/path/to/{n}' for n in missing)}")
    return {name: path for name, path in found.items() if path is not None}
