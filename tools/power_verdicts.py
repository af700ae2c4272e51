"""What the power study (``tools/power_study.py``) counts: ``wfbench compare``'s verdict on each head of each
case, within a run and across boards, the trials those verdicts make, and each rate with its one-sided 95 %
Clopper-Pearson bound.

* **Within a run**: a head against the base of the same base/head run (``compare_labels``: the same rounds,
  the same CUDA samples).
* **Across boards**: the base of a run on one board against a head of a run on another board, for every ordered
  pair of runs on different boards. Each label is taken as a run of that compiler alone
  (:func:`wfbench_core.review.base_head.one_compiler`) and the two are compared as ``wfbench compare BASE HEAD``
  compares two result files (``compare_runs``, no history): the boards differ, so each run's board and process
  components are added to the interval (the one measured for the GPU model,
  :data:`wfbench_core.review.evidence.MEASURED_BOARD_SD`, and its process companion until a history measures
  them).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from wfbench_core.review import verdicts

LEVEL = 0.95  # the one-sided confidence of every rate's bound


def case_changes(cmp: Any) -> dict[str, dict[str, object]]:
    """Per case of one comparison (a ``RunComparison``): the change of the gap, its interval, the verdict and
    what the WarpForth code says, or why it was not compared."""
    out: dict[str, dict[str, object]] = {}
    for c in cmp.cases:
        if c.verdict is None or c.gap is None:
            out[c.case_id] = {"verdict": "not compared", "reason": c.reason}
            continue
        out[c.case_id] = {"verdict": c.verdict.verdict, "label": c.verdict.label, "change": c.verdict.change,
                          "lo": c.verdict.lo, "hi": c.verdict.hi, "margin": c.verdict.margin, "code": c.sass}
    return out


def within_run(result: Any, heads: Sequence[str]) -> dict[str, dict[str, dict[str, object]]]:
    """Per head label and case of one base/head run: the head against the run's base (compare's rule)."""
    from wfbench_core.review.compare import compare_labels

    return {head: case_changes(compare_labels(result, "base", head)) for head in heads}


def boards_of(results: Sequence[Any]) -> list[str]:
    """The board (GPU UUID) each run was timed on ("" where unrecorded)."""
    return [r.environment.gpu_uuid for r in results]


def across_boards(results: Sequence[Any], heads: Sequence[str]) -> list[dict[str, object]]:
    """The base of each run against each head of every run on another board (an ordered pair of runs per entry:
    ``base_run``, ``head_run``, their boards and per head label and case what compare said). Runs of an
    unrecorded board are left out: whether they are another board is unknown."""
    from wfbench_core.review.base_head import one_compiler
    from wfbench_core.review.compare import compare_runs

    boards = boards_of(results)
    out: list[dict[str, object]] = []
    for i, j in itertools.permutations(range(len(results)), 2):
        if not boards[i] or not boards[j] or boards[i] == boards[j]:
            continue
        base = one_compiler(results[i], "base")
        changes = {head: case_changes(compare_runs(base, one_compiler(results[j], head), base_name=f"run {i} base",
                                                   head_name=f"run {j} {head}")) for head in heads}
        out.append({"base_run": i, "head_run": j, "base_board": boards[i], "head_board": boards[j],
                    "changes": changes})
    return out


def injection(plan: dict[str, Any], head: str, case: str) -> tuple[object, ...]:
    """What a head injected into a case: its size's chain (steps, variant) or its inert register; heads with the
    same injection are the same bytes (a plan from before VARIANTS ran every chain as variant 0)."""
    if head in plan["sizes"]:
        return ("chain", plan["iterations"][head][case], plan.get("variants", {}).get(head, 0))
    return ("inert", plan["equals"].get(head, head))


def _trials(plan: dict[str, Any], sources: Iterable[tuple[tuple[int, ...], dict[str, object], Any]]
            ) -> list[dict[str, object]]:
    """One trial per source (a run, or an ordered pair of runs), case and distinct injection: a head whose
    injection is byte-identical to an earlier head's of the same source is the same trial, counted once."""
    out, seen = [], set()
    for where, info, changes in sources:
        for head, by_case in changes.items():
            nominal = plan["sizes"].get(head)
            for case, got in by_case.items():
                key = (where, case, injection(plan, head, case))
                if key in seen:
                    continue
                seen.add(key)
                out.append({**info, "head": head, "case": case, "nominal": nominal, **got})
    return out


def trials(plan: dict[str, Any]) -> list[dict[str, object]]:
    """The trials within runs: what each head was (a size, or an inert change), and what compare said."""
    return _trials(plan, (((n,), {"run": n, "board": run.get("board", "")}, run["changes"])
                          for n, run in enumerate(plan["runs"])))


def cross_trials(plan: dict[str, Any], cross: Sequence[dict[str, Any]]) -> list[dict[str, object]]:
    """The trials across boards (:func:`across_boards`): one per ordered pair of runs, case and distinct
    injection."""
    return _trials(plan, (((e["base_run"], e["head_run"]),
                           {k: e[k] for k in ("base_run", "head_run", "base_board", "head_board")}, e["changes"])
                          for e in cross))


def bound(k: int, n: int, *, upper: bool = False, level: float = LEVEL) -> float | None:
    """The one-sided ``level`` Clopper-Pearson bound of a rate of k in n: the lower one (the rate is at least
    this), or the upper one; None without trials."""
    if not n:
        return None
    from scipy.stats import beta

    if upper:
        return 1.0 if k == n else float(beta.ppf(level, k + 1, n - k))
    return 0.0 if k == 0 else float(beta.ppf(1 - level, k, n - k + 1))


def row(name: str, ts: list[dict[str, object]]) -> dict[str, object]:
    """One line of a table: the trials, each verdict's count, the SLOWER rate with its lower bound, the false
    verdicts (SLOWER or FASTER) with their upper bound, and the measured change."""
    counts = {v: sum(1 for t in ts if t["verdict"] == v) for v in verdicts.VERDICTS}
    measured = [float(t["change"]) for t in ts if "change" in t]  # type: ignore[arg-type]
    false = counts[verdicts.SLOWER] + counts[verdicts.FASTER]
    return {"kind": name, "trials": len(ts), **counts,
            "slower_rate": counts[verdicts.SLOWER] / len(ts) if ts else None,
            "slower_lo95": bound(counts[verdicts.SLOWER], len(ts)),
            "false": false, "false_hi95": bound(false, len(ts), upper=True),
            "mean_change": sum(measured) / len(measured) if measured else None,
            "min_change": min(measured, default=None), "max_change": max(measured, default=None),
            "not_compared": sum(1 for t in ts if t["verdict"] == "not compared")}


INERT = "inert (SASS differs)"


def rows(plan: dict[str, Any], ts: list[dict[str, object]]) -> list[dict[str, object]]:
    """A row per size, then one of the inert changes."""
    out = [row(f"{size:.2%} slower", [t for t in ts if t["nominal"] == size])
           for size in sorted(set(plan["sizes"].values()))]
    return out + [row(INERT, [t for t in ts if t["head"] in plan["equals"]])]


def cross_summary(plan: dict[str, Any], cross: Sequence[dict[str, Any]]) -> dict[str, object]:
    """The trials across boards as rows, and the targets judged by the bounds."""
    rs = rows(plan, cross_trials(plan, cross))
    half = next(r for r in rs if r["kind"] == f"{0.005:.2%} slower")
    inert = rs[-1]
    return {"pairs": len(cross), "boards": len({e["base_board"] for e in cross}), "rows": rs,
            "targets": {
                "0.5% across two boards SLOWER: one-sided 95% lower bound >= 90%":
                    (half["slower_lo95"] or 0.0) >= 0.90,  # type: ignore[operator]
                "inert across boards: one-sided 95% upper bound on SLOWER/FASTER <= 5%":
                    (inert["false_hi95"] or 1.0) <= 0.05,  # type: ignore[operator]
            }}


def _pct(x: object) -> str:
    return "-" if x is None else f"{float(x):+.2%}"  # type: ignore[arg-type]


def table(rs: Sequence[dict[str, Any]]) -> list[str]:
    """The Markdown table of rows: a SLOWER rate for a slowdown, false verdicts for the inert changes."""
    lines = ["| head | trials | SLOWER | FASTER | SAME | AMBIGUOUS | SLOWER rate (95% lower bound) | "
             "SLOWER/FASTER (95% upper bound) | measured change: mean (min, max) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rs:
        inert = str(r["kind"]).startswith("inert")
        rate = "-" if r["slower_rate"] is None or inert else f"{r['slower_rate']:.1%} (>= {r['slower_lo95']:.1%})"
        false = "-" if r["false_hi95"] is None or not inert else f"{r['false']} (<= {r['false_hi95']:.1%})"
        lines.append(f"| {r['kind']} | {r['trials']} | {r['slower']} | {r['faster']} | {r['same']} "
                     f"| {r['ambiguous']} | {rate} | {false} | {_pct(r['mean_change'])} ({_pct(r['min_change'])}, "
                     f"{_pct(r['max_change'])}) |")
    return lines


def render_cross(cross: dict[str, Any]) -> list[str]:
    """The cross-board table and its targets."""
    return (["", f"Across boards: the base of a run on one board against each head of a run on another, "
                 f"{cross['pairs']} ordered pair(s) of runs on {cross['boards']} boards, judged as `wfbench compare "
                 f"BASE HEAD` judges two runs of different boards (each run's board and process components in the "
                 f"interval). The trials share their runs (every base meets every head of the other boards' runs): "
                 f"they are not independent, and the bounds assume they are.", ""]
            + table(cross["rows"]) + [""]
            + [f"- {k}: {'met' if v else 'NOT met'}" for k, v in cross["targets"].items()])
