"""Exports of a result for other tools.

``github-action-benchmark``: the ``customSmallerIsBetter`` input of benchmark-action/github-action-benchmark,
a JSON array of ``{"name", "unit", "value", "range", "extra"}``; ``name``, ``unit``, ``range`` and ``extra``
are strings, ``value`` a number. Per stable, correct case:

* ``<case>/v<version>/warpforth`` and ``<case>/v<version>/cuda``: median kernel time (``us``); ``range`` is
  the MAD of the samples;
* ``<case>/v<version>/gap``: median WarpForth / median CUDA (``x CUDA``); ``range`` is the MAD of the
  per-pair ratios;

and ``suite/v<suite version>/geomean-gap/P0/set-<case set>``: the geometric mean of the P0 gaps, published
only when every P0 case of the run is correct and stable; ``<case set>`` names the set (IDs and versions,
:func:`wfbench_core.stats.case_set_id`), so a geomean over another set is another series and never continues
this one.

A run that must not become history (a failed or error case, an incomplete run) is not exported either. A run
measured with a non-default protocol or timing mode gets ``@<setting>`` on every name, so it never joins the
canonical series.

``extra`` carries the GPU, the toolchain and the source hashes, so a point can be traced to what was
measured. The action keys its charts by name only: give each GPU model its own action ``name:``.
"""

from __future__ import annotations

import math
from typing import Any

from wfbench_core import stats
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import MODE_AA, MODE_PAIRED, OK, CaseResult, RunResult
from wfbench_core.review.history import refusal
from wfbench_core.review.series import protocol_tag, timing_mode

__all__ = ["FORMATS", "GAP_UNIT", "TIME_UNIT", "github_action_benchmark"]  # internal, not the plugin API

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
        f"samples: {min(t.warpforth.n, t.cuda.n)} pairs of {t.launches(t.warpforth)} (wf) and "
        f"{t.launches(t.cuda)} (cuda) launches",
        f"noise (MAD/median): wf {t.warpforth.noise:.2%}, cuda {t.cuda.noise:.2%}",
    ]
    if result.source.git_commit:
        lines.append(f"commit: {result.source.git_commit}")
    return lines


def _gap_mad(case: CaseResult) -> float:
    """MAD of the per-pair ratios WarpForth/CUDA: the noise of the gap."""
    assert case.timing is not None
    return stats.pair_ratio_mad(case.timing.warpforth.samples_us, case.timing.cuda.samples_us)


def _trend(result: RunResult, case: CaseResult) -> bool:
    """A point of the trend: correct, timed and stable by the rule every view uses
    (:func:`wfbench_core.review.series.standing`: not noisy, throttled out, on a depressed host or launch-bound)."""
    from wfbench_core.review.series import point_of

    return case.status == OK and case.timed and point_of(result, case, "").stable


def _suffix(result: RunResult, case: CaseResult) -> str:
    """``@mode`` and ``@setting=value`` for what keeps a run out of the canonical series (``""`` if nothing)."""
    mode = timing_mode(result, case)
    return "".join(f"@{x}" for x in (mode if mode != MODE_PAIRED else "", protocol_tag(result.protocol)) if x)


def _num(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}") if math.isfinite(x) else x


def github_action_benchmark(result: RunResult, *, label: str | None = None, where: str = "result") \
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
    why = refusal(result)
    if why:
        raise WfbenchError(f"{where}: {why.replace('never stored', 'never published')}; nothing exported")
    mine = [c for c in result.cases if c.compiler_label == want]
    cases = [c for c in mine if _trend(result, c)]
    entries: list[dict[str, Any]] = []
    for c in cases:
        t = c.timing
        assert t is not None
        extra = "\n".join(_case_lines(result, c, want))
        stem, tail = f"{c.id}/v{c.version}", _suffix(result, c)
        for side, summary in (("warpforth", t.warpforth), ("cuda", t.cuda)):
            entries.append({"name": f"{stem}/{side}{tail}", "unit": TIME_UNIT, "value": summary.median_us,
                            "range": f"± {_num(summary.mad_us)}", "extra": extra})
        mad = _gap_mad(c)
        entries.append({"name": f"{stem}/gap{tail}", "unit": GAP_UNIT, "value": t.gap, "range": f"± {_num(mad)}",
                        "extra": extra})
    p0 = [c for c in mine if c.priority == "P0"]
    suite = stats.suite_geomean([stats.SetMember(c.id, c.version, c.timing.gap if c.timing else 0.0,
                                                 _trend(result, c)) for c in p0], complete=result.complete)
    if suite is not None:
        noise = stats.geomean_noise([c.timing.gap for c in p0 if c.timing], [_gap_mad(c) for c in p0])
        extra = "\n".join(_platform_lines(result) + [
            f"warpforthc: {result.compilers.get(want, result.warpforthc).version}",
            f"case set {suite.set_id} ({len(p0)} P0, all stable): "
            + ", ".join(f"{cid}/v{v}" for cid, v in suite.members),
        ] + ([f"commit: {result.source.git_commit}"] if result.source.git_commit else []))
        entries.append({"name": f"suite/v{result.suite_version}/geomean-gap/P0/set-{suite.set_id}"
                                f"{_suffix(result, p0[0])}", "unit": GAP_UNIT,
                        "value": suite.value, "range": f"± {_num(noise)}", "extra": extra})
    if not entries:
        raise WfbenchError(f"{where}: no stable, correct case to export; nothing written")
    return entries
