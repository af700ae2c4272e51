"""The power study's board test (``tools/verdict_runs.py boards``) with the stand-in GPU: a file of its own, the
longest of the power study's tests, so that a test worker takes it apart from the rest of tests/test_power_study.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from testkit import load_tool, use_stand_in_gpu


def test_two_boards_a_two_percent_regression_is_slower_and_inert_changes_are_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvcc) -> None:  # type: ignore[no-untyped-def]
    """``tools/verdict_runs.py boards`` with the stand-in GPU (one board per visible device): what a GPU host with two boards runs
    on two H200 boards, end to end through execute, compare and check."""
    vr = load_tool("verdict_runs")
    use_stand_in_gpu(monkeypatch, FAKE_GPU_CHAIN_COST="0.00002")
    monkeypatch.setattr(sys, "argv", ["verdict_runs.py", "boards", "--out", str(tmp_path)])
    vr.main()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["boards"]["base"] != summary["boards"]["slow"] == summary["boards"]["same"]
    slow, same = summary["slow"], summary["same"]
    assert slow["compare_exit"] == slow["check_exit"] == 1 and same["compare_exit"] == same["check_exit"] == 0
    axpy = next(line for line in slow["compare"] if line.startswith("axpy_f64"))
    assert axpy.endswith("SLOWER (other board)")
    assert not any("SLOWER" in line or "FASTER" in line for line in same["compare"] + same["check"])
