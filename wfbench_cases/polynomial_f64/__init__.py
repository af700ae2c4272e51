"""polynomial_f64 (P1): a fixed degree-12 polynomial per element by Horner's rule — pure arithmetic and
stack manipulation (the chain WarpForth's stack flattening must keep in registers).

Algorithm (both sides): ``y[i] = p(x[i])`` with the coefficients fixed in the source (exact binary
fractions, so every compiler reads the same doubles), ``p = c12*x + c11``, then ``p = p*x + c_k`` down to
``c0``; a grid-stride loop over 4096 x 256 threads, as in axpy_f64.

Fairness: both kernels take (x, y, n) and use the same launch and loop. The CUDA side writes the plain
Horner steps, marks the pointers ``__restrict__`` and is compiled with ``-O3 -fmad=false``: 12 mul.rn and
12 add.rn per element on both sides, never fused (``x - c`` and ``x + (-c)`` are the same IEEE operation).
Out of place, so every launch overwrites ``y`` identically (idempotent).

Numerical contract and tolerance: the numpy reference performs the same separately rounded operations in
the same order, so both sides must match it bit for bit: tolerance 0.

Work: 16 bytes per element (read x, write y), 24 FLOPs per element. Canonical N = 2**25 (512 MiB moved,
far over the 50 MB L2); it stays memory-bound on an H200 (1.5 FLOP/byte of f64 without FMA).

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory; the whole stack
chain (DUP/OVER/NIP) is promoted to registers.

Noise, measured on an H200: this is the one case the GPU power-manages. The SM clock sampled during its
timing ranged 1575-1965 MHz (every other case held 1980 MHz), and MAD/median reached 0.5-0.9 % per side
with 50 ms samples (0.49 % with 200 ms samples), against <= 0.15 % elsewhere. The dips hit both sides of a
pair together, so the gap stays steady (A/A 0.999x; base/head gap change within +-1 % in one run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CASE", "COEFFS", "wfbench_register_cases"]

#: c12 .. c0, highest degree first, exactly as written in both kernels.
COEFFS = (0.0625, -0.875, 0.3125, 1.75, -1.5, 0.125, -0.625, 1.5, -0.375, 2.0, 0.5, -1.25, 0.75)


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["blocks"], block=256)


def _inputs(s: Sizes, rng: np.random.Generator) -> Arrays:
    return {"X": rng.uniform(-1.0, 1.0, s["N"]), "N": s["N"]}


def _reference(inp: Arrays, s: Sizes) -> Arrays:
    x = inp["X"]
    p = COEFFS[0] * x
    p += COEFFS[1]
    for c in COEFFS[2:]:  # a multiply then an add, each rounded: the kernels' contract (in place, for speed)
        p *= x
        p += c
    return {"Y": p}


CASE = Case(
    id="polynomial_f64",
    version=1,
    priority="P1",
    summary="degree-12 Horner polynomial per element over float64; arithmetic and stack manipulation",
    warpforth=resource_text(__name__, "polynomial_f64.forth"),
    cuda=resource_text(__name__, "polynomial_f64.cu"),
    wf_kernel="polynomial_f64",
    cuda_kernel="polynomial_f64",
    params=(Param("X", "ptr", "float64"), Param("Y", "ptr", "float64", output=True), Param("N", "i64")),
    sizes={"check": {"N": 100_003, "blocks": 40}, "canonical": {"N": 1 << 25, "blocks": 4096}},
    launch=_launch,
    inputs=_inputs,
    reference=_reference,
    tolerances={"Y": Tolerance(0.0, 0.0, "same separately rounded operations in the same order as numpy")},
    work=lambda s: Work(bytes=16 * s["N"], flops=2 * (len(COEFFS) - 1) * s["N"]),
    metric="bandwidth",
    seed=7,
    notes=__doc__ or "",
)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE)
