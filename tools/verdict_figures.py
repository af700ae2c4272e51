#!/usr/bin/env python3
"""Simulate wfbench's intervals and verdicts with the real functions, and write the figures the docs quote.

    python3 tools/verdict_figures.py [--trials 1000] [--out docs/figures/verdicts.json]

Two simulations, each with a fixed seed, through the functions ``compare`` and the executor use:

1. **--repeat coverage.** K = 6 fresh processes of 30 placements of 2 pairs each; every process moves the
   gap by its own factor (standard deviation ``process_sd``), every placement by its own (0.1 %), every sample
   by its own noise (0.05 %). How often the 95 % interval of the pooled gap holds the true gap (the one the
   population of processes is centred on): the interval over placements alone (``stats.gap_interval``, what
   ``--repeat`` stored before) against the one that resamples processes, then placements
   (``stats.run_gap_interval``).
2. **Verdicts on one base/head run.** Placements of a few pairs (30 of 2 as the default protocol, and 6 of
   10); the CUDA side and both WarpForth builds move together by 1 % per placement, the gap by 0.2 % per
   placement, and a changed build's gap by a further ``interaction`` per placement (0.1 %, 0.6 %: new code
   meets each placement its own way); samples have 0.05 % noise.
   The true change is 0 (new code, no cost) or +0.5 %. The verdicts of the real rule (the change's
   interval, placements resampled: ``stats.change_in_run`` and ``verdicts.judge``) against two broken ones:
   the same rule with pairs resampled (blind to placements, as ``compare`` was), and the point estimate
   held against the margin without an interval.

The test suite runs smaller versions of both (``tests/test_verdicts.py``) and checks that the figures the
docs quote are the ones this writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wfbench_core import stats  # noqa: E402
from wfbench_core.review import verdicts

OUT = ROOT / "docs" / "figures" / "verdicts.json"
PROCESSES, PLACEMENTS, PAIRS = 6, 30, 2
GAP = 1.125


def repeat_run(rng: np.random.Generator, process_sd: float, placement_sd: float = 0.001, noise: float = 0.0005
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One --repeat run as the executor pools it: samples of K processes, placements numbered per process."""
    n = PROCESSES * PLACEMENTS * PAIRS
    proc = np.repeat(np.arange(PROCESSES), PLACEMENTS * PAIRS)
    place = np.tile(np.repeat(np.arange(PLACEMENTS), PAIRS), PROCESSES)
    where = proc * stats.PROCESS_STRIDE + place
    unit = proc * PLACEMENTS + place
    p_eff = np.exp(rng.normal(0.0, process_sd, PROCESSES))[proc]
    u_eff = np.exp(rng.normal(0.0, placement_sd, PROCESSES * PLACEMENTS))[unit]
    cu = 60.0 * (1.0 + noise * rng.standard_normal(n))
    wf = cu * GAP * p_eff * u_eff * (1.0 + noise * rng.standard_normal(n))
    return wf, cu, where


def repeat_coverage(process_sd: float, trials: int, seed: int = 11) -> dict[str, float]:
    """Coverage of the true gap by the placements-only interval and by the processes-then-placements one."""
    rng = np.random.default_rng(seed)
    flat = hier = 0
    for _ in range(trials):
        wf, cu, where = repeat_run(rng, process_sd)
        lo, hi = stats.gap_interval(wf, cu, where)  # type: ignore[misc]
        flat += lo <= GAP <= hi
        (lo, hi), method = stats.run_gap_interval(wf, cu, where)  # type: ignore[misc]
        assert method == stats.HIERARCHICAL_INTERVAL
        hier += lo <= GAP <= hi
    return {"process_sd": process_sd, "trials": trials, "placements_only": flat / trials,
            "processes_then_placements": hier / trials}


def base_head_run(rng: np.random.Generator, change: float, interaction: float, placements: int = PLACEMENTS,
                  pairs: int = PAIRS) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One base/head run: (base, head, CUDA, placement of each pair)."""
    n = placements * pairs
    where = np.repeat(np.arange(placements), pairs)
    both = np.exp(rng.normal(0.0, 0.01, placements))[where]
    gap = np.exp(rng.normal(0.0, 0.002, placements))[where]
    new = np.exp(rng.normal(0.0, interaction, placements))[where]
    cu = 100.0 * both * (1.0 + 0.0005 * rng.standard_normal(n))
    base = cu * GAP * gap * (1.0 + 0.0005 * rng.standard_normal(n))
    head = cu * GAP * gap * new * (1.0 + change) * (1.0 + 0.0005 * rng.standard_normal(n))
    return base, head, cu, where


def real_rule(base: np.ndarray, head: np.ndarray, cu: np.ndarray, where: np.ndarray, margin: verdicts.Margin) -> str:
    est = stats.change_in_run(base, head, cu, cu, where)
    assert est is not None
    return verdicts.judge(est, margin).verdict


def pairs_rule(base: np.ndarray, head: np.ndarray, cu: np.ndarray, where: np.ndarray, margin: verdicts.Margin) -> str:
    """Broken on purpose: the same rule on an interval that resamples single pairs."""
    return real_rule(base, head, cu, np.arange(base.size), margin)


def point_rule(base: np.ndarray, head: np.ndarray, cu: np.ndarray, where: np.ndarray, margin: verdicts.Margin) -> str:
    """Broken on purpose: the point estimate against the margin, no interval."""
    change = float(np.median(head) / np.median(base)) - 1.0
    return verdicts.rule(change, change, margin)


RULES: dict[str, Callable[..., str]] = {"real": real_rule, "pairs resampled": pairs_rule, "point estimate": point_rule}


SCENARIOS = {  # name: (placements, pairs, interaction)
    "default protocol": (PLACEMENTS, PAIRS, 0.001),
    "few placements": (6, 10, 0.006),
}


def verdict_rates(rule: Callable[..., str], change: float, scenario: str, trials: int, seed: int = 5
                  ) -> dict[str, float]:
    """The share of trials given each verdict."""
    placements, pairs, interaction = SCENARIOS[scenario]
    rng = np.random.default_rng(seed)
    margin = verdicts.margin_of()
    counts = dict.fromkeys(verdicts.VERDICTS, 0)
    for _ in range(trials):
        counts[rule(*base_head_run(rng, change, interaction, placements, pairs), margin)] += 1
    return {k: v / trials for k, v in counts.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    figures = {
        "repeat": {"processes": PROCESSES, "placements": PLACEMENTS, "pairs": PAIRS,
                   "coverage": [repeat_coverage(sd, args.trials) for sd in (0.0, 0.0005, 0.001)]},
        "base_head": {"margin": verdicts.DEFAULT_MARGIN, "scenarios": {
            scenario: {"placements": p, "pairs": m, "interaction": i, "rates": {
                name: {f"{change:+.1%}": verdict_rates(rule, change, scenario, args.trials) for change in (0.0, 0.005)}
                for name, rule in RULES.items()}}
            for scenario, (p, m, i) in SCENARIOS.items()}},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
