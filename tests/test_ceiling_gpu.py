"""The library ceilings' real calls on a GPU (skipped without one, or without CuPy: ``pip install -e '.[ceiling]'``).

cuBLAS DGEMM, daxpy, dgeam and CUB's device reduction through CuPy, on wfbench's own stream, checked against
each case's numpy reference and timed in the same rounds as WarpForth and CUDA, in events and graph mode.
WarpForth PTX comes from tests/fixtures/ptx, so no warpforthc is needed.
"""

from __future__ import annotations

import importlib.util

import pytest

from wfbench_core.ceiling import RATIO_NAME
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import CEILING_OK, OK, TIMING_EVENTS, TIMING_GRAPH, UNSTABLE, TimingProtocol
from wfbench_core.run.executor import execute

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(importlib.util.find_spec("cupy") is None,
                                 reason="CuPy is not installed: pip install -e '.[ceiling]'")]

CASES = ("axpy_f64", "reduce_sum_f64", "transpose_f64", "matmul_f64_naive", "matmul_f64_tiled")
QUICK = TimingProtocol(warmup_s=0.3, min_sample_ms=10.0, samples=8, placements=2, min_samples=6)


@pytest.mark.parametrize("mode", [TIMING_EVENTS, TIMING_GRAPH])
def test_every_ceiling_passes_its_check_and_is_timed_in_the_same_rounds(prebuilt_bundle, mode: str) -> None:  # type: ignore[no-untyped-def]
    import attrs

    from wfbench_core.review.report import render

    registry = Registry.load()
    result = execute(prebuilt_bundle(case_ids=CASES), registry=registry,
                     request=ExecuteRequest(protocol=attrs.evolve(QUICK, timing_mode=mode), ceiling=True))
    for case in result.cases:
        assert case.status in (OK, UNSTABLE), case.message
        k = case.ceiling
        assert k is not None and k.status == CEILING_OK, (case.id, k)
        assert k.library_version and k.stats is not None and k.stats.n == case.timing.warpforth.n  # same pairs
        assert k.ratio > 0 and k.ratio_lo is not None and k.ratio_lo <= k.ratio_hi
        if mode == TIMING_GRAPH:  # captured where declared capturable, else timed with events and saying so
            if registry.ceiling(case.id).capturable:
                assert k.timing_mode == TIMING_GRAPH and not k.capture_note, (case.id, k.capture_note)
            else:
                assert k.timing_mode == TIMING_EVENTS and "cannot be captured" in k.capture_note, (case.id, k)
    print(render(result, ceiling=True))
    assert RATIO_NAME in render(result, ceiling=True)


def test_dgemm_runs_on_wfbench_stream_and_its_kernels_are_named() -> None:
    """The cuBLAS call is queued on wfbench's stream, between two of its events, and computes C = A B."""
    import numpy as np

    from wfbench_core.ceiling import CeilingCall
    from wfbench_core.gpu.device import Device

    device = Device().open()
    n = 1024
    a = device.to_device(np.ones(n * n))
    b = device.to_device(np.ones(n * n))
    c = device.empty(n * n, np.float64)
    device.synchronize()
    ceiling = Registry.load().ceiling("matmul_f64_naive")
    go = ceiling.prepare(CeilingCall(sizes={"N": n}, scalars={}, inputs={"A": device.address(a), "B": device.address(b)},
                                     outputs={"C": device.address(c)}, stream=device.stream_handle()))
    start, end = device.event(), device.event()
    device.record(start)
    go()
    device.record(end)
    device.synchronize()
    assert device.elapsed_ms(start, end) > 0  # the DGEMM ran between wfbench's two events
    assert np.all(device.read({"C": c})["C"] == n)


@pytest.mark.parametrize("case_id", ["reduce_sum_f64", "matmul_f64_tiled"])
def test_explain_profiles_the_library_kernels_beside_both_sides(case_id: str) -> None:
    """``explain --ceiling --profile``: Nsight Compute profiles every kernel of one library call (CUB's reduction
    is more than one kernel) beside the WarpForth and CUDA kernels, with its tensor-path operations."""
    from click.testing import CliRunner
    from testkit import STORED_PTX  # tests/testkit.py

    from wfbench_core.cli import main
    from wfbench_core.compiling.cudatools import require_tool
    from wfbench_core.errors import WfbenchError

    try:
        require_tool("ncu", None, why="the test profiles")
    except WfbenchError as exc:
        pytest.skip(str(exc))
    ptx = STORED_PTX / f"{case_id}.canonical.ptx"
    r = CliRunner().invoke(main, ["explain", case_id, "--wf-ptx", str(ptx), "--ceiling", "--profile", "-q"])
    assert r.exit_code == 0, r.output
    print(r.output)
    section = r.output.split("### Nsight Compute: the library's kernels", 1)[1]
    assert "Not profiled" not in section
    assert "| WarpForth | CUDA | library 1 |" in section and "tensor-path" in section
    names = [ln for ln in section.splitlines() if ln.startswith("- library ")]
    assert names and all("matches no declared name" not in ln for ln in names), names
    if case_id == "reduce_sum_f64":
        assert len(names) >= 2  # CUB's two passes (and CuPy's copy of the total)
