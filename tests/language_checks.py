"""Independent formulations and launch rules of the cases that cover WarpForth's newer word families
(reduced-width memory, shared integer words, user words and locals, a run-time indexed stack, float
comparisons and escape-time loops). tests/test_cases.py runs them with the rest of the suite.

Each check recomputes a case's reference at check size another way: scalar Python, its own rounding
(struct's IEEE half packing, Python's round-half-even), plain integers; and shows that the check can fail.
"""

from __future__ import annotations

import math
import struct
from typing import Callable

import numpy as np


def _half(value: float) -> float:
    """A double rounded to IEEE half by Python's own packing (round half to even), widened back."""
    return struct.unpack("<e", struct.pack("<e", value))[0]


def _bf16_bits(value: float) -> int:
    """A double rounded to bfloat16 (8 significant bits, ties to even) with Python's round(), as bits."""
    mant, exp = math.frexp(value)
    rounded = math.ldexp(round(math.ldexp(mant, 8)), exp - 8)
    return struct.unpack("<I", struct.pack("<f", rounded))[0] >> 16


def check_axpy_f16(inputs: dict, want: dict, s: dict) -> None:
    a = float(inputs["A"])
    expected = [_half(a * x + y) for x, y in zip(inputs["X"].tolist(), inputs["Y"].tolist(), strict=True)]
    assert want["Z"].astype(np.float64).tolist() == expected
    assert want["Z"].astype(np.float64).tolist() != [_half(a * x) for x in inputs["X"].tolist()]


def check_axpy_bf16(inputs: dict, want: dict, s: dict) -> None:
    def widen(bits: int) -> float:
        return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]

    a = float(inputs["A"])
    xs, ys = inputs["X"].tolist(), inputs["Y"].tolist()
    expected = [_bf16_bits(a * widen(x) + widen(y)) for x, y in zip(xs, ys, strict=True)]
    assert (want["Z"].view(np.uint16)).tolist() == expected
    # truncating instead of rounding gives other bits: the check can fail
    truncated = [struct.unpack("<Q", struct.pack("<d", a * widen(x) + widen(y)))[0] >> 48 for x, y in zip(xs, ys)]
    assert truncated != expected


def check_gemv(inputs: dict, want: dict, s: dict) -> None:
    m, k = s["M"], s["K"]
    a, x = inputs["A"].tolist(), inputs["X"].tolist()
    expected = [sum(a[r * k + j] * x[j] for j in range(k)) for r in range(m)]
    assert want["Y"].tolist() == expected
    assert max(abs(v) for v in expected) < 2**31


def check_stack_pick(inputs: dict, want: dict, s: dict) -> None:
    from wfbench_cases.stack_pick_f64 import DEPTH, FACTOR

    k = int(inputs["K"])
    assert 1 <= k <= DEPTH
    expected = []
    for x in inputs["X"].tolist():
        stack = [x]
        for _ in range(DEPTH - 1):
            stack.append(stack[-1] * FACTOR)
        acc = 0.0
        for j in range(k):  # I 1 + PICK: the (I+1)-th value below the accumulator
            acc = acc + stack[-1 - j]
        expected.append(acc)
    assert want["Y"].tolist() == expected


def check_softmax(inputs: dict, want: dict, s: dict, rtol: float, atol: float) -> None:
    rows, cols = s["ROWS"], s["COLS"]
    x = inputs["X"].astype(np.float64).tolist()
    expected = []
    for r in range(rows):
        row = x[r * cols:(r + 1) * cols]
        top = max(row)
        e = [math.exp(v - top) for v in row]
        total = math.fsum(e)
        expected.extend(v / total for v in e)
    got = want["Y"].astype(np.float64)
    assert np.allclose(got, np.array(expected, dtype=np.float32), rtol=rtol, atol=atol)
    assert np.allclose(got.reshape(rows, cols).sum(axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(got, np.float32(1.0 / cols), rtol=rtol, atol=atol)


def check_mandelbrot(inputs: dict, want: dict, s: dict) -> None:
    w, h, frames, maxit = s["W"], s["H"], s["FRAMES"], s["MAXIT"]
    expected, values = [], set()
    for f in range(frames):
        step = 1.5 / float(w * (f + 1))
        for py in range(h):
            for px in range(w):
                acc = 0
                for sy in range(2):
                    for sx in range(2):
                        cx, cy = float((px - w // 2) * 2 + sx) * step + -0.75, float((py - h // 2) * 2 + sy) * step
                        zx = zy = 0.0
                        it = 0
                        for _ in range(maxit):
                            zx, zy = (zx * zx - zy * zy) + cx, (zx * 2.0) * zy + cy
                            it += 1
                            if zx * zx + zy * zy > 4.0:
                                break
                        value = it if it < maxit else maxit + int((zx * zx + zy * zy) * 1000.0)
                        values.add(value)
                        acc += value
                expected.append(acc)
    assert want["OUT"].tolist() == expected
    assert any(v < maxit for v in values) and any(v > maxit for v in values), "both escaped and inside points"


def _block_per_row(rows: str) -> Callable[[dict, tuple, tuple], None]:
    def check(s: dict, grid: tuple, block: tuple) -> None:
        assert block == (256, 1, 1) and grid == (s[rows], 1, 1)
    return check


def mandelbrot_geometry(s: dict, grid: tuple, block: tuple) -> None:
    assert block == (16, 16, 1) and grid[2] == s["FRAMES"] > 1, "one zoom level per grid z"
    assert grid[0] * 16 >= s["W"] > (grid[0] - 1) * 16
    assert grid[1] * 16 < s["H"], "rows by a grid-stride loop: every thread takes more than one row"


GEOMETRY = {"gemv_i8": _block_per_row("M"), "softmax_f32": _block_per_row("ROWS"),
            "mandelbrot_i32": mandelbrot_geometry}
