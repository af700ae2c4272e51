"""fault_too_many_threads: a correct kernel launched with 2048 threads per block (out of resources)."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_too_many_threads", "too_many_threads.forth",
                  "a correct kernel launched with 2048 threads per block (out of resources)", block=2048)


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
