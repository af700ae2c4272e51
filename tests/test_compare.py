"""``wfbench compare``: verdicts from raw samples with a known shift and with none; fingerprints; base/head."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import attrs
import numpy as np
import pytest
from click.testing import CliRunner
from synth_runs import REAL_AA, evolve_case, real_run, synth_run, with_case

from wfbench_core.cli import main
from wfbench_core.record.results import RunResult, write_result
from wfbench_core.review import compare, compare_table, evidence, verdicts
from wfbench_core.stats import summarize


def jittered(samples: tuple[float, ...], scale: float, seed: int, sd: float = 0.002) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.asarray(samples) * scale * (1 + rng.normal(0, sd, len(samples)))


REAL_WF = real_run().case("axpy_f64").timing.warpforth.samples_us
V = verdicts


def by_case(cmp: compare.RunComparison) -> dict[str, compare.CaseComparison]:
    return {c.case_id: c for c in cmp.cases}


def test_two_runs_a_compiler_regression_is_slower_and_the_rest_same() -> None:
    base = synth_run(0, jitter=0.002, placements=15, placement_sd=0.001)
    head = synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002, placements=15, placement_sd=0.001)
    cmp = compare.compare_runs(base, head)
    axpy, scale = by_case(cmp)["axpy_f64"], by_case(cmp)["scale_i64"]
    assert axpy.compared and axpy.verdict.verdict == V.SLOWER and axpy.verdict.regression
    assert 1.05 < axpy.gap.ci_low <= axpy.gap.ratio <= axpy.gap.ci_high < 1.15
    assert axpy.gap.ratio == pytest.approx(1.10, rel=0.01)
    assert axpy.verdict.lo == pytest.approx(axpy.gap.ci_low - 1) and axpy.verdict.hi == pytest.approx(axpy.gap.ci_high - 1)
    assert axpy.warpforth.ci_low < 1.10 < axpy.warpforth.ci_high and axpy.cuda.ci_low < 1.0 < axpy.cuda.ci_high
    assert scale.verdict.verdict == V.SAME and V.IDENTICAL_CODE in scale.verdict.qualifiers
    assert [c.case_id for c in cmp.regressions] == ["axpy_f64"]
    assert "15 placements" in axpy.gap.basis and "process 0.10% default" in axpy.gap.basis
    (note,) = cmp.notes  # same board: only the note that no history gave the between-run components
    assert note.startswith("no history given")


def test_the_interval_resamples_placements_not_pairs() -> None:
    """A strong placement effect: the change's interval must be as wide as the placements say, far wider
    than the pairs' own noise would make it."""
    base = synth_run(0, jitter=0.0002, placements=10, placement_sd=0.004)
    head = synth_run(1, jitter=0.0002, placements=10, placement_sd=0.004, wf_scale={"axpy_f64": 1.001})
    axpy = by_case(compare.compare_labels(base_head(base, head)))["axpy_f64"]
    half = math.log(axpy.gap.ci_high / axpy.gap.ci_low) / 2
    assert half > 0.002, "10 placements moving the gap by 0.4 % each cannot give a tighter interval"
    assert axpy.verdict.verdict in (V.AMBIGUOUS, V.SAME)


def base_head(base: RunResult, head: RunResult) -> RunResult:
    """One base/head run made of two runs' WarpForth samples against the base run's CUDA samples."""
    cases = []
    for b, h in zip(base.cases, head.cases):
        cases.append(attrs.evolve(b, compiler_label="base"))
        t = attrs.evolve(h.timing, cuda=b.timing.cuda, placement_of=b.timing.placement_of)
        cases.append(attrs.evolve(h, compiler_label="head", timing=attrs.evolve(t, gap=t.warpforth.median_us
                                                                                / t.cuda.median_us)))
    head_info = attrs.evolve(base.warpforthc, version="build-headheadhead")
    return attrs.evolve(base, cases=tuple(cases), compilers={"base": base.warpforthc, "head": head_info})


def test_only_the_same_fingerprint_is_compared() -> None:
    base = synth_run(0)
    head = with_case(synth_run(1), "axpy_f64", fingerprint="f" * 64)
    by = {c.case_id: c for c in compare.compare_runs(base, head).cases}
    assert not by["axpy_f64"].compared and "fingerprint" in by["axpy_f64"].reason
    assert by["scale_i64"].compared
    text = compare_table.render_text(compare.compare_runs(base, head))
    assert "axpy_f64: not compared: different case definitions" in text


def test_modes_and_missing_cases_are_not_compared() -> None:
    from wfbench_core.record.results import load_result

    cmp = compare.compare_runs(real_run(), load_result(REAL_AA))
    assert all(not c.compared and "timing modes" in c.reason for c in cmp.cases)
    head = attrs.evolve(synth_run(1), cases=synth_run(1).cases[:1])
    by = {c.case_id: c for c in compare.compare_runs(synth_run(0), head).cases}
    assert not by["scale_i64"].compared and "not in head" in by["scale_i64"].reason


def test_different_gpu_models_are_not_compared() -> None:
    cmp = compare.compare_runs(synth_run(0), synth_run(1, wf_scale=1.2, gpu_name="NVIDIA H100 80GB HBM3"))
    assert any("different GPU models" in n for n in cmp.notes)
    assert all(not c.compared and "different GPU models" in c.reason for c in cmp.cases) and not cmp.regressions


def base_head_run(head_scale: float, seed: int = 5, placements: int = 15):  # type: ignore[no-untyped-def]
    """One interleaved base/head run: per case a base and a head result against the SAME CUDA samples."""
    run = real_run()
    rng = np.random.default_rng(seed)
    cases = []
    for c in run.cases:
        shared = tuple(float(v) for v in jittered(c.timing.cuda.samples_us, 1.0, seed, 0.001))
        for label, scale in (("base", 1.0), ("head", head_scale)):
            cases.append(evolve_case(c, wf_scale=scale, jitter=0.001, rng=rng, cuda_samples=shared,
                                     compiler_label=label, placements=placements))
    head_info = attrs.evolve(run.warpforthc, version="build-headheadhead")
    return attrs.evolve(run, cases=tuple(cases), compilers={"base": run.warpforthc, "head": head_info})


@pytest.mark.parametrize("shift", [0.93, 1.03])
def test_one_base_head_run(shift: float) -> None:
    cmp = compare.compare_labels(base_head_run(shift))
    assert cmp.same_run and cmp.head_compiler == "build-headheadhead"
    for c in cmp.cases:
        assert c.compared and c.cuda.shared
        assert c.verdict.verdict == (V.FASTER if shift < 1 else V.SLOWER)
        assert c.gap.ratio == pytest.approx(shift, rel=0.01) and c.gap.ci_low < c.gap.ratio < c.gap.ci_high
        assert "15 placements resampled, base, head and CUDA together" in c.gap.basis
    steady = compare.compare_labels(base_head_run(1.0))
    assert {c.verdict.label for c in steady.cases} == {"SAME (identical code)"}
    assert not steady.regressions


BH_RUN = Path(__file__).parent / "fixtures" / "h200-run-bh.json"


def heads_moved(moves: dict[str, float], new_code: dict[str, float] = (), **changes: dict[str, object]) -> RunResult:  # type: ignore[assignment]
    """The stored H200 base/head run (8 cases, every head byte-identical to its base) with some heads' WarpForth
    samples moved: ``moves`` keep the code identical (the environment moved them), ``new_code`` are compiler
    changes; ``changes`` set fields of a head's result (``{case: {field: value}}``)."""
    from wfbench_core.record.results import load_result

    run = load_result(BH_RUN)
    cases = []
    for c in run.cases:
        if c.compiler_label == "head" and (c.id in moves or c.id in dict(new_code)):
            c = evolve_case(c, run_offset=moves.get(c.id, 1.0), wf_scale=dict(new_code).get(c.id, 1.0),
                            cuda_samples=c.timing.cuda.samples_us)
        if c.compiler_label == "head" and c.id in changes:
            c = attrs.evolve(c, **changes[c.id])
        cases.append(c)
    return attrs.evolve(run, cases=tuple(cases))


def test_one_odd_identical_case_does_not_hide_a_real_regression() -> None:
    """The demonstrated case: one identical case reading +0.8 % made the same-run A/A floor 0.8 %, and a real
    0.5 % regression SAME. The floor is what at least two steady identical cases read: the odd case is SAME
    (identical code, moved), the regression is SLOWER."""
    cmp = compare.compare_labels(heads_moved({"scale_i64": 1.008}, new_code={"reduce_sum_f64": 1.005}))
    reduce, scale = by_case(cmp)["reduce_sum_f64"], by_case(cmp)["scale_i64"]
    assert scale.gap.ratio == pytest.approx(1.008, abs=2e-4)
    assert scale.verdict.label == f"SAME ({V.IDENTICAL_CODE}, {V.MOVED})"
    assert reduce.gap.ratio == pytest.approx(1.005, abs=2e-4) and reduce.verdict.verdict == V.SLOWER
    assert reduce.verdict.margin < 0.003 and "second largest of 7 steady case(s)" in reduce.verdict.margin_basis
    assert [c.case_id for c in cmp.regressions] == ["reduce_sum_f64"]


def test_two_identical_cases_reading_wide_set_the_floor_and_noisy_ones_do_not() -> None:
    """Two identical cases reading +0.6 % and +0.5 %: the method reads that far here, the margin is 0.5 % and a
    +0.4 % change of new code is not SLOWER. The same two, one of them noisy (UNSTABLE): it reads its own
    circumstances, the floor is the next steady case's and the +0.4 % change is SLOWER."""
    moves, new = {"scale_i64": 1.006, "transpose_f64": 1.005}, {"reduce_sum_f64": 1.004}
    cmp = compare.compare_labels(heads_moved(moves, new_code=new))
    reduce = by_case(cmp)["reduce_sum_f64"]
    assert reduce.verdict.margin == pytest.approx(by_case(cmp)["transpose_f64"].gap.ratio - 1, rel=1e-6)
    assert reduce.verdict.verdict in (V.SAME, V.AMBIGUOUS) and "A/A floor 0.4" in reduce.verdict.margin_basis
    noisy = compare.compare_labels(heads_moved(moves, new_code=new, scale_i64={"status": "unstable"}))
    reduce = by_case(noisy)["reduce_sum_f64"]
    assert reduce.verdict.margin < 0.003 and reduce.verdict.verdict == V.SLOWER
    assert by_case(noisy)["scale_i64"].verdict.label.startswith(f"SAME ({V.IDENTICAL_CODE}, {V.MOVED}")


def three_labels() -> RunResult:
    """The stored base/head run as a run of three compilers: base, d1 (reduce_sum_f64 0.5 % slower, new code)
    and d2, whose PTX is byte-identical to d1's: its results carry d1's samples, timed with d1."""
    run = heads_moved({}, new_code={"reduce_sum_f64": 1.005})
    d1 = [attrs.evolve(c, compiler_label="d1") for c in run.cases if c.compiler_label == "head"]
    d2 = [attrs.evolve(c, compiler_label="d2", timing=attrs.evolve(c.timing, timed_with="d1")) for c in d1]
    base = [c for c in run.cases if c.compiler_label == "base"]
    info = run.compilers["head"]
    return attrs.evolve(run, cases=tuple(base + d1 + d2), compilers={"base": run.compilers["base"], "d1": info,
                                                                    "d2": info})


def test_timed_once_only_where_one_kernel_was_timed_for_both() -> None:
    """d2 was timed with d1's kernel, not with base's: base against d2 is a real comparison (SLOWER, not
    'timed once'); d1 against d2 is the one kernel timed once."""
    run = three_labels()
    reduce = by_case(compare.compare_labels(run, "base", "d2"))["reduce_sum_f64"]
    assert reduce.verdict.label == "SLOWER"
    twins = by_case(compare.compare_labels(run, "d1", "d2"))["reduce_sum_f64"]
    assert twins.verdict.label == f"SAME ({V.IDENTICAL_CODE}, {V.TIMED_ONCE})"


def test_head_label_alone_picks_base_in_a_run_of_several_labels(tmp_path: Path) -> None:
    out = tmp_path / "three.json"
    write_result(three_labels(), out)
    runner = CliRunner()
    res = runner.invoke(main, ["compare", str(out), "--head-label", "d1"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("base (warpforthc") and re.search(r"^reduce_sum_f64 v1 .*SLOWER$", res.stdout, re.M)
    res = runner.invoke(main, ["compare", str(out), "--base-label", "d1", "--head-label", "d2"])
    assert res.exit_code == 0 and res.stdout.startswith("d1 (warpforthc"), res.output
    bad = runner.invoke(main, ["compare", str(out)])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "(base base, head ?; labels in it: base, d1, d2); name the two to compare with --base-label and " \
           "--head-label" in bad.stderr


def test_a_plain_run_is_not_a_base_head_run() -> None:
    from wfbench_core.errors import WfbenchError

    with pytest.raises(WfbenchError, match="not a base/head run"):
        compare.compare_labels(real_run(), name="r.json")


def test_cli_table_markdown_json_and_exit_codes(tmp_path: Path) -> None:
    base, head, both = tmp_path / "base.json", tmp_path / "head.json", tmp_path / "bh.json"
    write_result(synth_run(0, jitter=0.002, placements=15), base)
    write_result(synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002, placements=15), head)
    write_result(base_head_run(0.93), both)
    runner = CliRunner()

    res = runner.invoke(main, ["compare", str(base), str(head)])
    assert res.exit_code == 0, res.output
    axpy = next(line for line in res.stdout.splitlines() if line.startswith("axpy_f64"))
    assert axpy.rstrip().endswith("SLOWER") and "+10." in axpy
    assert "2 case(s): 1 SLOWER, 1 SAME" in res.stdout

    md = runner.invoke(main, ["compare", str(base), str(head), "--markdown"]).stdout
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert table[0].startswith("| case |") and set(table[1]) <= set("|-:")
    assert len(table) == 2 + 2 and all(line.count("|") == table[0].count("|") for line in table)
    assert "**SLOWER**" in md and "→" in md and "SAME (identical code)" in md

    data = json.loads(runner.invoke(main, ["compare", str(base), str(head), "--json"]).stdout)
    assert {c["case_id"]: c["verdict"]["verdict"] for c in data["cases"]}["axpy_f64"] == "slower"
    assert data["regressions"] == ["axpy_f64"]

    assert runner.invoke(main, ["compare", str(base), str(head), "--fail-on-regression"]).exit_code == 1
    assert runner.invoke(main, ["compare", str(base), str(head), "--fail-on-regression",
                                "--min-effect", "0.2"]).exit_code == 0
    one = runner.invoke(main, ["compare", str(both), "--fail-on-regression"])
    assert one.exit_code == 0 and "one interleaved base/head run" in one.stdout and "FASTER" in one.stdout

    bad = runner.invoke(main, ["compare", str(base)])
    assert bad.exit_code == 2 and "not a base/head run" in bad.stderr and "Traceback" not in bad.output


# --------------------------------------------------------------------------------------------------------
# between two runs: processes, boards, identical code, the CUDA side


def test_a_run_offset_of_new_code_within_what_processes_vary_is_not_slower() -> None:
    """Two runs whose gaps differ by 0.15 % (about what fresh processes on one H200 differ by) with new code:
    the samples are sharp, but the interval carries the process component, so it is not SLOWER."""
    base = synth_run(0, jitter=0.0003, placements=15)
    head = synth_run(1, jitter=0.0003, placements=15, wf_scale={"axpy_f64": 1.0015})
    axpy = by_case(compare.compare_runs(base, head))["axpy_f64"]
    assert axpy.gap.ratio == pytest.approx(1.0015, abs=0.0004)
    assert axpy.verdict.verdict == V.AMBIGUOUS and axpy.verdict.lo < 0 < axpy.verdict.hi


def test_identical_ptx_is_same_by_rule_even_when_the_gap_moved() -> None:
    base = synth_run(0, jitter=0.0005, placements=15)
    head = synth_run(1, jitter=0.0005, placements=15, run_offset={"axpy_f64": 1.04})  # 4 %, PTX byte-identical
    axpy = by_case(compare.compare_runs(base, head))["axpy_f64"]
    assert axpy.verdict.label == f"SAME ({V.IDENTICAL_CODE}, {V.MOVED})" and not axpy.verdict.regression
    changed = synth_run(1, jitter=0.0005, placements=15, wf_scale={"axpy_f64": 1.04})  # the same 4 % from the compiler
    assert by_case(compare.compare_runs(base, changed))["axpy_f64"].verdict.verdict == V.SLOWER


def test_another_board_is_a_qualifier_and_a_large_regression_is_still_slower() -> None:
    base = synth_run(0, jitter=0.0005, placements=15)
    head = synth_run(1, jitter=0.0005, placements=15, wf_scale={"axpy_f64": 1.02}, gpu_uuid="GPU-another-board")
    cmp = compare.compare_runs(base, head)
    axpy = by_case(cmp)["axpy_f64"]
    assert axpy.verdict.label == f"SLOWER ({V.OTHER_BOARD})" and [c.case_id for c in cmp.regressions] == ["axpy_f64"]
    assert "its board and process added" in axpy.gap.basis and f"board {evidence.board_sd(head.environment.gpu_name)[0]:.2%} default" in axpy.gap.basis
    assert any(n.startswith("different boards of one GPU model") and "GPU-another-board" in n for n in cmp.notes)
    # within what boards differ by (0.6 % with new code): no evidence either way
    small = synth_run(1, jitter=0.0005, placements=15, wf_scale={"axpy_f64": 1.006}, gpu_uuid="GPU-another-board")
    assert by_case(compare.compare_runs(base, small))["axpy_f64"].verdict.label == f"AMBIGUOUS ({V.OTHER_BOARD})"
    unknown = synth_run(1, jitter=0.0005, placements=15, wf_scale={"axpy_f64": 1.02}, gpu_uuid="")
    assert V.UNKNOWN_BOARD in by_case(compare.compare_runs(base, unknown))["axpy_f64"].verdict.qualifiers


def test_a_changed_cuda_side_is_baseline_changed_never_a_verdict() -> None:
    """A new nvcc makes the CUDA side 5 % faster while WarpForth holds: the gap rises 5 %, and that is not a
    WarpForth regression."""
    base = synth_run(0, jitter=0.0005, placements=15)
    head = synth_run(1, jitter=0.0005, placements=15, cuda_scale=0.95)
    head = attrs.evolve(head, cuda_compiler=attrs.evolve(head.cuda_compiler, version="13.1.0"))
    cmp = compare.compare_runs(base, head)
    assert {c.verdict.verdict for c in cmp.cases} == {V.BASELINE_CHANGED} and not cmp.regressions
    assert "baseline changed: CUDA compiler nvcc" in compare_table.render_text(cmp)
    one = with_case(synth_run(1, jitter=0.0005, placements=15, cuda_scale=0.95), "axpy_f64",
                    compile_cuda=attrs.evolve(base.case("axpy_f64").compile_cuda, ptx_sha256="c" * 64))
    assert by_case(compare.compare_runs(base, one))["axpy_f64"].verdict.verdict == V.BASELINE_CHANGED


def test_the_history_measures_the_board_component(tmp_path: Path) -> None:
    """A family whose boards differ by 1 % (sd): measured from the history, that component widens the interval
    of a run on a new board, so +2 % is no longer shown while +8 % still is."""
    from wfbench_core.review.history import History, add_run

    rng = np.random.default_rng(3)
    for i in range(10):
        add_run(tmp_path, synth_run(i, jitter=0.0005, placements=15, gpu_uuid=f"GPU-{i}",
                                    run_offset=float(np.exp(rng.normal(0.0, 0.01)))))
    h = History.open(tmp_path)
    base = synth_run(20, jitter=0.0005, placements=15, gpu_uuid="GPU-0")
    for scale, want in ((1.02, V.AMBIGUOUS), (1.08, V.SLOWER)):
        head = synth_run(21, jitter=0.0005, placements=15, wf_scale={"axpy_f64": scale}, gpu_uuid="GPU-new")
        axpy = by_case(compare.compare_runs(base, head, history=h))["axpy_f64"]
        assert axpy.verdict.verdict == want, (scale, axpy.verdict)
        assert "board and process" in axpy.gap.basis and "measured (9 degrees of freedom" in axpy.gap.basis
    # the same +2 % without the history: the stated default board component shows it
    assert by_case(compare.compare_runs(base, synth_run(21, jitter=0.0005, placements=15, wf_scale={"axpy_f64": 1.02},
                                                        gpu_uuid="GPU-new")))["axpy_f64"].verdict.verdict == V.SLOWER


def test_an_a_a_run_on_the_board_widens_the_margin(tmp_path: Path) -> None:
    from synth_runs import REAL_AA

    from wfbench_core.record.results import load_result
    from wfbench_core.review.history import History, add_run

    aa = load_result(REAL_AA)
    board = aa.environment.gpu_uuid
    add_run(tmp_path, aa)
    base = synth_run(0, jitter=0.0005, placements=15, gpu_uuid=board)
    head = synth_run(1, jitter=0.0005, placements=15, gpu_uuid=board, wf_scale={"axpy_f64": 1.02})
    axpy = by_case(compare.compare_runs(base, head, history=History.open(tmp_path)))["axpy_f64"]
    floor = abs(aa.case("axpy_f64").timing.gap - 1.0)
    assert axpy.verdict.margin == pytest.approx(max(floor, V.DEFAULT_MARGIN))
    assert "A/A" in axpy.verdict.margin_basis and axpy.verdict.verdict == V.SLOWER


EXAMPLE_RUNS = sorted((Path(__file__).parents[1] / "examples" / "history" / "runs").rglob("*.json"))
FIXTURE_RUNS = sorted((Path(__file__).parent / "fixtures").glob("h200-*.json"))


def _plain_paired() -> dict[str, object]:
    from wfbench_core.record.results import load_result

    runs = {p.name: load_result(p) for p in EXAMPLE_RUNS + FIXTURE_RUNS}
    return {name: r for name, r in runs.items() if r.mode == "paired" and not compare.labels_of(r)}


def test_the_stored_same_ptx_runs_are_never_slower_or_faster(tmp_path: Path) -> None:
    """Every stored H200 run holds byte-identical WarpForth PTX per case: between any two of them the rule
    makes every case SAME. With the PTX hashes stripped only the statistics decide, against the components
    the other stored runs measure (their boards differ by up to 3 % under the old protocol): still no case
    may be SLOWER or FASTER."""
    from wfbench_core.review.history import History, add_run

    runs = _plain_paired()
    assert len(runs) >= 5
    ptx: dict[str, set[str]] = {}
    for r in runs.values():
        for c in r.cases:
            ptx.setdefault(c.id, set()).add(c.compile_wf.ptx_sha256)
    assert all(len(v) == 1 for v in ptx.values()), "the stored runs are same-PTX runs"
    assert len({r.environment.gpu_uuid for r in runs.values()}) >= 3
    names = sorted(runs)
    for n in names:
        add_run(tmp_path, runs[n])
    history = History.open(tmp_path)  # the compared runs themselves are left out of what it measures
    verdicts_seen = set()
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            cmp = compare.compare_runs(runs[a], runs[b], base_name=a, head_name=b)
            assert {c.verdict.verdict for c in cmp.cases if c.compared} <= {V.SAME}
            ra, rb = (attrs.evolve(r, cases=tuple(attrs.evolve(c, compile_wf=None) for c in r.cases))
                      for r in (runs[a], runs[b]))
            stripped = compare.compare_runs(ra, rb, base_name=a, head_name=b, history=history)
            for c in stripped.cases:
                if c.compared:
                    assert c.verdict.verdict not in (V.SLOWER, V.FASTER), (a, b, c.case_id, c.verdict)
                    verdicts_seen.add(c.verdict.verdict)
    assert V.AMBIGUOUS in verdicts_seen


def test_repeat_processes_measure_the_process_component() -> None:
    """A --repeat run carries one gap per process: without a history they measure the process component, so a
    +1 % change is not shown when the processes themselves spread by 4 %, and is with quiet processes."""
    base = synth_run(0, jitter=0.0005, placements=15)
    head = synth_run(1, jitter=0.0005, placements=15, wf_scale={"axpy_f64": 1.01})
    g = head.case("axpy_f64").timing.gap

    def with_repeats(gaps: tuple[float, ...]) -> compare.CaseComparison:
        t = head.case("axpy_f64").timing
        return by_case(compare.compare_runs(base, with_case(head, "axpy_f64", timing=attrs.evolve(
            t, repeat_gaps=gaps))))["axpy_f64"]

    noisy = with_repeats((g * 0.98, g * 1.0, g * 1.015, g * 0.985, g * 1.02))
    assert noisy.verdict.verdict == V.AMBIGUOUS and "process 1." in noisy.gap.basis
    quiet = with_repeats(tuple(g * (1 + 0.0003 * k) for k in (-2, -1, 0, 1, 2)))
    assert quiet.verdict.verdict == V.SLOWER and "measured (4 degrees of freedom)" in quiet.gap.basis
    # two processes that agree: one degree of freedom is too few to trust a component below the default
    assert with_repeats((g, g * 1.0001)).gap.basis.endswith("process 0.10% default")


def test_runs_compared_again_are_not_bootstrapped_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run compared with several others (a history, the boards' pairs) has its sides' and gaps' bootstrap
    made once per process: comparing the same two stored runs the other way round bootstraps nothing new, and
    its figures are those of a process that had made none."""
    from wfbench_core.record.results import load_result
    from wfbench_core.stats import estimates

    boards = sorted((Path(__file__).parents[1] / "docs" / "results" / "boards").glob("h200-suite17-*.json"))
    a, b = (load_result(p) for p in boards[:2])
    monkeypatch.setattr(estimates, "_MADE", {}, raising=False)
    made: list[int] = []
    real = estimates.cluster_estimate
    monkeypatch.setattr(estimates, "cluster_estimate", lambda *args, **kw: made.append(1) or real(*args, **kw))
    compare.compare_runs(a, b, base_name="a", head_name="b", settings=compare.Settings())
    once = len(made)
    again = compare.compare_runs(b, a, base_name="b", head_name="a", settings=compare.Settings())
    assert once > 0 and len(made) == once
    monkeypatch.setattr(estimates, "_MADE", {}, raising=False)
    fresh = compare.compare_runs(b, a, base_name="b", head_name="a", settings=compare.Settings())
    assert len(made) == 2 * once
    assert [(c.case_id, c.verdict) for c in again.cases] == [(c.case_id, c.verdict) for c in fresh.cases]
    assert any(c.verdict is not None for c in again.cases)
