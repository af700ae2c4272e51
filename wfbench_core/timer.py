"""The default timer: numba-cuda's driver layer, cuda.core launches, CUDA events on one stream.

Protocol for one case (every side's PTX is loaded into the same context):

1. Correctness, per configuration (``check`` then ``canonical``) and per side, into the side's own output
   buffers poisoned first (a NaN with a payload no arithmetic produces for floats, a sentinel for
   integers): compare with the numpy reference (integers exactly, as integers; elements still holding
   the poison are reported as never written, apart from value errors); re-poison and launch a second
   time and require the same bits (idempotence: every launch writes every element, and the same
   values); compare the sides with each other. Any failure ends the case: it is not timed.
2. Timing, canonical size, every side on the same input and output buffers, fresh ones for each of
   ``placements`` blocks of pairs, launches rotating over several buffer sets inside a placement
   (``wfbench_core.sampling`` holds the rules, ``wfbench_core.gpu_rounds`` the GPU edge): warm up for at
   least ``warmup_s`` of busy GPU (clocks ramp), calibrate launches per sample so every sample lasts at
   least ``min_sample_ms``, then take rounds until the gap's interval is narrow enough or ``samples`` are
   taken; each round times every side back to back with CUDA events on one explicit stream, queued behind
   a gate kernel the host opens only once launches are waiting (no side starts on an idle GPU), rotating
   which side goes first. NVML is read on a thread meanwhile.
3. After timing, each side's outputs are re-poisoned and each side is launched once more and compared
   with the reference again.

Every CUDA error while loading, launching or waiting is raised as a classified
:class:`~wfbench_core.faults.KernelFault` (class, side, configuration, and whether the context is dead).
Compile, module load/JIT, input generation, allocation and copies are timed apart (``Costs``).
This module imports numba/cuda.core lazily: importing it needs no GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import platform
import socket
import sys
import time
from typing import Any, Iterator, Mapping, Sequence

import attrs
import numpy as np

from wfbench_core import watchdog
from wfbench_core.case import CONFIGS, Case
from wfbench_core.contracts import Measurement, Side
from wfbench_core.errors import NoGpuError, WfbenchError
from wfbench_core.faults import (LOAD_FAILURE, OUT_OF_RESOURCES, Fault, KernelFault, as_kernel_fault, classify,
                                 launch_limits, side_name)
from wfbench_core.gpu_rounds import CudaRounds, TimingSetup
from wfbench_core.results import TIMING_MODES, Check, Costs, Environment, KernelAttrs, TimingProtocol, sm_arch

INT_SENTINEL = 0x5A5A5A5A5A5A5A5A


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA GPU and driver are usable here, else one line saying why not."""
    try:
        from numba import cuda
    except ImportError:
        return "numba-cuda is not installed here: pip install 'wfbench[gpu]' on the GPU host"
    try:
        if not cuda.is_available():
            return "no NVIDIA GPU or CUDA driver found on this machine"  # each command adds where to go instead
    except Exception as exc:  # noqa: BLE001 - any driver failure means no GPU for us
        return f"the CUDA driver is not usable here ({type(exc).__name__}: {exc})"
    return None


def _float_dtype(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


# Poison written into every output before a launch: a NaN with a payload no arithmetic produces (floats),
# or the sentinel truncated to the width (integers). An element still holding it was never written.
_FLOAT_POISON_BITS = {8: 0x7FFA5A5A5A5A5A5A, 4: 0x7FDA5A5A, 2: 0x7E5A}


def poison_value(dtype: np.dtype | str) -> np.ndarray:
    """The poison of a dtype as a one-element array (bit-exact)."""
    dtype = np.dtype(dtype)
    if _float_dtype(dtype):
        bits = np.array([_FLOAT_POISON_BITS[dtype.itemsize]], dtype=f"u{dtype.itemsize}")
        return bits.view(dtype)
    return np.array([INT_SENTINEL], dtype=np.uint64).view(np.int64).astype(dtype)


def poison_name(dtype: np.dtype | str) -> str:
    dtype = np.dtype(dtype)
    return "NaN poison" if _float_dtype(dtype) else f"sentinel {int(poison_value(dtype)[0]):#x}"


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a


def never_written(got: np.ndarray, want: np.ndarray | None = None) -> np.ndarray:
    """Mask of the elements of ``got`` that still hold the poison (and that the reference does not hold)."""
    mask = _bits(got) == _bits(poison_value(got.dtype))[0]
    if want is not None and want.dtype == got.dtype and want.shape == got.shape:
        mask &= _bits(want) != _bits(poison_value(want.dtype))[0]
    return mask.ravel()


@attrs.frozen
class Comparison:
    """One output against its expected value. Error sizes are over the written, finite elements only."""

    passed: bool
    max_abs_err: float
    max_rel_err: float
    mismatches: int  # outside tolerance, unwritten and non-finite elements included
    total: int
    unwritten: int = 0  # still holding the poison
    nonfinite: int = 0  # written, NaN or inf where the expected value is finite

    def check(self, config: str, side: str, what: str, output: str) -> Check:
        return Check(config, side, what, output, self.passed, _json_float(self.max_abs_err),
                     _json_float(self.max_rel_err), self.mismatches, self.total, self.unwritten, self.nonfinite)


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, *, poison: bool = True) -> Comparison:
    """Elementwise ``|got-want| <= atol + rtol*|want|``.

    Integer outputs are compared as integers (exactly: an int64 off by one above 2**53 is a mismatch at
    tolerance 0). NaN or inf in ``got`` where ``want`` is finite is a mismatch. With ``poison``, elements
    of ``got`` still holding the poison are counted as never written, apart from value errors.
    """
    total = int(max(np.size(got), np.size(want)))
    if got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want):
        return Comparison(True, 0.0, 0.0, 0, total)  # identical: the common case, and cheap on large outputs
    if got.shape != want.shape:
        return Comparison(False, math.inf, math.inf, total, total)
    unwritten = never_written(got, want) if poison else np.zeros(got.size, dtype=bool)
    written = ~unwritten
    g, w = np.ravel(got), np.ravel(want)
    with np.errstate(all="ignore"):
        if np.issubdtype(g.dtype, np.integer) and np.issubdtype(w.dtype, np.integer):
            gi, wi = g.astype(np.int64), w.astype(np.int64)
            # |g - w| exactly, in uint64 (wraps correctly for any two int64 values)
            diff_u = np.where(gi >= wi, gi.view(np.uint64) - wi.view(np.uint64),
                              wi.view(np.uint64) - gi.view(np.uint64))
            if rtol == 0 and atol == 0:
                bad = gi != wi
            else:
                bad = (gi != wi) & ~(diff_u.astype(np.float64) <= atol + rtol * np.abs(wi.astype(np.float64)))
            diff = diff_u.astype(np.float64)
            wabs = np.abs(wi.astype(np.float64))
            nonfinite = np.zeros(g.size, dtype=bool)
        else:
            gf, wf = g.astype(np.float64), w.astype(np.float64)
            diff = np.abs(gf - wf)
            wabs = np.abs(wf)
            bad = ~(diff <= atol + rtol * wabs)  # NaN compares False -> bad
            nonfinite = ~np.isfinite(gf) & np.isfinite(wf)
        bad |= unwritten
        nonfinite &= written
        sized = written & np.isfinite(diff)  # the error size is over written, finite elements
        d = diff[sized]
        max_abs = float(d.max()) if d.size else 0.0
        r = np.where(wabs[sized] > 0, d / np.where(wabs[sized] > 0, wabs[sized], 1.0), np.where(d > 0, np.inf, 0.0))
        max_rel = float(r.max()) if r.size else 0.0
    n_bad = int(bad.sum())
    return Comparison(n_bad == 0, max_abs, max_rel, n_bad, total, int(unwritten.sum()), int(nonfinite.sum()))


def _json_float(x: float) -> float:
    # JSON has no inf/NaN; an infinite error is stored as the largest double (shown as "inf", never as a size).
    return x if math.isfinite(x) else sys.float_info.max


def _fmt_err(x: float) -> str:
    return "inf" if not math.isfinite(x) or x >= sys.float_info.max else f"{x:.3g}"


class CudaEventTimer:
    """The built-in timer (replace it through the ``wfbench_make_timer`` hook)."""

    def __init__(self, protocol: TimingProtocol) -> None:
        self.protocol = protocol
        self._ctx: Any = None
        self._stream: Any = None
        self._launch_s: dict[str, float] = {}  # slowest single launch seen, per configuration (watchdog)

    # -- set-up -----------------------------------------------------------------------------------

    def _init(self) -> None:
        if self._ctx is not None:
            return
        reason = gpu_unavailable_reason()
        if reason:
            raise NoGpuError(reason)
        from numba import cuda

        self._cuda = cuda
        self._ctx = cuda.current_context()
        self._stream = cuda.stream()
        try:
            from cuda.core import LaunchConfig, Stream, launch
        except ImportError:  # cuda-core < 0.4
            from cuda.core.experimental import LaunchConfig, Stream, launch  # type: ignore[no-redef]
        self._launch, self._LaunchConfig = launch, LaunchConfig
        # cuda.core launches go to the same stream numba's events are recorded on (numba owns it).
        self._launch_stream = Stream.from_handle(int(self._stream.handle))

    def environment(self) -> Environment:
        self._init()
        dev = self._ctx.device
        cc = dev.compute_capability
        env: dict[str, Any] = {
            "gpu_name": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
            "compute_capability": f"{cc[0]}.{cc[1]}",
            "sm_count": int(dev.MULTIPROCESSOR_COUNT),
            "l2_bytes": int(getattr(dev, "L2_CACHE_SIZE", 0)),
            "host": socket.gethostname(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numba_cuda_version": _dist_version("numba-cuda"),
            "cuda_core_version": _dist_version("cuda-core"),
        }
        from wfbench_core.nvml import facts

        env.update(facts(self._pci_bus_id()))
        return Environment(**env)

    def _pci_bus_id(self) -> str | None:
        dev = self._ctx.device
        try:
            return f"{int(dev.PCI_DOMAIN_ID):08x}:{int(dev.PCI_BUS_ID):02x}:{int(dev.PCI_DEVICE_ID):02x}.0"
        except Exception:  # noqa: BLE001
            return None

    def arch(self) -> str:
        self._init()
        return sm_arch(tuple(self._ctx.device.compute_capability))

    # -- primitives -------------------------------------------------------------------------------

    def _load(self, case_id: str, config: str, label: str, ptx: str, kernel: str) -> Any:
        with self._faults(case_id, config, label, "load"):
            module = self._ctx.create_module_ptx(ptx)
        try:
            fn = module.get_function(kernel)
        except Exception as exc:  # noqa: BLE001 - name the side and kernel, keep the driver's words
            fault = classify(exc) or Fault(LOAD_FAILURE, False)
            raise KernelFault(case_id, config, label, Fault(LOAD_FAILURE, fault.sticky, fault.code, fault.name,
                                                            f"kernel {kernel!r} not found in its PTX"),
                              "load") from None
        return module, fn

    def load(self, label: str, ptx: str, kernel: str, *, case_id: str = "", config: str = "canonical") -> Any:
        """Load ``kernel`` from ``ptx`` into the timer's context: ``(module, function)``; keep the module."""
        self._init()
        return self._load(case_id or label, config, label, ptx, kernel)

    @contextlib.contextmanager
    def _faults(self, case_id: str, config: str, label: str, action: str, fn: Any = None,
                geometry: Any = None) -> Iterator[None]:
        """Turn a CUDA error inside the block into a classified :class:`KernelFault` (one line)."""
        try:
            yield
        except KernelFault:
            raise
        except Exception as exc:  # noqa: BLE001 - only CUDA errors are converted; anything else propagates
            fault = classify(exc)
            if fault is None:
                raise
            if fn is not None and geometry is not None and fault.code in (1, 701):
                detail = self._over_limits(fn, geometry)
                if detail:
                    fault = attrs.evolve(fault, kind=OUT_OF_RESOURCES, detail=detail)
            raise KernelFault(case_id, config, label, fault, action) from None

    def _attrs(self, fn: Any) -> KernelAttrs:
        a = fn.attrs
        return KernelAttrs(registers=int(a.regs), local_bytes=int(a.local), shared_bytes=int(a.shared),
                           max_threads=int(a.maxthreads))

    def _args(self, case: Case, bufs: Mapping[str, Any], scalars: Mapping[str, Any]) -> list[Any]:
        args: list[Any] = []
        for p in case.params:
            if p.kind == "ptr":
                args.append(ctypes.c_uint64(int(bufs[p.name].device_ctypes_pointer.value or 0)))
            else:
                ctype = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float,
                         "f64": ctypes.c_double}[p.kind]
                args.append(ctype(scalars[p.name].item()))
        return args

    def _launcher(self, fn: Any, case: Case, config: str, args: list[Any]) -> Any:
        geo = case.launch(case.sizes[config])
        cfg = self._LaunchConfig(grid=geo.grid, block=geo.block, shmem_size=geo.shared_bytes)
        launch, stream, kernel = self._launch, self._launch_stream, fn.kernel

        def go() -> None:
            launch(stream, cfg, kernel, *args)

        return go

    def _over_limits(self, fn: Any, geo: Any) -> str:
        """Which per-block resource a launch that the driver refused asks too much of ("" if unknown)."""
        try:
            dev = self._ctx.device
            a = fn.attrs
            return launch_limits(threads=int(np.prod(geo.block)), dynamic_shared=int(geo.shared_bytes),
                                 registers=int(a.regs), static_shared=int(a.shared), max_threads=int(a.maxthreads),
                                 max_shared_per_block=int(dev.MAX_SHARED_MEMORY_PER_BLOCK),
                                 max_registers_per_block=int(dev.MAX_REGISTERS_PER_BLOCK))
        except Exception:  # noqa: BLE001 - the detail is a courtesy; the class stands without it
            return ""

    def _fill(self, dev: Any, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        """Fill a device buffer with the poison of its dtype (see :func:`poison_value`)."""
        host = np.full(shape, poison_value(dtype)[0], dtype=dtype)
        dev.copy_to_device(host, stream=self._stream)

    def _poison(self, outs: Mapping[str, Any], want: Mapping[str, np.ndarray]) -> None:
        for name, buf in outs.items():
            self._fill(buf, want[name].dtype, want[name].shape)

    def _run_once(self, go: Any, outs: Mapping[str, Any], want: Mapping[str, np.ndarray], what: str = "a launch",
                  config: str = "") -> dict[str, np.ndarray]:
        """Poison the outputs, launch once, wait (under the watchdog), and read the outputs back.

        The wait's expected time is the slowest launch of this configuration seen so far (none yet: the
        watchdog's floor applies).
        """
        self._poison(outs, want)
        seen = self._launch_s.setdefault(config, 0.0)
        t0 = time.perf_counter()
        with watchdog.guard(what, seen):
            go()
            self._stream.synchronize()
        self._launch_s[config] = max(seen, time.perf_counter() - t0)
        got = {name: buf.copy_to_host(stream=self._stream) for name, buf in outs.items()}
        self._stream.synchronize()
        return got

    def launch_once(self, case: Case, config: str, side: Side) -> dict[str, np.ndarray]:
        """Load one side's PTX, launch it once on the configuration's inputs into poisoned outputs, return them.

        The smallest complete use of a kernel (what ``compute-sanitizer`` watches in ``wfbench_core.sanitize``).
        """
        self._init()
        cuda = self._cuda
        module, fn = self._load(case.id, config, side.label, side.ptx[config], side.kernel)
        inputs = case.make_inputs(config)
        want = case.make_reference(inputs, config)
        with self._faults(case.id, config, "", "allocate"):
            bufs = {p.name: cuda.to_device(inputs[p.name], stream=self._stream)
                    for p in case.params if p.kind == "ptr" and not p.output}
            outs = {p.name: cuda.device_array(want[p.name].shape, dtype=want[p.name].dtype, stream=self._stream)
                    for p in case.outputs}
        scalars = {p.name: inputs[p.name] for p in case.params if p.kind != "ptr"}
        go = self._launcher(fn, case, config, self._args(case, {**bufs, **outs}, scalars))
        with self._faults(case.id, config, side.label, "launch", fn, case.launch(case.sizes[config])):
            got = self._run_once(go, outs, want, f"{case.id}[{config}] {side.label} launch", config)
        del module
        return got

    def _elapsed_ms(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end))

    # -- the protocol -----------------------------------------------------------------------------

    def measure(self, case: Case, sides: Sequence[Side], *, reference_label: str) -> Measurement:
        self._init()
        cuda = self._cuda
        checks: list[Check] = []
        costs: dict[str, float] = {"load_s": 0.0, "inputs_s": 0.0, "reference_s": 0.0, "alloc_copy_s": 0.0,
                                   "correctness_s": 0.0, "timing_s": 0.0}
        kattrs: dict[str, KernelAttrs] = {}
        keep: list[Any] = []  # modules stay alive while their kernels are used

        for config in CONFIGS:
            t0 = time.perf_counter()
            fns = {}
            for side in sides:
                module, fn = self._load(case.id, config, side.label, side.ptx[config], side.kernel)
                keep.append(module)
                fns[side.label] = fn
                if config == "canonical":
                    kattrs[side.label] = self._attrs(fn)
            costs["load_s"] += time.perf_counter() - t0

            t0 = time.perf_counter()
            inputs = case.make_inputs(config)
            costs["inputs_s"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            want = case.make_reference(inputs, config)
            costs["reference_s"] += time.perf_counter() - t0

            t0 = time.perf_counter()
            with self._faults(case.id, config, "", "allocate"):
                dev_in = {p.name: cuda.to_device(inputs[p.name], stream=self._stream)
                          for p in case.params if p.kind == "ptr" and not p.output}
                outs_by_side = {
                    s.label: {p.name: cuda.device_array(want[p.name].shape, dtype=want[p.name].dtype,
                                                        stream=self._stream) for p in case.outputs}
                    for s in sides
                }
                self._stream.synchronize()
            scalars = {p.name: inputs[p.name] for p in case.params if p.kind != "ptr"}
            costs["alloc_copy_s"] += time.perf_counter() - t0

            # correctness: each side into its own poisoned outputs, twice (re-poisoned in between), so
            # "every launch writes every output element, and the same values" is checked, not assumed
            t0 = time.perf_counter()
            got: dict[str, dict[str, np.ndarray]] = {}
            geometry = case.launch(case.sizes[config])
            for side in sides:
                outs = outs_by_side[side.label]
                go = self._launcher(fns[side.label], case, config, self._args(case, {**dev_in, **outs}, scalars))
                what = f"{case.id}[{config}] {side.label} launch"
                with self._faults(case.id, config, side.label, "launch", fns[side.label], geometry):
                    first = self._run_once(go, outs, want, what, config)
                    second = self._run_once(go, outs, want, what + " (again)", config)
                got[side.label] = first
                for p in case.outputs:
                    tol = case.tolerances[p.name]
                    checks.append(compare(first[p.name], want[p.name], tol.rtol, tol.atol)
                                  .check(config, side.label, "reference", p.name))
                    checks.append(_idempotence(first[p.name], second[p.name]).check(config, side.label,
                                                                                   "idempotent", p.name))
            for label in (s.label for s in sides):
                if label == reference_label:
                    continue
                for p in case.outputs:
                    tol = case.tolerances[p.name]
                    checks.append(compare(got[label][p.name], got[reference_label][p.name], tol.rtol, tol.atol)
                                  .check(config, f"{label}~{reference_label}", "cross", p.name))
            costs["correctness_s"] += time.perf_counter() - t0
            failed = [c for c in checks if not c.passed]
            if failed:
                return Measurement(False, _describe_failures(case, failed), tuple(checks), kattrs,
                                   Costs(**costs))
            if config == "canonical":
                setup = TimingSetup(case=case, kernels=fns, inputs=inputs, want=want)
                after_timing = {  # each side on its own canonical buffers, for the checks after timing
                    s.label: (self._launcher(fns[s.label], case, config,
                                             self._args(case, {**dev_in, **outs_by_side[s.label]}, scalars)),
                              outs_by_side[s.label])
                    for s in sides
                }

        # timing: canonical size, every side on the same buffers (fresh ones for each placement)
        t0 = time.perf_counter()
        try:
            timed = self._time(setup, reference_label)
        except KernelFault:
            raise
        except WfbenchError as exc:
            raise WfbenchError(f"{case.id}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a CUDA error while the sides are interleaved
            fault = as_kernel_fault(exc, case_id=case.id, config="canonical", side="", action="timing")
            if fault is None:
                raise
            raise fault from None
        costs["timing_s"] = time.perf_counter() - t0

        checks.extend(self._after_timing_checks(case, after_timing, setup.want))
        failed = [c for c in checks if not c.passed]
        del keep
        return Measurement(
            passed=not failed,
            message=_describe_failures(case, failed) if failed else "",
            checks=tuple(checks),
            kernel_attrs=kattrs,
            costs=Costs(**costs),
            **timed,
        )

    def _after_timing_checks(self, case: Case, launchers: Mapping[str, tuple[Any, Mapping[str, Any]]],
                             want: Mapping[str, np.ndarray]) -> list[Check]:
        """After timing: re-poison each side's outputs, launch it once, compare it to the reference.

        Catches a kernel whose output depends on what timing left in memory (or on launch count).
        """
        checks = []
        for label, (go, outs) in launchers.items():
            with self._faults(case.id, "canonical", label, "launch after timing"):
                after = self._run_once(go, outs, want, f"{case.id}[canonical] {label} launch after timing",
                                       "canonical")
            for p in case.outputs:
                tol = case.tolerances[p.name]
                checks.append(compare(after[p.name], want[p.name], tol.rtol, tol.atol)
                              .check("canonical", label, "after-timing", p.name))
        return checks

    # -- timing (see wfbench_core.sampling for the rules) -----------------------------------------

    def _time(self, setup: TimingSetup, reference_label: str) -> dict[str, Any]:
        """Warm up, calibrate and sample over placements; returns the Measurement's timing fields."""
        from wfbench_core import nvml
        from wfbench_core.sampling import sample_case

        mode = self.protocol.timing_mode
        if mode not in TIMING_MODES:
            raise WfbenchError(f"unknown timing mode {mode!r}; use one of {', '.join(TIMING_MODES)}")
        rounds = CudaRounds(self, setup, mode)
        sampler = nvml.NvmlSampler(self._pci_bus_id()).start()
        try:
            sampled = sample_case(rounds, list(setup.kernels), self.protocol, reference=reference_label)
        finally:
            readings = sampler.stop()
            rounds.close()
        summary = nvml.summarize(readings)
        return {
            "samples_us": sampled.samples_us,
            "first": sampled.first,
            "launches_per_sample": sampled.launches_per_sample,
            "warmup_busy_s": sampled.warmup_busy_s,
            "clocks_sm_mhz": tuple(r.sm_mhz for r in readings if r.sm_mhz),
            "placement_of": sampled.placement_of,
            "placement_seed": sampled.seed,
            "short_retakes": sampled.short_retakes,
            "buffer_sets": rounds.sets,
            "gate_retakes": rounds.gate_retakes,
            "stop_reason": sampled.stop_reason,
            "timing_mode": mode,
            "nvml": summary,
        }

    def copy_gbps(self) -> float | None:
        """Device-to-device copy bandwidth (bytes read + written), the yardstick for memory-bound cases."""
        self._init()
        cuda, stream = self._cuda, self._stream
        nbytes = 1 << 30
        src = cuda.device_array(nbytes // 8, dtype=np.float64, stream=stream)
        dst = cuda.device_array(nbytes // 8, dtype=np.float64, stream=stream)
        start, end = cuda.event(timing=True), cuda.event(timing=True)
        busy_ms = 0.0
        while busy_ms < max(self.protocol.warmup_s, 0.2) * 1000.0:  # clocks ramp, as for the cases
            start.record(stream)
            for _ in range(10):
                dst.copy_to_device(src, stream=stream)
            end.record(stream)
            end.synchronize()
            busy_ms += self._elapsed_ms(start, end)
        times = []
        for _ in range(20):
            start.record(stream)
            for _ in range(10):
                dst.copy_to_device(src, stream=stream)
            end.record(stream)
            end.synchronize()
            times.append(self._elapsed_ms(start, end) / 10)
        del src, dst
        return 2 * nbytes / (float(np.median(times)) * 1e-3) / 1e9


def _idempotence(first: np.ndarray, second: np.ndarray) -> Comparison:
    """The second launch (into re-poisoned outputs) must reproduce the first bit for bit."""
    if first.shape != second.shape:
        return Comparison(False, math.inf, math.inf, max(first.size, second.size), max(first.size, second.size))
    differ = (_bits(first) != _bits(second)).ravel()
    unwritten = never_written(second) & ~never_written(first)
    n = int(differ.sum())
    return Comparison(n == 0, 0.0, 0.0, n, int(first.size), int(unwritten.sum()))


_WHAT = {"reference": "differs from the numpy reference", "idempotent": "changes on a second launch",
         "cross": "WarpForth and CUDA disagree", "after-timing": "is wrong after timing"}


def describe_check(case: Case, check: Check) -> str:
    """One line for a failed check: never-written elements apart from value errors and their real size."""
    tol = case.tolerances.get(check.output)
    out = next((p for p in case.outputs if p.name == check.output), None)
    poison = poison_name(out.dtype) if out is not None and out.dtype else "poison"
    side = check.side
    if "~" in side:
        side = " vs ".join(side_name(s) for s in side.split("~"))
    else:
        side = side_name(side)
    head = f"{case.id}[{check.config}] {side}: output {check.output}"
    if check.what == "idempotent":
        text = (f"{head} changes on a second launch into re-poisoned outputs: {check.mismatches} of "
                f"{check.total} elements differ")
        if check.unwritten:
            text += f" ({check.unwritten} not written by the second launch)"
        return text
    parts = []
    if check.unwritten:
        parts.append(f"{check.unwritten} of {check.total} elements never written (still hold the {poison})")
    wrong = check.mismatches - check.unwritten
    if wrong > 0:
        written = check.total - check.unwritten
        tol_s = f" (rtol {tol.rtol:g}, atol {tol.atol:g})" if tol else ""
        text = f"{wrong} of {written} written elements outside tolerance{tol_s}"
        if check.nonfinite:
            text += f", {check.nonfinite} of them NaN or inf"
        if wrong > check.nonfinite:
            text += f", max abs err {_fmt_err(check.max_abs_err)}, max rel err {_fmt_err(check.max_rel_err)}"
        parts.append(text)
    if not parts:  # shapes differ
        parts.append(f"{check.mismatches} of {check.total} elements outside tolerance")
    return f"{head} {_WHAT[check.what]}: " + "; ".join(parts)


def _describe_failures(case: Case, failed: Sequence[Check]) -> str:
    more = f"; {len(failed) - 1} more failed checks" if len(failed) > 1 else ""
    return describe_check(case, failed[0]) + more


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return ""


os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
