"""A case's host-side preparation, made ahead of its turn in a helper process.

Before a case is checked, its inputs (:meth:`Case.make_inputs`) and its numpy reference
(:meth:`Case.make_reference`) are made for both configurations, ``check`` and ``canonical``: seconds of
host work for some cases (a pure-Python reference loop), during which the GPU would sit idle. The worker
(:mod:`wfbench_core.gpu.worker`) asks a helper process for the next case's arrays while the GPU times the
current one, and hands them to the checker (:meth:`wfbench_core.gpu.correctness.Checker.check_config`).

Why a process and not a thread: a thread of the timing process holding the GIL (a pure-Python reference)
would delay the thread that launches the timed kernels. The helper is started with the ``spawn`` context
(a process holding a CUDA context is never forked), loads the same plugins from the same recipe, and
matches the bundle with them as the worker does (:func:`wfbench_core.compiling.prepare.prepare_all`). Cases
are deterministic by their seed, so its arrays are the ones the worker would make.

The arrays travel as pickle protocol 5 with their buffers out of band, in one anonymous memory file
(``memfd``) whose descriptor is passed over the pipe: the worker maps it, nothing is copied on its side.

Whatever goes wrong on the helper's side costs nothing but the time saved: a case the helper could not
prepare (its ``make_inputs`` raises, its arrays do not pickle) is prepared in the worker as before, so it
fails there the same way; a helper that cannot start, or dies, is said once in the progress log and every
later case is prepared in the worker. The helper dies with the worker (a death signal, and the worker's
process group), and ends when the worker does.

``costs.inputs_s`` and ``costs.reference_s`` stay the time spent making the arrays (in the helper, where it
made them); ``costs.prep_wait_s`` is how long the worker waited for them (None: made in the worker).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from wfbench_core.case import CONFIGS

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "HELPER_NICE", "START_WAIT_S", "HostArrays", "HostPrep", "handed", "handing", "make_host_arrays", "serve",
    "start_for",
]

# how long the worker waits for the helper's first word (it started, it loaded the plugins) before it
# prepares the case itself; the helper keeps going, and a later case may still use it
START_WAIT_S = 60.0
# the helper's niceness: where it shares the host's cores with the worker, the scheduler favours the worker's
# threads (the one that launches the timed kernels, the NVML reader) over its numpy work
HELPER_NICE = 10


@attrs.frozen
class HostArrays:
    """One configuration of a case, prepared: its inputs, the reference outputs and what making each took."""

    case_id: str
    config: str
    sizes: Mapping[str, Any]  # the configuration's sizes (arrays are used only for the case at these sizes)
    inputs: Mapping[str, Any]
    want: Mapping[str, Any]
    inputs_s: float
    reference_s: float

    def fits(self, case: Any, config: str) -> bool:
        """Whether these are the arrays of ``case`` at ``config`` (same case, seed and sizes)."""
        return (self.case_id, self.config) == (case.id, config) and dict(self.sizes) == dict(case.sizes[config])


def make_host_arrays(case: Any, config: str) -> HostArrays:
    """The inputs and reference of one configuration, made here and timed (the one way they are made)."""
    t0 = time.perf_counter()
    inputs = case.make_inputs(config)
    t1 = time.perf_counter()
    want = case.make_reference(inputs, config)
    t2 = time.perf_counter()
    return HostArrays(case.id, config, dict(case.sizes[config]), inputs, want, t1 - t0, t2 - t1)


def handed(timer: Any, case: Any, config: str) -> HostArrays | None:
    """The arrays the worker handed ``timer`` for ``case`` at ``config`` (None: none, or not these)."""
    arrays = (getattr(timer, "host_arrays", None) or {}).get(config)
    return arrays if arrays is not None and arrays.fits(case, config) else None


@contextlib.contextmanager
def handing(timer: Any, arrays: Mapping[str, HostArrays] | None) -> Iterator[None]:
    """Hand ``arrays`` (config -> :class:`HostArrays`) to a timer that takes them, for the time of the block."""
    if arrays and hasattr(timer, "host_arrays"):
        timer.host_arrays = dict(arrays)
        try:
            yield
        finally:
            timer.host_arrays = {}
    else:
        yield


def start_for(timer: Any, registry: Any, bundle: Any, upcoming: Sequence[str], progress: Any) -> HostPrep | None:
    """The helper of a worker whose ``upcoming`` cases are to run in that order, asked for the first one; None
    where the timer takes no prepared arrays, or the plugins exist only in this process (no recipe)."""
    if not upcoming or not hasattr(timer, "host_arrays") or getattr(registry, "recipe", None) is None:
        return None
    prep = HostPrep.start(str(bundle), registry.recipe, progress)
    if prep is not None:
        prep.upcoming = list(upcoming)
        prep.ahead(upcoming[0])
    return prep


class HostPrep:
    """The worker's side of the helper: ask for a case's arrays ahead (:meth:`ahead`), take them (:meth:`take`)."""

    def __init__(self, process: Any, conn: Any, progress: Any) -> None:
        self.process, self.conn, self.progress = process, conn, progress
        self.asked: list[str] = []  # cases asked for and not yet received, in order
        self.started = False  # the helper's first word (ready) was read
        self.upcoming: list[str] = []  # the cases to run, in order (the next one is asked for ahead)

    def turn(self, case_id: str) -> tuple[dict[str, HostArrays] | None, float | None]:
        """A case's turn: ask for the case after it, then take its arrays (:meth:`take`)."""
        later = self.upcoming[self.upcoming.index(case_id) + 1:] if case_id in self.upcoming else []
        self.ahead(later[0] if later else None)
        return self.take(case_id)

    @classmethod
    def start(cls, bundle: str, recipe: Any, progress: Any) -> HostPrep | None:
        """Start the helper (it loads the plugins of ``recipe`` and reads ``bundle``); None where it cannot
        start, said in the progress log."""
        import multiprocessing

        if not hasattr(os, "memfd_create"):
            progress("inputs and references are made in the GPU worker: this host has no memfd_create")
            return None
        try:
            ctx = multiprocessing.get_context("spawn")
            mine, theirs = ctx.Pipe(duplex=True)
            process = ctx.Process(target=serve, args=(theirs, str(bundle), recipe), name="wfbench-host-prep",
                                  daemon=True)
            process.start()
            theirs.close()
        except Exception as exc:
            progress(f"inputs and references are made in the GPU worker: the helper process did not start "
                     f"({type(exc).__name__}: {exc})")
            return None
        return cls(process, mine, progress)

    def ahead(self, case_id: str | None, configs: Sequence[str] = CONFIGS) -> None:
        """Ask for a case's arrays, of ``configs`` (made while the GPU works on the current case)."""
        if case_id is None or self.conn is None or case_id in self.asked:
            return
        try:
            self.conn.send((case_id, tuple(configs)))
        except (OSError, ValueError) as exc:
            self._lost(self._last_word() or f"{type(exc).__name__}: {exc}")
            return
        self.asked.append(case_id)

    def _last_word(self) -> str:
        """Why a helper that never said it was ready ended, where it said so ("" otherwise)."""
        with contextlib.suppress(EOFError, OSError, ValueError):
            if not self.started and self.conn.poll(0):
                return str(self.conn.recv())
        return ""

    def take(self, case_id: str) -> tuple[dict[str, HostArrays] | None, float | None]:
        """The arrays of ``case_id`` by configuration and how long this waited for them; ``(None, None)`` where
        they were not asked for or the helper could not make them (the worker then makes them itself)."""
        if self.conn is None or case_id not in self.asked:
            return None, None
        t0 = time.perf_counter()
        try:
            if not self.started and not self._hello():
                return None, None
            while self.asked:
                got_id, arrays = self._receive()
                self.asked.pop(0)
                if got_id == case_id:
                    return arrays, (time.perf_counter() - t0 if arrays is not None else None)
        except (EOFError, OSError) as exc:
            self._lost(f"{type(exc).__name__}: {exc}" if str(exc) else "it ended")
        return None, None

    def _hello(self) -> bool:
        """Read the helper's first word: ready, or why it could not start (said, and the helper dropped)."""
        if not self.conn.poll(START_WAIT_S):
            self.progress(f"inputs and references are made in the GPU worker for now: the helper process did not "
                          f"start within {START_WAIT_S:g} s")
            return False
        word = self.conn.recv()
        if word != "ready":
            self._lost(str(word))
            return False
        self.started = True
        return True

    def _receive(self) -> tuple[str, dict[str, HostArrays] | None]:
        """The next answer: a case id and its arrays (None: the helper could not make them)."""
        answer = self.conn.recv()
        if answer[0] == "error":
            return answer[1], None
        _, case_id, head, sizes, costs = answer
        buffers = _map(self.conn, sizes)
        made = pickle.loads(head, buffers=buffers)
        return case_id, {config: HostArrays(case_id, config, made[config][0], made[config][1], made[config][2],
                                            *costs[config]) for config in made}

    def _lost(self, why: str) -> None:
        self.progress(f"inputs and references are made in the GPU worker from here on: the helper process "
                      f"failed ({why})")
        self.close()

    def with_wait(self, results: Sequence[Any], wait_s: float | None) -> list[Any]:
        """``results`` with the wait for their arrays in their costs (``prep_wait_s``; None: made in the worker)."""
        if wait_s is None:
            return list(results)
        return [attrs.evolve(r, costs=attrs.evolve(r.costs, prep_wait_s=wait_s)) for r in results]

    def close(self) -> None:
        """Ask the helper to end, and make sure it has (it is a child of this process only while it runs)."""
        if self.conn is not None:
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(None)
            self.conn.close()
            self.conn = None
        self.asked = []
        if self.process is not None:
            self.process.join(5.0)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(5.0)
            self.process = None


def _map(conn: Any, sizes: Sequence[int]) -> list[Any]:
    """The out-of-band buffers of an answer, views of the memory file whose descriptor follows it."""
    from multiprocessing.reduction import recv_handle

    total = sum(sizes)
    if not total:
        return [bytearray(0) for _ in sizes]
    fd = recv_handle(conn)
    try:
        view = memoryview(mmap.mmap(fd, total))  # shared, writable; unmapped once no array holds it
    finally:
        os.close(fd)
    out, pos = [], 0
    for size in sizes:
        out.append(view[pos:pos + size])
        pos += size
    return out


# -- the helper process ---------------------------------------------------------------------------------


def serve(conn: Any, bundle: str, recipe: Any) -> None:
    """The helper's loop: load the plugins and the bundle's plan, then answer each case id with its arrays."""
    from wfbench_core.gpu.child import die_with_parent

    die_with_parent()
    with contextlib.suppress(OSError):
        os.nice(HELPER_NICE)
    try:
        plan = _plan(bundle, recipe)
    except Exception as exc:
        conn.send(f"{type(exc).__name__}: {exc}")
        return
    conn.send("ready")
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        _answer(conn, plan, *request)


def _answer(conn: Any, plan: Mapping[str, Any], case_id: str, configs: Sequence[str]) -> None:
    """Make and send one case's arrays, or say why not (they are freed before the next case is made)."""
    try:
        case = next(iter(plan[case_id].values())).case
        _send(conn, case_id, {config: make_host_arrays(case, config) for config in configs})
    except Exception as exc:
        conn.send(("error", case_id, f"{type(exc).__name__}: {exc}"))


def _plan(bundle: str, recipe: Any) -> dict[str, dict[str, Any]]:
    """``{case id: {label: Prepared}}``: the bundle matched with the plugins, as the worker matches it."""
    from pathlib import Path

    from wfbench_core.compiling.prepare import prepare_all
    from wfbench_core.discover.registry import Registry

    autoload, names = recipe
    registry = Registry.load(list(names), autoload=autoload)
    return prepare_all(Path(bundle), registry, load=False)[1]


def _send(conn: Any, case_id: str, made: Mapping[str, HostArrays]) -> None:
    """One answer: the arrays pickled with their buffers out of band, the buffers in one memory file."""
    from multiprocessing.reduction import send_handle

    buffers: list[pickle.PickleBuffer] = []
    arrays = {config: (dict(a.sizes), a.inputs, a.want) for config, a in made.items()}
    head = pickle.dumps(arrays, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    sizes = [v.nbytes for v in views]
    costs = {config: (a.inputs_s, a.reference_s) for config, a in made.items()}
    total = sum(sizes)
    fd = os.memfd_create("wfbench-host-arrays", os.MFD_CLOEXEC) if total else -1
    try:
        if total:
            os.ftruncate(fd, total)
            with mmap.mmap(fd, total) as m:
                pos = 0
                for v in views:
                    m[pos:pos + v.nbytes] = v
                    pos += v.nbytes
        conn.send(("ok", case_id, head, sizes, costs))
        if total:
            send_handle(conn, fd, 0)
    finally:
        if fd >= 0:
            os.close(fd)
