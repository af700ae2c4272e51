"""Execute a bundle on the GPU host: compile the CUDA side here, check, time, and make the result.

This is the one entry point every transport calls (``wfbench execute BUNDLE``), locally or remotely.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfbench_core import SUITE_VERSION, __version__
from wfbench_core.compiling.bundle import utcnow
from wfbench_core.compiling.prepare import Prepared, prepare_all
from wfbench_core.discover.registry import Registry
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu import messages as msg
from wfbench_core.gpu import watchdog
from wfbench_core.gpu.child import Child, Lines
from wfbench_core.gpu.nvml import mark_host
from wfbench_core.gpu.outcome import error_result as _error_result
from wfbench_core.gpu.outcome import merge_repeats
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import ERROR, MODE_AA, SCHEMA_VERSION, CaseResult, RunResult, write_result

if TYPE_CHECKING:
    from wfbench_core.gpu.worker import Worker

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["InProcess", "Progress", "Supervisor", "execute"]

Progress = Callable[[str], None]


def execute(
    bundle: Path,
    *,
    registry: Registry,
    request: ExecuteRequest = ExecuteRequest(),
    progress: Progress = lambda msg: None,
    out: Path | None = None,
) -> RunResult:
    """Run every case of the bundle (or ``request.case_ids``) on this host's GPU and return the result.

    The cases run in a supervised worker process (:mod:`wfbench_core.gpu.worker`): a case whose kernel faults,
    hangs or takes the process down costs that case (ERROR, one line) and the next case runs in a fresh
    process. With ``out``, the result file is rewritten atomically after every case, marked incomplete
    until the last one, so a run ended by any signal keeps every finished case.

    A base/head bundle times every compiler's PTX and the CUDA PTX in the same interleaved rounds and
    reports one CaseResult per compiler label, all against the same CUDA samples.
    """
    run = _Run(bundle, registry, request, progress, out)
    if request.mode == MODE_AA and len(run.manifests) > 1:
        raise WfbenchError("--aa times the CUDA PTX against itself; it takes a single warpforthc, not base/head")
    if registry.recipe is None:
        progress("cases run in this process: a plugin of this run exists only here (e.g. in a conftest), so a "
                 "separate worker could not load it; a kernel that faults or hangs will end the run")
        supervisor: Supervisor = InProcess(bundle, request, progress, registry)
    else:
        supervisor = Supervisor(bundle, request, progress, registry)
    passes: list[list[CaseResult]] = []
    try:
        run.begin(supervisor)
        for repeat in range(request.repeat):
            if repeat:
                supervisor.restart()  # every repeat in a fresh process: what changes between processes shows
                supervisor.upcoming = list(run.by_case)
                progress(f"repeat {repeat + 1} of {request.repeat}, in a fresh process")
            passes.append([])
            run.one_pass(supervisor, passes)
    finally:
        supervisor.close()
    run.report_repeats()
    run.add_unbuilt()
    result = run.snapshot(True)
    if out is not None:
        write_result(result, out)
    return result


class _Run:
    """One execution's state: the bundle's plan, the results so far, the result file kept up to date."""

    def __init__(self, bundle: Path, registry: Registry, request: ExecuteRequest, progress: Progress,
                 out: Path | None) -> None:
        self.t_start = time.perf_counter()
        self.registry, self.request, self.progress, self.out = registry, request, progress, out
        self.case_ids = list(request.case_ids)
        # matched and read once here, so that a file the bundle cannot give (missing, a symlink loop, unreadable) is
        # one line naming it before any worker starts; each worker loads a case's files again where it runs
        prepare_all(bundle, registry, self.case_ids)
        self.manifests, self.by_case = prepare_all(bundle, registry, self.case_ids, load=False)
        self.first = next(iter(self.manifests.values()))
        self.results: list[CaseResult] = []
        self.header: dict[str, Any] = {}

    def snapshot(self, complete: bool) -> RunResult:
        h, first = self.header, self.first
        return RunResult(
            schema_version=SCHEMA_VERSION, suite_version=SUITE_VERSION, wfbench_version=__version__,
            created=h["created"], mode=self.request.mode, protocol=self.request.protocol,
            environment=mark_host(h["environment"], self.results), warpforthc=first.warpforthc,
            cuda_compiler=h["cuda"], cases=tuple(self.results), source=first.source,
            wall_s=time.perf_counter() - self.t_start,
            compilers={label: m.warpforthc for label, m in self.manifests.items() if label}, complete=complete,
        )

    def save(self) -> None:
        """The result file so far, marked incomplete."""
        if self.out is not None:
            write_result(self.snapshot(False), self.out)

    def begin(self, supervisor: Supervisor) -> None:
        """Start the first worker (it reads the GPU and measures the yardsticks) and say what it found."""
        supervisor.upcoming = list(self.by_case)
        ready = supervisor.start(copy=True)
        env, cuda = ready.environment, ready.cuda
        self.header.update(environment=env, cuda=cuda, created=utcnow())
        self.progress(f"GPU {env.gpu_name} ({ready.arch}), driver {env.driver_version}; "
                      f"CUDA side: {cuda.kind} {cuda.version} {' '.join(cuda.flags)}")
        if env.copy_gbps:
            self.progress(f"device-to-device copy: {env.copy_gbps:.0f} GB/s (read + write)")
        self.save()

    def one_pass(self, supervisor: Supervisor, passes: list[list[CaseResult]]) -> None:
        """Every case once (or not run, past the suite budget); the passes so far merged after each case."""
        protocol = self.request.protocol
        for case_id, variants in self.by_case.items():
            spent = time.perf_counter() - self.t_start
            if protocol.suite_budget_s and spent > protocol.suite_budget_s:
                why = f"not run: the suite budget of {protocol.suite_budget_s:.0f} s was spent ({spent:.0f} s)"
                self.progress(f"{case_id}: {why}")
                passes[-1].extend(_error_result(case_id, p.case, p.plugin, label, self.request.mode, why)
                                  for label, p in variants.items())
            else:
                self.progress(f"{case_id}: checking and timing")
                for result in supervisor.run_case(case_id, variants):
                    self.progress(_one_line(result))
                    passes[-1].append(result)
            self.results[:] = merge_repeats(passes, protocol.unstable_noise)
            self.save()

    def report_repeats(self) -> None:
        if self.request.repeat <= 1:
            return
        for r in self.results:
            if r.timing is not None and r.timing.repeat_gaps:
                self.progress(f"{_one_line(r)}; over {len(r.timing.repeat_gaps)} processes: "
                              f"{' '.join(f'{g:.4f}' for g in r.timing.repeat_gaps)}")

    def add_unbuilt(self) -> None:
        """The cases the bundle records as not built (compile errors), as ERROR results."""
        for label, manifest in self.manifests.items():
            for cid, why in manifest.failures.items():
                if self.case_ids and cid not in self.case_ids:
                    continue
                reg = self.registry.cases.get(cid)
                self.results.append(_error_result(cid, reg.value if reg else None, reg.plugin if reg else "",
                                                  label, self.request.mode, why))


class Supervisor:
    """Runs cases in a worker process (:mod:`wfbench_core.gpu.child`), one at a time, with the watchdog's
    deadlines; requests and replies are :mod:`wfbench_core.gpu.messages`.

    A worker is replaced after any case that ended in ERROR (its CUDA context may be unusable), after a
    crash (its last standard-error lines go into the case's message), and after a missed deadline (it is
    killed first, with everything it started).
    """

    def __init__(self, bundle: Path, request: ExecuteRequest, progress: Progress, registry: Registry) -> None:
        self.bundle = bundle
        self.request = request
        self.progress = progress
        self.registry = registry
        self.child: Child | None = None
        self.replies: Lines | None = None
        self.quiet_limit_s = watchdog.quiet_limit_s(request.protocol.max_case_s)
        self.upcoming: list[str] = []  # the cases still to run in this pass: a new worker compiles their CUDA ahead
        #: what the run's first worker measured (Init's yardstick fields): later ones judge cases by it
        self.yardsticks: dict[str, float | None] = {}

    # -- process handling -------------------------------------------------------------------------

    def _spawn(self) -> None:
        read_fd, write_fd = os.pipe()
        try:
            self.child = Child([sys.executable, "-m", "wfbench_core.gpu.worker", str(write_fd)],
                               recipe=self.registry.recipe, stdin=subprocess.PIPE, pass_fds=(write_fd,))
        finally:
            os.close(write_fd)
        self.replies = Lines(read_fd)

    def _send(self, message: msg.Request) -> None:
        assert self.child is not None and self.child.proc.stdin is not None
        try:
            self.child.proc.stdin.write(msg.encode(message).encode())
            self.child.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the worker is gone; reading its replies says how

    def _alive(self) -> bool:
        return self.child is not None and self.child.alive()

    def restart(self) -> None:
        """The next case starts in a fresh worker process."""
        self.close()

    def _kill(self) -> None:
        if self.child is None:
            return
        self.child.kill()
        if self.child.proc.stdin is not None:
            try:
                self.child.proc.stdin.close()
            except OSError:
                pass
        if self.replies is not None:
            self.replies.close()
        self.child = None

    def close(self) -> None:
        if self._alive():
            self._send(msg.Exit())
            assert self.child is not None
            self.child.wait(timeout=10)
        self._kill()

    def _next(self, limit: float, what: str) -> msg.Message:
        """The worker's next message; :class:`_Lost` when it dies or stays silent past ``limit``."""
        assert self.replies is not None and self.child is not None
        try:
            line = self.replies.next(timeout=limit)
        except TimeoutError:
            self._kill()
            raise _Lost(f"did not finish within {limit:g} s (hang?) while waiting for {what}", hang=True) from None
        if line is None:
            reason = self.child.end_reason("the GPU worker process",
                                           signal_hint="the case's kernel or the driver took it down")
            self._kill()
            raise _Lost(reason)
        try:
            return msg.decode(line)
        except WfbenchError as exc:
            self._kill()
            raise _Lost(f"the GPU worker sent {exc}") from None

    def _await(self, *kinds: type) -> msg.Message:
        """The worker's next reply of one of ``kinds`` (or a :class:`CaseError`); progress and deadlines are
        handled on the way. Raises :class:`_Lost` when the worker dies or misses a deadline (it is killed)."""
        limit, what = self.quiet_limit_s, "work outside a GPU wait"
        while True:
            m = self._next(limit, what)
            if isinstance(m, msg.ProgressLine):
                self.progress(m.line)
            elif isinstance(m, msg.Arm):
                limit, what = m.deadline_s, m.what
            elif isinstance(m, msg.Disarm):
                limit, what = self.quiet_limit_s, "work outside a GPU wait"
            elif isinstance(m, msg.Fatal):
                self._kill()
                raise msg.fatal_error(m)
            elif isinstance(m, (*kinds, msg.CaseError)):
                return m

    def start(self, copy: bool = False) -> msg.Ready:
        """Start a worker; the first one also reads the GPU (and the copy yardstick)."""
        self._spawn()
        self._send(msg.Init(str(self.bundle), self.request, copy, tuple(self.upcoming), **self.yardsticks))
        try:
            ready = self._await(msg.Ready)
        except _Lost as lost:
            raise WfbenchError(f"the GPU worker did not start: {lost}") from None
        if isinstance(ready, msg.CaseError):  # pragma: no cover - a worker answers Init with Ready or Fatal
            raise WfbenchError(f"the GPU worker did not start: {ready.message}")
        assert isinstance(ready, msg.Ready)
        if copy:
            env = ready.environment
            self.yardsticks = {"copy_gbps": env.copy_gbps, "fp64_peak_gflops": env.fp64_peak_gflops}
        return ready

    def run_case(self, case_id: str, variants: dict[str, Prepared],
                 request: msg.Request | None = None) -> list[CaseResult]:
        """Check and time a case (or what ``request`` asks of it: a sweep point) in the worker; ``variants`` name
        the results of a case that could not be."""
        if not self._alive():
            self._kill()
            self.start()
        if case_id in self.upcoming:
            self.upcoming = self.upcoming[self.upcoming.index(case_id) + 1:]
        self._send(request or msg.RunCase(case_id))
        try:
            reply = self._await(msg.Results)
        except _Lost as lost:
            return [_error_result(case_id, p.case, p.plugin, label, self.request.mode, f"{case_id}: {lost}")
                    for label, p in variants.items()]
        if isinstance(reply, msg.CaseError):
            if reply.restart:
                self._kill()
            return [_error_result(case_id, p.case, p.plugin, label, self.request.mode, reply.message)
                    for label, p in variants.items()]
        assert isinstance(reply, msg.Results)
        if any(r.status == ERROR for r in reply.results):
            self._kill()  # a CUDA error may have left the context unusable: the next case gets a fresh one
        return list(reply.results)


class InProcess(Supervisor):
    """The same conversation with a worker living in this process (no isolation, no deadlines); every
    message still goes through its JSON line."""

    def _spawn(self) -> None:
        from wfbench_core.gpu.worker import Worker

        self.queue: list[msg.Message] = []
        self.worker: Worker | None = Worker(_Collect(self.queue))
        self.worker.registry = self.registry
        self.child = None

    def _send(self, message: msg.Request) -> None:
        if self.worker is None:
            raise _Lost("the in-process timer was let go")
        self.worker.handle(msg.decode(msg.encode(message)))

    def _await(self, *kinds: type) -> msg.Message:
        while self.queue:
            m = self.queue.pop(0)
            if isinstance(m, msg.ProgressLine):
                self.progress(m.line)
            elif isinstance(m, msg.Fatal):
                raise msg.fatal_error(m)
            elif isinstance(m, (*kinds, msg.CaseError)):
                return m
        raise _Lost("the timer gave no answer")

    def _alive(self) -> bool:
        return getattr(self, "worker", None) is not None

    def restart(self) -> None:
        self.worker = None  # a fresh timer (in this process: the plugin cannot live anywhere else)

    def _kill(self) -> None:
        pass

    def close(self) -> None:
        watchdog.install(None)


class _Collect:
    """A write-only text stream that decodes each line into ``queue``."""

    def __init__(self, queue: list[msg.Message]) -> None:
        self.queue = queue

    def write(self, text: str) -> None:
        self.queue.extend(msg.decode(line) for line in text.splitlines() if line.strip())

    def flush(self) -> None:
        pass


class _Lost(Exception):
    """The worker died or missed a deadline."""

    def __init__(self, message: str, hang: bool = False) -> None:
        super().__init__(message)
        self.hang = hang


def _one_line(r: CaseResult) -> str:
    name = r.key
    if r.timing is None:
        return f"{name}: {r.status.upper()}: {r.message}"
    t = r.timing
    return (f"{name}: WF {t.warpforth.median_us:.2f} us, CUDA {t.cuda.median_us:.2f} us, gap {t.gap:.3f}x, "
            f"noise {max(t.warpforth.noise, t.cuda.noise):.2%} [{r.status}]")
