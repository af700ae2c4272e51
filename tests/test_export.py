"""``wfbench export --format github-action-benchmark``, checked against the action's field rules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from synth_runs import REAL_AA, REAL_RUN, real_run, synth_run, with_case
from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError
from wfbench_core.review.export import github_action_benchmark
from wfbench_core.record.results import ERROR, FAILED, load_result
from wfbench_core.stats import case_set_id


def assert_action_fields(entries: object) -> None:
    """The ``customSmallerIsBetter`` input of benchmark-action/github-action-benchmark (src/extract.ts,
    ``BenchmarkResult``): a JSON array of objects with ``name: string``, ``value: number``, ``unit: string`` and
    optional ``range: string`` and ``extra: string``. Names key the charts, so they must be unique."""
    assert isinstance(entries, list) and entries
    names = []
    for e in entries:
        assert isinstance(e, dict)
        assert set(e) <= {"name", "unit", "value", "range", "extra"}
        assert isinstance(e["name"], str) and e["name"].strip()
        assert isinstance(e["unit"], str) and e["unit"].strip()
        assert isinstance(e["value"], (int, float)) and not isinstance(e["value"], bool)
        assert math.isfinite(e["value"])
        for optional in ("range", "extra"):
            if optional in e:
                assert isinstance(e[optional], str)
        names.append(e["name"])
    assert len(names) == len(set(names))


def through_json(entries: list) -> list:  # type: ignore[type-arg]
    return json.loads(json.dumps(entries, allow_nan=False))


def test_real_run_exports_three_metrics_per_case_and_the_suite_geomean() -> None:
    run = real_run()
    entries = through_json(github_action_benchmark(run))
    assert_action_fields(entries)
    by_name = {e["name"]: e for e in entries}
    expected = {f"{c.id}/v{c.version}/{m}" for c in run.cases for m in ("warpforth", "cuda", "gap")}
    set_id = case_set_id((c.id, c.version) for c in run.cases if c.priority == "P0")
    suite_name = f"suite/v{run.suite_version}/geomean-gap/P0/set-{set_id}"
    assert set(by_name) == expected | {suite_name}
    for c in run.cases:
        stem = f"{c.id}/v{c.version}"
        assert by_name[f"{stem}/warpforth"]["value"] == c.timing.warpforth.median_us
        assert by_name[f"{stem}/cuda"]["value"] == c.timing.cuda.median_us
        assert by_name[f"{stem}/gap"]["value"] == c.timing.gap
        assert by_name[f"{stem}/warpforth"]["unit"] == "us" and by_name[f"{stem}/gap"]["unit"] == "x CUDA"
        assert by_name[f"{stem}/gap"]["range"].startswith("± ")
        extra = by_name[f"{stem}/gap"]["extra"]
        assert "NVIDIA H200" in extra and c.cuda_source_sha256[:16] in extra and c.fingerprint[:16] in extra
        assert run.cuda_compiler.version in extra
    gaps = [c.timing.gap for c in run.cases if c.priority == "P0"]
    suite = by_name[suite_name]
    assert suite["value"] == pytest.approx(math.exp(sum(math.log(g) for g in gaps) / len(gaps)), rel=1e-12)
    assert suite["unit"] == "x CUDA"
    assert f"case set {set_id} (2 P0, all stable): axpy_f64/v1, scale_i64/v1" in suite["extra"]


def test_only_stable_correct_cases_are_exported_and_the_geomean_only_over_the_whole_set() -> None:
    run = synth_run(0, jitter={"scale_i64": 0.08})
    assert run.case("scale_i64").status == "unstable"
    names = {e["name"] for e in github_action_benchmark(run)}
    assert not any(n.startswith("scale_i64/") for n in names)
    assert not any(n.startswith("suite/") for n in names), "one P0 case unstable: no geomean at all"


@pytest.mark.parametrize("status", [FAILED, ERROR])
def test_a_failed_p0_case_is_never_published_as_a_smaller_geomean(status: str) -> None:
    """The failure that issue showed: one P0 case FAILED, and the geomean over the rest published under the
    old name as an improvement. Now the run is not exported at all, and no subset ever takes the set's name."""
    full = github_action_benchmark(synth_run(0))
    (full_suite,) = [e["name"] for e in full if e["name"].startswith("suite/")]
    failed = with_case(synth_run(1), "axpy_f64", status=status, timing=None, message="Y: 3 of 4096 differ")
    with pytest.raises(WfbenchError, match=rf"^r.json: 1 case did not pass \(axpy_f64 {status.upper()}: Y: 3 of "
                                           rf"4096 differ\); a failed run is never published; nothing exported$"):
        github_action_benchmark(failed, where="r.json")
    # the cases that are left, as a run of their own (``--case scale_i64``), are another series
    subset = attrs.evolve(synth_run(1), cases=synth_run(1).cases[1:])
    (subset_suite,) = [e["name"] for e in github_action_benchmark(subset) if e["name"].startswith("suite/")]
    assert subset_suite != full_suite and subset_suite.startswith("suite/v1/geomean-gap/P0/set-")
    # an incomplete run publishes nothing either
    with pytest.raises(WfbenchError, match="incomplete run"):
        github_action_benchmark(attrs.evolve(synth_run(2), complete=False))


def test_a_non_default_protocol_never_takes_the_canonical_names() -> None:
    canonical = {e["name"] for e in github_action_benchmark(synth_run(0))}
    quick = synth_run(1)
    quick = attrs.evolve(quick, protocol=attrs.evolve(quick.protocol, samples=5))
    names = {e["name"] for e in github_action_benchmark(quick)}
    assert not names & canonical
    assert all(n.endswith("@samples=5") for n in names) and "axpy_f64/v1/gap@samples=5" in names


def test_nothing_stable_is_an_error() -> None:
    run = synth_run(0, jitter=0.08)
    assert {c.status for c in run.cases} == {"unstable"}
    with pytest.raises(WfbenchError, match="no stable, correct case"):
        github_action_benchmark(run, where="r.json")


def test_aa_runs_and_unlabelled_base_head_runs_are_refused() -> None:
    with pytest.raises(WfbenchError, match="A/A"):
        github_action_benchmark(load_result(REAL_AA))
    run = real_run()
    labelled = attrs.evolve(run, cases=tuple(attrs.evolve(c, compiler_label=label)
                                             for c in run.cases for label in ("base", "head")),
                            compilers={"base": run.warpforthc, "head": run.warpforthc})
    with pytest.raises(WfbenchError, match="--label"):
        github_action_benchmark(labelled)
    head = github_action_benchmark(labelled, label="head")
    assert_action_fields(head)
    assert len(head) == 3 * len(run.cases) + 1


def test_cli_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    res = CliRunner().invoke(main, ["export", "--format", "github-action-benchmark", str(REAL_RUN), "-o", str(out)])
    assert res.exit_code == 0, res.output
    entries = json.loads(out.read_text(encoding="utf-8"))
    assert_action_fields(entries)
    assert entries == through_json(github_action_benchmark(load_result(REAL_RUN)))
    # the fixture was taken under an older protocol: its names say so, and never take the canonical ones
    assert all(e["name"].endswith("@samples=30,placements=1,rotation=1,target_halfwidth=0,case_budget_s=0")
               for e in entries)
    bad = CliRunner().invoke(main, ["export", str(REAL_AA), "-o", str(tmp_path / "aa.json")])
    assert bad.exit_code == 2 and "A/A" in bad.stderr and not (tmp_path / "aa.json").exists()


def test_the_field_rules_catch_a_bad_entry() -> None:
    """The validator above is what the other tests rely on: it must reject what the action would."""
    good = {"name": "a/v1/gap", "unit": "x CUDA", "value": 1.0, "range": "± 0.1", "extra": "gpu"}
    assert_action_fields([good])
    for bad in ({**good, "value": "1.0"}, {**good, "range": 0.1}, {**good, "extra": None}, {**good, "name": ""},
                {**good, "value": float("nan")}, {k: v for k, v in good.items() if k != "unit"}):
        with pytest.raises((AssertionError, KeyError)):
            assert_action_fields([bad])
    with pytest.raises(AssertionError):
        assert_action_fields([good, good])


def test_a_case_left_out_of_trends_is_not_published(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """docs/results/h200-suite.json: polynomial_f64 throttled while timed and is left out of trends (the dashboard's
    badge, history list and check say "throttled"), so export publishes none of its figures either."""
    from pathlib import Path

    from click.testing import CliRunner

    from wfbench_core.cli import main

    suite = Path(__file__).parents[1] / "docs" / "results" / "h200-suite.json"
    res = CliRunner().invoke(main, ["export", str(suite)])
    assert res.exit_code == 0, res.output
    names = [e["name"] for e in json.loads(res.stdout)]
    assert not [n for n in names if n.startswith("polynomial_f64/")], names
    assert any(n.startswith("transpose_f64/") for n in names), names
