"""``python remote_setup.py install TARGET WHEEL...`` on the loopback host, run once per set of wheels in a session.

The ssh and vast tests ship the same few wheels to the host (this machine) in every run, and the transport installs
them into the run's work directory with ``pip install --no-deps --no-index --target`` (about a second: pip's own
start-up). The host's ``python`` in those tests (tests/sshd.py) hands that one command to this script:

    python installed_once.py KEPT SETUP install TARGET WHEEL...

The first time for a set of wheels (their names and bytes, and the bytes of the setup script) it runs the real
``SETUP install`` and keeps the folder it filled, with the line it printed, in ``KEPT``; a later run with the same
wheels gets a copy of that folder in ``TARGET`` (its files hard-linked) and the same line. What differs from a fresh install is only where
pip read the wheels from (each ``*.dist-info/direct_url.json`` names the first run's work directory), which nothing
on the host reads. An install that fails is never kept: it fails again, for real, the next time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path


def key(setup: str, wheels: list[str]) -> str:
    digest = hashlib.sha256(Path(setup).read_bytes())
    for wheel in wheels:
        digest.update(os.path.basename(wheel).encode() + b"\0" + Path(wheel).read_bytes())
    return digest.hexdigest()


def _link_or_copy(src: str, dst: str) -> None:
    """A kept file into a run's folder as a hard link (a copy where a link cannot be made): the run's folders are
    its own, and nothing on the host rewrites an installed file in place (the run imports them, writes new
    ``__pycache__`` files at most, and is removed with ``rm -rf``, which unlinks). Copying each of the few
    hundred files took a quarter of a second per run; linking them, a fiftieth."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def main(argv: list[str]) -> int:
    kept_root, setup, command, target, *wheels = argv
    assert command == "install", argv
    kept = Path(kept_root) / key(setup, wheels)
    said = kept.with_name(kept.name + ".out")
    if kept.is_dir() and said.is_file():
        shutil.copytree(kept, target, symlinks=True, dirs_exist_ok=True, copy_function=_link_or_copy)
        sys.stdout.write(said.read_text())
        return 0
    proc = subprocess.run([sys.executable, setup, "install", target, *wheels], stdout=subprocess.PIPE, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode == 0:
        part = kept.with_name(f"{kept.name}.{os.getpid()}.part")
        shutil.copytree(target, part, symlinks=True)
        Path(f"{part}.out").write_text(proc.stdout)
        os.replace(f"{part}.out", said)
        try:
            os.replace(part, kept)  # whole or absent: a folder another run kept first stays
        except OSError:
            shutil.rmtree(part, ignore_errors=True)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
