"""The rule of what a GPU can run: a timed side against the yardsticks its run measured and the peak of the
arithmetic it does (no data sheet figure but the architecture's known ratios between its own peaks).

See :mod:`wfbench_core.gpu.plausibility` for what the worker does with a case that breaks it. The rule is
here, below every stage, so that the worker judging a case it has just timed and every command reading a
result back (:mod:`wfbench_core.record.consistency`) apply the same one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from wfbench_core.case import (
    BF16,
    F16,
    F32,
    F64,
    F64_NO_FMA,
    FLOP_TYPES,
    TENSOR_BF16,
    TENSOR_F16,
    TENSOR_F64,
    TENSOR_FP8,
    TENSOR_TF32,
)
from wfbench_core.record.timing_record import Timing

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "F32_PER_F64", "FLOP_TYPES", "HALF_PER_F32", "MARGIN", "TENSOR_PER_VECTOR", "Yardsticks", "default_flop_type",
    "flop_peak", "implausible", "implausible_result", "must_move_bytes",
]

#: f32 results per f64 result per SM and clock, by compute capability (the CUDA programming guide's arithmetic
#: throughput table; consumer parts run f64 at 1/32 or 1/64 of f32)
F32_PER_F64 = {"6.0": 2, "6.1": 32, "7.0": 2, "7.5": 32, "8.0": 2, "8.6": 64, "8.9": 64, "9.0": 2, "10.0": 2,
               "12.0": 64}
HALF_PER_F32 = 4  # f16/bf16 vector arithmetic: at most 4x f32 (A100's; 2x on H100)
#: tensor-core dense FLOP/s at most this many times the vector FMA peak it builds on (H100: tf32 7.4x, f16 14.8x,
#: fp8 29.6x the f32 peak, f64 2x the f64 FMA peak; A100: 8x, 16x, -, 2x)
TENSOR_PER_VECTOR = {TENSOR_F64: 2, TENSOR_TF32: 8, TENSOR_F16: 16, TENSOR_BF16: 16, TENSOR_FP8: 32}

MARGIN = 0.25  # a side may beat a yardstick by this much (measurement noise, the yardstick's own overheads)


@attrs.frozen
class Yardsticks:
    """What the run measured to judge its cases by (None where it was not measured)."""

    copy_gbps: float | None = None
    fp64_peak_gflops: float | None = None
    l2_bytes: int = 0
    compute_capability: str = ""  # "9.0": which known ratios scale the f64 peak to the other types' peaks

    @classmethod
    def of(cls, environment: Any) -> Yardsticks:
        """The yardsticks a run measured, as its result file records them (``RunResult.environment``): the
        gate judges a stored result by the same functions as a fresh one."""
        return cls(copy_gbps=environment.copy_gbps, fp64_peak_gflops=environment.fp64_peak_gflops,
                   l2_bytes=environment.l2_bytes, compute_capability=environment.compute_capability)


def default_flop_type(float_dtypes: Sequence[str]) -> str:
    """The FLOP type of a case that declares none: its widest float dtype (f64, f32, f16, bf16); "" without."""
    names = {str(d) for d in float_dtypes}
    for dtype, kind in (("float64", F64), ("float32", F32), ("bfloat16", BF16), ("float16", F16)):
        if dtype in names:
            return kind
    return ""


def flop_peak(flop_type: str, yardsticks: Yardsticks) -> tuple[float, str] | None:
    """The peak GFLOP/s of ``flop_type`` on the run's GPU and how it was reached; None where it cannot be said
    (no f64 peak measured, no or an unknown type)."""
    p64 = yardsticks.fp64_peak_gflops
    if not p64 or flop_type not in FLOP_TYPES:
        return None
    measured = f"this run's measured f64 add/multiply peak of {p64:.0f} GFLOP/s"
    if flop_type == F64_NO_FMA:
        return p64, measured
    fma = 2 * p64
    if flop_type in (F64, TENSOR_F64):
        k = TENSOR_PER_VECTOR.get(flop_type, 1)
        return k * fma, f"{k * 2}x {measured} (an FMA counts 2 FLOPs" + (", f64 tensor cores at most 2x)" if k > 1 else ")")
    cc = yardsticks.compute_capability
    known = cc in F32_PER_F64
    ratio = F32_PER_F64.get(cc, max(F32_PER_F64.values()))
    k = HALF_PER_F32 if flop_type in (F16, BF16) else TENSOR_PER_VECTOR.get(flop_type, 1)
    where = f"sm_{cc.replace('.', '')}'s known f32:f64 rate of {ratio}" if known else \
        f"the most lenient known f32:f64 rate, {ratio} (compute capability {cc or 'unknown'} is not listed)"
    return k * ratio * fma, f"{2 * k * ratio}x {measured}: {where}" + (f", {flop_type} at most {k}x f32" if k > 1 else "")


def must_move_bytes(work_bytes: int, *, l2_bytes: int, buffer_sets: int) -> int | None:
    """Bytes a launch must move from DRAM at least (None where the L2 size is unknown)."""
    if l2_bytes <= 0:
        return None
    if buffer_sets > 1 and work_bytes >= l2_bytes:
        return work_bytes  # rotated sets, each at least the L2's size: nothing is left in the L2 for a launch
    return max(0, work_bytes - l2_bytes)


def implausible(timing: Timing, *, work_bytes: int, work_flops: int, yardsticks: Yardsticks,
                flop_type: str = "") -> str:
    """One line saying which side is faster than the GPU can run it and by what figure ("WarpForth: 0.1 us per
    launch, under …"); "" when none is. The bytes are the declared ones, at most the buffers given."""
    return sides_implausible((("WarpForth", timing.warpforth.median_us), ("CUDA", timing.cuda.median_us)), timing,
                             work_bytes=work_bytes, work_flops=work_flops, yardsticks=yardsticks, flop_type=flop_type)


def sides_implausible(sides: Sequence[tuple[str, float]], timing: Timing, *, work_bytes: int, work_flops: int,
                      yardsticks: Yardsticks, flop_type: str = "") -> str:
    """:func:`implausible` for named per-launch times timed in ``timing``'s rounds, each judged against the peak
    of ``flop_type`` (a library ceiling's own: tensor-core DGEMM runs above the f64 FMA peak)."""
    given = min(work_bytes, timing.buffer_bytes) if timing.buffer_bytes else work_bytes
    must = must_move_bytes(given, l2_bytes=yardsticks.l2_bytes, buffer_sets=timing.buffer_sets)
    peak = flop_peak(flop_type, yardsticks) if work_flops else None
    for name, us in sides:
        if timing.launch_floor_us and us * (1 + MARGIN) < timing.launch_floor_us:
            return (f"{name}: {us:.3g} us per launch, under the {timing.launch_floor_us:.3g} us of an empty kernel "
                    f"timed the same way ({timing.timing_mode} mode)")
        if must and yardsticks.copy_gbps and must / (us * 1e3) > yardsticks.copy_gbps * (1 + MARGIN):
            return (f"{name}: at least {must / 2**20:.1f} MiB to move per launch in {us:.3g} us, "
                    f"{must / (us * 1e3):.0f} GB/s, over {1 + MARGIN:g}x this run's copy bandwidth of "
                    f"{yardsticks.copy_gbps:.0f} GB/s")
        if peak is not None and work_flops / (us * 1e3) > peak[0] * (1 + MARGIN):
            return (f"{name}: {work_flops:.3g} {flop_type} FLOPs per launch in {us:.3g} us, "
                    f"{work_flops / (us * 1e3):.0f} GFLOP/s, over {1 + MARGIN:g}x the {flop_type} peak of "
                    f"{peak[0]:.0f} GFLOP/s ({peak[1]})")
    return ""


def implausible_result(case: Any, environment: Any) -> str:
    """:func:`implausible` of a stored result's case (``CaseResult``) by the yardsticks its run recorded
    (``RunResult.environment``); "" for a case without timing."""
    if case.timing is None:
        return ""
    return implausible(case.timing, work_bytes=case.work_bytes, work_flops=case.work_flops,
                       yardsticks=Yardsticks.of(environment), flop_type=case.work_flop_type)


def ceiling_implausible(case: Any, yardsticks: Yardsticks) -> str:
    """:func:`sides_implausible` of a case's timed library ceiling (``CaseResult.ceiling``), judged against the
    peak of the arithmetic it runs (its ``flop_type``, else the case's); "" when it has no timed ceiling."""
    ceiling = case.ceiling
    if ceiling is None or ceiling.stats is None or case.timing is None:
        return ""
    return sides_implausible(((f"{ceiling.library} ceiling", ceiling.stats.median_us),), case.timing,
                             work_bytes=case.work_bytes, work_flops=case.work_flops, yardsticks=yardsticks,
                             flop_type=ceiling.flop_type or case.work_flop_type)
