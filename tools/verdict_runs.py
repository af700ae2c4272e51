#!/usr/bin/env python3
"""The verdicts on real runs, on a GPU host: two boards compared, and one base/head run.

    python3 tools/verdict_runs.py boards --out DIR     # a host with two GPUs (two boards)
    python3 tools/verdict_runs.py boards --part base --out DIR; ... --part heads --out DIR   # two hosts in turn
    python3 tools/verdict_runs.py basehead --out DIR   # any GPU host

``boards``: axpy_f64, reduce_sum_f64 and matmul_f64_tiled, base PTX from tests/fixtures/ptx (or ``--ptx``).
One short calibration on GPU 1 finds the chain length that makes axpy_f64 2 % slower
(``tools/power_study.py``). Then three runs: the base on GPU 0; on GPU 1 a head with that +2 % in axpy_f64
and an inert change in reduce_sum_f64 (other SASS, no cost); on GPU 1 a head with inert changes only.
``wfbench compare`` (with ``--fail-on-regression``) and ``wfbench check`` (a history holding the base run)
judge each head against the base: the first must be SLOWER for axpy_f64 and exit 1, the second SAME or
AMBIGUOUS everywhere and exit 0. Every result, every report and ``summary.json`` go to ``--out``.

``basehead``: one base/head run of the P0 cases, the head with a 512-step chain in reduce_sum_f64 (a real
slowdown, uncalibrated) and an inert change in axpy_f64: its wall time and ``wfbench compare``'s table. The
other four heads are byte-identical to base, as in a compiler change that touches two kernels: each is timed
once. With ``--all-changed`` every other head gets an inert change too (other PTX, other SASS, no cost), so
every case is timed on three sides: the longest a P0 base/head run takes.

``suite``: one plain run of every case with stored PTX: per case, whether NVML saw it throttled (such a case
used to leave the trends) and what the throttle rule says now (``wfbench_core/review/throttle.py``).

``identity``: the two kernels of ``tests/test_identical_code.py`` that differ only in static shared memory
(1 KiB, 48 KiB) through ptxas and cuobjdump: same SASS, not identical code, occupancy and blocks per SM.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

import power_study as ps  # noqa: E402

BOARD_CASES = ("axpy_f64", "reduce_sum_f64", "matmul_f64_tiled")


def wfbench(*args: str) -> tuple[int, str]:
    """A wfbench command's exit code and output."""
    proc = subprocess.run([sys.executable, "-m", "wfbench_core", *args], cwd=ROOT, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def per_case(base: ps.PtxFn, changes: dict[str, ps.PtxFn]) -> ps.PtxFn:
    return lambda case, config: changes.get(case.id, base)(case, config)  # type: ignore[attr-defined]


def judge(out: Path, base: Path, head: Path, history: Path) -> dict[str, object]:
    rc_cmp, text_cmp = wfbench("compare", str(base), str(head), "--fail-on-regression")
    rc_chk, text_chk = wfbench("check", str(head), "--history", str(history))
    (out / f"compare-{head.stem}.txt").write_text(text_cmp)
    (out / f"check-{head.stem}.txt").write_text(text_chk)
    return {"compare_exit": rc_cmp, "check_exit": rc_chk,
            "compare": [line for line in text_cmp.splitlines() if line.split(" ")[0] in BOARD_CASES],
            "check": [line for line in text_chk.splitlines() if line.split(" ")[0] in BOARD_CASES]}


def cmd_boards(args: argparse.Namespace) -> None:
    """Two GPUs of one host, or (``--part base`` then ``--part heads``, with the first call's ``base.json`` in
    ``--out``) two hosts one after the other: the base on one board, the two heads on another."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cases = [c for c in ps.p0_cases() if c.id in BOARD_CASES]  # type: ignore[attr-defined]
    base = ps.base_loader(args.ptx)
    walls = {}
    if args.part in ("both", "base"):
        walls["base"] = ps.execute(ps.plain_bundle(out / "base-bundle", cases, base, "board-study base"),
                                   out / "base.json", gpu="0")
        if args.part == "base":
            print(json.dumps({"wall_s": walls}, indent=1))
            return
    gpu = "1" if args.part == "both" else "0"
    axpy = [c for c in cases if c.id == "axpy_f64"]  # type: ignore[attr-defined]
    curve = ps.stored_curve(args.curve, axpy) if args.curve else ps.calibrate(base, axpy, out, gpu=gpu)
    k = ps.iterations_for(curve["axpy_f64"], 0.02)
    slow = per_case(base, {"axpy_f64": ps.chain_of(base, {"axpy_f64": k}),
                           "reduce_sum_f64": ps.inert_of(base, "%tid.x")})
    same = per_case(base, {"axpy_f64": ps.inert_of(base, "%ctaid.x"), "reduce_sum_f64": ps.inert_of(base, "%tid.x")})
    for name, fn in {"slow": slow, "same": same}.items():
        walls[name] = ps.execute(ps.plain_bundle(out / f"{name}-bundle", cases, fn, f"board-study {name}"),
                                 out / f"{name}.json", gpu=gpu)
    history = out / "history"
    rc, text = wfbench("history", "add", str(out / "base.json"), "--history", str(history))
    if rc != 0:
        raise SystemExit(f"history add: {text}")
    runs = ("base", "slow", "same")
    summary = {"chain_iterations_for_2pct": k, "wall_s": walls,
               "boards": {n: json.loads((out / f"{n}.json").read_text())["environment"]["gpu_uuid"] for n in runs},
               "slow": judge(out, out / "base.json", out / "slow.json", history),
               "same": judge(out, out / "base.json", out / "same.json", history)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


def cmd_basehead(args: argparse.Namespace) -> None:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cases = ps.p0_cases()
    base = ps.base_loader(args.ptx)
    changes = {c.id: ps.inert_of(base, "%tid.x") for c in cases} if args.all_changed else {  # type: ignore[attr-defined]
        "axpy_f64": ps.inert_of(base, "%tid.x")}
    head = per_case(base, {**changes, "reduce_sum_f64": ps.chain_of(base, {"reduce_sum_f64": 512})})
    bundle = ps.write_bundle(out / "bundle", cases, {"base": base, "head": head})
    t0 = time.monotonic()
    wall = ps.execute(bundle, out / "bh.json")
    rc, text = wfbench("compare", str(out / "bh.json"), "--fail-on-regression")
    (out / "compare.txt").write_text(text)
    result = json.loads((out / "bh.json").read_text())
    print(text)
    print(json.dumps({"execute_wall_s": wall, "result_wall_s": result.get("wall_s"), "compare_exit": rc,
                      "total_s": time.monotonic() - t0}, indent=1))


def cmd_suite(args: argparse.Namespace) -> None:
    """Every case with stored PTX, one plain run: per case, throttled or not, and what the throttle rule says."""
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.results import load_result
    from wfbench_core.review.throttle import judge_throttle

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cases = [c for c in Registry.load().select(()) if (args.ptx / f"{c.id}.canonical.ptx").exists()]
    wall = ps.execute(ps.plain_bundle(out / "bundle", cases, ps.base_loader(args.ptx), "suite"), out / "suite.json")
    rows = {}
    for c in load_result(out / "suite.json").cases:
        if c.timing is None:
            continue
        call = judge_throttle(c.timing)
        nv = c.timing.nvml
        rows[c.id] = {"throttled": c.timing.throttled, "leaves_trends": call.leaves_trends, "why": call.why,
                      "dipped": call.dipped, "clean": call.clean, "gap": c.timing.gap,
                      "sm_mhz": [nv.sm_mhz_min, nv.sm_mhz_max] if nv else None,
                      "reasons": list(nv.reasons) if nv else []}
    summary = {"wall_s": wall, "throttled": sum(r["throttled"] for r in rows.values()),
               "left_out_before": sum(r["throttled"] for r in rows.values()),
               "left_out_now": sum(r["leaves_trends"] for r in rows.values()), "cases": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


SHARED_PTX = ROOT / "tests" / "fixtures" / "shared_stage.ptx.template"  # {threads}, {shared}: str.format


def cmd_identity(args: argparse.Namespace) -> None:
    """Two kernels that differ only in static shared memory (1 KiB, 48 KiB), through ptxas and cuobjdump."""
    from wfbench_core.compiling.code_identity import identical, sass_note
    from wfbench_core.compiling.diagnostics import diagnose

    template = SHARED_PTX.read_text()
    sides = {n: diagnose(template.format(threads=256, shared=n), "stage", "sm_90", 256, 0) for n in (1024, 49152)}
    a, b = sides[1024], sides[49152]
    print(json.dumps({"same_sass": a.sass_sha256 == b.sass_sha256, "identical_code": identical(a, b),
                      "note": sass_note(a, b), **{str(n): {"shared_static": d.shared_static,
                                                           "res_usage_shared": d.resources.get("SHARED"),
                                                           "occupancy": d.occupancy, "blocks_per_sm": d.blocks_per_sm}
                                                       for n, d in sides.items()}}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("boards", "basehead", "suite"):
        p = sub.add_parser(name)
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--ptx", type=Path, default=ROOT / "tests" / "fixtures" / "ptx")
    sub.choices["boards"].add_argument("--part", choices=("both", "base", "heads"), default="both",
                                       help="both: two GPUs of this host; base, then heads: two hosts in turn")
    sub.choices["boards"].add_argument("--curve", type=Path, default=None,
                                       help="reuse a power study's calibration-curve.json instead of calibrating")
    sub.choices["basehead"].add_argument("--all-changed", action="store_true",
                                         help="an inert change in every head kernel: none is timed once")
    sub.add_parser("identity")
    args = ap.parse_args()
    {"boards": cmd_boards, "basehead": cmd_basehead, "suite": cmd_suite, "identity": cmd_identity}[args.command](args)


if __name__ == "__main__":
    main()
