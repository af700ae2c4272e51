"""Inputs and references made ahead in a helper process (wfbench_core.gpu.host_prep), no GPU needed.

The helper is the real one (a spawned process loading the plugins and reading a real bundle); the arrays it
hands over must be the ones the worker makes itself; a case it cannot prepare is made in the worker and fails
there as it always did; a helper that cannot start is said and costs nothing else; and no process of a run
is left behind. The run test drives the real executor and worker with the stand-in timer of tests/fake_gpu.py.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from testkit import STORED_PTX, process_alive, use_stand_in_gpu

from wfbench_core.gpu.host_prep import HostPrep, make_host_arrays

BROKEN_PLUGIN = '''
"""A case whose inputs cannot be made at its canonical size (a plugin bug)."""
import attrs
from wfbench_core import hookimpl
from wfbench_cases.scale_i64 import CASE


def _inputs(sizes, rng):
    if sizes["N"] > 1_000_000:
        raise ValueError("inputs_raise cannot make its canonical inputs")
    return CASE.inputs(sizes, rng)


BROKEN = attrs.evolve(CASE, id="inputs_raise", inputs=_inputs)


@hookimpl
def wfbench_register_cases(register):
    register(BROKEN)
'''


def _same(helper: Any, here: Any) -> None:
    """Two configurations' arrays are identical: the same names, types, shapes and bytes."""
    for name in (*here.inputs, *here.want):
        a, b = (helper.inputs | helper.want)[name], (here.inputs | here.want)[name]
        assert type(a) is type(b), name
        if isinstance(b, np.ndarray):
            assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes()), name
            assert a.flags.c_contiguous and a.flags.writeable, name
        else:
            assert a == b, name
    assert set(helper.inputs) == set(here.inputs) and set(helper.want) == set(here.want)


@pytest.fixture
def broken_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plugin module ``prep_broken_case`` importable here and in every process started from here."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "prep_broken_case.py").write_text(BROKEN_PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]))
    return folder


def _bundle(registry: Any, case_ids: tuple[str, ...], out: Path) -> Path:
    """A bundle of built-in cases' prebuilt PTX; ``inputs_raise`` takes scale_i64's (it is that kernel)."""
    from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

    load = ptx_dir_loader(STORED_PTX)
    scale = registry.case("scale_i64")
    bundle_from_ptx([registry.case(c) for c in case_ids], out,
                    lambda case, config: load(scale if case.id == "inputs_raise" else case, config))
    return out


@pytest.mark.parametrize("case_id", ["axpy_f64", "mandelbrot_i32"])
def test_the_helper_hands_over_the_arrays_the_worker_makes(case_id: str, prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.discover.registry import Registry

    lines: list[str] = []
    prep = HostPrep.start(str(prebuilt_bundle((case_id,))), (None, ()), lines.append)
    assert prep is not None
    try:
        prep.ahead(case_id, ("check",))
        arrays, wait_s = prep.take(case_id)
    finally:
        prep.close()
    assert arrays is not None and set(arrays) == {"check"} and wait_s is not None and wait_s >= 0, lines
    made = arrays["check"]
    assert made.fits(Registry.load().case(case_id), "check") and made.inputs_s > 0 and made.reference_s > 0
    _same(made, make_host_arrays(Registry.load().case(case_id), "check"))
    assert lines == []


def test_a_case_the_helper_cannot_prepare_is_left_to_the_worker_and_the_helper_goes_on(  # type: ignore[no-untyped-def]
        broken_plugin, tmp_path: Path) -> None:
    from wfbench_core.discover.registry import Registry

    registry = Registry.load(["prep_broken_case"])
    bundle = _bundle(registry, ("inputs_raise", "scale_i64"), tmp_path / "bundle")
    lines: list[str] = []
    prep = HostPrep.start(str(bundle), (None, ("prep_broken_case",)), lines.append)
    assert prep is not None
    try:
        prep.ahead("inputs_raise")
        prep.ahead("scale_i64", ("check",))
        assert prep.take("inputs_raise") == (None, None)  # the worker makes them, and fails there as before
        arrays, _ = prep.take("scale_i64")
    finally:
        prep.close()
    assert arrays is not None
    _same(arrays["check"], make_host_arrays(registry.case("scale_i64"), "check"))
    with pytest.raises(ValueError, match="inputs_raise cannot make its canonical inputs"):
        make_host_arrays(registry.case("inputs_raise"), "canonical")
    assert lines == []


def test_a_helper_that_cannot_start_is_said_once_and_the_worker_makes_every_case(tmp_path: Path) -> None:
    lines: list[str] = []
    prep = HostPrep.start(str(tmp_path / "no-bundle"), (None, ()), lines.append)
    assert prep is not None
    process = prep.process
    prep.ahead("axpy_f64")
    assert prep.take("axpy_f64") == (None, None)
    prep.ahead("scale_i64")
    assert prep.take("scale_i64") == (None, None)
    prep.close()
    assert len(lines) == 1, lines
    assert lines[0].startswith("inputs and references are made in the GPU worker from here on: the helper process "
                               "failed (WfbenchError: ") and "no-bundle" in lines[0]
    assert not process.is_alive()


def _marked(mark: str) -> list[int]:
    """Processes (not zombies) whose environment holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if mark.encode() in environ and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_a_run_hands_every_case_its_arrays_made_ahead_and_leaves_no_process(  # type: ignore[no-untyped-def]
        broken_plugin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvcc) -> None:
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import ERROR, OK, TimingProtocol
    from wfbench_core.run.executor import execute

    handed = tmp_path / "handed"
    use_stand_in_gpu(monkeypatch, FAKE_GPU_HOST_ARRAYS=str(handed))
    monkeypatch.setenv("WFBENCH_PLUGINS", "fake_gpu,prep_broken_case")
    mark = f"wfbench-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("WFBENCH_TEST_MARK", mark)  # every process started from here inherits it
    registry = Registry.load()
    cases = ("matmul_f64_words", "inputs_raise", "transpose_f64")
    bundle = _bundle(registry, cases, tmp_path / "bundle")
    lines: list[str] = []
    result = execute(bundle, registry=registry, progress=lines.append,
                     request=ExecuteRequest(protocol=TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=5)))
    status = {c.id: (c.status, c.message) for c in result.cases}
    assert status["matmul_f64_words"][0] == OK and status["transpose_f64"][0] == OK, status
    # made in the worker, as without the helper: the plugin's error is the case's, and the run goes on
    assert status["inputs_raise"] == (ERROR, "the timer raised ValueError: inputs_raise cannot make its canonical "
                                             "inputs"), status
    given = {line.split()[1]: line.split()[2] for line in handed.read_text().splitlines()}
    assert given == {"matmul_f64_words": "check,canonical", "inputs_raise": "-", "transpose_f64": "check,canonical"}
    for case_id in ("matmul_f64_words", "transpose_f64"):
        assert result.case(case_id).costs.prep_wait_s is not None
    assert not [line for line in lines if "helper" in line], lines
    deadline = time.monotonic() + 20
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == [], "a process of the run outlived it"


def test_results_from_before_prepared_arrays_and_carried_warm_ups_still_load() -> None:
    from wfbench_core.record.results import load_result

    run = load_result(Path(__file__).resolve().parent.parent / "docs" / "results" / "h200-suite17.json")
    timed = [c for c in run.cases if c.timing is not None]
    assert timed and all(c.costs.prep_wait_s is None and c.timing.warmup_carried_s == 0.0 for c in timed)


@pytest.mark.gpu
def test_on_a_gpu_cases_take_their_arrays_made_ahead_and_the_second_is_credited_the_warm_up(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.discover.registry import Registry
    from wfbench_core.gpu.sampling import WARMUP_MIN_S
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import OK, UNSTABLE, TimingProtocol
    from wfbench_core.run.executor import execute

    # the default sampling: with 10 short samples the first case's timing ended before its background diagnostics
    # (ptxas, cuobjdump) did, and waiting for them left the GPU idle over WARM_CARRY_IDLE_S (nothing carried,
    # rightly); a suite's cases are timed for seconds, as here
    protocol = TimingProtocol(warmup_s=1.0)
    lines: list[str] = []
    result = execute(prebuilt_bundle(("axpy_f64", "scale_i64")), registry=Registry.load(), progress=lines.append,
                     request=ExecuteRequest(protocol=protocol))
    first, second = result.cases
    for case in (first, second):
        assert case.status in (OK, UNSTABLE) and case.timing is not None, case.message
        assert case.costs.prep_wait_s is not None and case.costs.inputs_s > 0, lines  # made in the helper
    # the first case is credited the yardsticks (copy bandwidth, f64 peak) measured before it where its correctness
    # phase left the GPU idle under WARM_CARRY_IDLE_S (the H200 showed both: 0.9 s credited in one run, none in
    # another); either way its warm-up is what the credit leaves
    assert result.environment.copy_gbps  # the run measured its yardsticks
    if first.timing.warmup_carried_s:
        assert first.timing.warmup_carried_s == pytest.approx(protocol.warmup_s - WARMUP_MIN_S)
        assert WARMUP_MIN_S <= first.timing.warmup_busy_s < protocol.warmup_s
    else:
        assert first.timing.warmup_busy_s >= protocol.warmup_s
    # the second case's timing starts well within WARM_CARRY_IDLE_S of the first one's end on a GPU host
    assert second.timing.warmup_carried_s == pytest.approx(protocol.warmup_s - WARMUP_MIN_S)
    assert WARMUP_MIN_S <= second.timing.warmup_busy_s < protocol.warmup_s
