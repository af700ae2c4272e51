"""``wfbench compare``: verdicts from raw samples with a known shift and with none; fingerprints; base/head."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np
import pytest
from click.testing import CliRunner

from synth_runs import REAL_AA, evolve_case, real_run, synth_run, with_case
from wfbench_core.review import compare
from wfbench_core.cli import main
from wfbench_core.record.results import write_result


def jittered(samples: tuple[float, ...], scale: float, seed: int, sd: float = 0.002) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.asarray(samples) * scale * (1 + rng.normal(0, sd, len(samples)))


REAL_WF = real_run().case("axpy_f64").timing.warpforth.samples_us


@pytest.mark.parametrize("shift", [1.03, 1.10, 0.95])
def test_a_known_shift_is_significant_and_inside_its_interval(shift: float) -> None:
    base = jittered(REAL_WF, 1.0, seed=1)
    head = jittered(REAL_WF, shift, seed=2)
    c = compare.compare_samples(base, head)
    assert c.significant and c.p_value < 0.01
    assert c.ci_low < shift < c.ci_high
    assert c.ratio == pytest.approx(shift, rel=0.005)
    assert c.verdict == (compare.SLOWER if shift > 1 else compare.FASTER)


@pytest.mark.parametrize("seed", range(5))
def test_no_shift_is_no_change(seed: int) -> None:
    base = jittered(REAL_WF, 1.0, seed=10 + seed)
    head = jittered(REAL_WF, 1.0, seed=20 + seed)
    c = compare.compare_samples(base, head)
    assert c.verdict in (compare.NO_CHANGE, compare.NEGLIGIBLE)
    assert abs(c.ratio - 1) < 0.01


def test_a_tiny_real_shift_is_negligible() -> None:
    base = jittered(REAL_WF, 1.0, seed=1, sd=0.0002)
    head = jittered(REAL_WF, 1.004, seed=2, sd=0.0002)
    c = compare.compare_samples(base, head)
    assert c.significant and c.verdict == compare.NEGLIGIBLE


def test_two_runs_gap_worse_cuda_unchanged() -> None:
    base = synth_run(0, jitter=0.002)
    head = synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002)
    cmp = compare.compare_runs(base, head)
    by = {c.case_id: c for c in cmp.cases}
    axpy, scale = by["axpy_f64"], by["scale_i64"]
    assert axpy.compared and axpy.gap.verdict == compare.WORSE and axpy.warpforth.verdict == compare.SLOWER
    assert 1.05 < axpy.gap.ci_low <= axpy.gap.ratio <= axpy.gap.ci_high < 1.15
    assert axpy.gap.ratio == pytest.approx(1.10, rel=0.01)
    assert axpy.cuda.verdict in (compare.NO_CHANGE, compare.NEGLIGIBLE)
    assert scale.gap.verdict in (compare.NO_CHANGE, compare.NEGLIGIBLE)
    assert [c.case_id for c in cmp.regressions] == ["axpy_f64"]
    assert axpy.gap.threshold == compare.Settings().run_floor and "floor" in axpy.variation
    (note,) = cmp.notes  # same board: only the note that no history gave the between-run variation
    assert note.startswith("no history given")


def test_only_the_same_fingerprint_is_compared() -> None:
    base = synth_run(0)
    head = with_case(synth_run(1), "axpy_f64", fingerprint="f" * 64)
    by = {c.case_id: c for c in compare.compare_runs(base, head).cases}
    assert not by["axpy_f64"].compared and "fingerprint" in by["axpy_f64"].reason
    assert by["scale_i64"].compared
    text = compare.render_text(compare.compare_runs(base, head))
    assert "axpy_f64: not compared: different case definitions" in text


def test_modes_and_missing_cases_are_not_compared() -> None:
    from wfbench_core.record.results import load_result

    cmp = compare.compare_runs(real_run(), load_result(REAL_AA))
    assert all(not c.compared and "timing modes" in c.reason for c in cmp.cases)
    head = attrs.evolve(synth_run(1), cases=synth_run(1).cases[:1])
    by = {c.case_id: c for c in compare.compare_runs(synth_run(0), head).cases}
    assert not by["scale_i64"].compared and "not in head" in by["scale_i64"].reason


def test_different_gpus_are_flagged() -> None:
    cmp = compare.compare_runs(synth_run(0), synth_run(1, gpu_name="NVIDIA H100 80GB HBM3"))
    assert any("different GPUs" in n for n in cmp.notes)


def base_head_run(head_scale: float, seed: int = 5):  # type: ignore[no-untyped-def]
    """One interleaved base/head run: per case a base and a head result against the SAME CUDA samples."""
    run = real_run()
    rng = np.random.default_rng(seed)
    cases = []
    for c in run.cases:
        shared = tuple(float(v) for v in jittered(c.timing.cuda.samples_us, 1.0, seed, 0.001))
        cases.append(evolve_case(c, jitter=0.001, rng=rng, cuda_samples=shared, compiler_label="base"))
        cases.append(evolve_case(c, wf_scale=head_scale, jitter=0.001, rng=rng, cuda_samples=shared,
                                 compiler_label="head"))
    head_info = attrs.evolve(run.warpforthc, version="build-headheadhead")
    return attrs.evolve(run, cases=tuple(cases), compilers={"base": run.warpforthc, "head": head_info})


def test_one_base_head_run() -> None:
    cmp = compare.compare_labels(base_head_run(0.93))
    assert cmp.same_run and cmp.head_compiler == "build-headheadhead"
    for c in cmp.cases:
        assert c.compared
        assert c.cuda.verdict == compare.SHARED
        assert c.gap.verdict == compare.BETTER and c.gap.ratio == pytest.approx(0.93, rel=0.01)
        assert c.gap.ci_high < 1.0
    steady = compare.compare_labels(base_head_run(1.0))
    assert all(c.gap.verdict in (compare.NO_CHANGE, compare.NEGLIGIBLE) for c in steady.cases)


def test_a_plain_run_is_not_a_base_head_run() -> None:
    from wfbench_core.errors import WfbenchError

    with pytest.raises(WfbenchError, match="not a base/head run"):
        compare.compare_labels(real_run(), name="r.json")


def test_cli_table_markdown_json_and_exit_codes(tmp_path: Path) -> None:
    base, head, both = tmp_path / "base.json", tmp_path / "head.json", tmp_path / "bh.json"
    write_result(synth_run(0, jitter=0.002), base)
    write_result(synth_run(1, wf_scale={"axpy_f64": 1.10}, jitter=0.002), head)
    write_result(base_head_run(0.93), both)
    runner = CliRunner()

    res = runner.invoke(main, ["compare", str(base), str(head)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    axpy = next(line for line in lines if line.startswith("axpy_f64"))
    assert axpy.rstrip().endswith("worse") and "+10." in axpy

    md = runner.invoke(main, ["compare", str(base), str(head), "--markdown"]).stdout
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert table[0].startswith("| case |") and set(table[1]) <= set("|-:")
    assert len(table) == 2 + 2 and all(line.count("|") == table[0].count("|") for line in table)
    assert "**worse**" in md and "→" in md

    data = json.loads(runner.invoke(main, ["compare", str(base), str(head), "--json"]).stdout)
    assert {c["case_id"]: c["gap"]["verdict"] for c in data["cases"]}["axpy_f64"] == "worse"

    assert runner.invoke(main, ["compare", str(base), str(head), "--fail-on-regression"]).exit_code == 1
    one = runner.invoke(main, ["compare", str(both), "--fail-on-regression"])
    assert one.exit_code == 0 and "one interleaved base/head run" in one.stdout and "better" in one.stdout

    bad = runner.invoke(main, ["compare", str(base)])
    assert bad.exit_code == 2 and "not a base/head run" in bad.stderr and "Traceback" not in bad.output


# --------------------------------------------------------------------------------------------------------
# between two runs: run-to-run variation, boards, identical PTX


def test_a_run_offset_within_the_floor_is_no_verdict_however_tight_the_samples() -> None:
    """Two runs of the same PTX whose gaps differ by 0.6 % (what fresh processes on one H200 showed for
    reduce_sum_f64): the samples call it significant, the between-run floor does not."""
    base = synth_run(0, jitter=0.0005)
    head = synth_run(1, jitter=0.0005, run_offset={"axpy_f64": 1.006})
    sharp = compare.Settings(min_effect=0.001)  # a 0.6 % change is not "negligible" to this user
    cmp = compare.compare_runs(base, head, settings=sharp)
    axpy = {c.case_id: c for c in cmp.cases}["axpy_f64"]
    assert axpy.gap.significant and axpy.gap.ratio == pytest.approx(1.006, abs=0.001)
    assert axpy.gap.verdict == compare.WITHIN_RUNS and not cmp.regressions
    assert {c.case_id: c for c in compare.compare_runs(base, head).cases}["axpy_f64"].gap.verdict \
        == compare.NEGLIGIBLE


def test_identical_ptx_beyond_the_floor_is_not_the_compiler() -> None:
    base = synth_run(0, jitter=0.0005)
    head = synth_run(1, jitter=0.0005, run_offset={"axpy_f64": 1.04})  # 4 %, PTX byte-identical
    axpy = {c.case_id: c for c in compare.compare_runs(base, head).cases}["axpy_f64"]
    assert axpy.gap.verdict == compare.SAME_PTX and axpy.warpforth.verdict == compare.SAME_PTX
    changed = synth_run(1, jitter=0.0005, wf_scale={"axpy_f64": 1.04})  # the same 4 % from a compiler change
    assert {c.case_id: c for c in compare.compare_runs(base, changed).cases}["axpy_f64"].gap.verdict == compare.WORSE


def test_another_board_is_reported_and_not_attributed() -> None:
    base = synth_run(0, jitter=0.0005)
    head = synth_run(1, jitter=0.0005, wf_scale={"axpy_f64": 1.04}, gpu_uuid="GPU-another-board")
    cmp = compare.compare_runs(base, head)
    axpy = {c.case_id: c for c in cmp.cases}["axpy_f64"]
    assert axpy.gap.verdict == compare.OTHER_BOARD and not cmp.regressions
    assert any(n.startswith("different boards of one GPU model") and "GPU-another-board" in n for n in cmp.notes)
    other_gpu = compare.compare_runs(base, synth_run(1, wf_scale=1.2, gpu_name="NVIDIA H100 80GB HBM3",
                                                     gpu_uuid="GPU-h100"))
    assert not other_gpu.regressions
    assert {c.gap.verdict for c in other_gpu.cases} <= {compare.OTHER_BOARD, compare.NO_CHANGE}


def test_the_history_sets_the_between_run_threshold(tmp_path: Path) -> None:
    """Run-level offsets of known spread: the threshold follows the series' own spread once it has enough
    stable runs, and a change of twice that spread is not called worse while one of six times is."""
    from wfbench_core.review.history import History, add_run
    from wfbench_core.record.stats import MIN_RUNS, RUN_K, relative_mad

    rng = np.random.default_rng(3)
    offsets = [float(1.0 + rng.normal(0.0, 0.01)) for _ in range(12)]  # 1 % sd between runs
    runs = [synth_run(i, jitter=0.0005, run_offset=o) for i, o in enumerate(offsets)]
    for r in runs:
        add_run(tmp_path, r)
    h = History.open(tmp_path)
    gaps = [r.case("axpy_f64").timing.gap for r in runs[:-2]]
    base, head = runs[-2], runs[-1]
    axpy = {c.case_id: c for c in compare.compare_runs(base, head, history=h).cases}["axpy_f64"]
    spread = relative_mad(gaps)
    assert axpy.gap.threshold == pytest.approx(max(0.01, RUN_K * spread), rel=1e-9)
    assert axpy.variation.startswith(f"{RUN_K:g} x the run-to-run MAD") and "10 runs" in axpy.variation
    assert axpy.gap.verdict != compare.WORSE and axpy.gap.verdict != compare.BETTER

    worse2 = synth_run(20, jitter=0.0005, wf_scale={"axpy_f64": 1.0 + 2 * spread})
    worse6 = synth_run(21, jitter=0.0005, wf_scale={"axpy_f64": 1.0 + 6 * spread})
    # against the median run so the offset of the base itself does not add to the change
    mid = synth_run(22, jitter=0.0005)
    v2 = {c.case_id: c for c in compare.compare_runs(mid, worse2, history=h).cases}["axpy_f64"].gap.verdict
    v6 = {c.case_id: c for c in compare.compare_runs(mid, worse6, history=h).cases}["axpy_f64"].gap.verdict
    assert v2 == compare.WITHIN_RUNS and v6 == compare.WORSE
    # fewer stable runs than MIN_RUNS: the floor stands in
    small = History.open(tmp_path)
    small.series = {k: attrs.evolve(s, points=s.points[:MIN_RUNS - 1]) for k, s in small.series.items()}
    few = {c.case_id: c for c in compare.compare_runs(base, head, history=small).cases}["axpy_f64"]
    assert few.gap.threshold == 0.01 and "floor" in few.variation


EXAMPLE_RUNS = sorted((Path(__file__).parents[1] / "examples" / "history" / "runs").rglob("*.json"))
FIXTURE_RUNS = sorted((Path(__file__).parent / "fixtures").glob("h200-*.json"))


def _plain_paired() -> dict[str, object]:
    from wfbench_core.record.results import load_result

    runs = {p.name: load_result(p) for p in EXAMPLE_RUNS + FIXTURE_RUNS}
    return {name: r for name, r in runs.items() if r.mode == "paired" and not compare.labels_of(r)}


def test_the_stored_same_ptx_runs_give_no_verdict_for_any_case() -> None:
    """Every stored H200 run holds byte-identical WarpForth PTX per case (checked here through the compile
    records); between any two of them, on one board or on two, no case may be called better or worse."""
    runs = _plain_paired()
    assert len(runs) >= 5
    ptx: dict[str, set[str]] = {}
    for r in runs.values():
        for c in r.cases:
            ptx.setdefault(c.id, set()).add(c.compile_wf.ptx_sha256)
    assert all(len(v) == 1 for v in ptx.values()), "the stored runs are same-PTX runs"
    boards = {r.environment.gpu_uuid for r in runs.values()}
    assert len(boards) >= 3
    names = sorted(runs)
    seen_moves = 0
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for strip in (False, True):
                ra, rb = runs[a], runs[b]
                if strip:  # without the PTX hashes only the statistics decide
                    ra, rb = (attrs.evolve(r, cases=tuple(attrs.evolve(c, compile_wf=None) for c in r.cases))
                              for r in (ra, rb))
                cmp = compare.compare_runs(ra, rb, base_name=a, head_name=b)
                for c in cmp.cases:
                    if not c.compared:
                        continue
                    assert c.gap.verdict not in (compare.WORSE, compare.BETTER), (a, b, strip, c.case_id, c.gap)
                    seen_moves += c.gap.significant
                assert not cmp.regressions
    assert seen_moves > 0, "the samples alone do call some of these changes significant"


def test_repeat_processes_set_the_threshold_when_there_is_no_history() -> None:
    """A --repeat run carries one gap per process: without a history, their spread is the between-run
    variation, so a change inside it is not called worse, while the same change with quiet processes is."""
    from wfbench_core.record.stats import RUN_K, relative_mad

    base = synth_run(0, jitter=0.0005)
    head = synth_run(1, jitter=0.0005, wf_scale={"axpy_f64": 1.03})  # +3 %, a compiler change
    g = head.case("axpy_f64").timing.gap
    noisy = (g * 0.98, g * 1.0, g * 1.015, g * 0.985, g * 1.02)  # processes 4 % apart
    spread = relative_mad(noisy)
    rep = with_case(head, "axpy_f64", timing=attrs.evolve(head.case("axpy_f64").timing, repeat_gaps=noisy))
    axpy = {c.case_id: c for c in compare.compare_runs(base, rep).cases}["axpy_f64"]
    assert axpy.gap.threshold == pytest.approx(max(0.01, RUN_K * spread)) and RUN_K * spread > 0.04
    assert "5 --repeat processes" in axpy.variation and axpy.gap.verdict == compare.WITHIN_RUNS
    quiet = (g * 0.999, g, g * 1.001)
    rep = with_case(head, "axpy_f64", timing=attrs.evolve(head.case("axpy_f64").timing, repeat_gaps=quiet))
    axpy = {c.case_id: c for c in compare.compare_runs(base, rep).cases}["axpy_f64"]
    assert axpy.gap.threshold == 0.01 and "3 --repeat processes" in axpy.variation
    assert axpy.gap.verdict == compare.WORSE
    two = with_case(head, "axpy_f64", timing=attrs.evolve(head.case("axpy_f64").timing, repeat_gaps=noisy[:2]))
    axpy = {c.case_id: c for c in compare.compare_runs(base, two).cases}["axpy_f64"]
    assert "no history given" in axpy.variation  # two processes are too few to estimate from
