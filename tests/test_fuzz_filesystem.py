"""Fuzz: every command that writes, pointed at a place it cannot write, through a real process.

Each writing command (``history add``, ``history reindex``, ``dashboard --out``, ``export -o``, ``build -o``,
``pr-comment -o``, ``explain -o`` where nvcc is installed, ``new-case``) is run with its output in each of these
file-system states:

- **unprivileged**: a folder of root's, the command run as ``nobody`` (``setpriv``; skipped unless the tests
  run as root);
- **read-only**: the folder bind-mounted read-only in a mount namespace of its own (``unshare -m``);
- **full**: a 64 KiB tmpfs filled up first, in a mount namespace of its own;
- **symlink loop**: the output path is one of two symbolic links that point at each other.

What must hold: a non-zero exit, no traceback, and exactly one ``wfbench: error:`` line that names the path.
A lock held by another process is in tests/test_history.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

import standins
from testkit import STORED_PTX, stored_ptx_bundle  # tests/testkit.py
from wfbench_core.cli import main

ROOT = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
RUN = sorted((ROOT / "examples" / "history" / "runs").rglob("*.json"))[0]
STATES = ("unprivileged", "read-only", "full", "symlink loop")
CACHED_CLI = Path(__file__).with_name("cached_cli.py")  # python -m wfbench_core, with tests/tool_cache.py


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """What the commands read, in a folder everyone can read: a result, a history, a base/head result and its
    bundle, a stand-in warpforthc."""
    src = Path(tempfile.mkdtemp(prefix="wfbench-fs-"))
    src.chmod(0o755)
    shutil.copy(RUN, src / "r.json")
    shutil.copy(FIXTURES / "h200-run-bh.json", src / "bh.json")
    assert CliRunner().invoke(main, ["history", "add", str(src / "r.json"), "--history", str(src / "hist")]).exit_code == 0
    stored_ptx_bundle(("scale_i64",), src / "bundle")
    wfc = src / "warpforthc"
    wfc.write_text(standins.warpforthc_text().replace("@LIBDEVICE@", str(src / "libdevice.bc")))
    wfc.chmod(0o755)
    for path in src.rglob("*"):
        path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    yield src
    shutil.rmtree(src, ignore_errors=True)


def commands(src: Path, out: Path) -> dict[str, tuple[list[str], Path]]:
    """command -> (its arguments, the folder it runs in); ``out`` is where it writes."""
    here = out.parent
    return {
        "history add": (["history", "add", str(src / "r.json"), "--history", str(out)], here),
        "history reindex": (["history", "reindex", "--history", str(out)], here),
        "dashboard --out": (["dashboard", "--history", str(src / "hist"), "--out", str(out)], here),
        "export -o": (["export", str(src / "r.json"), "-o", str(out)], here),
        "build -o": (["build", "-c", "scale_i64", "--warpforthc", str(src / "warpforthc"), "--no-check-cuda", "-o",
                      str(out)], here),
        "pr-comment -o": (["pr-comment", str(src / "bh.json"), "--bundle", str(src / "bundle"), "-o", str(out), "-q"],
                          here),
        "new-case": (["new-case", "foo_bar", "--dir", str(out)], here),
        **({"explain -o": (["explain", "scale_i64", "--wf-ptx", str(STORED_PTX / "scale_i64.canonical.ptx"), "-q",
                            "-o", str(out)], here)} if _has_nvcc() else {}),
    }


def _has_nvcc() -> bool:
    from wfbench_core.compiling.compile import find_nvcc

    return find_nvcc() is not None  # explain compiles the CUDA side first


def _prepare(state: str, parent: Path, out: Path, src: Path, command: str) -> list[str]:
    """Put ``parent`` in ``state``; the command prefix that runs a command in it."""
    if command == "history reindex" and state != "symlink loop":
        shutil.copytree(src / "hist", out)  # a history to rewrite the index of
    if state == "symlink loop":
        other = parent / "loop2"
        out.symlink_to(other)
        other.symlink_to(out)
        return []
    if state == "unprivileged":
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            pytest.skip("dropping privileges needs root and setpriv")
        parent.chmod(0o755)
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        if subprocess.run([*prefix, sys.executable, "-c", "import wfbench_core"], capture_output=True).returncode:
            pytest.skip(f"nobody cannot start {sys.executable} with wfbench (a folder on its way, or of its "
                        "libraries, is closed to other users)")
        return prefix
    if not shutil.which("unshare") or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("a mount namespace of its own (unshare -m) is not allowed here")
    if state == "read-only":
        script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    else:  # full: a small tmpfs filled to the last block, holding a copy of what was there
        script = ('cp -a "$0" "$0.copy" && mount -t tmpfs -o size=64k tmpfs "$0" && cp -a "$0.copy/." "$0/"; '
                  'dd if=/dev/zero of="$0/fill" bs=4k 2>/dev/null; exec "$@"')
    return ["unshare", "-m", "sh", "-c", script, str(parent)]


@pytest.mark.parametrize("state", STATES)
def test_every_writing_command_answers_a_place_it_cannot_write_in_one_line(inputs: Path, state: str) -> None:
    src = inputs
    for command in commands(src, Path("/x/out")):
        parent = Path(tempfile.mkdtemp(prefix="wfbench-fs-out-"))
        try:
            out = parent / "out"
            prefix = _prepare(state, parent, out, src, command)
            args, cwd = commands(src, out)[command]
            env = {**os.environ, "HOME": str(src), "WFBENCH_CACHE_DIR": str(src / "cache"),
                   "PYTHONDONTWRITEBYTECODE": "1", "WFBENCH_DISABLE_PLUGIN_AUTOLOAD": ""}
            # explain compiles and assembles the same sides in every state: the session's tools' answers
            wfbench = [str(CACHED_CLI)] if command == "explain -o" else ["-m", "wfbench_core"]
            proc = subprocess.run([*prefix, sys.executable, *wfbench, *args], capture_output=True,
                                  text=True, cwd=cwd, env=env, timeout=300)
            what = f"{command} ({state}): rc {proc.returncode}\n{proc.stderr}"
            if state == "symlink loop" and proc.returncode == 0:  # the link replaced by the file asked for
                assert out.is_file() and not out.is_symlink(), what
                continue
            assert proc.returncode != 0, what
            assert "Traceback" not in proc.stderr + proc.stdout, what
            errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("wfbench: error:")]
            assert len(errors) == 1 and str(parent) in errors[0], what
            assert proc.stderr.strip().splitlines()[-1] == errors[0], what
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(parent)], capture_output=True)
            shutil.rmtree(parent, ignore_errors=True)
            shutil.rmtree(Path(f"{parent}.copy"), ignore_errors=True)


def test_a_symlink_loop_inside_a_bundle_is_one_line_naming_the_file(prebuilt_bundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Not "the GPU worker could not start", not a RuntimeError: the file of the bundle that loops, before any GPU
    is looked for or any worker started."""
    bundle = prebuilt_bundle(("scale_i64",), tmp_path / "b")
    looped = bundle / "scale_i64" / "canonical.ptx"
    looped.unlink()
    looped.symlink_to(looped.parent / "loop2")
    (looped.parent / "loop2").symlink_to(looped)
    for args in (["explain", "scale_i64", "--bundle", str(bundle), "-q"], ["execute", str(bundle), "--validate-only"],
                 ["execute", str(bundle), "-o", str(tmp_path / "r.json")],
                 ["run", "--bundle", str(bundle), "-o", str(tmp_path / "r.json")]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr.strip().splitlines() == [
            f"wfbench: error: {looped}: a loop of symbolic links; remove the link, or choose another path"], (args,
                                                                                                        res.stderr)
    assert not (tmp_path / "r.json").exists()
