"""The entry points of one group, read as :mod:`importlib.metadata` reads them, without importing it.

Importing :mod:`importlib.metadata` brings the email parser with it, which costs ``wfbench list`` about a sixth
of its time. Entry points are plain files: ``entry_points.txt`` (an INI text) in each ``*.dist-info`` and
``*.egg-info`` folder of each folder on :data:`sys.path`. :func:`find` reads them in the order of
``importlib.metadata.distributions()``, and reads a distribution's name only when it has an entry point of the
group. Where that order is not only folders (a zip archive or an ``.egg`` on the path, a finder of its own
on :data:`sys.meta_path`), :mod:`importlib.metadata` answers instead.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import importlib.metadata

__all__ = ["EntryPoint", "find"]  # internal, not the plugin API

#: the form of an entry point's value: ``module``, ``module:attr.attr``, either with ``[extras]``
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class EntryPoint:
    """One entry point: ``name = value`` in a group, and the distribution that declares it."""

    __slots__ = ("_distribution", "_read_name", "name", "value")

    def __init__(self, name: str, value: str, distribution: Callable[[], str]) -> None:
        self.name = name
        self.value = value
        self._read_name = distribution
        self._distribution: str | None = None

    @property
    def distribution(self) -> str:
        """The declaring distribution's ``Name`` (from its metadata, read once, when first asked)."""
        if self._distribution is None:
            self._distribution = self._read_name()
        return self._distribution

    def load(self) -> Any:
        """Import the module and return it, or the object its ``:attr.attr`` names."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name} = {self.value!r} is not 'module' or 'module:attribute'")
        found: Any = importlib.import_module(match["module"])
        for part in filter(None, (match["attr"] or "").split(".")):
            found = getattr(found, part)
        return found

    def __repr__(self) -> str:
        return f"EntryPoint({self.name!r}, {self.value!r})"


def find(group: str, path: Sequence[str] | None = None) -> list[EntryPoint]:
    """The entry points of ``group`` on ``path`` (default :data:`sys.path`), in ``importlib.metadata``'s order."""
    folders = _metadata_folders(sys.path if path is None else path)
    if folders is None:
        return _from_importlib(group, path)
    found = []
    for folder in folders:
        text = _read(folder, "entry_points.txt")
        for section, name, value in _pairs(text or ""):
            if section == group:
                found.append(EntryPoint(name, value, functools.partial(_name_of, folder)))
    return found


def _metadata_folders(path: Sequence[str]) -> list[str] | None:
    """The ``*.dist-info`` and ``*.egg-info`` entries of the folders on ``path``, or None where
    ``importlib.metadata`` would also look elsewhere."""
    from importlib.machinery import PathFinder

    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return None
    folders: list[str] = []
    for root in path:
        if os.path.basename(root).lower().endswith(".egg") or not os.path.isdir(root or "."):
            if os.path.exists(root or "."):
                return None  # an egg or an archive: importlib.metadata reads inside it
            continue
        try:
            children = os.listdir(root or ".")
        except OSError:
            continue
        by_name: dict[str, list[str]] = {}  # grouped by name, in first-seen order, as importlib.metadata does
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = re.sub(r"[-_.]+", "_", low.rpartition(".")[0].partition("-")[0])
                by_name.setdefault(name, []).append(os.path.join(root, child))
        folders += [folder for same in by_name.values() for folder in same]
    return folders


def _read(folder: str, name: str) -> str | None:
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            return fh.read()
    except OSError:  # absent, or the .egg-info is a file
        return None


def _pairs(text: str) -> Iterator[tuple[str, str, str]]:
    """``(section, name, value)`` of an ``entry_points.txt``; comment and blank lines skipped."""
    section = None
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section is not None:
            name, _, value = line.partition("=")
            yield section, name.strip(), value.strip()


def _name_of(folder: str) -> str:
    """The ``Name:`` header of a distribution's ``METADATA`` (``PKG-INFO`` for an egg-info)."""
    for line in (_read(folder, "METADATA") or _read(folder, "PKG-INFO") or "").splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        if key.strip().lower() == "name":
            return value.strip()
    return ""


def _from_importlib(group: str, path: Sequence[str] | None) -> list[EntryPoint]:
    import importlib.metadata

    dists = importlib.metadata.distributions() if path is None else importlib.metadata.distributions(path=list(path))
    return [EntryPoint(ep.name, ep.value, functools.partial(_metadata_name, dist))
            for dist in dists for ep in dist.entry_points if ep.group == group]


def _metadata_name(dist: importlib.metadata.Distribution) -> str:
    return dist.metadata["Name"] or ""
