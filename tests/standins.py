"""Stand-ins for the tools at the edge of building warpforthc: cmake (with ninja and a C++ compiler) and
warpforthc itself. Everything between them and the user is wfbench's real code.

- ``warpforthc`` answers with the PTX the real warpforthc made for each case's source (tests/fixtures/ptx)
  and, like the real one, reads the libdevice bitcode at the absolute path its build baked in. Like a compiler
  built from a pull request could, it reads its parent's environment (``/proc/PPID/environ``) and logs to
  ``$STUB_LOG`` when the Vast.ai key is there.
- ``cmake`` configures (``-S SRC -B BUILD`` or ``-B BUILD``) and builds the ``warpforthc`` target like
  WarpForth's CMakeLists: the binary into ``BUILD/bin``, libdevice into ``BUILD/lib/Bitcode``, object
  files beside them. Each call appends one JSON line to ``$STUB_LOG`` with what it saw in the source tree
  (the line of ForthToMemRef.cpp that MLIR 22 breaks, whether warpforth-runner is still a subdirectory,
  the files present, the names in its environment: what a CMakeLists.txt could read).
  ``STAND_IN_CMAKE_FAIL=configure|build`` makes that step fail as a compiler would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def shebang(python: str = sys.executable) -> str:
    """The first line(s) of a Python script made executable: ``#!PYTHON``, or where PYTHON's path has a space
    (which a ``#!`` line cannot hold), pip's launcher lines: sh runs ``exec "PYTHON" "$0"``, Python sees a string."""
    if " " not in python:
        return f"#!{python}"
    return "#!/bin/sh\n'''exec' \"" + python + "\" \"$0\" \"$@\"\n' '''"


STAND_IN_WARPFORTHC = r'''{shebang}
import hashlib, shutil, sys
from pathlib import Path

LIBDEVICE = {libdevice!r}  # WARPFORTH_LIBDEVICE_PATH: the build tree's absolute path
PTX = Path({ptx!r})
args = sys.argv[1:]
try:  # what a compiler built from a pull request could read: its parent's environment
    import os
    parent = Path(f"/proc/{{os.getppid()}}/environ").read_bytes().split(b"\0")
    if any(v.startswith(b"VAST_API_KEY=") for v in parent) and os.environ.get("STUB_LOG"):
        with open(os.environ["STUB_LOG"], "a") as log:
            log.write("warpforthc: its parent process holds VAST_API_KEY\n")
except OSError:
    pass
if args == ["--help"]:
    print("OVERVIEW: WarpForth compiler (stand-in)\nUSAGE: warpforthc <input> -o <output>")
    sys.exit(0)
if args == ["--version"]:
    print("warpforthc version 0.1.0\n  LLVM version 20.1.8")
    sys.exit(0)
if not Path(LIBDEVICE).is_file():
    sys.exit(f"warpforthc: error: cannot open libdevice bitcode {{LIBDEVICE}}: No such file or directory")
src, out = Path(args[0]), Path(args[args.index("-o") + 1])
digest = hashlib.sha256(src.read_bytes()).hexdigest()
for known in PTX.glob("*.forth.sha256"):
    if known.read_text().strip() == digest:
        shutil.copy(known.with_name(known.name.replace(".forth.sha256", ".ptx")), out)
        sys.exit(0)
sys.exit(f"warpforthc: error: {{src.name}}: a source the stand-in has no PTX for")
'''

STAND_IN_CMAKE = r'''{shebang}
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
record = {{"args": args, "env": sorted(os.environ)}}  # what the tree's CMakeLists.txt could read
fail = os.environ.get("STAND_IN_CMAKE_FAIL", "")


def log(**more):
    with open(os.environ["STUB_LOG"], "a") as fh:
        fh.write(json.dumps({{**record, **more}}) + "\n")


if args[0] != "--build":
    src = Path(args[args.index("-S") + 1]) if "-S" in args else Path.cwd()
    build = Path(args[args.index("-B") + 1])
    memref = src / "lib/Conversion/ForthToMemRef/ForthToMemRef.cpp"
    tools = src / "tools/CMakeLists.txt"
    log(step="configure", src=str(src),
        memref=[ln.strip() for ln in memref.read_text().splitlines() if "MemorySpace" in ln] if memref.is_file() else None,
        runner="warpforth-runner" in tools.read_text() if tools.is_file() else None,
        files=sorted(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file() and ".git" not in p.parts))
    if fail == "configure":
        print("CMake Error at CMakeLists.txt:7 (find_package): error: Could not find a package configuration file "
              "provided by MLIR")
        sys.exit(1)
    build.mkdir(parents=True, exist_ok=True)
    (build / "CMakeCache.txt").write_text(" ".join(args))
    sys.exit(0)
build = Path(args[1]).resolve()
target = args[args.index("--target") + 1] if "--target" in args else "all"
log(step="build", target=target)
if not (build / "CMakeCache.txt").is_file():
    sys.exit(f"cmake: error: {{build}} is not a configured build tree")
if fail == "build":
    print("[12/200] Building CXX object lib/Conversion/ForthToMemRef.cpp.o\n"
          "ForthToMemRef.cpp:35:37: error: no member named 'kSharedMemorySpace' in namespace 'mlir::NVVM'")
    sys.exit(1)
if target in ("all", "warpforthc"):
    libdevice = build / "lib" / "Bitcode" / "libdevice.10.bc"
    libdevice.parent.mkdir(parents=True, exist_ok=True)
    libdevice.write_bytes(b"BC\xc0\xde")
    (build / "lib" / "Conversion.o").write_bytes(b"\x7fELF object")
    exe = build / "bin" / "warpforthc"
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(os.environ["STAND_IN_WARPFORTHC"].replace("@LIBDEVICE@", str(libdevice)))
    exe.chmod(0o755)
'''

STAND_IN_CXX = '#!/bin/sh\necho "c++ (stand-in) 12.2.0"\n'
STAND_IN_NINJA = '#!/bin/sh\necho "1.11.1"\n'


def warpforthc_text(python: str = sys.executable) -> str:
    """The stand-in warpforthc, with ``@LIBDEVICE@`` where its build writes the bitcode's path."""
    return STAND_IN_WARPFORTHC.format(shebang=shebang(python), libdevice="@LIBDEVICE@", ptx=str(FIXTURES / "ptx"))


def toolchain(root: Path, *, mlir_version: str = "22.1.8") -> dict[str, str]:
    """A stand-in cmake, ninja and c++ in ``root/bin`` and an MLIR install in ``root/llvm``: the environment
    (to add to ``os.environ``) that makes wfbench find them, with ``STUB_LOG`` at ``root/stub.log``."""
    bin_dir, mlir = root / "bin", root / "llvm" / "lib" / "cmake" / "mlir"
    bin_dir.mkdir(parents=True, exist_ok=True)
    mlir.mkdir(parents=True, exist_ok=True)
    (mlir / "MLIRConfig.cmake").write_text("# stand-in\n")
    (mlir.parent / "llvm").mkdir(exist_ok=True)
    (mlir.parent / "llvm" / "LLVMConfigVersion.cmake").write_text(f'set(PACKAGE_VERSION "{mlir_version}")\n')
    for name, text in (("cmake", STAND_IN_CMAKE.format(shebang=shebang())), ("ninja", STAND_IN_NINJA),
                       ("c++", STAND_IN_CXX)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (root / "stub.log").touch()
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "WFBENCH_MLIR_DIR": str(mlir),
            "STUB_LOG": str(root / "stub.log"), "STAND_IN_WARPFORTHC": warpforthc_text(), "CXX": str(bin_dir / "c++")}
