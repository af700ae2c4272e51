"""Roofline yardsticks measured in the same run: the f64 add/multiply peak, and each side's share of it.

The memory yardstick is the device-to-device copy (``Environment.copy_gbps``, measured by the timer). The
compute yardstick is :func:`measure_fp64_peak`: a micro-kernel of independent ``x = x * a + b`` chains compiled
through the project's own CUDA compile path with ``-fmad=false``, so it runs separate DMUL and DADD
instructions, the operations WarpForth emits (``mul.rn.f64``, ``add.rn.f64``), not fused multiply-adds.
On a GPU whose f64 units issue one DMUL or DADD per lane per clock this is half the FMA peak in the data sheet.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

import attrs

from wfbench_core.record.results import CaseResult, CompilerInfo, Environment

KERNEL = "wfbench_fp64_peak"
CHAINS = 8  # independent dependency chains per thread: enough to hide the f64 pipeline latency
FLOPS_PER_ITER = 2 * CHAINS  # one multiply and one add per chain
BLOCK = 256
BLOCKS_PER_SM = 32  # several waves of resident blocks
ITERS = 4096
TIMED_LAUNCHES = 10

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


def measure_fp64_peak(timer: Any, *, compiler: CompilerInfo | None = None) -> float:
    """The f64 add/multiply rate of this GPU in GFLOP/s, measured with the timer's context, stream and events.

    Call it once per run (the executor does, beside ``timer.copy_gbps()``); it takes well under a second
    after the same warm-up as the cases.
    """
    import numpy as np

    from wfbench_core.build.compile import compile_cuda, cuda_compiler
    from wfbench_core.errors import WfbenchError

    timer._init()
    cuda, stream = timer._cuda, timer._stream
    arch = timer.arch()
    ptx = compile_cuda(SOURCE, case_id="fp64-peak", arch=arch, compiler=compiler or cuda_compiler()).ptx
    module, fn = timer.load("fp64-peak", ptx, KERNEL)
    sms = int(timer._ctx.device.MULTIPROCESSOR_COUNT)
    blocks = sms * BLOCKS_PER_SM
    out = cuda.device_array(blocks * BLOCK, dtype=np.float64, stream=stream)
    args = [ctypes.c_uint64(int(out.device_ctypes_pointer.value or 0)), ctypes.c_double(0.999999),
            ctypes.c_double(1e-6), ctypes.c_int64(ITERS)]
    cfg = timer._LaunchConfig(grid=(blocks, 1, 1), block=(BLOCK, 1, 1), shmem_size=0)

    def go() -> None:
        timer._launch(timer._launch_stream, cfg, fn.kernel, *args)

    start, end = cuda.event(timing=True), cuda.event(timing=True)
    busy_ms = 0.0
    while busy_ms < max(timer.protocol.warmup_s, 0.2) * 1000.0:  # clocks ramp, as for the cases
        start.record(stream)
        go()
        end.record(stream)
        end.synchronize()
        busy_ms += timer._elapsed_ms(start, end)
    times = []
    for _ in range(TIMED_LAUNCHES):
        start.record(stream)
        go()
        end.record(stream)
        end.synchronize()
        times.append(timer._elapsed_ms(start, end))
    result = out.copy_to_host(stream=stream)
    stream.synchronize()
    del module
    if not np.all(np.isfinite(result)):
        raise WfbenchError("fp64 peak micro-kernel produced non-finite values; the measurement is void")
    flops = float(FLOPS_PER_ITER) * ITERS * blocks * BLOCK
    return flops / (float(np.median(times)) * 1e-3) / 1e9


@attrs.frozen
class Roofline:
    """Each side's rate as a fraction of the run's yardsticks (None where a rate or a yardstick is missing)."""

    copy_wf: Optional[float] = None  # GB/s / device-to-device copy GB/s
    copy_cuda: Optional[float] = None
    fp64_wf: Optional[float] = None  # GFLOP/s / measured f64 add/multiply peak
    fp64_cuda: Optional[float] = None


def _share(rate: Optional[float], peak: Optional[float]) -> Optional[float]:
    return rate / peak if rate is not None and peak else None


def roofline(case: CaseResult, env: Environment) -> Roofline:
    """Both sides' share of copy bandwidth and of the f64 peak for one timed case."""
    t = case.timing
    if t is None:
        return Roofline()
    return Roofline(_share(t.gbps_wf, env.copy_gbps), _share(t.gbps_cuda, env.copy_gbps),
                    _share(t.gflops_wf, env.fp64_peak_gflops), _share(t.gflops_cuda, env.fp64_peak_gflops))


def _pct(x: Optional[float]) -> str:
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


def as_dict(r: Roofline) -> dict[str, Optional[float]]:
    """For JSON views (dashboard, explain): plain fractions."""
    return attrs.asdict(r)
