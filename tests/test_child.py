"""Child processes, for real: they die with their parent, are killed whole at their deadline, say why they
ended, and load the plugins their parent names. No stand-ins: every test starts real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wfbench_core.gpu import child
from testkit import process_alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the death signal is Linux's")



def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_alive(pid)


def _wait_for(path: Path, within_s: float = 30.0) -> str:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    pytest.fail(f"{path} never appeared")


def _parent(code: str) -> subprocess.Popen:
    """A real parent process (killed by the test) running ``code``."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.DEVNULL)


def test_a_child_dies_with_its_parent(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    parent = _parent(f"""
        import time
        from pathlib import Path
        from wfbench_core.gpu.child import Child
        c = Child(["sleep", "600"])
        Path({str(pid_file)!r}).write_text(str(c.pid))
        time.sleep(600)
    """)
    pid = int(_wait_for(pid_file))
    assert process_alive(pid)
    assert os.getpgid(pid) == pid  # its own process group
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    assert _gone(pid), "the child outlived its parent"


def test_a_sanitizer_child_dies_with_its_worker(tmp_path: Path) -> None:
    """compute-sanitizer (here a script that sleeps) ends when the process that started it is killed."""
    pid_file = tmp_path / "sanitizer.pid"
    script = tmp_path / "compute-sanitizer"
    script.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 600\n")
    script.chmod(0o755)
    parent = _parent(f"""
        from pathlib import Path
        from wfbench_core.discover.registry import Registry
        from wfbench_core.gpu import sanitize
        case = Registry.load().case("axpy_f64")
        sanitize.sanitize_case(case, "wf", ".version 8.0\\n", "axpy_f64", sanitizer=Path({str(script)!r}),
                               timeout_s=600)
    """)
    pid = int(_wait_for(pid_file))
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    assert _gone(pid), "compute-sanitizer outlived the process that started it"


def test_at_its_deadline_the_whole_group_is_killed(tmp_path: Path) -> None:
    """A child that started a child of its own: at the deadline both end."""
    ended = child.run(["sh", "-c", f"sleep 600 & echo $! > {tmp_path / 'grandchild'}; wait"], timeout_s=1.0)
    assert ended.returncode is None  # ended at the deadline, not by the sleep's own end
    grandchild = int(_wait_for(tmp_path / "grandchild"))
    assert _gone(grandchild), "the grandchild outlived the deadline"


def test_a_finished_child_gives_its_output_and_status() -> None:
    ended = child.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                      timeout_s=60)
    assert (ended.returncode, ended.stdout, ended.stderr) == (3, "out", "err")


def test_the_end_reason_names_the_status_and_the_last_lines() -> None:
    c = child.Child([sys.executable, "-c", "import sys\nfor n in range(30): print(f'line {n}', file=sys.stderr)\n"
                                           "sys.exit(4)"], echo=False)
    assert c.wait(timeout=60) == 4
    assert c.end_reason("the worker") == "the worker exited unexpectedly (exit 4); its last output: line 27 | line 28 | line 29"
    c = child.Child([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], echo=False)
    c.wait(timeout=60)
    assert c.end_reason("the worker", signal_hint="the driver took it down") == \
        "the worker died (SIGSEGV); the driver took it down"


def test_the_plugin_recipe_reaches_the_child() -> None:
    """Autoload off and one case module named: the child's registry holds exactly that case."""
    probe = [sys.executable, "-c", "from wfbench_core.discover.registry import Registry; "
                                   "print(','.join(sorted(Registry.load().cases)))"]
    ended = child.run(probe, timeout_s=120, recipe=(False, ("wfbench_cases.scale_i64",)))
    assert (ended.returncode, ended.stdout) == (0, "scale_i64"), ended.stderr
    ended = child.run(probe, timeout_s=120, recipe=(True, ()))
    assert "scale_i64" in ended.stdout and "axpy_f64" in ended.stdout


def test_plugin_env_adds_to_what_is_named() -> None:
    env = child.plugin_env((False, ("b", "a")), base={"WFBENCH_PLUGINS": "a,c"})
    assert env["WFBENCH_PLUGINS"] == "a,c,b" and env["WFBENCH_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep) == [p for p in sys.path if p]
    inherited = child.plugin_env(None, base={"WFBENCH_PLUGINS": "a"})
    assert inherited["WFBENCH_PLUGINS"] == "a" and "WFBENCH_DISABLE_PLUGIN_AUTOLOAD" not in inherited


def test_every_worker_message_crosses_as_one_typed_line() -> None:
    import io

    from wfbench_core.gpu import messages as msg
    from wfbench_core.gpu.worker import Worker
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import CompilerInfo, Environment

    samples = [msg.Init("bundle", ExecuteRequest(case_ids=("a",)), True, ("a", "b")), msg.RunCase("a"),
               msg.RunPoint("a", 2, "graph"), msg.Exit(),
               msg.Ready(Environment(gpu_name="G"), CompilerInfo(kind="nvcc", version="13.0"), "sm_90"),
               msg.Results(()), msg.CaseError("why", restart=True), msg.Fatal("no GPU", 3), msg.ProgressLine("p"),
               msg.Arm(10.0, "a launch"), msg.Disarm()]
    assert {type(m).__name__ for m in samples} == {t.__name__ for t in msg.Message.__args__}  # type: ignore[attr-defined]
    for m in samples:
        line = msg.encode(m)
        assert line.endswith("\n") and line.count("\n") == 1 and msg.decode(line) == m
    out = io.StringIO()
    Worker(out).serve(iter([b'{"op": "case", "id": "a"}\n']))  # an old or foreign protocol: refused in one line
    reply = msg.decode(out.getvalue())
    assert isinstance(reply, msg.Fatal) and reply.message.startswith("the GPU worker got not a worker message")
