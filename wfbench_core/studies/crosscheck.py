"""An independent timer for the same PTX: nvbench's Python package (``cuda-bench``) against wfbench.

``wfbench crosscheck BUNDLE`` loads each case's WarpForth and CUDA PTX once, binds both kernels to the
case's canonical inputs, and times them with nvbench (``cuda.bench``): its *batch* figure (back-to-back
launches, hot L2) is what wfbench's ``events`` and ``graph`` modes measure, its *cold* figure (L2 flushed
before each launch, one launch per sample) is what the ``cold-l2`` mode measures. By default wfbench's
medians are taken in the same process, in one or more modes, on the very buffers nvbench times (one
placement, the same rotation over buffer sets): the agreement is the two timers', not a placement effect.
wfbench times every kernel twice, before nvbench runs and after it, and compares the medians taken after
with nvbench's: a kernel's own time can move once nvbench has run in the process (stack_pick_f64's CUDA side,
which keeps a local array, moved by 2.5 to 3 % on three H200 boards, faster on two and slower on the third,
as wfbench measured it before and after, whatever the timer), so the two timers are compared in the same state
of the process; the
medians taken before are shown, and a kernel whose time moved by more than the tolerance is named.
With ``--against RESULT`` they come from a stored run instead, whose samples were spread over many
placements; that comparison includes the placement effect.

Agreement per kernel is ``wfbench median / nvbench figure - 1``, in each mode against nvbench's matching
figure: its cold median for cold-l2 (its mean where an older nvbench gives no median), its batch mean
for events and graph (the only batch figure it has: a batch is one timed span); the gap's agreement is
the same for ``gap = WarpForth / CUDA``, per mode. nvbench also times an empty kernel through its own launcher
(the Python callback that launches every kernel here): where a kernel's batch figure is within the launch-bound
factor of that floor, or over :data:`BATCH_OVER_COLD` times nvbench's own cold figure for it, it is the
launcher's rate, not the kernel's, and it is not compared (the table says so), in events or graph mode; its
cold figure, measured behind its blocking kernel, still is. Only like figures decide the exit status.

The GPU parts import numba, cuda.core and cuda.bench lazily; the parsing and comparison are plain Python
(:mod:`wfbench_core.studies.nvbench_table`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import TIMING_EVENTS, RunResult, TimingProtocol
from wfbench_core.studies.nvbench_table import (  # the comparison's figures, offered here too
    BATCH_OVER_COLD,
    DEFAULT_TOLERANCE,
    NVBENCH_BATCH_MEAN,
    NVBENCH_BATCH_SAMPLES,
    NVBENCH_COLD_MEAN,
    NVBENCH_COLD_MEDIAN,
    NVBENCH_COLD_SAMPLES,
    NVBENCH_FLOOR,
    GapRow,
    KernelRow,
    NvbenchTimes,
    as_json,
    bench_name,
    compare,
    disagreements,
    floor_name,
    medians_from_result,
    parse_nvbench_json,
    render,
    within,
    worst_by_mode,
    worst_disagreement,
)

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BATCH_OVER_COLD",
    "DEFAULT_TOLERANCE",
    "INSTALL_HINT",
    "NVBENCH_BATCH_MEAN",
    "NVBENCH_BATCH_SAMPLES",
    "NVBENCH_COLD_MEAN",
    "NVBENCH_COLD_MEDIAN",
    "NVBENCH_COLD_SAMPLES",
    "NVBENCH_FLOOR",
    "GapRow",
    "KernelRow",
    "NvbenchTimes",
    "add_medians",
    "as_json",
    "bench_name",
    "compare",
    "crosscheck",
    "disagreements",
    "floor_name",
    "medians_from_result",
    "parse_nvbench_json",
    "render",
    "run_nvbench",
    "small_case",
    "within",
    "worst_by_mode",
    "worst_disagreement",
]

if TYPE_CHECKING:
    from wfbench_core.gpu.device import Device

_NVBENCH_USED = False
INSTALL_HINT = "crosscheck needs nvbench's Python package: pip install 'wfbench[crosscheck]' on the GPU host"


# -- the GPU part ---------------------------------------------------------------------------------------


def small_case(case: Any) -> Any:
    """The case with its ``check`` sizes as the timed size (for comparing modes on small kernels)."""
    return attrs.evolve(case, sizes={**case.sizes, "canonical": case.sizes["check"]})


def run_nvbench(launchers: Mapping[str, Callable[[Any], None]], json_path: Path, device: Device
                ) -> dict[str, NvbenchTimes]:
    """Time each launcher (given a stream of nvbench's, wrapped by the device) with nvbench, cold and batch;
    name -> figures."""
    try:
        import cuda.bench as bench
    except ImportError:
        raise WfbenchError(INSTALL_HINT) from None

    def make(go: Callable[[Any], None]) -> Callable[[Any], None]:
        streams: dict[int, Any] = {}

        def body(state: Any) -> None:
            def once(launch: Any) -> None:
                handle = int(launch.get_stream().__cuda_stream__()[1])
                stream = streams.get(handle)
                if stream is None:
                    stream = streams[handle] = device.wrap_stream(handle)
                go(stream)

            state.exec(once)

        return body

    global _NVBENCH_USED
    if _NVBENCH_USED:
        raise WfbenchError("nvbench keeps its benchmarks for the life of a process: cross-check once per process")
    _NVBENCH_USED = True
    for name, go in launchers.items():
        bench.register(make(go)).set_name(name)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # --timeout bounds a benchmark whose noise stays above nvbench's stopping criterion (default 15 s)
        bench.run_all_benchmarks(["wfbench-crosscheck", "--devices", str(device.ordinal), "--timeout", "5",
                                  "--quiet", "--json", str(json_path)])
    except Exception as exc:
        raise WfbenchError(f"nvbench failed: {type(exc).__name__}: {exc}") from None
    try:
        data = json.loads(json_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise WfbenchError(f"{json_path}: nvbench wrote no readable JSON ({exc})") from None
    return parse_nvbench_json(data, where=str(json_path))


def crosscheck(bundle: Path, *, registry: Any, case_ids: Sequence[str] = (), against: RunResult | None = None,
               modes: Sequence[str] = (TIMING_EVENTS,), small: bool = False, protocol: TimingProtocol = TimingProtocol(),
               cuda_compiler_kind: str = "auto", json_path: Path,
               progress: Callable[[str], None] = lambda msg: None) -> tuple[list[KernelRow], list[GapRow]]:
    """Time the bundle's kernels with nvbench and compare with wfbench's medians (see the module docstring).

    Both timers time the same buffers: wfbench samples one placement (offset 0, ``placements=1``) with its
    usual rotation over buffer sets, and nvbench's launches rotate over the very same sets, so a
    disagreement is the timers' and not the buffers' placement. Outputs are not checked here (``wfbench
    run`` does that); a CUDA error is one line naming the case.
    """
    from wfbench_core.compiling.compile import cuda_compiler
    from wfbench_core.compiling.prepare import prepare
    from wfbench_core.gpu.device import Device

    manifest, prepared = prepare(bundle, registry, case_ids)
    if manifest.labels:
        raise WfbenchError(f"{bundle}: crosscheck takes a single-compiler bundle, not base/head")
    if not prepared:
        raise WfbenchError(f"{bundle}: no case to cross-check")
    if against is not None and small:
        raise WfbenchError("--against compares a stored run's canonical sizes; it cannot be used with --small")
    device = Device().open()
    cuda = cuda_compiler(cuda_compiler_kind)
    wfbench_us: dict[str, dict[str, dict[str, float]]] = (
        medians_from_result(against, [p.case.id for p in prepared]) if against is not None else {})
    launchers: dict[str, Callable[[Any], None]] = {}
    floors: dict[str, float] = {}  # case -> launch floor in events mode
    keep: dict[str, Any] = {}
    before: dict[str, dict[str, dict[str, float]]] = {}

    def medians(case_id: str, into: dict[str, dict[str, dict[str, float]]], when: str) -> None:
        for mode in (modes if against is None else ()):
            progress(f"{case_id}: wfbench, {mode} mode{' (check sizes)' if small else ''}, {when} nvbench")
            add_medians(into.setdefault(case_id, {}), _medians(keep[case_id], attrs.evolve(
                protocol, placements=1, timing_mode=mode), case_id, device))

    for prep in prepared:
        case = small_case(prep.case) if small else prep.case
        if against is not None and case.id not in wfbench_us:
            raise WfbenchError(f"case {case.id} has no timed paired result in the --against run")
        rounds = keep[case.id] = _case_rounds(device, prep, case, small, cuda, protocol.rotation)
        medians(case.id, before, "before")
        floors[case.id] = _floor(rounds, case.id, device)
        geo = case.launch(case.sizes["canonical"])
        config = device.config(geo.grid, geo.block, geo.shared_bytes)
        for label, kernel in rounds.setup.kernels.items():
            launchers[bench_name(case.id, label)] = _rotating(device, kernel, config, rounds.set_args)
        # the case's empty kernel (its parameter list), launched with each set's arguments as the kernels are: the
        # launcher's cost grows with the arguments, so a parameterless empty kernel would understate the floor
        launchers[floor_name(case.id)] = _rotating(device, rounds.floor_kernel, rounds.one_thread, rounds.set_args)
    progress(f"nvbench: timing {len(launchers) - len(keep)} kernels and its own launch floor for each case's "
             f"arguments")
    nv = run_nvbench(launchers, json_path, device)
    for case_id in keep:
        medians(case_id, wfbench_us, "after")
    keep.clear()  # the rounds' buffers go
    return compare(wfbench_us, nv, floors, before)


def add_medians(by_side: dict[str, dict[str, float]], medians: Mapping[str, Mapping[str, float]]) -> None:
    """Add one mode's medians (side -> mode -> us) to a case's, keeping the modes timed before it."""
    for side, by_mode in medians.items():
        by_side.setdefault(side, {}).update(by_mode)


def _case_rounds(device: Device, prep: Any, case: Any, small: bool, cuda: Any, rotation: int) -> Any:
    """Both sides of a case loaded and bound to one placement at offset 0 (the one ``placements=1`` makes)."""
    from wfbench_core.compiling.compile import compile_cuda
    from wfbench_core.gpu.gpu_rounds import CudaRounds, TimingSetup
    from wfbench_core.gpu.sampling import zero_offsets

    config = "check" if small else "canonical"  # whose PTX is timed (small: the check sizes' build)
    ptx = {"wf": prep.files[config].wf_ptx,
           "cuda": compile_cuda(prep.files[config].cuda_source, case_id=case.key(config), arch=device.arch(),
                                compiler=cuda).ptx}
    kernels = {label: device.load(ptx[label], name, case_id=case.id, label=label)
               for label, name in (("wf", case.wf_kernel), ("cuda", case.cuda_kernel))}
    inputs = case.make_inputs("canonical")
    with device.faults(case.id, "canonical", "", "timing"):
        rounds = CudaRounds(device, TimingSetup(case, kernels, inputs, case.make_reference(inputs, "canonical")),
                            TIMING_EVENTS, rotation=rotation)
        rounds.place(0, zero_offsets)
    return rounds


def _medians(rounds: Any, protocol: TimingProtocol, case_id: str, device: Device) -> dict[str, dict[str, float]]:
    """wfbench's median per side in ``protocol.timing_mode``, sampled on the rounds' one placement."""
    from wfbench_core.gpu.sampling import sample_case
    from wfbench_core.stats import median

    rounds.mode = protocol.timing_mode
    with device.faults(case_id, "canonical", "", "timing"):
        sampled = sample_case(rounds, list(rounds.setup.kernels), protocol, reference="cuda")
    return {label: {protocol.timing_mode: median(values)} for label, values in sampled.samples_us.items()}


def _floor(rounds: Any, case_id: str, device: Device) -> float:
    """The launch floor in events mode: an empty kernel launched back to back, as nvbench's batch launches."""
    rounds.mode = TIMING_EVENTS
    with device.faults(case_id, "canonical", "", "timing"):
        return float(rounds.launch_floor_us())


def _rotating(device: Device, kernel: Any, config: Any, set_args: Sequence[Sequence[Any]]) -> Callable[[Any], None]:
    """nvbench's launch of one kernel: each call on the next of the placement's buffer sets, as wfbench's."""
    sets = itertools.cycle(list(set_args))

    def go(stream: Any) -> None:
        device.launch(kernel, config, next(sets), stream=stream)

    return go
