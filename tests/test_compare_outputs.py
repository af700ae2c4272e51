"""The elementwise comparison behind every correctness check, and the lines that describe failures (no GPU)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from wfbench_cases.axpy_f64 import CASE as AXPY
from wfbench_cases.scale_i64 import CASE as SCALE
from wfbench_core.gpu.comparison import compare, describe_check, idempotence, never_written, poison_value


def test_compare_outputs() -> None:
    a = np.arange(10.0)
    c = compare(a, a, 0, 0)
    assert (c.passed, c.max_abs_err, c.max_rel_err, c.mismatches, c.total) == (True, 0.0, 0.0, 0, 10)
    c = compare(a + 1e-3, a, 0, 1e-4)
    assert not c.passed and c.mismatches == 10 and c.max_abs_err == pytest.approx(1e-3) and c.unwritten == 0
    nan = a.copy()
    nan[3] = np.nan  # a computed NaN is a value error, not an unwritten element
    c = compare(nan, a, 1, 1)
    assert c.mismatches == 1 and c.nonfinite == 1 and c.unwritten == 0


def test_poison_is_a_nan_no_arithmetic_makes_and_is_told_apart() -> None:
    for dtype in ("float64", "float32", "float16"):
        p = poison_value(dtype)
        assert np.isnan(p).all() and p.dtype == np.dtype(dtype)
        with np.errstate(invalid="ignore"):
            computed = np.zeros(1, dtype) / np.zeros(1, dtype)  # the NaN a kernel computes: other bits
        assert np.isnan(computed).all() and not never_written(computed).any()
    assert poison_value("int64")[0] == 0x5A5A5A5A5A5A5A5A and poison_value("int32")[0] == 0x5A5A5A5A


def test_unwritten_tail_is_reported_apart_from_value_errors_with_their_real_size() -> None:
    want = np.arange(1.0, 101.0)
    got = want.copy()
    got[90:] = poison_value(got.dtype)[0]  # the last 10 never written
    got[5] += 0.5  # one real value error
    c = compare(got, want, 0.0, 1e-9)
    assert (c.unwritten, c.mismatches, c.nonfinite) == (10, 11, 0)
    assert c.max_abs_err == pytest.approx(0.5) and c.max_rel_err == pytest.approx(0.5 / 6)
    line = describe_check(AXPY, c.check("check", "wf", "reference", "Z"))
    assert line.startswith("axpy_f64[check] WarpForth: output Z differs from the numpy reference: ")
    assert "10 of 100 elements never written (still hold the NaN poison)" in line
    assert "1 of 90 written elements outside tolerance" in line and "max abs err 0.5," in line
    assert "e+308" not in line and "inf" not in line


def test_nothing_written_says_so_and_no_warning_reaches_stderr() -> None:
    # run in a fresh interpreter with warnings turned into errors: an all-poison output must not warn
    code = (
        "import warnings, numpy as np; warnings.simplefilter('error');"
        "from wfbench_core.gpu.comparison import compare, poison_value, describe_check;"
        "from wfbench_cases.axpy_f64 import CASE;"
        "got = np.full(1000, poison_value('float64')[0]); want = np.ones(1000);"
        "c = compare(got, want, 1e-12, 0.0);"
        "print(describe_check(CASE, c.check('check', 'wf', 'reference', 'Z')))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.strip() == ("axpy_f64[check] WarpForth: output Z differs from the numpy reference: "
                                "1000 of 1000 elements never written (still hold the NaN poison)")


def test_integers_are_compared_exactly_above_2_53() -> None:
    want = np.array([2**53 + 1, -(2**62), 7], dtype=np.int64)
    got = want.copy()
    got[0] -= 1  # equal as float64, wrong as an integer
    assert float(got[0]) == float(want[0])
    c = compare(got, want, 0.0, 0.0)
    assert not c.passed and c.mismatches == 1 and c.max_abs_err == 1.0
    assert compare(want.copy(), want, 0.0, 0.0).passed
    # extreme values: |got - want| does not overflow
    c = compare(np.array([2**63 - 1]), np.array([-(2**63)]), 0.0, 0.0)
    assert not c.passed and c.max_abs_err == pytest.approx(2.0**64)
    # the sentinel is "never written" for integers too
    got = want.copy()
    got[2] = poison_value("int64")[0]
    c = compare(got, want, 0.0, 0.0)
    assert c.unwritten == 1 and c.mismatches == 1
    line = describe_check(SCALE, c.check("check", "cuda", "reference", "Y"))
    assert "CUDA: output Y" in line and "1 of 3 elements never written (still hold the sentinel 0x5a5a5a5a5a5a5a5a)" in line


def test_idempotence_compares_bits_of_two_launches() -> None:
    first = np.arange(8.0)
    assert idempotence(first, first.copy()).passed
    second = first.copy()
    second[6:] = poison_value("float64")[0]  # the second launch skipped the tail
    c = idempotence(first, second)
    assert not c.passed and c.mismatches == 2 and c.unwritten == 2
    line = describe_check(AXPY, c.check("check", "wf", "idempotent", "Z"))
    assert line == ("axpy_f64[check] WarpForth: output Z changes on a second launch into re-poisoned outputs: "
                    "2 of 8 elements differ (2 not written by the second launch)")
    nan_a, nan_b = np.array([np.nan]), np.array([-np.nan])  # different NaN bits differ
    assert not idempotence(nan_a, nan_b).passed


def test_cross_check_names_both_sides() -> None:
    c = compare(np.array([1.0, 2.0]), np.array([1.0, 2.5]), 0.0, 0.0)
    line = describe_check(AXPY, c.check("canonical", "wf~cuda", "cross", "Z"))
    tol = AXPY.tolerances["Z"]
    assert line == (f"axpy_f64[canonical] WarpForth vs CUDA: output Z WarpForth and CUDA disagree: 1 of 2 written "
                    f"elements outside tolerance (rtol {tol.rtol:g}, atol {tol.atol:g}), max abs err 0.5, "
                    f"max rel err 0.2")
