"""Exports of a result for other tools.

``github-action-benchmark``: the ``customSmallerIsBetter`` input of benchmark-action/github-action-benchmark,
a JSON array of ``{"name", "unit", "value", "range", "extra"}``; ``name``, ``unit``, ``range`` and ``extra``
are strings, ``value`` a number. Per stable, correct case:

* ``<case>/v<version>/warpforth`` and ``<case>/v<version>/cuda``: median kernel time (``us``); ``range`` is
  the MAD of the samples;
* ``<case>/v<version>/gap``: median WarpForth / median CUDA (``x CUDA``); ``range`` is the MAD of the
  per-pair ratios;

and ``suite/v<suite version>/geomean-gap/P0``: the geometric mean of the gaps of the stable P0 cases.
``extra`` carries the GPU, the toolchain and the source hashes, so a point can be traced to what was
measured. The action keys its charts by name only: give each GPU model its own action ``name:``.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from scipy import stats as sps

from wfbench_core.errors import WfbenchError
from wfbench_core.results import MODE_AA, OK, CaseResult, RunResult
from wfbench_core.stats import geomean

FORMATS = ("github-action-benchmark",)
GAP_UNIT = "x CUDA"
TIME_UNIT = "us"


def _platform_lines(result: RunResult) -> list[str]:
    e, c = result.environment, result.cuda_compiler
    return [
        f"gpu: {e.gpu_name} (cc {e.compute_capability}, {e.sm_count} SMs), driver {e.driver_version}",
        f"cuda: {c.kind} {c.version} {' '.join(c.flags)}".rstrip(),
    ]


def _case_lines(result: RunResult, case: CaseResult, label: str) -> list[str]:
    wfc = result.compilers.get(label, result.warpforthc)
    assert case.timing is not None
    t = case.timing
    lines = _platform_lines(result) + [
        f"warpforthc: {wfc.version}" + (f" (sha256 {wfc.binary_sha256[:12]})" if wfc.binary_sha256 else ""),
        f"fingerprint: {case.fingerprint[:16]}",
        f"cuda source: {case.cuda_source_sha256[:16]}",
        f"warpforth source: {case.warpforth_source_sha256[:16]}",
        f"samples: {min(t.warpforth.n, t.cuda.n)} x {t.launches_per_sample} launches",
        f"noise (MAD/median): wf {t.warpforth.noise:.2%}, cuda {t.cuda.noise:.2%}",
    ]
    if result.source.git_commit:
        lines.append(f"commit: {result.source.git_commit}")
    return lines


def _gap_mad(case: CaseResult) -> float:
    """MAD of the per-pair ratios WarpForth/CUDA: the noise of the gap."""
    assert case.timing is not None
    wf = np.asarray(case.timing.warpforth.samples_us, dtype=np.float64)
    cu = np.asarray(case.timing.cuda.samples_us, dtype=np.float64)
    return float(sps.median_abs_deviation(wf / cu, scale=1.0)) if wf.size and wf.size == cu.size else 0.0


def _num(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}") if math.isfinite(x) else x


def github_action_benchmark(result: RunResult, *, label: Optional[str] = None, where: str = "result") \
        -> list[dict[str, Any]]:
    """The ``customSmallerIsBetter`` entries of one run (stable, correct cases only)."""
    if result.mode == MODE_AA or any(c.mode == MODE_AA for c in result.cases):
        raise WfbenchError(f"{where}: an A/A run (CUDA against itself) measures the method's floor, not WarpForth; "
                           f"export paired runs")
    labels = sorted({c.compiler_label for c in result.cases} - {""})
    if labels and label is None:
        raise WfbenchError(f"{where}: a base/head run ({', '.join(labels)}); pick one with --label")
    want = label or ""
    if want and want not in labels:
        raise WfbenchError(f"{where}: no compiler label {want!r} (labels: {', '.join(labels) or 'none'})")
    cases = [c for c in result.cases if c.compiler_label == want and c.status == OK and c.timing is not None]
    entries: list[dict[str, Any]] = []
    for c in cases:
        t = c.timing
        assert t is not None
        extra = "\n".join(_case_lines(result, c, want))
        stem = f"{c.id}/v{c.version}"
        for side, stats in (("warpforth", t.warpforth), ("cuda", t.cuda)):
            entries.append({"name": f"{stem}/{side}", "unit": TIME_UNIT, "value": stats.median_us,
                            "range": f"± {_num(stats.mad_us)}", "extra": extra})
        mad = _gap_mad(c)
        entries.append({"name": f"{stem}/gap", "unit": GAP_UNIT, "value": t.gap, "range": f"± {_num(mad)}",
                        "extra": extra})
    p0 = [c for c in cases if c.priority == "P0"]
    if p0:
        gaps = [c.timing.gap for c in p0 if c.timing is not None]
        value = geomean(gaps)
        # noise of a geometric mean: the cases' relative noises add in quadrature, divided by their count
        rel = [_gap_mad(c) / c.timing.gap for c in p0 if c.timing is not None]
        noise = value * math.sqrt(sum(r * r for r in rel)) / len(rel)
        extra = "\n".join(_platform_lines(result) + [
            f"warpforthc: {result.compilers.get(want, result.warpforthc).version}",
            f"cases ({len(p0)} stable P0): " + ", ".join(f"{c.id}/v{c.version}" for c in p0),
        ] + ([f"commit: {result.source.git_commit}"] if result.source.git_commit else []))
        entries.append({"name": f"suite/v{result.suite_version}/geomean-gap/P0", "unit": GAP_UNIT,
                        "value": value, "range": f"± {_num(noise)}", "extra": extra})
    if not entries:
        raise WfbenchError(f"{where}: no stable, correct case to export; nothing written")
    return entries
