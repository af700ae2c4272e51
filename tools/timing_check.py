#!/usr/bin/env python3
"""Exercise every GPU path of the timer on one GPU host and print the figures timing is judged by.

    python3 tools/timing_check.py [--out DIR] [--cases ID,ID]

Runs from a plain copy of the repository (wfbench need not be installed: the built-in plugins are
loaded by name) on a host with numba-cuda, cuda-core, nvidia-ml-py and, for the nvbench parts,
cuda-bench. WarpForth PTX comes from tests/fixtures/ptx, so no warpforthc is needed. Steps:

1. the P0 suite in the default mode (events, placements, adaptive stopping, NVML): per case the gap,
   its 95 % interval, within/between-placement noise, pairs and why sampling stopped, short re-takes,
   NVML clocks/power/throttle; the suite's wall time; whether the host is depressed;
2. A/A on two cases: within each pair, the first side's sample minus the second's (clean rounds make it
   ~0), and each side's median excess when it went first;
3. small sizes: events, graph and cold-l2 against nvbench's batch and cold figures;
4. the canonical P0 suite against nvbench, both timers on the same buffers (per-kernel and gap agreement,
   target <= 1 %);
5. with --processes N: the suite in N fresh processes (gap spread, interval coverage of the N-run median).

Each step's result is written as JSON under --out as well.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import attrs
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wfbench_core.discover.registry import Registry  # noqa: E402
from wfbench_core.stats import position_effect  # noqa: E402


def builtin_plugins() -> list[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [ep.split(":")[0] for ep in meta["project"]["entry-points"]["wfbench"].values()]


def first_side_excess_us(timing) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Median per-sample excess (us) of a side when it went first over when it went second."""
    out = {}
    for label, stats in (("wf", timing.warpforth), ("cuda", timing.cuda)):
        x = np.asarray(stats.samples_us) * timing.launches(stats)
        first = np.array([o == label for o in timing.order])
        if first.any() and (~first).any():
            out[label] = float(np.median(x[first]) - np.median(x[~first]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("timing-check"))
    ap.add_argument("--cases", default="", help="comma-separated case IDs (default: every P0 case)")
    ap.add_argument("--skip-nvbench", action="store_true")
    ap.add_argument("--processes", type=int, default=0, metavar="N",
                    help="then run the suite in N fresh processes and print the between-run table "
                         "(gap spread, whether each run's interval holds the N-run median); ~1 min each")
    ap.add_argument("--processes-only", action="store_true", help="with --processes: skip steps 1 to 4")
    ap.add_argument("--suite-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    from wfbench_core.gpu.nvml import describe
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import TimingProtocol, write_result
    from wfbench_core.run.executor import execute
    from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

    reg = Registry.load(plugins=builtin_plugins())
    ids = [c for c in args.cases.split(",") if c] or [c.id for c in reg.select(priorities=("P0",))]
    bundle = args.out / "bundle"
    bundle_from_ptx([reg.case(c) for c in ids], bundle, ptx_dir_loader(ROOT / "tests" / "fixtures" / "ptx"))
    t_all = time.perf_counter()
    if args.processes and args.processes_only:
        between_runs(args, ids)
        print(f"\ntotal {time.perf_counter() - t_all:.0f} s")
        return 0

    # 1. the suite, default protocol
    print(f"== 1. P0 suite, default protocol {TimingProtocol()}", flush=True)
    run = execute(bundle, registry=reg, request=ExecuteRequest(protocol=TimingProtocol()),
                  progress=lambda m: print("  ", m, flush=True))
    write_result(run, args.out / "suite.json")
    print(f"{'case':22} {'gap':>8} {'95% interval':>19} {'hw%':>6} {'within':>7} {'between':>7} {'n':>3} "
          f"{'P':>2} {'B':>2} {'stop':>7} {'retk':>4} {'gate':>4} {'thr':>3}  nvml")
    for c in run.cases:
        t = c.timing
        if t is None:
            print(f"{c.id:22} {c.status}: {c.message}")
            continue
        hw = (np.log(t.gap_hi / t.gap_lo) / 2 * 100) if t.gap_lo and t.gap_hi else float("nan")
        print(f"{c.id:22} {t.gap:8.4f} [{t.gap_lo or 0:8.4f}, {t.gap_hi or 0:8.4f}] {hw:6.3f} "
              f"{(t.within_placement_noise or 0):7.4%} {(t.between_placement_noise or 0):7.4%} "
              f"{t.warpforth.n:3d} {t.placements:2d} {t.buffer_sets:2d} {t.stop_reason:>7} {t.short_retakes:4d} "
              f"{t.gate_retakes:4d} "
              f"{'yes' if t.throttled else 'no':>3}  {describe(t.nvml)}")
        small = min(min(s.samples_us) * t.launches(s) for s in (t.warpforth, t.cuda)) / 1000
        print(f"{'':22} launches/sample wf {t.launches(t.warpforth)}, cuda {t.launches(t.cuda)}, shortest sample "
              f"{small:.2f} ms "
              f"(min_sample_ms {run.protocol.min_sample_ms:g}; exact when retk = 0); case wall "
              f"{sum(attrs.asdict(c.costs).values()) if c.costs else 0:.1f} s")
    if args.suite_only:
        return 0
    e = run.environment
    print(f"suite wall {run.wall_s:.1f} s; depressed host: {e.depressed_host} {e.depressed_why}; "
          f"power limit {e.power_limit_w} W (default {e.default_power_limit_w} W); copy {e.copy_gbps or 0:.0f} GB/s")

    # 2. A/A: first-side excess
    aa_ids = [c for c in ("axpy_f64", "reduce_sum_f64") if c in ids] or ids[:1]
    print(f"\n== 2. A/A, first side's per-sample excess over the second (us), {', '.join(aa_ids)}", flush=True)
    aa = execute(bundle, registry=reg, request=ExecuteRequest(protocol=TimingProtocol(), mode="aa", case_ids=tuple(aa_ids)))
    write_result(aa, args.out / "aa.json")
    for c in aa.cases:
        if c.timing:
            ex = first_side_excess_us(c.timing)
            print(f"{c.id:22} gap {c.timing.gap:.4f}  first-side excess: "
                  + ", ".join(f"{k} {v:+.2f} us" for k, v in ex.items()))
            pe = position_effect(c.timing)
            sample_us = c.timing.cuda.median_us * c.timing.launches_per_sample
            print(f"{'':22} within each pair, first minus second: median {pe.median_us:+.2f} us "
                  f"[{pe.lo_us:+.2f}, {pe.hi_us:+.2f}] ({pe.median_us / sample_us:+.4%} of a sample); first slower "
                  f"in {pe.first_slower} of {pe.pairs} pairs")

    if not args.skip_nvbench:
        crosschecks(args, bundle, ids)
    if args.processes:
        between_runs(args, ids)
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s")
    return 0


def between_runs(args: argparse.Namespace, ids: list[str]) -> None:
    """The suite in N fresh processes: per case the gaps, their spread, and interval coverage."""
    from wfbench_core.record.results import load_result
    from wfbench_core.stats import placement_gaps

    print(f"\n== 5. the suite in {args.processes} fresh processes", flush=True)
    runs = []
    for i in range(args.processes):
        out = args.out / f"process{i}"
        subprocess.run([sys.executable, __file__, "--out", str(out), "--cases", ",".join(ids), "--suite-only"],
                       check=True, stdout=subprocess.DEVNULL)
        runs.append(load_result(out / "suite.json"))
        print(f"  process {i}: wall {runs[-1].wall_s:.1f} s", flush=True)
    for cid in ids:
        ts = [r.case(cid).timing for r in runs]
        if any(t is None for t in ts):
            print(f"{cid:22} not timed in every process")
            continue
        gaps = np.array([t.gap for t in ts])
        med = float(np.median(gaps))
        covered = sum(1 for t in ts if t.gap_lo is not None and t.gap_lo <= med <= t.gap_hi)
        print(f"{cid:22} gaps {' '.join(f'{g:.4f}' for g in gaps)}  spread {(gaps.max() / gaps.min() - 1):.3%}  "
              f"median {med:.4f} in {covered}/{len(ts)} intervals")
        hws = [np.log(t.gap_hi / t.gap_lo) / 2 for t in ts if t.gap_lo and t.gap_hi]
        paired = np.array([np.exp(np.log(placement_gaps(t.warpforth.samples_us, t.cuda.samples_us,
                                                        t.placement_of)).mean()) for t in ts])
        own = sum(1 for t in ts if t.gap_lo is not None and t.gap_lo <= t.gap <= t.gap_hi)
        print(f"{'':22} paired estimate (geometric mean of the per-placement gaps) spread "
              f"{(paired.max() / paired.min() - 1):.3%}; the run's own gap inside its interval in {own}/{len(ts)}")
        print(f"{'':22} pairs {' '.join(str(t.warpforth.n) for t in ts)}; sets {ts[0].buffer_sets}; half-width "
              f"{min(hws):.3%}-{max(hws):.3%}; between-placement sd "
              f"{np.median([t.between_placement_noise or 0 for t in ts]):.3%}; gate re-takes "
              f"{sum(t.gate_retakes for t in ts)}")


def crosschecks(args: argparse.Namespace, bundle: Path, ids: list[str]) -> None:
    from wfbench_core.record.results import TIMING_MODES

    # nvbench keeps every benchmark registered for the life of a process: one process per crosscheck
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "WFBENCH_PLUGINS": ",".join(builtin_plugins()), "PYTHONPATH": path}
    cli = [sys.executable, "-m", "wfbench_core", "crosscheck", str(bundle), "--quiet"]

    # 3. small sizes: the three modes against nvbench's batch and cold figures
    small_ids = [c for c in ("axpy_f64", "scale_i64", "reduce_sum_f64") if c in ids] or ids[:1]
    print(f"\n== 3. small ('check') sizes: modes {', '.join(TIMING_MODES)} vs nvbench, {', '.join(small_ids)}",
          flush=True)
    cmd = cli + ["--small", "--samples", "10", "--tolerance", "1", "--nvbench-json", str(args.out / "nvbench-small.json")]
    cmd += [a for c in small_ids for a in ("--case", c)] + [a for m in TIMING_MODES for a in ("--mode", m)]
    subprocess.run(cmd, env=env, check=False)

    # 4. the canonical P0 suite against nvbench: both timers on the same buffers in one process, then
    # nvbench against step 1's stored run (many placements: the placement effect is in that comparison)
    for title, extra, name in (("same process, same buffers", [], "crosscheck"),
                               ("wfbench medians from step 1's stored run", ["--against", str(args.out / "suite.json")],
                                "crosscheck-against")):
        print(f"\n== 4. canonical P0 suite vs nvbench ({title})", flush=True)
        cmd = cli + extra + ["--nvbench-json", str(args.out / f"{name}-nvbench.json"), "--json"]
        cmd += [a for c in ids for a in ("--case", c)]
        r = subprocess.run(cmd, env=env, check=False, capture_output=True, text=True)
        (args.out / f"{name}.json").write_text(r.stdout)
        sys.stderr.write(r.stderr[-2000:])
        print_crosscheck(r.stdout, r.returncode)


def print_crosscheck(text: str, rc: int) -> None:
    import json

    from wfbench_core.studies import crosscheck as xc

    try:
        data = json.loads(text)
        print(f"{'case':22} {'side':5} {'wfbench us':>12} {'nvbench us':>12} {'diff':>8}")
        for k in data["kernels"]:
            mode = next(iter(k["wfbench_us"]))
            print(f"{k['case']:22} {k['side']:5} {k['wfbench_us'][mode]:12.3f} "
                  f"{k['nvbench']['batch_mean_us'] or float('nan'):12.3f} {k['diff'][mode]:+8.3%}")
        for g in data["gaps"]:
            print(f"{g['case']:22} gap wfbench {g['wfbench_gap']:.4f} nvbench {g['nvbench_gap'] or float('nan'):.4f} "
                  f"diff {g['diff'] or float('nan'):+.3%}")
        print(f"worst per-kernel disagreement {data['worst']:.3%}; within {xc.DEFAULT_TOLERANCE:.0%}: {data['within']}")
    except (ValueError, KeyError, TypeError) as exc:
        print(f"crosscheck gave no JSON ({exc}); exit status {rc}")


if __name__ == "__main__":
    sys.exit(main())
