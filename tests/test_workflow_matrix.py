"""gpu-bench.yml's GPU-model matrix, run: plan -> bench[one rental per model, in parallel] -> summary ->
persist[the storable models] / comment, every step's script for real (the runner of tests/workflow_kit.py).

The rentals go through the real vast transport and the real ``vastai`` SDK to the stand-in of Vast.ai's HTTP API
(tests/vast_api.py), whose state is checked at the end: every instance destroyed, exactly once. A rented
instance is the real OpenSSH server on 127.0.0.1 (tests/sshd.py); only its Python plays the GPU of the model
rented (it answers the executor's run from a recorded H200 run, renamed to that GPU, and ``pytest -m gpu``
with a report). The pull-request comment of a run: tests/test_workflows_gpu_bench.py.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

import workflow_kit as tw
from sshd import gpu_stack_missing
from vast_api import VastApi, offer

pytest.importorskip("paramiko")
pytest.importorskip("vastai")

#: the GPU host's Python, for one model: everything runs for real but the executor's timed run and pytest -m gpu
GPU_HOST = r'''
import sys, time
from pathlib import Path

import attrs

reported, cc, recorded, barrier, expected, *argv = sys.argv[1:]
if argv[:2] == ["-m", "pytest"]:  # wfbench's GPU tests: one passed, in pytest's JUnit report
    junit = next(a.split("=", 1)[1] for a in argv if a.startswith("--junitxml="))
    Path(junit).write_text('<testsuites><testsuite name="pytest"><testcase classname="tests.test_gpu" '
                           'name="test_on_the_gpu"/></testsuite></testsuites>')
    sys.exit(0)

from wfbench_core.compiling.bundle import read_manifest
from wfbench_core.record.request import ExecuteRequest
from wfbench_core import SUITE_VERSION, __version__
from wfbench_core.record.results import SCHEMA_VERSION, dumps, load_result

def opt(name):
    return argv[argv.index(name) + 1]

# every model that gets here waits for the others: the rentals are alive at the same time
Path(barrier, reported).touch()
deadline = time.monotonic() + 120
while len(list(Path(barrier).iterdir())) < int(expected) and time.monotonic() < deadline:
    time.sleep(0.05)
manifest = read_manifest(Path(argv[argv.index("execute") + 1]))
request = ExecuteRequest.from_json(Path(opt("--request")).read_text())
run = load_result(recorded)
env = attrs.evolve(run.environment, gpu_name=reported, compute_capability=cc, gpu_uuid="GPU-" + reported.split()[-1])
# the recorded figures, for the cases and the PTX this bundle holds (what the local side checks the result against)
recorded_cases = {c.id: c for c in run.cases if not c.compiler_label}
cases = []
for e in manifest.cases:
    if request.case_ids and e.id not in request.case_ids:
        continue
    sent = e.configs["canonical"].compile_wf
    cases.append(attrs.evolve(recorded_cases[e.id], fingerprint=e.fingerprint, version=e.version, compile_wf=sent,
                              warpforth_source_sha256=sent.source_sha256, mode=request.mode))
Path(opt("--out")).write_text(dumps(attrs.evolve(
    run, cases=tuple(cases), source=manifest.source, protocol=request.protocol, mode=request.mode,
    warpforthc=manifest.warpforthc, environment=env, schema_version=SCHEMA_VERSION, wfbench_version=__version__,
    suite_version=SUITE_VERSION)))
'''

#: the real vast transport; only what the rented machine is like comes from the test (STAND_IN_HOSTS)
RENTAL_PLUGIN = '''
import json, os

from wfbench_core import hookimpl
from wfbench_transports.vast import VastTransport


class Rental(VastTransport):
    def __init__(self, **options):
        hosts = json.loads(os.environ["STAND_IN_HOSTS"])
        super().__init__(**{**options, **hosts["common"], "python": hosts["python"][options["gpu_name"]]})


@hookimpl
def wfbench_register_transports(register):
    register("vast", Rental)
'''

# (pinned key, Vast.ai's name, what the GPU reports, compute capability, $/hour offered)
MODELS = [("RTX_4090", "RTX 4090", "NVIDIA GeForce RTX 4090", 890, 0.40),
          ("L40S", "L40S", "NVIDIA L40S", 890, 0.80),
          ("H200", "H200", "NVIDIA H200", 900, 3.00)]
FAILS = "L40S"  # its host's container never starts
START_ERROR = "Error response from daemon: could not select device driver with capabilities: [[gpu]]"


def rental_world(tmp_path: Path, sshd: Any, api: VastApi, expected: int) -> tw.World:
    world = tw.World(tmp_path)
    py = tmp_path / "rental-py"
    py.mkdir()
    (py / "stand_in_rental.py").write_text(RENTAL_PLUGIN)
    (tmp_path / "gpu_host.py").write_text(GPU_HOST)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    pythons = {}
    for key, _, reported, cc, _ in MODELS:
        wrapper = tmp_path / "hosts" / key / "python"
        wrapper.parent.mkdir(parents=True)
        args = " ".join(shlex.quote(a) for a in (sys.executable, str(tmp_path / "gpu_host.py"), reported,
                                                 f"{cc // 100}.{cc // 10 % 10}", str(tw.FIXTURES / "h200-suite1.json"),
                                                 str(barrier), str(expected)))
        wrapper.write_text('#!/bin/sh\ncase " $* " in\n  *" -m wfbench_core execute "*" --out "*|*" -m pytest "*)\n'
                           f'    exec {args} "$@" ;;\nesac\nexec {shlex.quote(sshd.python)} "$@"\n')
        wrapper.chmod(0o755)
        pythons[key] = str(wrapper)
    common = {"user": sshd.user, "remote_tmp": str(sshd.remote_tmp), "env": "reuse", "poll_s": "0.05",
              "wait_running_s": "30", "wait_ssh_s": "30", "connect_timeout": "5", "api_timeout_s": "5",
              "destroy_retries": "2", "api_url": api.url}
    plugins = [m for m in world.env["WFBENCH_PLUGINS"].split(",") if m != "stand_in_vast"] + ["stand_in_rental"]
    world.env.update(PYTHONPATH=f"{py}{os.pathsep}{tw.ROOT}", WFBENCH_PLUGINS=",".join(plugins), VAST_URL=api.url,
                     STAND_IN_HOSTS=json.dumps({"common": common, "python": pythons}))
    return world


def job_graph(wf: dict[str, Any], results: dict[str, str], runners: dict[str, Any]) -> str:
    """The jobs as they ran, in order: a matrix job with its legs."""
    out = []
    for name in wf["jobs"]:
        legs = sorted(k.split("/", 1)[1] for k in runners if k.startswith(f"{name}/"))
        out.append(f"{name}{'[' + ', '.join(legs) + ']' if legs else ''}: {results[name]}")
    return " -> ".join(out)


def test_one_rental_per_model_in_parallel_one_failing_all_destroyed_and_merged(tmp_path: Path, sshd: Any) -> None:
    if gpu_stack_missing():  # this Python plays the GPU host's interpreter
        pytest.skip(f"the host's Python needs wfbench's gpu extra: {gpu_stack_missing()}")
    offers = [offer(i, name, cc=cc, dph=dph) for i, (_, name, _, cc, dph) in enumerate(MODELS, 1)]
    fails = next(i for i, m in enumerate(MODELS, 1) if m[0] == FAILS)
    api = VastApi(offers, "k3y", sshd=sshd, fail_start={fails: START_ERROR}).start()
    try:
        world = rental_world(tmp_path, sshd, api, expected=len(MODELS) - 1)
        wf = tw.load("gpu-bench.yml")
        gh = {**tw.github_ctx("workflow_dispatch", inputs={"gpu-models": "RTX 4090, L40S@1.00, H200@3.50",
                                                           "max-total-cost": "3.00"}),
              "vars": {"WFBENCH_VAST_API_URL": api.url}}  # the repository variable: the stand-in's address
        results, runners = world.simulate(wf, gh)
    finally:
        api.stop()
    graph = job_graph(wf, results, runners)
    print(graph)
    assert graph == ("plan: success -> build[H200, L40S, RTX_4090]: success -> "
                     "bench[H200, L40S, RTX_4090]: failure -> summary: failure -> "
                     "comment: skipped -> persist[H200, RTX_4090]: success"), "\n".join(r.text for r in runners.values())
    # three rentals, two of them alive at once; each destroyed exactly once, nothing left on the host
    assert len(api.created) == 3 and api.leaked() == [] and api.peak >= 2
    assert {i: api.destroyed.get(i, 0) for i in api.created} == {i: 1 for i in api.created}
    assert sorted(b["label"] for b in api.bodies["create"]) == [f"wfbench-ci-4242-{k}" for k in ("H200", "L40S", "RTX_4090")]
    assert sshd.leftovers() == []
    # each leg rented its own model within its own cap; the failed one failed its benchmark step and cleaned up
    for key, _, _, _, _ in MODELS:
        leg = runners[f"bench/{key}"]
        assert leg.outcome("Benchmark (GPU tests") == (["failure"] if key == FAILS else ["success"]), leg.text[-3000:]
        assert leg.outcome("Destroy any instance left") == ["success"] and leg.outcome("Upload the raw result") == ["success"]
    plan = {leg["gpu"]: (leg["max-dph"], leg["max-cost"]) for leg in json.loads(runners["plan"].outputs["matrix"])}
    assert plan == {"RTX_4090": ("0.50", "0.2500"), "L40S": ("1.00", "0.5000"), "H200": ("3.50", "1.7500")}
    # the summary merges the two good models and names the failed one with its reason
    summary = runners["summary"]
    assert "| RTX_4090 (sm_89) | head alone |" in summary.summary and "| H200 (sm_90) | head alone |" in summary.summary
    (l40s,) = [ln for ln in summary.summary.splitlines() if ln.startswith("| L40S (sm_89)")]
    assert "stopped while starting (exited: Error response from daemon" in l40s
    assert "| case | RTX_4090 | L40S | H200 |" in summary.summary
    assert summary.outcome("Merge the verdicts") == ["failure"]
    assert "::error::L40S: " in summary.text and "storable: RTX_4090, H200" in summary.text
    # each storable model is stored as its own series
    from wfbench_core.review.history import History

    work = tmp_path / "history-branch"
    tw.git("clone", "-q", "-b", "benchmark-data", str(world.origins[tw.REPO]), str(work), cwd=tmp_path)
    history = History.open(work / "history")
    assert sorted(e.gpu_name for e in history.runs.values()) == ["NVIDIA GeForce RTX 4090", "NVIDIA H200"]
    for case in tw.SIM_CASES:
        assert sorted(s.key.gpu_name for s in history.series.values() if s.key.case_id == case) == \
            ["NVIDIA GeForce RTX 4090", "NVIDIA H200"]
