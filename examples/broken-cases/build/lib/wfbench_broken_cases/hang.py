"""fault_hang: a loop that never ends (hang). See kernels/hang.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_hang", "hang.forth", "a loop that never ends (hang)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
