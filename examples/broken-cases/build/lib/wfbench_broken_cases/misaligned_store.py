"""fault_misaligned_store: 8-byte stores at 4-byte aligned addresses (misaligned address). See kernels/misaligned_store.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_misaligned_store", "misaligned_store.forth", "8-byte stores at 4-byte aligned addresses (misaligned address)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
