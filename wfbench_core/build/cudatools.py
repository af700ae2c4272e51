"""Finding the CUDA toolkit's command-line tools: ptxas, cuobjdump, nvdisasm, ncu.

One search order for every tool: an explicit path, the tool's environment variable, ``PATH``,
``$CUDA_HOME/bin`` and ``$CUDA_PATH/bin``, ``/usr/local/cuda/bin``, the folder of ``nvcc``, and the
binaries that NVIDIA's PyPI wheels install (``nvidia-cuda-nvcc``, ``nvidia-cuda-cuobjdump``,
``nvidia-cuda-nvdisasm``: ``site-packages/nvidia/cu13/bin`` and the older per-package layouts).
Nsight Compute also lives in its own folders (``/opt/nvidia/nsight-compute/<version>``,
``$CUDA_HOME/nsight-compute-<version>``).
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

from wfbench_core.errors import WfbenchError

#: Environment variable that names each tool's binary (checked before the search).
ENV = {"ptxas": "WFBENCH_PTXAS", "cuobjdump": "WFBENCH_CUOBJDUMP", "nvdisasm": "NVDISASM_PATH",
       "ncu": "WFBENCH_NCU"}

#: The PyPI wheel of each tool (wfbench's gpu extra installs all three).
WHEEL = {"ptxas": "nvidia-cuda-nvcc>=13,<14", "cuobjdump": "nvidia-cuda-cuobjdump>=13,<14",
         "nvdisasm": "nvidia-cuda-nvdisasm>=13,<14"}

#: What to install when a tool is missing (one line each).
INSTALL_HINT = {
    **{name: f"install the CUDA toolkit or pip install 'wfbench[gpu]' (or '{wheel}')" for name, wheel in WHEEL.items()},
    "ncu": "install Nsight Compute (part of the CUDA toolkit) or pass --ncu PATH",
}

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


def candidates(name: str) -> list[Path]:
    """Every place searched for ``name``, in order (existing or not)."""
    out: list[Path] = []
    found = shutil.which(name)
    if found:
        out.append(Path(found))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]) / "bin" / name)
    out.append(Path("/usr/local/cuda/bin") / name)
    nvcc = shutil.which("nvcc")
    if nvcc:
        out.append(Path(nvcc).resolve().parent / name)
    if name == "ncu":
        roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
        for root in filter(None, roots):
            out.extend(Path(p) for p in sorted(glob.glob(f"{root}/nsight-compute*/ncu"), reverse=True))
        out.extend(Path(p) for p in sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True))
    else:
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
