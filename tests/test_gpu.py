"""The real timer on a real GPU (skipped without one): correctness gates, paired timing, A/A, base/head.

Bundles come from the WarpForth PTX kept in tests/fixtures/ptx (made by the real warpforthc), so these
tests need a GPU but no warpforthc.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from wfbench_core import hookimpl
from wfbench_core.run.executor import execute
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import FAILED, OK, UNSTABLE, TimingProtocol, load_result

pytestmark = pytest.mark.gpu

QUICK = TimingProtocol(warmup_s=0.3, min_sample_ms=10.0, samples=10)


def test_paired_run_checks_then_times(prebuilt_bundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = execute(prebuilt_bundle(), registry=Registry.load(), request=ExecuteRequest(protocol=QUICK))
    assert result.environment.gpu_uuid and result.environment.copy_gbps and result.environment.copy_gbps > 100
    for case in result.cases:
        assert case.status in (OK, UNSTABLE), case.message
        whats = {(c.config, c.what) for c in case.checks}
        assert {("check", "reference"), ("check", "idempotent"), ("check", "cross"),
                ("canonical", "reference"), ("canonical", "after-timing")} <= whats
        assert all(c.passed for c in case.checks)
        t = case.timing
        assert t is not None and t.warpforth.n == t.cuda.n == QUICK.samples
        assert all(t.launches(s) * s.median_us >= QUICK.min_sample_ms * 1000 * 0.5 for s in (t.warpforth, t.cuda))
        assert 0.5 < t.gap < 2.0
        assert t.pair_ratio_noise is not None and 0 <= t.pair_ratio_noise < 0.03
        assert case.attrs_wf is not None and case.attrs_wf.registers > 0
        assert case.compile_cuda is not None and "-fmad=false" in case.compile_cuda.command


def test_aa_run_is_near_parity(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    result = execute(prebuilt_bundle(case_ids=("axpy_f64",)), registry=Registry.load(),
                     request=ExecuteRequest(protocol=QUICK, mode="aa"))
    (case,) = result.cases
    assert case.mode == "aa" and case.timing is not None
    assert abs(case.timing.gap - 1.0) < 0.02


def test_base_head_bundle_shares_cuda_samples(prebuilt_bundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    top = tmp_path / "bh"
    for label in ("base", "head"):
        prebuilt_bundle(case_ids=("scale_i64",), out=top / label)
    import json

    manifest = json.loads((top / "base" / "manifest.json").read_text())
    manifest.update(cases=[], labels=["base", "head"])
    (top / "manifest.json").write_text(json.dumps(manifest))
    result = execute(top, registry=Registry.load(), request=ExecuteRequest(protocol=QUICK))
    base, head = result.case("scale_i64", "base"), result.case("scale_i64", "head")
    assert base.timing.cuda == head.timing.cuda  # same CUDA samples
    # the same PTX twice is one kernel: checked and timed once, the head result carries its samples
    assert set(base.timing.order) == {"wf:base", "cuda"} and head.timing.timed_with == "base"
    assert head.timing.warpforth == base.timing.warpforth and head.status == base.status == "ok"


class WrongReference:
    """axpy with a reference that is off by one ulp-ish relative error: both sides must FAIL, untimed."""

    @hookimpl
    def wfbench_register_cases(self, register):  # type: ignore[no-untyped-def]
        from wfbench_cases.axpy_f64 import CASE

        register(attrs.evolve(CASE, reference=lambda inp, s: {"Z": (inp["A"] * inp["X"] + inp["Y"]) * (1 + 1e-9)}))


def test_mismatch_fails_with_error_size_and_no_timing(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    reg = Registry.load([WrongReference(), "wfbench_core.default_timer"], autoload=False)
    result = execute(prebuilt_bundle(case_ids=("axpy_f64",)), registry=reg, request=ExecuteRequest(protocol=QUICK))
    (case,) = result.cases
    assert case.status == FAILED and case.timing is None
    assert "differs from the numpy reference" in case.message and "max rel err 1e-09" in case.message
    assert "elements outside tolerance" in case.message


WRONG_MODULE = """
    import attrs
    from wfbench_core import hookimpl
    from wfbench_cases.axpy_f64 import CASE

    @hookimpl
    def wfbench_register_cases(register):
        register(attrs.evolve(CASE, reference=lambda inp, s: {"Z": inp["A"] * inp["X"] - inp["Y"]}))
"""


def test_cli_mismatch_exit_code(prebuilt_bundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.cli import main

    (tmp_path / "wrong_axpy.py").write_text(textwrap.dedent(WRONG_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "r.json"
    env = {"WFBENCH_DISABLE_PLUGIN_AUTOLOAD": "1", "WFBENCH_PLUGINS": "wrong_axpy,wfbench_core.default_timer"}
    r = CliRunner().invoke(main, ["execute", str(prebuilt_bundle(case_ids=("axpy_f64",))), "-o", str(out),
                                  "--samples", "5"], env=env)
    assert r.exit_code == 1
    assert "FAILED" in r.output and "wfbench: error: 1 case(s) failed" in r.stderr
    stored = load_result(out)
    assert stored.cases[0].status == FAILED and stored.cases[0].timing is None
    assert max(c.max_abs_err for c in stored.cases[0].checks) > 1.0


def test_a_case_that_names_its_timing_mode_is_timed_in_it(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    """attention_f32_head64 (the demo's one-head launch) names graph mode: a run in events mode times it as a
    graph, records so, and still times the other case in the run's mode."""
    result = execute(prebuilt_bundle(case_ids=("attention_f32_head64", "axpy_f64")), registry=Registry.load(),
                     request=ExecuteRequest(protocol=QUICK))
    head, axpy = result.case("attention_f32_head64"), result.case("axpy_f64")
    assert head.status in (OK, UNSTABLE), head.message
    assert head.timing is not None and head.timing.timing_mode == "graph"
    assert axpy.timing is not None and axpy.timing.timing_mode == "events"
