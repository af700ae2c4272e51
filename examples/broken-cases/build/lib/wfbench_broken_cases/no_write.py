"""fault_no_write: computes and never stores (nothing written). See kernels/no_write.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import axpy_case

CASE = axpy_case("fault_no_write", "no_write.forth", "computes and never stores (nothing written)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
