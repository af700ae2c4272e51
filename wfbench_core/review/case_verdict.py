"""One case's base/head verdict, in one place: SAME, SLOWER, FASTER or AMBIGUOUS.

The pull-request comment and ``wfbench bisect`` ask only this module what a base/head run says about a case.
The verdict is read from :mod:`wfbench_core.review.compare`'s gap verdict of the case:

* ``worse`` is SLOWER and ``better`` is FASTER (significant, beyond the minimum effect and, between two runs,
  beyond the between-run variation);
* no change, a negligible change, shared samples, identical SASS and identical PTX are SAME;
* a change within the between-run variation, one on another board, and a case that could not be compared
  are AMBIGUOUS: the run cannot say.
"""

from __future__ import annotations

from typing import Optional

from wfbench_core.review import compare
from wfbench_core.record.results import RunResult

SAME, SLOWER, FASTER, AMBIGUOUS = "SAME", "SLOWER", "FASTER", "AMBIGUOUS"
VERDICTS = (SLOWER, AMBIGUOUS, FASTER, SAME)  # most urgent first

_OF_GAP = {
    compare.WORSE: SLOWER, compare.BETTER: FASTER,
    compare.NO_CHANGE: SAME, compare.NEGLIGIBLE: SAME, compare.SHARED: SAME, compare.IDENTICAL_SASS: SAME,
    compare.SAME_PTX: SAME, compare.WITHIN_RUNS: AMBIGUOUS, compare.OTHER_BOARD: AMBIGUOUS,
}


def case_verdict(c: compare.CaseComparison) -> str:
    """The verdict of one compared case."""
    if not c.compared or c.gap is None:
        return AMBIGUOUS
    return _OF_GAP.get(c.gap.verdict, AMBIGUOUS)


def base_head(result: RunResult, *, name: str = "result", base_label: Optional[str] = None,
              head_label: Optional[str] = None) -> tuple[compare.Comparison, dict[str, str]]:
    """One base/head run compared, and every case's verdict (``{case id: verdict}``)."""
    cmp = compare.compare_labels(result, base_label, head_label, name=name)
    return cmp, {c.case_id: case_verdict(c) for c in cmp.cases}
