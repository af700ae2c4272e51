"""The history store: keying, refusal to mix, failed/unstable handling, atomic and concurrent writes,
corrupt and foreign files."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from synth_runs import REAL_AA, REAL_RUN, created_at, real_run, synth_run, with_case
from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError
from wfbench_core.review.history import INDEX_FILE, INDEX_VERSION, RUNS_DIR, History, add_run, reindex
from wfbench_core.review.series import protocol_tag, series_key
from wfbench_core.record.fsutil import create_exclusive
from wfbench_core.record.results import ERROR, FAILED, UNSTABLE, dumps, load_result, write_result


def run_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / RUNS_DIR).rglob("*") if p.is_file())


def test_real_run_makes_one_series_per_case(tmp_path: Path) -> None:
    run = real_run()
    out = add_run(tmp_path, run)
    assert out.added and out.path.is_file()
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
    assert json.loads((tmp_path / INDEX_FILE).read_text())["index_version"] == INDEX_VERSION


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
        assert all(s.key != old.key for old in before.series.values())


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


@pytest.mark.parametrize("status", [FAILED, ERROR])
def test_a_run_with_a_failed_or_error_case_is_refused_whole(tmp_path: Path, status: str) -> None:
    add_run(tmp_path, synth_run(0))
    before = run_files(tmp_path)
    index_before = (tmp_path / INDEX_FILE).read_bytes()
    run = with_case(synth_run(1), "scale_i64", status=status, timing=None, message="mismatch in Y")
    with pytest.raises(WfbenchError, match=rf"^r1.json: 1 case did not pass \(scale_i64 {status.upper()}: "
                                           rf"mismatch in Y\); a failed run is never stored$"):
        add_run(tmp_path, run, where="r1.json")
    assert run_files(tmp_path) == before and (tmp_path / INDEX_FILE).read_bytes() == index_before
    assert all(len(s.points) == 1 for s in History.open(tmp_path).series.values())


def test_an_incomplete_run_is_refused_unless_asked_for(tmp_path: Path) -> None:
    run = attrs.evolve(synth_run(0), complete=False)
    with pytest.raises(WfbenchError, match="incomplete run"):
        add_run(tmp_path / "h", run, where="partial.json")
    assert not (tmp_path / "h" / RUNS_DIR).exists()
    out = add_run(tmp_path / "h", run, allow_incomplete=True)
    assert out.added and load_result(out.path).complete is False
    # a failed case is refused even then
    failed = attrs.evolve(with_case(synth_run(1), "axpy_f64", status=FAILED, timing=None), complete=False)
    with pytest.raises(WfbenchError, match="axpy_f64 FAILED"):
        add_run(tmp_path / "h", failed, allow_incomplete=True)


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
    assert create_exclusive(target, b"first")
    assert not create_exclusive(target, b"second")
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
    # a figure no statistic is made from (an edited median is refused before its name is looked at: its samples
    # give another one)
    victim.write_text(victim.read_text().replace('"wall_s": 0', '"wall_s": 1', 1))
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


def test_cli_add_refuses_a_failed_run_and_writes_nothing(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write_result(synth_run(0), good)
    write_result(with_case(synth_run(1), "axpy_f64", status=FAILED, timing=None,
                           message="Y: 3 of 4096 elements differ"), bad)
    res = CliRunner().invoke(main, ["history", "add", str(good), str(bad), "--history", str(hist)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    (line,) = res.stderr.strip().splitlines()
    assert str(bad) in line and "axpy_f64 FAILED: Y: 3 of 4096 elements differ" in line and "nothing written" in line
    assert not hist.exists()

    partial = tmp_path / "partial.json"
    write_result(attrs.evolve(synth_run(2), complete=False), partial)
    res = CliRunner().invoke(main, ["history", "add", str(partial), "--history", str(hist)])
    assert res.exit_code == 2 and "incomplete run" in res.stderr and not hist.exists()
    res = CliRunner().invoke(main, ["history", "add", str(partial), "--history", str(hist), "--allow-incomplete"])
    assert res.exit_code == 0, res.output
    assert len(run_files(hist)) == 1


def test_a_non_default_protocol_starts_its_own_series(tmp_path: Path) -> None:
    canonical = synth_run(0)
    quick = attrs.evolve(synth_run(1), protocol=attrs.evolve(canonical.protocol, samples=5))
    budget = attrs.evolve(synth_run(2), protocol=attrs.evolve(canonical.protocol, suite_budget_s=30.0))
    assert protocol_tag(canonical.protocol) == "" and protocol_tag(quick.protocol) == "samples=5"
    assert protocol_tag(budget.protocol) == "", "a budget only refuses cases; it changes no measurement"
    for run in (canonical, quick, budget):
        add_run(tmp_path, run)
    h = History.open(tmp_path)
    axpy = [s for s in h.series.values() if s.key.case_id == "axpy_f64"]
    assert sorted((s.key.protocol, len(s.points)) for s in axpy) == [("", 2), ("samples=5", 1)]
    (published,) = [s for s in axpy if s.key.canonical]
    assert quick.created not in {p.created for p in published.points}
    # the canonical series keeps the name it had before the protocol joined the key (the id of this series in
    # the example history written by the previous wfbench)
    assert published.id == series_key(canonical, canonical.case("axpy_f64")).id == "1fb7671af8a6"
    # the platform (what a headline may combine) tells the protocols apart; its last field is the compiler label
    key = series_key(quick, quick.case("axpy_f64"))
    assert key.platform != series_key(canonical, canonical.case("axpy_f64")).platform
    assert attrs.evolve(key, compiler_label="base").platform[:-1] == key.platform[:-1]


def test_the_timing_mode_is_in_the_key(tmp_path: Path) -> None:
    run = synth_run(0)
    graph = attrs.evolve(synth_run(1), mode="graph")  # a run-level timing mode: its cases keep "paired"
    a, b = (series_key(r, r.case("axpy_f64")) for r in (run, graph))
    assert a.mode == "paired" and b.mode == "paired+graph" and a.id != b.id


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_written_files_honour_the_umask(tmp_path: Path, umask: int) -> None:
    code = (
        "import os, sys; os.umask(int(sys.argv[1], 8));"
        "from pathlib import Path; from synth_runs import synth_run;"
        "from wfbench_core.review.history import add_run; from wfbench_core.record.fsutil import atomic_write;"
        "out = add_run(sys.argv[2], synth_run(0)); atomic_write(Path(sys.argv[2]) / 'page.html', 'x');"
        "print(out.path)"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), str(Path(__file__).parents[1])]))
    out = subprocess.run([sys.executable, "-c", code, oct(umask)[2:], str(tmp_path)], capture_output=True,
                         text=True, env=env, check=True)
    site = tmp_path / "site"
    code = f"import os, sys; os.umask({umask}); from wfbench_core.cli import main; sys.exit(main())"
    subprocess.run([sys.executable, "-c", code, "dashboard", "--history", str(tmp_path), "--out", str(site)],
                   capture_output=True, text=True, env=env, check=True)
    want = 0o666 & ~umask
    for path in (Path(out.stdout.strip()), tmp_path / INDEX_FILE, tmp_path / "page.html", site / "index.html"):
        assert path.stat().st_mode & 0o777 == want, (path, oct(path.stat().st_mode))
    # folders too: a bundle is built in a temporary folder (fsutil.make_temp_dir) and renamed into place
    code = ("import os, sys; os.umask(int(sys.argv[1], 8)); from pathlib import Path;"
            "from wfbench_core.record.fsutil import make_temp_dir; print(make_temp_dir('.bundle.', Path(sys.argv[2])))")
    made = subprocess.run([sys.executable, "-c", code, oct(umask)[2:], str(tmp_path)], capture_output=True,
                          text=True, env=env, check=True).stdout.strip()
    assert Path(made).stat().st_mode & 0o777 == 0o777 & ~umask


def test_an_index_written_under_other_protocol_defaults_is_rebuilt(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Keys name the settings that differ from the defaults: if a wfbench release changes a default, the
    stored keys are stale and the index must be derived again, never trusted."""
    import wfbench_core.review.history as history

    add_run(tmp_path, synth_run(0))
    assert History.open(tmp_path).index_fresh
    old = history.protocol_defaults()
    monkeypatch.setattr(history, "protocol_defaults", lambda: old.replace('"samples":60', '"samples":40'))
    h = History.open(tmp_path)
    assert not h.index_fresh and len(h.series) == 2 and not h.problems


def test_a_symlink_loop_in_runs_is_warned_about_like_any_file_that_is_not_a_run(tmp_path: Path) -> None:
    add_run(tmp_path, synth_run(0))
    year = run_files(tmp_path)[0].parent
    loop1, loop2 = year / "20261105T060000Z-1111111111111111.json", year / "loop2"
    loop1.symlink_to(loop2)
    loop2.symlink_to(loop1)
    foreign = year / "20261106T060000Z-2222222222222222.json"
    foreign.write_text(json.dumps({"benchmarks": []}))
    for args in (["history", "list"], ["history", "reindex"], ["check"]):
        res = CliRunner().invoke(main, [*args, "--history", str(tmp_path)])
        warned = [ln for ln in res.stderr.splitlines() if ln.startswith("wfbench: warning:")]
        assert any(str(loop1) in ln and "symbolic link" in ln for ln in warned), (args, res.stderr)
        assert any(str(loop2) in ln for ln in warned), (args, res.stderr)
        assert any(str(foreign) in ln for ln in warned), (args, res.stderr)
        assert "Traceback" not in res.output


def test_a_lock_held_by_another_process_is_one_line_not_a_wait_without_end(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import wfbench_core.review.history as history

    add_run(tmp_path, synth_run(0))
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'a+b'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
                               str(tmp_path / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(history, "LOCK_WAIT_S", 0.0)
        path = tmp_path / "r.json"
        write_result(synth_run(1), path)
        res = CliRunner().invoke(main, ["history", "add", str(path), "--history", str(tmp_path)])
        assert res.exit_code == 2, res.output
        assert res.stderr.strip().splitlines() == [
            f"wfbench: error: {tmp_path / '.lock'}: held by another process writing this history (waited 0 s); "
            f"try again when it has finished"], res.stderr
        assert len(run_files(tmp_path)) == 1
    finally:
        holder.communicate("")
    res = CliRunner().invoke(main, ["history", "add", str(path), "--history", str(tmp_path)])
    assert res.exit_code == 0 and len(run_files(tmp_path)) == 2, res.output


def _tree_hash(root: Path) -> dict[str, str]:
    import hashlib

    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_read_only_commands_never_change_a_stored_history(tmp_path: Path) -> None:
    """Every command that only reads leaves every file of the history as it was: a run file is write-once."""
    from wfbench_core.compiling.compile import find_nvcc

    hist = tmp_path / "hist"
    for n in range(2):
        add_run(hist, synth_run(n))
    a, b = run_files(hist)
    before = _tree_hash(hist)
    reads = [["history", "list", "--history", str(hist)], ["history", "list", "--json", "--history", str(hist)],
             ["check", "--history", str(hist)], ["check", str(b), "--history", str(hist)],
             ["compare", str(a), str(b)], ["export", str(b)],
             ["dashboard", "--history", str(hist), "--out", str(tmp_path / "site")]]
    if find_nvcc() is not None:  # explain compiles the CUDA side
        reads.append(["explain", "axpy_f64", "--wf-ptx", str(REAL_RUN.parent / "ptx" / "axpy_f64.canonical.ptx"),
                      "--result", str(b), "-q"])
    for args in reads:
        res = CliRunner().invoke(main, args)
        assert "Traceback" not in res.output, (args, res.output)
        assert _tree_hash(hist) == before, args
