"""The worker process: the only process of a run that touches the GPU.

The executor (:mod:`wfbench_core.run.executor`) supervises one worker at a time. It starts it as
``python -m wfbench_core.gpu.worker FD`` (a child of :mod:`wfbench_core.gpu.child`), sends requests as
JSON lines on its standard input and reads replies as JSON lines on file descriptor ``FD``; the messages
are the typed records of :mod:`wfbench_core.gpu.messages`:

- :class:`~wfbench_core.gpu.messages.Init` -> :class:`~wfbench_core.gpu.messages.Ready`: read the GPU and
  toolchain, start compiling the CUDA side of the cases to come (nvcc, in parallel, while the GPU works),
  and measure the copy yardstick when asked;
- :class:`~wfbench_core.gpu.messages.RunCase` -> :class:`~wfbench_core.gpu.messages.Results` (or
  :class:`~wfbench_core.gpu.messages.CaseError`): check and time one case;
- :class:`~wfbench_core.gpu.messages.RunPoint` -> the same: check and time one size of a case's sweep, the
  case's canonical configuration replaced by that size, in the timing mode asked for;
- while working: progress lines, and arm/disarm around every wait on the GPU (the watchdog's deadlines,
  :mod:`wfbench_core.gpu.watchdog`);
- a problem that ends the whole run (no GPU, a broken installation): :class:`~wfbench_core.gpu.messages.Fatal`.

A CUDA error can leave the process's context unusable ("sticky"), a kernel can spin forever, a driver can
take the process down: the executor then kills or loses this process and starts a fresh one for the next
case; what this process last wrote to its standard error becomes part of that case's message. The worker
dies with its executor (a death signal), so a killed run leaves no orphan on the GPU. It loads the plugins
its environment names (:func:`wfbench_core.gpu.child.plugin_env`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import attrs

from wfbench_core.case import CONFIGS, CaseKey
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu import messages as msg
from wfbench_core.gpu import watchdog
from wfbench_core.gpu.case_run import run_case
from wfbench_core.gpu.plausibility import Yardsticks
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import CompilerInfo, TimingProtocol, sm_arch

if TYPE_CHECKING:
    from wfbench_core.ceiling import Ceiling
    from wfbench_core.contracts import Timer
    from wfbench_core.gpu.host_prep import HostPrep

__all__ = ["Output", "Worker", "main"]  # internal, not the plugin API


class Output(Protocol):
    """Where a worker writes its reply lines: a text stream, or anything with its ``write`` and ``flush``."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


class Worker:
    def __init__(self, out: Output) -> None:
        self.out = out
        self.registry: Any = None
        self.timer: Timer | None = None
        self.request = ExecuteRequest()  # the run's, from its Init message
        self.bundle = Path()
        self.cuda: CompilerInfo | None = None
        self.arch = ""
        self.plan: dict[str, dict[str, Any]] | None = None  # the bundle matched with the plugins, once
        self.loaded: dict[str, dict[str, Any]] = {}  # cases whose files are read (for the CUDA compile ahead)
        self.yardsticks = Yardsticks()  # what the run's cases are judged by (wfbench_core.gpu.plausibility)
        self.timers: dict[str, Timer] = {}  # timing mode -> timer, for sweep points timed in another mode
        self.swept: dict[str, list[Any]] = {}  # case -> its sweep points, (case at the size, files), once read
        self.prep: HostPrep | None = None  # the helper making the next case's inputs ahead (gpu.host_prep)

    def send(self, message: msg.Reply) -> None:
        self.out.write(msg.encode(message))
        self.out.flush()

    def progress(self, line: str) -> None:
        self.send(msg.ProgressLine(line))

    def init(self, init: msg.Init) -> msg.Ready:
        from wfbench_core.compiling.compile import cuda_compiler
        from wfbench_core.discover.registry import Registry

        self.request = init.request
        self.bundle = Path(init.bundle)
        if self.registry is None:
            self.registry = Registry.load()  # the plugins the executor's environment names
        self.timer = self.registry.make_timer(self.request.protocol)
        environment = self.timer.environment()  # NoGpuError: one clear line, the run ends
        self.arch = sm_arch(environment.compute_capability)
        self.cuda = cuda_compiler(self.request.cuda_compiler)
        if self.request.sanitize:
            from wfbench_core.compiling.cudatools import require_tool

            require_tool("compute-sanitizer", why="--sanitize runs it")
        self._prefetch(list(init.prefetch), fp64_peak=init.copy and hasattr(self.timer, "fp64_peak_gflops"))
        if self.prep is None:
            from wfbench_core.gpu.host_prep import start_for

            self.prep = start_for(self.timer, self.registry, self.bundle, list(init.prefetch), self.progress)
        if init.copy:  # the run's yardsticks, measured once by its first worker
            environment = attrs.evolve(environment, copy_gbps=self.timer.copy_gbps(),
                                       fp64_peak_gflops=self._fp64_peak())
        given = environment if init.copy else attrs.evolve(  # later workers are told the first one's
            environment, copy_gbps=init.copy_gbps, fp64_peak_gflops=init.fp64_peak_gflops)
        self.yardsticks = Yardsticks.of(given)
        return msg.Ready(environment, self.cuda, self.arch)

    def _prefetch(self, case_ids: list[str], fp64_peak: bool = False) -> None:
        """Start compiling the CUDA side of ``case_ids`` (both configurations) ahead of their turn, and first
        the f64 peak micro-kernel where this worker measures the yardsticks (it compiles while the copy runs)."""
        from wfbench_core.compiling.compile import prefetch_cuda

        sources: list[tuple[Any, str]] = []
        if fp64_peak:
            from wfbench_core.gpu.roofline import FP64_CASE_ID, SOURCE

            sources.append((FP64_CASE_ID, SOURCE))
        for cid in case_ids:
            try:
                variants = self._variants(cid)
            except WfbenchError:
                continue  # a case that cannot be read says so when its turn comes
            sources += [(CaseKey(cid, config=config), next(iter(variants.values())).files[config].cuda_source)
                        for config in CONFIGS]
        prefetch_cuda(sources, arch=self.arch, compiler=self.cuda)

    def _variants(self, case_id: str) -> dict[str, Any]:
        """``{label: Prepared}`` of a case with its files loaded, from this worker's one match of the bundle."""
        if self.plan is None:
            from wfbench_core.compiling.prepare import prepare_all

            self.plan = prepare_all(self.bundle, self.registry, load=False)[1]
        if case_id not in self.loaded:
            if case_id not in self.plan:
                raise WfbenchError(f"case {case_id!r} is not in bundle {self.bundle}; it holds "
                                   f"{', '.join(self.plan) or 'no cases'}")
            self.loaded[case_id] = {label: p.loaded() for label, p in self.plan[case_id].items()}
        return self.loaded[case_id]

    def _fp64_peak(self) -> float | None:
        """The f64 add/multiply peak for the roofline, where the timer measures one (None when it cannot)."""
        measure = getattr(self.timer, "fp64_peak_gflops", None)
        if measure is None:
            return None
        try:
            with watchdog.guard("the f64 peak micro-kernel", 0.2):
                peak: float | None = measure(self.cuda)
                return peak
        except WfbenchError as exc:
            self.progress(f"f64 peak not measured: {exc}")
            return None

    def case(self, case_id: str) -> msg.Results:
        from wfbench_core.gpu.host_prep import handing

        variants = self._variants(case_id)
        self.loaded.pop(case_id)  # each case runs once per worker: its files need not stay
        protocol = self.request.protocol
        timer = self._timer(protocol)
        arrays, wait_s = self.prep.turn(case_id) if self.prep is not None else (None, None)
        with handing(timer, arrays):
            results = run_case(variants, timer=timer, protocol=protocol, cuda=self.cuda, arch=self.arch,
                               mode=self.request.mode, sanitize=self.request.sanitize, progress=self.progress,
                               yardsticks=self.yardsticks, ceiling=self._ceiling(case_id))
        return msg.Results(tuple(self.prep.with_wait(results, wait_s) if self.prep is not None else results))

    def _ceiling(self, case_id: str) -> Ceiling | None:
        """The case's declared ceiling when the run asked for ceilings (``--ceiling``), else None."""
        from wfbench_core.ceiling import Ceiling

        found = self.registry.ceiling(case_id) if self.request.ceiling else None
        return found if isinstance(found, Ceiling) else None

    def point(self, request: msg.RunPoint) -> msg.Results:
        """One size of a case's sweep: the case's check files and the point's canonical ones, timed as a case is
        (correctness first), in the timing mode asked for; no static diagnostics."""
        from wfbench_core.compiling.bundle import load_sweep_point
        from wfbench_core.compiling.prepare import Prepared

        variants = {}
        for label, prep in self._variants(request.case_id).items():  # kept loaded for the sweep's next points
            if prep.entry is None or not 0 <= request.index < len(prep.entry.sweep):
                raise WfbenchError(f"{request.case_id}: the bundle holds no sweep point {request.index}; build it "
                                   f"with 'wfbench build --sweep'")
            points = self.swept.get(request.case_id)
            if points is None:  # the first point of this case: every point's files read, their CUDA compiled ahead
                points = self.swept[request.case_id] = [_or_error(load_sweep_point, prep.folder, prep.entry,
                                                                  prep.case, i) for i in range(len(prep.entry.sweep))]
                self._prefetch_points(prep, [p for p in points if not isinstance(p, WfbenchError)])
            if isinstance(points[request.index], WfbenchError):
                raise points[request.index]  # this point's files are broken: this point fails, not the others
            at, files = points[request.index]
            variants[label] = Prepared(at, prep.plugin, {"check": prep.files["check"], "canonical": files})
        protocol = attrs.evolve(self.request.protocol, timing_mode=request.timing_mode)
        return msg.Results(tuple(run_case(variants, timer=self._timer(protocol), protocol=protocol, cuda=self.cuda,
                                          arch=self.arch, mode=self.request.mode, progress=self.progress,
                                          yardsticks=self.yardsticks, diagnose=False)))

    def _prefetch_points(self, prep: Any, points: list[Any]) -> None:
        """Start compiling the CUDA side of every point of a sweep (and its check size once) ahead."""
        from wfbench_core.compiling.compile import prefetch_cuda

        sources = [(prep.case.key("check"), prep.files["check"].cuda_source)]
        sources += [(at.key("canonical"), files.cuda_source) for at, files in points]
        prefetch_cuda(sources, arch=self.arch, compiler=self.cuda)

    def _timer(self, protocol: TimingProtocol) -> Timer:
        """The timer of ``protocol``'s timing mode: the run's own, or one made for that mode once."""
        if protocol.timing_mode == self.request.protocol.timing_mode and self.timer is not None:
            return self.timer
        if protocol.timing_mode not in self.timers:
            self.timers[protocol.timing_mode] = self.registry.make_timer(protocol)
        return self.timers[protocol.timing_mode]

    def serve(self, requests: IO[bytes]) -> None:
        for line in requests:
            try:
                request = msg.decode(line)
            except WfbenchError as exc:
                self.send(msg.Fatal(f"the GPU worker got {exc}"))
                return
            if not self.handle(request):
                return

    def handle(self, request: msg.Message) -> bool:
        """Answer one request; False when this worker must end (asked to, or unusable)."""
        is_case = isinstance(request, (msg.RunCase, msg.RunPoint))
        try:
            if isinstance(request, msg.Init):
                watchdog.install(self.send, request.request.case_timeout_s)
                self.send(self.init(request))
            elif isinstance(request, msg.RunCase):
                self.send(self.case(request.case_id))
            elif isinstance(request, msg.RunPoint):
                self.send(self.point(request))
            else:
                return False
        except WfbenchError as exc:
            if is_case:  # a case's own problem: reported, the worker stays usable or is replaced
                self.send(msg.CaseError(str(exc)))
            else:
                self.send(msg.Fatal(str(exc), exc.exit_code))
                return False
        except Exception as exc:  # a plugin's bug: one line, and this process is replaced
            what = f"{type(exc).__name__}: {exc}"
            if is_case:
                self.send(msg.CaseError(f"the timer raised {what}", restart=True))
            else:
                self.send(msg.Fatal(f"the GPU worker could not start: {what}", 2))
            return False
        return True


def _or_error(load: Any, *args: Any) -> Any:
    """``load(*args)``, or the WfbenchError it raised."""
    try:
        return load(*args)
    except WfbenchError as exc:
        return exc


def main(argv: list[str]) -> None:
    from wfbench_core.gpu.child import die_with_parent

    die_with_parent()  # the executor's child setup asks for it too; this covers a worker started otherwise
    out = os.fdopen(int(argv[1]), "w", buffering=1)
    # Whatever a library prints must not reach the executor's standard output (it may be --json).
    os.dup2(2, 1)
    worker = Worker(out)
    try:
        worker.serve(sys.stdin.buffer)
    finally:
        if worker.prep is not None:  # the helper making inputs ahead ends with this worker
            worker.prep.close()
    # Asked to end, or unusable and having said why: everything it had to say is sent. The driver reclaims the
    # context and every allocation with the process; Python's own teardown (freeing each buffer and unloading each
    # module one call at a time) would only keep the executor waiting at the end of every run.
    out.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
