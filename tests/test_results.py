"""The result schema: round trips over stored JSON from real runs, and clear errors for bad files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from wfbench_core.errors import WfbenchError
from wfbench_core.record import result_rules
from wfbench_core.record.results import SCHEMA_VERSION, RunResult, converter, dumps, load_result, loads, write_result

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = sorted(FIXTURES.glob("h200-*.json"))


@pytest.mark.parametrize("path", RUNS, ids=[p.name for p in RUNS])
def test_stored_results_round_trip(path: Path) -> None:
    result = load_result(path)
    assert isinstance(result, RunResult)
    again = loads(dumps(result))
    assert again == result
    # Nothing is lost against the stored JSON, read as the schema it upgrades to (new fields may be added
    # with defaults; schema 1's measured Timing.warmup_s is schema 2's warmup_busy_s).
    stored = json.loads(path.read_text())
    while stored["schema_version"] != SCHEMA_VERSION:
        stored = result_rules.UPGRADES[stored["schema_version"]](stored)
    _assert_contained(stored, converter().unstructure(result), "$")


def test_schema_1_results_are_read_with_the_measured_warm_up_renamed() -> None:
    raw = json.loads((FIXTURES / "h200-aa.json").read_text())
    assert raw["schema_version"] == 1 and "warmup_s" in raw["cases"][0]["timing"]
    result = load_result(FIXTURES / "h200-aa.json")
    assert result.schema_version == SCHEMA_VERSION == 6
    assert result.cases[0].timing.warmup_busy_s == raw["cases"][0]["timing"]["warmup_s"]
    assert result.protocol.warmup_s == raw["protocol"]["warmup_s"]  # the setting keeps its name
    # from before placements, adaptive stopping and rotation: it reads as what it did, not as today's defaults
    p = result.protocol
    assert (p.placements, p.rotation, p.min_samples, p.target_halfwidth, p.case_budget_s) == (
        1, 1, raw["protocol"]["samples"], 0.0, 0.0)


def test_schema_2_results_read_as_before_rotation() -> None:
    raw = json.loads((FIXTURES / "h200-aa.json").read_text())
    two = result_rules.UPGRADES[1](raw)
    assert two["schema_version"] == 2 and "rotation" not in two["protocol"]
    three = result_rules.UPGRADES[2](two)
    assert three["schema_version"] == 3 and three["protocol"]["rotation"] == 1


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


def _real() -> dict:  # type: ignore[type-arg]
    return json.loads((FIXTURES / "h200-run1.json").read_text())


def _with(**changes: object) -> bytes:
    data = _real()
    data.update(changes)
    return json.dumps(data).encode()


def _case_with(**changes: object) -> bytes:
    data = _real()
    data["cases"][0].update(changes)
    return json.dumps(data).encode()


def _timing_with(*, wf: list[float] | None = None, cuda: list[float] | None = None, median: float | None = None,
                 **timing: object) -> bytes:
    """The real result with the first case's timing changed."""
    data = _real()
    t = data["cases"][0]["timing"]
    for side, values in (("warpforth", wf), ("cuda", cuda)):
        if values is not None:
            t[side]["samples_us"] = values
    if median is not None:
        t["warpforth"]["median_us"] = median
    t.update(timing)
    return json.dumps(data).encode()


REAL_BYTES = (FIXTURES / "h200-run1.json").read_bytes()
# every kind of file that is not a wfbench result, and the reason the one loader must give for it
BAD_FILES = {
    "binary": (bytes(range(256)) * 4, r"binary data, not JSON text"),
    "latin1": ('{"schema_version": 1, "label": "caf\xe9"}'.encode("latin-1"), r"not UTF-8 text: byte 0xe9"),
    "empty": (b"", r"empty file"),
    "truncated": (REAL_BYTES[:500], r"truncated JSON"),
    "cut_in_a_string": (REAL_BYTES[:300], r"truncated JSON: it ends at line"),
    "garbage": (b"schema_version = 1\n", r"not valid JSON: Expecting value at line 1 column 1"),
    "hello": (b'{"hello": "world"}', r"no schema_version or cases; its keys: hello"),
    "array": (b"[1, 2, 3]", r"a JSON list, not an object"),
    "foreign": (json.dumps([{"name": "x", "unit": "us", "value": 1}]).encode(), r"a JSON list, not an object"),
    "manifest": (json.dumps({"bundle_version": 1, "cases": []}).encode(), r"no schema_version or cases"),
    "created": (_with(created="yesterday"), r"'created' is 'yesterday', not an ISO 8601 time"),
    "status": (_case_with(status="great"), r"case 'axpy_f64' has status 'great'"),
    "type": (_with(cases="many"), r"'cases' is a JSON str, not a list"),
    "field": (_case_with(timing="fast"), r"\$\.cases\[0\]\.timing"),
    "extra": (_with(surprise=1), r"extra fields found \(surprise\)"),
    # figures no measurement can give: refused here, so no command prints a figure made of them
    "unequal": (_timing_with(cuda=[2.0, 2.0, 2.0]), r"case 'axpy_f64' has 30 WarpForth samples but 3 CUDA samples"),
    "no_samples": (_timing_with(wf=[], cuda=[]), r"case 'axpy_f64' has no WarpForth samples"),
    "zero": (_timing_with(cuda=[0.0] * 30), r"case 'axpy_f64' has a CUDA sample of 0.0 us"),
    "negative": (_timing_with(wf=[-1.5] * 30), r"case 'axpy_f64' has a WarpForth sample of -1.5 us"),
    "negative_median": (_timing_with(median=-3.0), r"has a WarpForth median of -3.0 us"),
    "gap": (_timing_with(gap=-14702.375), r"case 'axpy_f64' has a gap of -14702.375; times must be positive"),
    "nan": (REAL_BYTES.replace(b'"gap": ', b'"gap": NaN, "x": ', 1), r"not valid JSON: NaN is not a JSON number"),
    "huge": (REAL_BYTES.replace(b'"gap": ', b'"gap": 1e999, "x": ', 1), r"not valid JSON: 1e999 is not a finite"),
    "placements": (_timing_with(placement_of=[0, 1]), r"2 entries in placement_of for 30 pairs"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_the_one_loader_refuses_what_is_not_a_result(tmp_path: Path, name: str) -> None:
    data, why = BAD_FILES[name]
    path = tmp_path / f"{name}.json"
    path.write_bytes(data)
    with pytest.raises(WfbenchError, match=rf"^{re.escape(str(path))}: not a wfbench result \(.*{why}"):
        load_result(path)
    with pytest.raises(WfbenchError) as exc:
        load_result(path)
    assert "\n" not in str(exc.value)


def test_other_schema_versions_are_named() -> None:
    with pytest.raises(WfbenchError, match=r"^x.json: a wfbench result of schema version 99; this wfbench reads "
                                           r"versions 1 to 6; use the wfbench version that wrote it$"):
        loads(_with(schema_version=99).decode(), where="x.json")


def test_unreadable_files_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WfbenchError, match="cannot read"):
        load_result(tmp_path / "missing.json")
    with pytest.raises(WfbenchError, match="a directory, not a result file"):
        load_result(tmp_path)


def _cli(*args: str) -> "object":
    from click.testing import CliRunner

    from wfbench_core.cli import main

    return CliRunner().invoke(main, list(args))


def _commands(path: Path, tmp_path: Path) -> dict[str, list[str]]:
    hist = tmp_path / "hist"
    good = str(FIXTURES / "h200-run1.json")
    return {
        "history add": ["history", "add", str(path), "--history", str(hist)],
        "compare base": ["compare", str(path), good],
        "compare head": ["compare", good, str(path)],
        "compare one": ["compare", str(path)],
        "export": ["export", str(path)],
        "check": ["check", str(path), "--history", str(hist)],
    }


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_every_command_refuses_a_bad_file_alike(tmp_path: Path, name: str) -> None:
    data, why = BAD_FILES[name]
    path = tmp_path / f"{name}.json"
    path.write_bytes(data)
    for command, args in _commands(path, tmp_path).items():
        res = _cli(*args)
        assert res.exit_code == 2, (command, res.output)  # type: ignore[attr-defined]
        assert res.exception is None or isinstance(res.exception, SystemExit), command  # type: ignore[attr-defined]
        (line,) = res.stderr.strip().splitlines()  # type: ignore[attr-defined]
        assert re.match(rf"wfbench: error: {re.escape(str(path))}: not a wfbench result \(.*{why}", line), (command, line)
        assert "Traceback" not in res.output  # type: ignore[attr-defined]
    assert not (tmp_path / "hist").exists(), "nothing written"


def test_a_real_process_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "binary.json"
    path.write_bytes(bytes(range(256)))
    for args in (["history", "add", str(path), "--history", str(tmp_path / "h")], ["compare", str(path), str(path)],
                 ["export", str(path)], ["check", str(path), "--history", str(tmp_path / "h")]):
        proc = subprocess.run([sys.executable, "-m", "wfbench_core", *args], capture_output=True, text=True,
                              cwd=Path(__file__).parents[1])
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr == f"wfbench: error: {path}: not a wfbench result (binary data, not JSON text)\n"
        assert proc.stdout == ""


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
