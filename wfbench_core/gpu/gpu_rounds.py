"""The GPU edge of sampling for the default timer: placements, rotation, clean rounds and the timing modes.

:class:`CudaRounds` implements :class:`wfbench_core.gpu.sampling.Rounds` on a :class:`~wfbench_core.gpu.device.Device`:

- ``place``: fresh input and output buffers, each a new allocation padded by a random 256-byte-multiple
  offset, the case's canonical inputs copied in again from a device-side master copy and the outputs poisoned
  (outside any timed span: every buffer is written once before any timed launch touches it), and the sides'
  launches re-bound to them. Where a side's kernel keeps local memory, the context's per-thread stack size is
  set to the placement's (:func:`~wfbench_core.gpu.sampling.local_stack_bytes`), which lays local memory out
  anew; :meth:`CudaRounds.close` gives the context its earlier stack size back. With rotation there are
  :attr:`CudaRounds.sets` such sets, each at its own offsets, and launch j of a sample uses set j mod sets.
- **clean rounds**: every round starts behind a *gate*, a one-thread kernel that spins on a flag in mapped
  host memory (as nvbench's blocking kernel does). Queued behind it are an untimed *lead-in* (up to
  :data:`LEAD_MS` of launches of the case's side that goes last, never the library ceiling, so the first side
  starts on a busy GPU after the other side's kernel, just as the second side does; none for kernels longer
  than that), the start event and
  :data:`GATE_QUEUE_MS` of the first side's launches (at most :data:`GATE_MAX_QUEUED` launches in all); only
  then is the flag set. So the first side neither carries the host's submission latency nor waits on a host
  that falls behind (another thread holding the GIL for a few ms). The gate gives up after
  :data:`GATE_TIMEOUT_NS` and says so; such a round is re-taken (``gate_retakes``).
- **clock evidence**: every round is bracketed, outside its timed span, by a probe kernel (one block per SM;
  the block on SM 0 writes ``%globaltimer`` and ``%clock64`` into mapped host memory, as nvbench measures the
  GPU's frequency): the SM cycles over the nanoseconds between the two probes are the mean SM clock of the
  round (:meth:`CudaRounds.sm_mhz`). In ``events`` and ``graph`` mode a probe also runs between one side's end
  event and the next side's start event, outside both timed spans, so each side's own clock is known
  (:meth:`CudaRounds.side_mhz`): the sampler holds a pair's sides against each other (matching clocks).
- mode ``events``: each side's launches go back to back between two events.
- mode ``graph``: the same, but each side's launches are captured once per placement as a CUDA graph of at
  most :data:`GRAPH_CHUNK` launches and replayed, so launch overhead is gone for kernels of a few us.
- mode ``cold-l2``: before every launch an L2-sized buffer is overwritten (as nvbench's cold measurement
  does), outside the timed span: each launch is timed by its own pair of events and a side's sample is the
  sum. At most :data:`COLD_MAX_LAUNCHES` launches make a sample. As nvbench's cold measurement, launch by
  launch: the flush, the host waits for it, then the start event, the launch and the end event are queued
  behind the gate and the host opens it, so a start event is stamped when the GPU reaches it with its launch
  already queued: neither the launch latency nor the flush's tail is inside the timed span; and, as there,
  each launch is bracketed by the clock probe before its start event and after its end event.

Everything GPU-side goes through :class:`wfbench_core.gpu.device.Device` (which imports the CUDA libraries lazily).
"""

from __future__ import annotations

import ctypes
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from wfbench_core.case import Case
from wfbench_core.ceiling import LABEL as CEILING
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu import watchdog
from wfbench_core.gpu.correctness import TimedBuffers
from wfbench_core.gpu.device import Device, Kernel
from wfbench_core.gpu.helper_kernels import CLOCK_KERNEL, CLOCK_PTX, EMPTY, GATE_KERNEL, GATE_PTX, empty_ptx
from wfbench_core.gpu.sampling import buffer_sets, local_stack_bytes, per_side
from wfbench_core.record.results import TIMING_COLD_L2, TIMING_GRAPH

__all__ = ["CudaRounds", "TimingSetup"]  # internal: the names the rest of wfbench uses
GRAPH_CHUNK = 256  # launches per captured graph (a multiple of every rotation); a sample replays it
COLD_MAX_LAUNCHES = 256  # cold-L2 samples: each launch has its own events and flush
GATE_TIMEOUT_NS = 200_000_000  # the gate opens by itself after 0.2 s (the host never set the flag)
GATE_QUEUE_MS = 10.0  # the first side's launches queued behind the gate: this much GPU work, where known
GATE_MAX_QUEUED = 256  # launches queued behind the gate at most (the driver's launch queue stays far from full)
LEAD_MS = 2.0  # the untimed lead-in before the start event: at most this much GPU work (no launch longer)
GATE_MAX_RETAKES = 3  # a host that keeps missing the gate is an error, not an endless loop
FLOOR_LAUNCHES = 1024  # launches of the empty kernel per round of the launch floor (the mode may cap them)
FLOOR_ROUNDS = 5  # rounds of the launch floor after one untimed one; the floor is their median

@attrs.frozen
class TimingSetup:
    """What timing needs from the correctness phase: the case, each side's loaded canonical kernel, the
    canonical inputs (host) and the reference outputs (their shapes and dtypes size the output buffers)."""

    case: Case
    kernels: Mapping[str, Kernel]  # side label -> loaded kernel
    inputs: Mapping[str, Any]
    want: Mapping[str, np.ndarray]
    # side label -> each output as the correctness phase checked it: the timed buffers are verified against
    # these after every placement (none: not verified, as in ``wfbench crosscheck``)
    good: Mapping[str, Mapping[str, np.ndarray]] | None = None
    ceiling: Any = None  # --ceiling: its launcher maker (gpu.ceiling_side.CeilingLaunchers), one more side
    checked: Any = None  # the correctness phase's Checked: its outputs and poison already on the device


class CudaRounds:
    """Rounds of paired launches on the device's stream (see the module docstring)."""

    def __init__(self, device: Device, setup: TimingSetup, mode: str, *, rotation: int) -> None:
        self.device, self.setup = device, setup
        self.labels = list(setup.kernels) + ([CEILING] if setup.ceiling is not None else [])
        self._capture_failed = ""  # why capturing the ceiling's call failed, once it has (graph mode)
        self.launchers: dict[str, list[Callable[[], None]]] = {}  # label -> one launcher per buffer set
        self.set_args: list[list[Any]] = []  # the kernels' arguments of each buffer set of the placement
        self.gate_retakes = 0
        self._mode = mode
        self._buffers: list[Any] = []
        self._offsets: tuple[int, ...] = ()
        self._graphs: dict[tuple[str, int], tuple[Any, Any]] = {}
        # each side's start and end events (a probe runs between one side's end and the next side's start)
        self._events = [(device.event(), device.event()) for _ in range(max(len(self.labels), 1))]
        self._cold_events: list[tuple[Any, Any]] = []
        self._per_launch_ms: dict[str, float] = {}  # the latest per-launch time of each side (watchdog, gate)
        self._flush_buf: Any = None
        self._cold_probes: list[Callable[[], None]] = []  # cold-l2: the clock probes around each launch
        self._cold_stamps: Any = None
        case = setup.case
        self._ptrs = [p for p in case.params if p.kind == "ptr"]
        host = {p.name: np.ascontiguousarray(setup.want[p.name] if p.output else setup.inputs[p.name],
                                             dtype=p.dtype).reshape(-1) for p in self._ptrs}
        self._nbytes = {name: int(a.nbytes) for name, a in host.items()}
        self.buffer_bytes = sum(self._nbytes.values())  # what one launch is given: the plausibility gate's bound
        # the inputs stay on the GPU once, so a new placement copies device to device
        self._master = {p.name: device.to_device(host[p.name]) for p in self._ptrs
                        if not p.output and self._nbytes[p.name]}
        device.synchronize()
        self.sets = buffer_sets(sum(self._nbytes.values()), l2_bytes=device.l2_bytes, free_bytes=device.free_bytes(),
                                limit=rotation)
        self.one_thread = device.config((1, 1, 1), (1, 1, 1))  # the gate's and the launch floor's launches
        self._gate_kernel, self._flag, self._gate = self._make_gate()
        # the launch floor's empty kernel takes the case's parameters: launched with a buffer set's arguments, it
        # costs the host what a side's launch costs (an empty kernel without them read a third of that on the H200)
        self.floor_kernel = device.load(empty_ptx([p.kind for p in case.params]), EMPTY, case_id="floor",
                                        label="floor")
        self._empty = device.launcher(self.floor_kernel, self.one_thread, device.null_args(case))
        self._clock = device.load(CLOCK_PTX, CLOCK_KERNEL, case_id="clock", label="clock")
        # the local memory the case's kernels keep per thread: each placement lays it out anew
        self._local_need = max((k.resources().local_bytes for k in setup.kernels.values()), default=0)
        self._stack_before = device.stack_bytes() if self._local_need else 0  # given back by close()
        self.stack_bytes: list[int] = []  # the per-thread stack size of each placement (local memory only)
        # [2k, 2k+1]: ns and SM cycles at probe k: 0 before a round, k after its k-th side
        self._stamps = device.mapped(2 * (len(self.labels) + 1), np.uint64)
        self._probes = self._clock_probes(self._stamps, len(self.labels) + 1)
        self._order: tuple[str, ...] = ()  # the sides of the last round, in order
        # A kernel's first launch loads it (lazily, on the host: a PTX module is compiled then). Made here,
        # outside any gate, so that no gate waits for it past its timeout (a round re-taken for nothing).
        self._empty()
        self._probes[0]()
        device.synchronize()
        on = setup.checked
        self.check = None if setup.good is None else TimedBuffers(
            device, case, setup.want, setup.good, kept=on.kept if on else None, poison=on.poison if on else None,
            differ=on.differ if on else None)
        self.check_s = 0.0  # wall time of re-poisoning and verifying the timed buffers
        self._outs: list[dict[str, Any]] = []  # each buffer set's output buffers
        self._last_writer = ""  # the side whose launches came last (its output is what the buffers hold)

    def _make_gate(self) -> tuple[Kernel, Any, Callable[[], None]]:
        """The gate's kernel (it stays loaded), its flag in mapped host memory ([0]: the host opens the gate,
        [1]: it timed out) and its launcher."""
        device = self.device
        kernel = device.load(GATE_PTX, GATE_KERNEL, case_id="gate", label="gate")
        flag = device.mapped(2, np.uint32)
        args = (ctypes.c_uint64(device.address(flag)), ctypes.c_uint64(GATE_TIMEOUT_NS))
        return kernel, flag, device.launcher(kernel, self.one_thread, args)

    def _clock_probes(self, stamps: Any, slots: int = 2) -> list[Callable[[], None]]:
        """The clock probes (one block per SM; SM 0 writes the time and its cycles into slot k of ``stamps``)."""
        device = self.device
        config = device.config((max(1, device.sm_count), 1, 1), (1, 1, 1))
        return [device.launcher(self._clock, config, (ctypes.c_uint64(device.address(stamps)), ctypes.c_uint64(k)))
                for k in range(slots)]

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        """Another timing mode on the same buffers (``wfbench crosscheck`` times every mode on one placement)."""
        self._drop_graphs()
        self._mode = mode

    @property
    def capture_note(self) -> str:
        """Why graph mode times the ceiling with events (not capturable, or its capture failed); else ""."""
        ceiling = self.setup.ceiling
        if ceiling is None or self._mode != TIMING_GRAPH:
            return ""
        if not ceiling.ceiling.capturable:
            return f"{ceiling.ceiling.routine} cannot be captured into a CUDA graph; timed with events"
        return self._capture_failed

    # -- placements -------------------------------------------------------------------------------

    def place(self, index: int, offsets: Callable[[int], np.ndarray]) -> None:
        case, device = self.setup.case, self.device
        offs = tuple(int(o) for o in offsets(len(self._ptrs) * self.sets))
        if offs == self._offsets and self._buffers:
            return  # the same placement again: the same buffers
        self._drop_graphs()
        device.synchronize()  # the previous placement's launches are done before its buffers go
        self._buffers = []
        device.release()
        keep: list[Any] = []
        self.set_args, self._outs, self._inputs = [], [], []
        scalars = {p.name: self.setup.inputs[p.name] for p in case.params if p.kind != "ptr"}
        for k in range(self.sets):
            bufs: dict[str, Any] = {}
            for p, off in zip(self._ptrs, offs[k * len(self._ptrs):(k + 1) * len(self._ptrs)]):
                nbytes = self._nbytes[p.name]
                raw = device.empty(off + max(nbytes, 1), np.uint8)
                view = raw[off:off + nbytes].view(np.dtype(p.dtype)) if nbytes else raw[off:off + 1]
                if p.name in self._master:
                    device.copy_in(view, self._master[p.name])
                keep.append(raw)
                bufs[p.name] = view
            self.set_args.append(device.args(case, bufs, scalars))
            self._inputs.append({name: bufs[name] for name in self._master})
            self._outs.append({p.name: bufs[p.name] for p in case.outputs})
            self._fill(self._outs[-1])
        device.synchronize()
        self._buffers, self._offsets = keep, offs
        if self._local_need:  # laid out after the placement's buffers, as the kernels' next launch would
            stack = local_stack_bytes(self._local_need, index)
            device.set_stack_bytes(stack)
            self.stack_bytes.append(stack)
        self.launchers = {label: [device.case_launcher(kernel, case, "canonical", args) for args in self.set_args]
                          for label, kernel in self.setup.kernels.items()}
        self.launchers[EMPTY] = [device.launcher(self.floor_kernel, self.one_thread, args) for args in self.set_args]
        if self.setup.ceiling is not None:  # its outputs and handles are made here, outside any timed span
            self.setup.ceiling.drop()
            self.launchers[CEILING] = [self.setup.ceiling.make(ins) for ins in self._inputs]

    def _fill(self, outs: Mapping[str, Any]) -> None:
        """A new buffer set's outputs, written once as they are made (its inputs are written by their copy): the
        poison where the timed buffers are checked, else zeros. No timed launch is the first to touch a buffer,
        and this costs a copy, not a round of the case's launches."""
        if self.check is not None:
            self.check.poison(outs)
            return
        for buf in outs.values():
            self.device.memset(buf, 0)

    # -- rounds -----------------------------------------------------------------------------------

    def fit(self, launches: int) -> int:
        launches = self.sets * math.ceil(max(1, int(launches)) / self.sets)  # every set equally often
        if self.mode == TIMING_GRAPH:
            chunk = min(launches, GRAPH_CHUNK)
            return chunk * math.ceil(launches / chunk)  # a whole number of graph replays
        if self.mode == TIMING_COLD_L2:
            return min(launches, COLD_MAX_LAUNCHES)
        return launches

    def round(self, order: Sequence[str], launches: int | Mapping[str, int]) -> dict[str, float]:
        n = per_side(order, launches)  # each side's own launches
        # the last of the case's own sides (never the library ceiling) wrote the outputs last, and is the lead-in:
        # the first side starts after one of the case's kernels, and its clock span holds no ceiling launch
        self._last_writer = next((label for label in reversed(order) if label != CEILING), order[-1])
        self._stamps[:] = 0
        self._order = tuple(order)
        if self.mode == TIMING_COLD_L2:
            self._probes[0]()
            ms = {label: self._cold_side(label, n[label]) for label in order}
            self._probes[len(order)]()
            return self._seen(ms, n)
        ev, device = self._events, self.device
        graphs = {}
        if self.mode == TIMING_GRAPH:  # capture and instantiate before the timed span, not inside it
            graphs = {label: self._graph(label, self._chunk(n[label])) for label in order}
        lead = self._lead(self._last_writer, n[self._last_writer])
        queued = self._queued(order[0], n[order[0]], GATE_MAX_QUEUED - lead)

        def enqueue() -> None:
            self._probes[0]()  # before the lead-in, outside the timed span
            last = self.launchers[self._last_writer]
            for j in range(lead):  # untimed: the first side starts after the other side's kernel
                last[j % len(last)]()
            for i, label in enumerate(order):
                if i:
                    self._probes[i]()  # between the sides, outside both timed spans: each side's own clock
                device.record(ev[i][0])
                if self.mode == TIMING_GRAPH and graphs[label] is not None:
                    times = n[label] // self._chunk(n[label])
                    self._replay(graphs[label], 1)
                    if i == 0:
                        self._open()
                    self._replay(graphs[label], times - 1)
                else:
                    gos = self.launchers[label]
                    sets = len(gos)
                    if i == 0:
                        for j in range(queued):
                            gos[j % sets]()
                        self._open()
                        for j in range(queued, n[label]):
                            gos[j % sets]()
                    else:
                        for j in range(n[label]):
                            gos[j % sets]()
                device.record(ev[i][1])
            self._probes[len(order)]()

        what = f"a round of {', '.join(f'{n[label]} launches of {label}' for label in order)}"
        self._gated(enqueue, ev[len(order) - 1][1], what, self._expected_s(n))  # the round's last event
        return self._seen({label: device.elapsed_ms(*ev[i]) for i, label in enumerate(order)}, n)

    def sm_mhz(self) -> float | None:
        """The mean SM clock between the last round's two probes (SM cycles per ns); None where a probe did not
        write (no block ran on SM 0) or the timer did not move."""
        self.device.synchronize()  # the closing probe is queued after the round's last event
        return self._between(0, len(self._order))

    def side_mhz(self) -> dict[str, float] | None:
        """Each side's mean SM clock in the last round (from the probe before it to the probe after it); None in
        cold-l2 mode (its probes bracket each launch) or where a probe did not write."""
        if self.mode == TIMING_COLD_L2:
            return None
        self.device.synchronize()
        out = {label: mhz for i, label in enumerate(self._order) if (mhz := self._between(i, i + 1)) is not None}
        return out if len(out) == len(self._order) else None

    def _between(self, a: int, b: int) -> float | None:
        """SM cycles per ns between probes ``a`` and ``b`` of the last round, in MHz."""
        s = [int(x) for x in self._stamps]
        ns0, cyc0, ns1, cyc1 = s[2 * a], s[2 * a + 1], s[2 * b], s[2 * b + 1]
        if not (ns0 and ns1 > ns0 and cyc1 > cyc0):
            return None
        return (cyc1 - cyc0) / (ns1 - ns0) * 1000.0

    # -- the timed buffers' checks and the launch floor ----------------------------------------------

    def repoison(self) -> None:
        if self.check is None:
            return
        t0 = time.perf_counter()
        for outs in self._outs:
            self.check.poison(outs)
        self.check_s += time.perf_counter() - t0

    def verify(self, placement: int) -> None:
        """Every buffer set's outputs as the timed launches left them (the last side's output), then one buffer
        set's (set ``placement`` mod sets: every set in turn) after a launch of each side into re-poisoned outputs
        and a launch over its own output; a wrong one raises WrongOnTimedBuffers. The verifying launches cost
        what a sample of one launch per side costs, not one per set: a long kernel's placement would otherwise
        take as long to check as to time."""
        if self.check is None:
            return
        t0 = time.perf_counter()
        expected_s = sum(self._per_launch_ms.values()) / 1000.0 * 2
        if self._last_writer in self.setup.kernels:
            for k, outs in enumerate(self._outs):
                with watchdog.guard(f"checking buffer set {k} of placement {placement}", expected_s):
                    self.check.expect(outs, self._last_writer, placement=placement, buffer_set=k)
        k = placement % len(self._outs)
        with watchdog.guard(f"verifying buffer set {k} of placement {placement}", expected_s):
            for label in self.setup.kernels:
                self.check.verify_launch(self.launchers[label][k], self._outs[k], label, placement=placement,
                                         buffer_set=k)
        self.check_s += time.perf_counter() - t0

    def launch_floor_us(self) -> float:
        """Per-launch time of an empty kernel, timed as the sides are (this mode, behind the gate), in us."""
        from wfbench_core.stats import median

        launches = self.fit(FLOOR_LAUNCHES)
        self.round([EMPTY], launches)  # untimed: the graph is captured, the launch path is warm
        return median([self.round([EMPTY], launches)[EMPTY] / launches for _ in range(FLOOR_ROUNDS)]) * 1000.0

    def _lead(self, label: str, launches: int) -> int:
        """Launches of the lead-in: as many of ``label``'s as fit in LEAD_MS (none before its time is known, or
        when one launch is longer), at most a quarter of what the gate may hold and a sample's launches."""
        per = self._per_launch_ms.get(label)
        want = 0 if not per else int(LEAD_MS // per)
        return max(0, min(want, launches, GATE_MAX_QUEUED // 4))

    def _queued(self, label: str, launches: int, room: int) -> int:
        """Launches of the first side queued behind the gate: GATE_QUEUE_MS of its GPU work (as many as there
        is ``room`` for before its time is known), at least one."""
        per = self._per_launch_ms.get(label)
        want = room if not per else math.ceil(GATE_QUEUE_MS / per)
        return max(1, min(launches, room, want))

    def _open(self) -> None:
        self._flag[0] = 1

    def _gated(self, enqueue: Callable[[], None], last: Any, what: str, expected_s: float) -> None:
        """Close the gate, queue it and then ``enqueue`` (which may open it early and queue on while the GPU
        works), open it, wait for ``last``; re-take a round whose gate opened by itself (the host missed it: the
        GPU idled inside the timed span)."""
        for _ in range(GATE_MAX_RETAKES + 1):
            self._flag[0] = 0
            self._flag[1] = 0
            self._gate()
            try:
                enqueue()
            finally:
                self._open()  # a launch that raised must not leave the GPU waiting for the timeout
            with watchdog.guard(what, expected_s):
                last.synchronize()
            if not self._flag[1]:
                return
            self.gate_retakes += 1
        raise WfbenchError(f"the host did not open the start gate within {GATE_TIMEOUT_NS / 1e9:g} s in "
                           f"{GATE_MAX_RETAKES + 1} rounds in a row; the host is too busy to time on")

    def _expected_s(self, launches: Mapping[str, int]) -> float:
        """What a round of each side's ``launches`` should take from the rounds before it (0 before the first: the
        watchdog's floor)."""
        return sum(n * self._per_launch_ms.get(label, 0.0) for label, n in launches.items()) / 1000.0

    def _seen(self, ms: dict[str, float], launches: Mapping[str, int]) -> dict[str, float]:
        for label, value in ms.items():
            self._per_launch_ms[label] = value / max(launches[label], 1)
        return ms

    def _cold_side(self, label: str, launches: int) -> float:
        """A cold-L2 sample, launch by launch as nvbench's cold measurement: the flush, then the host waits for it (the
        GPU idle, the flush's writes done), then behind the gate the start event, the launch and the end event, queued
        whole before the gate opens; the sum of the launches' own times. So each start event is stamped when the GPU
        reaches it with its launch already queued behind it, and nothing of the flush is inside the timed span: neither
        the launch latency nor the flush's tail. As nvbench's, each launch is bracketed by the clock probe (one block
        per SM) before its start event and after its end event: what the GPU does around a kernel of a few us moves its
        timed span (an empty kernel read 0.22 us less without them on the H200)."""
        device = self.device
        if self._flush_buf is None:
            if device.l2_bytes <= 0:
                raise WfbenchError("cold-l2 timing needs the GPU's L2 size, which the driver did not report")
            self._flush_buf = device.empty(device.l2_bytes, np.uint8)
        while len(self._cold_events) < launches:
            self._cold_events.append((device.event(), device.event()))
        if not self._cold_probes:  # their own stamps: the round's probes keep theirs
            self._cold_stamps = device.mapped(4, np.uint64)
            self._cold_probes = self._clock_probes(self._cold_stamps)
        gos = self.launchers[label]
        per_s = self._per_launch_ms.get(label, 0.0) / 1000.0
        for j in range(launches):
            device.memset(self._flush_buf, j & 0xFF)
            device.synchronize()
            start, end = self._cold_events[j]

            def enqueue(j: int = j, start: Any = start, end: Any = end) -> None:
                self._cold_probes[0]()
                device.record(start)
                gos[j % len(gos)]()
                device.record(end)
                self._cold_probes[1]()

            self._gated(enqueue, end, f"cold-L2 launch {j} of {label}", per_s)
        return sum(device.elapsed_ms(s, e) for s, e in self._cold_events[:launches])

    # -- graphs -----------------------------------------------------------------------------------

    @staticmethod
    def _chunk(launches: int) -> int:
        """Launches per captured graph for a sample of ``launches`` (a multiple of it, through fit())."""
        chunk = min(launches, GRAPH_CHUNK)
        if launches % chunk:
            raise WfbenchError(f"graph timing: {launches} launches is not a multiple of {chunk} (use fit())")
        return chunk

    def _replay(self, graph_exec: Any, times: int) -> None:
        self.device.replay(graph_exec, times)

    def _graph(self, label: str, chunk: int) -> Any:
        """The instantiated graph of ``chunk`` launches of ``label``; None for a ceiling that cannot be captured
        (its launches are then made one by one between the same events)."""
        if label == CEILING and self.capture_note:
            return None
        key = (label, chunk)
        if key not in self._graphs:
            gos = self.launchers[label]

            def enqueue() -> None:
                for j in range(chunk):
                    gos[j % len(gos)]()

            try:
                self._graphs[key] = self.device.capture(enqueue)
            except Exception as exc:
                if label != CEILING:
                    raise
                self._capture_failed = f"capturing {self.setup.ceiling.ceiling.routine} failed ({exc}); timed with events"
                return None
        return self._graphs[key][1]

    def _drop_graphs(self) -> None:
        if not self._graphs:
            return
        self.device.synchronize()
        for graph, graph_exec in self._graphs.values():
            self.device.drop_graph(graph, graph_exec)
        self._graphs = {}

    def close(self) -> None:
        """Graphs, buffers, master copies and the flush buffer go."""
        self._drop_graphs()
        self.device.synchronize()
        self._buffers, self._master, self._flush_buf, self._cold_events = [], {}, None, []
        self._cold_probes, self._cold_stamps = [], None
        self.launchers, self.set_args, self._offsets, self._outs, self.check = {}, [], (), [], None
        if self.setup.ceiling is not None:
            self.setup.ceiling.drop()
        self.device.release()
        if self._local_need:  # the stack size the context had before the case (the next case sets its own)
            self.device.set_stack_bytes(self._stack_before)
