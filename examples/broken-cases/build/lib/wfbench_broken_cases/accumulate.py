"""fault_accumulate: adds into its output, a NaN read as 0 (works only on a poisoned output). See kernels/accumulate.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import axpy_case

CASE = axpy_case("fault_accumulate", "accumulate.forth", "adds into its output, a NaN read as 0 (works only on a poisoned output)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
