"""The workflow tests, ci.yml and pages.yml: .ci/run on GitHub's Ubuntu runner and the project's Debian CI machine, and single steps (the Pages build, the cleanup of rented instances, the pre-rental compile) run for real.

The machinery (the evaluator, the runner, the stand-ins) is tests/workflow_kit.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from workflow_kit import (  # tests/ is on sys.path
    FAKE_VASTAI,
    FIXTURES,
    ROOT,
    World,
    action_step,
    github_ctx,
    load,
    matrix_legs,
    pr_ctx,
    ran,
    resolved_env,
    run_jobs,
    run_step,
    step_of,
)


# -------------------------------------------------------------------------------------------------
# ci.yml, run: .ci/run on GitHub's Ubuntu runner and on the project's Debian CI machine
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("os_id,browser", [("ubuntu", []), ("debian", ["chromium"])])
def test_ci_yml_runs_ci_run_with_the_systems_browser(tmp_path: Path, os_id: str, browser: list[str]) -> None:
    wf = load("ci.yml")
    for gh in (github_ctx("push", ref="refs/heads/topic"),
               pr_ctx("opened", labels=[], added=None, actor="someone", triggering_actor="someone",
                      head_repo="someone/fork")):
        assert ran(run_jobs(wf, gh)) == {"test"}
    world = World(tmp_path)
    (tmp_path / "os-release").write_text(f'ID={os_id}\nVERSION_CODENAME=x\n')
    world.env["OS_RELEASE"] = str(tmp_path / "os-release")
    results, runners = world.simulate(wf, github_ctx("push"))
    assert results == {"test": "success"}, "\n".join(r.text for r in runners.values())
    installs = [line for line in world.stubbed("apt-get") if " install " in line]
    assert len(installs) == 2  # one a leg
    expected = ["openssh-server", "openssh-client", "shellcheck", *browser]
    for install in installs:
        assert install.split()[-len(expected):] == expected and ("chromium" in install.split()) == bool(browser)
    assert any("-e .[dev,vast,gpu]" in line for line in world.stubbed("pip"))
    assert world.stubbed("pytest") == ["pytest -m pytest -q -n auto --dist loadfile"] * 2

    world.log.write_text("")
    world.env["STAND_IN_PYTEST_RC"] = "1"  # a failing test fails the job
    results, _ = world.simulate(wf, github_ctx("push"))
    assert results == {"test": "failure"}


def test_ci_yml_tests_the_oldest_python_the_project_accepts() -> None:
    """The legs of ci.yml's test job: the floor of pyproject.toml's requires-python, and a newer Python, each
    the one setup-python gives .ci/run."""
    from pyproject_data import load as load_pyproject

    floor = load_pyproject(ROOT / "pyproject.toml")["project"]["requires-python"]
    legs = [leg["python"] for leg in matrix_legs(load("ci.yml"), "test", github_ctx("push"), {}) or []]
    assert floor == ">=" + legs[0] and len(legs) == 2
    assert tuple(map(int, legs[1].split("."))) > tuple(map(int, legs[0].split(".")))
    (setup,) = [s for s in load("ci.yml")["jobs"]["test"]["steps"] if "setup-python" in s.get("uses", "")]
    assert setup["with"]["python-version"] == "${{ matrix.python }}"


def test_pages_build_script_with_and_without_history(tmp_path: Path) -> None:
    wf = load("pages.yml")
    step = step_of(wf, "build", "Build the site")
    assert step["shell"] == "bash"
    env = resolved_env(wf, github_ctx("push"))
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "failure"}})  # no such branch yet
    assert proc.returncode == 0, proc.stderr
    assert "0 series from 0 runs" in proc.stdout and (tmp_path / "site" / "index.html").is_file()

    shutil.rmtree(tmp_path / "site")
    data = tmp_path / "history-data"
    subprocess.run(["wfbench", "history", "add", str(FIXTURES / "h200-run1.json"), "--history",
                    str(data / "history")], env=env, check=True, capture_output=True)
    (data / "github-action-benchmark").mkdir()
    (data / "github-action-benchmark" / "data.json").write_text("{}")
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "success"}})
    assert proc.returncode == 0, proc.stderr
    assert "from 1 runs" in proc.stdout
    assert (tmp_path / "site" / "github-action-benchmark" / "data.json").is_file()


def test_cleanup_step_destroys_exactly_this_labels_instances(tmp_path: Path) -> None:
    import json
    import os
    import sys

    step = action_step("Destroy any instance left")
    (tmp_path / "vastai").mkdir()
    (tmp_path / "vastai" / "__init__.py").write_text(FAKE_VASTAI)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "RUNNER_TEMP": str(tmp_path)}
    env.pop("VAST_API_KEY", None)
    key = tmp_path / "wfbench-vast-api-key"  # handed over by the step before the benchmark
    key.write_text("k3y\n")
    log = tmp_path / "destroyed"
    gh = {**github_ctx("push"), "repository_id": "4242"}
    steps = {"check": {"outputs": {"venv": str(venv)}}}
    instances = [{"id": 1, "label": "wfbench-ci-4242-H200"}, {"id": 2, "label": "someone-else"},
                 {"id": 3, "label": "wfbench-ci-4242-H200"}, {"id": 4, "label": "wfbench-ci-4242-RTX_4090"}]
    env.update(FAKE_INSTANCES=json.dumps(instances), FAKE_LOG=str(log))
    inputs = {"vast-api-key": "k3y", "gpu-name": "H200",  # another model's job may be renting right now
              "vast-api-url": "https://console.vast.ai"}
    proc = run_step(step, tmp_path, env, steps=steps, inputs=inputs, github=gh)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert log.read_text().split() == ["1", "3"]
    assert "2 instance(s) with label wfbench-ci-4242-H200 found, 2 destroyed" in proc.stdout
    assert not key.exists()  # the key file is removed once the clean-up has used it

    log.unlink()
    key.write_text("k3y\n")
    proc = run_step(step, tmp_path, {**env, "FAKE_REFUSE": "[3]"}, steps=steps, inputs=inputs, github=gh)
    assert proc.returncode == 1 and "::error::could not destroy instance 3: run 'vastai destroy instance 3 -y'" \
        in proc.stdout

    proc = run_step(step, tmp_path, env, steps=steps, inputs=inputs, github=gh)  # no key handed over
    assert proc.returncode == 0 and "nothing can have been rented" in proc.stdout
    key.write_text("k3y\n")

    # the job failed before wfbench (and the SDK) was installed: nothing to clean up
    proc = run_step(step, tmp_path, env, steps={"check": {"outputs": {"venv": str(tmp_path / "none")}}},
                    inputs=inputs, github=gh)
    assert proc.returncode == 0 and "never installed" in proc.stdout, proc.stdout + proc.stderr


def test_the_pre_rental_compile_with_the_real_warpforthc(tmp_path: Path) -> None:
    """The action's compile step with a real warpforthc; and that binary names its libdevice by absolute path."""
    import os
    import sys

    real = os.environ.get("WFBENCH_WARPFORTHC") or shutil.which("warpforthc")
    if not real or not Path(real).is_file():
        pytest.skip("no warpforthc (set WFBENCH_WARPFORTHC or put it on PATH)")
    # the build folder of its bitcode, as an absolute path (how the linker lays out the rest of the string -
    # a doubled slash, bytes shared with another literal - depends on the build, so only that much is looked for)
    embedded = re.search(rb"(/[\x21-\x7e]+?/lib/Bitcode/)", Path(real).read_bytes())
    assert embedded, "warpforthc no longer embeds the path of its libdevice bitcode: revisit docs/ci.md"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "wfbench").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m wfbench_core "$@"\n')
    (venv / "bin" / "wfbench").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RUNNER_TEMP": str(tmp_path)}
    results = tmp_path / "results"  # what the step before wrote: the compilers, one a line
    results.mkdir()
    (results / "compilers.txt").write_text(f"{Path(real).resolve()}\n")
    steps = {"check": {"outputs": {"venv": str(venv), "results": str(results)}}}
    proc = run_step(action_step("Compile every selected case"), tmp_path, env, steps=steps,
                    inputs={"priority": "P0", "gpu-arch": "sm_90"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"bundle .*results/bundle: (\d+) of \1 case\(s\) built", proc.stdout), proc.stdout
    assert (results / "base-commit").read_text() == "\n"  # head alone: what the execute job reads
