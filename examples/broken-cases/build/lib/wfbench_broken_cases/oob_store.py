"""fault_oob_store: stores 1 TiB past its output (illegal address). See kernels/oob_store.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_oob_store", "oob_store.forth", "stores 1 TiB past its output (illegal address)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
