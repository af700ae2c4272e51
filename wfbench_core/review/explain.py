"""Explain a gap: both sides' static diagnostics, SASS mix differences, hottest loops and (on a GPU host)
Nsight Compute metrics, side by side, as Markdown fit for a pull-request comment.

The WarpForth side may be one compiler's PTX or several (``base``/``head`` of a bundle); every WarpForth
variant is set against the same CUDA side, compiled here with the project's own compile path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from wfbench_core.case import Case
from wfbench_core.compiling import stack_tax
from wfbench_core.compiling.code_identity import identical
from wfbench_core.compiling.diagnostics import (
    Instr,
    Loop,
    assemble,
    code_of,
    hottest_loop,
    memory_order,
    mix_differences,
    summarize,
)
from wfbench_core.gpu.roofline import format_roofline, roofline
from wfbench_core.record.results import CaseResult, Environment, KernelProfile, SideDiagnostics
from wfbench_core.review import markdown as md

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CLASS_HELP", "LOOP_LINES", "WF_PREFIX", "ExplainedSide", "SideReport", "analyse", "findings", "head_vs_base",
    "profile_findings", "render_markdown", "side_profile_rows",
]

LOOP_LINES = 60

CLASS_HELP = {
    "ldg": "global loads (LDG), by width in bits", "stg": "global stores (STG)",
    "ld": "generic loads (LD: address space resolved at run time)", "st": "generic stores (ST)",
    "lds": "shared loads", "sts": "shared stores", "ldl": "local loads (spills, stack)", "stl": "local stores",
    "ldc": "constant loads (parameters)", "atom": "atomics and reductions", "dadd": "f64 add", "dmul": "f64 multiply",
    "dfma": "f64 fused multiply-add", "f64": "other f64 (compare, min/max)", "fp32": "f32 and f16 arithmetic",
    "imad": "integer multiply-add (also used for moves and shifts)", "imad.wide": "32x32->64-bit multiply-add",
    "ialu": "other integer ALU", "conv": "conversions", "branch": "branches", "control": "EXIT, convergence",
    "barrier": "barriers and fences", "uniform": "uniform datapath", "special": "special registers, votes, shuffles",
    "addr64": "tag: 64-bit integer arithmetic (wide multiply, carries into high words)",
    "predicated": "tag: predicated instructions", "ldg.nc": "tag: loads through the read-only cache",
}


@attrs.frozen
class ExplainedSide:
    """One side to explain: its label in the report, kernel name and PTX."""

    label: str  # "WarpForth", "WarpForth base", "CUDA"
    kernel: str
    ptx: str


@attrs.frozen
class SideReport:
    side: ExplainedSide
    diag: SideDiagnostics
    loop: Loop | None
    profile: KernelProfile | None = None
    sass: tuple[Instr, ...] = ()


def analyse(case: Case, sides: Sequence[ExplainedSide], arch: str) -> list[SideReport]:
    """Static diagnostics of every side for ``arch`` at the case's canonical launch (no GPU)."""
    launch = case.launch(case.sizes["canonical"])
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    out = []
    for s in sides:
        a = assemble(s.ptx, s.kernel, arch, what=f"{case.key('canonical')} {s.label}")
        out.append(SideReport(s, summarize(a, s.kernel, arch, threads, launch.shared_bytes), hottest_loop(a.sass),
                              sass=a.sass))
    return out


# -------------------------------------------------------------------------------------------------
# Findings: what a compiler developer should look at first
# -------------------------------------------------------------------------------------------------


def _sum(mix: Mapping[str, int], prefix: str) -> int:
    return sum(v for k, v in mix.items() if k == prefix or k.startswith(prefix + "."))


def findings(wf: SideDiagnostics, cuda: SideDiagnostics, wf_label: str = "WarpForth",
             wf_profile: KernelProfile | None = None, cuda_profile: KernelProfile | None = None) -> list[str]:
    """Plain sentences about the differences that usually matter, most important first (the runtime-stack
    tax of each side, with its local traffic when profiled, first)."""
    out: list[str] = []
    if identical(wf, cuda):
        return [f"{wf_label} and CUDA assemble to identical code (SASS and resources): any timing difference is "
                f"noise."]
    for side, d, p in ((wf_label, wf, wf_profile), ("CUDA", cuda, cuda_profile)):
        said = stack_tax.sentence(side, stack_tax.tax_of(d, p))
        out += [said] if said else []
    if abs(wf.occupancy - cuda.occupancy) > 1e-9:
        out.append(f"Theoretical occupancy differs: {wf_label} {wf.occupancy:.0%} (limited by {wf.occupancy_limiter}), "
                   f"CUDA {cuda.occupancy:.0%} (limited by {cuda.occupancy_limiter}).")
    generic = (_sum(wf.mix, "ld") + _sum(wf.mix, "st"), _sum(cuda.mix, "ld") + _sum(cuda.mix, "st"))
    if generic[0] != generic[1]:
        out.append(f"Generic loads/stores (LD/ST, address space resolved at run time): {wf_label} {generic[0]}, "
                   f"CUDA {generic[1]}. Generic accesses cannot use the read-only cache and ptxas may not move a "
                   f"generic load across a shared-memory store (it could alias), which changes how many loads a "
                   f"thread keeps in flight.")
    nc = (wf.mix.get("ldg.nc", 0), cuda.mix.get("ldg.nc", 0))
    if nc[0] != nc[1]:
        out.append(f"Loads through the read-only cache (LDG.CONSTANT): {wf_label} {nc[0]}, CUDA {nc[1]}.")
    if wf.loop_instructions and cuda.loop_instructions:
        out.append(f"Innermost loop: {wf_label} {wf.loop_instructions} instructions, CUDA {cuda.loop_instructions} "
                   f"(compare the work per iteration: CUDA may unroll).")
    elif bool(wf.loop_instructions) != bool(cuda.loop_instructions):
        which = wf_label if wf.loop_instructions else "CUDA"
        out.append(f"Only {which} has a loop in its SASS; the other side's loops are fully unrolled or absent.")
    ratio = wf.total / cuda.total if cuda.total else 0.0
    if ratio and abs(ratio - 1) > 0.1:
        out.append(f"SASS size: {wf_label} {wf.total} instructions, CUDA {cuda.total} ({ratio:.2f}x).")
    int_ops = (_sum(wf.mix, "imad") + _sum(wf.mix, "ialu"), _sum(cuda.mix, "imad") + _sum(cuda.mix, "ialu"))
    if wf.loop_mix and cuda.loop_mix:
        li = (_sum(wf.loop_mix, "imad") + _sum(wf.loop_mix, "ialu"), _sum(cuda.loop_mix, "imad") + _sum(cuda.loop_mix, "ialu"))
        lf = (_fp(wf.loop_mix), _fp(cuda.loop_mix))
        if lf[0] and lf[1]:
            out.append(f"Integer instructions per floating-point instruction in the innermost loop: {wf_label} "
                       f"{li[0] / lf[0]:.2f}, CUDA {li[1] / lf[1]:.2f} (address arithmetic and loop control).")
    elif abs(int_ops[0] - int_ops[1]) > 0.1 * max(int_ops):
        out.append(f"Integer instructions (address arithmetic, loop control): {wf_label} {int_ops[0]}, CUDA {int_ops[1]}.")
    return out


def _fp(mix: Mapping[str, int]) -> int:
    return sum(mix.get(k, 0) for k in ("dadd", "dmul", "dfma", "f64", "fp32"))


def profile_findings(wf: KernelProfile, cuda: KernelProfile, wf_label: str = "WarpForth") -> list[str]:
    from wfbench_core.gpu.profile import top_stalls

    out = [f"Nsight Compute duration: {wf_label} {wf.duration_us:.2f} us, CUDA {cuda.duration_us:.2f} us "
           f"({wf.duration_us / cuda.duration_us:.3f}x)." if cuda.duration_us else ""]
    for name, a, b in (("DRAM throughput", wf.dram_pct, cuda.dram_pct), ("L2 throughput", wf.l2_pct, cuda.l2_pct),
                       ("achieved occupancy", wf.achieved_occupancy_pct, cuda.achieved_occupancy_pct)):
        if a is not None and b is not None:
            out.append(f"{name}: {wf_label} {a:.1f}% of peak, CUDA {b:.1f}%.")
    for label, p in ((wf_label, wf), ("CUDA", cuda)):
        top = top_stalls(p, 2)
        if top:
            out.append(f"{label} warps mostly wait on " + " and ".join(f"{k} ({v:.0%})" for k, v in top) + ".")
    return [x for x in out if x]


# -------------------------------------------------------------------------------------------------
# Markdown
# -------------------------------------------------------------------------------------------------


def _static_rows(reports: Sequence[SideReport]) -> list[list[str]]:
    rows = [["", *[r.side.label for r in reports]]]

    def row(name: str, fn: Callable[[SideDiagnostics], str]) -> None:
        rows.append([name, *[fn(r.diag) for r in reports]])

    row("registers / thread", lambda d: str(d.registers))
    row("spill stores / loads (B)", lambda d: f"{d.spill_stores} / {d.spill_loads}")
    row("stack frame (B)", lambda d: str(d.stack_frame))
    taxes = [stack_tax.tax_of(r.diag, r.profile) for r in reports]
    rows += [[name, *cells] for name, *cells in stack_tax.rows(taxes)]
    row("shared static + dynamic (B)", lambda d: f"{d.shared_static} + {d.shared_dynamic}")
    row("constant (B)", lambda d: str(d.constant_bytes))
    row("theoretical occupancy", lambda d: f"{d.occupancy:.0%} ({d.blocks_per_sm} blocks/SM, {d.occupancy_limiter})")
    row("SASS instructions", lambda d: str(d.total))
    row("innermost loop (instructions)", lambda d: str(d.loop_instructions) if d.loop_instructions else "none")
    row("SASS SHA-256", lambda d: f"`{d.sass_sha256[:12]}`")
    return rows


def side_profile_rows(columns: Sequence[tuple[str, KernelProfile | None]]) -> list[list[str]]:
    """The Nsight Compute table's rows: a column per ``(label, profile)`` ("-" where not profiled)."""
    from wfbench_core.gpu.profile import top_stalls

    rows = [["Nsight Compute", *[label for label, _ in columns]]]

    def f(x: float | None, spec: str = ".1f", suffix: str = "") -> str:
        return "-" if x is None else format(x, spec) + suffix

    def row(name: str, fn: Callable[[KernelProfile], str]) -> None:
        rows.append([name, *[fn(p) if p else "-" for _, p in columns]])

    row("duration (us)", lambda p: f(p.duration_us, ".2f"))
    row("DRAM throughput", lambda p: f(p.dram_pct, ".1f", "%"))
    row("L2 throughput", lambda p: f(p.l2_pct, ".1f", "%"))
    row("L1/TEX throughput", lambda p: f(p.l1_pct, ".1f", "%"))
    row("SM throughput", lambda p: f(p.sm_pct, ".1f", "%"))
    row("achieved / theoretical occupancy",
        lambda p: f"{f(p.achieved_occupancy_pct, '.1f', '%')} / {f(p.theoretical_occupancy_pct, '.0f', '%')}")
    row("warp instructions executed", lambda p: "-" if p.instructions is None else f"{p.instructions:,}")
    row("DRAM bytes", lambda p: "-" if p.dram_bytes is None else f"{p.dram_bytes:,}")
    row("local bytes, loaded / stored", lambda p: "-" if p.local_load_bytes is None or p.local_store_bytes is None
        else f"{p.local_load_bytes:,} / {p.local_store_bytes:,}")
    row("top stall reasons", lambda p: ", ".join(f"{k} {v:.0%}" for k, v in top_stalls(p, 3)) or "-")
    return rows


def _loop_block(r: SideReport, max_lines: int) -> list[str]:
    if r.loop is None:
        return [f"**{r.side.label}**: no loop in the SASS (straight-line code; loops fully unrolled)."]
    body = code_of(r.loop.instrs)
    lines = [f"**{r.side.label}**: innermost loop at 0x{r.loop.start:04x}-0x{r.loop.end:04x}, {len(body)} instructions"
             + (f" (first {max_lines} shown)" if len(body) > max_lines else ""), "", "```"]
    lines += [f"/*{i.address:04x}*/ {i.text}" for i in body[:max_lines]]
    return lines + ["```"]


WF_PREFIX = "WarpForth "


def head_vs_base(wf_reports: Sequence[SideReport], context: int = 3) -> list[str]:
    """The head-against-base section of two WarpForth variants (labels "WarpForth base", "WarpForth head")."""
    from wfbench_core.review.headbase import Variant, pick, render

    by = {r.side.label.removeprefix(WF_PREFIX): r for r in wf_reports}
    b, h = pick(list(by))
    return render(*(Variant(k, by[k].diag, by[k].sass, by[k].profile) for k in (b, h)), context=context)


def _timed(result: CaseResult | None, environment: Environment | None) -> list[str]:
    if result is None or result.timing is None:
        return []
    t = result.timing
    roof = (f"; roofline (WarpForth/CUDA) {format_roofline(roofline(result, environment), result.metric)}"
            if environment is not None else "")
    return ["", f"Timed: WarpForth {t.warpforth.median_us:.2f} us, CUDA {t.cuda.median_us:.2f} us, "
                f"gap {t.gap:.3f}x{roof}."]


def _mix_section(wf_reports: Sequence[SideReport], cuda: SideReport) -> list[str]:
    lines = ["", "#### SASS mix: largest differences", ""]
    for r in wf_reports:
        diffs = mix_differences(r.diag.mix, cuda.diag.mix, 10)
        if not diffs:
            lines.append(f"{r.side.label} and CUDA have the same instruction mix.")
            continue
        rows = [["class", r.side.label, "CUDA", "what"]]
        rows += [[f"`{k}`", str(x), str(y), CLASS_HELP.get(k.split(".")[0] if k not in CLASS_HELP else k, "")]
                 for k, x, y in diffs]
        lines += md.table(rows)
        lines.append("")
    return lines


def render_markdown(case: Case, reports: Sequence[SideReport], *, arch: str, provenance: Sequence[str] = (),
                    result: CaseResult | None = None, environment: Environment | None = None,
                    loop_lines: int = LOOP_LINES) -> str:
    """The report. ``reports`` lists the WarpForth variants first and the CUDA side last; with two variants
    (a base/head bundle) it leads with head against base, and the CUDA-relative sections follow."""
    launch = case.launch(case.sizes["canonical"])
    cuda = reports[-1]
    wf_reports = list(reports[:-1])
    what = "head against base, then against CUDA" if len(wf_reports) > 1 else "WarpForth vs CUDA"
    lines = [f"### {case.id} v{case.version}: {what} on {arch}", ""]
    lines.append(f"Canonical launch: grid {launch.grid} x block {launch.block}, {launch.shared_bytes} B dynamic "
                 f"shared memory; SASS from ptxas {cuda.diag.ptxas_version or '?'} (`-arch={arch}`) and cuobjdump.")
    lines += [f"{p}" for p in provenance]
    if len(wf_reports) > 1:
        lines += [""] + head_vs_base(wf_reports)
    lines += _timed(result, environment)
    lines += ["", "#### Findings" + (" against CUDA" if len(wf_reports) > 1 else ""), ""]
    for r in wf_reports:
        for sentence in findings(r.diag, cuda.diag, r.side.label, r.profile, cuda.profile):
            lines.append(f"- {sentence}")
        if r.profile and cuda.profile:
            for sentence in profile_findings(r.profile, cuda.profile, r.side.label):
                lines.append(f"- {sentence}")
    lines += ["", "#### Static diagnostics", ""] + md.table(_static_rows(reports), "r")
    lines += _mix_section(wf_reports, cuda)
    if any(r.profile for r in reports):
        lines += ["", "#### Nsight Compute (one launch at the canonical size)", ""]
        lines += md.table(side_profile_rows([(r.side.label, r.profile) for r in reports]), "r")
    lines += ["", "#### Memory instructions in program order", ""]
    for r in reports:
        order = memory_order(r.sass)
        shown = " ".join(order[:48]) + (f" ... (+{len(order) - 48})" if len(order) > 48 else "")
        lines.append(f"- **{r.side.label}**: `{shown or 'none'}`")
    lines += ["", "#### Hottest loop in SASS (innermost loop)", ""]
    for r in reports:
        lines += _loop_block(r, loop_lines) + [""]
    return "\n".join(lines).rstrip() + "\n"
