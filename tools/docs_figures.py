#!/usr/bin/env python3
"""Render the figures of README.md and docs/*.md from the result files stored in the repository.

    python3 tools/docs_figures.py            # re-render every figure block in place
    python3 tools/docs_figures.py --check    # exit 1, naming each block that differs from its source

A figure block is written in the Markdown as

    <!-- figure: KIND PATH -->
    ...rendered, never edited by hand...
    <!-- /figure -->

where PATH is a result file in the repository (relative to its root) and KIND one of:

- ``suite-table``: the run's table exactly as ``wfbench run`` prints it, with the GPU, the date and the wall time;
- ``ceiling-table``: a run with ``--ceiling``: its table exactly as ``wfbench run --ceiling`` prints it, the
  library ceiling's time and ``WarpForth time / ceiling time`` beside each case's two sides (docs/ceiling.md);
- ``ceiling-profile``: one call of a library ceiling as Nsight Compute saw it (the stdout of
  :func:`wfbench_core.gpu.ceiling_profile.ncu_command`, the profile ``wfbench explain CASE --ceiling --profile``
  takes): each of the library's kernels, its time, throughputs, occupancy and tensor-path operations;
- ``power-cap``: the runs of a case at the board's power cap stored in the folder PATH: per run, the board,
  the pairs whose sides ran at matching clocks, the clock re-takes, the gap and the throttle rule's call
  (:func:`wfbench_core.review.throttle.judge_throttle`), then per board how many runs stayed in the trends and
  the spread of their gaps;
- ``local-layouts``: runs of one case whose kernels keep local memory, stored in the folder PATH, each in a
  fresh process: per run its gap, interval and between-placement noise, and the median pair ratio at each
  per-thread stack size its placements ran with (``timing.stack_bytes``, docs/timing.md);
- ``aa-position``: an A/A run's position effect per case: within each pair, the first side's sample minus the
  second's (:func:`wfbench_core.stats.position_effect`), with its 95 % interval and how many pairs had the
  first side slower.
- ``stack-tax``: the runtime-stack tax of every case and side that the run holds static diagnostics of
  (:mod:`wfbench_core.compiling.stack_tax`): stack frame, spills, local stores and loads by width, how many of them
  sit in the innermost loop, the stack-addressing instructions and, for the sides profiled with Nsight
  Compute, the local traffic;
- ``sweep-table``: a size sweep's table exactly as ``wfbench sweep`` prints it (from a sweep file, e.g.
  ``docs/results/sweeps/h200-axpy_f64.json``), with the GPU and the date;
- ``board-component``: the between-board spread of the P0 gaps over the plain runs of one bundle stored in the
  folder PATH, one per board (e.g. ``docs/results/boards``), and the default board component it supports;
- ``board-repeat``: the P0 gaps of two or more plain runs of one bundle on one board, stored in the folder PATH;
- ``board-verdicts``: ``wfbench compare BASE HEAD`` on every ordered pair of boards of that folder, every case
  OK in both: compare's verdicts, and the rule's verdict on the interval alone (identical compilers must be
  neither SLOWER nor FASTER);
- ``power-table``: a power study's table (``tools/power_study.py``), from the study folder PATH: its
  ``plan.json`` and the runs' result files (kept xz-compressed as ``study-N.json.xz``; a test re-judges every
  trial from them), with the trials across boards where the runs were timed on two boards or more.

Measured figures live only in such blocks (tests/test_docs_figures.py checks both that every block matches
its file and that no hardware measurement is quoted outside one). To record a new figure, store the result
file under docs/results/, point a block at it and run this tool.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from wfbench_core.compiling.stack_tax import StackTax
    from wfbench_core.record.results import RunResult, TimingProtocol

BLOCK = re.compile(r"(<!-- figure: (?P<kind>[\w-]+) (?P<src>\S+) -->\n)(?P<body>.*?)(<!-- /figure -->)", re.S)
DOCS = ("README.md", "docs/*.md")


def _stored(src: str) -> tuple[RunResult, dict[str, Any]]:
    """The result (through the one result loader) and its raw JSON (for what a reader migrates away)."""
    from wfbench_core.record.results import load_result

    path = ROOT / src
    if not path.is_file():
        raise SystemExit(f"docs_figures: {src}: no such result file in the repository")
    return load_result(path), json.loads(path.read_text())


def _when(result: Any) -> str:
    return str(result.created)[:16].replace("T", " ") + " UTC"


def suite_table(src: str) -> str:
    from wfbench_core.review.report import render

    result, raw = _stored(src)
    env = result.environment
    head = (f"A run of the whole suite on an {env.gpu_name}, stored in `{src}` ({_when(result)}, result schema "
            f"{raw['schema_version']}; `wall_s` {result.wall_s:.1f} s):")
    return f"{head}\n\n```\n{render(result)}\n```\n"


def suite_costs(src: str) -> str:
    """Where a run's wall time goes: each cost summed over its cases (the worker's, on the GPU host), the warm-up
    (busy GPU, and what was carried over from the case before) and the run's wall."""
    import attrs

    result, _ = _stored(src)
    cases = [c for c in result.cases if c.costs is not None]
    rows = [(field.name, sum(getattr(c.costs, field.name) or 0.0 for c in cases))
            for field in attrs.fields(type(cases[0].costs))]
    timed = [c.timing for c in cases if c.timing is not None]
    kept = sum(sum(side.samples_us) * t.launches(side) for t in timed for side in (t.warpforth, t.cuda)) / 1e6
    rows += [("the kept pairs' kernel time (part of timing_s)", kept),
             ("warmup_busy_s (part of timing_s)", sum(t.warmup_busy_s for t in timed)),
             ("warmup_carried_s (credited, not spent)", sum(t.warmup_carried_s for t in timed))]
    lines = [f"| {name} | {value:.1f} |" for name, value in rows]
    env = result.environment
    head = (f"Where the time of `{src}` went ({len(cases)} cases on an {env.gpu_name}, {_when(result)}; `wall_s` "
            f"{result.wall_s:.1f} s), each cost summed over the cases, in seconds:")
    return head + "\n\n| cost | s |\n|---|---:|\n" + "\n".join(lines) + "\n"


def ceiling_table(src: str) -> str:
    """The run's table with its library ceilings' columns, as ``wfbench run --ceiling`` prints it."""
    from wfbench_core.review.report import render

    result, raw = _stored(src)
    if not any(c.ceiling is not None for c in result.cases):
        raise SystemExit(f"docs_figures: ceiling-table needs a run with --ceiling; {src} has no library ceiling")
    env = result.environment
    head = (f"A run with `--ceiling` on an {env.gpu_name}, stored in `{src}` ({_when(result)}, result schema "
            f"{raw['schema_version']}; `wall_s` {result.wall_s:.1f} s):")
    return f"{head}\n\n```\n{render(result, ceiling=True)}\n```\n"


def ceiling_profile(src: str) -> str:
    """The library's kernels of one ceiling call, from ncu's raw page (:mod:`wfbench_core.gpu.ceiling_profile`)."""
    from wfbench_core.gpu.ceiling_profile import library_kernels
    from wfbench_core.gpu.profile import parse_raw_csv

    path = ROOT / src
    rows = parse_raw_csv(path.read_text()) if path.is_file() else []
    if not rows:
        raise SystemExit(f"docs_figures: {src}: no Nsight Compute raw page (ncu --csv --page raw) in the repository")
    gpu = rows[0].get("device__attribute_display_name", ("", "GPU"))[1]
    lines = [f"One call of the ceiling profiled by Nsight Compute on an {gpu}, ncu's page stored in `{src}`:", "",
             "| kernel | duration (us) | DRAM throughput | SM throughput | achieved occupancy | warp instructions "
             "| tensor-path fp64 operations |", "|---|---:|---:|---:|---:|---:|---:|"]
    for k in library_kernels(rows):
        p, name = k.profile, k.name if len(k.name) <= 72 else k.name[:69] + "..."
        fp64 = "not counted" if k.tensor_ops is None else f"{k.tensor_ops.get('fp64', 0.0):,.0f}"
        lines.append(f"| `{name}` | {p.duration_us:.2f} | {p.dram_pct:.1f}% | {p.sm_pct:.1f}% | "
                     f"{p.achieved_occupancy_pct:.1f}% | {p.instructions:,} | {fp64} |")
    return "\n".join(lines) + "\n"


def _one_case_runs(src: str, kind: str, timed_with: Callable[[Any], bool], what: str) -> list[tuple[Any, Any]]:
    """The runs stored in the folder ``src``, oldest first, each with its one case's timing; a folder holding any
    other run (more cases, untimed, or a timing ``timed_with`` refuses) stops the tool naming it."""
    from wfbench_core.record.results import load_result

    runs = sorted((load_result(p) for p in sorted((ROOT / src).glob("*.json"))), key=lambda r: str(r.created))
    timed = [(r, t) for r in runs if len(r.cases) == 1 and (t := r.cases[0].timing) is not None and timed_with(t)]
    if not runs or len(timed) != len(runs):
        raise SystemExit(f"docs_figures: {src}: {kind} needs runs of one case each, {what}")
    return timed


def power_cap(src: str) -> str:
    """Runs of one case at the power cap, and what the throttle rule made of each (docs/timing.md)."""
    from wfbench_core.gpu.sampling import clocks_match
    from wfbench_core.review.throttle import judge_throttle

    runs = _one_case_runs(src, "power-cap", lambda t: t.nvml is not None, "timed with NVML readings")
    timed = [(r, t, t.nvml) for r, t in runs]
    lines = ["| run (UTC) | board | power | SM clock | matched pairs | clock re-takes | gap | trends |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    by_board: dict[str, list[float | None]] = {}  # each run's gap where it stayed in the trends, else None
    for r, t, nvml in timed:
        board, left = r.environment.gpu_uuid[4:12], judge_throttle(t).leaves_trends
        matched = sum(clocks_match(p) for p in t.pair_side_mhz)
        lines.append(f"| {_when(r)[:16]} | {board} | {nvml.power_w_max:.0f} W | {nvml.sm_mhz_min:.0f}-"
                     f"{nvml.sm_mhz_max:.0f} MHz | {matched} of {len(t.pair_side_mhz)} | {t.clock_retakes} | "
                     f"{t.gap:.4f} | {'left out' if left else 'kept'} |")
        by_board.setdefault(board, []).append(None if left else t.gap)
    per_board = []
    for board, board_runs in by_board.items():
        gaps = [g for g in board_runs if g is not None]
        spread = f", gap {min(gaps):.4f}-{max(gaps):.4f} (spread {max(gaps) / min(gaps) - 1:.2%})" if gaps else ""
        per_board.append(f"- board {board}: kept in the trends in {len(gaps)} of {len(board_runs)} runs{spread}")
    first = runs[0][0]
    head = f"The runs of `{first.cases[0].id}` stored in `{src}` ({first.environment.gpu_name}):"
    return head + "\n\n" + "\n".join(lines) + "\n\n" + "\n".join(per_board) + "\n"


def local_layouts(src: str) -> str:
    """Runs of one local-memory case in fresh processes, stored in the folder ``src``: per run its gap and interval
    over placements, and the gap of the pairs timed at each per-thread stack size (``timing.stack_bytes``)."""
    import statistics

    timed = _one_case_runs(src, "local-layouts", lambda t: bool(t.stack_bytes),
                           "timed with their stack sizes recorded (timing.stack_bytes)")
    sizes = sorted({b for _, t in timed for b in t.stack_bytes})
    lines = ["| run (UTC) | board | gap | 95 % interval | between placements | "
             + " | ".join(f"pairs at {b} B" for b in sizes) + " |", "|---|---|---:|---|---:|" + "---:|" * len(sizes)]
    for r, t in timed:
        stack_of = dict(zip(sorted(set(t.placement_of)), t.stack_bytes))
        ratios: dict[int, list[float]] = {}
        for p, wf, cu in zip(t.placement_of, t.warpforth.samples_us, t.cuda.samples_us):
            ratios.setdefault(stack_of[p], []).append(wf / cu)
        cells = " | ".join(f"{statistics.median(ratios[b]):.4f}" if b in ratios else "" for b in sizes)
        when = str(r.created)[:19].replace("T", " ")
        lines.append(f"| {when} | {r.environment.gpu_uuid[4:12]} | {t.gap:.4f} | [{t.gap_lo:.4f}, {t.gap_hi:.4f}] | "
                     f"{t.between_placement_noise:.2%} | {cells} |")
    gaps = [t.gap for _, t in timed]
    first = timed[0][0]
    head = (f"The runs of `{first.cases[0].id}` stored in `{src}` ({first.environment.gpu_name}), each in a "
            f"fresh process; the last columns are the median WarpForth/CUDA ratio of the pairs timed at each "
            f"per-thread stack size:")
    tail = f"The runs' gaps span {min(gaps):.4f} to {max(gaps):.4f} (spread {max(gaps) / min(gaps) - 1:.2%})."
    return head + "\n\n" + "\n".join(lines) + "\n\n" + tail + "\n"


def aa_position(src: str) -> str:
    from wfbench_core.review.series import protocol_tag
    from wfbench_core.stats import position_effect

    result, raw = _stored(src)
    if result.mode != "aa":
        raise SystemExit(f"docs_figures: {src}: aa-position needs an A/A run, not a {result.mode} run")
    rows = ["| case | first minus second, per sample | 95 % interval | first slower | sample |",
            "|---|---|---|---|---|"]
    for c in result.cases:
        if c.timing is None:
            continue
        pe = position_effect(c.timing)
        sample_ms = c.timing.cuda.median_us * c.timing.launches_per_sample / 1000
        rows.append(f"| {c.id} | {pe.median_us:+.1f} us | [{pe.lo_us:+.1f}, {pe.hi_us:+.1f}] | "
                    f"{pe.first_slower} of {pe.pairs} pairs | {sample_ms:.1f} ms |")
    tag = protocol_tag(result.protocol) or "the default protocol"
    head = (f"The A/A run stored in `{src}` ({result.environment.gpu_name}, {_when(result)}, result schema "
            f"{raw['schema_version']}, protocol {tag}):")
    return head + "\n\n" + "\n".join(rows) + "\n"


def _stack_row(name: str, side: str, t: StackTax, median_us: float | None) -> str:
    from wfbench_core.compiling.stack_tax import by_width, size

    traffic = "not profiled" if t.traffic is None else f"{size(t.load_bytes)} / {size(t.store_bytes)}"
    median = "-" if median_us is None else f"{median_us:.1f} us"
    return (f"| {name} | {side} | {t.frame} B | {t.spill_stores} / {t.spill_loads} B | {by_width(t.stores, 'STL')} "
            f"| {by_width(t.loads, 'LDL')} | {t.loop_stores + t.loop_loads} | "
            f"{'-' if t.addressing is None else t.addressing} | {traffic} | {median} |")


def stack_tax_table(src: str) -> str:
    from wfbench_core.compiling.stack_tax import tax_of

    result, raw = _stored(src)
    rows = ["| case | side | stack frame | spill stores / loads | local stores | local loads | in the innermost loop "
            "| stack addressing | local traffic, loaded / stored | median time |", "|---" * 10 + "|"]
    taxed, seen, arch = [], [], ""
    for c in result.cases:
        name = c.id + (f" [{c.compiler_label}]" if c.compiler_label else "")
        for side, diag, prof, stats in (("WarpForth", c.diag_wf, c.profile_wf, c.timing and c.timing.warpforth),
                                        ("CUDA", c.diag_cuda, c.profile_cuda, c.timing and c.timing.cuda)):
            if diag is None:
                continue
            t, arch = tax_of(diag, prof), diag.arch
            seen.append(name)
            taxed += [f"{name} ({side})"] if t.carried else []
            rows.append(_stack_row(name, side, t, stats.median_us if stats else None))
    if not seen:
        raise SystemExit(f"docs_figures: {src}: no case has static diagnostics (run it, or 'wfbench explain CASE "
                         f"--result {src}')")
    env = result.environment
    head = (f"The runtime-stack tax in the run stored in `{src}` ({env.gpu_name}, {_when(result)}, result schema "
            f"{raw['schema_version']}, SASS for {arch}):")
    verdict = (f"Sides that pay it: {', '.join(taxed)}." if taxed else
               f"No side of the {len(dict.fromkeys(seen))} cases pays it: every stack frame is 0 B and no kernel "
               f"has a local load or store.")
    return f"{head}\n\n" + "\n".join(rows) + f"\n\n{verdict}\n"


def power_table(src: str) -> str:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import power_study
    finally:
        sys.path.pop(0)
    folder = ROOT / src
    if not (folder / "plan.json").is_file():
        raise SystemExit(f"docs_figures: {src}: no plan.json of a power study there")
    plan = json.loads((folder / "plan.json").read_text())
    results = power_study.study_results(folder, plan)  # the boards, and the trials across boards
    first = results[0]
    env = first.environment
    head = (f"The power study stored in `{src}` ({env.gpu_name}, {_when(first)}, cases "
            f"{', '.join(sorted({c.id for c in first.cases}))}, {protocol_words(first.protocol)}):")
    return f"{head}\n\n{power_study.render(power_study.summarize(plan, results))}"


BOARD_CASES = ("attention_f32_naive", "axpy_f64", "matmul_f64_naive", "matmul_f64_tiled", "reduce_sum_f64",
               "scale_i64")  # the P0 cases: what the board component is measured on


def board_sd_default(hi: float) -> float:
    """The default board component the measurement supports: its interval's upper end, rounded up to 0.01 %."""
    return math.ceil(round(hi * 1e4, 6)) / 1e4


def _bundle_runs(src: str, *, one_board: bool = False) -> list[tuple[str, Any]]:
    """The plain runs of one bundle stored in the folder ``src``, each with its file (relative to the
    repository): refused unless there are two or more, with the same warpforthc and CUDA compiler, and each on its
    own board (or, ``one_board``, all on one board)."""
    from wfbench_core.record.results import load_result

    paths = sorted((ROOT / src).glob("*.json"))
    runs = [(str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p), load_result(p)) for p in paths]
    boards = {r.environment.gpu_uuid for _, r in runs}
    compilers = {(r.warpforthc.version, r.cuda_compiler.kind, r.cuda_compiler.version, tuple(r.cuda_compiler.flags))
                 for _, r in runs}
    if len(runs) < 2 or len(boards) != (1 if one_board else len(runs)) or len(compilers) != 1:
        shape = "two or more runs of one bundle on one board" if one_board else "one per board (at least two)"
        raise SystemExit(f"docs_figures: {src}: the board runs must be {shape}, with one warpforthc build and one "
                         f"CUDA compiler")
    return runs


TARGET_CHANGE = 0.005  # the regression the cross-board target is about (issue: 0.5 % across two boards)
DETECTION = 0.90  # the share of trials it must be SLOWER in


def board_component(src: str) -> str:
    """The between-board spread of the P0 gaps over the runs stored in ``src`` (one per board, one compiler)."""
    from wfbench_core.review.evidence import Observation, between_boards

    runs = [r for _, r in _bundle_runs(src)]
    boards = [r.environment.gpu_uuid for r in runs]
    rows, obs = ["| case | " + " | ".join(b[:12] for b in boards) + " | spread |", "|---" * (len(runs) + 2) + "|"], []
    for cid in BOARD_CASES:
        gaps = [r.case(cid).timing.gap for r in runs]
        code = {(r.case(cid).warpforth_source_sha256, r.case(cid).cuda_source_sha256) for r in runs}
        if len(code) != 1:
            raise SystemExit(f"docs_figures: {src}: {cid} timed other code on another board")
        logs = [math.log(g) for g in gaps]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        rows.append(f"| {cid} | " + " | ".join(f"{g:.5f}" for g in gaps) + f" | {sd:.3%} |")
        obs += [Observation(code=cid, board=b, log_gap=x) for b, x in zip(boards, logs)]
    sd, df, lo, hi = between_boards(obs)
    first = runs[0].environment
    # what a 0.5 % change across two boards needs to be SLOWER in 90 % of trials: its interval's lower end above
    # zero, so the change must stand (z of the interval + z of 90 %, one-sided) standard deviations of the two
    # boards' difference clear of it, with no noise of the runs' own and no margin (normal quantiles: infinite df)
    from wfbench_core.review.verdicts import LEVEL
    from wfbench_core.stats import t_quantile

    z = t_quantile(LEVEL, math.inf) + t_quantile(2 * DETECTION - 1, math.inf)
    need = TARGET_CHANGE / (z * math.sqrt(2))
    return (f"The P0 gaps of the same bundle (warpforthc {runs[0].warpforthc.version}) on {len(runs)} "
            f"{first.gpu_name} boards, one plain run each, stored in `{src}`:\n\n" + "\n".join(rows)
            + f"\n\nBetween boards (pooled over the cases): **{sd:.3%}** ({df} degrees of freedom; 95 % interval "
            f"{lo:.3%} to {hi:.3%}). The stated default board component is the interval's upper end, rounded up: "
            f"**{board_sd_default(hi):.2%}**.\n\n"
            f"For a {TARGET_CHANGE:.1%} change across two boards to be SLOWER in {DETECTION:.0%} of trials, it must "
            f"stand {z:.2f} standard deviations of the two boards' difference clear of zero ({LEVEL:.0%} interval, "
            f"{DETECTION:.0%} power): each board's component at most {need:.3%}, with no noise of the runs' own and "
            f"no margin. The measured component, {sd:.3%}, is "
            + ("below that: the target is within reach of runs quiet enough.\n" if sd < need else
               "above it: no pair of single runs on two boards meets the target, whatever the protocol; a "
               "regression that small is found by a base/head run on one board.\n"))


def board_repeat(src: str) -> str:
    """The P0 gaps of the plain runs of one bundle stored in ``src``, all on one board: what a second run on a
    board moves a gap by, against which the between-board spread reads."""
    runs = [r for _, r in _bundle_runs(src, one_board=True)]
    rows = ["| case | " + " | ".join(_when(r)[:16] for r in runs) + " | largest difference |", "|---" * (len(runs) + 2) + "|"]
    for cid in BOARD_CASES:
        gaps = [r.case(cid).timing.gap for r in runs]
        rows.append(f"| {cid} | " + " | ".join(f"{g:.5f}" for g in gaps) + f" | {max(gaps) / min(gaps) - 1:.3%} |")
    return (f"The P0 gaps of {len(runs)} plain runs of the same bundle (warpforthc {runs[0].warpforthc.version}) on "
            f"one {runs[0].environment.gpu_name} board, {runs[0].environment.gpu_uuid[:12]}, stored in `{src}`:\n\n"
            + "\n".join(rows) + "\n")


def board_verdicts_of(src: str) -> dict[str, Any]:
    """``wfbench compare BASE HEAD`` on every ordered pair of the board runs in ``src`` (base on one board, head
    on another; the compare command's functions, no history: the stated default components), every case OK in
    both. Per pair: compare's verdicts, and what the rule gives on the interval alone (a SLOWER or FASTER there
    is compare's ``moved``: identical code is SAME by rule, but the gap moved beyond what boards differ by)."""
    import itertools

    from wfbench_core.record.status import OK
    from wfbench_core.review import compare, verdicts

    pairs, moved, runs = [], [], _bundle_runs(src)
    for (pa, a), (pb, b) in itertools.permutations(runs, 2):
        cmp = compare.compare_runs(a, b, base_name=pa, head_name=pb, settings=compare.Settings())
        said, alone = dict.fromkeys(verdicts.VERDICTS, 0), dict.fromkeys(verdicts.VERDICTS, 0)
        for c in cmp.cases:
            v = c.verdict
            if not c.compared or v is None or c.base_status != OK or c.head_status != OK:
                continue
            by_interval = verdicts.rule(v.lo, v.hi, verdicts.Margin(v.margin, v.min_effect, v.margin_basis))
            said[v.verdict] = said.get(v.verdict, 0) + 1
            alone[by_interval] += 1
            if by_interval in (verdicts.SLOWER, verdicts.FASTER):
                moved.append({"base": a.environment.gpu_uuid, "head": b.environment.gpu_uuid, "case": c.case_id,
                              "label": v.label, "change": v.change, "lo": v.lo, "hi": v.hi})
        pairs.append({"base": a.environment.gpu_uuid, "head": b.environment.gpu_uuid, "cases": sum(alone.values()),
                      "verdicts": said, "by_interval": alone})
    first = runs[0][1]
    return {"pairs": pairs, "moved": moved, "cases": sum(p["cases"] for p in pairs),
            "on": f"{first.environment.gpu_name}; warpforthc {first.warpforthc.version}, {first.cuda_compiler.kind} "
                  f"{first.cuda_compiler.version} on every board",
            "false": sum(p["verdicts"][v] for p in pairs for v in (verdicts.SLOWER, verdicts.FASTER)),
            "false_by_interval": len(moved)}


def board_verdicts(src: str) -> str:
    """The verdicts ``wfbench compare`` gives identical compilers across the boards of ``src``
    (:func:`board_verdicts_of`)."""
    from wfbench_core.review import verdicts

    got = board_verdicts_of(src)
    order = (verdicts.SAME, verdicts.AMBIGUOUS, verdicts.SLOWER, verdicts.FASTER)
    rows = ["| base board | head board | cases OK in both | compare's verdicts | by the interval alone: "
            + " / ".join(v.upper() for v in order) + " |", "|---|---|---:|---|---|"]
    for p in got["pairs"]:
        said = ", ".join(f"{v.upper()} {n}" for v, n in p["verdicts"].items() if n)
        rows.append(f"| {p['base'][:12]} | {p['head'][:12]} | {p['cases']} | {said} | "
                    + " / ".join(str(p["by_interval"][v]) for v in order) + " |")
    moved = [f"- {m['case']}, {m['base'][:12]} to {m['head'][:12]}: {m['change']:+.2%} [{m['lo']:+.2%}, "
             f"{m['hi']:+.2%}], {m['label']}" for m in got["moved"]]
    n = got["cases"]
    return (f"`wfbench compare BASE HEAD` (no history: the stated default components) on each of the "
            f"{len(got['pairs'])} ordered pairs of the runs stored in `{src}` ({got['on']}), every case OK in both:\n\n" + "\n".join(rows) + "\n\n"
            + (("Interval beyond the minimum effect (identical code, so compare says SAME, `moved`):\n\n"
                + "\n".join(moved) + "\n\n") if moved else "")
            + f"Identical compilers across boards never SLOWER or FASTER: by compare's verdict "
            f"{'met' if not got['false'] else 'NOT met'} ({got['false']} of {n}); by the interval alone, as code "
            f"that changed would be judged, {'met' if not moved else 'NOT met'} ({len(moved)} of {n}).\n")


def protocol_words(protocol: TimingProtocol) -> str:
    """"the default protocol" only where it is; else the settings that differ from it."""
    import attrs

    from wfbench_core.record.results import TimingProtocol

    default = TimingProtocol()
    changed = [f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}"
               for name, value in attrs.asdict(protocol, recurse=False).items() if value != getattr(default, name)]
    return "the default protocol" if not changed else f"the default protocol but {', '.join(changed)}"


def sweep_table(src: str) -> str:
    from wfbench_core.cli.sweep import render_sweep
    from wfbench_core.record.sweep_record import load_sweep

    path = ROOT / src
    if not path.is_file():
        raise SystemExit(f"docs_figures: {src}: no such sweep file in the repository")
    sweep = load_sweep(path)
    head = (f"The sweep stored in `{src}` ({sweep.environment.gpu_name}, {_when(sweep)}, warpforthc "
            f"{sweep.warpforthc.version}):")
    return f"{head}\n\n```\n{render_sweep(sweep)}\n```\n"


# the kinds whose PATH is a folder of stored runs, and the files each reads there
FOLDERS = {"power-table": "plan.json", "board-component": "*.json", "board-verdicts": "*.json", "board-repeat": "*.json",
           "power-cap": "*.json", "local-layouts": "*.json"}

RENDERERS: dict[str, Callable[[str], str]] = {"board-component": board_component, "board-verdicts": board_verdicts,
                                              "board-repeat": board_repeat,
                                              "suite-table": suite_table, "suite-costs": suite_costs, "ceiling-table": ceiling_table,
                                              "ceiling-profile": ceiling_profile, "power-cap": power_cap,
                                              "aa-position": aa_position, "local-layouts": local_layouts,
                                              "power-table": power_table, "stack-tax": stack_tax_table,
                                              "sweep-table": sweep_table}


def documents() -> list[Path]:
    return [p for pattern in DOCS for p in sorted(ROOT.glob(pattern))]


def render_text(text: str, where: str = "") -> str:
    def one(m: re.Match[str]) -> str:
        kind = m.group("kind")
        if kind not in RENDERERS:
            raise SystemExit(f"docs_figures: {where}: unknown figure kind {kind!r} (known: {', '.join(RENDERERS)})")
        return m.group(1) + RENDERERS[kind](m.group("src")) + m.group(5)

    return BLOCK.sub(one, text)


def stale() -> list[str]:
    """The blocks that differ from what their source renders, as ``FILE: KIND SRC``."""
    out = []
    for doc in documents():
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            if render_text(m.group(0), str(doc.relative_to(ROOT))) != m.group(0):
                out.append(f"{doc.relative_to(ROOT)}: {m.group('kind')} {m.group('src')}")
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 naming each stale block")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        for line in bad:
            print(f"stale figure: {line} (run python3 tools/docs_figures.py)")
        return 1 if bad else 0
    for doc in documents():
        text = doc.read_text()
        new = render_text(text, str(doc.relative_to(ROOT)))
        if new != text:
            doc.write_text(new)
            print(f"{doc.relative_to(ROOT)}: figures rendered")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
