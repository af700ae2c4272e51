"""fault_skip_tail: the loop stops at N - 7 (last elements never written). See kernels/skip_tail.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import axpy_case

CASE = axpy_case("fault_skip_tail", "skip_tail.forth", "the loop stops at N - 7 (last elements never written)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
