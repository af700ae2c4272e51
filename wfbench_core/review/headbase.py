"""Head against base, in Markdown: what a WarpForth change did to one kernel's machine code.

This is the first thing ``wfbench explain CASE --bundle BASEHEAD`` and the pull-request comment show: the
instructions added, removed and changed (aligned SASS, :mod:`wfbench_core.review.sassdiff`) with where each sits,
the resource deltas (registers, spills and stack, shared memory, occupancy), which loop changed with its body
side by side, and with profiles the Nsight Compute metric deltas. Identical SASS is one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from wfbench_core.compiling import stack_tax
from wfbench_core.compiling.code_identity import IDENTICAL_NOTE, identical
from wfbench_core.compiling.diagnostics import Instr, Loop, assemble, summarize
from wfbench_core.record.results import KernelProfile, SideDiagnostics
from wfbench_core.review import markdown as md
from wfbench_core.review.sassdiff import (
    ADDED,
    CHANGED,
    MOVED,
    REMOVED,
    RENAMED,
    LoopPair,
    Placed,
    Row,
    SassDiff,
    diff,
    where,
)

if TYPE_CHECKING:
    from wfbench_core.case import Case

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "LOOP_ROWS", "MAX_LISTED", "Variant", "bundle_ptx", "explain_bundle", "pick", "profile_rows", "render",
    "resource_rows", "variant",
]

MAX_LISTED = 12  # changed instructions named one by one; the regions below show every one
LOOP_ROWS = 60  # rows of a changed loop shown side by side


@attrs.frozen
class Variant:
    """One compiler's build of a kernel, as :func:`render` reads it."""

    label: str  # "base", "head"
    diag: SideDiagnostics
    sass: tuple[Instr, ...]
    profile: KernelProfile | None = None


def pick(labels: Sequence[str]) -> tuple[str, str]:
    """Which two labels are base and head: ``base`` and ``head`` when present, else the first two."""
    if "base" in labels and "head" in labels:
        return "base", "head"
    if len(labels) < 2:
        raise ValueError("head against base needs two compilers")
    return labels[0], labels[1]


# -------------------------------------------------------------------------------------------------
# deltas


def _signed(x: float, spec: str = "d") -> str:
    return "=" if x == 0 else format(x, "+" + spec)


def resource_rows(base: SideDiagnostics, head: SideDiagnostics) -> list[list[str]]:
    """Registers, local memory (spills, stack), shared memory, occupancy and size: base, head, change."""
    rows = [["", "base", "head", "change"]]

    def count(name: str, a: int, b: int) -> None:
        rows.append([name, str(a), str(b), _signed(b - a)])

    count("registers / thread", base.registers, head.registers)
    count("spill stores (B)", base.spill_stores, head.spill_stores)
    count("spill loads (B)", base.spill_loads, head.spill_loads)
    count("stack frame (B, local memory)", base.stack_frame, head.stack_frame)
    rows += stack_tax.delta_rows(stack_tax.tax_of(base), stack_tax.tax_of(head))
    count("shared memory, static + dynamic (B)", base.shared_static + base.shared_dynamic,
          head.shared_static + head.shared_dynamic)
    rows.append(["theoretical occupancy", f"{base.occupancy:.0%} ({base.occupancy_limiter})",
                 f"{head.occupancy:.0%} ({head.occupancy_limiter})",
                 _signed(round((head.occupancy - base.occupancy) * 100), "d") + (" pp" if head.occupancy !=
                                                                                base.occupancy else "")])
    count("blocks / SM", base.blocks_per_sm, head.blocks_per_sm)
    count("SASS instructions", base.total, head.total)
    count("innermost loop (instructions)", base.loop_instructions, head.loop_instructions)
    return rows


def _pct_points(a: float | None, b: float | None) -> list[str]:
    if a is None or b is None:
        return ["-" if a is None else f"{a:.1f}%", "-" if b is None else f"{b:.1f}%", "-"]
    return [f"{a:.1f}%", f"{b:.1f}%", f"{b - a:+.1f} pp"]


def _relative(a: float | None, b: float | None, spec: str) -> list[str]:
    if a is None or b is None:
        return ["-" if a is None else format(a, spec), "-" if b is None else format(b, spec), "-"]
    change = f"{(b / a - 1) * 100:+.2f}%" if a else "-"
    return [format(a, spec), format(b, spec), change]


def profile_rows(base: KernelProfile, head: KernelProfile, stalls: int = 4) -> list[list[str]]:
    """Nsight Compute metrics of base and head and their change (relative, or percentage points)."""
    rows = [["Nsight Compute", "base", "head", "change"]]
    rows.append(["duration (us)", *_relative(base.duration_us, head.duration_us, ".2f")])
    for name, field in (("DRAM throughput", "dram_pct"), ("L2 throughput", "l2_pct"), ("L1/TEX throughput", "l1_pct"),
                        ("SM throughput", "sm_pct"), ("achieved occupancy", "achieved_occupancy_pct")):
        rows.append([name, *_pct_points(getattr(base, field), getattr(head, field))])
    rows.append(["warp instructions executed", *_relative(base.instructions, head.instructions, ",")])
    rows.append(["DRAM bytes", *_relative(base.dram_bytes, head.dram_bytes, ",")])
    for name, field in (("local bytes loaded", "local_load_bytes"), ("local bytes stored", "local_store_bytes")):
        a, b = getattr(base, field), getattr(head, field)
        if a is not None or b is not None:
            rows.append([name, *_relative(a, b, ",")])
    reasons = sorted(set(base.stalls) | set(head.stalls),
                     key=lambda k: -max(base.stalls.get(k, 0.0), head.stalls.get(k, 0.0)))[:stalls]
    for k in reasons:
        a, b = base.stalls.get(k, 0.0), head.stalls.get(k, 0.0)
        rows.append([f"stall: {k} (warps per issue)", f"{a:.3f}", f"{b:.3f}", f"{b - a:+.3f}"])
    return rows


# -------------------------------------------------------------------------------------------------
# rendering


def _addr(i: Instr | None) -> str:
    return f"0x{i.address:04x}" if i is not None else "-"


def _sentence(p: Placed, base: str, head: str) -> str:
    r = p.row
    side = base if r.kind == REMOVED else head
    what = {ADDED: f"Added {md.code(r.head.text)}" if r.head else "",
            REMOVED: f"Removed {md.code(r.base.text)}" if r.base else "",
            CHANGED: f"Changed {md.code(r.base.text if r.base else '')} to {md.code(r.head.text if r.head else '')}",
            MOVED: f"Moved {md.code(r.head.text if r.head else '')} (was at {base} {_addr(r.base)})"}
    instr = r.base if r.kind == REMOVED else r.head
    around = []
    if p.after is not None:
        around.append(f"after {md.code(p.after.text)}")
    if p.before is not None:
        around.append(f"before {md.code(p.before.text)}")
    return (f"{what[r.kind]} {'to' if r.kind == MOVED else 'at'} {side} {_addr(instr)} (instruction {p.index} of {p.of}), {p.where}"
            + (f"; {', '.join(around)}" if around else "") + ".")


def _diff_line(r: Row) -> list[str]:
    base = f"/*{r.base.address:04x}*/ {r.base.text}" if r.base is not None else ""
    head = f"/*{r.head.address:04x}*/ {r.head.text}" if r.head is not None else ""
    if r.kind in (CHANGED, MOVED):
        return [f"- {base}", f"+ {head}"]
    if r.kind == REMOVED:
        return [f"- {base}"]
    if r.kind == ADDED:
        return [f"+ {head}"]
    return [f"  {head}"]


def _hunk_title(rows: Sequence[Row], d: SassDiff, base: str, head: str) -> str:
    first = next(r for r in rows if r.changed)
    if first.head is not None:
        return f"head 0x{first.head.address:04x}, {where(first.head.address, d.head)}"
    assert first.base is not None
    return f"{base} 0x{first.base.address:04x}, {where(first.base.address, d.base)}"


def _counts(count: Callable[[str], int]) -> str:
    n = count(ADDED)
    return (f"{n} instruction{'s' * (n != 1)} added, {count(REMOVED)} removed, {count(CHANGED)} changed, "
            f"{count(MOVED)} moved")


def _span(lp: Loop | None) -> str:
    return f"0x{lp.start:04x}-0x{lp.end:04x}" if lp is not None else "none"


def _loop_title(p: LoopPair) -> str:
    return f"loop at base {_span(p.base)} / head {_span(p.head)}"


def _loop_lines(d: SassDiff, base: str, head: str, rows_shown: int) -> list[str]:
    if not d.loops:
        return ["Neither kernel has a loop."]
    changed = [p for p in d.loops if p.changed]
    lines = []
    for p in d.loops:
        if not p.changed:
            n = len(p.head.instrs) if p.head else 0
            lines.append(f"- {_loop_title(p)}: unchanged ({n} instructions).")
        elif p.base is None or p.head is None:
            lines.append(f"- {_loop_title(p)}: only in {head if p.base is None else base}.")
        else:
            lines.append(f"- {_loop_title(p)}: **changed**, {_counts(p.count)}.")
    if not changed:
        lines.append("")
        lines.append("No loop changed: every change is outside the loops.")
    for p in changed:
        table = [[f"{base} {_span(p.base)}", f"{head} {_span(p.head)}", ""]]
        for r in p.rows[:rows_shown]:
            mark = {ADDED: "added", REMOVED: "removed", CHANGED: "changed", MOVED: "moved"}.get(r.kind, "")
            table.append([md.cell(f"`{_addr(r.base)} {r.base.text}`") if r.base else "",
                          md.cell(f"`{_addr(r.head)} {r.head.text}`") if r.head else "", mark])
        lines += ["", f"{_loop_title(p).capitalize()}, side by side"
                  + (f" (first {rows_shown} of {len(p.rows)} rows)" if len(p.rows) > rows_shown else "") + ":", ""]
        lines += md.table(table)
    return lines


def render(base: Variant, head: Variant, *, context: int = 3, loop_rows: int = LOOP_ROWS,
           title: str | None = "#### Head against base") -> list[str]:
    """The head-against-base section (under ``title`` unless None): one line when the SASS is identical."""
    names = f"{base.label} and {head.label}"
    if identical(base.diag, head.diag):
        return [f"{names}: {IDENTICAL_NOTE} (SASS SHA-256 `{base.diag.sass_sha256[:12]}`)."]
    d = diff(base.sass, head.sass)
    lines = ([title, ""] if title else []) + [f"{base.label} → {head.label}: {_counts(lambda k: len(d.of(k)))} "
             f"({len(d.base)} → {len(d.head)} instructions)"
             + (f"; {len(d.of(RENAMED))} more differ only in register numbers or branch targets" if d.of(RENAMED) else "") + ".", ""]
    tax = stack_tax.change(stack_tax.tax_of(base.diag, base.profile), stack_tax.tax_of(head.diag, head.profile))
    lines += [f"Runtime stack: {tax}.", ""] if tax else []
    placed = d.placed()
    lines += md.bullets(_sentence(p, base.label, head.label) for p in placed[:MAX_LISTED])
    if len(placed) > MAX_LISTED:
        lines.append(f"- ... and {len(placed) - MAX_LISTED} more (every one is in the regions below).")
    if not placed:
        lines.append("- No instruction was added, removed or changed: only register numbers and branch targets "
                     "differ (ptxas allocated registers differently).")
    lines += ["", "Resources:", ""] + md.table(resource_rows(base.diag, head.diag), "r")
    lines += ["", "Loops:", ""] + _loop_lines(d, base.label, head.label, loop_rows)
    if base.profile is not None and head.profile is not None:
        lines += ["", "Nsight Compute, one launch at the canonical size:", ""]
        lines += md.table(profile_rows(base.profile, head.profile), "r")
    hunks = d.hunks(context)
    if hunks:
        lines += ["", f"Changed regions ({len(hunks)}), with {context} instructions of context:", ""]
        for rows in hunks:
            lines.append(f"{_hunk_title(rows, d, base.label, head.label)}:")
            lines += md.code_block([x for r in rows for x in _diff_line(r)], "diff") + [""]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# -------------------------------------------------------------------------------------------------
# from a base/head bundle (no CUDA side needed)


def variant(case: Case, label: str, ptx: str, arch: str) -> Variant:
    """Assemble one compiler's PTX of ``case`` for ``arch`` at the canonical launch."""
    launch = case.launch(case.sizes["canonical"])
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    a = assemble(ptx, case.wf_kernel, arch, what=f"{case.id} ({label})")
    return Variant(label, summarize(a, case.wf_kernel, arch, threads, launch.shared_bytes), a.sass)


def bundle_ptx(case: Case, bundle: Path) -> dict[str, str]:
    """``{label: canonical WarpForth PTX}`` of ``case`` in a bundle (one entry "" for a plain bundle)."""
    from wfbench_core.compiling.bundle import load_case_files, read_variants
    from wfbench_core.errors import WfbenchError

    out = {}
    for label, (manifest, folder) in read_variants(bundle).items():
        entry = next((e for e in manifest.cases if e.id == case.id), None)
        if entry is None:
            why = manifest.failures.get(case.id)
            raise WfbenchError(f"case {case.id!r} is not in bundle {folder}"
                               + (f" ({why})" if why else f"; build it with 'wfbench build -c {case.id}'"))
        out[label] = load_case_files(folder, entry, case)["canonical"].wf_ptx
    return out


def explain_bundle(case: Case, bundle: Path, arch: str, *, context: int = 3, title: str | None = None,
                   progress: Callable[[str], None] = lambda msg: None) -> list[str]:
    """The head-against-base section of ``case`` from a base/head bundle (ptxas and cuobjdump, no GPU)."""
    from wfbench_core.errors import WfbenchError

    ptx = bundle_ptx(case, bundle)
    if len(ptx) < 2:
        raise WfbenchError(f"{bundle}: not a base/head bundle (one compiler); build it with "
                           f"--warpforthc base=PATH --warpforthc head=PATH")
    b, h = pick(list(ptx))
    progress(f"assembling {case.id} ({b}, {h}) for {arch}")
    return render(variant(case, b, ptx[b], arch), variant(case, h, ptx[h], arch), context=context, title=title)
