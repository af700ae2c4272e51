"""The one way wfbench writes files, and the one way it reads the files a user hands it.

Writing goes through a temporary file in the same folder, then an atomic rename. Files are created with mode
0666 less the process umask, like any ordinary write (``tempfile.mkstemp`` would make them 0600, which a web
server running as another user cannot serve).

Reading (:func:`read_text`, :func:`parse_json`, :func:`read_json`) turns whatever bytes a file holds (binary,
not UTF-8, empty, truncated or invalid JSON, JSON nested too deeply, ``NaN``) into text or JSON, or into one
line, ``WHERE: not WHAT (why)``, raised as a :class:`~wfbench_core.errors.WfbenchError`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

from wfbench_core.errors import WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "atomic_write", "create_exclusive", "decode_text", "make_temp_dir", "not_a", "os_error_line", "parse_json",
    "read_bytes", "read_json", "read_text", "symlink_loop_line",
]


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
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # a full disk: write() names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from None
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


# ---------------------------------------------------------------------------------------------------------
# a file-system state that stops a command: one line naming the path and what to do

#: what to do about each error of the file system (errno -> what it means, what to do)
_ADVICE = {
    errno.EACCES: ("permission denied", "give this user write access to it, or choose another place"),
    errno.EPERM: ("not permitted", "give this user write access to it, or choose another place"),
    errno.EROFS: ("on a read-only file system", "choose a place on a writable file system"),
    errno.ENOSPC: ("no space left on its device", "free some space, or choose a place on another device"),
    errno.EDQUOT: ("over the disk quota", "free some space, or choose a place on another device"),
    errno.ELOOP: ("a loop of symbolic links", "remove the link, or choose another path"),
    errno.EEXIST: ("exists and is not a folder (a file, or a symbolic link to nowhere)",
                   "remove it, or choose another path"),
    errno.ENOTDIR: ("a part of the path is not a folder", "choose a path made of folders"),
    errno.EISDIR: ("a folder, where a file is needed", "choose a file name"),
    errno.ENOENT: ("no such file or folder", "check the path"),
    errno.EBUSY: ("busy", "try again when whatever holds it has finished"),
    errno.ENAMETOOLONG: ("a name too long for the file system", "choose a shorter path"),
}


def os_error_line(exc: OSError) -> str:
    """The one line for a file-system error: ``PATH: what it means; what to do``."""
    meaning, todo = _ADVICE.get(exc.errno or 0, ((exc.strerror or type(exc).__name__).lower(),
                                                 "check the path and its permissions"))
    where = exc.filename if exc.filename is not None else exc.filename2
    return f"{where}: {meaning}; {todo}" if where is not None else f"{meaning}; {todo}"


def symlink_loop_line(exc: RuntimeError) -> str | None:
    """pathlib's ``RuntimeError: Symlink loop from '…'`` (Python < 3.13) as the line of an ELOOP; None otherwise."""
    text = str(exc)
    if not text.startswith("Symlink loop from "):
        return None
    return os_error_line(OSError(errno.ELOOP, "loop", text.removeprefix("Symlink loop from ").strip("'\"")))


# ---------------------------------------------------------------------------------------------------------
# reading what a user hands wfbench


def not_a(where: str, what: str, why: str) -> WfbenchError:
    """The one-line error for a file that is not ``what``."""
    return WfbenchError(f"{where}: not {what} ({why})")


def decode_text(data: bytes, where: str, what: str, *, kind: str = "text") -> str:
    """``data`` as UTF-8 text (a leading BOM dropped), or ``WHERE: not WHAT (why)``."""
    if b"\x00" in data:
        raise not_a(where, what, f"binary data, not {kind}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_a(where, what, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}") from None
    return text.removeprefix("\ufeff")


def read_bytes(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of a file, or one line naming it (missing, a directory, unreadable)."""
    p = Path(path)
    try:
        return p.read_bytes()
    except IsADirectoryError:
        raise WfbenchError(f"{p}: a directory, not {what}") from None
    except OSError as exc:
        raise WfbenchError(f"{p}: cannot read ({exc.strerror or type(exc).__name__})") from None


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """A text file a user gave (PTX, CUDA source, a key): UTF-8, or one line naming the file."""
    return decode_text(read_bytes(path, what), str(path), what)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is not a finite number")
    return value


def parse_json(text: str, where: str, what: str) -> Any:
    """JSON text as Python data, or ``WHERE: not WHAT (why)``: empty, truncated, invalid, too deep, NaN."""
    if not text.strip():
        raise not_a(where, what, "empty file")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            end = text.count("\n", 0, len(text.rstrip())) + 1
            why = f"truncated JSON: it ends at line {end} before the document is complete"
        else:
            why = f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        raise not_a(where, what, why) from None
    except ValueError as exc:  # NaN, Infinity
        raise not_a(where, what, f"not valid JSON: {exc}") from None
    except RecursionError:
        raise not_a(where, what, "JSON nested too deeply") from None


def read_json(path: str | os.PathLike[str], what: str) -> Any:
    """A JSON file a user gave, or one line naming it and what is wrong."""
    where = str(path)
    return parse_json(decode_text(read_bytes(path, what), where, what, kind="JSON text"), where, what)
