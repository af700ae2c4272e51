"""wfbench's own GPU tests, run on the GPU host before its bundle (transport option ``gpu_tests=CHECKOUT``).

A rented GPU is the only GPU a CI run has, so the tests that need one (``pytest -m gpu``) run there, on
the same rental, right before the benchmark. ``CHECKOUT`` is a wfbench source checkout: its ``tests/``,
``examples/`` and ``pyproject.toml`` (the markers) are uploaded, pytest is shipped as wheels with
everything else, and the modules holding GPU tests are run with ``-m gpu``. The counts are recorded in
the result (``environment.extra["gpu_tests"]``, JSON) and a test failure does not stop the benchmark:
the job summary reports it and fails the job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from wfbench_core.errors import WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "EXTRA_KEY", "PYTEST_DISTRIBUTIONS", "SHIPPED", "checkout_of", "counts", "describe", "files_to_ship",
    "modules_marked", "pytest_argv", "run_on_host",
]

SHIPPED = ("tests", "tools", "examples", "pyproject.toml")  # tools: the GPU tests of the tools there
EXTRA_KEY = "gpu_tests"
PYTEST_DISTRIBUTIONS = ("pytest",)
#: pytest's exit codes that still produced a report: all passed, some failed, none selected
_REPORTED = (0, 1, 5)


def checkout_of(option: str) -> Path:
    """The ``gpu_tests=`` folder, checked here (before anything is rented)."""
    root = Path(option).expanduser()
    if not (root / "tests" / "conftest.py").is_file() or not (root / "pyproject.toml").is_file():
        raise WfbenchError(f"gpu_tests={option}: not a wfbench checkout (no tests/conftest.py and pyproject.toml)")
    return root


def modules_marked(root: Path, mark: str) -> list[str]:
    """Test modules of a checkout holding tests marked ``mark``, relative to ``root`` (only those are collected:
    the others may import what the machine lacks, such as paramiko or yaml on a GPU host)."""
    pattern = re.compile(rf"pytest\.mark\.{re.escape(mark)}\b")
    return [f"tests/{p.name}" for p in sorted((root / "tests").glob("test_*.py")) if pattern.search(p.read_text())]


def files_to_ship(root: Path) -> Iterable[tuple[Path, str]]:
    """(local file, path relative to the remote folder) of everything the tests need."""
    for name in SHIPPED:
        top = root / name
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for p in paths:
            rel = p.relative_to(root)
            if "__pycache__" in rel.parts or p.suffix == ".pyc" or any(part.endswith(".egg-info") for part in rel.parts):
                continue
            yield p, rel.as_posix()


def pytest_argv(python_env: list[str], remote_root: str, modules: list[str], junit: str) -> list[str]:
    return [*python_env, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
            f"--junitxml={junit}", "--rootdir", remote_root, *(str(PurePosixPath(remote_root, m)) for m in modules)]


def counts(junit_xml: str) -> dict[str, Any]:
    """passed/failed/errors/skipped and the names of the tests that failed, from pytest's JUnit XML."""
    import xml.etree.ElementTree as ET  # here, as json below: the ssh transport imports this module for listing

    try:
        root = ET.fromstring(junit_xml)
    except ET.ParseError as exc:
        raise WfbenchError(f"the GPU tests' report is not JUnit XML ({exc})") from None
    out: dict[str, Any] = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "failed_tests": []}
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        kind = ("failed" if "failure" in kinds else "errors" if "error" in kinds
                else "skipped" if "skipped" in kinds else "passed")
        out[kind] += 1
        if kind in ("failed", "errors"):
            out["failed_tests"].append(f"{case.get('classname', '')}::{case.get('name', '')}")
    return out


def describe(data: dict[str, Any]) -> str:
    """``"31 passed, 0 failed, 0 errors, 2 skipped"``: one home for how the counts read."""
    return ", ".join(f"{data.get(k, 0)} {k}" for k in ("passed", "failed", "errors", "skipped"))


def _upload(run: Any, files: Iterable[tuple[Path, str]], remote_root: str) -> None:
    """Upload (local file, relative path) pairs under ``remote_root``, inside the run's work directory."""
    from wfbench_transports.ssh_run import put_regular

    sftp = run.t.open_sftp()
    try:
        for local, rel in files:
            remote = str(PurePosixPath(remote_root, rel))
            run.mkdirs(sftp, str(PurePosixPath(remote).parent))
            put_regular(sftp, local, remote)
    except OSError as exc:
        raise WfbenchError(f"{run.t.label}: upload to {remote_root} failed: {exc.strerror or exc}") from None
    finally:
        sftp.close()


def run_on_host(run: Any, root: Path, progress: Callable[[str], None]) -> str:
    """Upload, run ``pytest -m gpu`` with the run's Python, return the counts as JSON (for the result)."""
    remote = run.path("wfbench-src")
    modules = modules_marked(root, "gpu")
    if not modules:
        raise WfbenchError(f"gpu_tests={root}: no test module there holds GPU tests")
    _upload(run, files_to_ship(root), remote)
    junit = run.path("gpu-tests.xml")
    progress(f"{run.t.label}: running wfbench's GPU tests there ({len(modules)} modules)")
    done = run.run(pytest_argv(run.env(run.python), remote, modules, junit), timeout=run.t.cfg["setup_timeout"],
                   stream=lambda line: progress(f"[{run.t.hostname}] {line}"), cwd=remote)
    if done.rc not in _REPORTED:
        raise WfbenchError(f"{run.t.label}: pytest -m gpu could not run (exit {done.rc}): {done.error_line()}")
    data = counts(run.read_text(junit))
    progress(f"{run.t.label}: GPU tests: {describe(data)}")
    import json

    return json.dumps(data, sort_keys=True)
