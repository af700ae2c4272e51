"""The one way wfbench writes files: through a temporary file in the same folder, then an atomic rename.

Files are created with mode 0666 less the process umask, like any ordinary write (``tempfile.mkstemp``
would make them 0600, which a web server running as another user cannot serve).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import secrets
from pathlib import Path


def _write_temp(path: Path, data: bytes) -> Path:
    """``data`` in a new temporary file next to ``path`` (named ``.<name>.<random>.tmp``), synced to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``path`` atomically: a reader sees the old file or the new one, never half of one."""
    tmp = _write_temp(path, text.encode() if isinstance(text, str) else text)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def create_exclusive(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` atomically, never replacing an existing file. True if created.

    Callers on a file system without hard links must hold a lock of their own around it: there the check
    for an existing file and the rename are two steps.
    """
    tmp = _write_temp(path, data)
    try:
        try:
            os.link(tmp, path)  # fails if path exists: never a replace
            return True
        except FileExistsError:
            return False
        except OSError:
            if path.exists():
                return False
            os.replace(tmp, path)
            return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def make_temp_dir(prefix: str, parent: Path) -> Path:
    """A new, uniquely named folder in ``parent`` with mode 0777 less the umask (``mkdtemp`` gives 0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o777 & ~mask)
    return path
