"""The broken-kernel plugin installs as its README says, ``pip install --no-build-isolation --no-deps
./examples/broken-cases``, into a fresh virtual environment: with the setuptools that environment brings
(65 on Python 3.11, which rejected ``license = "MIT"``) and with the newest one. Each run makes a real venv
and installs through the real pip; it is skipped where no package index can be reached."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parent.parent / "examples" / "broken-cases"


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("setuptools", ["the venv's own", "setuptools>=77"])
def test_installs_without_build_isolation_in_a_fresh_venv(tmp_path: Path, setuptools: str) -> None:
    from pyproject_data import entry_points

    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, capture_output=True,
                   timeout=300)
    python = tmp_path / "venv" / "bin" / "python"
    wanted = ["wheel"]  # setuptools < 70.1 builds wheels with the wheel package
    if setuptools != "the venv's own":
        wanted.append(setuptools)
    elif _pip(python, "show", "setuptools").returncode != 0:
        wanted.append("setuptools<77")  # Python 3.12+ venvs bring none: the last one without license expressions
    got = _pip(python, "install", "-q", *wanted)
    if got.returncode != 0:
        pytest.skip(f"cannot install {' '.join(wanted)} here (no package index?): {got.stderr.strip()[-200:]}")
    version = _pip(python, "show", "setuptools").stdout.split("Version:")[1].split()[0]

    r = _pip(python, "install", "--no-build-isolation", "--no-deps", str(PLUGIN))
    assert r.returncode == 0, f"setuptools {version}: {r.stdout}\n{r.stderr}"
    names = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(' '.join(sorted(e.name for e "
                            "in m.distribution('wfbench-broken-cases').entry_points if e.group == 'wfbench')))"],
                           capture_output=True, text=True, check=True, timeout=120, cwd=tmp_path).stdout.split()
    declared = entry_points(PLUGIN / "pyproject.toml")
    assert names == sorted(declared), f"setuptools {version}"
