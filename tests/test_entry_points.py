"""Entry points are read without importlib.metadata, and read what it reads: the same entry points, values,
distribution names and order, on this environment's path and on folders built to hold the awkward cases."""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile
from pathlib import Path

import pytest

from wfbench_core.discover import entry_points


def _importlib(group: str, path: list[str] | None = None) -> list[tuple[str, str, str]]:
    dists = importlib.metadata.distributions(**({} if path is None else {"path": path}))
    return [(ep.name, ep.value, dist.metadata["Name"] or "") for dist in dists for ep in dist.entry_points
            if ep.group == group]


def _ours(group: str, path: list[str] | None = None) -> list[tuple[str, str, str]]:
    return [(ep.name, ep.value, ep.distribution) for ep in entry_points.find(group, path)]


@pytest.mark.parametrize("group", ["wfbench", "console_scripts", "pytest11"])
def test_this_environment_reads_as_importlib_reads_it(group: str) -> None:
    assert entry_points._metadata_folders(sys.path) is not None  # the files are read here, not importlib
    found = _ours(group)
    assert found == _importlib(group)
    if group == "wfbench":
        assert ("ssh", "wfbench_transports.ssh", "wfbench") in found


def _dist(folder: Path, dirname: str, name: str, entry_points_txt: str | None, header: str = "METADATA") -> None:
    info = folder / dirname
    info.mkdir(parents=True)
    (info / header).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\nName: not this one\n")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(entry_points_txt)


def test_awkward_folders_read_as_importlib_reads_them(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "Plugin_One-1.0.dist-info", "plugin-one",
          "# a comment\n\n[console_scripts]\none = plugin_one:main\n\n[wfbench]\n  one = plugin_one [extra]\n"
          "deep=plugin_one:Holder.inner\n")
    _dist(first, "no_entry_points-2.0.dist-info", "no-entry-points", None)
    _dist(first, "legacy.egg-info", "Legacy", "[wfbench]\nlegacy = legacy_plugin\n", header="PKG-INFO")
    (first / "stray-1.0.egg-info").write_text("Metadata-Version: 1.0\nName: stray\n")  # a file, not a folder
    _dist(second, "plugin_one-0.9.dist-info", "plugin-one", "[wfbench]\none = older_plugin_one\n")
    path = [str(first), str(tmp_path / "absent"), str(second)]

    found = _ours("wfbench", path)
    assert found == _importlib("wfbench", path)
    # a folder in the order the file system lists it; both "one" (the caller keeps the first)
    assert sorted(found) == [("deep", "plugin_one:Holder.inner", "plugin-one"), ("legacy", "legacy_plugin", "Legacy"),
                             ("one", "older_plugin_one", "plugin-one"), ("one", "plugin_one [extra]", "plugin-one")]
    assert found[-1] == ("one", "older_plugin_one", "plugin-one")
    assert _ours("console_scripts", path) == _importlib("console_scripts", path)


def test_an_archive_on_the_path_is_read_by_importlib(tmp_path: Path) -> None:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped-1.0.dist-info/METADATA", "Name: zipped\n")
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[wfbench]\nzipped = zipped_plugin\n")
    path = [str(archive)]
    assert entry_points._metadata_folders(path) is None
    assert _ours("wfbench", path) == _importlib("wfbench", path) == [("zipped", "zipped_plugin", "zipped")]


def test_load_imports_the_module_and_follows_the_attributes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ep_probe_module.py").write_text("class Holder:\n    inner = 'found'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ep_probe_module", raising=False)
    never = lambda: pytest.fail("the distribution's name is read only when asked")  # noqa: E731
    module = entry_points.EntryPoint("probe", "ep_probe_module", never).load()
    assert module.__name__ == "ep_probe_module"
    assert entry_points.EntryPoint("probe", "ep_probe_module : Holder.inner [extra]", never).load() == "found"
    with pytest.raises(AttributeError):
        entry_points.EntryPoint("probe", "ep_probe_module:Holder.missing", never).load()
    with pytest.raises(ValueError, match="not 'module' or 'module:attribute'"):
        entry_points.EntryPoint("probe", "not a module!", never).load()
