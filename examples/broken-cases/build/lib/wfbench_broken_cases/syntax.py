"""fault_syntax: an unknown word (compile failure). See kernels/syntax.forth."""

from __future__ import annotations

from wfbench_core import hookimpl
from wfbench_broken_cases import scale_case

CASE = scale_case("fault_syntax", "syntax.forth", "an unknown word (compile failure)")


@hookimpl
def wfbench_register_cases(register):  # type: ignore[no-untyped-def]
    register(CASE)
