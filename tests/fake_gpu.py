"""A wfbench timer plugin that misbehaves on purpose, for the executor's isolation tests (no GPU needed).

Loaded into the executor's worker process through ``WFBENCH_PLUGINS=fake_gpu`` (with ``tests/`` on
``PYTHONPATH``). ``FAKE_GPU_BEHAVIOUR`` says what each case does, e.g. ``scale_i64=segv,axpy_f64=ok``:

- ``ok``: a clean, correct measurement (WarpForth 3 us, CUDA 2 us);
- ``segv``: the worker process dies of SIGSEGV, as when a driver crashes;
- ``kill``: the worker process is SIGKILLed (out-of-memory killer, an operator);
- ``hang``: a wait on the "GPU" that never returns, under the watchdog (a kernel that never terminates);
- ``quiet-hang``: never returns, outside any watchdog wait;
- ``raise``: the timer raises an unexpected exception (a plugin bug);
- ``launch``: a launch fails with a sticky CUDA error (a WfbenchError, as the real timer raises);
- ``barriers``: a correct measurement whose times come from the code: each ``bar.sync`` in a side's canonical
  PTX costs 2 %, and every sample jitters by 0.1 % (seeded), so a compiler that adds a barrier is slower.
- ``FAKE_GPU_CEILING`` (``--ceiling``): unset, a declared ceiling whose library is not installed here is
  missing, as the real timer says; ``ok``: the ceiling is checked and timed at 1 us per launch; ``failed``:
  its check fails (the line the real timer writes).
- ``sized``: a correct measurement whose times follow the case's canonical work (a sweep point's sizes): a kernel
  takes 1 us plus its bytes at 3 TB/s (CUDA; WarpForth 10 % longer); in events mode a launch costs at least the
  launch floor of 2.5 us, in graph mode 0.8 us (what ``launch_floor_us`` then says).
- ``crash``: the worker process ends with a Python traceback on its standard error (an exception no handler
  catches, as a broken driver binding may raise).

With ``FAKE_GPU_CHAIN_COST`` (a number), a WarpForth kernel whose PTX holds the power study's dependent chain
(``tools/power_study.py``: ``mov.u32 %ps_r1, K``) is that much slower per iteration (relative), and every
sample gets 0.05 % noise and every placement (``samples / 2`` of them) a 0.05 % effect, from a fixed seed.

With ``FAKE_GPU_WRONG`` (a PTX statement), a side whose canonical PTX holds it is wrong on the timed buffers,
as a compiler that drops the last block of large grids is (right at check sizes): the measurement fails as the
real timer's does, every side's checks together, and the wrong side's check names it.

With ``FAKE_GPU_SKIPS_WORK`` (a PTX statement), a side whose canonical PTX holds it reads 107, 1.94 and 1.77 us
per launch in its first rounds, the CUDA side 105 us in each: the plausibility rule refuses it before timing.

With ``FAKE_GPU_HOST_ARRAYS`` (a file), the timer takes inputs and references made ahead (as the real timer does,
:mod:`wfbench_core.gpu.host_prep`): each measurement appends its pid, its case and the configurations it was handed;
a configuration it was not handed is made here, as the real checker makes it, so a case whose inputs cannot be
made fails here as it does there.

Every worker appends its pid to ``FAKE_GPU_PIDS`` (a file), so tests can see that each one is gone. With
``FAKE_GPU_MEASURED`` (a file), each measurement appends its pid, case, canonical sizes and timing mode. With
``FAKE_GPU_PREFETCH`` (a file), each measurement appends its pid, its case and the cases whose CUDA compile the
worker still holds prefetched, so tests can see what a new worker compiles ahead.
"""

from __future__ import annotations

import os
import re
import signal
import time

from wfbench_core import hookimpl
from wfbench_core.gpu import watchdog
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import Check, Costs, Environment, KernelAttrs, Sampled

import tool_cache  # tests/ is on the worker's PYTHONPATH

tool_cache.install_from_env()  # the PTX other runs of the session assembled is not assembled again


def _behaviour(case_id: str) -> str:
    spec = dict(item.split("=", 1) for item in os.environ.get("FAKE_GPU_BEHAVIOUR", "").split(",") if "=" in item)
    return spec.get(case_id, "ok")


class FakeTimer:
    def __init__(self, protocol):  # type: ignore[no-untyped-def]
        self.protocol = protocol
        pids = os.environ.get("FAKE_GPU_PIDS")
        if pids:
            with open(pids, "a") as fh:
                fh.write(f"{os.getpid()}\n")
        if os.environ.get("FAKE_GPU_HOST_ARRAYS"):
            self.host_arrays = {}  # the worker hands it each case's arrays made ahead

    def environment(self) -> Environment:
        board = os.environ.get("CUDA_VISIBLE_DEVICES", "")  # one board per visible device, as on a real host
        return Environment(gpu_name="Fake GPU", gpu_uuid=f"GPU-fake-{board}" if board else "GPU-fake",
                           compute_capability="9.0")

    def copy_gbps(self) -> None:
        return None

    def measure(self, case, sides, *, reference_label, ceiling=None):  # type: ignore[no-untyped-def]
        from wfbench_core.contracts import Measurement

        ahead = os.environ.get("FAKE_GPU_PREFETCH")
        if ahead:
            from wfbench_core.compiling.compile import _PREFETCHED

            pending = sorted({key[0].case_id for key in _PREFETCHED})
            with open(ahead, "a") as fh:
                fh.write(f"{os.getpid()} {case.id} {','.join(pending)}\n")
        what = _behaviour(case.id)
        if hasattr(self, "host_arrays"):
            _take_host_arrays(self, case)
        measured = os.environ.get("FAKE_GPU_MEASURED")
        if measured:
            sizes = ",".join(f"{k}={v}" for k, v in sorted(case.sizes["canonical"].items()))
            with open(measured, "a") as fh:
                fh.write(f"{os.getpid()} {case.id} {sizes} {self.protocol.timing_mode}\n")
        if what == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif what == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif what == "hang":
            with watchdog.guard(f"{case.id} wf launch", 0.001):
                time.sleep(3600)
        elif what == "quiet-hang":
            time.sleep(3600)
        elif what == "raise":
            raise RuntimeError("the fake timer broke")
        elif what == "crash":
            raise BaseException("the fake driver lost the device")  # not an Exception: nothing catches it
        elif what == "launch":
            raise WfbenchError(f"{case.key('check')} wf: launch failed: [700] CUDA_ERROR_ILLEGAL_ADDRESS")
        n = self.protocol.samples
        check = Check("check", "wf", "reference", "out", True, 0.0, 0.0, 0, 100)
        skips = os.environ.get("FAKE_GPU_SKIPS_WORK")
        if skips and any(skips in s.ptx.get("canonical", "") for s in sides):
            from wfbench_core.gpu.plausibility import InconsistentLaunches, inconsistent_launches

            per_launch_ms = {s.label: [0.107, 0.00194, 0.00177] if skips in s.ptx.get("canonical", "") else [0.105] * 3
                             for s in sides}
            raise InconsistentLaunches(inconsistent_launches(per_launch_ms, reference_label))
        wrong = os.environ.get("FAKE_GPU_WRONG")
        if wrong and any(wrong in s.ptx.get("canonical", "") for s in sides):
            return _wrong_on_timed_buffers(case, sides, wrong)
        cost = os.environ.get("FAKE_GPU_CHAIN_COST")
        floor = None
        if what == "sized":
            samples, floor = _sized(case, sides, n, self.protocol.timing_mode)
        elif what == "barriers":
            samples = {s.label: _barrier_cost(case.id, s, n) for s in sides}
        elif cost:
            samples = _costed(sides, n, float(cost))
        else:
            samples = {s.label: (3.0 if s.label.startswith("wf") else 2.0,) * n for s in sides}
        measured_ceiling = _ceiling(ceiling, samples, n)
        sampled = Sampled(samples_us=samples, order=tuple(sides[i % len(sides)].label for i in range(n)),
                          launch_floor_us=floor, timing_mode=self.protocol.timing_mode,
                          launches_per_sample=1, placement_of=tuple(i // 2 for i in range(n)) if cost or what == "barriers" else ())
        return Measurement(
            passed=True, message="", checks=(check,), kernel_attrs={s.label: KernelAttrs(16, 0, 0, 1024) for s in sides},
            costs=Costs(), sampled=sampled, ceiling=measured_ceiling)


def _ceiling(ceiling, samples, n):  # type: ignore[no-untyped-def]
    """The ceiling as FAKE_GPU_CEILING says (see the module docstring); its samples are added to ``samples``."""
    if ceiling is None:
        return None
    from wfbench_core.ceiling import LABEL, missing
    from wfbench_core.contracts import CeilingMeasured
    from wfbench_core.gpu.ceiling_side import failed_line

    how = os.environ.get("FAKE_GPU_CEILING", "")
    output = next(iter(ceiling.tolerances))
    if not how:
        why = missing(ceiling)
        if why:
            return CeilingMeasured(problem=why, status="missing")
    if how == "failed":
        bad = Check("canonical", LABEL, "reference", output, False, 0.5, 0.25, 3, 100)
        return CeilingMeasured(checks=(bad,), problem=failed_line(ceiling, bad), status="failed")
    samples[LABEL] = (1.0,) * n
    return CeilingMeasured(checks=(Check("canonical", LABEL, "reference", output, True, 0.0, 0.0, 0, 100),),
                           timing_mode="events")


def _take_host_arrays(timer, case) -> None:  # type: ignore[no-untyped-def]
    """Note the configurations handed to ``timer`` for ``case``; make those not handed, as the real checker does."""
    from wfbench_core.gpu.host_prep import handed, make_host_arrays

    given = [config for config in ("check", "canonical") if handed(timer, case, config) is not None]
    with open(os.environ["FAKE_GPU_HOST_ARRAYS"], "a") as fh:
        fh.write(f"{os.getpid()} {case.id} {','.join(given) or '-'}\n")
    for config in ("check", "canonical"):
        if config not in given:
            make_host_arrays(case, config)


def _wrong_on_timed_buffers(case, sides, wrong: str):  # type: ignore[no-untyped-def]
    """The failed measurement of sides whose PTX holds ``wrong``: 8192 of 33554432 elements never written."""
    from wfbench_core.contracts import Measurement
    from wfbench_core.gpu.comparison import describe_failures

    out = case.outputs[0].name
    checks = tuple(Check("canonical", s.label, "timed-buffers", out, wrong not in s.ptx.get("canonical", ""), 0.0, 0.0,
                         *((0, 33554432) if wrong not in s.ptx.get("canonical", "") else (8192, 33554432, 8192)),
                         placement=0, buffer_set=1) for s in sides)
    failed = [c for c in checks if not c.passed]
    return Measurement(passed=False, message=describe_failures(case, failed), checks=checks,
                       kernel_attrs={s.label: KernelAttrs(16, 0, 0, 1024) for s in sides}, costs=Costs())


def _sized(case, sides, n: int, mode: str):  # type: ignore[no-untyped-def]
    """Per-launch times from the case's work at its canonical sizes; the launch floor of ``mode``."""
    floor = 2.5 if mode == "events" else 0.8
    kernel = 1.0 + case.work(case.sizes["canonical"]).bytes / 3e6
    out = {}
    for s in sides:
        us = kernel * (1.1 if s.label.startswith("wf") else 1.0)
        out[s.label] = (max(us, floor) if mode == "events" else us,) * n
    return out, floor


def _costed(sides, n: int, cost: float) -> dict[str, tuple[float, ...]]:  # type: ignore[no-untyped-def]
    import zlib

    import numpy as np

    rng = np.random.default_rng(zlib.crc32(" ".join(s.label for s in sides).encode()))
    placement = np.exp(rng.normal(0.0, 0.0005, (n + 1) // 2))[np.arange(n) // 2]
    out = {}
    for s in sides:
        chain = re.search(r"mov\.u32\s+%ps_r1, (\d+);", s.ptx.get("canonical", ""))
        slow = 1.0 + cost * int(chain.group(1)) if chain else 1.0
        base = 3.0 * placement * slow if s.label.startswith("wf") else 2.0 * np.ones(n)
        out[s.label] = tuple(float(x) for x in base * (1.0 + 0.0005 * rng.standard_normal(n)))
    return out


def _barrier_cost(case_id: str, side, n: int) -> tuple[float, ...]:  # type: ignore[no-untyped-def]
    import zlib

    import numpy as np

    base = (3.0 if side.label.startswith("wf") else 2.0) * (1.0 + 0.02 * side.ptx["canonical"].count("bar.sync"))
    rng = np.random.default_rng(zlib.crc32(f"{case_id} {side.label}".encode()))
    return tuple(float(x) for x in base * (1.0 + rng.normal(0.0, 0.001, n)))


@hookimpl(tryfirst=True)
def wfbench_make_timer(protocol):  # type: ignore[no-untyped-def]
    return FakeTimer(protocol)
