"""The default timer: the measuring protocol, on the GPU face (:mod:`wfbench_core.gpu.device`).

Protocol for one case (every side's PTX is loaded into the same context):

1. Correctness (:mod:`wfbench_core.gpu.correctness`), per configuration (``check`` then ``canonical``) and per
   side, into the side's own poisoned outputs: reference, idempotence, the sides against each other. Any
   failure ends the case: it is not timed.
2. Timing, canonical size, every side on the same input and output buffers, fresh ones for each of
   ``placements`` blocks of pairs, launches rotating over several buffer sets inside a placement
   (:mod:`wfbench_core.gpu.sampling` holds the rules, :mod:`wfbench_core.gpu.gpu_rounds` the GPU edge): warm up for at
   least ``warmup_s`` of busy GPU (clocks ramp), calibrate launches per sample so every sample lasts at
   least ``min_sample_ms``, then take rounds until the gap's interval is narrow enough or ``samples`` are
   taken; each round times every side back to back with CUDA events on one explicit stream, queued behind
   a gate kernel the host opens only once launches are waiting (no side starts on an idle GPU), rotating
   which side goes first. NVML is read on a thread meanwhile.
3. The timed buffers are checked: before the last pair of every placement the outputs are poisoned again,
   and after it every buffer set's outputs are compared with what the sides wrote in step 1 as the timed
   launches left them, then one buffer set's (a different one each placement, every set in turn) after a
   launch of each side into re-poisoned outputs and one over its own output (a mismatch fails the case,
   naming the placement). The per-launch time of an empty kernel, timed the same way, is the
   launch floor the result is judged by. After timing, each side's own canonical outputs are re-poisoned
   and each side is launched once more and compared with the reference again.

Every CUDA error while loading, launching or waiting is raised as a classified
:class:`~wfbench_core.compiling.faults.KernelFault` (class, side, configuration, and whether the context is dead).
Compile, module load/JIT, input generation, allocation and copies are timed apart (``Costs``).
This module imports numba/cuda.core lazily: importing it needs no GPU.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from wfbench_core.case import CONFIGS, Case
from wfbench_core.compiling.faults import KernelFault, as_kernel_fault
from wfbench_core.contracts import Measurement, Side
from wfbench_core.errors import WfbenchError
from wfbench_core.gpu.comparison import describe_check, describe_failures
from wfbench_core.gpu.correctness import Checked, Checker, WrongOnTimedBuffers
from wfbench_core.gpu.device import Device
from wfbench_core.gpu.host_prep import HostArrays, handed
from wfbench_core.gpu.plausibility import InconsistentLaunches
from wfbench_core.gpu.sampling import WarmCarry
from wfbench_core.record.results import (
    TIMING_EVENTS,
    TIMING_MODES,
    Check,
    CompilerInfo,
    Costs,
    Environment,
    KernelAttrs,
    TimingProtocol,
)
from wfbench_core.record.timing_record import Sampled

__all__ = ["CudaEventTimer"]  # internal, not the plugin API


class CudaEventTimer:
    """The built-in timer (replace it through the ``wfbench_make_timer`` hook)."""

    def __init__(self, protocol: TimingProtocol, device: Device | None = None) -> None:
        self.protocol = protocol
        self.device = device or Device()
        self._warm = False  # the copy yardstick has just kept the GPU busy for warmup_s (nothing ran since)
        self.host_arrays: dict[str, HostArrays] = {}  # config -> inputs and reference made ahead (gpu.host_prep)
        self.warmth = WarmCarry()  # the last timing phase's busy time, credited to the next warm-up (gpu.sampling)

    def environment(self) -> Environment:
        return self.device.environment()

    def arch(self) -> str:
        return self.device.arch()

    def copy_gbps(self) -> float | None:
        """Device-to-device copy bandwidth (bytes read + written), the yardstick for memory-bound cases."""
        from wfbench_core.gpu.roofline import YARDSTICK_MIN_BUSY_S, measure_copy_gbps

        gbps = measure_copy_gbps(self.device, warmup_s=self.protocol.warmup_s)
        self._warm = True
        # the GPU was just busy for the yardstick's warm-up: the first case's warm-up is credited it (gpu.sampling)
        self.warmth.ended(max(self.protocol.warmup_s, YARDSTICK_MIN_BUSY_S))
        return gbps

    def fp64_peak_gflops(self, compiler: CompilerInfo | None = None) -> float | None:
        """The f64 add/multiply peak, the yardstick for compute-bound cases. Measured right after the copy
        yardstick (as the worker does), the GPU has just been busy for ``warmup_s``: its own warm-up is then
        the shortest one (:func:`wfbench_core.gpu.roofline.measure_fp64_peak`'s floor), not a second one."""
        from wfbench_core.gpu.roofline import YARDSTICK_MIN_BUSY_S, measure_fp64_peak

        warmup_s = 0.0 if self._warm else self.protocol.warmup_s
        before_s = self.warmth.busy_s if self._warm else 0.0  # the copy yardstick's, just before
        self._warm = False
        peak = measure_fp64_peak(self.device, warmup_s=warmup_s, compiler=compiler)
        self.warmth.ended(before_s + max(warmup_s, YARDSTICK_MIN_BUSY_S))
        return peak

    def measure(self, case: Case, sides: Sequence[Side], *, reference_label: str, ceiling: Any = None) -> Measurement:
        """Check and time ``sides``; with ``ceiling`` (a :class:`wfbench_core.ceiling.Ceiling`), the library
        ceiling is checked after the canonical checks and timed as one more side in the same rounds."""
        self._warm = False
        self.device.open()
        costs = dict.fromkeys(("load_s", "inputs_s", "reference_s", "alloc_copy_s", "correctness_s", "timing_s",
                               "placement_checks_s"), 0.0)
        checker = Checker(self.device)
        checks: list[Check] = []
        kattrs: dict[str, KernelAttrs] = {}
        for config in CONFIGS:
            found, checked = checker.check_config(case, sides, config, reference_label, costs,
                                                  prepared=handed(self, case, config))
            checks.extend(found)
            if config == "canonical":
                kattrs = {label: kernel.resources() for label, kernel in checked.kernels.items()}
            failed = [c for c in checks if not c.passed]
            if failed:
                return Measurement(False, describe_failures(case, failed), tuple(checks), kattrs, Costs(**costs))

        measured_ceiling, launchers = None, None
        if ceiling is not None:
            from wfbench_core.gpu.ceiling_side import check_ceiling

            measured_ceiling, launchers = check_ceiling(self.device, case, ceiling, checked)
        t0 = time.perf_counter()
        try:
            sampled, timed_checks, costs["placement_checks_s"], note = self._time(checked, case, reference_label,
                                                                                 launchers)
        except WrongOnTimedBuffers as wrong:  # a timed placement's outputs are wrong: the case fails
            costs["timing_s"] = time.perf_counter() - t0
            return Measurement(False, describe_check(case, wrong.check), (*checks, wrong.check), kattrs,
                               Costs(**costs))
        costs["timing_s"] = time.perf_counter() - t0

        checks.extend(timed_checks)
        checks.extend(checker.after_timing(case, checked))
        failed = [c for c in checks if not c.passed]
        if measured_ceiling is not None and launchers is not None:
            measured_ceiling = attrs.evolve(measured_ceiling, capture_note=note, timing_mode=TIMING_EVENTS if note
                                            else sampled.timing_mode)
        return Measurement(passed=not failed, message=describe_failures(case, failed) if failed else "",
                           checks=tuple(checks), kernel_attrs=kattrs, costs=Costs(**costs), sampled=sampled,
                           ceiling=measured_ceiling)

    def _time(self, checked: Checked, case: Case, reference_label: str,
              ceiling: Any = None) -> tuple[Sampled, list[Check], float, str]:
        """Warm up, calibrate and sample over placements (errors name the case): the record, the passing
        checks of the timed buffers and the wall time they took."""
        try:
            return self._sample(checked, case, reference_label, ceiling)
        except (KernelFault, WrongOnTimedBuffers, InconsistentLaunches):
            raise
        except WfbenchError as exc:
            raise WfbenchError(f"{case.id}: {exc}") from None
        except Exception as exc:  # a CUDA error while the sides are interleaved
            fault = as_kernel_fault(exc, case_id=case.id, config="canonical", side="", action="timing")
            if fault is None:
                raise
            raise fault from None

    def _sample(self, checked: Checked, case: Case, reference_label: str,
                ceiling: Any) -> tuple[Sampled, list[Check], float, str]:
        from wfbench_core.gpu import nvml
        from wfbench_core.gpu.gpu_rounds import CudaRounds, TimingSetup
        from wfbench_core.gpu.sampling import sample_case

        mode = case.timing_mode or self.protocol.timing_mode
        if mode not in TIMING_MODES:
            raise WfbenchError(f"unknown timing mode {mode!r}; use one of {', '.join(TIMING_MODES)}")
        setup = TimingSetup(case=case, kernels=checked.kernels, inputs=checked.inputs, want=checked.want,
                            good=checked.got, ceiling=ceiling, checked=checked)
        rounds = CudaRounds(self.device, setup, mode, rotation=self.protocol.rotation)
        sampler = nvml.NvmlSampler(self.device.pci_bus_id()).start()
        try:
            sampled = sample_case(rounds, rounds.labels, self.protocol, reference=reference_label,
                                  carried_s=self.warmth.credit(self.protocol.warmup_s))
            self.warmth.ended(sampled.busy_s)
            floor_us = rounds.launch_floor_us()
            verified = rounds.check.checks() if rounds.check is not None else []
            launches = sum(rounds.check.launches.values()) if rounds.check is not None else 0
        finally:
            readings = sampler.stop()
            check_s = rounds.check_s
            rounds.close()
        sampled = attrs.evolve(sampled, clocks_sm_mhz=tuple(r.sm_mhz for r in readings if r.sm_mhz),
                               buffer_sets=rounds.sets, gate_retakes=rounds.gate_retakes, timing_mode=mode,
                               nvml=nvml.summarize(readings), launch_floor_us=floor_us, placement_checks=launches,
                               buffer_bytes=rounds.buffer_bytes, stack_bytes=tuple(rounds.stack_bytes))
        return sampled, verified, check_s, rounds.capture_note
