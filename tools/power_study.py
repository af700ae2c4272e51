#!/usr/bin/env python3
"""Measure what a base/head run can tell apart: inject real slowdowns of chosen sizes, and inert changes, into
the head side's PTX, time them against the base on a GPU, and count the verdicts.

    python3 tools/power_study.py run --out DIR [--ptx tests/fixtures/ptx] [--budget-s 400]   # on the GPU host
        [--case ID ...] [--runs N] [--curve DIR/calibration-curve.json]
    python3 tools/power_study.py table DIR                                                  # anywhere
    python3 tools/power_study.py ptx --warpforthc PATH --out DIR                            # fresh base PTX
    python3 tools/power_study.py check [--ptx DIR]                                          # SASS, no GPU

Heads (each a compiler label of one multi-build bundle, all timed in the same rounds as the base and CUDA):

* ``s025`` ... ``s200``: a real slowdown of 0.25, 0.5 (twice: ``s050a``, ``s050b``), 1 and 2 %: at the kernel's
  entry every thread runs K iterations of a dependent multiply-add chain on a register whose value is kept
  alive by a store that no launch makes (it is predicated on a pointer argument being null), so results are
  unchanged and ptxas keeps the chain (``check`` reads the SASS). K is calibrated per case on the GPU first:
  one short run times K = 64, 512 and 4096, and K for each size is read off that curve. Two heads of one size
  are distinct injections (:data:`VARIANTS`: another linear congruential step, other SASS), never the same
  bytes twice; a stored study whose heads were byte-identical counts them as one trial.
* ``eq_tid``, ``eq_ctaid``, ``eq_ntid``, ``eq_nctaid``, ``eq_laneid``: inert changes. The same never-taken store of one
  special register: the SASS differs from the base (another S2R, a compare, a predicated store), the cost is
  a few instructions per thread, nothing measurable. Identical code would be SAME by rule and prove nothing.

``run`` calibrates, then times the study bundle over and over until ``--budget-s`` is spent (the P0 cases,
the default protocol but for ``--max-case-s``, :data:`STUDY_LIMITS`), writing every result and the table after
each run, so a run cut short still leaves its trials; with ``--gpus 0,1`` the runs go to the host's boards in
turn, each run's board recorded. A trial is one head of one case in one run, judged by ``wfbench compare``'s
rule; each rate is given with its one-sided 95 % Clopper-Pearson bound, and the targets are judged by the
bounds. Where the runs were timed on two boards or more, ``table`` also counts the trials across boards: the
base of a run on one board against each head of a run on another, as ``wfbench compare BASE HEAD`` judges two
runs of different boards (the counting: ``tools/power_verdicts.py``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wfbench_core.record.results import RunResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

# the counting (tools/power_verdicts.py): trials, rates and their bounds, within runs and across boards
from power_verdicts import (  # noqa: E402, F401  (bound: named here as before)
    across_boards,
    boards_of,
    bound,
    cross_summary,
    render_cross,
    rows,
    table,
    trials,
    within_run,
)

SIZES = {"s025": 0.0025, "s050a": 0.005, "s050b": 0.005, "s100": 0.01, "s200": 0.02}
# the chain's linear congruential step (multiplier, increment) of each variant: full-period pairs; a head not
# listed in VARIANTS runs variant 0, so two heads of one size are distinct injections
LCG = ((1664525, 1013904223), (22695477, 1), (1103515245, 12345), (134775813, 1))
VARIANTS = {"s050b": 1}
EQUALS = {"eq_tid": "%tid.x", "eq_ctaid": "%ctaid.x", "eq_ntid": "%ntid.x", "eq_nctaid": "%nctaid.x",
          "eq_laneid": "%laneid"}
CALIBRATION = (64, 512, 4096)
ARCH = "sm_90"
CAL_PROTOCOL = ("--placements", "5", "--samples", "10", "--min-samples", "10", "--warmup-s", "0.5")
MARK = "// wfbench power study"
# A study case times eleven WarpForth heads and CUDA in every round, about six times a plain base/head
# case's work: the per-case refusal limit (--max-case-s) is raised in proportion, nothing else changes.
STUDY_LIMITS = ("--max-case-s", "400")

# -- the PTX -------------------------------------------------------------------------------------------------

_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\((.*?)\)\s*(?:\.\w+[^{]*)?\{", re.S)
_PARAM = re.compile(r"\.param\s+\.u64\s+(\.ptr\s+(?:\.\w+\s+)*(?:\d+\s+)?)?(\w+)")
_DECL = re.compile(r"^\s*(\.reg|\.shared|\.local|//|$)")


def _entry(ptx: str) -> tuple[int, str]:
    """(offset just past the body's declarations, a 64-bit parameter: a pointer where there is one)."""
    m = _ENTRY.search(ptx)
    if not m:
        raise ValueError("no .entry function in this PTX")
    params = _PARAM.findall(m.group(2))
    if not params:
        raise ValueError(f"{m.group(1)}: no 64-bit parameter to predicate the kept-alive store on")
    param = next((name for ptr, name in params if ptr), params[0][1])
    pos = m.end()
    lines = ptx[pos:].split("\n")
    skip = 0
    while skip < len(lines) and _DECL.match(lines[skip]):
        skip += 1
    return pos + sum(len(line) + 1 for line in lines[:skip]), param


def _store_if_null(param: str, value: str) -> list[str]:
    """A store of ``value`` through ``param`` when it is null: never made, so nothing changes, and ptxas must
    keep whatever computes ``value``."""
    return [f"\tld.param.u64 \t%ps_rd0, [{param}];", "\tsetp.eq.u64 \t%ps_p1, %ps_rd0, 0;",
            f"\t@%ps_p1 st.global.u32 \t[%ps_rd0], {value};"]


def _insert(ptx: str, body: Sequence[str]) -> str:
    pos, _ = _entry(ptx)
    decls = ["\t.reg .pred \t%ps_p<2>;", "\t.reg .b32 \t%ps_r<2>;", "\t.reg .b64 \t%ps_rd<1>;"]
    return ptx[:pos] + "\n".join([f"\t{MARK}"] + decls + list(body)) + "\n" + ptx[pos:]


def inject_chain(ptx: str, iterations: int, variant: int = 0) -> str:
    """Every thread first runs ``iterations`` steps of a dependent chain (linear congruential step ``variant``
    of :data:`LCG` on a register seeded by its thread index), kept alive by a store no launch makes."""
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    _, param = _entry(ptx)
    a, c = LCG[variant]
    body = ["\tmov.u32 \t%ps_r0, %tid.x;", f"\tmov.u32 \t%ps_r1, {iterations};", "$PS_CHAIN:",
            f"\tmad.lo.u32 \t%ps_r0, %ps_r0, {a}, {c};", "\tsub.u32 \t%ps_r1, %ps_r1, 1;",
            "\tsetp.ne.u32 \t%ps_p0, %ps_r1, 0;", "\t@%ps_p0 bra \t$PS_CHAIN;"] + _store_if_null(param, "%ps_r0")
    return _insert(ptx, body)


def inject_inert(ptx: str, special: str) -> str:
    """The never-made store of one special register: other SASS, no measurable cost."""
    _, param = _entry(ptx)
    return _insert(ptx, [f"\tmov.u32 \t%ps_r0, {special};"] + _store_if_null(param, "%ps_r0"))


def iterations_for(curve: dict[int, float], target: float) -> int:
    """K for a slowdown of ``target`` from the calibration points {K: measured change}: piecewise linear
    through (0, 0) and the points whose change is positive, extrapolated with the last segment's slope."""
    points = [(0, 0.0)] + sorted((k, c) for k, c in curve.items() if c > 0)
    if len(points) < 2:
        raise ValueError(f"no calibration point slowed the kernel: {curve}")
    for (k0, c0), (k1, c1) in zip(points, points[1:]):
        if c1 >= target and c1 > c0:
            return max(1, round(k0 + (target - c0) * (k1 - k0) / (c1 - c0)))
    (k0, c0), (k1, c1) = points[-2], points[-1]
    slope = (c1 - c0) / (k1 - k0) if c1 > c0 else c1 / k1
    return max(1, round(k1 + (target - c1) / slope))


# -- bundles -------------------------------------------------------------------------------------------------

PtxFn = Callable[["object", str], str]  # (case, config) -> PTX


def plain_bundle(out: Path, cases: Sequence[object], fn: PtxFn, name: str) -> Path:
    """A fresh bundle at ``out`` (whatever was there is removed) of one compiler, ``warpforthc`` version ``name``."""
    from wfbench_core.record.results import CompilerInfo
    from wfbench_core.testing import bundle_from_ptx

    _clear(out)
    bundle_from_ptx(cases, out, fn, warpforthc=CompilerInfo(kind="warpforthc", version=name))  # type: ignore[arg-type]
    return out


def write_bundle(out: Path, cases: Sequence[object], variants: dict[str, PtxFn]) -> Path:
    """A fresh multi-build bundle: one sub-bundle per label, all timed in the same rounds on the GPU host."""
    from wfbench_core.testing import base_head_bundle_from_ptx

    _clear(out)
    base_head_bundle_from_ptx(cases, out, variants, version="power-study {label}")  # type: ignore[arg-type]
    return out


def _clear(out: Path) -> None:
    import shutil

    if out.exists():
        shutil.rmtree(out)


def base_loader(ptx_dir: Path) -> PtxFn:
    from wfbench_core.testing import ptx_dir_loader

    return ptx_dir_loader(ptx_dir)  # refuses PTX compiled from another version of a case's source


def chain_of(base: PtxFn, iterations: dict[str, int], variant: int = 0) -> PtxFn:
    return lambda case, config: inject_chain(base(case, config), iterations[case.id], variant)  # type: ignore[attr-defined]


def inert_of(base: PtxFn, special: str) -> PtxFn:
    return lambda case, config: inject_inert(base(case, config), special)


def p0_cases() -> list[object]:
    from wfbench_core.discover.registry import Registry

    return list(Registry.load().select((), priorities=("P0",)))


# -- running on the GPU host ----------------------------------------------------------------------------------


def execute(bundle: Path, out: Path, extra: Sequence[str] = (), gpu: str | None = None) -> float:
    """``wfbench execute`` in a fresh process (on GPU ``gpu`` of the host when given); returns its wall time."""
    import os

    env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu) if gpu is not None else None
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "wfbench_core", "execute", str(bundle), "-o", str(out), "-q", *extra]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"power study: {bundle.name}: wfbench execute exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ''}")
    return time.monotonic() - t0


def changes(result_path: Path, heads: Sequence[str]) -> dict[str, dict[str, object]]:
    """Per head label and case: the change of the gap against the base, its interval, the verdict, and
    whether its code differs (compare's rule)."""
    from wfbench_core.record.results import load_result

    return changes_of(load_result(result_path), heads)


def changes_of(result: object, heads: Sequence[str]) -> dict[str, dict[str, object]]:
    return within_run(result, heads)


def board_of(result_path: Path) -> str:
    """The board (GPU UUID) a study run's result was timed on."""
    from wfbench_core.record.results import load_result

    return load_result(result_path).environment.gpu_uuid


def calibrate(ptx: PtxFn, cases: Sequence[object], work: Path, gpu: str | None = None) -> dict[str, dict[int, float]]:
    """One short run of K = 64, 512, 4096 chain iterations against the base: {case: {K: change}}."""
    variants = {"base": ptx} | {f"cal{k}": chain_of(ptx, {c.id: k for c in cases}) for k in CALIBRATION}  # type: ignore[attr-defined]
    bundle = write_bundle(work / "calibration-bundle", cases, variants)
    wall = execute(bundle, work / "calibration.json", CAL_PROTOCOL, gpu)
    got = changes(work / "calibration.json", [f"cal{k}" for k in CALIBRATION])
    curve = {c.id: {k: float(got[f"cal{k}"][c.id].get("change", 0.0)) for k in CALIBRATION} for c in cases}  # type: ignore[attr-defined]
    (work / "calibration-curve.json").write_text(json.dumps({"wall_s": wall, "curve": curve}, indent=1) + "\n")
    return curve


def stored_curve(path: Path, cases: Sequence[object]) -> dict[str, dict[int, float]]:
    """A calibration kept by an earlier ``run`` (its ``calibration-curve.json``), for the same cases."""
    curve = json.loads(path.read_text())["curve"]
    missing = [c.id for c in cases if c.id not in curve]  # type: ignore[attr-defined]
    if missing:
        raise SystemExit(f"power study: {path}: no calibration for {', '.join(missing)}; calibrate again")
    return {case: {int(k): float(v) for k, v in points.items()} for case, points in curve.items()}


def study_variants(ptx: PtxFn, cases: Sequence[object], curve: dict[str, dict[int, float]]
                   ) -> tuple[dict[str, PtxFn], dict[str, dict[str, int]]]:
    iterations = {label: {c.id: iterations_for(curve[c.id], size) for c in cases}  # type: ignore[attr-defined]
                  for label, size in SIZES.items()}
    variants = {"base": ptx} | {label: chain_of(ptx, iterations[label], VARIANTS.get(label, 0)) for label in SIZES}
    variants |= {label: inert_of(ptx, special) for label, special in EQUALS.items()}
    return variants, iterations


def cmd_run(args: argparse.Namespace) -> None:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    cases = [c for c in p0_cases() if not args.case or c.id in args.case]  # type: ignore[attr-defined]
    ptx = base_loader(args.ptx)
    curve = stored_curve(args.curve, cases) if args.curve else calibrate(ptx, cases, out)
    variants, iterations = study_variants(ptx, cases, curve)
    bundle = write_bundle(out / "study-bundle", cases, variants)
    plan = {"sizes": SIZES, "variants": VARIANTS, "equals": EQUALS, "iterations": iterations, "curve": curve,
            "runs": []}
    gpus = [g for g in args.gpus.split(",") if g] if args.gpus else [None]
    run = 0
    while True:
        spent = time.monotonic() - t0
        last = plan["runs"][-1]["wall_s"] if plan["runs"] else 0.0  # type: ignore[index]
        if run and (spent + 1.1 * last > args.budget_s or run == args.runs):
            break
        result = out / f"study-{run}.json"
        wall = execute(bundle, result, STUDY_LIMITS, gpus[run % len(gpus)])
        plan["runs"].append({"result": result.name, "wall_s": wall, "board": board_of(result),  # type: ignore[attr-defined]
                             "changes": changes(result, [*SIZES, *EQUALS])})
        (out / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
        write_table(out)
        run += 1
    print((out / "table.md").read_text())


# -- the table ------------------------------------------------------------------------------------------------


def summarize(plan: dict, results: Sequence[object] | None = None) -> dict[str, object]:  # type: ignore[type-arg]
    """The study's table as data: the trials within runs per size and of the inert changes, and, given the runs'
    results (:func:`study_results`) from two boards or more, the trials across boards (``cross_board``, else
    None)."""
    if results is not None:
        plan = with_boards(plan, results)
    ts = trials(plan)
    rs = rows(plan, ts)
    half, equal = next(r for r in rs if r["kind"] == f"{0.005:.2%} slower"), rs[-1]
    boards = sorted({str(r.get("board", "")) for r in plan["runs"]} - {""})
    cross = None
    if results is not None and len(boards) >= 2:
        cross = cross_summary(plan, across_boards(results, [*plan["sizes"], *plan["equals"]]))
    return {
        "runs": len(plan["runs"]), "wall_s": [r["wall_s"] for r in plan["runs"]], "rows": rs,
        "boards": len(boards),
        "targets": {  # judged by the bounds: the rate itself, on a few trials, says little
            "0.5% SLOWER: one-sided 95% lower bound >= 95%": (half["slower_lo95"] or 0.0) >= 0.95,  # type: ignore[operator]
            "inert: one-sided 95% upper bound on SLOWER/FASTER <= 5%": (equal["false_hi95"] or 1.0) <= 0.05,  # type: ignore[operator]
            "on at least 2 boards": len(boards) >= 2,
        },
        "per_case": {c: {h: _mean([float(t["change"]) for t in ts if t["case"] == c and t["head"] == h  # type: ignore[arg-type]
                                   and "change" in t]) for h in [*plan["sizes"], *plan["equals"]]}
                     for c in sorted({str(t["case"]) for t in ts})},
        "cross_board": cross,
    }


def with_boards(plan: dict, results: Sequence[object]) -> dict:  # type: ignore[type-arg]
    """The plan with each run's board as its result records it (a plan from before boards were recorded)."""
    return {**plan, "runs": [{**run, "board": run.get("board") or board}
                             for run, board in zip(plan["runs"], boards_of(results))]}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _pct(x: object) -> str:
    return "-" if x is None else f"{float(x):+.2%}"  # type: ignore[arg-type]


def render(summary: dict) -> str:  # type: ignore[type-arg]
    boards = summary.get("boards", 0)
    lines = [f"power study: {summary['runs']} run(s) on {boards or 'an unrecorded number of'} board(s), wall "
             f"{', '.join(f'{w:.0f} s' for w in summary['wall_s'])}", ""] + table(summary["rows"])
    lines += [""] + [f"- {k}: {'met' if v else 'NOT met'}" for k, v in summary["targets"].items()]
    if summary.get("cross_board"):
        lines += render_cross(summary["cross_board"])
    heads = list(next(iter(summary["per_case"].values()), {}))
    lines += ["", "Mean measured change per case and head:", "",
              "| case | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    lines += [f"| {c} | " + " | ".join(_pct(v) for v in by.values()) + " |" for c, by in summary["per_case"].items()]
    return "\n".join(lines) + "\n"


def load_study_result(folder: Path, name: str) -> RunResult:
    """A study run's result, as ``run`` wrote it (``study-N.json``) or as stored (``study-N.json.xz``)."""
    import lzma

    from wfbench_core.record.results import load_result, parse_result

    if (folder / name).is_file():
        return load_result(folder / name)
    stored = folder / f"{name}.xz"
    return parse_result(lzma.decompress(stored.read_bytes()), str(stored))


def study_results(folder: Path, plan: dict[str, Any]) -> list[RunResult]:
    """The result of every run of the plan, in its order."""
    return [load_study_result(folder, run["result"]) for run in plan["runs"]]


def write_table(folder: Path) -> dict:  # type: ignore[type-arg]
    plan = json.loads((folder / "plan.json").read_text())
    summary = summarize(plan, study_results(folder, plan))
    (folder / "table.json").write_text(json.dumps(summary, indent=1) + "\n")
    (folder / "table.md").write_text(render(summary))
    return summary


# -- without a GPU --------------------------------------------------------------------------------------------


def check_sass(base_ptx: str, kernel: str) -> dict[str, dict[str, object]]:
    """What ptxas keeps of each injection: instructions and registers against the base, whether the SASS
    differs, and for the chains, how many dependent multiply-adds the SASS holds."""
    from wfbench_core.compiling.code_identity import identical
    from wfbench_core.compiling.diagnostics import assemble
    from wfbench_core.compiling.diagnostics import summarize as diag_summary

    def facts(ptx: str) -> tuple[object, int]:
        a = assemble(ptx, kernel, ARCH)
        imads = sum(1 for i in a.sass if i.opcode == "IMAD" and f"{LCG[0][1]:#x}" in i.operands)
        return diag_summary(a, kernel, ARCH, 256, 0), imads

    base, _ = facts(base_ptx)
    out = {}
    heads = {f"chain{k}": inject_chain(base_ptx, k) for k in CALIBRATION}
    heads |= {f"chain512v{v}": inject_chain(base_ptx, 512, v) for v in range(1, len(LCG))}
    heads |= {label: inject_inert(base_ptx, special) for label, special in EQUALS.items()}
    for label, ptx in heads.items():
        d, imads = facts(ptx)
        out[label] = {"instructions": d.total - base.total, "registers": (base.registers, d.registers),  # type: ignore[attr-defined]
                      "differs": not identical(base, d), "chain_imads": imads}  # type: ignore[arg-type]
    return out


def cmd_check(args: argparse.Namespace) -> None:
    ptx = base_loader(args.ptx)
    for case in p0_cases():
        for label, f in check_sass(ptx(case, "canonical"), case.wf_kernel).items():  # type: ignore[attr-defined]
            print(f"{case.id:22} {label:10} +{f['instructions']:4} instructions, registers {f['registers'][0]} -> "  # type: ignore[index]
                  f"{f['registers'][1]}, SASS {'differs' if f['differs'] else 'IDENTICAL'}, "  # type: ignore[index]
                  f"{f['chain_imads']} chain multiply-adds")


def cmd_ptx(args: argparse.Namespace) -> None:
    from wfbench_core.case import sha256_text
    from wfbench_core.compiling.compile import compile_warpforth

    args.out.mkdir(parents=True, exist_ok=True)
    for case in p0_cases():
        for config in ("check", "canonical"):
            src = case.render(config)[0]  # type: ignore[attr-defined]
            ptx = compile_warpforth(src, binary=args.warpforthc, case_id=f"{case.id}[{config}]").ptx  # type: ignore[attr-defined]
            (args.out / f"{case.id}.{config}.ptx").write_text(ptx)  # type: ignore[attr-defined]
            (args.out / f"{case.id}.{config}.forth.sha256").write_text(sha256_text(src) + "\n")  # type: ignore[attr-defined]
    print(f"base PTX of the P0 cases in {args.out}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="calibrate, then time the study bundle until the budget is spent (GPU host)")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--ptx", type=Path, default=ROOT / "tests" / "fixtures" / "ptx")
    run.add_argument("--budget-s", type=float, default=400.0)
    run.add_argument("--case", action="append", default=[], help="only this P0 case (repeatable)")
    run.add_argument("--runs", type=int, default=0, help="at most this many study runs (0: as the budget allows)")
    run.add_argument("--gpus", default="", help="the host's GPUs (CUDA_VISIBLE_DEVICES values, comma-separated) "
                                                "the study runs go to in turn [the default GPU]")
    run.add_argument("--curve", type=Path, default=None,
                     help="reuse the calibration-curve.json of an earlier run instead of calibrating")
    table = sub.add_parser("table", help="the table of a study folder")
    table.add_argument("folder", type=Path)
    check = sub.add_parser("check", help="what ptxas keeps of each injection (no GPU)")
    check.add_argument("--ptx", type=Path, default=ROOT / "tests" / "fixtures" / "ptx")
    ptx = sub.add_parser("ptx", help="compile the P0 cases' base PTX with a warpforthc")
    ptx.add_argument("--warpforthc", type=Path, required=True)
    ptx.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.command == "table":
        print(render(write_table(args.folder)))
    else:
        {"run": cmd_run, "check": cmd_check, "ptx": cmd_ptx}[args.command](args)


if __name__ == "__main__":
    main()
