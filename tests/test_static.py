"""The static checks: strict types (mypy) and the lint rules (ruff) of pyproject.toml hold on the product code.

Both run as their own command line would, from the repository root, so their configuration is the project's
own; a failure shows their report. They are in the dev extra; without them the checks skip, saying so.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("wfbench_core", "wfbench_transports", "wfbench_cases")


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip(module, reason=f"{module} is in the dev extra: pip install -e '.[dev]'")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


def test_mypy_strict_passes() -> None:
    import numpy

    if tuple(int(x) for x in numpy.__version__.split(".")[:2]) < (2, 3):
        # numpy's stubs before 2.3 give ndarray no default type arguments: strict mode then asks for them on
        # every bare np.ndarray (numpy 2.3 and later need Python 3.11)
        pytest.skip(f"the strict type check is kept against numpy 2.3's stubs or later; this is numpy "
                    f"{numpy.__version__}")
    done = _run("mypy")  # the packages and strictness come from [tool.mypy]
    assert done.returncode == 0, f"mypy found type errors:\n{done.stdout}{done.stderr}"


def test_ruff_passes() -> None:
    done = _run("ruff", "check", "--no-cache", *PRODUCT)
    assert done.returncode == 0, f"ruff found problems:\n{done.stdout}{done.stderr}"
