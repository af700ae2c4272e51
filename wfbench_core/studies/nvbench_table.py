"""The crosscheck's figures: nvbench's JSON read, wfbench's medians set against it per kernel and per gap,
and the table and JSON of that comparison. Plain Python; :mod:`wfbench_core.studies.crosscheck` times the
kernels with both timers and explains the comparison.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import TIMING_COLD_L2, TIMING_EVENTS, RunResult

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BATCH_OVER_COLD", "DEFAULT_TOLERANCE", "NVBENCH_BATCH_MEAN", "NVBENCH_BATCH_SAMPLES",
    "NVBENCH_COLD_MEAN", "NVBENCH_COLD_MEDIAN", "NVBENCH_COLD_SAMPLES", "NVBENCH_FLOOR", "GapRow", "KernelRow",
    "NvbenchTimes", "as_json", "bench_name", "compare", "disagreements",
    "floor_name", "medians_from_result", "parse_nvbench_json", "render", "within", "worst_by_mode",
    "worst_disagreement",
]

NVBENCH_BATCH_MEAN = "nv/batch/time/gpu/mean"
NVBENCH_COLD_MEAN = "nv/cold/time/gpu/mean"
NVBENCH_COLD_MEDIAN = "nv/cold/time/gpu/median"
NVBENCH_COLD_SAMPLES = "nv/cold/sample_size"
NVBENCH_BATCH_SAMPLES = "nv/batch/sample_size"
# an empty kernel through nvbench's launcher, its batch figure the floor: the prefix of each case's own (floor_name);
# alone, the one parameterless floor of an older wfbench's file
NVBENCH_FLOOR = "wfbench/launch-floor"
DEFAULT_TOLERANCE = 0.01  # per-kernel agreement target
BATCH_OVER_COLD = 1.10  # nvbench's hot batch figure this far over its cold one is its launcher's rate



@attrs.frozen
class NvbenchTimes:
    """One nvbench benchmark's figures, per launch, in microseconds (None where nvbench gave none)."""

    batch_mean_us: float | None = None
    cold_mean_us: float | None = None
    batch_samples: int | None = None
    cold_samples: int | None = None
    cold_median_us: float | None = None  # in cuda-bench's JSON; older nvbench gave the mean only

    @property
    def cold_us(self) -> float | None:
        """The cold figure a wfbench median is compared with: nvbench's cold median, else its mean."""
        return self.cold_median_us if self.cold_median_us is not None else self.cold_mean_us


@attrs.frozen
class KernelRow:
    case: str
    side: str  # "wf" | "cuda"
    wfbench_us: Mapping[str, float]  # timing mode -> wfbench median, us per launch
    nvbench: NvbenchTimes
    launch_floor_us: float | None = None  # an empty kernel, launched back to back by wfbench (events mode)
    nvbench_floor_us: float | None = None  # the same empty kernel through nvbench's launcher (its batch figure)
    # wfbench's medians taken before nvbench ran, in the same process (``wfbench_us`` are taken after it: the
    # two timers compared in the same state of the process; empty: not measured, as with --against)
    before_us: Mapping[str, float] = attrs.field(factory=dict)

    def moved(self, mode: str) -> float | None:
        """How much wfbench's own median in ``mode`` moved while nvbench ran (after / before - 1)."""
        a, b = self.wfbench_us.get(mode), self.before_us.get(mode)
        return None if a is None or not b else a / b - 1.0

    @property
    def nvbench_floor(self) -> float | None:
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

    def reference_us(self, mode: str) -> float | None:
        """nvbench's figure that measures what ``mode`` does: its cold figure for cold-l2, else its batch mean."""
        return self.nvbench.cold_us if mode == TIMING_COLD_L2 else self.nvbench.batch_mean_us

    def launch_bound(self, mode: str) -> bool:
        """In ``mode``, nvbench's matching figure is its launcher's rate (its cold figure never is)."""
        return mode != TIMING_COLD_L2 and self.nvbench_launch_bound

    def diff(self, mode: str = TIMING_EVENTS) -> float | None:
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
    nvbench_gap: float | None  # from nvbench's figures that match the mode (None: none, or launch-bound)
    mode: str = TIMING_EVENTS

    @property
    def diff(self) -> float | None:
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


def _summary_us(summaries: Mapping[str, Any], tag: str) -> float | None:
    v = summaries.get(tag)
    return None if v is None else float(v) * 1e6


def _summary_count(summaries: Mapping[str, Any], tag: str) -> int | None:
    v = summaries.get(tag)
    return None if v is None else int(v)


def bench_name(case_id: str, side: str) -> str:
    return f"{case_id}/{side}"


def floor_name(case_id: str) -> str:
    """nvbench's benchmark of a case's launch floor: the case's empty kernel (its parameter list) launched with
    each buffer set's arguments through the same launcher, as the case's kernels are."""
    return f"{NVBENCH_FLOOR}/{case_id}"


def compare(wfbench_us: Mapping[str, Mapping[str, Mapping[str, float]]], nvbench: Mapping[str, NvbenchTimes],
            floors: Mapping[str, float] = {}, before: Mapping[str, Mapping[str, Mapping[str, float]]] = {}
            ) -> tuple[list[KernelRow], list[GapRow]]:
    """``wfbench_us``: case -> side -> mode -> median us; ``nvbench``: benchmark name -> figures (with each case's
    :func:`floor_name`, nvbench's own launch floor for its arguments, where it was timed; a file of an older wfbench
    holds one parameterless :data:`NVBENCH_FLOOR` for all); ``floors``: case -> wfbench's launch floor in events
    mode (us), where measured; ``before``: wfbench's medians taken before nvbench ran, as ``wfbench_us`` (shown,
    not compared)."""
    kernels: list[KernelRow] = []
    gaps: list[GapRow] = []
    for case_id, sides in wfbench_us.items():
        nv_floor = nvbench.get(floor_name(case_id), nvbench.get(NVBENCH_FLOOR, NvbenchTimes())).batch_mean_us
        rows = {side: KernelRow(case_id, side, dict(by_mode), nvbench.get(bench_name(case_id, side), NvbenchTimes()),
                                floors.get(case_id), nv_floor, dict(before.get(case_id, {}).get(side, {})))
                for side, by_mode in sides.items()}
        kernels.extend(rows.values())
        if "wf" in rows and "cuda" in rows:
            wf, cu = rows["wf"], rows["cuda"]
            for mode in [m for m in sides["cuda"] if m in sides["wf"]]:
                a, b = wf.reference_us(mode), cu.reference_us(mode)
                launch_bound = wf.launch_bound(mode) or cu.launch_bound(mode)
                ratio = a / b if a is not None and b and not launch_bound else None
                gaps.append(GapRow(case_id, sides["wf"][mode] / sides["cuda"][mode], ratio, mode))
    return kernels, gaps


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.2%}"


def _us(x: float | None) -> str:
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
    before = [m for m in modes if any(m in k.before_us for k in kernels)]
    head = ["case", "side"] + [f"wfbench {m} us before" for m in before] + [f"wfbench {m} us" for m in modes] + \
        ["nvbench batch us", "nvbench cold us"] + [f"{m} vs nvbench {'cold' if m == TIMING_COLD_L2 else 'batch'}"
                                                   for m in modes]
    rows = [head]
    for k in kernels:
        rows.append([k.case, k.side] + [_us(k.before_us.get(m)) for m in before] +
                    [_us(k.wfbench_us.get(m)) for m in modes] + [_us(k.nvbench.batch_mean_us), _us(k.nvbench.cold_us)] +
                    [_agreement(k, m, tolerance) for m in modes])
    text = render_table(rows)
    if before:
        text += ("\n\nwfbench timed each kernel before and after nvbench, in the same process; the medians after are "
                 "the ones compared (both timers in the same state of the process)")
        moved = [f"{k.case}/{k.side} {m} {_us(k.before_us[m])} -> {_us(k.wfbench_us[m])} us ({_pct(d)})"
                 for k in kernels for m in before if (d := k.moved(m)) is not None and abs(d) > tolerance]
        if moved:
            text += ("; these kernels' own times moved while nvbench ran, by more than the tolerance, as wfbench "
                     "measured them: " + ", ".join(moved))
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


def worst_by_mode(kernels: Sequence[KernelRow]) -> dict[str, float | None]:
    """Each mode timed -> its worst per-kernel disagreement (None: no like figure to compare with)."""
    modes = list(dict.fromkeys(m for k in kernels for m in k.wfbench_us))
    return {m: max((abs(d) for k in kernels for d in (k.diff(m),) if d is not None), default=None) for m in modes}


def disagreements(kernels: Sequence[KernelRow], tolerance: float) -> list[str]:
    """"case/side mode +x.xx%" for every like figure beyond ``tolerance``."""
    return [f"{k.case}/{k.side} {m} {_pct(d)}" for k in kernels for m in k.wfbench_us for d in (k.diff(m),)
            if d is not None and abs(d) > tolerance and not math.isclose(abs(d), tolerance)]


def worst_disagreement(kernels: Iterable[KernelRow]) -> float | None:
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


def within(kernels: Sequence[KernelRow], tolerance: float) -> bool:
    return not disagreements(kernels, tolerance)
