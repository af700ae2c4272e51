"""The pytest plugin, driven through pytest's own ``pytester``: a real inner pytest run per test.

Where no GPU exists, the only stand-in is at the GPU edge: the inner conftest registers a deterministic
timer through wfbench's ``wfbench_make_timer`` hook (``tryfirst``, so it wins over the CUDA-event timer).
Everything else is real: the plugin is loaded from its ``pytest11`` entry point, bundles are real bundles
of WarpForth PTX made earlier by the real ``warpforthc`` (``tests/fixtures/ptx``, through
``wfbench_core.testing.bundle_from_ptx``), the local transport executes them through the real executor,
which compiles the CUDA side with the real nvcc (or NVRTC), and the JSON is the real result schema. One
test builds its bundle with the real ``warpforthc`` instead (skipped where it is not installed), and one
runs the real timer on a real GPU (skipped without one).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testkit import stored_ptx_bundle  # tests/testkit.py
from wfbench_core.discover.registry import Registry
from wfbench_core.record.results import FAILED, OK, load_result
from wfbench_core.gpu.sampling import STOP_BUDGET, STOP_SAMPLES, STOP_TARGET

pytest_plugins = ["pytester"]

WF_US, CUDA_US = 3.0, 2.0  # what the fake timer reports per launch, WarpForth and CUDA

FAKE_GPU_CONFTEST = f"""
    import json
    import os

    from wfbench_core import hookimpl
    from wfbench_core.errors import WfbenchError
    from wfbench_core.record.results import Check, Costs, Environment, KernelAttrs, Sampled
    from wfbench_core.contracts import Measurement
    from wfbench_transports.local import LocalTransport

    COUNTS = {{"constructed": 0, "closed": 0, "measured": []}}
    FAIL_CASES = set(filter(None, os.environ.get("FAKE_FAIL_CASES", "").split(",")))


    class FakeTimer:
        \"\"\"Deterministic measurements: WarpForth {WF_US} us, CUDA {CUDA_US} us per launch, no noise.\"\"\"

        def __init__(self, protocol):
            self.protocol = protocol

        def environment(self):
            return Environment(gpu_name="Fake GPU", gpu_uuid="GPU-fake", compute_capability="9.0")

        def copy_gbps(self):
            return None

        def measure(self, case, sides, *, reference_label):
            COUNTS["measured"].append(case.id)
            passed = case.id not in FAIL_CASES
            check = Check("check", "wf", "reference", "out", passed, 0.0 if passed else 1.0, 0.0,
                          0 if passed else 7, 100)
            n = self.protocol.samples
            return Measurement(
                passed=passed, message="" if passed else "7 of 100 elements differ from the reference",
                checks=(check,), kernel_attrs={{s.label: KernelAttrs(16, 0, 0, 1024) for s in sides}},
                costs=Costs(), sampled=Sampled(
                    samples_us={{s.label: ({WF_US} if s.label.startswith("wf") else {CUDA_US},) * n for s in sides}},
                    order=tuple(sides[i % len(sides)].label for i in range(n)), launches_per_sample=1))


    class CountingLocal(LocalTransport):
        \"\"\"The local transport, counting how often a session constructs and closes it.\"\"\"

        def __init__(self, **options):
            COUNTS["constructed"] += 1
            super().__init__(**options)

        def close(self):
            COUNTS["closed"] += 1
            super().close()


    class LostConnection(CountingLocal):
        def execute(self, bundle, request, **kwargs):
            raise WfbenchError("ssh: connection to the GPU host lost")


    @hookimpl(tryfirst=True)
    def wfbench_make_timer(protocol):
        return FakeTimer(protocol)


    @hookimpl
    def wfbench_register_transports(register):
        register("counting", CountingLocal)
        register("lost", LostConnection)


    def pytest_unconfigure(config):
        with open(os.environ["FAKE_COUNTS"], "w") as f:
            json.dump(COUNTS, f)
"""

TESTS = """
    import pytest


    def test_not_a_benchmark():
        pass


    def test_correctness(wfbench_gpu):
        assert wfbench_gpu.check("scale_i64").status == "ok"


    @pytest.mark.wfbench
    def test_benchmark(wfbench_bench, wfbench_case):
        result = wfbench_bench(wfbench_case)
        assert result.timing is not None
"""


@pytest.fixture(autouse=True)
def plain_inner_sessions(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner sessions are a user's plain ones. They run their tests in file order (a test that stops the
    session comes after one that passes): a reordering plugin the outer session loaded (pytest-randomly) is kept
    out of them. They are no xdist worker, which the outer session's process may be: pytest-benchmark and wfbench
    read a worker's PYTEST_XDIST_WORKER. Set after pytester, which clears PYTEST_ADDOPTS when it starts."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", " ".join([os.environ.get("PYTEST_ADDOPTS", ""), "-p", "no:randomly"]).strip())


@pytest.fixture
def counts(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    path = pytester.path / "counts.json"
    monkeypatch.setenv("FAKE_COUNTS", str(path))
    monkeypatch.delenv("FAKE_FAIL_CASES", raising=False)
    pytester.makeconftest(FAKE_GPU_CONFTEST)
    return lambda: json.loads(path.read_text())


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of the built-in scale_i64 and axpy_f64, from PTX the real warpforthc made."""
    out = tmp_path_factory.mktemp("plugin") / "bundle"
    return stored_ptx_bundle(("scale_i64", "axpy_f64"), out)


@pytest.fixture(scope="module")
def cuda_side() -> None:
    """The executor compiles the CUDA side on the 'GPU host' (here): nvcc or NVRTC must exist."""
    from wfbench_core.compiling.compile import cuda_compiler
    from wfbench_core.errors import WfbenchError

    try:
        cuda_compiler("auto")
    except WfbenchError as exc:
        pytest.skip(str(exc))


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k in ("passed", "failed", "skipped", "errors")}


def test_benchmarks_are_skipped_by_default_and_nothing_is_rented(pytester: pytest.Pytester, counts, bundle) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_inner="""
        import pytest

        def test_plain():
            pass

        @pytest.mark.wfbench
        def test_benchmark(wfbench_bench):
            wfbench_bench("scale_i64")
    """)
    out = pytester.path / "out.json"
    result = pytester.runpytest("-rs", "--wfbench-transport", "counting", "--wfbench-bundle", str(bundle),
                                "--wfbench-json", str(out))
    assert _outcomes(result) == {"passed": 1, "skipped": 1}
    result.stdout.fnmatch_lines(["*wfbench: run with --wfbench-run*"])
    assert counts()["constructed"] == 0
    assert not out.exists()


def test_marker_is_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.wfbench
        def test_benchmark():
            pass
    """)
    result = pytester.runpytest("--strict-markers", "--wfbench-run")
    assert _outcomes(result) == {"passed": 1}


def test_run_benchmarks_one_session_one_json(pytester: pytest.Pytester, counts, bundle, cuda_side) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_inner=TESTS)
    out = pytester.path / "results" / "bench.json"
    result = pytester.runpytest("-v", "--wfbench-run", "--wfbench-transport", "counting",
                                "--wfbench-bundle", str(bundle), "--wfbench-json", str(out),
                                "--wfbench-case", "scale_i64", "--wfbench-case", "axpy_f64",
                                "--wfbench-samples", "7")
    assert _outcomes(result) == {"passed": 4}, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_benchmark?scale_i64? PASSED*", "*test_benchmark?axpy_f64? PASSED*",
                                 "*wfbench result: *bench.json"])
    c = counts()
    assert c["constructed"] == 1 and c["closed"] == 1  # correctness and benchmarks shared one transport
    assert c["measured"] == ["scale_i64", "scale_i64", "axpy_f64"]  # the check, then the two benchmarks

    run = load_result(out)  # the real schema, read back through the one converter
    assert [case.id for case in run.cases] == ["scale_i64", "axpy_f64"]  # the check is not a benchmark
    assert run.environment.gpu_name == "Fake GPU"
    for case in run.cases:
        assert case.status == OK and case.timing is not None
        assert case.timing.warpforth.n == case.timing.cuda.n == 7
        assert case.timing.gap == pytest.approx(WF_US / CUDA_US)
        assert case.compile_cuda is not None and case.compile_cuda.ptx_target  # CUDA really compiled
    assert run.warpforthc.version == "prebuilt"


def test_pytest_benchmark_tests_run_beside_wfbench_ones(pytester: pytest.Pytester, counts, bundle) -> None:  # type: ignore[no-untyped-def]
    """With pytest-benchmark installed too, its own marked test runs and is timed (wfbench claims neither its
    marker nor its options) and wfbench's marked test runs beside it; both pass."""
    pytest.importorskip("pytest_benchmark")
    pytester.makepyfile(test_both="""
import pytest

@pytest.mark.benchmark(group="sums")
def test_theirs(benchmark):
    assert benchmark(sum, range(100)) == 4950

@pytest.mark.wfbench
def test_ours(wfbench_bench):
    wfbench_bench("scale_i64")
""")
    out = pytester.path / "bench.json"
    result = pytester.runpytest("-v", "--wfbench-run", "--wfbench-transport",
                                "counting", "--wfbench-bundle", str(bundle), "--wfbench-json", str(out),
                                "--benchmark-disable-gc", "--strict-markers")
    result.stdout.fnmatch_lines(["*test_theirs PASSED*", "*test_ours PASSED*", "*benchmark 'sums'*"])
    assert _outcomes(result) == {"passed": 2} and "Benchmarks are automatically disabled" not in result.stdout.str()
    assert [case.id for case in load_result(out).cases] == ["scale_i64"]
    # without --wfbench-run, wfbench skips only its own test
    result = pytester.runpytest("-v", "--wfbench-transport", "counting",
                                "--wfbench-bundle", str(bundle))
    result.stdout.fnmatch_lines(["*test_theirs PASSED*", "*test_ours SKIPPED*"])


def test_failed_correctness_fails_the_test_in_one_line_and_is_recorded(  # type: ignore[no-untyped-def]
        pytester: pytest.Pytester, counts, bundle, cuda_side, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_FAIL_CASES", "axpy_f64")
    pytester.makepyfile(test_inner=TESTS)
    out = pytester.path / "bench.json"
    result = pytester.runpytest("--wfbench-run", "--wfbench-transport", "counting", "--wfbench-bundle",
                                str(bundle), "--wfbench-json", str(out), "--wfbench-case", "scale_i64",
                                "--wfbench-case", "axpy_f64", "--wfbench-samples", "5")
    assert _outcomes(result) == {"passed": 3, "failed": 1}
    result.stdout.fnmatch_lines(["*axpy_f64: FAILED: 7 of 100 elements differ from the reference*"])
    assert "pytest_plugin.py" not in result.stdout.str()  # pytrace=False: no plugin traceback
    statuses = {case.id: case.status for case in load_result(out).cases}
    assert statuses == {"scale_i64": OK, "axpy_f64": FAILED}


def test_case_missing_from_bundle_fails_that_test_only(pytester: pytest.Pytester, counts, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                      cuda_side) -> None:
    only_scale = tmp_path / "only-scale"
    stored_ptx_bundle(("scale_i64",), only_scale)
    pytester.makepyfile(test_inner="""
        def test_a(wfbench_bench):
            wfbench_bench("axpy_f64")

        def test_b(wfbench_bench):
            wfbench_bench("scale_i64")
    """)
    result = pytester.runpytest("--wfbench-transport", "counting", "--wfbench-bundle", str(only_scale),
                                "--wfbench-samples", "5")
    assert _outcomes(result) == {"passed": 1, "failed": 1}
    result.stdout.fnmatch_lines(["*case axpy_f64 is not in bundle*; it holds scale_i64*"])
    assert "During handling" not in result.stdout.str() and "Traceback" not in result.stdout.str()
    assert counts()["measured"] == ["scale_i64"]


def test_transport_error_is_not_retried(pytester: pytest.Pytester, counts, bundle) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_inner="""
        def test_a(wfbench_bench):
            wfbench_bench("scale_i64")

        def test_b(wfbench_bench):
            wfbench_bench("axpy_f64")
    """)
    result = pytester.runpytest("--wfbench-transport", "lost", "--wfbench-bundle", str(bundle))
    assert _outcomes(result) == {"failed": 2}
    result.stdout.fnmatch_lines(["*ssh: connection to the GPU host lost*",
                                 "*wfbench GPU session unusable after an earlier error: ssh: connection*"])
    assert "During handling" not in result.stdout.str()
    c = counts()
    assert c["constructed"] == 1 and c["closed"] == 1


def test_no_gpu_skips_with_the_reason(pytester: pytest.Pytester, bundle) -> None:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("this machine has a GPU: test_real_gpu_through_the_plugin covers it")
    pytester.makepyfile("""
        def test_a(wfbench_bench):
            wfbench_bench("scale_i64")
    """)
    result = pytester.runpytest("-rs", "--wfbench-bundle", str(bundle))  # real timer, local transport
    assert _outcomes(result) == {"skipped": 1}
    result.stdout.fnmatch_lines(["*no GPU: *"])


@pytest.mark.parametrize(("args", "message"), [
    (["--wfbench-transport-opt", "gpu_name"], "*--wfbench-transport-opt expects KEY=VALUE, got 'gpu_name'*"),
    (["--wfbench-bundle", "."], "*--wfbench-bundle .: not a wfbench bundle (no manifest.json)*"),
    (["--wfbench-samples", "2"], "*--wfbench-samples must be between 5 and 10000*"),
])
def test_bad_options_are_one_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_a():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_benchmarks_under_xdist_are_one_usage_error(pytester: pytest.Pytester, bundle: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Every xdist worker would time on the one GPU at once and write its own result: ``--wfbench-run`` under
    ``-n N`` (or in a process that is an xdist worker) stops before any test; without it, ``-n N`` runs as usual."""
    pytest.importorskip("xdist")
    pytester.makepyfile("""
        import pytest

        def test_plain():
            pass

        @pytest.mark.wfbench
        def test_bench(wfbench_bench):
            wfbench_bench("scale_i64")
    """)
    refused = "*--wfbench-run times kernels on one GPU, and under pytest-xdist every worker would time at once*"
    result = pytester.runpytest("-n", "2", "--wfbench-run", "--wfbench-bundle", str(bundle))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([refused + "(-p no:xdist, or -n 0)"])
    with monkeypatch.context() as m:
        m.setenv("PYTEST_XDIST_WORKER", "gw0")
        result = pytester.runpytest("--wfbench-run", "--wfbench-bundle", str(bundle))
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([refused])
    result = pytester.runpytest("-n", "2", "--wfbench-bundle", str(bundle))
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=1)


def test_unknown_transport_fails_tests_that_use_the_gpu(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_plain():
            pass

        def test_gpu(wfbench_gpu):
            pass
    """)
    result = pytester.runpytest("--wfbench-transport", "nosuch")
    assert _outcomes(result) == {"passed": 1, "errors": 1}
    result.stdout.fnmatch_lines(["*wfbench: unknown transport 'nosuch'; known transports: *local*"])
    assert "During handling" not in result.stdout.str()


def test_unknown_case_is_one_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_case(wfbench_case):
            pass
    """)
    result = pytester.runpytest("--wfbench-case", "nosuch")
    assert _outcomes(result) == {"errors": 1}
    result.stdout.fnmatch_lines(["wfbench: unknown case 'nosuch'; known cases: *scale_i64*"])
    assert "During handling" not in result.stdout.str() and "Traceback" not in result.stdout.str()


def test_case_selection_by_priority(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_case(wfbench_case):
            pass
    """)
    result = pytester.runpytest("--collect-only", "-q", "--wfbench-priority", "P0")
    p0 = sorted(c.id for c in Registry.load().select(priorities=["P0"]))
    assert p0 and sorted(line.split("[")[1].rstrip("]") for line in result.stdout.lines if "[" in line) == p0


def test_builds_with_the_real_warpforthc(pytester: pytest.Pytester, counts, warpforthc: Path,  # type: ignore[no-untyped-def]
                                         cuda_side) -> None:
    pytester.makepyfile("""
        def test_a(wfbench_bench):
            assert wfbench_bench("scale_i64").compile_wf.ptx_target.startswith("sm_")
    """)
    out = pytester.path / "bench.json"
    result = pytester.runpytest("--wfbench-transport", "counting", "--wfbench-warpforthc", str(warpforthc),
                                "--wfbench-json", str(out), "--wfbench-samples", "5")
    assert _outcomes(result) == {"passed": 1}, result.stdout.str()
    run = load_result(out)
    assert run.warpforthc.kind == "warpforthc" and run.warpforthc.binary_sha256  # built here, not prebuilt
    assert [c.id for c in run.cases] == ["scale_i64"] and run.cases[0].status == OK


@pytest.mark.gpu
def test_real_gpu_through_the_plugin(pytester: pytest.Pytester, bundle: Path) -> None:
    """The real CUDA-event timer: correctness test and benchmarks of both cases in one pytest process."""
    pytester.makepyfile(test_inner=TESTS)
    out = pytester.path / "bench.json"
    result = pytester.runpytest("-v", "--wfbench-run", "--wfbench-bundle", str(bundle), "--wfbench-json",
                                str(out), "--wfbench-case", "scale_i64", "--wfbench-case", "axpy_f64")
    print(result.stdout.str())
    assert _outcomes(result) == {"passed": 4}, result.stdout.str()
    run = load_result(out)
    assert run.environment.gpu_uuid and run.environment.gpu_name != "Fake GPU"
    assert [c.id for c in run.cases] == ["scale_i64", "axpy_f64"]
    for case in run.cases:
        assert case.status in ("ok", "unstable") and case.timing is not None
        assert all(c.passed for c in case.checks)
        # adaptive stopping: every side has one sample per pair, at least min_samples of them, and all
        # protocol.samples unless sampling stopped early for the reason it names
        t, proto = case.timing, run.protocol
        assert t.warpforth.n == t.cuda.n == len(t.order)
        assert proto.min_samples <= t.cuda.n <= proto.samples
        assert t.stop_reason in (STOP_TARGET, STOP_BUDGET, STOP_SAMPLES)
        assert (t.cuda.n == proto.samples) or t.stop_reason in (STOP_TARGET, STOP_BUDGET), (t.cuda.n, t.stop_reason)


def test_pytest_help_works_with_the_plugin_installed(tmp_path: Path) -> None:
    """argparse %-formats help texts: one stray % in an option's help breaks ``pytest --help`` for every project
    in the environment. The plugin is loaded from its entry point, in a fresh interpreter."""
    import subprocess
    import sys

    import attrs

    from wfbench_core.record.results import TimingProtocol

    proc = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    help_text = " ".join(proc.stdout.split())
    assert "--wfbench-run" in help_text and "--wfbench-target-halfwidth" in help_text
    percent = [f for f in attrs.fields(TimingProtocol) if "%" in f.metadata.get("help", "")]
    assert percent, "no protocol help text holds a % any more: pick another option to check"
    for field in percent:  # shown once, as written
        assert " ".join(field.metadata["help"].split()) in help_text, field.name


# a benchmark that finishes, then something that ends the session early, then a benchmark that never runs
UNFINISHED = """
    import pytest


    @pytest.mark.wfbench
    def test_a_first(wfbench_bench):
        wfbench_bench("scale_i64")


    def test_b_stops(wfbench_gpu):
        {stop}


    @pytest.mark.wfbench
    def test_c_never(wfbench_bench):
        wfbench_bench("axpy_f64")
"""


def _history_add(path: Path, tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from wfbench_core.cli import main

    return CliRunner().invoke(main, ["history", "add", str(path), "--history", str(tmp_path / "hist"), *extra])


@pytest.mark.parametrize("how, stop, args", [
    ("Ctrl-C", "raise KeyboardInterrupt", []),
    ("-x", "assert False, 'a plain failure'", ["-x"]),
    ("--maxfail", "assert False, 'a plain failure'", ["--maxfail", "1"]),
    ("pytest.exit", "pytest.exit('enough')", []),
    ("collection error", "pass", ["--continue-on-collection-errors"]),
])
def test_a_session_that_did_not_finish_is_written_incomplete_and_kept_out_of_history(  # type: ignore[no-untyped-def]
        pytester: pytest.Pytester, counts, bundle, cuda_side, tmp_path: Path, how: str, stop: str,
        args: list[str]) -> None:
    pytester.makepyfile(test_inner=UNFINISHED.replace("{stop}", stop))
    if how == "collection error":
        pytester.makepyfile(test_broken="import no_such_module_here\n")
    out = pytester.path / "bench.json"
    result = pytester.runpytest("--wfbench-run", "--wfbench-transport", "counting", "--wfbench-bundle",
                                str(bundle), "--wfbench-json", str(out), "--wfbench-samples", "5", *args,
                                no_reraise_ctrlc=True)  # the inner Ctrl-C ends the inner session only
    run = load_result(out)
    assert not run.complete, how
    assert [c.id for c in run.cases] == (["scale_i64", "axpy_f64"] if how == "collection error" else ["scale_i64"])
    result.stdout.fnmatch_lines(["*wfbench result: *bench.json (incomplete: *; 'wfbench history add' refuses it)"])

    refused = _history_add(out, tmp_path)
    assert refused.exit_code == 2 and "an incomplete run (" in refused.stderr, refused.stderr
    assert not (tmp_path / "hist").exists()  # nothing written
    stored = _history_add(out, tmp_path, "--allow-incomplete")  # the existing rule: its finished cases, on request
    assert stored.exit_code == 0, stored.stderr


def test_a_session_that_ran_every_test_is_complete_even_with_failures(  # type: ignore[no-untyped-def]
        pytester: pytest.Pytester, counts, bundle, cuda_side) -> None:
    pytester.makepyfile(test_inner=UNFINISHED.replace("{stop}", "assert False, 'a plain failure'"))
    out = pytester.path / "bench.json"
    result = pytester.runpytest("--wfbench-run", "--wfbench-transport", "counting", "--wfbench-bundle",
                                str(bundle), "--wfbench-json", str(out), "--wfbench-samples", "5")
    assert _outcomes(result) == {"passed": 2, "failed": 1}
    run = load_result(out)
    assert run.complete and [c.id for c in run.cases] == ["scale_i64", "axpy_f64"]
    assert "incomplete" not in result.stdout.str()
