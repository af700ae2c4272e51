"""axpy_f16 and axpy_bf16 (P1): ``z = a*x + y`` over float16 / bfloat16 memory with f64 arithmetic —
WarpForth's reduced-width global words ``HF@ HF!`` and ``BF@ BF!``, bandwidth at 6 bytes per element.

Algorithm (both sides, both cases): axpy_f64's grid-stride loop and launch (4096 x 256): each element is
loaded at its width and widened to double (exact for both formats), multiplied by the f64 scalar ``a`` and
added to ``y`` (two f64 roundings: WarpForth emits ``mul.rn`` and ``add.rn``; CUDA is built with
``-fmad=false``), and the double result is rounded **once** to the storage format, to nearest even:
``HF!`` emits ``cvt.rn.f16.f64``, the instruction of CUDA's ``__double2half``; ``BF!`` is lowered by LLVM as
a round-to-odd f32 followed by a round-to-nearest-even to bfloat16, which is the correctly rounded
double-to-bfloat16 conversion that CUDA's ``__double2bfloat16`` does in one ``cvt.rn.bf16.f64``.

Fairness: both kernels take (a, x, y, z, n) and use the same loop, launch, widening, two f64 roundings and
one final rounding; neither uses half2/bfloat162 vector arithmetic or FMA contraction.

Tolerance 0: the f64 value is the same on both sides and in numpy (same two roundings), and one
round-to-nearest-even of the same double is the same half, so every element matches bit for bit. numpy's
float64 -> float16 conversion rounds the double directly; bfloat16 has no numpy type, so the case keeps
its bits in int16 buffers and the reference rounds with :func:`round_bf16` (exact integer rounding of the
double's bits). Inputs are standard normal values already representable in the format (no subnormal
bfloat16 arises at these magnitudes; float16 subnormals do, and numpy rounds them correctly).

Work: 6 bytes per element (read x and y, write z), 2 FLOPs per element. Canonical N = 2**24 (96 MiB of
traffic, twice the 50 MB L2 of an H200). Out of place: idempotent.

WarpForth PTX (warpforthc, ptxas -arch=sm_90 -v): 0 bytes stack frame, no local memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wfbench_core import hookimpl
from wfbench_core.case import Arrays, Case, Launch, Param, Sizes, Tolerance, Work, resource_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["CASE_BF16", "CASE_F16", "A", "round_bf16", "sizes", "wfbench_register_cases", "widen_bf16"]

A = 1.5


def sizes(n: int, blocks: int) -> dict[str, int]:
    """Named sizes; WORDS is the 16-bit element count in 8-byte words (WarpForth arrays are declared i64[])."""
    return {"N": n, "blocks": blocks, "WORDS": -(-n // 4)}


def round_bf16(values: npt.ArrayLike) -> npt.NDArray[np.int16]:
    """float64 -> bfloat16 bits (int16), rounded once to nearest even, as ``cvt.rn.bf16.f64`` does.

    Integer rounding of the double's bits: bfloat16 keeps 7 of the double's 52 stored significand bits, so
    the low 45 bits are rounded away to nearest, ties to even (a carry into the exponent is the right
    result); the rounded double has 8 significant bits and converts to float32 exactly, whose high 16 bits
    are the bfloat16. Normal range only: bfloat16 shares float32's exponent range, and these inputs come
    nowhere near its subnormals or its overflow."""
    import numpy as np

    bits = np.asarray(values, dtype=np.float64).view(np.uint64)
    drop = np.uint64(45)
    half = np.uint64((1 << 44) - 1)
    rounded = (bits + half + ((bits >> drop) & np.uint64(1))) & ~np.uint64((1 << 45) - 1)
    as_f32 = rounded.view(np.float64).astype(np.float32)
    return (as_f32.view(np.uint32) >> np.uint32(16)).astype(np.uint16).view(np.int16)


def widen_bf16(bits: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """bfloat16 bits (int16) -> float64, exact."""
    import numpy as np

    return (np.asarray(bits).view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _launch(s: Sizes) -> Launch:
    return Launch(grid=s["blocks"], block=256)


def _inputs_f16(s: Sizes, rng: np.random.Generator) -> Arrays:
    import numpy as np

    n = s["N"]
    return {"A": A, "X": rng.standard_normal(n, dtype=np.float32).astype(np.float16),
            "Y": rng.standard_normal(n, dtype=np.float32).astype(np.float16), "N": n}


def _reference_f16(inp: Arrays, s: Sizes) -> Arrays:
    import numpy as np

    x, y = (np.asarray(inp[k], dtype=np.float64) for k in ("X", "Y"))
    return {"Z": (inp["A"] * x + y).astype(np.float16)}


def _inputs_bf16(s: Sizes, rng: np.random.Generator) -> Arrays:
    import numpy as np

    n = s["N"]
    return {"A": A, "X": round_bf16(rng.standard_normal(n, dtype=np.float32)),
            "Y": round_bf16(rng.standard_normal(n, dtype=np.float32)), "N": n}


def _reference_bf16(inp: Arrays, s: Sizes) -> Arrays:
    return {"Z": round_bf16(inp["A"] * widen_bf16(inp["X"]) + widen_bf16(inp["Y"]))}


def _case(fmt: str, dtype: str, what: str, inputs: Callable[[Sizes, np.random.Generator], Arrays],
          reference: Callable[[Arrays, Sizes], Arrays], seed: int) -> Case:
    return Case(
        id=f"axpy_{fmt}",
        version=1,
        priority="P1",
        summary=f"z = a*x + y over {what} memory, f64 math; reduced-width loads and stores, bandwidth",
        warpforth=resource_text(__name__, f"axpy_{fmt}.forth"),
        cuda=resource_text(__name__, f"axpy_{fmt}.cu"),
        wf_kernel=f"axpy_{fmt}",
        cuda_kernel=f"axpy_{fmt}",
        params=(Param("A", "f64"), Param("X", "ptr", dtype), Param("Y", "ptr", dtype),
                Param("Z", "ptr", dtype, output=True), Param("N", "i64")),
        sizes={"check": sizes(100_003, 40), "canonical": sizes(1 << 24, 4096)},
        launch=_launch,
        inputs=inputs,
        reference=reference,
        tolerances={"Z": Tolerance(0.0, 0.0, f"one round-to-nearest-even of the same f64 value: the same {what} "
                                             "bits on both sides and in numpy")},
        work=lambda s: Work(bytes=6 * s["N"], flops=2 * s["N"]),
        metric="bandwidth",
        seed=seed,
        notes=__doc__ or "",
    )


CASE_F16 = _case("f16", "float16", "float16", _inputs_f16, _reference_f16, seed=11)
CASE_BF16 = _case("bf16", "int16", "bfloat16", _inputs_bf16, _reference_bf16, seed=12)


@hookimpl
def wfbench_register_cases(register: Callable[[Case], None]) -> None:
    register(CASE_F16)
    register(CASE_BF16)
