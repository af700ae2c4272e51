"""Correctness: poison, launch, read back, compare; the checks a case passes before and after it is timed.

Per configuration (``check`` then ``canonical``) and per side, into the side's own output buffers poisoned
first (a NaN with a payload no arithmetic produces for floats, a sentinel for integers): compare with the
numpy reference (integers exactly, as integers; elements still holding the poison are reported as never
written, apart from value errors); re-poison and launch a second time and require the same bits
(idempotence: every launch writes every element, and the same values); compare the sides with each other.
After timing, each side's outputs are re-poisoned and each side is launched once more and compared with the
reference again. Every failed check is one line (:func:`describe_check`).

Only the first launch's output is read back to the host: the second launch, and the launch after timing, are
compared with a copy of it kept on the device, 32-bit word by word (:class:`Differ`); an output whose bits
are the first's passes as the first did, and only one whose bits differ is read back and judged on the host
as before (so a failure says the same as ever). The kept copies are also what the timed buffers are verified
against (:class:`TimedBuffers`), with the poison already on the device: no output crosses the bus again.

Everything GPU-side goes through :class:`wfbench_core.gpu.device.Device`.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import attrs
import numpy as np

from wfbench_core.case import Case
from wfbench_core.contracts import Side
from wfbench_core.gpu import watchdog
from wfbench_core.gpu.comparison import (
    Comparison,
    compare,
    idempotence,
    poison_value,
)
from wfbench_core.gpu.device import Device, Kernel
from wfbench_core.gpu.host_prep import HostArrays, make_host_arrays
from wfbench_core.record.results import Check

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "DIFFER_BLOCK", "DIFFER_KERNEL", "DIFFER_PTX", "Checked", "Checker", "Differ", "TimedBuffers", "WrongOnTimedBuffers",
    "spent",
]

# -- the protocol on a device -------------------------------------------------------------------------------


@contextlib.contextmanager
def spent(costs: MutableMapping[str, float], key: str) -> Iterator[None]:
    """Add the wall time of the block to ``costs[key]``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        costs[key] = costs.get(key, 0.0) + time.perf_counter() - t0


@attrs.frozen
class Checked:
    """One configuration after its checks: each side's loaded kernel, the inputs (host) and reference outputs,
    each side's checked output, and a launch of each side into its own output buffers (for the checks after
    timing)."""

    config: str
    kernels: Mapping[str, Kernel]
    inputs: Mapping[str, Any]
    want: Mapping[str, np.ndarray]
    got: Mapping[str, Mapping[str, np.ndarray]]
    own: Mapping[str, tuple[Callable[[], None], Mapping[str, Any]]]
    # the device inputs the ``own`` launches read: a launcher holds their addresses, not the buffers, so they
    # must live as long as it does (a buffer no one holds is freed at the device's next release)
    device_inputs: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    # each side's checked output as a copy on the device, and how it compared with the reference
    kept: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, repr=False)
    compared: Mapping[str, Mapping[str, Comparison]] = attrs.field(factory=dict, repr=False)
    poison: Mapping[str, Any] = attrs.field(factory=dict, repr=False)  # each output's poison, on the device
    differ: Differ | None = attrs.field(default=None, repr=False)


class Checker:
    """Launches sides into poisoned outputs and compares what they wrote (see the module docstring)."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self._launch_s: dict[str, float] = {}  # slowest single launch seen, per configuration (watchdog)
        self._poison: dict[tuple[str, tuple[int, ...], str], Any] = {}  # one poisoned device copy per output
        self._differ: Differ | None = None

    @property
    def differ(self) -> Differ:
        if self._differ is None:
            self._differ = Differ(self.device)
        return self._differ

    def poisoned(self, name: str, want: np.ndarray) -> Any:
        """The poisoned device buffer of output ``name`` shaped as ``want``, made once (filled on the host once)."""
        key = (name, tuple(want.shape), want.dtype.str)
        if key not in self._poison:
            self._poison[key] = self.device.to_device(np.full(want.shape, poison_value(want.dtype)[0],
                                                              dtype=want.dtype))
        return self._poison[key]

    def poison(self, outs: Mapping[str, Any], want: Mapping[str, np.ndarray]) -> None:
        """Fill every output buffer with the poison of its dtype (see :func:`poison_value`), copied on the
        device from a poisoned buffer made once per output shape (not filled and sent from the host each time)."""
        for name, buf in outs.items():
            self.device.copy_in(buf, self.poisoned(name, want[name]))

    def run_once(self, go: Callable[[], None], outs: Mapping[str, Any], want: Mapping[str, np.ndarray],
                 what: str = "a launch", config: str = "") -> dict[str, np.ndarray]:
        """Poison the outputs, launch once, wait (under the watchdog), and read the outputs back."""
        self.launch_poisoned(go, outs, want, what, config)
        return self.device.read(outs)

    def launch_poisoned(self, go: Callable[[], None], outs: Mapping[str, Any], want: Mapping[str, np.ndarray],
                        what: str = "a launch", config: str = "") -> None:
        """Poison the outputs, launch once and wait (under the watchdog); the outputs stay on the device.

        The wait's expected time is the slowest launch of this configuration seen so far (none yet: the
        watchdog's floor applies).
        """
        self.poison(outs, want)
        seen = self._launch_s.setdefault(config, 0.0)
        t0 = time.perf_counter()
        with watchdog.guard(what, seen):
            go()
            self.device.synchronize()
        self._launch_s[config] = max(seen, time.perf_counter() - t0)

    def _same_as(self, outs: Mapping[str, Any], kept: Mapping[str, Any]) -> bool:
        """Whether every output holds the bits of its kept copy (counted on the device)."""
        return all(self.differ.count(buf, kept[name]) == 0 for name, buf in outs.items())

    def check_config(self, case: Case, sides: Sequence[Side], config: str, reference_label: str,
                     costs: MutableMapping[str, float], prepared: HostArrays | None = None
                     ) -> tuple[list[Check], Checked]:
        """Load every side for ``config``, launch each twice into its own poisoned outputs, compare each with
        the reference and with the reference side; the wall time of each step is added to ``costs``.

        The inputs and reference are ``prepared`` (made ahead, :mod:`wfbench_core.gpu.host_prep`) or made here;
        their costs are the time it took to make them, where they were made."""
        device = self.device
        with spent(costs, "load_s"):
            kernels = {s.label: device.load(s.ptx[config], s.kernel, case_id=case.id, config=config, label=s.label)
                       for s in sides}
        made = prepared if prepared is not None else make_host_arrays(case, config)
        costs["inputs_s"] = costs.get("inputs_s", 0.0) + made.inputs_s
        costs["reference_s"] = costs.get("reference_s", 0.0) + made.reference_s
        inputs, want = made.inputs, made.want
        with spent(costs, "alloc_copy_s"), device.faults(case.id, config, "", "allocate"):
            dev_in = {p.name: device.to_device(inputs[p.name]) for p in case.params if p.kind == "ptr" and not p.output}
            outs = {s.label: {p.name: device.empty(want[p.name].shape, want[p.name].dtype) for p in case.outputs}
                    for s in sides}
            device.synchronize()
        scalars = {p.name: inputs[p.name] for p in case.params if p.kind != "ptr"}
        own = {s.label: (device.case_launcher(kernels[s.label], case, config,
                                              device.args(case, {**dev_in, **outs[s.label]}, scalars)), outs[s.label])
               for s in sides}
        checks: list[Check] = []
        got: dict[str, dict[str, np.ndarray]] = {}
        kept: dict[str, dict[str, Any]] = {}
        compared: dict[str, dict[str, Comparison]] = {}
        with spent(costs, "correctness_s"):
            for s in sides:
                got[s.label], kept[s.label], compared[s.label] = self._twice(
                    case, config, s.label, kernels[s.label], own[s.label], want, checks)
            for s in sides:
                if s.label != reference_label:
                    checks.extend(_cross(case, config, s.label, reference_label, got))
        return checks, Checked(config, kernels, inputs, want, got, own, dev_in, kept, compared,
                               self.poison_buffers(want), self.differ)

    def _twice(self, case: Case, config: str, label: str, kernel: Kernel,
               own: tuple[Callable[[], None], Mapping[str, Any]], want: Mapping[str, np.ndarray],
               checks: list[Check]) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Comparison]]:
        """Launch one side twice into re-poisoned outputs: reference and idempotence checks; its first output, on
        the host and as a copy on the device, and how it compared with the reference."""
        go, outs = own
        what = f"{case.key(config)} {label} launch"
        with self.device.faults(case.id, config, label, "launch", kernel, case.launch(case.sizes[config])):
            first = self.run_once(go, outs, want, what, config)
            kept = {name: self.device.empty(want[name].shape, want[name].dtype) for name in outs}
            for name, buf in outs.items():
                self.device.copy_in(kept[name], buf)
            self.launch_poisoned(go, outs, want, what + " (again)", config)
            second = first if self._same_as(outs, kept) else self.device.read(outs)
        compared = {}
        for p in case.outputs:
            tol = case.tolerances[p.name]
            compared[p.name] = compare(first[p.name], want[p.name], tol.rtol, tol.atol)
            checks.append(compared[p.name].check(config, label, "reference", p.name))
            same = second is first  # the same bits: every element written, and the same value
            checks.append((Comparison(True, 0.0, 0.0, 0, int(first[p.name].size)) if same
                           else idempotence(first[p.name], second[p.name])).check(config, label, "idempotent", p.name))
        return first, kept, compared

    def after_timing(self, case: Case, checked: Checked) -> list[Check]:
        """After timing: re-poison each side's own outputs, launch it once, compare it to the reference (an output
        with the bits of the one checked before timing compares as that one did).

        Catches a kernel whose output depends on what timing left in memory (or on launch count).
        """
        checks = []
        for label, (go, outs) in checked.own.items():
            what = f"{case.key(checked.config)} {label} launch after timing"
            with self.device.faults(case.id, checked.config, label, "launch after timing"):
                self.launch_poisoned(go, outs, checked.want, what, checked.config)
                kept = checked.kept.get(label)
                after = None if kept is not None and self._same_as(outs, kept) else self.device.read(outs)
            for p in case.outputs:
                tol = case.tolerances[p.name]
                result = checked.compared[label][p.name] if after is None else \
                    compare(after[p.name], checked.want[p.name], tol.rtol, tol.atol)
                checks.append(result.check(checked.config, label, "after-timing", p.name))
        return checks

    def poison_buffers(self, want: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """Each output's poisoned device buffer (the timed buffers are poisoned from them)."""
        return {name: self.poisoned(name, w) for name, w in want.items()}

    def launch_once(self, case: Case, config: str, side: Side) -> dict[str, np.ndarray]:
        """Load one side's PTX, launch it once on the configuration's inputs into poisoned outputs, return them.

        The smallest complete use of a kernel (what ``compute-sanitizer`` watches in ``wfbench_core.gpu.sanitize``).
        """
        device = self.device
        kernel = device.load(side.ptx[config], side.kernel, case_id=case.id, config=config, label=side.label)
        inputs = case.make_inputs(config)
        want = case.make_reference(inputs, config)
        with device.faults(case.id, config, "", "allocate"):
            bufs = {p.name: device.to_device(inputs[p.name]) for p in case.params if p.kind == "ptr" and not p.output}
            outs = {p.name: device.empty(want[p.name].shape, want[p.name].dtype) for p in case.outputs}
        scalars = {p.name: inputs[p.name] for p in case.params if p.kind != "ptr"}
        go = device.case_launcher(kernel, case, config, device.args(case, {**bufs, **outs}, scalars))
        with device.faults(case.id, config, side.label, "launch", kernel, case.launch(case.sizes[config])):
            return self.run_once(go, outs, want, f"{case.key(config)} {side.label} launch", config)


def _cross(case: Case, config: str, label: str, reference_label: str,
           got: Mapping[str, Mapping[str, np.ndarray]]) -> list[Check]:
    """Side ``label`` against the reference side, output by output, under the case's tolerances."""
    checks = []
    for p in case.outputs:
        tol = case.tolerances[p.name]
        checks.append(compare(got[label][p.name], got[reference_label][p.name], tol.rtol, tol.atol)
                      .check(config, f"{label}~{reference_label}", "cross", p.name))
    return checks


# -- the timed buffers --------------------------------------------------------------------------------------

DIFFER_KERNEL = "wfbench_differ"
DIFFER_BLOCK = 256
# count the 32-bit words in which a and b differ (one atomic add per thread that found any)
DIFFER_PTX = """\
.version 7.5
.target sm_75
.address_size 64

.visible .entry wfbench_differ(.param .u64 a, .param .u64 b, .param .u64 words, .param .u64 count)
{
    .reg .pred  %p<4>;
    .reg .b32   %r<8>;
    .reg .b64   %rd<16>;

    ld.param.u64    %rd1, [a];
    ld.param.u64    %rd2, [b];
    ld.param.u64    %rd3, [words];
    ld.param.u64    %rd4, [count];
    mov.u32         %r1, %ctaid.x;
    mov.u32         %r2, %ntid.x;
    mov.u32         %r3, %tid.x;
    mov.u32         %r4, %nctaid.x;
    mul.wide.u32    %rd5, %r1, %r2;
    cvt.u64.u32     %rd6, %r3;
    add.u64         %rd5, %rd5, %rd6;
    mul.wide.u32    %rd7, %r4, %r2;
    mov.u64         %rd8, 0;
$L_loop:
    setp.ge.u64     %p1, %rd5, %rd3;
    @%p1 bra        $L_done;
    shl.b64         %rd9, %rd5, 2;
    add.u64         %rd10, %rd1, %rd9;
    add.u64         %rd11, %rd2, %rd9;
    ld.global.u32   %r5, [%rd10];
    ld.global.u32   %r6, [%rd11];
    setp.ne.u32     %p2, %r5, %r6;
    @%p2 add.u64    %rd8, %rd8, 1;
    add.u64         %rd5, %rd5, %rd7;
    bra             $L_loop;
$L_done:
    setp.eq.u64     %p3, %rd8, 0;
    @%p3 bra        $L_end;
    atom.global.add.u64 %rd12, [%rd4], %rd8;
$L_end:
    ret;
}
"""


class Differ:
    """Counts the 32-bit words in which two device buffers differ (the kernel above, loaded once)."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self._count = device.empty(1, np.uint64)
        self._zero = np.zeros(1, dtype=np.uint64)
        self._kernel = device.load(DIFFER_PTX, DIFFER_KERNEL, case_id="check", label="check")

    def count(self, a: Any, b: Any) -> int:
        """Words in which ``a`` and ``b`` differ (1 where their sizes differ or are not whole words: such buffers
        are compared on the host)."""
        if a.nbytes % 4 or a.nbytes != b.nbytes:
            return 1
        device, words = self.device, a.nbytes // 4
        device.copy_in(self._count, self._zero)
        blocks = min(math.ceil(words / DIFFER_BLOCK), max(1, 8 * device.sm_count)) or 1
        args = (ctypes.c_uint64(device.address(a)), ctypes.c_uint64(device.address(b)), ctypes.c_uint64(words),
                ctypes.c_uint64(device.address(self._count)))
        device.launch(self._kernel, device.config((blocks, 1, 1), (DIFFER_BLOCK, 1, 1)), args)
        return int(device.read({"count": self._count})["count"][0])


class WrongOnTimedBuffers(Exception):
    """The outputs of a timed placement are wrong: the case fails with this check (not timed)."""

    def __init__(self, check: Check) -> None:
        super().__init__(f"{check.side}: output {check.output} is wrong on timed placement {check.placement}")
        self.check = check


class TimedBuffers:
    """Verifies the outputs of the buffers that were timed, on the device.

    Each side's output from the correctness phase (checked against the reference, and bit-identical on a
    second launch) is kept on the device; a timed buffer set's output is compared with it word for word by a
    small kernel. Only where the bits differ is the output read back and compared with the reference under
    the case's tolerance (a kernel may round differently at another address and still be right). A wrong
    output raises :class:`WrongOnTimedBuffers` naming the placement and buffer set.
    """

    def __init__(self, device: Device, case: Case, want: Mapping[str, np.ndarray],
                 good: Mapping[str, Mapping[str, np.ndarray]], *, kept: Mapping[str, Mapping[str, Any]] | None = None,
                 poison: Mapping[str, Any] | None = None, differ: Differ | None = None) -> None:
        """``good``: each side's checked outputs (host); ``kept`` and ``poison``: the same outputs and each output's
        poison already on the device (:class:`Checked`, :meth:`Checker.poison_buffers`), used where they hold the
        timed buffers' layout instead of being sent to the device again."""
        self.device, self.case, self.want = device, case, want
        # as the timed buffers hold them: flat, in each output parameter's type
        flat = {p.name: np.ascontiguousarray(want[p.name], dtype=p.dtype).reshape(-1) for p in case.outputs}

        def on_device(like: np.ndarray, there: Any, host: Callable[[], np.ndarray]) -> Any:
            if there is not None and there.dtype == like.dtype and there.size == like.size:
                return there.reshape(like.size)
            return device.to_device(host())

        def poisoned(w: np.ndarray) -> Callable[[], np.ndarray]:
            return lambda: np.full(w.size, poison_value(w.dtype)[0], dtype=w.dtype)

        def as_flat(out: np.ndarray, like: np.ndarray) -> Callable[[], np.ndarray]:
            return lambda: np.ascontiguousarray(out, dtype=like.dtype).reshape(-1)

        self._poison = {name: on_device(w, (poison or {}).get(name), poisoned(w)) for name, w in flat.items()}
        self._good = {label: {name: on_device(flat[name], (kept or {}).get(label, {}).get(name),
                                              as_flat(out[name], flat[name])) for name in flat}
                      for label, out in good.items()}
        self._differ = differ or Differ(device)
        self.launches: dict[str, int] = dict.fromkeys(good, 0)  # verifying launches of each side
        device.synchronize()

    def poison(self, outs: Mapping[str, Any]) -> None:
        """Overwrite a buffer set's outputs with the poison (device to device)."""
        for name, buf in outs.items():
            self.device.copy_in(buf, self._poison[name])

    def verify_launch(self, go: Callable[[], None], outs: Mapping[str, Any], label: str, *, placement: int,
                      buffer_set: int) -> None:
        """Re-poison the outputs, launch side ``label`` once (``go``) and check what it wrote; then launch it
        again over its own output and check again (a kernel right only on a poisoned output fails there)."""
        self.poison(outs)
        for what in ("timed-buffers", "relaunch"):
            go()
            self.launches[label] += 1
            self.expect(outs, label, placement=placement, buffer_set=buffer_set, what=what)

    def expect(self, outs: Mapping[str, Any], label: str, *, placement: int, buffer_set: int,
               what: str = "left-by-timing") -> None:
        """The outputs hold what side ``label`` wrote in the correctness phase, or are right within tolerance."""
        for name, buf in outs.items():
            if self._differ.count(buf, self._good[label][name]) == 0:
                continue
            got = self.device.read({name: buf})[name].reshape(self.want[name].shape)
            tol = self.case.tolerances[name]
            check = compare(got, self.want[name], tol.rtol, tol.atol).check("canonical", label, what, name)
            if not check.passed:
                raise WrongOnTimedBuffers(attrs.evolve(check, placement=placement, buffer_set=buffer_set))

    def checks(self) -> list[Check]:
        """One passing check per side and output: how many elements the verifying launches wrote right (a
        buffer set's output is checked after each launch)."""
        return [Check("canonical", label, "timed-buffers", name, True, 0.0, 0.0, 0, int(w.size) * n)
                for label, n in self.launches.items() if n for name, w in self.want.items()]
