"""The power study tool: its injections with the real ptxas and cuobjdump, its calibration arithmetic, and a
whole study through ``wfbench execute`` with the stand-in GPU (whose WarpForth kernels are slower by a known
amount per chain iteration)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from wfbench_core.compiling import diagnostics as dg
from wfbench_core.review import verdicts
from testkit import STORED_PTX, load_tool, use_stand_in_gpu

ROOT = Path(__file__).parents[1]
TESTS = Path(__file__).parent


def _tool():  # type: ignore[no-untyped-def]
    return load_tool("power_study")

PS = _tool()
needs_tools = pytest.mark.skipif(dg.tools_available() is not None,
                                 reason=f"CUDA binary tools missing: {dg.tools_available()}")


def test_injections_go_after_the_declarations_and_name_a_pointer() -> None:
    ptx = (STORED_PTX / "axpy_f64.canonical.ptx").read_text()
    chain = PS.inject_chain(ptx, 100)
    assert chain.count(PS.MARK) == 1 and "mov.u32 \t%ps_r1, 100;" in chain
    head, tail = chain.split(PS.MARK)
    assert "\t.reg .b64 \t%rd<21>;" in head and "ld.param.b64 \t%rd8" in tail  # declarations first, code after
    assert "ld.param.u64 \t%ps_rd0, [axpy_f64_param_1];" in chain  # the first pointer argument, not the scalar
    assert PS.inject_inert(ptx, "%laneid").count("%laneid") == 1
    with pytest.raises(ValueError):
        PS.inject_chain(ptx, 0)
    with pytest.raises(ValueError, match="no .entry"):
        PS.inject_inert("// nothing", "%tid.x")


def test_iterations_are_read_off_the_calibration_curve() -> None:
    curve = {64: 0.002, 512: 0.016, 4096: 0.128}  # linear: 1 % per 320 iterations
    assert PS.iterations_for(curve, 0.005) == 160 and PS.iterations_for(curve, 0.0025) == 80
    assert PS.iterations_for({64: 0.0001, 512: 0.0008, 4096: 0.0064}, 0.02) == 12800  # extrapolated
    assert PS.iterations_for({64: -0.0001, 512: 0.001, 4096: 0.008}, 0.002) == 1024
    with pytest.raises(ValueError, match="no calibration point"):
        PS.iterations_for({64: 0.0, 512: -0.001}, 0.005)


@needs_tools
@pytest.mark.parametrize("cid", ["axpy_f64", "reduce_sum_f64"])
def test_ptxas_keeps_every_chain_and_every_inert_change_differs(cid: str) -> None:
    facts = PS.check_sass((STORED_PTX / f"{cid}.canonical.ptx").read_text(), cid)
    assert facts["chain64"]["chain_imads"] == 64 and facts["chain512"]["chain_imads"] == 512
    assert facts["chain4096"]["chain_imads"] >= 256, "a loop of unrolled dependent multiply-adds"
    for v in range(1, len(PS.LCG)):  # the other chain variants: as long, other SASS
        f = facts[f"chain512v{v}"]
        assert f["differs"] and abs(f["instructions"] - facts["chain512"]["instructions"]) <= 8, (v, f)
    for label in PS.EQUALS:
        f = facts[label]
        assert f["differs"] and 1 <= f["instructions"] <= 6 and f["chain_imads"] == 0, (label, f)
        assert f["registers"][1] <= f["registers"][0] + 4


def test_a_whole_study_with_the_stand_in_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvcc) -> None:  # type: ignore[no-untyped-def]
    """Calibration finds the per-iteration cost the stand-in GPU applies, the sizes come out as asked, every
    2 % head is SLOWER and no inert head is SLOWER or FASTER."""
    use_stand_in_gpu(monkeypatch, FAKE_GPU_CHAIN_COST="0.00002")  # 1 % per 500 iterations
    PS.main(["run", "--out", str(tmp_path), "--budget-s", "1", "--case", "axpy_f64"])
    curve = json.loads((tmp_path / "calibration-curve.json").read_text())["curve"]["axpy_f64"]
    assert curve["4096"] == pytest.approx(0.00002 * 4096, rel=0.05)
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["iterations"]["s050a"]["axpy_f64"] == pytest.approx(250, rel=0.2)  # read off a noisy short run
    summary = json.loads((tmp_path / "table.json").read_text())
    rows = {r["kind"]: r for r in summary["rows"]}
    assert rows["2.00% slower"]["slower"] == rows["2.00% slower"]["trials"] == 1
    assert rows["2.00% slower"]["mean_change"] == pytest.approx(0.02, abs=0.002)
    inert = rows["inert (SASS differs)"]
    assert inert["trials"] == len(PS.EQUALS) == 5 and inert["false"] == 0
    assert summary["runs"] == 1 and "| 0.50% slower | 2 |" in (tmp_path / "table.md").read_text()
    assert {t["verdict"] for t in PS.trials(plan)} <= set(verdicts.VERDICTS)


@pytest.mark.gpu
def test_on_the_gpu_a_calibrated_two_percent_regression_is_slower(tmp_path: Path) -> None:
    """On a real GPU, one P0 case: the calibration slows the kernel in proportion to the chain, and the
    study's 2 % head measures about 2 % and is SLOWER (a short budget: the calibration and one study run)."""
    PS.main(["run", "--out", str(tmp_path), "--budget-s", "1", "--case", "axpy_f64"])
    curve = json.loads((tmp_path / "calibration-curve.json").read_text())["curve"]["axpy_f64"]
    assert curve["4096"] > curve["512"] > 0, curve
    rows = {r["kind"]: r for r in json.loads((tmp_path / "table.json").read_text())["rows"]}
    assert rows["2.00% slower"]["slower"] == 1
    assert 0.01 < rows["2.00% slower"]["mean_change"] < 0.03
    assert rows["inert (SASS differs)"]["not_compared"] == 0


def test_the_stored_study_is_judged_again_from_its_raw_results() -> None:
    """Every trial of the power study kept in docs/results (its verdict, change and interval) is what
    ``wfbench compare``'s rule gives on that run's stored result file: the table in docs/power-study.md is
    rendered from plan.json, and plan.json holds nothing the raw samples do not."""
    ps = _tool()
    for folder in (ROOT / "docs" / "results" / "h200-power", BOARDS):
        plan = json.loads((folder / "plan.json").read_text())
        heads = [*plan["sizes"], *plan["equals"]]
        assert len(plan["runs"]) >= 1
        for run in plan["runs"]:
            again = ps.changes_of(ps.load_study_result(folder, run["result"]), heads)
            assert _differences(json.loads(json.dumps(again)), run["changes"]) == [], run["result"]


def _differences(got: object, stored: object, where: str = "") -> list[str]:
    """Where ``got`` differs from ``stored``: verdicts, labels and keys exactly, figures to 1e-9 of their size
    (numpy and scipy releases differ in the last bits of a mean or a quantile)."""
    if isinstance(got, dict) and isinstance(stored, dict):
        if got.keys() != stored.keys():
            return [f"{where}: keys {sorted(got)} != {sorted(stored)}"]
        return [d for k in got for d in _differences(got[k], stored[k], f"{where}/{k}")]
    if isinstance(got, float) and isinstance(stored, (int, float)) and not isinstance(stored, bool):
        return [] if math.isclose(got, stored, rel_tol=1e-9, abs_tol=1e-15) else [f"{where}: {got!r} != {stored!r}"]
    return [] if got == stored else [f"{where}: {got!r} != {stored!r}"]


def test_a_stored_trial_that_differs_is_named() -> None:
    """The comparison above is not blind: a verdict, a figure beyond the tolerance and a key are each named, and
    a figure's last bits are not."""
    stored = {"s050": {"axpy_f64": {"verdict": "slower", "change": 0.005, "lo": 0.001}}}
    assert _differences(stored, stored) == []
    assert _differences({"s050": {"axpy_f64": {"verdict": "slower", "change": 0.005 * (1 + 1e-13), "lo": 0.001}}},
                        stored) == []
    assert _differences({"s050": {"axpy_f64": {"verdict": "same", "change": 0.00501, "lo": 0.001}}}, stored) == [
        "/s050/axpy_f64/verdict: 'same' != 'slower'", "/s050/axpy_f64/change: 0.00501 != 0.005"]
    assert _differences({"s050": {"axpy_f64": {"verdict": "slower", "change": 0.005}}}, stored) == [
        "/s050/axpy_f64: keys ['change', 'verdict'] != ['change', 'lo', 'verdict']"]


BOARDS = ROOT / "docs" / "results" / "h200-power-boards"


def test_the_study_on_three_boards_counts_distinct_injections_and_judges_the_targets_by_the_bounds() -> None:
    """One run on each of three H200 boards (docs/power-study.md): the boards are the runs' own, the two 0.5 %
    heads are distinct injections (24 trials of four cases), and across boards a 0.5 % regression is mostly
    AMBIGUOUS while no inert change is ever SLOWER or FASTER: the board component, not a false verdict."""
    plan = json.loads((BOARDS / "plan.json").read_text())
    results = PS.study_results(BOARDS, plan)
    assert plan["variants"] == {"s050b": 1} and len({r.environment.gpu_uuid for r in results}) == 3
    assert [r["board"] for r in plan["runs"]] == [r.environment.gpu_uuid for r in results]
    summary = PS.summarize(plan, results)
    rows = {r["kind"]: r for r in summary["rows"]}
    assert rows["0.50% slower"]["trials"] == 24 == rows["0.50% slower"]["slower"]
    assert summary["targets"]["on at least 2 boards"] and summary["targets"][
        "inert: one-sided 95% upper bound on SLOWER/FASTER <= 5%"]
    cross = summary["cross_board"]
    assert cross["pairs"] == 6
    c = {r["kind"]: r for r in cross["rows"]}
    inert = c["inert (SASS differs)"]
    assert inert["slower"] == inert["faster"] == 0 and inert["trials"] == 6 * 4 * len(plan["equals"])
    assert not cross["targets"]["0.5% across two boards SLOWER: one-sided 95% lower bound >= 90%"]
    assert c["0.50% slower"]["slower"] < c["0.50% slower"]["trials"] // 2
    text = (ROOT / "docs" / "power-study.md").read_text()
    assert "on 3 board(s)" in text and "cannot be met by one\nrun on each of two boards" in text


def test_two_heads_of_one_size_are_distinct_injections_and_a_stored_pair_counts_once() -> None:
    """s050a and s050b were the same bytes: 24 trials that were 12. Now every head is its own injection; a plan
    from before the variants counts byte-identical heads of one run and case once."""
    ptx = (STORED_PTX / "axpy_f64.canonical.ptx").read_text()
    assert PS.inject_chain(ptx, 160, PS.VARIANTS.get("s050a", 0)) != PS.inject_chain(ptx, 160, PS.VARIANTS["s050b"])
    plan = json.loads((ROOT / "docs" / "results" / "h200-power" / "plan.json").read_text())
    assert "variants" not in plan and plan["iterations"]["s050a"] == plan["iterations"]["s050b"]
    rows = {r["kind"]: r for r in PS.summarize(plan)["rows"]}
    assert rows["0.50% slower"]["trials"] == 12 == rows["1.00% slower"]["trials"]
    assert {t["head"] for t in PS.trials(plan) if t["nominal"] == 0.005} == {"s050a"}
    fixed = {**plan, "variants": {"s050b": 1}}
    assert {r["kind"]: r for r in PS.summarize(fixed)["rows"]}["0.50% slower"]["trials"] == 24


def test_every_rate_has_its_one_sided_95_percent_bound_and_the_targets_use_them() -> None:
    """12 SLOWER in 12 trials: at least 77.9 % at 95 % confidence, not 95 %; it takes 59 in 59. No false
    verdict in 60 inert trials: at most 4.9 %."""
    assert PS.bound(12, 12) == pytest.approx(0.779, abs=5e-4) and PS.bound(59, 59) >= 0.95 > PS.bound(58, 58)
    assert PS.bound(0, 60, upper=True) == pytest.approx(0.0487, abs=5e-4) and PS.bound(0, 0) is None
    assert PS.bound(0, 5) == 0.0 and PS.bound(5, 5, upper=True) == 1.0
    plan = json.loads((ROOT / "docs" / "results" / "h200-power" / "plan.json").read_text())
    summary = PS.summarize(plan)
    assert summary["targets"] == {"0.5% SLOWER: one-sided 95% lower bound >= 95%": False,
                                  "inert: one-sided 95% upper bound on SLOWER/FASTER <= 5%": True,
                                  "on at least 2 boards": False}
    assert "| 0.50% slower | 12 | 12 | 0 | 0 | 0 | 100.0% (>= 77.9%) | - |" in PS.render(summary)


def test_the_stored_study_says_its_protocol_was_not_the_default() -> None:
    text = (ROOT / "docs" / "power-study.md").read_text()
    assert "the default protocol but max_case_s 400" in text and "on 1 board(s)" in text


STUDY = ROOT / "docs" / "results" / "h200-power"


def _stored_study_on_two_boards():  # type: ignore[no-untyped-def]
    """The stored study's plan and results, its second run re-labelled as timed on another board."""
    import attrs

    plan = json.loads((STUDY / "plan.json").read_text())
    results = PS.study_results(STUDY, plan)
    r1 = results[1]
    results[1] = attrs.evolve(r1, environment=attrs.evolve(r1.environment, gpu_uuid="GPU-relabelled-board"))
    return plan, results


def test_across_boards_the_base_of_one_board_meets_each_head_of_the_other_by_compares_rule(tmp_path: Path) -> None:
    """The stored study with one run re-labelled as another board: every ordered pair of runs on different boards
    is a source of trials (base of one, each distinct head of the other), each judged as ``wfbench compare BASE
    HEAD --json`` judges the two labels taken as runs of their own, with the between-board component in the
    interval; rates carry their bounds and the target is judged by the bound."""
    from click.testing import CliRunner

    from wfbench_core.cli import main
    from wfbench_core.record.results import write_result
    from wfbench_core.review.base_head import one_compiler
    from wfbench_core.review.compare import compare_runs

    plan, results = _stored_study_on_two_boards()
    assert len({r.environment.gpu_uuid for r in results}) == 2
    summary = PS.summarize(plan, results)
    cross = summary["cross_board"]
    assert summary["boards"] == 2 and summary["targets"]["on at least 2 boards"] and cross["pairs"] == 4
    cases = {c.id for c in results[0].cases if c.compiler_label == "base"}
    rows = {r["kind"]: r for r in cross["rows"]}
    # s050a and s050b of this plan are the same bytes: one trial per ordered pair and case
    assert rows["0.50% slower"]["trials"] == 4 * len(cases) == rows["2.00% slower"]["trials"]
    assert rows["inert (SASS differs)"]["trials"] == 4 * len(cases) * len(plan["equals"])
    for r in cross["rows"]:
        assert r["slower_lo95"] == PS.bound(r["slower"], r["trials"])
        assert r["false_hi95"] == PS.bound(r["slower"] + r["faster"], r["trials"], upper=True)
    half = rows["0.50% slower"]
    assert cross["targets"]["0.5% across two boards SLOWER: one-sided 95% lower bound >= 90%"] == \
        (half["slower_lo95"] >= 0.90)
    assert rows["2.00% slower"]["slower"] == rows["2.00% slower"]["trials"]  # a 2 % regression is seen across boards
    # each trial is what the command says about the two labels as result files of their own
    base, head = one_compiler(results[0], "base"), one_compiler(results[1], "s200")
    write_result(base, tmp_path / "base.json")
    write_result(head, tmp_path / "head.json")
    out = CliRunner().invoke(main, ["compare", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--json"])
    said = {c["case_id"]: c["verdict"] for c in json.loads(out.output)["cases"]}
    got = [t for t in load_tool("power_verdicts").cross_trials(plan, PS.across_boards(results, ["s200"]))
           if (t["base_run"], t["head_run"]) == (0, 1)]
    assert len(got) == len(cases)
    for t in got:
        v = said[t["case"]]
        assert (v["verdict"], v["change"], v["lo"], v["hi"]) == (t["verdict"], t["change"], t["lo"], t["hi"])
        assert "other board" in v["qualifiers"] and "other board" in t["label"]
    # the board component widens the interval: the same two runs said to be on one board read narrower
    same = compare_runs(base, attrs_board(head, results[0].environment.gpu_uuid))
    for t in got:
        v = next(c.verdict for c in same.cases if c.case_id == t["case"])
        assert t["hi"] - t["lo"] > v.hi - v.lo
    text = PS.render(summary)
    assert "Across boards: the base of a run on one board against each head of a run on another, 4 ordered" in text
    assert "| 0.50% slower | 16 |" in text.split("Across boards")[1]


def attrs_board(run, uuid: str):  # type: ignore[no-untyped-def]
    import attrs

    return attrs.evolve(run, environment=attrs.evolve(run.environment, gpu_uuid=uuid))


def test_one_board_or_an_unrecorded_one_gives_no_trials_across_boards() -> None:
    plan = json.loads((STUDY / "plan.json").read_text())
    results = PS.study_results(STUDY, plan)
    summary = PS.summarize(plan, results)
    assert summary["cross_board"] is None and "Across boards" not in PS.render(summary)
    assert PS.across_boards([results[0], attrs_board(results[1], "")], ["s200"]) == []
