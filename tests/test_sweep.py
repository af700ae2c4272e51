"""``wfbench sweep``: a case over sizes, each size checked and timed as a run's case, in one worker.

Without a GPU the executor and its worker run for real and the timer is the stand-in of tests/fake_gpu.py
(``sized``: times follow each point's work, a launch costs at least the launch floor in events mode), so the
launch-bound rule and the graph re-timing are exercised through the real messages. Bundles come from the real
warpforthc's PTX kept in tests/fixtures/ptx, or from the stand-in warpforthc that answers with it. The same
sweep on a real GPU is ``test_sweep_on_the_gpu`` (``pytest -m gpu``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from standins import warpforthc_text
from testkit import STORED_PTX, stored_ptx_bundle, use_stand_in_gpu
from wfbench_core.cli import main
from wfbench_core.cli.sweep import parse_range, parse_size
from wfbench_core.discover.registry import Registry
from wfbench_core.errors import WfbenchError
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import ERROR, OK, TIMING_EVENTS, TIMING_GRAPH, TimingProtocol, UNSTABLE, parse_result
from wfbench_core.record.sweep_record import load_sweep, parse_sweep
from wfbench_core.review.history import History
from wfbench_core.run.sweep import sweep
from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

QUICK = TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=5)
SIZES = [{"N": 1 << 12}, {"N": 1 << 16}, {"N": 1 << 20}]  # the sizes tests/fixtures/ptx holds a sweep PTX for


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def error_line(result) -> str:  # type: ignore[no-untyped-def]
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith(("wfbench: error:", "Error:"))]
    assert len(lines) == 1 and "Traceback" not in result.output + result.stderr, result.output + result.stderr
    return lines[0]


def sweep_bundle(out: Path, case_ids=("axpy_f64",), sizes=SIZES) -> Path:  # type: ignore[no-untyped-def]
    reg = Registry.load()
    cases = [reg.case(c) for c in case_ids]
    bundle_from_ptx(cases, out, ptx_dir_loader(STORED_PTX), sweeps={c.id: c.sweep_points(sizes) for c in cases})
    return out


# ------------------------------------------------------------------------------------------------------------
# the case's declaration and the sizes' syntax


def test_declared_sweep_is_outside_the_fingerprint_and_completes_given_sizes() -> None:
    case = Registry.load().case("axpy_f64")
    assert case.fingerprint() == attrs.evolve(case, sweep=None).fingerprint()
    points = case.sweep_points()
    assert points[0] == {"N": 4096, "blocks": 16} and points[-1] == {"N": 1 << 26, "blocks": 4096}
    assert case.sweep_point({"N": 100}) == {"N": 100, "blocks": 1}  # the case's derive, over the canonical sizes
    at = case.at_sizes(points[0])
    assert at.sizes["check"] == case.sizes["check"] and at.sizes["canonical"] == points[0]
    assert at.fingerprint() != case.fingerprint()  # a point is its own measurement
    with pytest.raises(ValueError, match="no size parameter M"):
        case.sweep_point({"M": 4})
    with pytest.raises(ValueError, match="declares no sweep sizes"):
        attrs.evolve(case, sweep=None).sweep_points()
    assert attrs.evolve(case, sweep=None).sweep_point({"N": 64}) == {"N": 64, "blocks": 4096}  # canonical grid kept


def test_size_and_range_syntax() -> None:
    assert parse_size("N=2^12") == {"N": 4096}
    assert parse_size("N=65_536,blocks=16") == {"N": 65536, "blocks": 16}
    assert [p["N"] for p in parse_range("N=2^12..2^16")] == [4096, 8192, 16384, 32768, 65536]
    assert [p["N"] for p in parse_range("N=4096..2^20:4")] == [4096, 16384, 65536, 262144, 1048576]
    for bad in ("N", "N=two", "N=2^12..2^10", "N=1..2^40:1"):
        with pytest.raises(Exception, match="N"):
            parse_range(bad) if ".." in bad else parse_size(bad)


# ------------------------------------------------------------------------------------------------------------
# the sweep through the real executor and worker


@attrs.frozen
class Swept:
    """One sweep of axpy_f64 over SIZES with the stand-in's ``sized`` timer: its result, its progress lines, the
    stand-in's log of measurements and the stored file. The tests below that read a whole sweep share it."""

    result: object
    lines: list[str]
    measured: Path
    stored: Path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, nvcc) -> Swept:  # type: ignore[no-untyped-def]
    tmp_path = tmp_path_factory.mktemp("sweep")
    measured = tmp_path / "measured"
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR="axpy_f64=sized", FAKE_GPU_MEASURED=str(measured))
        bundle = sweep_bundle(tmp_path / "bundle")
        (result,) = sweep(bundle, registry=Registry.load(), case_ids=["axpy_f64"], progress=lines.append,
                          request=ExecuteRequest(protocol=QUICK), out=lambda cid: tmp_path / f"{cid}.json")
    return Swept(result, lines, measured, tmp_path / "axpy_f64.json")


def test_sweep_times_every_size_in_one_worker_and_launch_bound_sizes_in_graph_mode(swept: Swept) -> None:
    result, lines, measured = swept.result, swept.lines, swept.measured
    assert [p.sizes["N"] for p in result.points] == [4096, 65536, 1 << 20] and result.axis == "N"
    small, mid, big = result.points
    # the stand-in's kernels of 4096 and 65536 elements take under the 2.5 us launch floor: both sides are
    # launch-bound in events mode there, and the figure kept is graph mode's; the events timing stays beside it
    for p in (small, mid):
        assert (p.launch_bound_wf, p.launch_bound_cuda) == (True, True)
        assert p.timing_mode == TIMING_GRAPH and p.events is not None and p.events.timing_mode == TIMING_EVENTS
        assert p.events.launch_bound and p.events.launch_floor_us == 2.5
    assert small.result.timing.gap == pytest.approx(1.1) and small.events.gap == pytest.approx(1.0)
    assert big.timing_mode == TIMING_EVENTS and big.events is None and not (big.launch_bound_wf or big.launch_bound_cuda)
    # every point checked and timed as a case of a run: its checks, the raw samples, the statistics
    for p in result.points:
        assert p.result.status == OK and p.result.checks and len(p.result.timing.warpforth.samples_us) == 5
        assert p.result.work_bytes == 24 * p.sizes["N"]
    # one worker process for all of it; each launch-bound size measured again in graph mode
    rows = [line.split() for line in measured.read_text().splitlines()]
    assert len({pid for pid, *_ in rows}) == 1
    assert [(sizes, mode) for _, _, sizes, mode in rows] == [
        ("N=4096,blocks=16", "events"), ("N=4096,blocks=16", "graph"), ("N=65536,blocks=256", "events"),
        ("N=65536,blocks=256", "graph"), ("N=1048576,blocks=4096", "events")]
    # the file: a sweep, complete, every sample kept; the run loader refuses it
    stored = load_sweep(swept.stored)
    assert stored.complete and stored == attrs.evolve(result, wall_s=stored.wall_s)
    with pytest.raises(WfbenchError, match="a sweep of 'wfbench sweep'"):
        parse_result(swept.stored.read_text(), "axpy_f64.json")
    assert any("timing it again in graph mode" in line for line in lines)


def test_events_only_keeps_the_launch_bound_timing(monkeypatch, tmp_path, nvcc) -> None:  # type: ignore[no-untyped-def]
    use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR="axpy_f64=sized")
    bundle = sweep_bundle(tmp_path / "bundle", sizes=SIZES[:1])
    (result,) = sweep(bundle, registry=Registry.load(), case_ids=["axpy_f64"], request=ExecuteRequest(protocol=QUICK),
                      graph_where_launch_bound=False)
    (p,) = result.points
    assert p.timing_mode == TIMING_EVENTS and p.launch_bound_wf and p.events is None
    assert "launch-bound" in p.result.message


def test_a_point_that_fails_costs_that_point_and_the_sweep_is_not_stored(monkeypatch, tmp_path, nvcc) -> None:  # type: ignore[no-untyped-def]
    use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR="axpy_f64=launch")
    bundle = sweep_bundle(tmp_path / "bundle", sizes=SIZES[:2])
    r = invoke("sweep", "axpy_f64", "--bundle", str(bundle), "-o", str(tmp_path / "out"), "--plot", "none",
               "--history", str(tmp_path / "history"), "--warmup-s", "0", "--min-sample-ms", "1", "--samples", "5")
    assert r.exit_code == 1, r.output + r.stderr
    assert "failed or could not run" in error_line(r)
    (path,) = (tmp_path / "out").glob("sweep-axpy_f64-*.json")
    sweep_file = load_sweep(path)
    assert [p.result.status for p in sweep_file.points] == [ERROR, ERROR]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in sweep_file.points[0].result.message
    assert not (tmp_path / "history").exists()
    h = invoke("history", "add", str(path), "--history", str(tmp_path / "history"))
    assert h.exit_code == 2 and "a failed sweep is never stored" in error_line(h)


# ------------------------------------------------------------------------------------------------------------
# build here, sweep from the bundle elsewhere: the command line


@pytest.fixture
def stand_in_warpforthc(tmp_path: Path) -> Path:
    """The stand-in warpforthc (it answers with the real warpforthc's PTX of tests/fixtures/ptx)."""
    libdevice = tmp_path / "libdevice.10.bc"
    libdevice.write_bytes(b"BC")
    exe = tmp_path / "bin" / "warpforthc"
    exe.parent.mkdir()
    exe.write_text(warpforthc_text(sys.executable).replace("@LIBDEVICE@", str(libdevice)))
    exe.chmod(0o755)
    return exe


def test_build_then_sweep_the_bundle_then_history_and_dashboard(monkeypatch, tmp_path, nvcc,  # type: ignore[no-untyped-def]
                                                                stand_in_warpforthc) -> None:
    bundle, out, history = tmp_path / "bundle", tmp_path / "out", tmp_path / "history"
    b = invoke("build", "-c", "axpy_f64", "-c", "scale_i64", "--sweep", "--range", "N=2^12..2^20:16",
               "--warpforthc", str(stand_in_warpforthc), "-o", str(bundle), "--no-check-cuda", "-q")
    assert b.exit_code == 0, b.output + b.stderr
    assert "sweep sizes: axpy_f64 (3), scale_i64 (3)" in b.output
    manifest = json.loads((bundle / "manifest.json").read_text())
    axpy = next(c for c in manifest["cases"] if c["id"] == "axpy_f64")
    assert [p["sizes"] for p in axpy["sweep"]] == [{"N": 4096, "blocks": 16}, {"N": 65536, "blocks": 256},
                                                     {"N": 1048576, "blocks": 4096}]
    assert (bundle / axpy["sweep"][0]["config"]["wf_ptx"]).is_file()

    use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR="axpy_f64=sized,scale_i64=sized")
    r = invoke("sweep", "axpy_f64", "scale_i64", "--bundle", str(bundle), "--size", "N=2^12", "--size", "N=2^20",
               "-o", str(out), "--plot", "svg", "--history", str(history), "--warmup-s", "0", "--min-sample-ms", "1",
               "--samples", "5", "-q")
    assert r.exit_code == 0, r.output + r.stderr
    files = sorted(out.glob("sweep-*.json"))
    assert [load_sweep(f).case_id for f in files] == ["axpy_f64", "scale_i64"]
    assert all(f.with_suffix(".svg").read_text().lstrip().startswith("<?xml") for f in files)
    assert "graph   WF+CUDA" in r.output and "events  -" in r.output
    # stored apart: no run, no series, nothing for the trends or the geomean
    h = History.open(history)
    assert not h.runs and not h.series and len(list((history / "sweeps").rglob("*.json"))) == 2
    again = invoke("history", "add", str(files[0]), "--history", str(history))
    assert again.exit_code == 0 and "already stored" in again.output
    export = invoke("export", str(files[0]))
    assert export.exit_code == 2 and "sweeps are their own series" in error_line(export)
    from wfbench_core.dashboard import build_data

    data = build_data(History.open(history))
    assert [(w["case"], [p["x"] for p in w["points"]]) for w in data["sweeps"]] == [
        ("axpy_f64", [4096, 1 << 20]), ("scale_i64", [4096, 1 << 20])]
    assert [p["mode"] for p in data["sweeps"][0]["points"]] == ["graph", "events"] and not data["series"]


def test_bad_sweep_input_is_one_line(monkeypatch, tmp_path, stand_in_warpforthc) -> None:  # type: ignore[no-untyped-def]
    plain = tmp_path / "plain"
    stored_ptx_bundle(("axpy_f64",), plain)
    r = invoke("sweep", "axpy_f64", "--bundle", str(plain))
    assert r.exit_code == 2 and "holds no sweep sizes of it" in error_line(r) and "build --sweep" in error_line(r)
    swept = sweep_bundle(tmp_path / "swept", sizes=SIZES[:1])
    r = invoke("sweep", "axpy_f64", "--bundle", str(swept), "--size", "N=2^16")
    assert r.exit_code == 2 and "holds no point at N=65536,blocks=256" in error_line(r)
    r = invoke("sweep", "axpy_f64", "--bundle", str(swept), "--size", "M=4")
    assert r.exit_code == 2 and "no size parameter M" in error_line(r)
    r = invoke("sweep", "axpy_f64", "--bundle", str(swept), "--range", "N=2^20..2^12")
    assert r.exit_code == 2 and "LOW <= HIGH" in error_line(r)
    r = invoke("sweep", "matmul_f64_naive", "--warpforthc", str(stand_in_warpforthc))
    assert r.exit_code == 2 and "declares no sweep sizes" in error_line(r)
    r = invoke("build", "-c", "axpy_f64", "--size", "N=4096", "--warpforthc", str(stand_in_warpforthc))
    assert r.exit_code == 2 and "add --sweep" in error_line(r)
    two = sweep_bundle(tmp_path / "two", sizes=SIZES[:2])
    broken = two / "axpy_f64" / "sweep" / "N-65536_blocks-256.ptx"
    broken.write_text(broken.read_text() + "\n// edited\n")
    use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR="axpy_f64=sized")
    (result,) = sweep(two, registry=Registry.load(), case_ids=["axpy_f64"], request=ExecuteRequest(protocol=QUICK))
    assert [p.result.status for p in result.points] == [OK, ERROR]  # the broken size costs itself only
    assert "does not match the hash in the bundle's manifest" in result.points[1].result.message


def test_a_sweep_file_is_judged_as_a_run_is(tmp_path: Path) -> None:
    for text, why in (("{}", "no \"kind\": \"sweep\""), ('{"kind": "sweep", "sweep_schema": 9}', "schema 9")):
        with pytest.raises(WfbenchError, match=why):
            parse_sweep(text, "x.json")


def test_plot_png_and_svg(swept: Swept, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from wfbench_core.review.sweep_plot import plot_sweep

    result = swept.result
    png = plot_sweep(result, tmp_path / "s.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = plot_sweep(result, tmp_path / "s.svg").read_text()
    assert "gap against N" in svg and "launch-bound in events mode" in svg
    with pytest.raises(WfbenchError, match="png or .svg"):
        plot_sweep(result, tmp_path / "s.pdf")


# ------------------------------------------------------------------------------------------------------------
# on a real GPU


@pytest.mark.gpu
def test_sweep_on_the_gpu(tmp_path: Path) -> None:
    """axpy_f64 at 2^12, 2^16 and 2^20 elements from the real warpforthc's PTX: every size correct and timed;
    at 4096 elements a launch costs about what the kernel does, so events mode is launch-bound there (on one side
    or both: boards differ) and graph mode times it."""
    (result,) = sweep(sweep_bundle(tmp_path / "bundle"), registry=Registry.load(), case_ids=["axpy_f64"],
                      request=ExecuteRequest(protocol=TimingProtocol(warmup_s=0.2, min_sample_ms=5.0, samples=10,
                                                                     min_samples=10, placements=2)))
    # correct and timed at every size; a short protocol's launch-bound point may be flagged noisy (UNSTABLE: timed,
    # kept, marked), as the H200 showed once at 4096 elements
    assert all(p.result.status in (OK, UNSTABLE) for p in result.points), [p.result.message for p in result.points]
    small = result.points[0]  # which sides come within the floor's factor at 4096 moves between H200 boards
    assert (small.launch_bound_wf or small.launch_bound_cuda) and small.timing_mode == TIMING_GRAPH
    assert small.events is not None and small.events.launch_floor_us


def test_build_sweep_with_the_real_warpforthc(tmp_path: Path, warpforthc: Path) -> None:
    """``wfbench build --sweep`` with the real compiler: one PTX per size, the PTX kept in tests/fixtures/ptx."""
    out = tmp_path / "bundle"
    r = invoke("build", "-c", "reduce_sum_f64", "--sweep", "--size", "N=2^12", "--size", "N=2^20", "--warpforthc",
               str(warpforthc), "-o", str(out), "--no-check-cuda", "-q")
    assert r.exit_code == 0, r.output + r.stderr
    (case,) = json.loads((out / "manifest.json").read_text())["cases"]
    assert [p["sizes"] for p in case["sweep"]] == [{"N": 4096, "BLOCKS": 16}, {"N": 1 << 20, "BLOCKS": 1024}]
    for p in case["sweep"]:
        name = Path(p["config"]["wf_ptx"]).stem
        stored = STORED_PTX / f"reduce_sum_f64.sweep-{name}.ptx"
        assert (out / p["config"]["wf_ptx"]).read_text() == stored.read_text()
        assert "${" not in (out / p["config"]["wf_source"]).read_text()


def test_a_stored_sweep_renders_as_a_figure_block(swept: Swept, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """tools/docs_figures.py's sweep-table: the table ``wfbench sweep`` prints, from the stored file; a block
    edited by hand is rendered back."""
    import shutil

    from testkit import load_tool

    shutil.copy(swept.stored, tmp_path / "s.json")
    tool = load_tool("docs_figures")
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    good = f"<!-- figure: sweep-table s.json -->\n{tool.sweep_table('s.json')}<!-- /figure -->\n"
    assert "1.100x  graph   WF+CUDA" in good and "Fake GPU" in good
    assert tool.render_text(good.replace("1.100x  graph", "0.900x  graph", 1)) == good


def test_without_a_gpu_one_line_and_nothing_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is here")
    monkeypatch.delenv("WFBENCH_PLUGINS", raising=False)
    r = invoke("sweep", "axpy_f64", "--bundle", str(sweep_bundle(tmp_path / "b", sizes=SIZES[:1])),
               "-o", str(tmp_path / "out"))
    assert r.exit_code == 3 and "run 'wfbench sweep --bundle' on a GPU host" in error_line(r)
    assert not (tmp_path / "out").exists()


def test_three_stored_h200_sweeps_are_each_drawn_and_shown() -> None:
    """Issue: at least three cases' sweeps from the H200 are stored, and drawn: each stored sweep loads, has its
    plot beside it (a PNG), and docs/sweep.md shows both its table block and its plot."""
    from wfbench_core.record.sweep_record import load_sweep

    root = Path(__file__).resolve().parent.parent
    stored = sorted((root / "docs" / "results" / "sweeps").glob("*.json"))
    doc = (root / "docs" / "sweep.md").read_text()
    cases = {load_sweep(p).case_id for p in stored}
    assert len(cases) >= 3, cases
    for path in stored:
        png = path.with_suffix(".png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
        assert f"<!-- figure: sweep-table docs/results/sweeps/{path.name} -->" in doc
        assert f"](results/sweeps/{png.name})" in doc
