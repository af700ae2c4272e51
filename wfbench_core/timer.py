"""The default timer: numba-cuda's driver layer, cuda.core launches, CUDA events on one stream.

Protocol for one case (every side's PTX is loaded into the same context):

1. Correctness, per configuration (``check`` then ``canonical``) and per side, into the side's own output
   buffers pre-filled with NaN (floats) or a sentinel (integers): compare with the numpy reference; launch
   a second time and require the output unchanged (idempotence); compare the sides with each other.
   Any failure ends the case: it is not timed.
2. Timing, canonical size, every side on the same input and output buffers, fresh ones for each of
   ``placements`` blocks of pairs (``wfbench_core.sampling`` holds the rules, ``wfbench_core.gpu_rounds``
   the GPU edge): warm up for at least ``warmup_s`` of busy GPU (clocks ramp), calibrate launches per
   sample so every sample lasts at least ``min_sample_ms``, then take rounds until the gap's interval is
   narrow enough or ``samples`` are taken; each round times every side back to back with CUDA events on
   one explicit stream, behind a spin kernel (no side starts on an idle GPU), rotating which side goes
   first. NVML is read on a thread meanwhile.
3. The outputs are checked against the reference again after timing.

Compile, module load/JIT, input generation, allocation and copies are timed apart (``Costs``).
This module imports numba/cuda.core lazily: importing it needs no GPU.
"""

from __future__ import annotations

import ctypes
import math
import os
import platform
import socket
import sys
import time
from typing import Any, Mapping, Optional, Protocol as TypingProtocol, Sequence

import attrs
import numpy as np

from wfbench_core import hookimpl
from wfbench_core.case import CONFIGS, Case
from wfbench_core.errors import NoGpuError, WfbenchError
from wfbench_core.gpu_rounds import CudaRounds, TimingSetup
from wfbench_core.results import TIMING_EVENTS, TIMING_MODES, Check, Costs, Environment, KernelAttrs, NvmlSummary, Protocol

INT_SENTINEL = 0x5A5A5A5A5A5A5A5A


@attrs.frozen
class Side:
    """One implementation of a case: a label (``wf``, ``cuda``, ``wf:head`` …), its kernel and PTX."""

    label: str
    kernel: str
    ptx: Mapping[str, str]  # configuration -> PTX text


@attrs.frozen
class Measurement:
    """What the timer observed for one case."""

    passed: bool
    message: str
    checks: tuple[Check, ...]
    kernel_attrs: Mapping[str, KernelAttrs]
    costs: Costs
    samples_us: Mapping[str, tuple[float, ...]] = attrs.Factory(dict)  # label -> per-launch us
    first: tuple[str, ...] = ()  # label that went first in each round
    launches_per_sample: int = 0
    warmup_s: float = 0.0
    clocks_sm_mhz: tuple[int, ...] = ()
    placement_of: tuple[int, ...] = ()  # placement of each round (empty: one placement)
    placement_seed: int = 0
    short_retakes: int = 0
    stop_reason: str = ""
    timing_mode: str = TIMING_EVENTS
    nvml: Optional[NvmlSummary] = None

    def timing_fields(self, label: str, reference: str = "cuda") -> dict[str, Any]:
        """The Timing fields of placement-aware sampling, NVML and the mode, for side ``label``."""
        from wfbench_core import nvml
        from wfbench_core.stats import GAP_INTERVAL_METHOD, gap_interval, placement_noise

        wf, cu = self.samples_us[label], self.samples_us[reference]
        where = self.placement_of or (0,) * len(wf)
        within, between = placement_noise(wf, cu, where)
        interval = gap_interval(wf, cu, where)
        return {
            "timing_mode": self.timing_mode,
            "placements": len(set(where)),
            "placement_of": tuple(where),
            "placement_seed": self.placement_seed,
            "within_placement_noise": within,
            "between_placement_noise": between,
            "gap_lo": interval[0] if interval else None,
            "gap_hi": interval[1] if interval else None,
            "gap_interval": GAP_INTERVAL_METHOD if interval else "",
            "stop_reason": self.stop_reason,
            "short_retakes": self.short_retakes,
            "nvml": self.nvml,
            "throttled": nvml.throttled(self.nvml),
        }


class Timer(TypingProtocol):
    """What the executor needs from a timer (the ``wfbench_make_timer`` hook returns one)."""

    def environment(self) -> Environment: ...

    def copy_gbps(self) -> float | None: ...

    def measure(self, case: Case, sides: Sequence[Side], *, reference_label: str) -> Measurement: ...


@hookimpl(trylast=True)
def wfbench_make_timer(protocol: Protocol) -> Timer:
    return CudaEventTimer(protocol)


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA GPU and driver are usable here, else one line saying why not."""
    try:
        from numba import cuda
    except ImportError:
        return "numba-cuda is not installed here: pip install 'wfbench[gpu]' on the GPU host"
    try:
        if not cuda.is_available():
            return "no NVIDIA GPU or CUDA driver found on this machine; run on a GPU host (--transport ssh/vast)"
    except Exception as exc:  # noqa: BLE001 - any driver failure means no GPU for us
        return f"the CUDA driver is not usable here ({type(exc).__name__}: {exc})"
    return None


def _float_dtype(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> tuple[bool, float, float, int]:
    """Elementwise ``|got-want| <= atol + rtol*|want|``; NaN anywhere in ``got`` is a mismatch."""
    if got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want):
        return True, 0.0, 0.0, 0  # bit-identical: the common case, and cheap on large outputs
    g = np.asarray(got, dtype=np.float64).ravel()
    w = np.asarray(want, dtype=np.float64).ravel()
    if g.shape != w.shape:
        return False, math.inf, math.inf, max(g.size, w.size)
    diff = np.abs(g - w)
    bad = ~(diff <= atol + rtol * np.abs(w))  # NaN compares False -> bad
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(w) > 0, diff / np.abs(w), np.where(diff > 0, np.inf, 0.0))
    finite = np.isfinite(diff)
    max_abs = float(diff[finite].max()) if finite.any() else 0.0
    if not finite.all():
        max_abs = math.inf
    max_rel = float(np.nanmax(rel)) if rel.size else 0.0
    return (not bool(bad.any())), max_abs, (max_rel if math.isfinite(max_rel) else math.inf), int(bad.sum())


def _json_float(x: float) -> float:
    # JSON has no inf/NaN; an infinite error is stored as the largest double.
    return x if math.isfinite(x) else sys.float_info.max


class CudaEventTimer:
    """The built-in timer (replace it through the ``wfbench_make_timer`` hook)."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self._ctx: Any = None
        self._stream: Any = None

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
        cc = self._ctx.device.compute_capability
        return f"sm_{cc[0]}{cc[1]}"

    # -- primitives -------------------------------------------------------------------------------

    def _load(self, label: str, ptx: str, kernel: str) -> Any:
        module = self._ctx.create_module_ptx(ptx)
        try:
            fn = module.get_function(kernel)
        except Exception as exc:  # noqa: BLE001 - name the side and kernel, keep the driver's words
            raise WfbenchError(f"{label}: kernel {kernel!r} not found in its PTX ({exc})") from None
        return module, fn

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

    def _fill(self, dev: Any, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        host = np.full(shape, np.nan, dtype=dtype) if _float_dtype(dtype) else \
            np.full(shape, INT_SENTINEL, dtype=np.int64).astype(dtype)
        dev.copy_to_device(host, stream=self._stream)

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
                module, fn = self._load(side.label, side.ptx[config], side.kernel)
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
            dev_in = {p.name: cuda.to_device(inputs[p.name], stream=self._stream)
                      for p in case.params if p.kind == "ptr" and not p.output}
            scalars = {p.name: inputs[p.name] for p in case.params if p.kind != "ptr"}
            outs_by_side = {
                s.label: {p.name: cuda.device_array(want[p.name].shape, dtype=want[p.name].dtype, stream=self._stream)
                          for p in case.outputs}
                for s in sides
            }
            self._stream.synchronize()
            costs["alloc_copy_s"] += time.perf_counter() - t0

            # correctness: each side into its own pre-filled outputs
            t0 = time.perf_counter()
            got: dict[str, dict[str, np.ndarray]] = {}
            for side in sides:
                outs = outs_by_side[side.label]
                for p in case.outputs:
                    self._fill(outs[p.name], want[p.name].dtype, want[p.name].shape)
                go = self._launcher(fns[side.label], case, config, self._args(case, {**dev_in, **outs}, scalars))
                try:
                    go()
                    self._stream.synchronize()
                except Exception as exc:  # noqa: BLE001 - a launch failure is this case's error
                    raise WfbenchError(f"{case.id}[{config}] {side.label}: launch failed: {exc}") from None
                first = {p.name: outs[p.name].copy_to_host(stream=self._stream) for p in case.outputs}
                go()
                self._stream.synchronize()
                second = {p.name: outs[p.name].copy_to_host(stream=self._stream) for p in case.outputs}
                self._stream.synchronize()
                got[side.label] = first
                for p in case.outputs:
                    tol = case.tolerances[p.name]
                    ok, ea, er, bad = compare(first[p.name], want[p.name], tol.rtol, tol.atol)
                    checks.append(Check(config, side.label, "reference", p.name, ok, _json_float(ea),
                                        _json_float(er), bad, int(want[p.name].size)))
                    same = np.array_equal(first[p.name], second[p.name], equal_nan=True)
                    n_diff = 0 if same else int(np.sum(first[p.name] != second[p.name]))
                    checks.append(Check(config, side.label, "idempotent", p.name, same, 0.0, 0.0, n_diff,
                                        int(want[p.name].size)))
            labels = [s.label for s in sides]
            for label in labels:
                if label == reference_label:
                    continue
                for p in case.outputs:
                    tol = case.tolerances[p.name]
                    ok, ea, er, bad = compare(got[label][p.name], got[reference_label][p.name], tol.rtol, tol.atol)
                    checks.append(Check(config, f"{label}~{reference_label}", "cross", p.name, ok,
                                        _json_float(ea), _json_float(er), bad, int(want[p.name].size)))
            costs["correctness_s"] += time.perf_counter() - t0
            failed = [c for c in checks if not c.passed]
            if failed:
                return Measurement(False, _describe_failures(case, failed), tuple(checks), kattrs,
                                   Costs(**costs))
            if config == "canonical":
                setup = TimingSetup(case=case, kernels=fns, inputs=inputs, want=want)

        # timing: canonical size, every side on the same buffers (fresh ones for each placement)
        t0 = time.perf_counter()
        try:
            timed, shared_outs = self._time(setup, reference_label)
        except WfbenchError as exc:
            raise WfbenchError(f"{case.id}: {exc}") from None
        costs["timing_s"] = time.perf_counter() - t0

        want = setup.want
        # The last side launched wrote the shared outputs of the last placement; they must still be right.
        for p in case.outputs:
            tol = case.tolerances[p.name]
            after = shared_outs[p.name].copy_to_host(stream=self._stream)
            self._stream.synchronize()
            ok, ea, er, bad = compare(after, want[p.name], tol.rtol, tol.atol)
            checks.append(Check("canonical", "shared", "after-timing", p.name, ok, _json_float(ea),
                                _json_float(er), bad, int(want[p.name].size)))
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

    # -- timing (see wfbench_core.sampling for the rules) -----------------------------------------

    def _time(self, setup: TimingSetup, reference_label: str) -> tuple[dict[str, Any], Mapping[str, Any]]:
        """Warm up, calibrate and sample over placements; returns Measurement fields and the last outputs."""
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
            "warmup_s": sampled.warmup_s,
            "clocks_sm_mhz": tuple(r.sm_mhz for r in readings if r.sm_mhz),
            "placement_of": sampled.placement_of,
            "placement_seed": sampled.seed,
            "short_retakes": sampled.short_retakes,
            "stop_reason": sampled.stop_reason,
            "timing_mode": mode,
            "nvml": summary,
        }, rounds.outputs

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


def _describe_failures(case: Case, failed: Sequence[Check]) -> str:
    worst = failed[0]
    what = {"reference": "differs from the numpy reference", "idempotent": "changes on a second launch",
            "cross": "WarpForth and CUDA disagree", "after-timing": "is wrong after timing"}[worst.what]
    tol = case.tolerances.get(worst.output)
    tol_s = f" (rtol {tol.rtol:g}, atol {tol.atol:g})" if tol else ""
    return (f"{case.id}[{worst.config}] {worst.side}: output {worst.output} {what}: {worst.mismatches} of "
            f"{worst.total} elements outside tolerance{tol_s}, max abs err {worst.max_abs_err:.3g}, "
            f"max rel err {worst.max_rel_err:.3g}" + (f"; {len(failed) - 1} more failed checks" if len(failed) > 1 else ""))


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return ""


os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
