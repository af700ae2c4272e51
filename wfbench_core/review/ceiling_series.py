"""The library ceiling's own series (:mod:`wfbench_core.ceiling`): keyed apart from the canonical one.

A ceiling point joins a series only with the same GPU, case (ID, version, fingerprint), library routine and
the same version of the package that calls it (a new CuPy, and with it a new cuBLAS, starts a new series, as a
changed CUDA baseline source does for the canonical series), timing mode and protocol. Its name is
``<case>/v<version>/ceiling``; its figure is ``WarpForth time / ceiling time``. Nothing here is read by the
canonical gap, the P0 geomean, the export or base/head verdicts.
"""

from __future__ import annotations

import hashlib
import json

import attrs

from wfbench_core.ceiling import series_name
from wfbench_core.record.results import CaseResult, RunResult, converter
from wfbench_core.review.series import protocol_tag, timing_mode

__all__ = ["CeilingSeriesKey", "ceiling_key", "ceiling_points"]  # internal, not the plugin API


@attrs.frozen
class CeilingSeriesKey:
    """Everything that must be equal for two ceiling measurements to share one trend line."""

    name: str  # <case>/v<version>/ceiling
    gpu_name: str
    compute_capability: str
    fingerprint: str
    library: str
    routine: str
    package: str
    library_version: str
    mode: str
    protocol: str = ""

    @property
    def id(self) -> str:
        text = json.dumps(converter().unstructure(self), sort_keys=True, separators=(",", ":"))
        return "ceiling-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def ceiling_key(result: RunResult, case: CaseResult) -> CeilingSeriesKey:
    c = case.ceiling
    assert c is not None
    env = result.environment
    return CeilingSeriesKey(name=series_name(case.id, case.version), gpu_name=env.gpu_name,
                            compute_capability=env.compute_capability, fingerprint=case.fingerprint,
                            library=c.library, routine=c.routine, package=c.package,
                            library_version=c.library_version, mode=f"{timing_mode(result, case)}/{c.timing_mode}",
                            protocol=protocol_tag(result.protocol))


def ceiling_points(result: RunResult) -> list[tuple[CeilingSeriesKey, dict[str, float]]]:
    """The timed ceilings of a run: each one's key and its three times and ratio (medians, us)."""
    out = []
    for case in result.cases:
        c = case.ceiling
        if c is None or not c.timed or case.timing is None or c.stats is None or c.ratio is None:
            continue
        out.append((ceiling_key(result, case), {"wf_us": case.timing.warpforth.median_us,
                                                "cuda_us": case.timing.cuda.median_us,
                                                "ceiling_us": c.stats.median_us, "ratio": c.ratio}))
    return out
