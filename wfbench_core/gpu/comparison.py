"""Comparing a side's outputs with what they should be: the poison an output starts from, element-wise
comparison with tolerances (integers exactly), idempotence, and the one line each failed check reads as.
numpy only: no GPU is needed (the checks of :mod:`wfbench_core.gpu.correctness` run these on what a device
read back).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import attrs
import numpy as np

from wfbench_core.case import Case
from wfbench_core.compiling.faults import side_name
from wfbench_core.record.results import Check

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "INT_SENTINEL", "Comparison", "compare", "describe_check", "describe_failures", "idempotence",
    "never_written", "poison_name", "poison_value",
]

INT_SENTINEL = 0x5A5A5A5A5A5A5A5A


def _float_dtype(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


# Poison written into every output before a launch: a NaN with a payload no arithmetic produces (floats),
# or the sentinel truncated to the width (integers). An element still holding it was never written.
_FLOAT_POISON_BITS = {8: 0x7FFA5A5A5A5A5A5A, 4: 0x7FDA5A5A, 2: 0x7E5A}


def poison_value(dtype: np.dtype | str) -> np.ndarray:
    """The poison of a dtype as a one-element array (bit-exact)."""
    dtype = np.dtype(dtype)
    if _float_dtype(dtype):
        bits = np.array([_FLOAT_POISON_BITS[dtype.itemsize]], dtype=f"u{dtype.itemsize}")
        return bits.view(dtype)
    return np.array([INT_SENTINEL], dtype=np.uint64).view(np.int64).astype(dtype)


def poison_name(dtype: np.dtype | str) -> str:
    dtype = np.dtype(dtype)
    return "NaN poison" if _float_dtype(dtype) else f"sentinel {int(poison_value(dtype)[0]):#x}"


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a


def never_written(got: np.ndarray, want: np.ndarray | None = None) -> np.ndarray:
    """Mask of the elements of ``got`` that still hold the poison (and that the reference does not hold)."""
    mask = _bits(got) == _bits(poison_value(got.dtype))[0]
    if want is not None and want.dtype == got.dtype and want.shape == got.shape:
        mask &= _bits(want) != _bits(poison_value(want.dtype))[0]
    return np.asarray(mask, dtype=bool).ravel()


@attrs.frozen
class Comparison:
    """One output against its expected value. Error sizes are over the written, finite elements only."""

    passed: bool
    max_abs_err: float
    max_rel_err: float
    mismatches: int  # outside tolerance, unwritten and non-finite elements included
    total: int
    unwritten: int = 0  # still holding the poison
    nonfinite: int = 0  # written, NaN or inf where the expected value is finite

    def check(self, config: str, side: str, what: str, output: str) -> Check:
        return Check(config, side, what, output, self.passed, _json_float(self.max_abs_err),
                     _json_float(self.max_rel_err), self.mismatches, self.total, self.unwritten, self.nonfinite)


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, *, poison: bool = True) -> Comparison:
    """Elementwise ``|got-want| <= atol + rtol*|want|``.

    Integer outputs are compared as integers (exactly: an int64 off by one above 2**53 is a mismatch at
    tolerance 0). NaN or inf in ``got`` where ``want`` is finite is a mismatch. With ``poison``, elements
    of ``got`` still holding the poison are counted as never written, apart from value errors.
    """
    total = int(max(np.size(got), np.size(want)))
    if got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want):
        return Comparison(True, 0.0, 0.0, 0, total)  # identical: the common case, and cheap on large outputs
    if got.shape != want.shape:
        return Comparison(False, math.inf, math.inf, total, total)
    unwritten = never_written(got, want) if poison else np.zeros(got.size, dtype=bool)
    written = ~unwritten
    g, w = np.ravel(got), np.ravel(want)
    with np.errstate(all="ignore"):
        if np.issubdtype(g.dtype, np.integer) and np.issubdtype(w.dtype, np.integer):
            gi, wi = g.astype(np.int64), w.astype(np.int64)
            # |g - w| exactly, in uint64 (wraps correctly for any two int64 values)
            diff_u = np.where(gi >= wi, gi.view(np.uint64) - wi.view(np.uint64),
                              wi.view(np.uint64) - gi.view(np.uint64))
            if rtol == 0 and atol == 0:
                bad = gi != wi
            else:
                bad = (gi != wi) & ~(diff_u.astype(np.float64) <= atol + rtol * np.abs(wi.astype(np.float64)))
            diff = diff_u.astype(np.float64)
            wabs = np.abs(wi.astype(np.float64))
            nonfinite = np.zeros(g.size, dtype=bool)
        else:
            gf, wf = g.astype(np.float64), w.astype(np.float64)
            diff = np.abs(gf - wf)
            wabs = np.abs(wf)
            bad = ~(diff <= atol + rtol * wabs)  # NaN compares False -> bad
            nonfinite = ~np.isfinite(gf) & np.isfinite(wf)
        bad |= unwritten
        nonfinite &= written
        sized = written & np.isfinite(diff)  # the error size is over written, finite elements
        d = diff[sized]
        max_abs = float(d.max()) if d.size else 0.0
        r = np.where(wabs[sized] > 0, d / np.where(wabs[sized] > 0, wabs[sized], 1.0), np.where(d > 0, np.inf, 0.0))
        max_rel = float(r.max()) if r.size else 0.0
    n_bad = int(bad.sum())
    return Comparison(n_bad == 0, max_abs, max_rel, n_bad, total, int(unwritten.sum()), int(nonfinite.sum()))


def _json_float(x: float) -> float:
    # JSON has no inf/NaN; an infinite error is stored as the largest double (shown as "inf", never as a size).
    return x if math.isfinite(x) else sys.float_info.max


def _fmt_err(x: float) -> str:
    return "inf" if not math.isfinite(x) or x >= sys.float_info.max else f"{x:.3g}"


def idempotence(first: np.ndarray, second: np.ndarray) -> Comparison:
    """The second launch (into re-poisoned outputs) must reproduce the first bit for bit."""
    if first.shape != second.shape:
        return Comparison(False, math.inf, math.inf, max(first.size, second.size), max(first.size, second.size))
    differ = (_bits(first) != _bits(second)).ravel()
    unwritten = never_written(second) & ~never_written(first)
    n = int(differ.sum())
    return Comparison(n == 0, 0.0, 0.0, n, int(first.size), int(unwritten.sum()))


_WHAT = {"reference": "differs from the numpy reference", "idempotent": "changes on a second launch",
         "cross": "WarpForth and CUDA disagree", "after-timing": "is wrong after timing",
         "left-by-timing": "is wrong as the timed launches left it",
         "timed-buffers": "is wrong on a verifying launch into the re-poisoned timed buffers",
         "relaunch": "is wrong when launched again over its own output in the timed buffers"}


def describe_check(case: Case, check: Check) -> str:
    """One line for a failed check: never-written elements apart from value errors and their real size."""
    tol = case.tolerances.get(check.output)
    out = next((p for p in case.outputs if p.name == check.output), None)
    poison = poison_name(out.dtype) if out is not None and out.dtype else "poison"
    side = check.side
    if "~" in side:
        side = " vs ".join(side_name(s) for s in side.split("~"))
    else:
        side = side_name(side)
    head = f"{case.key(check.config)} {side}: output {check.output}"
    if check.placement is not None:
        head += f" of timed placement {check.placement} (buffer set {check.buffer_set})"
    if check.what == "idempotent":
        text = (f"{head} changes on a second launch into re-poisoned outputs: {check.mismatches} of "
                f"{check.total} elements differ")
        if check.unwritten:
            text += f" ({check.unwritten} not written by the second launch)"
        return text
    parts = []
    if check.unwritten:
        parts.append(f"{check.unwritten} of {check.total} elements never written (still hold the {poison})")
    wrong = check.mismatches - check.unwritten
    if wrong > 0:
        written = check.total - check.unwritten
        tol_s = f" (rtol {tol.rtol:g}, atol {tol.atol:g})" if tol else ""
        text = f"{wrong} of {written} written elements outside tolerance{tol_s}"
        if check.nonfinite:
            text += f", {check.nonfinite} of them NaN or inf"
        if wrong > check.nonfinite:
            text += f", max abs err {_fmt_err(check.max_abs_err)}, max rel err {_fmt_err(check.max_rel_err)}"
        parts.append(text)
    if not parts:  # shapes differ
        parts.append(f"{check.mismatches} of {check.total} elements outside tolerance")
    return f"{head} {_WHAT[check.what]}: " + "; ".join(parts)


def describe_failures(case: Case, failed: Sequence[Check]) -> str:
    more = f"; {len(failed) - 1} more failed checks" if len(failed) > 1 else ""
    return describe_check(case, failed[0]) + more
