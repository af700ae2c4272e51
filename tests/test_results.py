"""The result schema: round trips over stored JSON from real runs, and clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from wfbench_core.errors import WfbenchError
from wfbench_core.results import RunResult, converter, dumps, load_result, loads, write_result

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = sorted(FIXTURES.glob("h200-*.json"))


@pytest.mark.parametrize("path", RUNS, ids=[p.name for p in RUNS])
def test_stored_results_round_trip(path: Path) -> None:
    result = load_result(path)
    assert isinstance(result, RunResult)
    again = loads(dumps(result))
    assert again == result
    # Nothing is lost against the stored JSON (new fields may be added with defaults).
    _assert_contained(json.loads(path.read_text()), converter().unstructure(result), "$")


def _assert_contained(stored: object, dumped: object, where: str) -> None:
    if isinstance(stored, dict):
        assert isinstance(dumped, dict), where
        for key, value in stored.items():
            assert key in dumped, f"{where}.{key} lost"
            _assert_contained(value, dumped[key], f"{where}.{key}")
    elif isinstance(stored, list):
        assert isinstance(dumped, list) and len(stored) == len(dumped), where
        for i, (a, b) in enumerate(zip(stored, dumped)):
            _assert_contained(a, b, f"{where}[{i}]")
    else:
        assert stored == dumped, where


def test_real_run_carries_paired_samples_and_metadata() -> None:
    result = load_result(FIXTURES / "h200-run1.json")
    assert result.environment.gpu_name == "NVIDIA H200" and result.environment.gpu_uuid.startswith("GPU-")
    assert result.cuda_compiler.flags and "-fmad=false" in result.cuda_compiler.flags
    for case in result.cases:
        t = case.timing
        assert t is not None and len(t.warpforth.samples_us) == len(t.cuda.samples_us) == len(t.order)
        assert t.gap == pytest.approx(t.warpforth.median_us / t.cuda.median_us)
        assert all(c.passed for c in case.checks)


def test_unknown_keys_are_refused() -> None:
    data = json.loads((FIXTURES / "h200-run1.json").read_text())
    data["surprise"] = 1
    with pytest.raises(WfbenchError, match=r"^x.json: not a wfbench RunResult"):
        loads(json.dumps(data), where="x.json")


def test_other_schema_versions_are_refused() -> None:
    data = json.loads((FIXTURES / "h200-run1.json").read_text())
    data["schema_version"] = 99
    with pytest.raises(WfbenchError, match="schema_version 99 is not 1"):
        loads(json.dumps(data))


def test_truncated_file_is_one_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "cut.json"
    p.write_text((FIXTURES / "h200-run1.json").read_text()[:500])
    with pytest.raises(WfbenchError, match=r"cut.json: not valid JSON .*is the file complete"):
        load_result(p)
    with pytest.raises(WfbenchError, match="cannot read"):
        load_result(tmp_path / "missing.json")


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    result = load_result(FIXTURES / "h200-run1.json")
    out = tmp_path / "sub" / "r.json"
    write_result(result, out)
    write_result(attrs.evolve(result, wall_s=1.0), out)
    assert load_result(out).wall_s == 1.0
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]


def test_json_never_contains_nan() -> None:
    result = load_result(FIXTURES / "h200-run1.json")
    bad = attrs.evolve(result, wall_s=float("nan"))
    with pytest.raises(ValueError):
        dumps(bad)
