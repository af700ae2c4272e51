"""pytest plugin: WarpForth-vs-CUDA benchmarks beside GPU correctness tests, on one GPU per session.

Installed with wfbench (entry point group ``pytest11``, name ``wfbench``); nothing happens until a test
asks for a wfbench fixture. A test file in a project such as WarpForth::

    import pytest

    def test_axpy_is_correct(wfbench_gpu):          # correctness: the case's checks, quick protocol
        assert wfbench_gpu.check("axpy_f64").status == "ok"

    @pytest.mark.wfbench
    def test_benchmark(wfbench_bench, wfbench_case):  # one test per selected case
        wfbench_bench(wfbench_case)

Options (``pytest --help``, group "wfbench"):

The plugin claims only names of its own: the ``wfbench`` marker and ``--wfbench-*`` options (``benchmark``
and ``--benchmark-*`` are pytest-benchmark's), and it does nothing to a test that is not marked ``wfbench``
or does not ask for a wfbench fixture.

- ``--wfbench-run``: run tests marked ``wfbench``; they are skipped by default.
- ``--wfbench-json FILE``: at session end, write ONE wfbench result JSON
  (the ``RunResult`` schema of ``wfbench run``) holding every case benchmarked in the session. A session that did not
  run every test it collected (Ctrl-C, ``-x``, ``--maxfail``, ``pytest.exit``, a test file that did not
  collect) writes it with ``complete: false``, which ``wfbench history add`` refuses like any incomplete run.
- ``--wfbench-transport local|ssh|vast`` and ``--wfbench-transport-opt KEY=VALUE`` (repeatable): where
  the GPU is. The transport is constructed once, on first use, and closed at session end, so a rented
  machine serves every correctness test and benchmark of the pytest process.
- ``--wfbench-bundle DIR``: execute a prebuilt bundle (``wfbench build``); no ``warpforthc`` needed.
  Otherwise each case is compiled with ``--wfbench-warpforthc PATH`` (else ``WFBENCH_WARPFORTHC``,
  else ``PATH``).
- ``--wfbench-case ID`` / ``--wfbench-priority P0`` (repeatable): the cases ``wfbench_case`` takes.
- ``--wfbench-samples``, ``--wfbench-min-sample-ms``, ``--wfbench-warmup-s``, ``--wfbench-budget-s`` …:
  the timing protocol, one option per setting of ``wfbench run`` (made from the same fields).

wfbench hook implementations (functions marked ``@wfbench_core.hookimpl``) in ``conftest.py`` files and
pytest plugins are registered with wfbench as well: a project can define cases, transports or a timer
next to its tests. Progress goes to the ``wfbench`` logger (``--log-cli-level=INFO`` shows it live).
``--wfbench-run`` under pytest-xdist (``-n N``) is refused at start-up: every worker would time on the one GPU at
once. Without it, each worker that asks for ``wfbench_gpu`` opens its own GPU session (its own transport: with
``vast``, its own rental).
"""

from __future__ import annotations

import logging
import os
import tempfile
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from wfbench_core.errors import NoGpuError, WfbenchError
from wfbench_core.record.results import FAILING, CaseResult, RunResult, TimingProtocol, setting_problem

__all__ = [
    "CHECK_PROTOCOL", "MARKER", "GpuSession", "PluginOptions", "State", "log", "merge_runs", "pytest_addoption",
    "pytest_collection_modifyitems", "pytest_configure", "pytest_generate_tests", "pytest_sessionfinish",
    "pytest_terminal_summary", "unfinished", "wfbench_bench", "wfbench_gpu", "wfbench_plugins_of",
]

log = logging.getLogger("wfbench")

MARKER = "wfbench"  # its own name: "benchmark" is pytest-benchmark's
#: A quick protocol for correctness checks: the checks are the same, the timing is short.
CHECK_PROTOCOL = TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=5)


# -------------------------------------------------------------------------------------------------
# options
# -------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wfbench", "wfbench: WarpForth vs CUDA benchmarks on one GPU per session")
    group.addoption("--wfbench-run", dest="run_benchmarks", action="store_true", default=False,
                    help=f"Run tests marked '{MARKER}' (skipped by default).")
    group.addoption("--wfbench-json", dest="wfbench_json", metavar="FILE", default=None,
                    help="Write one wfbench result JSON of everything benchmarked in the session.")
    group.addoption("--wfbench-transport", default="local", metavar="NAME",
                    help="Where the GPU is: local (default), ssh, vast (see 'wfbench transports').")
    group.addoption("--wfbench-transport-opt", dest="wfbench_transport_opts", action="append", default=[],
                    metavar="KEY=VALUE", help="Option for the transport (repeatable).")
    group.addoption("--wfbench-bundle", metavar="DIR", default=None,
                    help="Execute this prebuilt bundle (from 'wfbench build') instead of compiling here.")
    group.addoption("--wfbench-warpforthc", metavar="PATH", default=None,
                    help="warpforthc used to build bundles (else $WFBENCH_WARPFORTHC, else PATH).")
    group.addoption("--wfbench-case", dest="wfbench_cases", action="append", default=[], metavar="ID",
                    help="Case for the wfbench_case fixture (repeatable); default: every installed case.")
    group.addoption("--wfbench-priority", dest="wfbench_priorities", action="append", default=[],
                    choices=["P0", "P1"], help="Only cases of this priority for wfbench_case (repeatable).")
    for field in attrs.fields(TimingProtocol):  # the timing protocol's settings, from their one home
        meta = field.metadata
        if meta.get("flag"):
            kind = str if meta.get("choices") else int if field.type in (int, "int") else float
            group.addoption("--wfbench-" + meta["flag"][2:], dest="wfbench_protocol_" + field.name,
                            type=kind, default=field.default,
                            # argparse %-formats help texts: a literal % (as in "95 % interval") must be doubled
                            help=f"{meta['help']} (default {field.default}; as '{meta['flag']}' of wfbench "
                                 f"run).".replace("%", "%%"))


@attrs.frozen
class PluginOptions:
    """The plugin's options, checked once at start-up."""

    run_benchmarks: bool
    json_path: Path | None
    transport: str
    transport_options: dict[str, str]
    bundle: Path | None
    warpforthc: str | None
    case_ids: tuple[str, ...]
    priorities: tuple[str, ...]
    protocol: TimingProtocol

    @classmethod
    def from_config(cls, config: pytest.Config) -> PluginOptions:
        opt = config.getoption
        options: dict[str, str] = {}
        for text in opt("wfbench_transport_opts"):
            key, sep, value = text.partition("=")
            if not sep or not key.strip():
                raise pytest.UsageError(f"--wfbench-transport-opt expects KEY=VALUE, got {text!r}")
            options[key.strip().replace("-", "_")] = value
        values = {}
        for f in attrs.fields(TimingProtocol):
            if f.metadata.get("flag"):
                values[f.name] = opt("wfbench_protocol_" + f.name)
                problem = setting_problem(f, values[f.name], "--wfbench-" + f.metadata["flag"][2:])
                if problem:
                    raise pytest.UsageError(problem)
        protocol = TimingProtocol(**values)
        bundle = opt("wfbench_bundle")
        if bundle is not None and not (Path(bundle) / "manifest.json").is_file():
            raise pytest.UsageError(f"--wfbench-bundle {bundle}: not a wfbench bundle (no manifest.json); "
                                    f"make one with 'wfbench build'")
        json_path = opt("wfbench_json")
        if opt("run_benchmarks") and _under_xdist(config):
            raise pytest.UsageError("--wfbench-run times kernels on one GPU, and under pytest-xdist every worker would "
                                    "time at once and write its own result; run the benchmarks in one process "
                                    "(-p no:xdist, or -n 0)")
        return cls(
            run_benchmarks=bool(opt("run_benchmarks")),
            json_path=Path(json_path).absolute() if json_path else None,
            transport=opt("wfbench_transport"),
            transport_options=options,
            bundle=Path(bundle).absolute() if bundle else None,
            warpforthc=opt("wfbench_warpforthc"),
            case_ids=tuple(opt("wfbench_cases")),
            priorities=tuple(opt("wfbench_priorities")),
            protocol=protocol,
        )


def _under_xdist(config: pytest.Config) -> bool:
    """Whether pytest-xdist spreads this session over workers: the controller's ``--dist`` (``-n N`` sets it),
    or a worker's environment (the same test pytest-benchmark makes)."""
    return config.getoption("dist", "no") != "no" or "PYTEST_XDIST_WORKER" in os.environ


# -------------------------------------------------------------------------------------------------
# the session state
# -------------------------------------------------------------------------------------------------


def wfbench_plugins_of(pluginmanager: pytest.PytestPluginManager) -> list[object]:
    """conftest modules and pytest plugins carrying wfbench hook implementations, wrapped for wfbench.

    Each is re-registered through a namespace holding only its ``@wfbench_core.hookimpl`` functions, so
    two ``conftest`` modules of the same name do not clash in wfbench's plugin manager.
    """
    found: list[object] = []
    for plugin in pluginmanager.get_plugins():
        impls = {}
        for name in dir(plugin):
            if not name.startswith("wfbench_"):
                continue
            try:
                fn = getattr(plugin, name)
            except Exception:  # a property that raises is not a hook
                continue
            if callable(fn) and hasattr(fn, "wfbench_impl"):
                impls[name] = fn
        if impls:
            found.append(types.SimpleNamespace(**impls))
    return found


class State:
    """What the plugin keeps for one pytest session: settings, registry, results."""

    def __init__(self, config: pytest.Config, settings: PluginOptions) -> None:
        self.config = config
        self.settings = settings
        self.runs: list[RunResult] = []
        self._registry: Any = None
        self.collection_errors = 0  # test files that did not collect: their tests never ran
        self.unfinished = ""  # why the session did not finish (set at its end)

    @property
    def registry(self) -> Any:
        """wfbench's registry: installed plugins plus the wfbench hooks of conftests (built on first use)."""
        if self._registry is None:
            from wfbench_core.discover.registry import Registry

            self._registry = Registry.load(wfbench_plugins_of(self.config.pluginmanager))
        return self._registry

    def selected_case_ids(self) -> list[str]:
        return [c.id for c in self.registry.select(self.settings.case_ids, priorities=self.settings.priorities)]

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """(a pytest hook: the state is registered as a plugin) count the files that did not collect"""
        if report.failed:
            self.collection_errors += 1

    def merged(self, unfinished: str = "") -> RunResult | None:
        """The session's result; marked incomplete (``complete: false``) when ``unfinished`` says why."""
        if not self.runs:
            return None
        merged = merge_runs(self.runs)
        return attrs.evolve(merged, complete=False) if unfinished else merged


def unfinished(session: pytest.Session, exitstatus: int, state: State) -> str:
    """Why the session did not run every test it collected ("" when it did): interrupted (Ctrl-C,
    ``pytest.exit``), stopped early (``-x``, ``--maxfail``), or a test file that did not collect."""
    if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        return f"the session ended with {pytest.ExitCode(exitstatus).name}"
    stopped = session.shouldstop or session.shouldfail
    if stopped:
        return f"the session stopped early ({stopped})"
    if state.collection_errors:
        return f"{state.collection_errors} test file(s) did not collect"
    return ""


def merge_runs(runs: Sequence[RunResult]) -> RunResult:
    """One result of several executions on the same GPU session: the first run's environment, all cases."""
    first = runs[0]
    compilers: dict[str, Any] = {}
    for r in runs:
        compilers.update(r.compilers)
    return attrs.evolve(first, cases=tuple(c for r in runs for c in r.cases), wall_s=sum(r.wall_s for r in runs),
                        compilers=compilers)


_STATE = pytest.StashKey[State]()


def _state(config: pytest.Config) -> State:
    return config.stash[_STATE]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a wfbench benchmark (skipped unless pytest runs with --wfbench-run)")
    settings = PluginOptions.from_config(config)
    state = config.stash[_STATE] = State(config, settings)
    config.pluginmanager.register(state, "wfbench-session-state")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _state(config).settings.run_benchmarks:
        return
    skip = pytest.mark.skip(reason="wfbench: run with --wfbench-run")
    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            item.add_marker(skip)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "wfbench_case" in metafunc.fixturenames:
        error = ""
        try:
            ids = _state(metafunc.config).selected_case_ids()
        except WfbenchError as exc:
            error = str(exc)
        if error:  # outside the except block: one line, no chained traceback
            pytest.fail(f"wfbench: {error}", pytrace=False)
        metafunc.parametrize("wfbench_case", ids, ids=ids)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    state.unfinished = unfinished(session, exitstatus, state)
    if state.settings.json_path is None:
        return
    merged = state.merged(state.unfinished)
    if merged is None:
        return
    from wfbench_core.record.results import write_result

    state.settings.json_path.parent.mkdir(parents=True, exist_ok=True)
    write_result(merged, state.settings.json_path)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    merged = state.merged(state.unfinished)
    path = state.settings.json_path
    if merged is None:
        if path is not None and state.settings.run_benchmarks:
            terminalreporter.write_line(f"wfbench: no case was benchmarked; {path} not written")
        return
    from wfbench_core.review.report import render

    terminalreporter.section("wfbench")
    terminalreporter.write_line(render(merged))
    if path is not None:
        terminalreporter.write_line(f"wfbench result: {path}" + (f" (incomplete: {state.unfinished}; 'wfbench "
                                                                 f"history add' refuses it)" if state.unfinished else ""))


# -------------------------------------------------------------------------------------------------
# the GPU session and the fixtures
# -------------------------------------------------------------------------------------------------


class GpuSession:
    """One transport (one GPU, one rental) for the whole pytest session.

    ``check(case_id)`` runs a case's correctness checks with a short protocol; ``bench(case_id)`` checks
    and times it with the session's protocol and adds it to the session result. ``transport`` is the
    transport object itself, for tests that use what a particular transport offers.
    """

    def __init__(self, state: State, progress: Callable[[str], None] = log.info) -> None:
        self.state = state
        self.settings = state.settings
        self.progress = progress
        reg = state.registry
        self.transport = reg.transport(self.settings.transport)(
            registry=reg, cuda_compiler="auto", progress=progress, **self.settings.transport_options)
        self._arch: str | bool | None = False  # False: not asked yet
        self._broken = ""
        self._tmp = Path(tempfile.mkdtemp(prefix="wfbench-pytest-"))
        self._bundles: dict[str, Path] = {}

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        import shutil

        try:
            self.transport.close()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)

    # -- building ---------------------------------------------------------------------------------

    def arch(self) -> str | None:
        """The GPU's ``sm_XX`` for warpforthc, or None where this machine has no GPU to ask."""
        if self._arch is False:
            try:
                self._arch = self.transport.gpu_arch()
            except NoGpuError:
                self._arch = None
        return self._arch if isinstance(self._arch, str) else None

    def bundle(self, case_id: str) -> Path:
        """The prebuilt bundle, or one compiled here for ``case_id`` (once per session)."""
        if self.settings.bundle is not None:
            return self.settings.bundle
        if case_id not in self._bundles:
            from wfbench_core.compiling.compile import find_warpforthc
            from wfbench_core.record.request import ExecuteRequest, RunRequest
            from wfbench_core.run import runner

            reg = self.state.registry
            request = RunRequest(cases=reg.refs([reg.case(case_id)]), execute=ExecuteRequest(),
                                 compilers={"": find_warpforthc(self.settings.warpforthc)}, check_cuda=False)
            out = self._tmp / f"bundle-{case_id}"
            runner.build(request, reg, out, arch=self.arch(), progress=self.progress)
            self._bundles[case_id] = out
        return self._bundles[case_id]

    # -- executing --------------------------------------------------------------------------------

    def execute(self, case_ids: Sequence[str], *, protocol: TimingProtocol | None = None,
                bundle: Path | None = None) -> RunResult:
        """Execute cases on the session's GPU and return the result (not added to the session result).

        No GPU here (local transport) skips the test. A case that cannot be built or is missing from the
        bundle fails the test with one line. An error of the execution itself (connection, rental, GPU host)
        fails it too, and the session then refuses further work rather than trying to rent again.
        """
        if self._broken:
            pytest.fail(f"wfbench GPU session unusable after an earlier error: {self._broken}", pytrace=False)
        # pytest.fail/skip are raised outside the except blocks: one line, no chained traceback
        problem = ""
        try:
            if bundle is None:
                if len(case_ids) != 1:
                    raise WfbenchError("several cases at once need a bundle: pass bundle= or --wfbench-bundle")
                bundle = self.bundle(case_ids[0])
            _require_cases(bundle, case_ids)
        except WfbenchError as exc:
            problem = str(exc)
        if problem:
            pytest.fail(problem, pytrace=False)
        no_gpu = ""
        try:
            from wfbench_core.record.request import ExecuteRequest

            request = ExecuteRequest(case_ids=tuple(case_ids), protocol=protocol or self.settings.protocol)
            result: RunResult = self.transport.execute(bundle, request, progress=self.progress)
            return result
        except NoGpuError as exc:
            no_gpu = str(exc if self.settings.transport != "local" else
                         exc.with_hint("benchmark where the GPU is: --wfbench-transport ssh or vast"))
        except WfbenchError as exc:
            self._broken = problem = str(exc)
        if no_gpu:
            pytest.skip(f"no GPU: {no_gpu}")
        pytest.fail(problem, pytrace=False)

    def check(self, case_id: str) -> CaseResult:
        """Run the case's correctness checks (short timing) and fail the test unless they pass."""
        result = _the_case(self.execute([case_id], protocol=CHECK_PROTOCOL), case_id)
        _fail_unless_correct(result)
        return result

    def bench(self, case_id: str, *, strict: bool = True) -> CaseResult:
        """Check and time a case; the result joins the session JSON. ``strict`` fails the test on a failing status."""
        run = self.execute([case_id])
        self.state.runs.append(run)
        result = _the_case(run, case_id)
        if strict:
            _fail_unless_correct(result)
        return result


def _require_cases(bundle: Path, case_ids: Sequence[str]) -> None:
    """Refuse, before anything is shipped, a case the bundle does not hold."""
    from wfbench_core.compiling.bundle import read_variants

    for label, (manifest, _) in read_variants(bundle).items():
        held = {c.id for c in manifest.cases} | set(manifest.failures)
        missing = [cid for cid in case_ids if cid not in held]
        if missing:
            where = f"{bundle} ({label})" if label else str(bundle)
            raise WfbenchError(f"case {', '.join(missing)} is not in bundle {where}; it holds "
                               f"{', '.join(sorted(held)) or 'no cases'}")


def _the_case(run: RunResult, case_id: str) -> CaseResult:
    for c in run.cases:
        if c.id == case_id and not c.compiler_label:
            return c
    for c in run.cases:
        if c.id == case_id:
            return c
    pytest.fail(f"{case_id}: the GPU host returned no result for this case", pytrace=False)


def _fail_unless_correct(result: CaseResult) -> None:
    if result.status in FAILING:
        pytest.fail(f"{result.id}: {result.status.upper()}: {result.message}", pytrace=False)


@pytest.fixture(scope="session")
def wfbench_gpu(pytestconfig: pytest.Config) -> Iterator[GpuSession]:
    """The session's GPU: one transport (one rented machine) shared by every test that uses it."""
    state = _state(pytestconfig)
    problem = ""
    try:
        session = GpuSession(state)
    except WfbenchError as exc:
        problem = str(exc)
    if problem:  # outside the except block: one line, no chained traceback
        pytest.fail(f"wfbench: {problem}", pytrace=False)
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def wfbench_bench(wfbench_gpu: GpuSession) -> Callable[..., CaseResult]:
    """``wfbench_bench("axpy_f64") -> CaseResult``: check and time a case; it joins the session JSON."""
    return wfbench_gpu.bench
