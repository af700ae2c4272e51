"""matmul_f64_words (P1): naive float64 matmul whose inner product is a user word with locals — WarpForth's
``: … ;`` definitions and read-only locals ``{ arow bcol len -- }`` in a hot loop.

Algorithm (both sides): matmul_f64_naive's, one thread per C element (blocks of 256), ``C[r, c] = sum_k
A[r, k] * B[k, c]`` in order of k; the sum is a user word ``DOT { arow bcol len -- }`` (the language reference's
dot-product, with B strided by n) called with the row's and the column's addresses, and on the CUDA side
a ``__device__ double dot(a, b, n)``. Both compilers inline the call.

A stack-flattening probe: locals live in the word's frame and the call passes its arguments on the data
stack, so this is where a compiler that keeps the stack in memory would pay; with every index known at
compile time, today's warpforthc promotes it all to registers. WarpForth PTX (warpforthc, ptxas
-arch=sm_90 -v): 0 bytes stack frame, no local memory.

Fairness: both kernels take (A, B, C, N), use the same launch and order of additions; the CUDA function
is an ordinary ``__device__`` function that nvcc may inline, as WarpForth inlines its word; built with
-fmad=false. Numerical contract and tolerance as matmul_f64_naive: inputs are multiples of 1/64, so every
product and partial sum is exact and all three (WarpForth, CUDA, numpy) agree bit for bit.

Work: 2*N**3 FLOPs, 3*8*N**2 bytes. Canonical N = 1024 (one eighth of matmul_f64_naive's work; the suite's
time goes to cases that cover something new). Every launch writes every C element: idempotent.
"""

from __future__ import annotations

from collections.abc import Callable

from wfbench_cases.matmul_f64_naive import matmul_case
from wfbench_core import hookimpl
from wfbench_core.case import Case

__all__ = ["CASE", "wfbench_register_cases"]

CASE = matmul_case(
    __name__,
    id="matmul_f64_words",
    priority="P1",
    summary="naive float64 matmul with the dot product in a user word with locals",
    canonical=1024,
    check=100,
    seed=14,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
