"""An independent timer for the same PTX: nvbench's Python package (``cuda-bench``) against wfbench.

``wfbench crosscheck BUNDLE`` loads each case's WarpForth and CUDA PTX once, binds both kernels to the
case's canonical inputs, and times them with nvbench (``cuda.bench``): its *batch* figure (back-to-back
launches, hot L2) is what wfbench's ``events`` and ``graph`` modes measure, its *cold* figure (L2 flushed
before each launch, one launch per sample) is what the ``cold-l2`` mode measures. By default wfbench's
medians are taken in the same process, in one or more modes, on the very buffers nvbench times (one
placement, the same rotation over buffer sets): the agreement is the two timers', not a placement effect.
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

The GPU parts import numba, cuda.core and cuda.bench lazily; the parsing and comparison are plain Python.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import TIMING_COLD_L2, TIMING_EVENTS, TimingProtocol, RunResult

if TYPE_CHECKING:
    from wfbench_core.gpu.device import Device

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BATCH_OVER_COLD", "DEFAULT_TOLERANCE", "INSTALL_HINT", "NVBENCH_BATCH_MEAN", "NVBENCH_BATCH_SAMPLES",
    "NVBENCH_COLD_MEAN", "NVBENCH_COLD_MEDIAN", "NVBENCH_COLD_SAMPLES", "NVBENCH_FLOOR", "GapRow", "KernelRow",
    "NvbenchTimes", "add_medians", "as_json", "bench_name", "compare", "crosscheck", "disagreements",
    "medians_from_result", "parse_nvbench_json", "render", "run_nvbench", "small_case", "within", "worst_by_mode",
    "worst_disagreement",
]

NVBENCH_BATCH_MEAN = "nv/batch/time/gpu/mean"
NVBENCH_COLD_MEAN = "nv/cold/time/gpu/mean"
NVBENCH_COLD_MEDIAN = "nv/cold/time/gpu/median"
NVBENCH_COLD_SAMPLES = "nv/cold/sample_size"
NVBENCH_BATCH_SAMPLES = "nv/batch/sample_size"
NVBENCH_FLOOR = "wfbench/launch-floor"  # an empty kernel through nvbench's launcher: its batch figure is the floor
DEFAULT_TOLERANCE = 0.01  # per-kernel agreement target
BATCH_OVER_COLD = 1.10  # nvbench's hot batch figure this far over its cold one is its launcher's rate

_NVBENCH_USED = False
INSTALL_HINT = "crosscheck needs nvbench's Python package: pip install 'wfbench[crosscheck]' on the GPU host"


@attrs.frozen
class NvbenchTimes:
    """One nvbench benchmark's figures, per launch, in microseconds (None where nvbench gave none)."""

    batch_mean_us: Optional[float] = None
    cold_mean_us: Optional[float] = None
    batch_samples: Optional[int] = None
    cold_samples: Optional[int] = None
    cold_median_us: Optional[float] = None  # in cuda-bench's JSON; older nvbench gave the mean only

    @property
    def cold_us(self) -> Optional[float]:
        """The cold figure a wfbench median is compared with: nvbench's cold median, else its mean."""
        return self.cold_median_us if self.cold_median_us is not None else self.cold_mean_us


@attrs.frozen
class KernelRow:
    case: str
    side: str  # "wf" | "cuda"
    wfbench_us: Mapping[str, float]  # timing mode -> wfbench median, us per launch
    nvbench: NvbenchTimes
    launch_floor_us: Optional[float] = None  # an empty kernel, launched back to back by wfbench (events mode)
    nvbench_floor_us: Optional[float] = None  # the same empty kernel through nvbench's launcher (its batch figure)

    @property
    def nvbench_floor(self) -> Optional[float]:
        """The launch floor nvbench's batch figure is judged by: its own launcher's, else wfbench's."""
        return self.nvbench_floor_us or self.launch_floor_us

    @property
    def nvbench_launch_bound(self) -> bool:
        """nvbench's batch figure is its launcher's rate, not the kernel's: within LAUNCH_BOUND_FACTOR of its
        launcher's floor, or over its own cold figure by more than BATCH_OVER_COLD (back to back with a hot L2,
        a kernel is not slower than alone after a flush: the launches, whose Python cost grows with the
        kernel's arguments, are what it timed). Nothing that times the kernel compares with it."""
        from wfbench_core.gpu.plausibility import LAUNCH_BOUND_FACTOR

        batch, floor, cold = self.nvbench.batch_mean_us, self.nvbench_floor, self.nvbench.cold_us
        if not batch:
            return False
        return bool((floor and batch <= LAUNCH_BOUND_FACTOR * floor) or (cold and batch > BATCH_OVER_COLD * cold))

    def reference_us(self, mode: str) -> Optional[float]:
        """nvbench's figure that measures what ``mode`` does: its cold figure for cold-l2, else its batch mean."""
        return self.nvbench.cold_us if mode == TIMING_COLD_L2 else self.nvbench.batch_mean_us

    def launch_bound(self, mode: str) -> bool:
        """In ``mode``, nvbench's matching figure is its launcher's rate (its cold figure never is)."""
        return mode != TIMING_COLD_L2 and self.nvbench_launch_bound

    def diff(self, mode: str = TIMING_EVENTS) -> Optional[float]:
        """wfbench median in ``mode`` over the nvbench figure that measures the same thing, minus 1 (None where
        there is none, or nvbench's batch figure is its launcher's rate)."""
        if self.launch_bound(mode):
            return None
        ref, have = self.reference_us(mode), self.wfbench_us.get(mode)
        return None if ref is None or have is None or ref <= 0 else have / ref - 1.0


@attrs.frozen
class GapRow:
    case: str
    wfbench_gap: float
    nvbench_gap: Optional[float]  # from nvbench's figures that match the mode (None: none, or launch-bound)
    mode: str = TIMING_EVENTS

    @property
    def diff(self) -> Optional[float]:
        return None if self.nvbench_gap is None else self.wfbench_gap / self.nvbench_gap - 1.0


def _summary_value(summary: Mapping[str, Any]) -> Any:
    for d in summary.get("data", ()):
        if d.get("name") == "value":
            value, kind = d.get("value"), d.get("type")
            if value is None:
                return None
            if kind == "float64":
                return float(value)
            if kind == "int64":
                return int(value)
            return value
    return None


def parse_nvbench_json(data: Mapping[str, Any], *, where: str = "nvbench JSON") -> dict[str, NvbenchTimes]:
    """Benchmark name -> its figures, from nvbench's ``--json`` output (first state of each benchmark)."""
    out: dict[str, NvbenchTimes] = {}
    try:
        benches = data["benchmarks"]
    except (KeyError, TypeError):
        raise WfbenchError(f"{where}: no 'benchmarks' list; is it nvbench's --json output?") from None
    for bench in benches:
        states = [s for s in bench.get("states") or () if not s.get("is_skipped")]
        if not states:
            continue
        summaries = {s["tag"]: _summary_value(s) for s in states[0].get("summaries") or () if "tag" in s}

        out[bench["name"]] = NvbenchTimes(
            batch_mean_us=_summary_us(summaries, NVBENCH_BATCH_MEAN),
            cold_mean_us=_summary_us(summaries, NVBENCH_COLD_MEAN),
            batch_samples=_summary_count(summaries, NVBENCH_BATCH_SAMPLES),
            cold_samples=_summary_count(summaries, NVBENCH_COLD_SAMPLES),
            cold_median_us=_summary_us(summaries, NVBENCH_COLD_MEDIAN),
        )
    return out


def _summary_us(summaries: Mapping[str, Any], tag: str) -> Optional[float]:
    v = summaries.get(tag)
    return None if v is None else float(v) * 1e6


def _summary_count(summaries: Mapping[str, Any], tag: str) -> Optional[int]:
    v = summaries.get(tag)
    return None if v is None else int(v)


def bench_name(case_id: str, side: str) -> str:
    return f"{case_id}/{side}"


def compare(wfbench_us: Mapping[str, Mapping[str, Mapping[str, float]]], nvbench: Mapping[str, NvbenchTimes],
            floors: Mapping[str, float] = {}) -> tuple[list[KernelRow], list[GapRow]]:
    """``wfbench_us``: case -> side -> mode -> median us; ``nvbench``: benchmark name -> figures (with
    :data:`NVBENCH_FLOOR`, nvbench's own launch floor, where it was timed); ``floors``: case -> wfbench's launch
    floor in events mode (us), where measured."""
    kernels: list[KernelRow] = []
    gaps: list[GapRow] = []
    nv_floor = nvbench.get(NVBENCH_FLOOR, NvbenchTimes()).batch_mean_us
    for case_id, sides in wfbench_us.items():
        rows = {side: KernelRow(case_id, side, dict(by_mode), nvbench.get(bench_name(case_id, side), NvbenchTimes()),
                                floors.get(case_id), nv_floor) for side, by_mode in sides.items()}
        kernels.extend(rows.values())
        if "wf" in rows and "cuda" in rows:
            wf, cu = rows["wf"], rows["cuda"]
            for mode in [m for m in sides["cuda"] if m in sides["wf"]]:
                a, b = wf.reference_us(mode), cu.reference_us(mode)
                launch_bound = wf.launch_bound(mode) or cu.launch_bound(mode)
                ratio = a / b if a is not None and b and not launch_bound else None
                gaps.append(GapRow(case_id, sides["wf"][mode] / sides["cuda"][mode], ratio, mode))
    return kernels, gaps


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:+.2%}"


def _us(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def _agreement(k: KernelRow, mode: str, tolerance: float) -> str:
    """A kernel's agreement cell: the difference, "!" beyond the tolerance, or why there is none."""
    if mode in k.wfbench_us and k.launch_bound(mode):
        return "nvbench launch-bound"
    d = k.diff(mode)
    return _pct(d) + (" !" if d is not None and abs(d) > tolerance else "")


def render(kernels: Sequence[KernelRow], gaps: Sequence[GapRow], tolerance: float = DEFAULT_TOLERANCE) -> str:
    from wfbench_core.review.table import render_table

    modes: list[str] = []
    for k in kernels:
        modes += [m for m in k.wfbench_us if m not in modes]
    head = ["case", "side"] + [f"wfbench {m} us" for m in modes] + ["nvbench batch us", "nvbench cold us"] + \
        [f"{m} vs nvbench {'cold' if m == TIMING_COLD_L2 else 'batch'}" for m in modes]
    rows = [head]
    for k in kernels:
        rows.append([k.case, k.side] + [_us(k.wfbench_us.get(m)) for m in modes] +
                    [_us(k.nvbench.batch_mean_us), _us(k.nvbench.cold_us)] +
                    [_agreement(k, m, tolerance) for m in modes])
    text = render_table(rows)
    if gaps:
        g_rows = [["case", "mode", "gap wfbench", "gap nvbench", "agreement"]]
        for g in gaps:
            g_rows.append([g.case, g.mode, f"{g.wfbench_gap:.4f}x",
                           "-" if g.nvbench_gap is None else f"{g.nvbench_gap:.4f}x", _pct(g.diff)])
        text += "\n\n" + render_table(g_rows)
    bound = [f"{k.case}/{k.side} ({_us(k.nvbench.batch_mean_us)} us, floor {_us(k.nvbench_floor)} us)"
             for k in kernels if k.nvbench_launch_bound]
    if bound:
        from wfbench_core.gpu.plausibility import LAUNCH_BOUND_FACTOR

        whose = "through nvbench's own launcher" if any(k.nvbench_floor_us for k in kernels) else "by wfbench"
        text += (f"\n\nnvbench's launcher is the bottleneck (its batch figure within {LAUNCH_BOUND_FACTOR:g}x of an "
                 f"empty kernel launched back to back {whose}, or over {BATCH_OVER_COLD:g}x its own cold figure), "
                 f"so its batch figure is not compared: " + ", ".join(bound))
    worst = worst_disagreement(kernels)
    if worst is not None:
        per_mode = ", ".join(f"{m} {'-' if w is None else f'{w:.2%}'}" for m, w in worst_by_mode(kernels).items())
        text += f"\n\nworst per-kernel disagreement {worst:.2%} ({per_mode}; target <= {tolerance:.1%})"
    return text


def as_json(kernels: Sequence[KernelRow], gaps: Sequence[GapRow], tolerance: float) -> dict[str, Any]:
    """The comparison as plain JSON data (``wfbench crosscheck --json``)."""
    from wfbench_core.record.results import converter

    conv = converter()
    return {
        "kernels": [{**conv.unstructure(k), "diff": {m: k.diff(m) for m in k.wfbench_us},
                     "nvbench_launch_bound": k.nvbench_launch_bound,
                     "launch_bound": {m: k.launch_bound(m) for m in k.wfbench_us}} for k in kernels],
        "gaps": [{**conv.unstructure(g), "diff": g.diff} for g in gaps],
        "worst": worst_disagreement(kernels),
        "worst_by_mode": worst_by_mode(kernels),
        "tolerance": tolerance,
        "within": within(kernels, tolerance),
    }


def worst_by_mode(kernels: Sequence[KernelRow]) -> dict[str, Optional[float]]:
    """Each mode timed -> its worst per-kernel disagreement (None: no like figure to compare with)."""
    modes = list(dict.fromkeys(m for k in kernels for m in k.wfbench_us))
    return {m: max((abs(d) for k in kernels for d in (k.diff(m),) if d is not None), default=None) for m in modes}


def disagreements(kernels: Sequence[KernelRow], tolerance: float) -> list[str]:
    """"case/side mode +x.xx%" for every like figure beyond ``tolerance``."""
    return [f"{k.case}/{k.side} {m} {_pct(d)}" for k in kernels for m in k.wfbench_us for d in (k.diff(m),)
            if d is not None and abs(d) > tolerance and not math.isclose(abs(d), tolerance)]


def worst_disagreement(kernels: Iterable[KernelRow]) -> Optional[float]:
    diffs = [abs(d) for k in kernels for m in k.wfbench_us for d in (k.diff(m),) if d is not None]
    return max(diffs) if diffs else None


def medians_from_result(result: RunResult, case_ids: Iterable[str]) -> dict[str, dict[str, dict[str, float]]]:
    """case -> side -> {mode: median us} from a stored paired run (base/head runs: unlabelled cases only)."""
    wanted = set(case_ids)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for c in result.cases:
        if c.id not in wanted or c.compiler_label or c.timing is None or c.mode != "paired":
            continue
        mode = c.timing.timing_mode
        out[c.id] = {"wf": {mode: c.timing.warpforth.median_us}, "cuda": {mode: c.timing.cuda.median_us}}
    return out


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
    except Exception as exc:  # nvbench's own error, in one line
        raise WfbenchError(f"nvbench failed: {type(exc).__name__}: {exc}") from None
    try:
        data = json.loads(json_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise WfbenchError(f"{json_path}: nvbench wrote no readable JSON ({exc})") from None
    return parse_nvbench_json(data, where=str(json_path))


def crosscheck(bundle: Path, *, registry: Any, case_ids: Sequence[str] = (), against: Optional[RunResult] = None,
               modes: Sequence[str] = (TIMING_EVENTS,), small: bool = False, protocol: TimingProtocol = TimingProtocol(),
               cuda_compiler_kind: str = "auto", json_path: Path,
               progress: Callable[[str], None] = lambda msg: None) -> tuple[list[KernelRow], list[GapRow]]:
    """Time the bundle's kernels with nvbench and compare with wfbench's medians (see the module docstring).

    Both timers time the same buffers: wfbench samples one placement (offset 0, ``placements=1``) with its
    usual rotation over buffer sets, and nvbench's launches rotate over the very same sets, so a
    disagreement is the timers' and not the buffers' placement. Outputs are not checked here (``wfbench
    run`` does that); a CUDA error is one line naming the case.
    """
    from wfbench_core.build.compile import cuda_compiler
    from wfbench_core.gpu.device import Device
    from wfbench_core.build.prepare import prepare

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
    keep: list[Any] = []
    for prep in prepared:
        case = small_case(prep.case) if small else prep.case
        if against is not None and case.id not in wfbench_us:
            raise WfbenchError(f"case {case.id} has no timed paired result in the --against run")
        rounds = _case_rounds(device, prep, case, small, cuda, protocol.rotation)
        keep.append(rounds)
        for mode in (modes if against is None else ()):
            progress(f"{case.id}: wfbench, {mode} mode{' (check sizes)' if small else ''}")
            add_medians(wfbench_us.setdefault(case.id, {}),
                        _medians(rounds, attrs.evolve(protocol, placements=1, timing_mode=mode), case.id, device))
        floors[case.id] = _floor(rounds, case.id, device)
        geo = case.launch(case.sizes["canonical"])
        config = device.config(geo.grid, geo.block, geo.shared_bytes)
        for label, kernel in rounds.setup.kernels.items():
            launchers[bench_name(case.id, label)] = _rotating(device, kernel, config, rounds.set_args)
    launchers[NVBENCH_FLOOR] = _empty(device)
    progress(f"nvbench: timing {len(launchers) - 1} kernels and its own launch floor")
    nv = run_nvbench(launchers, json_path, device)
    del keep
    return compare(wfbench_us, nv, floors)


def add_medians(by_side: dict[str, dict[str, float]], medians: Mapping[str, Mapping[str, float]]) -> None:
    """Add one mode's medians (side -> mode -> us) to a case's, keeping the modes timed before it."""
    for side, by_mode in medians.items():
        by_side.setdefault(side, {}).update(by_mode)


def _case_rounds(device: Device, prep: Any, case: Any, small: bool, cuda: Any, rotation: int) -> Any:
    """Both sides of a case loaded and bound to one placement at offset 0 (the one ``placements=1`` makes)."""
    from wfbench_core.build.compile import compile_cuda
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
    from wfbench_core.record.stats import median

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


def _empty(device: Device) -> Callable[[Any], None]:
    """nvbench's launch of wfbench's empty kernel: what its launcher costs per launch, with no kernel work."""
    from wfbench_core.gpu.gpu_rounds import EMPTY, EMPTY_PTX

    kernel = device.load(EMPTY_PTX, EMPTY, case_id="floor", label="floor")
    config = device.config((1, 1, 1), (1, 1, 1))

    def go(stream: Any) -> None:
        device.launch(kernel, config, (), stream=stream)

    return go


def within(kernels: Sequence[KernelRow], tolerance: float) -> bool:
    return not disagreements(kernels, tolerance)
