"""The history store: keying, refusal to mix, failed/unstable handling, atomic and concurrent writes,
corrupt and foreign files."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from synth_runs import REAL_AA, REAL_RUN, created_at, real_run, synth_run, with_case
from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError
from wfbench_core.history import (
    INDEX_FILE, RUNS_DIR, History, _create_exclusive, add_run, reindex, series_key,
)
from wfbench_core.results import ERROR, FAILED, UNSTABLE, dumps, load_result, write_result


def run_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / RUNS_DIR).rglob("*") if p.is_file())


def test_real_run_makes_one_series_per_case(tmp_path: Path) -> None:
    run = real_run()
    out = add_run(tmp_path, run)
    assert out.added and out.path.is_file() and not out.dropped
    assert [new for _, _, new in out.series] == [True] * len(run.cases)
    h = History.open(tmp_path)
    assert h.index_fresh and not h.problems
    assert len(h.series) == len(run.cases)
    for case in run.cases:
        s = h.series[series_key(run, case).id]
        assert s.key.case_id == case.id and s.key.gpu_name == "NVIDIA H200"
        (p,) = s.points
        assert p.gap == case.timing.gap and p.wf.median_us == case.timing.warpforth.median_us
        assert p.gap_lo <= p.gap <= p.gap_hi
    # the stored file is the run itself, readable with the ordinary loader
    assert load_result(out.path) == run
    assert json.loads((tmp_path / INDEX_FILE).read_text())["index_version"] == 1


def test_the_same_run_twice_is_a_no_op(tmp_path: Path) -> None:
    first = add_run(tmp_path, real_run())
    before = {p: p.read_bytes() for p in run_files(tmp_path)}
    index_before = (tmp_path / INDEX_FILE).read_bytes()
    again = add_run(tmp_path, load_result(REAL_RUN))
    assert not again.added and again.path == first.path
    assert {p: p.read_bytes() for p in run_files(tmp_path)} == before
    assert (tmp_path / INDEX_FILE).read_bytes() == index_before
    assert all(len(s.points) == 1 for s in History.open(tmp_path).series.values())


BOTH = {"axpy_f64", "scale_i64"}
AXPY = {"axpy_f64"}


@pytest.mark.parametrize("change,changed_cases", [
    pytest.param(lambda r: attrs.evolve(r, environment=attrs.evolve(r.environment, gpu_name="NVIDIA H100 80GB HBM3")),
                 BOTH, id="gpu-model"),
    pytest.param(lambda r: attrs.evolve(r, environment=attrs.evolve(r.environment, compute_capability="8.9")),
                 BOTH, id="compute-capability"),
    pytest.param(lambda r: with_case(r, "axpy_f64", version=2), AXPY, id="case-version"),
    pytest.param(lambda r: with_case(r, "axpy_f64", fingerprint="0" * 64), AXPY, id="fingerprint"),
    pytest.param(lambda r: with_case(r, "axpy_f64", cuda_source_sha256="1" * 64), AXPY, id="baseline-hash"),
    pytest.param(lambda r: attrs.evolve(r, cuda_compiler=attrs.evolve(r.cuda_compiler, flags=("-O3",))),
                 BOTH, id="cuda-flags"),
    pytest.param(lambda r: attrs.evolve(r, cuda_compiler=attrs.evolve(r.cuda_compiler, version="12.4.131")),
                 BOTH, id="cuda-version"),
    pytest.param(lambda r: with_case(r, "axpy_f64", mode="aa"), AXPY, id="timing-mode"),
    pytest.param(lambda r: attrs.evolve(r, environment=attrs.evolve(r.environment, gpu_uuid="GPU-other", host="b")),
                 set(), id="same-model-other-board"),
])
def test_a_changed_key_starts_a_new_series_and_never_mixes(tmp_path: Path, change, changed_cases) -> None:  # type: ignore[no-untyped-def]
    add_run(tmp_path, synth_run(0))
    before = History.open(tmp_path)
    out = add_run(tmp_path, change(synth_run(1)))
    after = History.open(tmp_path)
    new = {key.case_id for _, key, is_new in out.series if is_new}
    assert new == changed_cases
    assert len(after.series) == len(before.series) + len(changed_cases)
    for sid, old in before.series.items():
        # the old series of a changed case keeps only its own point; the others grow by one
        expected = 1 if old.key.case_id in changed_cases else 2
        assert len(after.series[sid].points) == expected, old.key.case_id
    for sid in set(after.series) - set(before.series):
        s = after.series[sid]
        assert len(s.points) == 1
        assert all(s.key.differences(old.key) for old in before.series.values())


def test_warpforthc_version_is_not_in_the_key(tmp_path: Path) -> None:
    add_run(tmp_path, synth_run(0))
    later = synth_run(1)
    later = attrs.evolve(later, warpforthc=attrs.evolve(later.warpforthc, version="build-000000000001",
                                                        binary_sha256="ab" * 32))
    out = add_run(tmp_path, later)
    assert not any(new for _, _, new in out.series)
    h = History.open(tmp_path)
    for s in h.series.values():
        assert [p.warpforthc_version for p in s.points] == ["build-c7161f232a09", "build-000000000001"]


def test_failed_and_error_cases_are_never_stored(tmp_path: Path) -> None:
    run = with_case(synth_run(0), "scale_i64", status=FAILED, timing=None, message="mismatch in Y")
    out = add_run(tmp_path, run)
    assert out.dropped == ("scale_i64",)
    stored = load_result(out.path)
    assert [c.id for c in stored.cases] == ["axpy_f64"]
    assert {s.key.case_id for s in History.open(tmp_path).series.values()} == {"axpy_f64"}


def test_a_run_with_nothing_correct_is_refused_and_nothing_written(tmp_path: Path) -> None:
    run = synth_run(0)
    run = attrs.evolve(run, cases=tuple(attrs.evolve(c, status=ERROR, timing=None) for c in run.cases))
    with pytest.raises(WfbenchError, match="no correct, timed case"):
        add_run(tmp_path / "h", run, where="bad.json")
    assert not (tmp_path / "h" / RUNS_DIR).exists()


def test_unstable_cases_are_stored_and_marked(tmp_path: Path) -> None:
    run = synth_run(0, jitter={"scale_i64": 0.08})
    assert run.case("scale_i64").status == UNSTABLE and run.case("axpy_f64").status == "ok"
    add_run(tmp_path, run)
    h = History.open(tmp_path)
    by_case = {s.key.case_id: s for s in h.series.values()}
    assert not by_case["scale_i64"].points[0].stable
    assert by_case["scale_i64"].stable_points == ()
    assert by_case["axpy_f64"].points[0].stable


def test_points_are_ordered_by_time_whatever_the_order_of_adding(tmp_path: Path) -> None:
    for n in (3, 0, 2, 1):
        add_run(tmp_path, synth_run(n))
    for s in History.open(tmp_path).series.values():
        assert [p.created for p in s.points] == [created_at(n) for n in range(4)]


def test_existing_files_are_never_replaced(tmp_path: Path) -> None:
    target = tmp_path / "runs" / "x.json"
    assert _create_exclusive(target, b"first")
    assert not _create_exclusive(target, b"second")
    assert target.read_bytes() == b"first"
    assert [p.name for p in target.parent.iterdir()] == ["x.json"], "no temporary file left behind"


def _writer(root: str, files: list[str], barrier) -> None:  # type: ignore[no-untyped-def]
    barrier.wait()
    for f in files:
        add_run(root, load_result(f))


def test_two_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    files = []
    for n in range(12):
        path = src / f"r{n}.json"
        write_result(synth_run(n), path)
        files.append(str(path))
    root = tmp_path / "history"
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(root), files[i::2], barrier)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(run_files(root)) == 12
    index = json.loads((root / INDEX_FILE).read_text())
    assert len(index["runs"]) == 12, "the index lists every run: no writer overwrote another's update"
    h = History.open(root)
    assert h.index_fresh and not h.problems
    assert sorted(len(s.points) for s in h.series.values()) == [12, 12]
    rebuilt = History.open(root, rebuild=True)
    assert rebuilt.index() == h.index()


def test_corrupt_and_foreign_files_are_reported_and_the_rest_stays_usable(tmp_path: Path) -> None:
    for n in range(3):
        add_run(tmp_path, synth_run(n))
    good = run_files(tmp_path)
    year = good[0].parent
    truncated = year / "20261102T060000Z-0123456789abcdef.json"
    truncated.write_text(good[0].read_text()[:500])
    foreign_json = year / "20261103T060000Z-fedcba9876543210.json"
    foreign_json.write_text(json.dumps({"benchmarks": []}))
    stray = year / "notes.txt"
    stray.write_text("not a run")
    leftover = year / ".20261104T060000Z-aaaaaaaaaaaaaaaa.json.x1.tmp"  # an interrupted write
    leftover.write_text("{")

    h = History.open(tmp_path)
    reported = {Path(p.path).name: p.message for p in h.problems}
    assert set(reported) == {truncated.name, foreign_json.name, stray.name}
    assert reported[truncated.name].startswith("not a wfbench result (truncated JSON")
    assert reported[foreign_json.name] == "not a wfbench result (no schema_version or cases; its keys: benchmarks); " \
                                          "skipped"
    assert "not a wfbench run file" in reported[stray.name]
    assert sorted(len(s.points) for s in h.series.values()) == [3, 3]

    # adding still works, and the bad files are left exactly as they were
    add_run(tmp_path, synth_run(3))
    assert sorted(len(s.points) for s in History.open(tmp_path).series.values()) == [4, 4]
    assert truncated.read_text() == good[0].read_text()[:500]

    result = CliRunner().invoke(main, ["history", "list", "--history", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert str(truncated) in result.stderr and str(stray) in result.stderr
    assert "4 series" not in result.stdout and "2 series from 4 runs" in result.stdout


def test_a_stored_file_edited_later_is_caught_on_reindex(tmp_path: Path) -> None:
    for n in range(2):
        add_run(tmp_path, synth_run(n))
    victim = run_files(tmp_path)[0]
    victim.write_text(victim.read_text().replace('"median_us": 1', '"median_us": 2', 1))
    h = reindex(tmp_path)
    assert [Path(p.path).name for p in h.problems] == [victim.name]
    assert "does not match the hash in its name" in h.problems[0].message
    assert sorted(len(s.points) for s in h.series.values()) == [1, 1]


def test_the_index_is_derived(tmp_path: Path) -> None:
    for n in range(3):
        add_run(tmp_path, synth_run(n))
    truth = History.open(tmp_path).index()
    (tmp_path / INDEX_FILE).unlink()
    assert History.open(tmp_path).index() == truth
    (tmp_path / INDEX_FILE).write_text('{"index_version": 1, "runs": [')
    damaged = History.open(tmp_path)
    assert damaged.index() == truth
    assert [Path(p.path).name for p in damaged.problems] == [INDEX_FILE]
    result = CliRunner().invoke(main, ["history", "reindex", "--history", str(tmp_path)])
    assert result.exit_code == 0, result.output
    fresh = History.open(tmp_path)
    assert fresh.index_fresh and not fresh.problems and fresh.index() == truth


def test_runs_copied_in_without_the_index_are_picked_up(tmp_path: Path) -> None:
    """A data branch merged by git: run files arrive, the index is stale; readers still see everything."""
    a, b = tmp_path / "a", tmp_path / "b"
    add_run(a, synth_run(0))
    add_run(b, synth_run(1))
    for f in run_files(b):
        dest = a / f.relative_to(b)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read_bytes())
    h = History.open(a)
    assert not h.index_fresh and not h.problems
    assert sorted(len(s.points) for s in h.series.values()) == [2, 2]


def test_cli_add_list_and_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    hist = tmp_path / "h"
    ok = runner.invoke(main, ["history", "add", str(REAL_RUN), str(REAL_AA), "--history", str(hist)])
    assert ok.exit_code == 0, ok.output
    assert ok.output.count("new series") == 4
    listed = runner.invoke(main, ["history", "list", "--history", str(hist)])
    assert listed.exit_code == 0
    assert "axpy_f64 v1" in listed.output and "4 series from 2 runs" in listed.output
    as_json = json.loads(runner.invoke(main, ["history", "list", "--json", "--history", str(hist)]).output)
    assert {s["key"]["mode"] for s in as_json["series"]} == {"paired", "aa"}

    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "cases": ')
    before = run_files(hist)
    res = runner.invoke(main, ["history", "add", str(REAL_RUN), str(bad), "--history", str(hist)])
    assert res.exit_code == 2
    assert res.stderr.strip().count("\n") == 0 and str(bad) in res.stderr and "Traceback" not in res.output
    assert run_files(hist) == before

    missing = runner.invoke(main, ["history", "list", "--history", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such history directory" in missing.stderr


def test_stored_bytes_match_the_converter(tmp_path: Path) -> None:
    out = add_run(tmp_path, real_run())
    assert out.path.read_text() == dumps(real_run())
