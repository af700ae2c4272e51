"""fault_nan_only: computes only where its output holds a NaN (works only on a poisoned output). See kernels/nan_only.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import axpy_case

CASE = axpy_case("fault_nan_only", "nan_only.forth", "computes only where its output holds a NaN (works only on a poisoned output)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
