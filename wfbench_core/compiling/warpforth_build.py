"""Build ``warpforthc`` from a WarpForth source tree with WarpForth's own recipe, and cache it.

The recipe is WarpForth's CI: ``cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLIR_DIR=…`` against the
MLIR found here, then only the ``warpforthc`` target. It runs on a scratch copy of the tree (see
:mod:`wfbench_core.compiling.warpforth_source`), where two changes are made and recorded, never in the user's tree:

- ``warpforth-runner`` is left out of ``tools/CMakeLists.txt`` (it needs the CUDA toolkit, and wfbench
  does not use it);
- with MLIR 22 or newer, the one known incompatibility is patched (:data:`EDITS`).

A build is cached by the tree's content and the toolchain, in ``$WFBENCH_CACHE_DIR/warpforthc``
(default ``$XDG_CACHE_HOME/wfbench``, else ``~/.cache/wfbench``). An entry keeps only the binary and the libdevice
bitcode it reads: warpforthc embeds that file's absolute path, so an entry is used where it was built. The
hashes of what the build made are recorded beside the entry (``KEY.sha256``), and an entry is used only when
its files still have them: a binary planted in an entry is rebuilt, never run.
With ``ccache`` installed the builds share their object files (base and head differ in a few files).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from wfbench_core.compiling.warpforth_source import Snapshot, materialize, release
from wfbench_core.errors import WfbenchError
from wfbench_core.host.childenv import child_env
from wfbench_core.record.fsutil import atomic_write

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BINARY", "BUILD_TIMEOUT_S", "CACHE_ENV", "CONFIGURE_TIMEOUT_S", "DEFAULT_LLVM", "EDITS", "LIBDEVICE",
    "MLIR_ENV", "PROVENANCE", "RECIPE_VERSION", "RUNNER_LINE", "Built", "Progress", "SourceEdit", "Toolchain",
    "build", "build_all", "cache_key", "cache_root", "ci_llvm_version", "configure_argv", "find_mlir",
    "find_toolchain", "packages", "prepare_tree", "read_provenance",
]

RECIPE_VERSION = 1  # bump when the recipe below changes what it builds: old cache entries are then not used
CACHE_ENV = "WFBENCH_CACHE_DIR"
MLIR_ENV = "WFBENCH_MLIR_DIR"
BINARY = Path("build/bin/warpforthc")
LIBDEVICE = Path("build/lib/Bitcode/libdevice.10.bc")
PROVENANCE = "warpforthc.wfbench.json"  # next to the binary: what it was built from and how
DEFAULT_LLVM = "20"  # WarpForth's CI's LLVM when its ci.yml cannot be read
CONFIGURE_TIMEOUT_S = 900
BUILD_TIMEOUT_S = 3600
Progress = Callable[[str], None]


@attrs.frozen
class SourceEdit:
    """A change made to the scratch copy so that it builds with a newer MLIR than WarpForth's CI uses."""

    path: str
    old: str
    new: str
    min_mlir: int
    why: str


EDITS = (
    SourceEdit("lib/Conversion/ForthToMemRef/ForthToMemRef.cpp", "NVVM::kSharedMemorySpace",
               "NVVM::NVVMMemorySpace::Shared", 22, "MLIR 22 moved the NVVM shared address space into an enum"),
)
RUNNER_LINE = ("tools/CMakeLists.txt", "add_subdirectory(warpforth-runner)")


# -------------------------------------------------------------------------------------------------
# the toolchain
# -------------------------------------------------------------------------------------------------


@attrs.frozen
class Toolchain:
    cmake: str
    ninja: str
    mlir_dir: Path
    mlir_version: str
    cxx: str
    cxx_version: str
    ccache: str | None = None

    @property
    def mlir_major(self) -> int:
        return int(self.mlir_version.split(".")[0]) if self.mlir_version[:1].isdigit() else 0

    def fingerprint(self) -> dict[str, str]:
        """What a build depends on besides the source (ccache does not change the binary)."""
        return {"mlir_dir": str(self.mlir_dir), "mlir": self.mlir_version, "cxx": self.cxx_version,
                "recipe": str(RECIPE_VERSION)}

    def describe(self) -> str:
        return f"MLIR {self.mlir_version} ({self.mlir_dir}), {self.cxx_version}"


def ci_llvm_version(ci_yml: str | None) -> str | None:
    """The ``LLVM_VERSION`` WarpForth's CI workflow installs (its ``env:``), or None."""
    found = sorted(set(re.findall(r"""^[ \t]*LLVM_VERSION:[ \t]*["']?(\d+)["']?[ \t]*(?:#.*)?$""", ci_yml or "",
                                  re.M)))
    return found[0] if len(found) == 1 else None


def packages(llvm: str | None = None) -> list[str]:
    """Debian/Ubuntu packages of the recipe (LLVM/MLIR from apt.llvm.org for versions Debian lacks)."""
    v = llvm or DEFAULT_LLVM
    return ["cmake", "ninja-build", "g++", f"llvm-{v}-dev", f"libmlir-{v}-dev", f"mlir-{v}-tools"]


def _mlir_version(mlir_dir: Path) -> str:
    for f in (mlir_dir.parent / "llvm" / "LLVMConfigVersion.cmake", mlir_dir / "MLIRConfigVersion.cmake"):
        if f.is_file():
            m = re.search(r'set\(PACKAGE_VERSION\s+"?([\d.]+)', f.read_text(errors="replace"))
            if m:
                return m.group(1)
    m = re.search(r"llvm-(\d+)", str(mlir_dir))
    return m.group(1) if m else "unknown"


def find_mlir() -> Path | None:
    """``$WFBENCH_MLIR_DIR``, else the newest ``/usr/lib/llvm-N/lib/cmake/mlir``, else Homebrew's."""
    given = os.environ.get(MLIR_ENV)
    if given:
        return Path(given) if (Path(given) / "MLIRConfig.cmake").is_file() else None
    found = sorted(Path("/usr/lib").glob("llvm-*/lib/cmake/mlir/MLIRConfig.cmake"),
                   key=lambda p: int(re.sub(r"\D", "", p.parts[3]) or 0))
    for extra in ("/opt/homebrew/opt/llvm/lib/cmake/mlir", "/usr/local/opt/llvm/lib/cmake/mlir"):
        if not found and (Path(extra) / "MLIRConfig.cmake").is_file():
            found = [Path(extra) / "MLIRConfig.cmake"]
    return found[-1].parent if found else None


def _version_line(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60, check=False,
                             env=child_env()).stdout
    except OSError:
        return tool
    return (out.strip().splitlines() or [tool])[0].strip()


def find_toolchain(llvm_hint: str | None = None) -> Toolchain:
    """What the recipe needs, or one line naming the packages to install."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja") or shutil.which("ninja-build")
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    mlir = find_mlir()
    missing = [name for name, found in (("cmake", cmake), ("ninja", ninja), ("a C++ compiler", cxx),
                                        ("MLIR", mlir)) if not found]
    if missing:
        where = f"; or set {MLIR_ENV} to LLVM's lib/cmake/mlir" if mlir is None else ""
        raise WfbenchError(
            f"cannot build warpforthc: {', '.join(missing)} not found; install them (Debian/Ubuntu: "
            f"apt-get install {' '.join(packages(llvm_hint))}, LLVM/MLIR from apt.llvm.org){where}")
    assert cmake and ninja and cxx and mlir
    return Toolchain(cmake=cmake, ninja=ninja, mlir_dir=mlir, mlir_version=_mlir_version(mlir), cxx=cxx,
                     cxx_version=_version_line(cxx), ccache=shutil.which("ccache"))


# -------------------------------------------------------------------------------------------------
# the cache
# -------------------------------------------------------------------------------------------------


def cache_root() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "wfbench"


def cache_key(snap: Snapshot, tc: Toolchain) -> str:
    """The entry's folder name: the commit, and a hash of the tree's content and the toolchain."""
    import hashlib

    text = json.dumps({"tree": snap.content_id, **tc.fingerprint()}, sort_keys=True)
    return f"{snap.commit[:12]}{'-dirty' if snap.dirty else ''}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@attrs.frozen
class Built:
    binary: Path
    provenance: dict[str, object]
    cached: bool


def read_provenance(binary: Path) -> dict[str, object] | None:
    """What wfbench recorded next to a warpforthc it built (None for any other binary)."""
    p = Path(binary).with_name(PROVENANCE)
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _ledger(entry: Path) -> Path:
    """Beside the entry, not in it: the hashes of what the build made there (:func:`_record`)."""
    return entry.with_name(entry.name + ".sha256")


def _contents(entry: Path) -> dict[str, str]:
    """The SHA-256 of each file an entry keeps: the binary, the bitcode it reads, what it was built from."""
    import hashlib

    kept = (BINARY, LIBDEVICE, BINARY.with_name(PROVENANCE))
    return {str(rel): hashlib.sha256((entry / rel).read_bytes()).hexdigest() for rel in kept}


def _record(entry: Path) -> None:
    atomic_write(_ledger(entry), json.dumps({"key": entry.name, "files": _contents(entry)}, indent=1) + "\n")


def _complete(entry: Path) -> bool:
    """A finished build, at the path it was built at (a cache restored elsewhere, say under another home,
    holds binaries that read libdevice from the old path: they are rebuilt), whose files are the ones its
    build recorded beside it: a binary put into an entry by anything but its build is never used."""
    if not ((entry / BINARY).is_file() and (entry / LIBDEVICE).is_file()):
        return False
    built = read_provenance(entry / BINARY)
    if built is None or built.get("built_at") != str(entry):
        return False
    try:
        recorded = json.loads(_ledger(entry).read_text())
        return isinstance(recorded, dict) and recorded == {"key": entry.name, "files": _contents(entry)}
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(snap: Snapshot, *, label: str = "", toolchain: Toolchain | None = None,
          progress: Progress = lambda msg: None) -> Built:
    """warpforthc of ``snap``: from the cache, else built there by the recipe (minutes)."""
    tc = toolchain or find_toolchain(ci_llvm_version(snap.read(".github/workflows/ci.yml")))
    root = cache_root() / "warpforthc"
    key = cache_key(snap, tc)
    entry = root / key
    name = f"warpforthc{' ' + label if label else ''}"
    with _locked(root / f"{key}.lock"):
        if not _complete(entry):
            if (entry / BINARY).exists():
                progress(f"{name}: {entry} holds no finished build made there, or not the files its build "
                         f"recorded; building it again")
            shutil.rmtree(entry, ignore_errors=True)
            _ledger(entry).unlink(missing_ok=True)
            entry.mkdir(parents=True)
            progress(f"{name}: building {snap.short} with WarpForth's recipe, {tc.describe()} (minutes; log: "
                     f"{entry / 'build.log'})")
            _build_entry(entry, root, snap, tc)
            cached = False
        else:
            progress(f"{name}: {snap.short}, cached build ({entry / BINARY})")
            os.utime(entry)  # used now (CI prunes the entries a run did not use before caching them)
            cached = True
    binary = entry / BINARY
    return Built(binary, read_provenance(binary) or {}, cached)


# -------------------------------------------------------------------------------------------------
# the recipe
# -------------------------------------------------------------------------------------------------


def prepare_tree(src: Path, mlir_major: int) -> list[str]:
    """Make the scratch copy buildable here; the changes made, one line each (recorded with the binary)."""
    done = []
    rel, line = RUNNER_LINE
    tools = src / rel
    if tools.is_file() and line in tools.read_text():
        tools.write_text("".join(ln for ln in tools.read_text().splitlines(keepends=True) if ln.strip() != line))
        done.append(f"{rel}: left out warpforth-runner (not used; it needs the CUDA toolkit)")
    for edit in EDITS:
        f = src / edit.path
        if mlir_major >= edit.min_mlir and f.is_file() and edit.old in f.read_text():
            f.write_text(f.read_text().replace(edit.old, edit.new))
            done.append(f"{edit.path}: {edit.old} -> {edit.new} ({edit.why})")
    return done


def configure_argv(tc: Toolchain, src: Path, build_dir: Path) -> list[str]:
    """WarpForth CI's configure (Release, its MLIR_DIR), with Ninja and the tools found here."""
    argv = [tc.cmake, "-S", str(src), "-B", str(build_dir), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tc.ninja}",
            "-DCMAKE_BUILD_TYPE=Release", f"-DMLIR_DIR={tc.mlir_dir}", f"-DCMAKE_CXX_COMPILER={tc.cxx}"]
    if tc.ccache:
        argv += [f"-DCMAKE_CXX_COMPILER_LAUNCHER={tc.ccache}", f"-DCMAKE_C_COMPILER_LAUNCHER={tc.ccache}"]
    return argv


def _run(argv: list[str], log: Path, env: dict[str, str], timeout: float, step: str) -> None:
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(argv)}\n")
        fh.flush()
        try:
            rc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                                check=False).returncode
        except subprocess.TimeoutExpired:
            raise WfbenchError(f"building warpforthc: {step} took over {timeout:g} s; log: {log}") from None
    if rc != 0:
        errors = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if "error" in ln.lower()]
        last = errors[-1] if errors else "(see the log)"
        raise WfbenchError(f"building warpforthc: {step} failed (exit {rc}): {last[:300]}; log: {log}")


def _build_entry(entry: Path, root: Path, snap: Snapshot, tc: Toolchain) -> None:
    """Configure and build in ``entry`` (kept: the binary reads libdevice from there), then trim it."""
    src, build_dir, log = entry / "src", entry / "build", entry / "build.log"
    # the tree under test runs here (its CMakeLists.txt, its build): no secret of this process reaches it
    env = child_env({"CCACHE_BASEDIR": str(root), "CCACHE_NOHASHDIR": "1"})
    try:
        materialize(snap, src)
        edits = prepare_tree(src, tc.mlir_major)
        _run(configure_argv(tc, src, build_dir), log, env, CONFIGURE_TIMEOUT_S, "cmake configure")
        _run([tc.cmake, "--build", str(build_dir), "--target", "warpforthc"], log, env, BUILD_TIMEOUT_S,
             "cmake --build --target warpforthc")
        for needed in (BINARY, LIBDEVICE):
            if not (entry / needed).is_file():
                raise WfbenchError(f"building warpforthc: the build made no {needed}; WarpForth's layout changed? "
                                   f"log: {log}")
    except BaseException:
        release(snap, src)
        for p in entry.iterdir():
            if p != log:
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
        raise
    release(snap, src)
    _trim(build_dir)
    atomic_write(entry / BINARY.with_name(PROVENANCE),
                 json.dumps({**_provenance(snap, tc, edits), "built_at": str(entry)}, indent=1) + "\n")
    _record(entry)


def _trim(build_dir: Path) -> None:
    """Keep the binary and the bitcode it reads; drop the object files."""
    keep = {build_dir / BINARY.relative_to("build"), build_dir / LIBDEVICE.relative_to("build")}
    for dirpath, dirnames, filenames in os.walk(build_dir, topdown=False):
        for f in filenames:
            p = Path(dirpath) / f
            if p not in keep:
                p.unlink()
        for d in dirnames:
            with contextlib.suppress(OSError):
                (Path(dirpath) / d).rmdir()


def _provenance(snap: Snapshot, tc: Toolchain, edits: list[str]) -> dict[str, object]:
    recipe = f"cmake -G Ninja Release, target warpforthc; {tc.describe()}"
    if edits:
        recipe += "; scratch-copy changes: " + "; ".join(edits)
    return {"git_repo": snap.repo, "git_commit": snap.commit, "git_dirty": snap.dirty,
            "source_id": snap.content_id, "recipe": recipe}


def build_all(values: tuple[str, ...], *, progress: Progress = lambda msg: None) -> dict[str, Built]:
    """``--warpforth`` values (``[LABEL=]SPEC``) -> ``{label: Built}``, built or taken from the cache.

    Every spec is pinned to a tree before anything is built, so a bad ref fails in seconds, not after a build.
    """
    import tempfile

    from wfbench_core.compiling.warpforth_source import home_checkout, iter_labels, parse_spec, snapshot

    pairs = list(iter_labels(values))
    home = home_checkout([text for _, text in pairs])
    with tempfile.TemporaryDirectory(prefix="wfbench-clones-") as clones:
        snaps = {label: snapshot(parse_spec(text, home), Path(clones)) for label, text in pairs}
        first = next(iter(snaps.values()))
        tc = find_toolchain(ci_llvm_version(first.read(".github/workflows/ci.yml")))
        return {label: build(snap, label=label, toolchain=tc, progress=progress) for label, snap in snaps.items()}
