"""The stored record of a case's library ceiling (:mod:`wfbench_core.ceiling`): its own status, checks and times.

It hangs off :attr:`wfbench_core.record.results.CaseResult.ceiling`, apart from the case's ``timing``: the
canonical gap, the P0 geomean, the export's named set and base/head verdicts read ``timing`` only.
:mod:`wfbench_core.record.results` re-exports it; it is part of the schema.
"""

from __future__ import annotations

import attrs

from wfbench_core.record.timing_record import SideStats

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CEILING_ERROR", "CEILING_FAILED", "CEILING_IMPLAUSIBLE", "CEILING_MISSING", "CEILING_OK", "CEILING_STATUSES",
    "CeilingResult",
]

# a ceiling's own status (the case's status is the canonical one, and a ceiling never changes it)
CEILING_OK = "ok"
CEILING_FAILED = "failed"  # its output disagrees with the case's numpy reference beyond its tolerance
CEILING_MISSING = "missing"  # its library is not installed on the GPU host
CEILING_ERROR = "error"  # the library call raised, or no samples came back
CEILING_IMPLAUSIBLE = "implausible"  # faster than the peak of the operation it runs
CEILING_STATUSES = (CEILING_OK, CEILING_FAILED, CEILING_MISSING, CEILING_ERROR, CEILING_IMPLAUSIBLE)


@attrs.frozen
class CeilingResult:
    """One case's library ceiling in one run.

    ``ratio`` is WarpForth time / ceiling time (medians of the same rounds): above 1, the library is faster.
    ``timing_mode`` is how the ceiling's launches were timed: the run's mode, or ``events`` where the library
    call could not be captured into a CUDA graph (``capture_note`` says why).
    """

    library: str
    routine: str
    package: str
    library_version: str
    status: str
    message: str = ""
    tensor_cores: str = ""
    flop_type: str = ""  # the arithmetic the plausibility gate judged it by (wfbench_core.record.yardsticks)
    stats: SideStats | None = None
    ratio: float | None = None
    ratio_lo: float | None = None  # 5th and 95th percentiles of the per-pair ratios
    ratio_hi: float | None = None
    timing_mode: str = ""
    capture_note: str = ""
    gbps: float | None = None
    gflops: float | None = None
    max_abs_err: float = 0.0  # of its check against the case's numpy reference
    max_rel_err: float = 0.0

    @property
    def timed(self) -> bool:
        return self.status == CEILING_OK and self.stats is not None and self.ratio is not None
