"""No program wfbench starts sees a credential: warpforthc, nvcc, ptxas and the GPU worker are handed the
environment of :func:`wfbench_core.host.childenv.child_env`, which drops ``VAST_API_KEY`` and every other secret.

Each program is a real executable standing in for the tool (it writes the environment it was given to a
file, then does the tool's job well enough for wfbench to go on), reached through the real code path: the
``wfbench build`` command for warpforthc and nvcc, the PTX check for ptxas, the executor for its worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from wfbench_core.host.childenv import child_env, is_secret
from wfbench_core.cli import main

import standins  # tests/standins.py

FIXTURES = Path(__file__).parent / "fixtures"
SECRETS = {"VAST_API_KEY": "vast-s3cret", "NGC_API_KEY": "ngc-s3cret", "GITHUB_TOKEN": "ghs_s3cret",
           "AWS_SECRET_ACCESS_KEY": "aws-s3cret", "SSH_AUTH_SOCK": "/tmp/agent.sock"}


def _stand_in(folder: Path, name: str, job: str) -> Path:
    """An executable ``folder/name`` that appends its environment (JSON, one line) to ``folder/name.env``."""
    path = folder / name
    path.write_text(standins.shebang() + "\n" + textwrap.dedent(f"""\
        import json, os, sys
        with open({str(folder / (name + '.env'))!r}, "a") as fh:
            fh.write(json.dumps(dict(os.environ)) + "\\n")
        args = sys.argv[1:]
    """) + textwrap.dedent(job))
    path.chmod(0o755)
    return path


def _seen(folder: Path, name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (folder / f"{name}.env").read_text().splitlines()]


WARPFORTHC_JOB = f"""
if args == ["--help"]:
    print("usage: warpforthc FILE -o OUT")
elif args == ["--version"]:
    print("warpforthc version 0.0.1-stand-in")
else:
    ptx = open({str(FIXTURES / "ptx" / "scale_i64.canonical.ptx")!r}).read()
    open(args[args.index("-o") + 1], "w").write(ptx)
"""

NVCC_JOB = """
if args == ["--version"]:
    print("Cuda compilation tools, release 13.0, V13.0.48")
else:
    open(args[args.index("-o") + 1], "w").write(".version 8.0\\n.target sm_80\\n.address_size 64\\n")
"""


def test_the_names_of_secrets() -> None:
    for name in SECRETS:
        assert is_secret(name), name
    for name in ("PATH", "HOME", "CUDA_HOME", "LD_LIBRARY_PATH", "PYTHONPATH", "WFBENCH_WARPFORTHC", "KEYBOARD",
                 "XAUTHORITY", "MONKEY_WRENCH", "TERM"):
        assert not is_secret(name), name


def test_warpforthc_and_nvcc_of_a_build_see_no_secret(tmp_path: Path) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    warpforthc = _stand_in(tools, "warpforthc", WARPFORTHC_JOB)
    _stand_in(tools, "nvcc", NVCC_JOB)
    env = {**SECRETS, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "WFBENCH_MARKER": "kept"}
    r = CliRunner().invoke(main, ["build", "-c", "scale_i64", "--warpforthc", str(warpforthc), "--check-cuda",
                                  "-o", str(tmp_path / "bundle"), "-q"], env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    for tool, calls in (("warpforthc", 4), ("nvcc", 2)):  # --help, --version, two configurations; a version, a compile
        seen = _seen(tools, tool)
        assert len(seen) >= calls, tool
        for environ in seen:
            assert not set(SECRETS) & set(environ), (tool, sorted(set(SECRETS) & set(environ)))
            assert environ["WFBENCH_MARKER"] == "kept" and environ["PATH"].startswith(str(tools)), tool
    assert not any(value in (tools / "warpforthc.env").read_text() for value in SECRETS.values())


def test_the_stand_in_would_see_an_inherited_secret(tmp_path: Path) -> None:
    """The control: started with the environment as it is, the same stand-in writes the key out."""
    warpforthc = _stand_in(tmp_path, "warpforthc", WARPFORTHC_JOB)
    subprocess.run([str(warpforthc), "--version"], env={**os.environ, **SECRETS}, check=True, capture_output=True)
    assert _seen(tmp_path, "warpforthc")[0]["VAST_API_KEY"] == SECRETS["VAST_API_KEY"]


def test_ptxas_sees_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wfbench_core.compiling.compile import ptxas_check

    _stand_in(tmp_path, "ptxas", "print('ptxas info    : 0 bytes gmem', file=sys.stderr)\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    ptxas_check((FIXTURES / "ptx" / "scale_i64.check.ptx").read_text(), arch="sm_90", case_id="scale_i64")
    (environ,) = _seen(tmp_path, "ptxas")
    assert not set(SECRETS) & set(environ)


def test_the_gpu_worker_sees_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prebuilt_bundle,  # type: ignore[no-untyped-def]
                                       nvcc: Path) -> None:
    """The executor's worker runs third-party case plugins: a timer plugin there writes out what it was given."""
    from wfbench_core.run.executor import execute
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.request import ExecuteRequest

    seen = tmp_path / "worker.env"
    (tmp_path / "env_timer.py").write_text(textwrap.dedent(f"""\
        import json, os
        from wfbench_core import hookimpl
        from wfbench_core.errors import WfbenchError
        from wfbench_core.record.results import Environment

        class Timer:
            def __init__(self, protocol):
                open({str(seen)!r}, "w").write(json.dumps(dict(os.environ)))
            def environment(self):
                return Environment(gpu_name="stand-in", compute_capability="9.0")
            def copy_gbps(self):
                return None
            def measure(self, case, sides, *, reference_label):
                raise WfbenchError("the stand-in measures nothing")

        @hookimpl(tryfirst=True)
        def wfbench_make_timer(protocol):
            return Timer(protocol)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("WFBENCH_PLUGINS", "env_timer")
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    result = execute(prebuilt_bundle(("scale_i64",)), registry=Registry.load(), request=ExecuteRequest())
    assert [c.message for c in result.cases] == ["the stand-in measures nothing"]
    environ = json.loads(seen.read_text())
    assert environ["WFBENCH_PLUGINS"] == "env_timer" and not set(SECRETS) & set(environ)


def test_child_env_adds_to_the_scrubbed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAST_API_KEY", "x")
    env = child_env({"PYTHONPATH": "/p"})
    assert "VAST_API_KEY" not in env and env["PYTHONPATH"] == "/p" and env["PATH"] == os.environ["PATH"]
    assert os.environ["VAST_API_KEY"] == "x"  # this process keeps it: the Vast transport reads it here


def test_run_with_a_prebuilt_bundle_runs_no_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                                     prebuilt_bundle, nvcc: Path) -> None:
    """``wfbench run --bundle``: the bundle built in a step without the key is executed by the step with it,
    which starts no warpforthc (the stand-in on PATH and in WFBENCH_WARPFORTHC would record a call)."""
    from wfbench_core.record.results import OK, load_result

    tests = Path(__file__).parent
    tools = tmp_path / "bin"
    tools.mkdir()
    warpforthc = _stand_in(tools, "warpforthc", WARPFORTHC_JOB)
    bundle = prebuilt_bundle(("scale_i64", "axpy_f64"))
    env = {"PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")]),
           "WFBENCH_PLUGINS": "fake_gpu", "FAKE_GPU_BEHAVIOUR": "", "WFBENCH_WARPFORTHC": str(warpforthc),
           "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", **SECRETS}
    monkeypatch.syspath_prepend(str(tests))
    out = tmp_path / "run.json"
    r = CliRunner().invoke(main, ["run", "--bundle", str(bundle), "-c", "axpy_f64", "-o", str(out), "-q",
                                  "--samples", "5", "--min-samples", "5"], env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert [(c.id, c.status) for c in load_result(out).cases] == [("axpy_f64", OK)]
    assert not (tools / "warpforthc.env").exists()  # no compiler ran

    refused = CliRunner().invoke(main, ["run", "--bundle", str(bundle), "--warpforthc", str(warpforthc)], env=env)
    assert refused.exit_code == 2 and "leave out --warpforthc" in refused.stderr
    (bundle / "scale_i64" / "check.ptx").write_text("tampered")
    refused = CliRunner().invoke(main, ["run", "--bundle", str(bundle)], env=env)
    assert refused.exit_code == 2 and "does not match the hash" in refused.stderr  # checked before any rental
