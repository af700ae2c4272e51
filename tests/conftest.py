"""Shared fixtures: real tools when installed, clean skips when not."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from wfbench_core.discover.registry import Registry


def _gpu_reason() -> str | None:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    return gpu_unavailable_reason()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("gpu") for item in items):
        reason = _gpu_reason()
        if reason:
            skip = pytest.mark.skip(reason=f"no GPU: {reason}")
            for item in items:
                if item.get_closest_marker("gpu"):
                    item.add_marker(skip)


@pytest.fixture(scope="session")
def _tool_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the session (shared by the xdist workers, which have one base folder's subfolders)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "tool-cache"


@pytest.fixture(autouse=True)
def _assembled_once(request: pytest.FixtureRequest, _tool_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ptxas and cuobjdump run once per PTX in the session, nvcc once per source, here and in the stand-in GPU's
    worker (tests/tool_cache.py); not for a test on a real GPU, whose diagnostics and compiles overlap its timing."""
    if request.node.get_closest_marker("gpu"):
        return
    import tool_cache  # tests/ is on sys.path for conftest and test modules

    tool_cache.install(monkeypatch.setattr, _tool_cache_dir)
    monkeypatch.setenv(tool_cache.ENV, str(_tool_cache_dir))


@pytest.fixture(scope="session")
def warpforthc() -> Path:
    """The real warpforthc, from WFBENCH_WARPFORTHC or PATH; skips when absent."""
    path = os.environ.get("WFBENCH_WARPFORTHC") or shutil.which("warpforthc")
    if not path or not Path(path).is_file():
        pytest.skip("warpforthc not installed (set WFBENCH_WARPFORTHC or put it on PATH)")
    return Path(path)


@pytest.fixture(scope="session")
def nvcc() -> Path:
    from wfbench_core.compiling.compile import find_nvcc

    path = find_nvcc()
    if path is None:
        pytest.skip("nvcc not installed")
    return path


@pytest.fixture
def prebuilt_bundle(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Make a real bundle for built-in cases from the WarpForth PTX kept in tests/fixtures/ptx."""
    from testkit import stored_ptx_bundle  # tests/testkit.py

    def make(case_ids=("axpy_f64", "scale_i64"), out: Path | None = None) -> Path:  # type: ignore[no-untyped-def]
        return stored_ptx_bundle(tuple(case_ids), out or tmp_path / "bundle")

    return make


# -------------------------------------------------------------------------------------------------
# a real OpenSSH server on 127.0.0.1 (tests/sshd.py), for the ssh and vast transports
# -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One sshd for the session; skips when OpenSSH's server is not installed or cannot start."""
    import sshd as sshd_helper  # tests/ is on sys.path for conftest and test modules

    try:
        server = sshd_helper.start(tmp_path_factory.mktemp("sshd"))
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.skip(f"no local sshd: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def registry() -> Registry:
    """The installed cases (their entry points), loaded once a module; a module may define its own."""
    from wfbench_core.discover.registry import Registry

    return Registry.load()


@pytest.fixture(scope="module")
def host_bundle(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle of scale_i64 from the stored PTX, for the remote transports to run on the host (one a module);
    skips unless this Python (the host's interpreter in these tests) has wfbench's gpu extra."""
    from sshd import gpu_stack_missing  # tests/sshd.py
    from testkit import stored_ptx_bundle  # tests/testkit.py

    if gpu_stack_missing():  # this Python plays the GPU host's interpreter (never a venv from PyPI in tests)
        pytest.skip(f"the host's Python needs wfbench's gpu extra: {gpu_stack_missing()}")
    return stored_ptx_bundle(("scale_i64",), tmp_path_factory.mktemp("host") / "bundle", registry)
