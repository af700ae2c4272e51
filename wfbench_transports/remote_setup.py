"""Run by the remote transports on the GPU host, with only the standard library (uploaded, not imported).

``python remote_setup.py install TARGET WHEEL...``
    Install wheels into ``TARGET`` with ``pip install --no-deps --no-index --target``; a Python without pip
    gets the (pure-Python) wheels unpacked instead. Prints one JSON line.
``python remote_setup.py probe [--module M]... [--dist D]...``
    Report the interpreter, its version, the home folder, which modules import and which distributions are
    installed (with versions), and where ``wfbench_core`` is imported from. Prints one JSON line.
"""

import importlib
import json
import os
import subprocess
import sys
import zipfile
from typing import Any, Dict, List, Optional  # not list[...]: the GPU host's Python may be older than 3.9

__all__ = ["install", "main", "probe"]  # internal, not the plugin API


def install(target: str, wheels: List[str]) -> int:
    os.makedirs(target, exist_ok=True)
    try:
        importlib.import_module("pip")
    except ImportError:
        pip_ok = False
    else:
        pip_ok = True
    target = os.path.abspath(target)
    if pip_ok:
        # pip reads "path; text" as a requirement with a marker: name the wheels relative to their folder
        folder = os.path.dirname(os.path.abspath(wheels[0])) if wheels else "."
        names = [os.path.join(".", os.path.relpath(os.path.abspath(w), folder)) for w in wheels]
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile",
               "--disable-pip-version-check", "--quiet", "--target", target] + names
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              cwd=folder)
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
            sys.stderr.write("pip install --target failed: " + "; ".join(lines[-4:]) + "\n")
            return 1
        print(json.dumps({"installer": "pip"}))
        return 0
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                path = os.path.normpath(os.path.join(target, name))
                if not path.startswith(os.path.normpath(target) + os.sep):
                    sys.stderr.write("refusing wheel member outside the target: %s\n" % name)
                    return 1
            zf.extractall(target)
    print(json.dumps({"installer": "unzip"}))
    return 0


def probe(modules: List[str], dists: List[str]) -> int:
    found: Dict[str, Optional[str]] = {}
    versions: Dict[str, Optional[str]] = {}
    report: Dict[str, Any] = {
        "python": sys.executable,
        "version": "%d.%d.%d" % sys.version_info[:3],
        "home": os.path.expanduser("~"),
        "modules": found,
        "dists": versions,
        "wfbench_core": None,
    }
    for name in modules:
        try:
            importlib.import_module(name)
            found[name] = None
        except Exception as exc:  # any failure means the module is not usable
            found[name] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
    try:
        from importlib import metadata as _metadata
        metadata: Any = _metadata
    except ImportError:  # before Python 3.8
        metadata = None
    for name in dists:
        version = None
        if metadata is not None:
            try:
                version = metadata.version(name)
            except Exception:  # not installed
                version = None
        versions[name] = version
    try:
        import wfbench_core

        report["wfbench_core"] = os.path.dirname(os.path.abspath(wfbench_core.__file__))
    except Exception as exc:
        report["wfbench_core_error"] = "%s: %s" % (type(exc).__name__, exc)
    print(json.dumps(report))
    return 0


def main(argv: List[str]) -> int:
    if len(argv) >= 2 and argv[0] == "install":
        return install(argv[1], argv[2:])
    if argv and argv[0] == "probe":
        modules: List[str] = []
        dists: List[str] = []
        rest = argv[1:]
        while rest:
            flag, value, rest = rest[0], rest[1] if len(rest) > 1 else "", rest[2:]
            (modules if flag == "--module" else dists).append(value)
        return probe(modules, dists)
    sys.stderr.write("usage: remote_setup.py install TARGET WHEEL... | probe [--module M]... [--dist D]...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
