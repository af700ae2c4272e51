"""Human-readable views of a result: the terminal table and its footer."""

from __future__ import annotations

from wfbench_core.record.results import CaseResult, RunResult
from wfbench_core.review.table import render_table  # also the table of the run's report

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["base_head_notes", "footer", "layout_notes", "nvml_notes", "render", "render_table", "table_rows"]


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _name(c: CaseResult) -> str:
    return c.id + (f" [{c.compiler_label}]" if c.compiler_label else "") + (" (A/A)" if c.mode == "aa" else "")


def table_rows(result: RunResult) -> list[list[str]]:
    from wfbench_core.compiling.diagnostics import compact
    from wfbench_core.gpu.roofline import format_roofline, roofline
    from wfbench_core.stats import spread

    rows = [["case", "WF us", "CUDA us", "gap", "noise", "WF GB/s|GF/s", "CUDA GB/s|GF/s", "roofline wf/cu",
             "static wf/cu", "status"]]
    for c in result.cases:
        t = c.timing
        regs = f"regs {c.attrs_wf.registers}/{c.attrs_cuda.registers}" if c.attrs_wf and c.attrs_cuda else "-"
        if c.attrs_wf and c.attrs_wf.local_bytes:
            regs += f" (wf local {c.attrs_wf.local_bytes} B)"
        static = compact(c.diag_wf, c.diag_cuda, profiles=(c.profile_wf, c.profile_cuda)) \
            if c.diag_wf and c.diag_cuda else regs
        if t is None:
            rows.append([_name(c), "-", "-", "-", "-", "-", "-", "-", static, c.status.upper()])
            continue
        if c.metric == "compute":
            wf_rate, cu_rate = _fmt(t.gflops_wf, ".1f") + " GF", _fmt(t.gflops_cuda, ".1f") + " GF"
        else:
            wf_rate, cu_rate = _fmt(t.gbps_wf, ".0f") + " GB", _fmt(t.gbps_cuda, ".0f") + " GB"
        rows.append([
            _name(c),
            f"{t.warpforth.median_us:.2f}",
            f"{t.cuda.median_us:.2f}",
            f"{t.gap:.3f}x" + (f" (spread {spread(t.repeat_gaps):.2%} over {len(t.repeat_gaps)})"
                                if t.repeat_gaps else ""),
            f"{max(t.warpforth.noise, t.cuda.noise):.2%}",
            wf_rate,
            cu_rate,
            format_roofline(roofline(c, result.environment), c.metric),
            static,
            c.status.upper() + (" LAUNCH-BOUND" if t.launch_bound else ""),
        ])
    return rows


def footer(result: RunResult) -> str:
    e = result.environment
    parts = [f"{e.gpu_name} ({e.compute_capability}, {e.sm_count} SMs), driver {e.driver_version}"]
    if e.copy_gbps:
        parts.append(f"d2d copy {e.copy_gbps:.0f} GB/s")
    if e.fp64_peak_gflops:
        parts.append(f"f64 add/mul peak {e.fp64_peak_gflops:.0f} GFLOP/s")
    if result.compilers:
        parts.append(", ".join(f"warpforthc {k}: {v.version}" for k, v in result.compilers.items()))
    else:
        parts.append(f"warpforthc {result.warpforthc.version}")
    parts.append(f"{result.cuda_compiler.kind} {result.cuda_compiler.version} {' '.join(result.cuda_compiler.flags)}")
    parts.append(f"wall {result.wall_s:.1f} s")
    return "; ".join(parts)


def base_head_notes(result: RunResult) -> list[str]:
    """For a base/head run: per case, the verdict on each head against the base (``wfbench compare``'s rule),
    the change of the gap with its interval, and what the two builds' code says."""
    from wfbench_core.review.compare import compare_labels, labels_of
    from wfbench_core.review.compare_table import pct, verdict_cell

    labels = labels_of(result)
    if len(labels) < 2:
        return []
    base = "base" if "base" in labels else labels[0]
    notes = []
    for head in (lb for lb in labels if lb != base):
        for c in compare_labels(result, base, head).cases:
            what = f"{verdict_cell(c)}, gap {pct(c.gap)}" if c.compared and c.gap else f"not compared: {c.reason}"
            sass = f"; {c.sass}" + (f" {c.case_id}" if c.sass.endswith("wfbench explain") else "") if c.sass else ""
            notes.append(f"  {c.case_id} ({base} vs {head}): {what}{sass}")
    return notes


def render(result: RunResult, *, ceiling: bool = False) -> str:
    """The table (with the library ceiling's columns only when asked: ``--ceiling``), footer and notes."""
    rows = table_rows(result)
    if ceiling:
        rows = ceiling_columns(result, rows)
    text = render_table(rows) + "\n" + footer(result)
    notes = base_head_notes(result)
    if notes:
        text += "\n" + "\n".join(notes)
    problems = [c for c in result.cases if c.message]
    if problems:
        text += "\n" + "\n".join(f"  {c.id}: {c.message}" for c in problems)
    text += ceiling_notes(result)
    text += nvml_notes(result)
    text += layout_notes(result)
    return text


def layout_notes(result: RunResult) -> str:
    """One line per case whose kernels keep local memory: the stack sizes its placements laid it out at
    (``timing.stack_bytes``) and what was left between placements, the spread its interval carries; "" when
    there are none."""
    lines = []
    for c in result.cases:
        t = c.timing
        if t is None or not t.stack_bytes:
            continue
        sizes = sorted(set(t.stack_bytes))
        lines.append(f"  {c.id}: local memory laid out anew per placement, at {len(sizes)} stack sizes "
                     f"({sizes[0]}-{sizes[-1]} B per thread); between placements {t.between_placement_noise:.2%}")
    return "".join("\n" + line for line in lines)


def ceiling_columns(result: RunResult, rows: list[list[str]]) -> list[list[str]]:
    """The table with two columns before the status: the ceiling's time and ``WarpForth time / ceiling time``."""
    from wfbench_core.ceiling import RATIO_NAME

    out = [rows[0][:-1] + ["ceiling us", RATIO_NAME, rows[0][-1]]]
    for c, row in zip(result.cases, rows[1:]):
        k = c.ceiling
        us = f"{k.stats.median_us:.2f}" if k is not None and k.stats is not None else "-"
        ratio = f"{k.ratio:.2f}x" if k is not None and k.ratio is not None else (k.status.upper() if k else "none")
        out.append(row[:-1] + [us, ratio, row[-1]])
    return out


def ceiling_notes(result: RunResult) -> str:
    """One line per case whose ceiling was not kept (library missing, FAILED its check, error, implausible), and
    one per ceiling timed with events in a graph-mode run; "" when there are none. The case's own line stands."""
    lines = []
    for c in result.cases:
        k = c.ceiling
        if k is None:
            continue
        if not k.timed:
            lines.append(f"  {c.id}: ceiling {k.status.upper()}: {k.message}")
        elif k.capture_note:
            lines.append(f"  {c.id}: ceiling {k.capture_note}")
    return "".join("\n" + line for line in lines)


def nvml_notes(result: RunResult) -> str:
    """Lines for throttled cases (whether the throttle rule leaves them out of trends), the run's throttle line
    (pairs re-taken under the clock floor, cases left out of trends) and a depressed host; "" when there are
    none."""
    from wfbench_core.gpu.nvml import describe
    from wfbench_core.gpu.sampling import CLOCK_FLOOR
    from wfbench_core.review.throttle import judge_throttle

    lines, left_out = [], []
    timed = [(c.id, c.timing) for c in result.cases if c.timing is not None]
    for case_id, t in timed:
        if t.throttled:
            call = judge_throttle(t)
            retaken = f", {t.clock_retakes} pairs re-taken" if t.clock_retakes else ""
            lines.append(f"  {case_id}: throttled while timed ({describe(t.nvml)}{retaken}): {call.why}; "
                         f"{'left out of trends' if call.leaves_trends else 'kept in trends'}")
            if call.leaves_trends:
                left_out.append(case_id)
    retakes = sum(t.clock_retakes for _, t in timed)
    floor = (f"whose sides' clocks differed (one under {CLOCK_FLOOR:.1%} of the other's)"
             if any(t.pair_side_mhz for _, t in timed) else f"under the clock floor ({CLOCK_FLOOR:.1%} of a case's "
                                                            f"top SM clock)")
    if retakes or left_out:
        lines.append(f"throttle: {retakes} pairs re-taken {floor} in "
                     f"{sum(1 for _, t in timed if t.clock_retakes)} of {len(timed)} cases; "
                     f"{len(left_out)} left out of trends" + (f" ({', '.join(left_out)})" if left_out else ""))
    if result.environment.depressed_host:
        lines.append(f"depressed host: {result.environment.depressed_why}; this run's deltas are not trusted")
    return "".join("\n" + line for line in lines)
