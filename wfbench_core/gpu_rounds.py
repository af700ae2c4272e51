"""The GPU edge of sampling for the default timer: placements, clean rounds and the timing modes.

:class:`CudaRounds` implements :class:`wfbench_core.sampling.Rounds` on the timer's context and stream:

- ``place``: fresh input and output buffers, each a new allocation padded by a random 256-byte-multiple
  offset, the case's canonical inputs copied in again (outside any timed span), and the sides' launches
  re-bound to them.
- ``round`` in mode ``events``: a short spin kernel (on ``%globaltimer``) is queued first, so the start
  event is recorded while the GPU is busy and neither side carries the host's submission latency; then
  each side's launches go back to back between two events.
- mode ``graph``: the same, but each side's launches are captured once per placement as a CUDA graph of at
  most :data:`GRAPH_CHUNK` launches and replayed, so launch overhead is gone for kernels of a few us.
- mode ``cold-l2``: before every launch an L2-sized buffer is overwritten (as nvbench's cold measurement
  does), outside the timed span: each launch is timed by its own pair of events and a side's sample is the
  sum. At most :data:`COLD_MAX_LAUNCHES` launches make a sample.

numba-cuda, cuda.core and cuda.bindings are imported lazily (through the timer).
"""

from __future__ import annotations

import ctypes
import math
from typing import Any, Callable, Mapping, Sequence

import attrs
import numpy as np

from wfbench_core.case import Case
from wfbench_core import watchdog
from wfbench_core.errors import WfbenchError
from wfbench_core.results import TIMING_COLD_L2, TIMING_GRAPH

SPIN_NS = 40_000  # the spin kernel keeps the GPU busy this long before each round's start event
GRAPH_CHUNK = 256  # launches per captured graph; a sample replays it
COLD_MAX_LAUNCHES = 256  # cold-L2 samples: each launch has its own events and flush

SPIN_KERNEL = "wfbench_spin"
SPIN_PTX = """\
.version 7.5
.target sm_75
.address_size 64

.visible .entry wfbench_spin(.param .u64 ns)
{
    .reg .pred  %p;
    .reg .b64   %rd<5>;

    ld.param.u64    %rd1, [ns];
    mov.u64         %rd2, %globaltimer;
$L_spin:
    mov.u64         %rd3, %globaltimer;
    sub.s64         %rd4, %rd3, %rd2;
    setp.lt.u64     %p, %rd4, %rd1;
    @%p bra         $L_spin;
    ret;
}
"""


@attrs.frozen
class TimingSetup:
    """What timing needs from the correctness phase: the case, each side's loaded canonical kernel, the
    canonical inputs (host) and the reference outputs (their shapes and dtypes size the output buffers)."""

    case: Case
    kernels: Mapping[str, Any]  # side label -> loaded kernel (numba Function)
    inputs: Mapping[str, Any]
    want: Mapping[str, np.ndarray]


def _driver_ok(result: Any, what: str) -> Any:
    """Unpack a cuda.bindings driver call's ``(CUresult, value...)``; a failure is one clear error."""
    from cuda.bindings import driver as cu

    err = result[0] if isinstance(result, tuple) else result
    if err != cu.CUresult.CUDA_SUCCESS:
        name = cu.cuGetErrorName(err)[1]
        raise WfbenchError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")
    if isinstance(result, tuple) and len(result) > 1:
        return result[1]
    return None


class CudaRounds:
    """Rounds of paired launches on the timer's stream (see the module docstring)."""

    def __init__(self, timer: Any, setup: TimingSetup, mode: str) -> None:
        self.timer = timer
        self.setup = setup
        self.mode = mode
        self.cuda = timer._cuda
        self.stream = timer._stream
        self.labels = list(setup.kernels)
        self.launchers: dict[str, Callable[[], None]] = {}
        self.args: list[Any] = []  # the kernels' arguments in the current placement
        self.outputs: Mapping[str, Any] = {}
        self._buffers: list[Any] = []
        self._graphs: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._events = [self.cuda.event(timing=True) for _ in range(len(self.labels) + 1)]
        self._cold_events: list[tuple[Any, Any]] = []
        self._per_launch_ms: dict[str, float] = {}  # the latest per-launch time of each side (watchdog)
        module, fn = timer.load("spin", SPIN_PTX, SPIN_KERNEL)
        self._spin_module = module  # keeps the kernel loaded
        cfg = timer._LaunchConfig(grid=(1, 1, 1), block=(1, 1, 1), shmem_size=0)
        launch, stream, kernel, ns = timer._launch, timer._launch_stream, fn.kernel, ctypes.c_uint64(SPIN_NS)
        self._spin: Callable[[], None] = lambda: launch(stream, cfg, kernel, ns)
        self._flush_buf: Any = None
        if mode == TIMING_COLD_L2:
            l2 = int(getattr(timer._ctx.device, "L2_CACHE_SIZE", 0))
            if l2 <= 0:
                raise WfbenchError("cold-l2 timing needs the GPU's L2 size, which the driver did not report")
            self._flush_buf = self.cuda.device_array(l2, dtype=np.uint8, stream=self.stream)

    # -- placements -------------------------------------------------------------------------------

    def place(self, index: int, offsets: Callable[[int], np.ndarray]) -> None:
        case, cuda, stream = self.setup.case, self.cuda, self.stream
        self._drop_graphs()
        self.stream.synchronize()  # the previous placement's launches are done before its buffers go
        ptrs = [p for p in case.params if p.kind == "ptr"]
        offs = offsets(len(ptrs))
        bufs: dict[str, Any] = {}
        keep: list[Any] = []
        for p, off in zip(ptrs, offs):
            host = self.setup.want[p.name] if p.output else self.setup.inputs[p.name]
            nbytes = int(np.asarray(host).nbytes)
            off = int(off)
            raw = cuda.device_array(off + max(nbytes, 1), dtype=np.uint8, stream=stream)
            view = raw[off:off + nbytes].view(np.dtype(p.dtype)) if nbytes else raw[off:off + 1]
            if not p.output and nbytes:
                view.copy_to_device(np.ascontiguousarray(host, dtype=p.dtype).reshape(-1), stream=stream)
            keep.append(raw)
            bufs[p.name] = view
        stream.synchronize()
        self._buffers = keep
        scalars = {p.name: self.setup.inputs[p.name] for p in case.params if p.kind != "ptr"}
        self.args = args = self.timer._args(case, bufs, scalars)
        self.launchers = {label: self.timer._launcher(fn, case, "canonical", args)
                          for label, fn in self.setup.kernels.items()}
        self.outputs = {p.name: bufs[p.name].reshape(self.setup.want[p.name].shape) for p in case.outputs}

    # -- rounds -----------------------------------------------------------------------------------

    def fit(self, launches: int) -> int:
        launches = max(1, int(launches))
        if self.mode == TIMING_GRAPH:
            chunk = min(launches, GRAPH_CHUNK)
            return chunk * math.ceil(launches / chunk)  # a whole number of graph replays
        if self.mode == TIMING_COLD_L2:
            return min(launches, COLD_MAX_LAUNCHES)
        return launches

    def round(self, order: Sequence[str], launches: int) -> dict[str, float]:
        if self.mode == TIMING_COLD_L2:
            return self._cold_round(order, launches)
        ev, stream = self._events, self.stream
        graphs = {}
        if self.mode == TIMING_GRAPH:  # capture and instantiate before the timed span, not inside it
            graphs = {label: self._graph(label, self._chunk(launches)) for label in order}
        self._spin()  # the GPU is busy when events[0] is recorded: no side starts on an idle GPU
        ev[0].record(stream)
        for i, label in enumerate(order):
            if self.mode == TIMING_GRAPH:
                self._replay(graphs[label], launches // self._chunk(launches))
            else:
                go = self.launchers[label]
                for _ in range(launches):
                    go()
            ev[i + 1].record(stream)
        with watchdog.guard(f"a round of {launches} launches of {', '.join(order)}", self._expected_s(order, launches)):
            ev[-1].synchronize()
        return self._seen({label: self.timer._elapsed_ms(ev[i], ev[i + 1]) for i, label in enumerate(order)},
                          launches)

    def _expected_s(self, order: Sequence[str], launches: int) -> float:
        """What a round should take from the rounds before it (0 before the first: the watchdog's floor)."""
        return launches * sum(self._per_launch_ms.get(label, 0.0) for label in order) / 1000.0

    def _seen(self, ms: dict[str, float], launches: int) -> dict[str, float]:
        for label, value in ms.items():
            self._per_launch_ms[label] = value / max(launches, 1)
        return ms

    def _cold_round(self, order: Sequence[str], launches: int) -> dict[str, float]:
        from numba.cuda.cudadrv.driver import device_memset

        cuda, stream = self.cuda, self.stream
        while len(self._cold_events) < launches:
            self._cold_events.append((cuda.event(timing=True), cuda.event(timing=True)))
        out: dict[str, float] = {}
        for label in order:
            go = self.launchers[label]
            for j in range(launches):
                device_memset(self._flush_buf, j & 0xFF, self._flush_buf.nbytes, stream=stream)
                start, end = self._cold_events[j]
                start.record(stream)
                go()
                end.record(stream)
            with watchdog.guard(f"{launches} cold-L2 launches of {label}", self._expected_s([label], launches)):
                self._cold_events[launches - 1][1].synchronize()
            out[label] = sum(self.timer._elapsed_ms(s, e) for s, e in self._cold_events[:launches])
        return self._seen(out, launches)

    # -- graphs -----------------------------------------------------------------------------------

    @staticmethod
    def _chunk(launches: int) -> int:
        """Launches per captured graph for a sample of ``launches`` (a multiple of it, through fit())."""
        chunk = min(launches, GRAPH_CHUNK)
        if launches % chunk:
            raise WfbenchError(f"graph timing: {launches} launches is not a multiple of {chunk} (use fit())")
        return chunk

    def _replay(self, graph_exec: Any, times: int) -> None:
        from cuda.bindings import driver as cu

        h = cu.CUstream(int(self.stream.handle))
        for _ in range(times):
            _driver_ok(cu.cuGraphLaunch(graph_exec, h), "cuGraphLaunch")

    def _graph(self, label: str, chunk: int) -> Any:
        key = (label, chunk)
        if key in self._graphs:
            return self._graphs[key][1]
        from cuda.bindings import driver as cu

        h = cu.CUstream(int(self.stream.handle))
        go = self.launchers[label]
        _driver_ok(cu.cuStreamBeginCapture(h, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                   "cuStreamBeginCapture")
        try:
            for _ in range(chunk):
                go()
        except BaseException:
            cu.cuStreamEndCapture(h)  # leave the stream usable; the launch error is what counts
            raise
        graph = _driver_ok(cu.cuStreamEndCapture(h), "cuStreamEndCapture")
        try:
            graph_exec = _driver_ok(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        except WfbenchError:
            cu.cuGraphDestroy(graph)
            raise
        self._graphs[key] = (graph, graph_exec)
        _driver_ok(cu.cuGraphUpload(graph_exec, h), "cuGraphUpload")  # not on the first timed replay
        return graph_exec

    def _drop_graphs(self) -> None:
        if not self._graphs:
            return
        from cuda.bindings import driver as cu

        self.stream.synchronize()
        for graph, graph_exec in self._graphs.values():
            cu.cuGraphExecDestroy(graph_exec)
            cu.cuGraphDestroy(graph)
        self._graphs = {}

    def close(self) -> None:
        """Graphs and the flush buffer go; the last placement's outputs stay for the after-timing check."""
        self._drop_graphs()
        self._flush_buf = None
        self._cold_events = []
