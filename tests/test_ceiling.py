"""Library ceilings (wfbench_core.ceiling): declared per case, timed as a third side, kept apart from the gap.

The executor and its worker run for real; the timer is the stand-in of tests/fake_gpu.py (no GPU, no CuPy
needed). The real cuBLAS and CUB calls are checked on a GPU by tests/test_ceiling_gpu.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from wfbench_core.ceiling import LABEL, RATIO_NAME, Ceiling, NoCeiling, missing, series_name
from wfbench_core.discover.registry import Registry
from wfbench_core.errors import WfbenchError
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import (CEILING_FAILED, CEILING_MISSING, CEILING_OK, SCHEMA_VERSION, OK,
                                         TIMING_EVENTS, TimingProtocol, dumps, load_result, parse_result)
from wfbench_core.run.executor import execute
from testkit import use_stand_in_gpu

CEILINGED = ("axpy_f64", "reduce_sum_f64", "matmul_f64_naive", "matmul_f64_tiled", "transpose_f64")
QUICK = TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=5)


def test_five_cases_declare_a_library_ceiling_and_the_others_say_why_not() -> None:
    reg = Registry.load()
    declared = {cid: reg.ceiling(cid) for cid in reg.cases}
    assert {cid for cid, c in declared.items() if isinstance(c, Ceiling)} == set(CEILINGED)
    assert {c.routine for cid, c in declared.items() if isinstance(c, Ceiling)} == \
        {"cublasDgemm", "cublasDaxpy", "cublasDgeam", "cub::DeviceReduce::Sum"}
    for cid in ("softmax_f32", "gemv_i8", "attention_f32_naive"):
        assert isinstance(declared[cid], NoCeiling) and declared[cid].why
    assert "tensor cores" in declared["matmul_f64_naive"].tensor_cores
    for c in declared.values():  # every tolerance has its reason
        if isinstance(c, Ceiling):
            assert all(t.why for t in c.tolerances.values())


def test_a_ceiling_that_is_not_a_ceiling_is_refused_with_the_plugin_name() -> None:
    class Bad:
        from wfbench_core import hookimpl

        @hookimpl
        def wfbench_register_ceilings(self, register):  # type: ignore[no-untyped-def]
            register("axpy_f64", "cublas please")

    with pytest.raises(WfbenchError, match="not a wfbench_core.ceiling.Ceiling"):
        Registry.load([Bad()], autoload=False)


def test_listing_cases_never_imports_the_ceiling_library() -> None:
    import subprocess
    import sys

    code = ("import sys; from wfbench_core.discover.registry import Registry; r = Registry.load(); "
            "[r.ceiling(c) for c in r.cases]; print(any(m.startswith('cupy') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"


def _run(prebuilt_bundle, tmp_path, monkeypatch, *, how: str = "", ceiling: bool = True):  # type: ignore[no-untyped-def]
    use_stand_in_gpu(monkeypatch, **({"FAKE_GPU_CEILING": how} if how else {}))
    if not how:
        monkeypatch.delenv("FAKE_GPU_CEILING", raising=False)
    bundle = prebuilt_bundle(("axpy_f64", "scale_i64", "matmul_f64_naive"))
    lines: list[str] = []
    out = tmp_path / "result.json"
    result = execute(bundle, registry=Registry.load(), progress=lines.append, out=out,
                     request=ExecuteRequest(protocol=QUICK, ceiling=ceiling))
    return result, lines, out


@pytest.mark.skipif(missing(Registry.load().ceiling("axpy_f64")) is None, reason="CuPy is installed here")
def test_a_missing_library_gives_one_line_per_case_and_the_canonical_run_goes_on(  # type: ignore[no-untyped-def]
        prebuilt_bundle, tmp_path, monkeypatch, nvcc) -> None:
    result, lines, _ = _run(prebuilt_bundle, tmp_path, monkeypatch)
    said = [ln for ln in lines if "ceiling not measured" in ln]
    assert len(said) == 2 and all("pip install 'wfbench[ceiling]'" in ln for ln in said)
    assert {ln.split(":")[0] for ln in said} == {"axpy_f64", "matmul_f64_naive"}
    for c in result.cases:
        assert c.status == OK and c.timing is not None and c.timing.gap == pytest.approx(1.5)
    assert result.case("axpy_f64").ceiling.status == CEILING_MISSING
    assert result.case("scale_i64").ceiling is None  # no ceiling declared


def test_a_timed_ceiling_is_stored_apart_and_never_changes_the_gap(  # type: ignore[no-untyped-def]
        prebuilt_bundle, tmp_path, monkeypatch, nvcc) -> None:
    result, _, out = _run(prebuilt_bundle, tmp_path, monkeypatch, how="ok")
    plain, _, _ = _run(prebuilt_bundle, tmp_path / "plain", monkeypatch, ceiling=False)
    for c in result.cases:
        assert c.timing == attrs.evolve(plain.case(c.id).timing, placement_seed=c.timing.placement_seed,
                                        order=c.timing.order)
    k = result.case("axpy_f64").ceiling
    assert k.status == CEILING_OK and k.stats.median_us == 1.0 and k.ratio == pytest.approx(3.0)
    assert k.library == "cuBLAS" and k.routine == "cublasDaxpy"
    assert LABEL not in json.dumps(json.loads(out.read_text())["cases"][0]["timing"])  # not in the canonical record
    assert load_result(out) == result  # the record round trip


def test_a_ceiling_that_fails_its_check_is_its_own_failed_line_and_the_gap_stands(  # type: ignore[no-untyped-def]
        prebuilt_bundle, tmp_path, monkeypatch, nvcc) -> None:
    from wfbench_core.review.report import render

    result, lines, _ = _run(prebuilt_bundle, tmp_path, monkeypatch, how="failed")
    axpy = result.case("axpy_f64")
    assert axpy.status == OK and axpy.timing.gap == pytest.approx(1.5)
    assert axpy.ceiling.status == CEILING_FAILED and axpy.ceiling.stats is None
    text = render(result, ceiling=True)
    failed = [ln for ln in text.splitlines() if "ceiling FAILED" in ln]
    assert len(failed) == 2 and "cublasDaxpy" in text and "the case's gap stands" in failed[0]
    assert [ln for ln in lines if "FAILED its check" in ln]


def test_the_table_has_the_ratio_column_only_when_asked(prebuilt_bundle, tmp_path, monkeypatch, nvcc) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.review.report import render

    result, _, _ = _run(prebuilt_bundle, tmp_path, monkeypatch, how="ok")
    assert RATIO_NAME not in render(result) and "ceiling us" not in render(result)
    table = render(result, ceiling=True).splitlines()
    assert RATIO_NAME in table[0]
    row = next(ln for ln in table if ln.startswith("axpy_f64"))
    assert "3.00x" in row and "1.00" in row
    assert "none" in next(ln for ln in table if ln.startswith("scale_i64"))


def test_the_ceiling_never_enters_the_geomean_the_export_or_the_verdicts(  # type: ignore[no-untyped-def]
        prebuilt_bundle, tmp_path, monkeypatch, nvcc) -> None:
    from wfbench_core.review.compare import compare_runs
    from wfbench_core.review.export import github_action_benchmark

    result, _, _ = _run(prebuilt_bundle, tmp_path, monkeypatch, how="ok")
    bare = attrs.evolve(result, cases=tuple(attrs.evolve(c, ceiling=None) for c in result.cases))
    assert github_action_benchmark(result) == github_action_benchmark(bare)
    assert "ceiling" not in json.dumps(github_action_benchmark(result))
    assert compare_runs(result, result) == compare_runs(bare, bare)


def test_the_ceiling_series_has_its_own_key_with_the_library_version(  # type: ignore[no-untyped-def]
        prebuilt_bundle, tmp_path, monkeypatch, nvcc) -> None:
    from wfbench_core.review.ceiling_series import ceiling_key, ceiling_points
    from wfbench_core.review.series import points_from_run, series_key

    result, _, _ = _run(prebuilt_bundle, tmp_path, monkeypatch, how="ok")
    axpy = result.case("axpy_f64")
    key = ceiling_key(result, axpy)
    assert key.name == series_name("axpy_f64", axpy.version) == f"axpy_f64/v{axpy.version}/ceiling"
    assert key.id != series_key(result, axpy).id and key.id.startswith("ceiling-")
    newer = attrs.evolve(axpy, ceiling=attrs.evolve(axpy.ceiling, library_version="99.0"))
    assert ceiling_key(result, newer).id != key.id  # a new library version starts a new series
    assert {k.name for k, _ in ceiling_points(result)} == {f"axpy_f64/v{axpy.version}/ceiling",
                                                           f"matmul_f64_naive/v{result.case('matmul_f64_naive').version}/ceiling"}
    canonical = points_from_run(result, "run.json")
    assert len(canonical) == 3 and all(not k.id.startswith("ceiling") for k, _ in canonical)


def test_results_from_before_ceilings_still_load() -> None:
    root = Path(__file__).parent.parent
    stored = sorted((root / "docs" / "results").rglob("*.json")) + sorted((root / "tests" / "fixtures").rglob("*.json"))
    olds = [p for p in stored if '"schema_version": 4' in p.read_text()[:400]]
    assert olds
    for old in olds:
        run = load_result(old)
        assert run.schema_version == SCHEMA_VERSION == 6
        assert all(c.ceiling is None for c in run.cases)
        assert parse_result(dumps(run)) == run


def test_a_schema_5_result_loads_as_one_without_ceilings() -> None:
    root = Path(__file__).parent.parent
    old = next(p for p in sorted((root / "docs" / "results").rglob("*.json")) if '"schema_version": 4' in p.read_text()[:400])
    raw = json.loads(old.read_text())
    raw["schema_version"] = 5
    run = parse_result(json.dumps(raw))
    assert run.schema_version == 6 and all(c.ceiling is None for c in run.cases)


def test_the_dashboard_shows_ceilings_in_their_own_section_apart_from_the_headline(tmp_path: Path) -> None:
    from synth_runs import synth_run
    from wfbench_core.dashboard import build_data, render_page
    from wfbench_core.record.results import CeilingResult, SideStats
    from wfbench_core.review.history import History, add_run

    plain = synth_run(0)
    axpy = plain.case("axpy_f64")
    stats = SideStats(median_us=axpy.timing.cuda.median_us / 2, p95_us=1.0, mad_us=0.0, noise=0.0, n=1,
                      samples_us=(axpy.timing.cuda.median_us / 2,))
    ceiling = CeilingResult(library="cuBLAS", routine="cublasDaxpy", package="cupy-cuda13x", library_version="14.0.1",
                            status=CEILING_OK, stats=stats, ratio=axpy.timing.warpforth.median_us / stats.median_us)
    with_ceiling = attrs.evolve(plain, cases=tuple(attrs.evolve(c, ceiling=ceiling) if c.id == "axpy_f64" else c
                                                   for c in plain.cases))
    add_run(tmp_path / "a", plain)
    add_run(tmp_path / "b", with_ceiling)
    without, withc = build_data(History.open(tmp_path / "a")), build_data(History.open(tmp_path / "b"))
    rows = withc["headline"].pop("ceilings")
    assert without["headline"].pop("ceilings") == []
    assert [r["series"] for r in rows] == [f"axpy_f64/v{axpy.version}/ceiling"]
    assert rows[0]["ratio"] == pytest.approx(ceiling.ratio) and rows[0]["version"] == "cupy-cuda13x 14.0.1"
    for d in (without, withc):  # nothing else of the page changes: not the gap, the geomean, the series
        d.pop("generated")
        d["headline"].pop("run", None)
        d["headline"].pop("diagnostics", None)
    assert withc["headline"]["geomean"] == without["headline"]["geomean"]
    def gaps(d):  # type: ignore[no-untyped-def]
        return [(s["id"], [p["gap"] for p in s["points"]]) for s in d["series"]]

    assert gaps(withc) == gaps(without) and len(withc["series"]) == len(without["series"])
    page = render_page(build_data(History.open(tmp_path / "b")))
    assert f'"ceilings":[{{"series":"axpy_f64/v{axpy.version}/ceiling"' in page
    app = (Path(__file__).parent.parent / "wfbench_core" / "dashboard" / "app.js").read_text()
    assert "renderCeilings(DATA.headline.ceilings)" in app and "Library ceilings (never part of the gap)" in app


def test_explain_ceiling_names_the_library_kernels_and_tensor_cores(nvcc) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from wfbench_core.cli import main

    ptx = Path(__file__).parent / "fixtures" / "ptx"
    r = CliRunner().invoke(main, ["explain", "matmul_f64_naive", "--wf-ptx",
                                  str(ptx / "matmul_f64_naive.canonical.ptx"), "--ceiling", "-q"])
    assert r.exit_code == 0, r.output
    assert "## Library ceiling: `matmul_f64_naive/v" in r.output and "`cublasDgemm`" in r.output
    assert "FP64 tensor cores (DMMA)" in r.output and "`dmma`" in r.output
    # CuPy's cuBLAS bindings raise while the stream captures: graph mode times the ceiling with events
    assert "graph capture: no (timed with events in graph mode)" in r.output
    plain = CliRunner().invoke(main, ["explain", "matmul_f64_naive", "--wf-ptx",
                                      str(ptx / "matmul_f64_naive.canonical.ptx"), "-q"])
    assert "Library ceiling" not in plain.output
    r = CliRunner().invoke(main, ["explain", "softmax_f32", "--wf-ptx", str(ptx / "softmax_f32.canonical.ptx"),
                                  "--ceiling", "-q"])
    assert r.exit_code == 0 and "None: no vendor library softmax" in r.output


# -- the real timer and rounds against the stand-in driver (tests/test_timer_protocol.py) ------------------


def _library_ceiling(factor: int = 3, package: str = "numpy") -> Ceiling:
    """A stand-in library: its call queues an operation on the stand-in driver's stream (as a library's kernel
    would be), reading the case's input X and writing its own output Y."""
    from wfbench_core.case import Tolerance

    def prepare(call):  # type: ignore[no-untyped-def]
        driver = prepare.driver  # type: ignore[attr-defined]

        def go() -> None:
            driver.pending.append(("lib_scale", [call.inputs["X"], call.outputs["Y"], factor]))

        return go

    return Ceiling(library="stand-in BLAS", routine="lib_scale", package=package, what="a stand-in",
                   outputs=lambda s: {"Y": (s["N"], "int64")}, expect=lambda inputs, want, s: {"Y": want["Y"]},
                   tolerances={"Y": Tolerance(0.0, 0.0, "exact")}, prepare=prepare)


def _with_library(ceiling: Ceiling | None, lib_mhz: float = 0.0, lib_ms: float = 0.005):  # type: ignore[no-untyped-def]
    """The real timer measuring the stand-in case with ``ceiling`` on the stand-in driver (each library call
    ``lib_ms``, the kernels 0.01 ms); with ``lib_mhz``, the library's launches run at that SM clock and the case's
    kernels at 1980 MHz."""
    from test_timer_protocol import CASE, SIDES, FakeDriver, good, make_timer

    calls = []
    ran = {"lib": False}

    def lib_scale(launch, x, y, factor):  # type: ignore[no-untyped-def]
        calls.append(id(x))
        ran["lib"] = True
        y[:] = factor * x
        return lib_ms  # faster than the kernels (0.01 ms)

    def side(launch, *args):  # type: ignore[no-untyped-def]
        ran["lib"] = False
        return good(launch, *args)

    driver = FakeDriver({"wf_scale": side, "cu_scale": side, "lib_scale": lib_scale})
    if lib_mhz:
        driver.side_mhz = lambda n, k: lib_mhz if ran["lib"] else 1980.0
    if ceiling is not None:
        ceiling.prepare.driver = driver  # type: ignore[attr-defined]
    timer = make_timer(driver)
    timer.protocol = TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=6, placements=3, min_samples=6)
    return timer.measure(CASE, SIDES, reference_label="cuda", ceiling=ceiling), calls


def test_the_real_rounds_time_the_ceiling_as_a_third_side_on_every_buffer_set() -> None:
    m, calls = _with_library(_library_ceiling())
    assert m.passed and m.ceiling.problem == "" and m.ceiling.checks[0].passed
    s = m.sampled
    assert set(s.samples_us) == {"wf", "cuda", LABEL}
    assert len(s.samples_us[LABEL]) == len(s.samples_us["wf"]) == 6
    assert s.samples_us[LABEL][0] == pytest.approx(s.samples_us["wf"][0] / 2)  # 0.005 ms against 0.01 ms
    assert LABEL in s.order  # it takes its turn going first
    # one check call, then the timed launches read every placement's every buffer set of inputs
    assert len(set(calls[1:])) == 3 * s.buffer_sets


def test_a_ceiling_that_cannot_be_captured_says_so_only_in_graph_mode() -> None:
    """Every built-in ceiling is declared not capturable (docs/ceiling.md, Graph mode). In an events-mode run
    nothing is captured, so its record carries no capture note (the note is what the report prints a line for)."""
    import attrs

    m, _ = _with_library(attrs.evolve(_library_ceiling(), capturable=False))
    assert m.passed and m.ceiling.problem == "" and m.sampled.timing_mode == TIMING_EVENTS
    assert m.ceiling.timing_mode == TIMING_EVENTS and m.ceiling.capture_note == ""


def test_a_library_far_faster_than_the_case_never_multiplies_the_cases_launches() -> None:
    """cuBLAS's tensor-core DGEMM is some 35x faster than matmul_f64_naive: were a sample's launches sized by the
    fastest side, the case's sides would take 35x longer (on the H200 both matmuls went over the per-case limit).
    Each side's sample is as many launches as without a ceiling, the library's as many as the case's fastest side's;
    the library's samples are shorter, none is re-taken."""
    alone, _ = _with_library(None)
    m, _ = _with_library(_library_ceiling(), lib_ms=0.0002)  # 50x faster than the kernels
    assert alone.passed and m.passed and m.ceiling.problem == ""
    assert m.sampled.launches_per_sample == alone.sampled.launches_per_sample
    own = {label: n for label, n in m.sampled.side_launches.items() if label != LABEL}
    assert own == alone.sampled.side_launches and m.sampled.side_launches[LABEL] == max(own.values())
    assert m.sampled.short_retakes == 0
    lib, wf = m.sampled.samples_us[LABEL], m.sampled.samples_us["wf"]
    assert all(a == pytest.approx(b / 50) for a, b in zip(lib, wf, strict=True))


def test_a_wrong_ceiling_fails_its_check_alone_and_is_not_timed() -> None:
    m, calls = _with_library(_library_ceiling(factor=2))
    assert m.passed and m.sampled is not None  # the case stands
    assert m.ceiling.status == CEILING_FAILED and "FAILED its check" in m.ceiling.problem
    assert LABEL not in m.sampled.samples_us and len(calls) == 1


def test_a_ceiling_without_its_library_is_missing_and_never_called() -> None:
    m, calls = _with_library(_library_ceiling(package="no-such-distribution-wfbench"))
    assert m.passed and m.ceiling.status == CEILING_MISSING and calls == []
    assert "no-such-distribution-wfbench is not installed" in m.ceiling.problem


def test_the_ceilings_clock_never_re_takes_a_pair_nor_joins_its_recorded_clocks() -> None:
    """The library runs at 1700 MHz, the case's sides at 1980 in every round: the pairs are the case's two
    sides, whose clocks match, so none is re-taken for the ceiling's clock and each records two clocks."""
    m, _ = _with_library(_library_ceiling(), lib_mhz=1700.0)
    assert m.passed and m.ceiling.problem == "" and LABEL in m.sampled.samples_us
    assert m.sampled.clock_retakes == 0
    from wfbench_core.gpu.sampling import clocks_match

    pairs = m.sampled.pair_side_mhz
    assert len(pairs) == 6 and all(len(p) == 2 and clocks_match(p) for p in pairs)
    # none of the library's 1700 (a probe window holds a few of the stand-in's cycles around the side: 1977-1980)
    assert all(c == pytest.approx(1980.0, rel=5e-3) for p in pairs for c in p)
