"""Roofline yardsticks measured in the same run: the f64 add/multiply peak, and each side's share of it.

The memory yardstick is the device-to-device copy (:func:`measure_copy_gbps`, ``Environment.copy_gbps``). The
compute yardstick is :func:`measure_fp64_peak`: a micro-kernel of independent ``x = x * a + b`` chains compiled
through the project's own CUDA compile path with ``-fmad=false``, so it runs separate DMUL and DADD
instructions, the operations WarpForth emits (``mul.rn.f64``, ``add.rn.f64``), not fused multiply-adds.
On a GPU whose f64 units issue one DMUL or DADD per lane per clock this is half the FMA peak in the data sheet.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from wfbench_core.record.results import CaseResult, CompilerInfo, Environment

if TYPE_CHECKING:
    from wfbench_core.gpu.device import Device

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BLOCK", "BLOCKS_PER_SM", "CHAINS", "COPY_REPEATS", "FLOPS_PER_ITER", "FP64_CASE_ID", "ITERS", "KERNEL",
    "SOURCE", "TIMED_LAUNCHES", "Roofline", "format_roofline", "measure_copy_gbps", "measure_fp64_peak",
    "roofline",
]

KERNEL = "wfbench_fp64_peak"
FP64_CASE_ID = "fp64-peak"  # the micro-kernel's name in compiles (the worker compiles it ahead)
CHAINS = 8  # independent dependency chains per thread: enough to hide the f64 pipeline latency
FLOPS_PER_ITER = 2 * CHAINS  # one multiply and one add per chain
BLOCK = 256
BLOCKS_PER_SM = 32  # several waves of resident blocks
ITERS = 4096
TIMED_LAUNCHES = 10
COPY_REPEATS = 20  # timed batches of 10 copies

SOURCE = r"""
// f64 add/multiply peak: CHAINS independent chains of x = x * a + b per thread. Compiled with
// -fmad=false, each step is one DMUL and one DADD (2 FLOPs), like WarpForth's mul.rn.f64/add.rn.f64.
// With a < 1 every chain converges to b / (1 - a): the values stay finite and normal.
extern "C" __global__ void wfbench_fp64_peak(double* out, double a, double b, long long iters) {
    double x0 = threadIdx.x * 1e-3, x1 = x0 + 0.125, x2 = x0 + 0.25, x3 = x0 + 0.375;
    double x4 = x0 + 0.5, x5 = x0 + 0.625, x6 = x0 + 0.75, x7 = x0 + 0.875;
#pragma unroll 4
    for (long long i = 0; i < iters; ++i) {
        x0 = x0 * a + b; x1 = x1 * a + b; x2 = x2 * a + b; x3 = x3 * a + b;
        x4 = x4 * a + b; x5 = x5 * a + b; x6 = x6 * a + b; x7 = x7 * a + b;
    }
    out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


YARDSTICK_MIN_BUSY_S = 0.2  # a yardstick keeps the GPU busy at least this long before it is timed


def _busy_then_timed(device: Device, go: Callable[[], None], warmup_s: float, repeats: int, per: int = 1
                     ) -> list[float]:
    """Run ``go`` (``per`` times between two events) until the GPU has been busy for ``warmup_s`` (at least
    0.2 s: clocks ramp, as for the cases), then ``repeats`` timed times: the ms of one ``go`` each time."""
    start, end = device.event(), device.event()

    def timed() -> float:
        device.record(start)
        for _ in range(per):
            go()
        device.record(end)
        end.synchronize()
        return device.elapsed_ms(start, end) / per

    busy_ms = 0.0
    while busy_ms < max(warmup_s, YARDSTICK_MIN_BUSY_S) * 1000.0:
        busy_ms += timed() * per
    return [timed() for _ in range(repeats)]


def measure_copy_gbps(device: Device, *, warmup_s: float) -> float:
    """Device-to-device copy bandwidth in GB/s (bytes read + written, 1 GiB each way), the memory yardstick."""
    import numpy as np

    from wfbench_core.stats import median

    nbytes = 1 << 30
    src_dst = [device.empty(nbytes // 8, np.float64), device.empty(nbytes // 8, np.float64)]
    times = _busy_then_timed(device, lambda: device.copy_in(src_dst[1], src_dst[0]), warmup_s, COPY_REPEATS, per=10)
    src_dst.clear()  # both buffers freed before the device lets go of its pool
    device.release()
    return 2 * nbytes / (median(times) * 1e-3) / 1e9


def measure_fp64_peak(device: Device, *, warmup_s: float = 1.0, compiler: CompilerInfo | None = None) -> float:
    """The f64 add/multiply rate of this GPU in GFLOP/s, measured on the device's stream with its events.

    Call it once per run (the worker does, right after the copy yardstick, and compiles it ahead); it takes
    well under a second after its warm-up (at least 0.2 s of busy GPU).
    """
    import numpy as np

    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler
    from wfbench_core.errors import WfbenchError
    from wfbench_core.stats import median

    ptx = compile_cuda(SOURCE, case_id=FP64_CASE_ID, arch=device.arch(), compiler=compiler or cuda_compiler()).ptx
    kernel = device.load(ptx, KERNEL, case_id=FP64_CASE_ID, label=FP64_CASE_ID)
    blocks = device.sm_count * BLOCKS_PER_SM
    out = device.empty(blocks * BLOCK, np.float64)
    args = [ctypes.c_uint64(device.address(out)), ctypes.c_double(0.999999), ctypes.c_double(1e-6),
            ctypes.c_int64(ITERS)]
    times = _busy_then_timed(device, device.launcher(kernel, device.config((blocks, 1, 1), (BLOCK, 1, 1)), args),
                             warmup_s, TIMED_LAUNCHES)
    result = device.read({"out": out})["out"]
    if not np.all(np.isfinite(result)):
        raise WfbenchError("fp64 peak micro-kernel produced non-finite values; the measurement is void")
    flops = float(FLOPS_PER_ITER) * ITERS * blocks * BLOCK
    return flops / (median(times) * 1e-3) / 1e9


@attrs.frozen
class Roofline:
    """Each side's rate as a fraction of the run's yardsticks (None where a rate or a yardstick is missing)."""

    copy_wf: float | None = None  # GB/s / device-to-device copy GB/s
    copy_cuda: float | None = None
    fp64_wf: float | None = None  # GFLOP/s / measured f64 add/multiply peak
    fp64_cuda: float | None = None


def _share(rate: float | None, peak: float | None) -> float | None:
    return rate / peak if rate is not None and peak else None


def roofline(case: CaseResult, env: Environment) -> Roofline:
    """Both sides' share of copy bandwidth and of the f64 peak for one timed case."""
    t = case.timing
    if t is None:
        return Roofline()
    return Roofline(_share(t.gbps_wf, env.copy_gbps), _share(t.gbps_cuda, env.copy_gbps),
                    _share(t.gflops_wf, env.fp64_peak_gflops), _share(t.gflops_cuda, env.fp64_peak_gflops))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.0f}"


def format_roofline(r: Roofline, metric: str = "bandwidth") -> str:
    """``copy 78/74%`` for a bandwidth case, ``fp64 41/38%`` for a compute case (WarpForth/CUDA); both when known."""
    parts = []
    if r.copy_wf is not None or r.copy_cuda is not None:
        parts.append(f"copy {_pct(r.copy_wf)}/{_pct(r.copy_cuda)}%")
    if r.fp64_wf is not None or r.fp64_cuda is not None:
        parts.append(f"fp64 {_pct(r.fp64_wf)}/{_pct(r.fp64_cuda)}%")
    if metric == "compute":
        parts.reverse()
    return " ".join(parts) or "-"

