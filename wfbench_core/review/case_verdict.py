"""One case's base/head verdict, in one place: BROKEN, SLOWER, AMBIGUOUS, FASTER, SAME or BASE BROKEN.

The pull-request comment and ``wfbench bisect`` ask only this module what a base/head run says about a case.
The verdict is :mod:`wfbench_core.review.compare`'s, made by the one rule of :mod:`wfbench_core.review.verdicts`
(shown in capitals); a case that failed on one side alone is BROKEN (the head) or BASE BROKEN (the base)
(:mod:`wfbench_core.review.pairing`); any other case that could not be compared, and one whose CUDA side changed ("baseline
changed": no verdict on WarpForth), are AMBIGUOUS here: the run cannot say.
"""

from __future__ import annotations

from wfbench_core.record.results import RunResult
from wfbench_core.review import compare, verdicts

__all__ = ["REGRESSIONS", "VERDICTS", "base_head", "case_verdict"]  # internal, not the plugin API

SAME, SLOWER, FASTER, AMBIGUOUS = (v.upper() for v in (verdicts.SAME, verdicts.SLOWER, verdicts.FASTER,
                                                       verdicts.AMBIGUOUS))
BROKEN, BASE_BROKEN = verdicts.BROKEN_WORDS["head"], verdicts.BROKEN_WORDS["base"]
VERDICTS = (BROKEN, SLOWER, AMBIGUOUS, FASTER, SAME, BASE_BROKEN)  # most urgent first
REGRESSIONS = (BROKEN, SLOWER)  # the verdicts that fail a pull request


def case_verdict(c: compare.CaseComparison) -> str:
    """The verdict of one compared case."""
    if c.broken:
        return verdicts.BROKEN_WORDS[c.broken]
    if not c.compared or c.verdict is None or c.verdict.verdict not in verdicts.VERDICTS:
        return AMBIGUOUS
    return c.verdict.verdict.upper()


def base_head(result: RunResult, *, name: str = "result", base_label: str | None = None,
              head_label: str | None = None) -> tuple[compare.RunComparison, dict[str, str]]:
    """One base/head run compared, and every case's verdict (``{case id: verdict}``)."""
    cmp = compare.compare_labels(result, base_label, head_label, name=name)
    return cmp, {c.case_id: case_verdict(c) for c in cmp.cases}
