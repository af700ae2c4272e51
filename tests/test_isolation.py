"""A case that crashes, hangs or breaks its worker costs that case only; finished cases are never lost.

The executor runs for real (its worker processes, pipes, deadlines and result file); only the timer is a
fake plugin (tests/fake_gpu.py) that misbehaves on purpose, so this runs without a GPU. The same paths
with real broken WarpForth kernels on a real GPU are in tests/test_gpu.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wfbench_core.run.executor import execute
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import ERROR, OK, TimingProtocol, load_result
from testkit import process_alive, use_stand_in_gpu

CASES = ("scale_i64", "axpy_f64", "reduce_sum_f64", "matmul_f64_naive", "matmul_f64_tiled", "attention_f32_naive",
         "polynomial_f64", "transpose_f64")
QUICK = TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=5)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nvcc):  # type: ignore[no-untyped-def]
    """Set the fake timer's behaviour per case; returns the file where every worker writes its pid."""
    pids = tmp_path / "pids"
    use_stand_in_gpu(monkeypatch, FAKE_GPU_PIDS=str(pids))

    def behave(**spec: str) -> Path:
        monkeypatch.setenv("FAKE_GPU_BEHAVIOUR", ",".join(f"{k}={v}" for k, v in spec.items()))
        return pids

    return behave



def test_each_bad_case_costs_itself_and_the_next_case_runs_in_a_fresh_worker(fake_gpu, prebuilt_bundle, tmp_path,  # type: ignore[no-untyped-def]
                                                                             monkeypatch) -> None:
    pids = fake_gpu(scale_i64="segv", reduce_sum_f64="hang", matmul_f64_tiled="raise", polynomial_f64="launch",
                    transpose_f64="kill")
    ahead = tmp_path / "prefetch"
    monkeypatch.setenv("FAKE_GPU_PREFETCH", str(ahead))
    bundle = prebuilt_bundle(CASES)
    out = tmp_path / "result.json"
    lines: list[str] = []
    result = execute(bundle, registry=Registry.load(), progress=lines.append, out=out,
                     request=ExecuteRequest(protocol=QUICK, case_timeout_s=2.0))
    status = {c.id: (c.status, c.message) for c in result.cases}
    assert [c.id for c in result.cases] == list(CASES)
    assert status["scale_i64"][0] == ERROR and "died (SIGSEGV)" in status["scale_i64"][1]
    assert status["reduce_sum_f64"][0] == ERROR
    assert "did not finish within 2 s (hang?)" in status["reduce_sum_f64"][1]
    assert "reduce_sum_f64 wf launch" in status["reduce_sum_f64"][1]
    assert status["matmul_f64_tiled"] == (ERROR, "the timer raised RuntimeError: the fake timer broke")
    assert status["polynomial_f64"][0] == ERROR and "CUDA_ERROR_ILLEGAL_ADDRESS" in status["polynomial_f64"][1]
    assert status["transpose_f64"][0] == ERROR and "died (SIGKILL)" in status["transpose_f64"][1]
    for good in ("axpy_f64", "matmul_f64_naive", "attention_f32_naive"):
        assert status[good][0] == OK and result.case(good).timing is not None, status[good]
    assert all("\n" not in message for _, message in status.values())
    # one worker at the start, one after each of the five bad cases (the last one needs none after it)
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 5
    assert not any(process_alive(p) for p in started)
    # each new worker compiled the CUDA side of the cases still to come ahead: at its first case it holds the
    # compiles of exactly the cases after that one
    firsts: dict[str, tuple[str, list[str]]] = {}
    for line in ahead.read_text().splitlines():
        pid, cid, pending = (line.split(" ") + [""])[:3]
        firsts.setdefault(pid, (cid, [c for c in pending.split(",") if c]))
    assert len(firsts) == 5
    for cid, pending in firsts.values():
        assert pending == sorted(CASES[CASES.index(cid) + 1:]), (cid, pending)
    stored = load_result(out)
    assert stored.complete and stored == result


def test_a_dead_workers_last_words_are_in_its_case(fake_gpu, prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    """A worker that dies with a traceback: the traceback's last lines become the case's message."""
    fake_gpu(scale_i64="crash")
    result = execute(prebuilt_bundle(("scale_i64", "axpy_f64")), registry=Registry.load(),
                     request=ExecuteRequest(protocol=QUICK))
    message = result.case("scale_i64").message
    assert result.case("scale_i64").status == ERROR and "\n" not in message
    assert message.startswith("scale_i64: the GPU worker process exited unexpectedly (exit 1); its last output: ")
    assert message.endswith("BaseException: the fake driver lost the device"), message
    assert result.case("axpy_f64").status == OK  # the next case runs in a fresh worker


QUIET = 5  # s: the worker's silences outside a GPU wait are under 2 s here once its compiles are kept


def _compiled_once(case_ids: tuple[str, ...]) -> None:
    """nvcc's PTX of the cases' CUDA sides kept for the session (tests/tool_cache.py), as the worker compiles them
    (sm_90, the stand-in GPU's): the worker then reads them, and its silences outside a GPU wait are short."""
    from wfbench_core.compiling.compile import compile_cuda, cuda_compiler

    registry = Registry.load()
    for cid in case_ids:
        case = registry.case(cid)
        for config in ("check", "canonical"):
            compile_cuda(case.render(config)[1], case_id=case.key(config), arch="sm_90", compiler=cuda_compiler("auto"))


def test_a_hang_outside_any_watchdog_wait_is_caught_by_the_quiet_limit(fake_gpu, prebuilt_bundle, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.gpu import watchdog

    fake_gpu(scale_i64="quiet-hang")
    _compiled_once(("scale_i64", "axpy_f64"))
    monkeypatch.setattr(watchdog, "QUIET_FLOOR_S", float(QUIET))
    result = execute(prebuilt_bundle(("scale_i64", "axpy_f64")), registry=Registry.load(),
                     request=ExecuteRequest(protocol=TimingProtocol(warmup_s=0.0, min_sample_ms=1.0, samples=5,
                                                              max_case_s=1.0)))
    assert result.case("scale_i64").status == ERROR
    assert f"did not finish within {QUIET} s (hang?) while waiting for work outside a GPU wait" in result.case("scale_i64").message
    assert result.case("axpy_f64").status == OK, result.case("axpy_f64").message


def test_killed_executor_leaves_finished_cases_marked_incomplete_and_no_worker(fake_gpu, prebuilt_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pids = fake_gpu(axpy_f64="quiet-hang")
    bundle = prebuilt_bundle(("scale_i64", "axpy_f64"))
    out = tmp_path / "partial.json"
    proc = subprocess.Popen([sys.executable, "-m", "wfbench_core", "execute", str(bundle), "--out", str(out),
                             "--samples", "5", "--warmup-s", "0", "--min-sample-ms", "1", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and len(json.loads(out.read_text())["cases"]) == 1:
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail(f"no partial result appeared: {proc.stderr.read().decode() if proc.stderr else ''}")
    time.sleep(0.5)  # the worker is now inside the hanging case
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    partial = load_result(out)
    assert not partial.complete
    assert [(c.id, c.status) for c in partial.cases] == [("scale_i64", OK)]
    deadline = time.monotonic() + 10
    workers = [int(p) for p in pids.read_text().split()]
    while any(process_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(process_alive(p) for p in workers), "the worker outlived its executor"


def test_no_gpu_in_the_worker_is_one_line_and_exit_3(prebuilt_bundle, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("WFBENCH_PLUGINS", raising=False)
    proc = subprocess.run([sys.executable, "-m", "wfbench_core", "execute", str(prebuilt_bundle(("scale_i64",)))],
                          capture_output=True, text=True, timeout=120)
    try:
        import numba.cuda as nc

        if nc.is_available():
            pytest.skip("this machine has a GPU")
    except ImportError:
        pass
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("wfbench: error: ")
    assert "Traceback" not in proc.stderr


def test_repeat_runs_every_case_in_fresh_processes_and_pools_them(fake_gpu, prebuilt_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.stats import HIERARCHICAL_INTERVAL, process_of

    pids = fake_gpu(axpy_f64="ok")
    out = tmp_path / "r.json"
    result = execute(prebuilt_bundle(("scale_i64", "axpy_f64")), registry=Registry.load(), out=out,
                     request=ExecuteRequest(protocol=QUICK, repeat=3))
    assert len(pids.read_text().split()) == 3  # one worker per repeat
    for c in result.cases:
        t = c.timing
        assert c.status == OK and len(t.repeat_gaps) == 3 and t.gap == pytest.approx(1.5)
        assert t.warpforth.n == 3 * 5 and len(t.placement_of) == 15
        assert len(set(process_of(t.placement_of).tolist())) == 3  # the process is a level above the placement
        assert t.gap_lo is None or t.gap_interval == HIERARCHICAL_INTERVAL
    assert load_result(out) == result


def test_a_failure_in_any_repeat_is_the_case_result() -> None:
    import attrs

    from wfbench_core.run.executor import merge_repeats
    from wfbench_core.record.results import FAILED, CaseResult, SideStats, Timing

    stats = SideStats(2.0, 2.0, 0.0, 0.0, 5, (2.0,) * 5)
    ok = CaseResult(id="c", version=1, priority="P0", fingerprint="f", status=OK,
                    timing=Timing(launches_per_sample=1, warpforth=stats, cuda=stats, gap=1.0, order=("wf",) * 5))
    bad = attrs.evolve(ok, status=FAILED, timing=None, message="3 of 9 elements never written")
    merged = merge_repeats([[ok], [bad], [ok]], 0.03)
    assert [(c.status, c.message) for c in merged] == [(FAILED, "repeat 2 of 3: 3 of 9 elements never written")]


def test_a_worker_matches_the_bundle_with_the_plugins_once(prebuilt_bundle, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every case a worker loads comes from its one reading of the manifest (not one per case)."""
    import io

    from wfbench_core.compiling import prepare
    from wfbench_core.gpu.worker import Worker

    read: list[Path] = []
    real = prepare.read_manifest
    monkeypatch.setattr(prepare, "read_manifest", lambda folder: read.append(folder) or real(folder))
    worker = Worker(io.StringIO())
    worker.registry, worker.bundle = Registry.load(), prebuilt_bundle(("scale_i64", "axpy_f64", "transpose_f64"))
    for cid in ("scale_i64", "axpy_f64", "transpose_f64", "axpy_f64"):
        variants = worker._variants(cid)
        assert variants[""].case.id == cid and set(variants[""].files) == {"check", "canonical"}
    assert len(read) == 1
    with pytest.raises(Exception, match="'nope' is not in bundle"):
        worker._variants("nope")
