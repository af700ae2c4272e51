"""The status of a case in a run (part of the result schema, :mod:`wfbench_core.record.results`)."""

__all__ = ["ERROR", "FAILED", "FAILING", "IMPLAUSIBLE", "OK", "STATUSES", "UNSTABLE"]  # internal, not the plugin API

OK = "ok"  # correct, timed, stable
UNSTABLE = "unstable"  # correct and timed, but MAD/median above the threshold on a side
FAILED = "failed"  # a correctness check failed: not timed
ERROR = "error"  # could not compile, load or launch
IMPLAUSIBLE = "implausible"  # correct, but timed faster than the GPU can run it: no timing kept
STATUSES = (OK, UNSTABLE, FAILED, ERROR, IMPLAUSIBLE)
FAILING = (FAILED, ERROR, IMPLAUSIBLE)  # a case with one of these failed the run (exit status 1, never in history)
