"""fault_first_buffers: half the work unless X is 4 KiB aligned (less work on other buffers than the first). See kernels/first_buffers.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_first_buffers", "first_buffers.forth", "half the work unless X is 4 KiB aligned (less work on other buffers than the first)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
