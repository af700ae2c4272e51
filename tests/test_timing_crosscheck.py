"""``wfbench crosscheck`` without a GPU: nvbench's JSON, the comparison, the table and the CLI's errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from wfbench_core.studies import crosscheck as xc
from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import load_result

FIXTURES = Path(__file__).parent / "fixtures"


def _summary(tag: str, value: object, kind: str = "float64") -> dict:
    # nvbench's JSON printer writes every value as a string with its type beside it
    return {"tag": tag, "name": tag.rsplit("/", 1)[-1], "hint": "duration", "description": "",
            "data": [{"name": "value", "type": kind, "value": str(value)}]}


def _nvbench_json(figures: dict[str, tuple[float, float]]) -> dict:
    """nvbench --json output for benchmarks name -> (cold mean s, batch mean s)."""
    return {
        "meta": {"version": {"json": {"major": 1, "minor": 0, "patch": 0}}},
        "devices": [{"id": 0, "name": "NVIDIA H200"}],
        "benchmarks": [
            {"name": name, "index": i, "devices": [0], "axes": [],
             "states": [{"name": "Device=0", "device": 0, "type_config_index": 0, "axis_values": [],
                         "is_skipped": False,
                         "summaries": [_summary("nv/cold/sample_size", 1200, "int64"),
                                       _summary(xc.NVBENCH_COLD_MEAN, cold),
                                       _summary("nv/cold/time/gpu/stdev/relative", 0.004),
                                       _summary(xc.NVBENCH_BATCH_SAMPLES, 9000, "int64"),
                                       _summary(xc.NVBENCH_BATCH_MEAN, batch)]}]}
            for i, (name, (cold, batch)) in enumerate(figures.items())
        ],
    }


def test_parse_nvbench_json() -> None:
    data = _nvbench_json({"axpy_f64/cuda": (196.9e-6, 196.12e-6), "axpy_f64/wf": (194.0e-6, 193.5e-6)})
    data["benchmarks"].append({"name": "skipped", "states": [{"name": "s", "is_skipped": True}]})
    got = xc.parse_nvbench_json(data)
    assert set(got) == {"axpy_f64/cuda", "axpy_f64/wf"}
    assert got["axpy_f64/cuda"].batch_mean_us == pytest.approx(196.12)
    assert got["axpy_f64/cuda"].cold_mean_us == pytest.approx(196.9)
    assert got["axpy_f64/cuda"].cold_samples == 1200 and got["axpy_f64/cuda"].batch_samples == 9000
    with pytest.raises(WfbenchError, match="nvbench's --json"):
        xc.parse_nvbench_json({"something": []}, where="x.json")


def test_compare_per_kernel_and_gap() -> None:
    nv = xc.parse_nvbench_json(_nvbench_json({"axpy_f64/cuda": (200e-6, 196.12e-6),
                                              "axpy_f64/wf": (198e-6, 194.0e-6)}))
    wf = {"axpy_f64": {"wf": {"events": 194.49 * 1.0}, "cuda": {"events": 194.49}}}
    kernels, gaps = xc.compare(wf, nv)
    cuda = next(k for k in kernels if k.side == "cuda")
    assert cuda.diff("events") == pytest.approx(194.49 / 196.12 - 1)
    assert cuda.diff("cold-l2") is None  # not timed in that mode
    (g,) = gaps
    assert g.wfbench_gap == pytest.approx(1.0) and g.nvbench_gap == pytest.approx(194.0 / 196.12)
    assert g.diff == pytest.approx(196.12 / 194.0 - 1)
    assert xc.worst_disagreement(kernels) == pytest.approx(abs(194.49 / 196.12 - 1))  # cuda beats wf's 0.25 %
    assert xc.within(kernels, 0.01) and not xc.within(kernels, 0.001)
    text = xc.render(kernels, gaps, 0.001)
    assert "axpy_f64" in text and "-0.83%" in text and " !" in text and "worst per-kernel" in text


def test_the_medians_after_nvbench_are_compared_and_a_kernel_that_moved_meanwhile_is_named() -> None:
    """stack_pick_f64 on the H200, one process: wfbench read the CUDA side at 233.91 us, nvbench at 227.28 us, and
    wfbench again after nvbench at 226.96 us (the WarpForth side 1033.88, 1034.05 and 1034.01 us)."""
    nv = xc.parse_nvbench_json(_nvbench_json({"stack_pick_f64/cuda": (227.78e-6, 227.28e-6),
                                              "stack_pick_f64/wf": (1033.98e-6, 1034.05e-6)}))
    after = {"stack_pick_f64": {"wf": {"events": 1034.01}, "cuda": {"events": 226.96}}}
    before = {"stack_pick_f64": {"wf": {"events": 1033.88}, "cuda": {"events": 233.91}}}
    kernels, gaps = xc.compare(after, nv, before=before)
    cuda = next(k for k in kernels if k.side == "cuda")
    assert cuda.diff("events") == pytest.approx(226.96 / 227.28 - 1) and xc.within(kernels, 0.01)
    assert cuda.moved("events") == pytest.approx(226.96 / 233.91 - 1)
    text = xc.render(kernels, gaps, 0.01)
    assert "wfbench events us before" in text and "233.91" in text
    assert "stack_pick_f64/cuda events 233.91 -> 226.96 us (-2.97%)" in text
    assert "stack_pick_f64/wf events" not in text  # moved 0.01 %: within the tolerance, not named
    # a comparison without medians before (--against a stored run) shows no such column or note
    plain = xc.render(*xc.compare(after, nv), 0.01)
    assert "before" not in plain


def test_cold_l2_is_compared_with_nvbench_cold() -> None:
    nv = xc.parse_nvbench_json(_nvbench_json({"k/cuda": (10e-6, 6e-6), "k/wf": (12e-6, 7e-6)}))
    kernels, gaps = xc.compare({"k": {"wf": {"cold-l2": 12.1, "graph": 7.0}, "cuda": {"cold-l2": 10.0, "graph": 6.0}}},
                               nv)
    wf = next(k for k in kernels if k.side == "wf")
    assert wf.diff("cold-l2") == pytest.approx(12.1 / 12 - 1) and wf.diff("graph") == pytest.approx(0.0)
    cold, graph = gaps  # a gap per mode, each from nvbench's matching figure
    assert (cold.mode, graph.mode) == ("cold-l2", "graph")
    assert cold.nvbench_gap == pytest.approx(12 / 10) and graph.nvbench_gap == pytest.approx(7 / 6)


def test_medians_from_a_stored_run() -> None:
    run = load_result(FIXTURES / "h200-run1.json")
    timed = [c for c in run.cases if c.timed]
    got = xc.medians_from_result(run, [c.id for c in timed])
    c = timed[0]
    assert got[c.id] == {"wf": {"events": c.timing.warpforth.median_us}, "cuda": {"events": c.timing.cuda.median_us}}


def test_no_nvbench_is_one_clear_line() -> None:
    if importlib.util.find_spec("cuda.bench") is not None:
        pytest.skip("cuda-bench is installed here")
    with pytest.raises(WfbenchError, match=r"pip install 'wfbench\[crosscheck\]'"):
        xc.run_nvbench({}, Path("unused.json"), 0)


def test_cli_errors_are_one_line(prebuilt_bundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle = prebuilt_bundle(case_ids=("axpy_f64",))
    runner = CliRunner()
    r = runner.invoke(main, ["crosscheck", str(bundle), "--against", str(FIXTURES / "h200-run1.json"),
                             "--mode", "graph"])
    assert r.exit_code == 2 and "with --against the stored run's mode is used" in r.output
    assert "Traceback" not in r.output
    r = runner.invoke(main, ["crosscheck", str(bundle), "--case", "nope"])
    assert r.exit_code == 2 and "case 'nope' is not in bundle" in r.output
    from wfbench_core.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is not None:
        r = runner.invoke(main, ["crosscheck", str(bundle), "--quiet"])
        assert r.exit_code == 3 and r.output.count("\n") == 1 and "wfbench: error:" in r.output


def test_json_output_is_plain_data() -> None:
    nv = xc.parse_nvbench_json(_nvbench_json({"k/cuda": (10e-6, 6e-6), "k/wf": (12e-6, 7e-6)}))
    kernels, gaps = xc.compare({"k": {"wf": {"events": 7.07}, "cuda": {"events": 6.0}}}, nv)
    data = json.loads(json.dumps(xc.as_json(kernels, gaps, 0.01)))
    wf = next(k for k in data["kernels"] if k["side"] == "wf")
    assert wf["nvbench"]["batch_mean_us"] == pytest.approx(7.0) and wf["diff"]["events"] == pytest.approx(0.01)
    assert data["gaps"][0]["case"] == "k" and data["gaps"][0]["nvbench_gap"] == pytest.approx(7 / 6)
    assert data["worst"] == pytest.approx(0.01) and data["within"] is True


def test_where_nvbenchs_launcher_is_the_bottleneck_its_batch_figure_is_not_compared() -> None:
    nv = {"k/wf": xc.NvbenchTimes(batch_mean_us=11.4, cold_mean_us=9.0),
          "k/cuda": xc.NvbenchTimes(batch_mean_us=12.9, cold_mean_us=8.0),
          "big/wf": xc.NvbenchTimes(batch_mean_us=100.0), "big/cuda": xc.NvbenchTimes(batch_mean_us=80.0)}
    wf = {"k": {"wf": {"events": 6.0, "graph": 2.8, "cold-l2": 9.1}, "cuda": {"events": 6.0, "graph": 2.0,
                                                                            "cold-l2": 8.0}},
          "big": {"wf": {"events": 101.0}, "cuda": {"events": 80.0}}}
    kernels, _ = xc.compare(wf, nv, {"k": 6.5, "big": 6.5})
    k = {(r.case, r.side): r for r in kernels}
    assert k["k", "wf"].nvbench_launch_bound and not k["big", "wf"].nvbench_launch_bound
    # graph against a launch-bound batch figure would read -75 %: it is not compared; cold-l2 still is
    assert k["k", "wf"].diff("graph") is None and k["k", "wf"].diff("events") is None
    assert k["k", "wf"].diff("cold-l2") == pytest.approx(9.1 / 9.0 - 1)
    assert xc.worst_disagreement(kernels) == pytest.approx(9.1 / 9.0 - 1)  # cold-l2 of k/wf; big/wf is 1 %
    text = xc.render(kernels, [], 0.02)
    assert "nvbench's launcher is the bottleneck (its batch figure within 2x of an empty kernel launched back to " \
           "back by wfbench, or over 1.1x its own cold figure), so its batch figure is not compared: k/wf (11.40 " \
           "us, floor 6.50 us), k/cuda (12.90 us, floor 6.50 us)" in text
    assert xc.as_json(kernels, [], 0.02)["kernels"][0]["nvbench_launch_bound"] is True


def test_nvbenchs_batch_figure_is_judged_by_its_own_launchers_floor() -> None:
    """The H200's figures at check sizes: reduce's nvbench batch figures (8.5, 9.6 us) are over twice wfbench's
    launch floor (4.0 us) but are the rate of nvbench's Python launcher (an empty kernel through it: 7.9 us);
    wfbench's graph figures show the kernels take 2-3 us. Judged by wfbench's floor they read -66 to -79 %."""
    nv = {"reduce_sum_f64/wf": xc.NvbenchTimes(batch_mean_us=8.53, cold_median_us=8.42),
          "reduce_sum_f64/cuda": xc.NvbenchTimes(batch_mean_us=9.57),  # the floor alone decides here
          "big/wf": xc.NvbenchTimes(batch_mean_us=40.0), "big/cuda": xc.NvbenchTimes(batch_mean_us=30.0)}
    wf = {"reduce_sum_f64": {"wf": {"graph": 2.9, "cold-l2": 8.3}, "cuda": {"graph": 2.0}},
          "big": {"wf": {"graph": 40.2}, "cuda": {"graph": 30.1}}}
    floors = {"reduce_sum_f64": 4.0, "big": 4.0}
    kernels, _ = xc.compare(wf, nv, floors)
    assert not any(k.nvbench_launch_bound for k in kernels)  # by wfbench's floor (4 us), none is
    kernels, gaps = xc.compare(wf, {**nv, xc.NVBENCH_FLOOR: xc.NvbenchTimes(batch_mean_us=7.9)}, floors)
    k = {(r.case, r.side): r for r in kernels}
    assert k["reduce_sum_f64", "wf"].nvbench_launch_bound and k["reduce_sum_f64", "cuda"].nvbench_launch_bound
    assert not k["big", "wf"].nvbench_launch_bound and k["big", "wf"].diff("graph") == pytest.approx(40.2 / 40 - 1)
    assert k["reduce_sum_f64", "wf"].diff("graph") is None
    assert k["reduce_sum_f64", "wf"].diff("cold-l2") == pytest.approx(8.3 / 8.42 - 1)
    assert xc.within(kernels, 0.02)
    text = xc.render(kernels, gaps, 0.02)
    assert "launched back to back through nvbench's own launcher, or over 1.1x its own cold figure), so its batch " \
           "figure is not compared: reduce_sum_f64/wf (8.53 us, floor 7.90 us), reduce_sum_f64/cuda (9.57 us, floor " \
           "7.90 us)" in text
    assert "big/" not in text.split("not compared:")[1]


def test_each_case_is_judged_by_nvbench_floor_for_its_own_arguments() -> None:
    """nvbench times each case's empty kernel with the case's parameter list and arguments: a case of many
    arguments has a higher floor than one of few. A batch figure is judged by its own case's floor; a file of
    an older wfbench, with one parameterless floor for all, is still read."""
    nv = {"many/wf": xc.NvbenchTimes(batch_mean_us=15.0), "many/cuda": xc.NvbenchTimes(batch_mean_us=15.5),
          "few/wf": xc.NvbenchTimes(batch_mean_us=15.0), "few/cuda": xc.NvbenchTimes(batch_mean_us=15.5),
          xc.floor_name("many"): xc.NvbenchTimes(batch_mean_us=9.0),
          xc.floor_name("few"): xc.NvbenchTimes(batch_mean_us=6.0)}
    wf = {"many": {"wf": {"events": 15.1}, "cuda": {"events": 15.4}},
          "few": {"wf": {"events": 15.1}, "cuda": {"events": 15.4}}}
    kernels, gaps = xc.compare(wf, nv, {"many": 4.0, "few": 4.0})
    k = {(r.case, r.side): r for r in kernels}
    assert k["many", "wf"].nvbench_floor == 9.0 and k["many", "wf"].nvbench_launch_bound  # 15.0 <= 2 x 9.0
    assert k["few", "wf"].nvbench_floor == 6.0 and not k["few", "wf"].nvbench_launch_bound
    assert [g.nvbench_gap is None for g in gaps] == [True, False]
    assert xc.floor_name("many") != xc.NVBENCH_FLOOR and xc.floor_name("many").startswith(xc.NVBENCH_FLOOR + "/")
    older = {name: t for name, t in nv.items() if not name.startswith(xc.NVBENCH_FLOOR)}
    kernels, _ = xc.compare(wf, {**older, xc.NVBENCH_FLOOR: xc.NvbenchTimes(batch_mean_us=9.0)})
    assert all(r.nvbench_floor == 9.0 and r.nvbench_launch_bound for r in kernels)


def test_a_batch_figure_over_nvbenchs_own_cold_one_is_its_launchers_rate() -> None:
    """The H200 at check sizes: axpy's CUDA kernel, 2.25 us in graph mode, reads 14.56 us in nvbench's batch, over
    twice its 7.01 us cold figure and over twice the empty kernel's 6.83 us through the same launcher (axpy's
    five arguments cost the Python launcher more than none). A canonical-size kernel's batch figure is under its
    cold one, and is compared."""
    nv = {"axpy_f64/cuda": xc.NvbenchTimes(batch_mean_us=14.56, cold_median_us=7.01),
          "axpy_f64/wf": xc.NvbenchTimes(batch_mean_us=196.1, cold_median_us=198.4),
          xc.NVBENCH_FLOOR: xc.NvbenchTimes(batch_mean_us=6.83)}
    wf = {"axpy_f64": {"cuda": {"graph": 2.25, "cold-l2": 6.91}, "wf": {"graph": 195.9, "cold-l2": 198.0}}}
    kernels, _ = xc.compare(wf, nv, {"axpy_f64": 4.0})
    k = {r.side: r for r in kernels}
    assert k["cuda"].nvbench_launch_bound and k["cuda"].diff("graph") is None
    assert k["cuda"].diff("cold-l2") == pytest.approx(6.91 / 7.01 - 1)
    assert not k["wf"].nvbench_launch_bound and k["wf"].diff("graph") == pytest.approx(195.9 / 196.1 - 1)
    assert xc.within(kernels, 0.02)


def _small_kernels_launch_bound_in_nvbench(cold_wf_us: float) -> tuple[list, list]:  # type: ignore[type-arg]
    """At check sizes: nvbench's Python batch launcher at 11-13 us per launch against a 6.5 us launch floor."""
    nv = {"scale_i64/wf": xc.NvbenchTimes(batch_mean_us=11.4, cold_mean_us=4.0),
          "scale_i64/cuda": xc.NvbenchTimes(batch_mean_us=12.9, cold_mean_us=3.0)}
    wf = {"scale_i64": {"wf": {"events": 6.1, "graph": 2.81, "cold-l2": cold_wf_us},
                        "cuda": {"events": 6.0, "graph": 1.95, "cold-l2": 3.03}}}
    return xc.compare(wf, nv, {"scale_i64": 6.5})


def test_in_each_mode_only_like_figures_are_compared_and_decide() -> None:
    kernels, gaps = _small_kernels_launch_bound_in_nvbench(cold_wf_us=4.04)
    by_mode = {g.mode: g for g in gaps}
    # events and graph would read -45 % and -75 % against a launcher's rate: no figure, no verdict
    assert by_mode["events"].nvbench_gap is None and by_mode["graph"].nvbench_gap is None
    assert by_mode["cold-l2"].nvbench_gap == pytest.approx(4 / 3) and by_mode["cold-l2"].diff == pytest.approx(
        (4.04 / 3.03) / (4 / 3) - 1)
    assert xc.worst_by_mode(kernels) == {"events": None, "graph": None, "cold-l2": pytest.approx(0.01)}
    assert xc.within(kernels, 0.02) and xc.disagreements(kernels, 0.02) == []
    text = xc.render(kernels, gaps, 0.02)
    assert "events vs nvbench batch" in text and "cold-l2 vs nvbench cold" in text
    assert text.count("nvbench launch-bound") == 4  # two sides x events, graph
    assert "worst per-kernel disagreement 1.00% (events -, graph -, cold-l2 1.00%; target <= 2.0%)" in text
    data = xc.as_json(kernels, gaps, 0.02)
    assert data["kernels"][0]["launch_bound"] == {"events": True, "graph": True, "cold-l2": False}
    assert [g["mode"] for g in data["gaps"]] == ["events", "graph", "cold-l2"]
    kernels, _ = _small_kernels_launch_bound_in_nvbench(cold_wf_us=4.4)
    assert xc.disagreements(kernels, 0.02) == ["scale_i64/wf cold-l2 +10.00%"]


@pytest.mark.parametrize("cold_wf_us, code", [(4.04, 0), (4.4, 1)])
def test_the_exit_status_is_1_only_for_a_like_figure_beyond_the_tolerance(
        prebuilt_bundle, monkeypatch, cold_wf_us: float, code: int) -> None:  # type: ignore[no-untyped-def]
    bundle = prebuilt_bundle(case_ids=("scale_i64",))
    monkeypatch.setattr(xc, "crosscheck", lambda *a, **k: _small_kernels_launch_bound_in_nvbench(cold_wf_us))
    r = CliRunner().invoke(main, ["crosscheck", str(bundle), "--small", "--mode", "events", "--mode", "graph",
                                  "--mode", "cold-l2", "--tolerance", "0.02", "--quiet"])
    assert r.exit_code == code, r.output
    assert "nvbench's launcher is the bottleneck" in r.output and "Traceback" not in r.output
    if code:
        assert "differ by more than 2.0% on like figures: scale_i64/wf cold-l2 +10.00%" in r.output


def test_every_mode_timed_is_kept_for_the_comparison() -> None:
    """crosscheck times the modes one after another; each mode's medians join the case's, none replaces another
    (the table once showed only the last mode timed)."""
    from wfbench_core.studies.crosscheck import add_medians

    by_side: dict[str, dict[str, float]] = {}
    for mode, us in (("events", 7.9), ("graph", 3.1), ("cold-l2", 8.2)):
        add_medians(by_side, {"wf": {mode: us}, "cuda": {mode: us / 2}})
    assert by_side == {"wf": {"events": 7.9, "graph": 3.1, "cold-l2": 8.2},
                       "cuda": {"events": 3.95, "graph": 1.55, "cold-l2": 4.1}}


def test_cold_l2_is_compared_with_nvbenchs_cold_median_where_its_json_has_one() -> None:
    """cuda-bench 0.3.0's --json (a real file, from an H200; only the output path it echoes is shortened) gives
    the cold median beside the mean: a wfbench median is compared with it, like with like; an nvbench that
    gives the mean only is compared with that."""
    real = json.loads((Path(__file__).parent / "fixtures" / "nvbench-cuda-bench-0.3.0.json").read_text())
    got = xc.parse_nvbench_json(real)["scale_i64/wf"]
    assert got.cold_median_us == pytest.approx(8.224, abs=5e-4) and got.cold_mean_us == pytest.approx(8.283, abs=5e-4)
    row = xc.KernelRow("scale_i64", "wf", {"cold-l2": 8.17}, got)
    assert row.reference_us("cold-l2") == got.cold_median_us
    assert row.diff("cold-l2") == pytest.approx(8.17 / got.cold_median_us - 1)
    mean_only = xc.parse_nvbench_json(_nvbench_json({"k/wf": (9.0e-6, 8.0e-6)}))["k/wf"]
    assert mean_only.cold_median_us is None and mean_only.cold_us == pytest.approx(9.0)
