"""fault_good_scale: y = k*x over int64, correct (the good case). See kernels/good_scale.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_good_scale", "good_scale.forth", "y = k*x over int64, correct (the good case)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
