"""Child processes of a run, started and ended one way: the GPU worker and the launchers that
compute-sanitizer and Nsight Compute run.

Every child started here

- runs in its own process group, so ending it (at its deadline, or when its parent gives up on it) kills
  everything it started: :meth:`Child.kill` signals the whole group;
- dies with its parent: Linux sends it SIGKILL when the process that started it ends, however that ends
  (``PR_SET_PDEATHSIG``, set between fork and exec). A launcher that compute-sanitizer or ncu starts is not
  our direct child: it asks for the same signal itself (:func:`die_with_parent`), so the chain
  executor -> worker -> compute-sanitizer -> launcher ends together;
- gets this process's environment without its secrets (:func:`wfbench_core.host.childenv.child_env`) and the
  plugin set one way, through that environment (:func:`plugin_env`: ``PYTHONPATH``, ``WFBENCH_PLUGINS``,
  ``WFBENCH_DISABLE_PLUGIN_AUTOLOAD``), so ``Registry.load()`` in the child finds what the parent found;
- passes its standard error on to ours and keeps its last lines, so a child that dies can say why
  (:meth:`Child.end_reason`).

The death signal is sent when the *thread* that started the child ends; children are started from the
main thread here.
"""

from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

import attrs

from wfbench_core.discover.plugins import DISABLE_ENV, PLUGINS_ENV
from wfbench_core.host.childenv import child_env

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "PR_SET_PDEATHSIG", "REASON_LINES", "TAIL_LINES", "Child", "Finished", "Lines", "Recipe", "die_with_parent",
    "plugin_env", "run",
]

PR_SET_PDEATHSIG = 1
#: how many of a child's last standard-error lines are kept for its end reason
TAIL_LINES = 20
#: how many of them a case's message carries
REASON_LINES = 3

#: how another process loads the same plugins: ``(autoload, module names)`` (:attr:`Registry.recipe`)
Recipe = tuple[bool | None, tuple[str, ...]]


def plugin_env(recipe: Recipe | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a child that loads the plugins this process loaded.

    ``PYTHONPATH`` is this process's import path (plugins named by module import there too); the recipe's
    module names join ``WFBENCH_PLUGINS``, and its autoload choice sets ``WFBENCH_DISABLE_PLUGIN_AUTOLOAD``.
    Without a recipe the plugin variables are inherited as they are. ``base``: this process's environment
    without its secrets.
    """
    env = dict(child_env() if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    if recipe is not None:
        autoload, names = recipe
        if autoload is not None:
            env[DISABLE_ENV] = "0" if autoload else "1"
        given = [p.strip() for p in env.get(PLUGINS_ENV, "").split(",") if p.strip()]
        env[PLUGINS_ENV] = ",".join(dict.fromkeys([*given, *names]))
    return env


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None


def _between_fork_and_exec() -> Callable[[], None]:
    """What the child does before it runs its program: its own group, and death with this process."""
    parent, prctl = os.getpid(), _prctl()  # looked up here: the child only calls them

    def setup() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:  # the parent ended before the call
                os._exit(1)

    return setup


def die_with_parent() -> None:
    """For a child that another program started (the launcher under compute-sanitizer or ncu, the worker):
    ask Linux for SIGKILL when that parent ends."""
    prctl = _prctl()
    if prctl is None:
        return
    parent = os.getppid()
    prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent or parent == 1:  # the parent ended before the call
        os._exit(1)


class _Drain:
    """Reads a child's pipe on a thread: passes each line on (when asked) and keeps the last ones."""

    def __init__(self, stream: IO[bytes], echo: Callable[[str], None] | None, keep: int | None) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)
        self._stream, self._echo = stream, echo
        self._thread = threading.Thread(target=self._run, name="wfbench-child-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for raw in iter(self._stream.readline, b""):
            line = raw.decode(errors="replace")
            self.lines.append(line.rstrip("\n"))
            if self._echo is not None:
                try:
                    self._echo(line)
                except (OSError, ValueError):  # our own stderr is gone: keep reading, or the child blocks
                    self._echo = None
        self._stream.close()

    def finish(self, timeout: float = 5.0) -> list[str]:
        """The lines read, once the pipe is closed (or after ``timeout``: a grandchild may hold it open)."""
        self._thread.join(timeout)
        return list(self.lines)


def _to_stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


class Child:
    """A started child process (see the module's description for what every child gets)."""

    def __init__(self, argv: Sequence[str], *, recipe: Recipe | None = None, stdin: Any = subprocess.DEVNULL,
                 stdout: Any = subprocess.DEVNULL, pass_fds: Sequence[int] = (), echo: bool = True,
                 keep: int | None = TAIL_LINES) -> None:
        self.argv = list(argv)
        self.proc = subprocess.Popen(self.argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                                     pass_fds=tuple(pass_fds), env=plugin_env(recipe),
                                     preexec_fn=_between_fork_and_exec())
        assert self.proc.stderr is not None
        self._stderr = _Drain(self.proc.stderr, _to_stderr if echo else None, keep)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status, or None if it still runs after ``timeout`` seconds."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL to the child's whole process group, then reap the child."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # already gone (or reaped and its group empty)
            pass
        self.wait(timeout=30)

    def stderr_lines(self) -> list[str]:
        """Everything kept of the child's standard error (its last lines), once it has ended."""
        return self._stderr.finish()

    def end_reason(self, what: str, *, signal_hint: str = "") -> str:
        """Why the child ended, in one line: its exit status or signal, and its last standard-error lines."""
        code = self.proc.returncode if self.proc.returncode is not None else self.wait(timeout=30)
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            reason = f"{what} died ({name})" + (f"; {signal_hint}" if signal_hint else "")
        else:
            reason = f"{what} exited unexpectedly (exit {code})"
        last = [ln.strip()[:200] for ln in self.stderr_lines() if ln.strip()][-REASON_LINES:]
        return reason + (f"; its last output: {' | '.join(last)}" if last else "")


@attrs.frozen
class Finished:
    """A child run to its end, or to its deadline (``returncode`` None: the group was killed)."""

    returncode: int | None
    stdout: str
    stderr: str


def run(argv: Sequence[str], *, timeout_s: float, recipe: Recipe | None = None) -> Finished:
    """Run a child to its end with a deadline; at the deadline its whole process group is killed."""
    child = Child(argv, stdout=subprocess.PIPE, recipe=recipe, echo=False, keep=None)
    assert child.proc.stdout is not None
    out = _Drain(child.proc.stdout, None, None)
    code = child.wait(timeout=timeout_s)
    if code is None:
        child.kill()
    return Finished(code, "\n".join(out.finish()), "\n".join(child.stderr_lines()))


class Lines:
    """Lines from a pipe, each read with a deadline (the worker's replies)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""

    def next(self, timeout: float) -> bytes | None:
        """The next line; None at the end of the pipe; :class:`TimeoutError` after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
