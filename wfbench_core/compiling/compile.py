"""Compile both sides to PTX: WarpForth through the real ``warpforthc``, CUDA through nvcc or NVRTC.

The canonical CUDA flags keep the numerical contract of WarpForth, which emits ``mul.rn``/``add.rn``
(never fused): ``-fmad=false``. Flags are part of what identifies a series, so they are recorded.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import SupportsInt

import attrs

from wfbench_core.case import CaseKey, sha256_text
from wfbench_core.compiling.cudatools import find_tool, require_tool
from wfbench_core.errors import WfbenchError
from wfbench_core.host.childenv import child_env
from wfbench_core.record.results import CompileRecord, CompilerInfo

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "COMPILE_TIMEOUT_S", "NVCC_FLAGS", "NVRTC_FLAGS", "PREFETCH_WORKERS", "WARPFORTHC_ENV", "CompileError",
    "Compiled", "compile_cuda", "compile_warpforth", "cuda_compiler", "find_nvcc", "find_warpforthc",
    "nvcc_version", "nvrtc_version", "prefetch_cuda", "ptx_problem", "ptx_target", "ptxas_check", "warpforthc_info",
]

WARPFORTHC_ENV = "WFBENCH_WARPFORTHC"
NVCC_FLAGS = ("-O3", "-fmad=false", "-std=c++17")
NVRTC_FLAGS = ("-fmad=false", "-std=c++17")
COMPILE_TIMEOUT_S = 300


class CompileError(WfbenchError):
    """A source did not compile; the message names the case and carries the compiler's diagnostic.

    ``diagnostic`` keeps the compiler's whole output (the message shows its first lines).
    """

    def __init__(self, message: str, diagnostic: str = "") -> None:
        super().__init__(message)
        self.diagnostic = diagnostic


@attrs.frozen
class Compiled:
    ptx: str
    record: CompileRecord


def ptx_target(ptx: str) -> str:
    m = re.search(r"^\s*\.target\s+([\w,]+)", ptx, re.MULTILINE)
    return m.group(1).split(",")[0] if m else ""


def ptx_problem(ptx: str, kernel: str) -> str:
    """Why text is not PTX holding ``kernel`` ("" when it is): what a user-given PTX file is checked for."""
    if not re.search(r"^\s*\.version\s+\d+\.\d+", ptx, re.MULTILINE):
        return "not PTX: no .version directive"
    entries = re.findall(r"\.entry\s+([\w$]+)", ptx)
    if kernel not in entries:
        return f"no kernel {kernel!r} in the PTX (its entries: {', '.join(entries) or 'none'})"
    return ""


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return "; ".join(lines[:6]) if lines else "(no output)"


# -------------------------------------------------------------------------------------------------
# WarpForth
# -------------------------------------------------------------------------------------------------


def find_warpforthc(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The flag, then ``WFBENCH_WARPFORTHC``, then ``PATH``."""
    for candidate, how in ((explicit, "--warpforthc"), (os.environ.get(WARPFORTHC_ENV), WARPFORTHC_ENV)):
        if candidate:
            p = Path(candidate).expanduser()
            if p.is_file() and os.access(p, os.X_OK):
                return p.resolve()
            raise WfbenchError(f"warpforthc given by {how} is not an executable file: {p}")
    found = shutil.which("warpforthc")
    if found:
        return Path(found).resolve()
    raise WfbenchError(
        "warpforthc not found: put it on PATH, set WFBENCH_WARPFORTHC=/path/to/warpforthc, "
        "or pass --warpforthc PATH (build it from https://github.com/tetsuo-cpp/warpforth)"
    )


@functools.lru_cache(maxsize=8)
def warpforthc_info(binary: Path) -> CompilerInfo:
    """Version, LLVM version and whether this build accepts ``--arch``."""
    try:
        help_text = subprocess.run(
            [str(binary), "--help"], capture_output=True, text=True, timeout=60, check=False, env=child_env()
        ).stdout
        version_text = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False, env=child_env()
        ).stdout
    except OSError as exc:
        raise WfbenchError(f"cannot run warpforthc at {binary}: {exc.strerror}") from None
    m = re.search(r"LLVM version\s+([\w.\-+]+)", version_text)
    llvm = m.group(1) if m else ""
    m = re.search(r"warpforth\w*\s+(?:version\s+)?v?(\d[\w.\-+]*)", version_text, re.IGNORECASE)
    version = m.group(1) if m else "unknown"
    arch = bool(re.search(r"^\s*--arch\b", help_text, re.MULTILINE))
    digest = sha256_text(binary.read_bytes())
    if version == "unknown" or version.startswith("llvm-"):
        version = f"build-{digest[:12]}"
    from wfbench_core.compiling.warpforth_build import read_provenance

    built = read_provenance(binary) or {}
    return CompilerInfo(kind="warpforthc", version=version, llvm_version=llvm, arch_flag=arch,
                        flags=("--arch",) if arch else (), binary_sha256=digest,
                        git_repo=str(built.get("git_repo", "")), git_commit=str(built.get("git_commit", "")),
                        git_dirty=bool(built.get("git_dirty", False)), source_id=str(built.get("source_id", "")),
                        recipe=str(built.get("recipe", "")))


def compile_warpforth(source: str, *, binary: Path, case_id: CaseKey | str, arch: str | None = None) -> Compiled:
    """Compile WarpForth source to PTX with ``warpforthc``; ``case_id`` names the case and configuration
    compiled (in the file names and messages)."""
    info = warpforthc_info(binary)
    with tempfile.TemporaryDirectory(prefix="wfbench-") as tmp:
        src = Path(tmp) / f"{case_id}.forth"
        out = Path(tmp) / f"{case_id}.ptx"
        src.write_text(source)
        cmd = [str(binary)]
        if arch and info.arch_flag:
            cmd += ["--arch", arch]
        cmd += [str(src), "-o", str(out)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False,
                                  env=child_env())
        except subprocess.TimeoutExpired:
            raise CompileError(f"{case_id}: warpforthc took over {COMPILE_TIMEOUT_S} s") from None
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not out.exists():
            diag = (proc.stderr or proc.stdout).replace(str(src), f"{case_id}.forth")
            raise CompileError(f"{case_id}: warpforthc failed: {_first_line(diag)}", diag)
        ptx = out.read_text()
    shown = ["warpforthc", *(["--arch", arch] if arch and info.arch_flag else []), f"{case_id}.forth", "-o",
             f"{case_id}.ptx"]
    return Compiled(ptx, CompileRecord("warpforthc", tuple(shown), sha256_text(source), sha256_text(ptx),
                                       ptx_target(ptx), wall))


# -------------------------------------------------------------------------------------------------
# CUDA
# -------------------------------------------------------------------------------------------------


def find_nvcc() -> Path | None:
    """nvcc, found where every CUDA tool is (:mod:`wfbench_core.compiling.cudatools`); None when absent."""
    return find_tool("nvcc")


@functools.lru_cache(maxsize=4)
def nvcc_version(nvcc: Path) -> str:
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60, env=child_env()).stdout
    m = re.search(r"release\s+([\d.]+),\s*V([\d.]+)", out)
    return m.group(2) if m else "unknown"


def nvrtc_version() -> str | None:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return None
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # the library itself may be missing behind the bindings
        return None
    return f"{major}.{minor}" if int(err) == 0 else None


def cuda_compiler(prefer: str = "auto") -> CompilerInfo:
    """nvcc when present (or asked for), else NVRTC from the ``nvidia-cuda-nvrtc`` wheel."""
    if prefer in ("auto", "nvcc"):
        nvcc = find_nvcc()
        if nvcc is not None:
            return CompilerInfo(kind="nvcc", version=nvcc_version(nvcc), flags=NVCC_FLAGS)
        if prefer == "nvcc":
            require_tool("nvcc", why="--cuda-compiler nvcc")
    version = nvrtc_version()
    if version is None:
        raise WfbenchError(
            "no CUDA compiler: install the CUDA toolkit (nvcc) or wfbench's gpu extra (NVRTC), "
            "e.g. pip install 'wfbench[gpu]'"
        )
    return CompilerInfo(kind="nvrtc", version=version, flags=NVRTC_FLAGS)


def compile_cuda(source: str, *, case_id: CaseKey | str, arch: str, compiler: CompilerInfo) -> Compiled:
    """Compile a CUDA C++ source to PTX for ``arch`` (``sm_90``) with the recorded flag set.

    A compile that :func:`prefetch_cuda` started is taken from there (its error, if any, is raised here).
    """
    if compiler.kind == "nvcc":
        ahead = _PREFETCHED.pop((case_id, source, arch, compiler.flags), None)
        if ahead is not None:
            return ahead.result()
        return _compile_nvcc(source, case_id=case_id, arch=arch, flags=compiler.flags)
    return _compile_nvrtc(source, case_id=case_id, arch=arch, flags=compiler.flags)


# compiles started ahead: (case_id, source, arch, flags) -> Future of Compiled
_PREFETCHED: dict[tuple[CaseKey | str, str, str, tuple[str, ...]], concurrent.futures.Future[Compiled]] = {}
PREFETCH_WORKERS = 8  # nvcc processes at once


def prefetch_cuda(sources: Iterable[tuple[CaseKey | str, str]], *, arch: str, compiler: CompilerInfo | None) -> int:
    """Start compiling ``(case_id, source)`` pairs now, in parallel, so that :func:`compile_cuda` later finds
    them done; returns how many were started. Only nvcc (each compile its own process, the GPU idle meanwhile
    or busy with other work); NVRTC compiles in this process and stays on demand."""
    if compiler is None or compiler.kind != "nvcc" or find_nvcc() is None:
        return 0
    todo = [(cid, src) for cid, src in sources if (cid, src, arch, compiler.flags) not in _PREFETCHED]
    if not todo:
        return 0
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(PREFETCH_WORKERS, len(todo)),
                                                 thread_name_prefix="wfbench-nvcc")
    for cid, src in todo:
        _PREFETCHED[(cid, src, arch, compiler.flags)] = pool.submit(
            _compile_nvcc, src, case_id=cid, arch=arch, flags=compiler.flags)
    pool.shutdown(wait=False)  # the threads finish their compiles; nothing waits for them here
    return len(todo)


def _compile_nvcc(source: str, *, case_id: CaseKey | str, arch: str, flags: tuple[str, ...]) -> Compiled:
    nvcc = require_tool("nvcc", why="the CUDA side is compiled with nvcc")
    with tempfile.TemporaryDirectory(prefix="wfbench-") as tmp:
        src = Path(tmp) / f"{case_id}.cu"
        out = Path(tmp) / f"{case_id}.ptx"
        src.write_text(source)
        args = [*flags, "-ptx", f"-arch={arch}", f"{case_id}.cu", "-o", f"{case_id}.ptx"]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([str(nvcc), *args], cwd=tmp, capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S, check=False, env=child_env())
        except subprocess.TimeoutExpired:
            raise CompileError(f"{case_id}: nvcc took over {COMPILE_TIMEOUT_S} s") from None
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not out.exists():
            raise CompileError(f"{case_id}: nvcc failed: {_first_line(proc.stderr or proc.stdout)}",
                               proc.stderr or proc.stdout)
        ptx = out.read_text()
    return Compiled(ptx, CompileRecord("nvcc", ("nvcc", *args), sha256_text(source), sha256_text(ptx),
                                       ptx_target(ptx), wall))


def _compile_nvrtc(source: str, *, case_id: CaseKey | str, arch: str, flags: tuple[str, ...]) -> Compiled:
    from cuda.bindings import nvrtc

    opts = [*flags, f"--gpu-architecture={arch.replace('sm_', 'compute_')}"]
    t0 = time.perf_counter()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{case_id}.cu".encode(), 0, [], [])
    _nvrtc_ok(err, case_id, "create")
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if int(err) != 0:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise CompileError(f"{case_id}: NVRTC failed: {_first_line(log.decode(errors='replace').rstrip(chr(0)))}")
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _nvrtc_ok(err, case_id, "PTX size")
        buf = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, buf)
        _nvrtc_ok(err, case_id, "PTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    ptx = buf.decode().rstrip("\x00")
    wall = time.perf_counter() - t0
    return Compiled(ptx, CompileRecord("nvrtc", ("nvrtc", *opts), sha256_text(source), sha256_text(ptx),
                                       ptx_target(ptx), wall))


def _nvrtc_ok(err: SupportsInt, case_id: CaseKey | str, step: str) -> None:
    if int(err) != 0:
        raise CompileError(f"{case_id}: NVRTC {step} failed with error {int(err)}")


def ptxas_check(ptx: str, *, arch: str, case_id: CaseKey | str) -> str:
    """Assemble PTX with ``ptxas`` (when installed) to prove it is valid for ``arch``; returns its -v report."""
    ptxas = str(require_tool("ptxas", why="it checks PTX without a GPU"))
    with tempfile.TemporaryDirectory(prefix="wfbench-") as tmp:
        src = Path(tmp) / f"{case_id}.ptx"
        src.write_text(ptx)
        proc = subprocess.run([ptxas, f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "out.cubin")],
                              capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False,
                              env=child_env())
    if proc.returncode != 0:
        raise CompileError(f"{case_id}: ptxas rejected the PTX: {_first_line(proc.stderr)}")
    return proc.stderr
