"""How a comparison reads: the change with its interval, the verdict cell, the table, its footer and title, as
plain text (``wfbench compare``) and as Markdown (the PR comment, bisect's report)."""

from __future__ import annotations

import math

from wfbench_core.review import pairing, verdicts
from wfbench_core.review.compare import CaseComparison, Change, RunComparison

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "HEADER", "pct", "render_markdown", "render_text", "summary", "verdict_cell",
]

# --------------------------------------------------------------------------------------------------------
# rendering


def pct(c: Change) -> str:
    if c.shared:
        return "shared"
    if math.isnan(c.ci_low):
        return f"{c.percent:+.2f}%"
    return f"{c.percent:+.2f}% [{(c.ci_low - 1) * 100:+.2f}, {(c.ci_high - 1) * 100:+.2f}]"


def verdict_cell(c: CaseComparison, bold: bool = False) -> str:
    if c.broken:
        word = verdicts.BROKEN_WORDS[c.broken]
        return f"**{word}**" if bold and c.broken == pairing.HEAD else word
    if not c.compared or c.verdict is None:
        return "not compared"
    text = c.verdict.label
    if bold and c.verdict.verdict in (verdicts.SLOWER, verdicts.FASTER):
        text = f"**{text}**"
    return text


def _rows(cmp: RunComparison, bold: bool) -> list[list[str]]:
    rows = []
    for c in cmp.cases:
        name = f"{c.case_id} v{c.version}"
        if not c.compared or c.gap is None or c.warpforth is None or c.cuda is None:
            rows.append([name, "-", "-", "-", "-", "-", "-", verdict_cell(c, bold)])
            continue
        rows.append([
            name, f"{c.gap.base:.3f}x -> {c.gap.head:.3f}x", pct(c.gap),
            f"{c.warpforth.base:.2f} -> {c.warpforth.head:.2f}", pct(c.warpforth),
            f"{c.cuda.base:.2f} -> {c.cuda.head:.2f}", pct(c.cuda), verdict_cell(c, bold),
        ])
    return rows


HEADER = ["case", "gap", "gap change [95% CI]", "WF us", "WF change [CI]", "CUDA us", "CUDA change [CI]", "verdict"]


def _footer(cmp: RunComparison) -> list[str]:
    judged = [(c, c.verdict) for c in cmp.cases if c.verdict is not None]
    margins = {v.margin_basis: c for c, v in judged}
    lines = []
    if judged:
        first = judged[0][1]
        lines.append(verdicts.rule_text(verdicts.Margin(first.margin, first.min_effect, first.margin_basis)))
        if len(margins) > 1:
            lines += [f"{c.case_id}: margin {v.margin:.2%} ({v.margin_basis})"
                      for c, v in judged[1:] if v.margin_basis != first.margin_basis]
    bases = {c.gap.basis for c, _ in judged if c.gap}
    if len(bases) == 1:
        lines.append(f"gap change interval: {bases.pop()}")
    else:
        lines += [f"{c.case_id}: gap change interval: {c.gap.basis}" for c, _ in judged if c.gap]
    if not cmp.same_run:
        lines.append("WF and CUDA time intervals: each run's own samples only (boards and processes move absolute "
                     "times by more than the gap)")
    for c in cmp.cases:
        if c.sass:
            lines.append(f"{c.case_id}: {c.sass}" + (f" {c.case_id}" if c.sass.endswith("wfbench explain") else ""))
        if c.reason:
            lines.append(f"{c.case_id}: {verdict_cell(c) + ': ' if c.broken else '' if c.compared else 'not compared: '}"
                         f"{c.reason}")
    lines += [f"note: {n}" for n in cmp.notes]
    return lines


def _title(cmp: RunComparison) -> str:
    how = "one interleaved base/head run" if cmp.same_run else "two runs"
    return (f"{cmp.base_name} (warpforthc {cmp.base_compiler}) -> {cmp.head_name} (warpforthc "
            f"{cmp.head_compiler}); {cmp.platform}; {how}")


def summary(cmp: RunComparison) -> str:
    """``6 compared: 1 SLOWER, 5 SAME``."""
    counts: dict[str, int] = {}
    for c in cmp.cases:
        key = verdicts.BROKEN_WORDS[c.broken] if c.broken else c.verdict.verdict if c.verdict else "not compared"
        counts[key] = counts.get(key, 0) + 1
    order = [verdicts.BROKEN_WORDS[pairing.HEAD], *verdicts.VERDICTS, verdicts.BROKEN_WORDS[pairing.BASE],
             verdicts.BASELINE_CHANGED, "not compared"]
    parts = [f"{n} {k.upper() if k in verdicts.VERDICTS else k}" for k, n in
             sorted(counts.items(), key=lambda kv: order.index(kv[0]))]
    return f"{len(cmp.cases)} case(s): " + ", ".join(parts)


def render_text(cmp: RunComparison) -> str:
    from wfbench_core.review.table import render_table

    return "\n".join([_title(cmp), "", render_table([HEADER] + _rows(cmp, bold=False)), ""] + _footer(cmp)
                     + [summary(cmp)])


def render_markdown(cmp: RunComparison) -> str:
    out = ["### wfbench compare", "", _title(cmp).replace(" -> ", " → "), "", f"**{summary(cmp)}**", "",
           "| " + " | ".join(HEADER) + " |", "|---|" + "---:|" * (len(HEADER) - 2) + "---|"]
    for row in _rows(cmp, bold=True):
        out.append("| " + " | ".join(cell.replace(" -> ", " → ") for cell in row) + " |")
    out.append("")
    out += [f"- {line}" for line in _footer(cmp)]
    return "\n".join(out) + "\n"
