"""fault_oob_read: reads one element past X, writes the right answer (out-of-bounds read). See kernels/oob_read.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import SIZES, scale_case

# N*8 bytes is not a multiple of 512 at either size, so X[N] lies inside the allocation's last page and the
# read never faults (at N = 2**22 it would be the first byte past a 32 MiB allocation, maybe unmapped)
CASE = scale_case("fault_oob_read", "oob_read.forth",
                  "reads one element past X, writes the right answer (out-of-bounds read)",
                  sizes={"check": SIZES["check"], "canonical": {**SIZES["canonical"], "N": (1 << 22) - 3}})


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
