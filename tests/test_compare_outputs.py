"""The elementwise comparison behind every correctness check (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from wfbench_core.timer import compare


def test_compare_outputs() -> None:
    a = np.arange(10.0)
    assert compare(a, a, 0, 0) == (True, 0.0, 0.0, 0)
    ok, ea, er, bad = compare(a + 1e-3, a, 0, 1e-4)
    assert not ok and bad == 10 and ea == pytest.approx(1e-3)
    nan = a.copy()
    nan[3] = np.nan
    assert compare(nan, a, 1, 1)[3] == 1  # an unwritten (NaN-filled) element always fails
