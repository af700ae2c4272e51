"""matmul_f64_naive (P0): naive float64 matrix multiply — inner-loop and address code generation.

Algorithm (both sides): ``C = A @ B`` for square row-major ``N x N`` matrices, one thread per element of
``C`` on a 1-D launch of 256-thread blocks: thread ``g`` takes ``row = g / N``, ``col = g % N`` and sums
``A[row, k] * B[k, col]`` for ``k = 0 .. N-1`` in order. Threads past ``N*N`` do nothing.

Fairness: both kernels take (A, B, C, N) with ``N`` a runtime scalar, use the same launch and the same
loop; no tiling, shared memory or library (cuBLAS) on either side. The CUDA side marks the pointers
``__restrict__`` and is compiled with ``-O3 -fmad=false``, so each multiply and add is rounded separately,
as in WarpForth (mul.rn + add.rn, never fused). ``C`` is fully overwritten on every launch (idempotent).

Numerical contract: inputs are normal samples rounded to multiples of 1/64, so every product and every
partial sum is exact in f64: any order of additions (the numpy/BLAS reference included) gives identical
bits. Tolerance 0, which makes the check exhaustive for indexing errors.

Work: 2*N**3 FLOPs; 3*N**2*8 bytes (read A and B once, write C). Canonical N = 2048 (a multi-millisecond
launch on an H200); check N = 100 (N*N is not a multiple of the block, so the guard is exercised).
Requires N >= 1 (a WarpForth DO loop always runs at least once).

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; the runtime stack
is promoted to registers. warpforthc does not unroll the DO loop; nvcc unrolls the k loop by 4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BLOCK", "CASE", "MATMUL_PARAMS", "MATMUL_TOLERANCES", "exact_matrix", "launch_per_element", "matmul_case",
    "matmul_inputs", "matmul_reference", "matmul_work", "sizes", "wfbench_register_cases",
]

BLOCK = 256

# The signature and the check every matmul case shares (the tiled and the user-word case too).
MATMUL_PARAMS = (Param("A", "ptr", "float64"), Param("B", "ptr", "float64"),
                 Param("C", "ptr", "float64", output=True), Param("N", "i64"))
MATMUL_TOLERANCES = {"C": Tolerance(0.0, 0.0, "inputs are multiples of 1/64: every product and partial sum is exact")}


def sizes(n: int) -> dict[str, int]:
    return {"N": n, "NN": n * n}


def exact_matrix(rng: np.random.Generator, n: int) -> np.ndarray:
    """Normal samples rounded to multiples of 1/64: products and sums of N terms stay exact in f64."""
    import numpy as np

    return np.round(rng.standard_normal(n * n) * 64.0) / 64.0


def launch_per_element(s: Sizes) -> Launch:
    """One thread per C element, in blocks of :data:`BLOCK`."""
    return Launch(grid=-(-s["NN"] // BLOCK), block=BLOCK)


def matmul_inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    n = s["N"]
    return {"A": exact_matrix(rng, n), "B": exact_matrix(rng, n), "N": n}


def matmul_reference(inp: Arrays, s: Sizes) -> Arrays:
    n = s["N"]
    return {"C": (inp["A"].reshape(n, n) @ inp["B"].reshape(n, n)).ravel()}


def matmul_work(s: Sizes) -> Work:
    n = s["N"]
    return Work(bytes=3 * n * n * 8, flops=2 * n**3)


def matmul_case(module: str, *, id: str, priority: str, summary: str, canonical: int, check: int, seed: int,
                launch: Callable[[Sizes], Launch] = launch_per_element, version: int = 1, notes: str) -> Case:
    """A matmul case of the package ``module``: the shared signature, inputs, reference, check and work, the
    kernels ``<id>.forth`` and ``<id>.cu`` (both entry points named ``id``), one thread per C element unless
    ``launch`` says otherwise."""
    return Case(
        id=id,
        version=version,
        priority=priority,
        summary=summary,
        warpforth=resource_text(module, f"{id}.forth"),
        cuda=resource_text(module, f"{id}.cu"),
        wf_kernel=id,
        cuda_kernel=id,
        params=MATMUL_PARAMS,
        sizes={"check": sizes(check), "canonical": sizes(canonical)},
        launch=launch,
        inputs=matmul_inputs,
        reference=matmul_reference,
        tolerances=MATMUL_TOLERANCES,
        work=matmul_work,
        metric="compute",
        seed=seed,
        notes=notes,
    )


CASE = matmul_case(
    __name__,
    id="matmul_f64_naive",
    priority="P0",
    summary="naive float64 matmul, one thread per C element; inner-loop and address codegen",
    canonical=2048,
    check=100,
    seed=4,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
