"""A pyproject.toml as data: tomllib from Python 3.11 on, the tomli package before (the dev extra brings it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib


def entry_points(pyproject: Path, group: str = "wfbench") -> dict[str, str]:
    """The entry points of ``group`` that ``pyproject`` declares."""
    return load(pyproject)["project"]["entry-points"][group]  # type: ignore[no-any-return]


def load(pyproject: Path) -> dict[str, Any]:
    return tomllib.loads(pyproject.read_text())
