"""fault_alignment: off by one unless Y is 512-byte aligned (depends on the buffer's alignment). See kernels/alignment.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_alignment", "alignment.forth", "off by one unless Y is 512-byte aligned (depends on the buffer's alignment)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
