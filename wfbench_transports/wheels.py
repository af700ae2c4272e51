"""Wheels of wfbench, its plugins and their pure-Python dependencies, for GPU hosts without internet.

A remote GPU host must run the *same* wfbench and case plugins as this machine (the executor recomputes
every case's fingerprint and refuses a bundle built from another definition). So the code is shipped from
here, as wheels made from what is installed here — no build backend, no index, no network:

- a distribution installed normally is **repacked** from its ``RECORD`` (exactly the installed files, with
  the tags of its original ``WHEEL`` file);
- an **editable** install (``pip install -e``) is **assembled** from its top-level packages as Python
  imports them here, plus its installed metadata (``METADATA``, ``entry_points.txt``);
- a distribution with compiled code (numpy, scipy, numba-cuda …) is never shipped: the host provides it
  (an existing Python with wfbench's ``gpu`` extra, or a venv the transport creates).

What is shipped: wfbench itself, every installed distribution that registers ``wfbench`` plugins (so
the host sees the same cases and the same timer), and the pure-Python distributions they require
(``attrs``, ``cattrs``, ``pluggy``, ``click`` …). ``wheels=DIR`` on a transport supplies prebuilt wheels
that take precedence, by distribution name.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import importlib.metadata as md
import importlib.util
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import attrs

from wfbench_core.discover.plugins import GROUP
from wfbench_core.errors import WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "Shipment", "canonical_name", "dependency_closure", "plugin_files_problem", "prepare", "select_distributions",
    "wheel_for",
]

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # reproducible archives
_SKIP_META = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "WHEEL"}
_COMPILED = (".so", ".pyd", ".dll", ".dylib")
_cache: dict[tuple[Any, ...], Path] = {}
_cache_dir: Path | None = None


@attrs.frozen
class Shipment:
    """What to upload: wheel files, which of them is wfbench, and what the host must provide itself."""

    wheels: tuple[Path, ...]
    main: str  # file name of the wfbench wheel
    plugin_wheels: tuple[str, ...]  # file names of wheels of distributions that register wfbench plugins
    host_requirements: tuple[str, ...]  # requirements with compiled code, e.g. "numpy>=1.24"


def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _tmp() -> Path:
    global _cache_dir
    if _cache_dir is None or not _cache_dir.exists():
        _cache_dir = Path(tempfile.mkdtemp(prefix="wfbench-wheels-"))
        atexit.register(shutil.rmtree, _cache_dir, True)
    return _cache_dir


# -------------------------------------------------------------------------------------------------
# which distributions
# -------------------------------------------------------------------------------------------------


def _installed() -> dict[str, md.Distribution]:
    """Installed distributions by canonical name; the first on ``sys.path`` wins, as for imports."""
    found: dict[str, md.Distribution] = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if name and canonical_name(name) not in found:
            found[canonical_name(name)] = dist
    return found


def _dist_of_module(module: str, installed: dict[str, md.Distribution],
                    owners: Mapping[str, list[str]]) -> md.Distribution | None:
    """The installed distribution that provides ``module``; ``owners`` is ``md.packages_distributions()``,
    read once by the caller (it reads every installed distribution's file list: seconds in a large venv)."""
    names = owners.get(module.split(".")[0], [])
    for name in names:
        if canonical_name(name) in installed:
            return installed[canonical_name(name)]
    return None


def _requirement_names(dist: md.Distribution) -> list[str]:
    """Names this distribution requires unconditionally (requirements behind an extra are left out)."""
    names = []
    for req in dist.requires or []:
        spec, _, marker = req.partition(";")
        if "extra" in marker:
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        if m:
            names.append(canonical_name(m.group(1)))
    return names


def select_distributions(registry: Any, case_ids: Iterable[str], *, installed: dict[str, md.Distribution] | None = None,
                         owners: Mapping[str, list[str]] | None = None) -> list[md.Distribution]:
    """wfbench, every distribution with ``wfbench`` entry points, and the plugins of ``case_ids`` (``installed``
    and ``owners``: :func:`_installed` and ``md.packages_distributions()`` when the caller read them)."""
    installed = _installed() if installed is None else installed
    owners = md.packages_distributions() if owners is None else owners
    core = _dist_of_module("wfbench_core", installed, owners) or installed.get("wfbench")
    if core is None:
        raise WfbenchError("wfbench is not installed as a distribution here; install it (pip install -e .) "
                           "so it can be shipped to the GPU host")
    chosen = {canonical_name(core.metadata["Name"]): core}
    for name, dist in installed.items():
        if any(ep.group == GROUP for ep in dist.entry_points):
            chosen.setdefault(name, dist)
    for cid in case_ids:
        reg = registry.cases.get(cid) if registry is not None else None
        if reg is None:
            continue
        owner = (installed.get(canonical_name(reg.origin.distribution)) if reg.origin.distribution
                 else _dist_of_module(reg.origin.name, installed, owners))
        if owner is None:
            raise WfbenchError(
                f"case {cid!r} comes from plugin {reg.plugin}, which is not part of an installed distribution; "
                f"install it as a package (pip install -e PATH) so it can be shipped to the GPU host"
            )
        chosen.setdefault(canonical_name(owner.metadata["Name"]), owner)
    return list(chosen.values())


def dependency_closure(dists: Iterable[md.Distribution], *, installed: dict[str, md.Distribution] | None = None
                       ) -> tuple[list[md.Distribution], list[str]]:
    """The installed requirements of ``dists``, recursively: ``(installed distributions, missing names)``."""
    installed = _installed() if installed is None else installed
    seen = {canonical_name(d.metadata["Name"]) for d in dists}
    queue = list(dists)
    deps: list[md.Distribution] = []
    missing: list[str] = []
    while queue:
        for name in _requirement_names(queue.pop()):
            if name in seen:
                continue
            seen.add(name)
            dist = installed.get(name)
            if dist is None:
                missing.append(name)  # a requirement behind a marker that does not apply here
                continue
            deps.append(dist)
            queue.append(dist)
    return deps, missing


# -------------------------------------------------------------------------------------------------
# making one wheel
# -------------------------------------------------------------------------------------------------


def _editable(dist: md.Distribution) -> bool:
    try:
        text = dist.read_text("direct_url.json")
        return bool(text and json.loads(text).get("dir_info", {}).get("editable"))
    except (OSError, ValueError, AttributeError):
        return False


def _from_source(dist: md.Distribution) -> bool:
    """Editable installs and source checkouts (``*.egg-info``): assembled from where Python imports them."""
    return _editable(dist) or dist.read_text("RECORD") is None


def _dist_info_name(dist: md.Distribution) -> str:
    for f in dist.files or []:
        if f.parts and f.parts[0].endswith(".dist-info") and f.name == "METADATA":
            return f.parts[0]
    return f"{_wheel_name(dist.metadata['Name'])}-{dist.version}.dist-info"


def _write_wheel(path: Path, entries: list[tuple[str, bytes]], dist_info: str) -> Path:
    record = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in sorted(entries):
            info = zipfile.ZipInfo(arcname, _ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
            record.append(f"{arcname},{_record_hash(data)},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", _ZIP_DATE)
        info.external_attr = 0o644 << 16
        zf.writestr(info, "\n".join(record) + "\n")
    return path


def _wheel_file_text(tags: Iterable[str]) -> bytes:
    lines = ["Wheel-Version: 1.0", "Generator: wfbench", "Root-Is-Purelib: true", *(f"Tag: {t}" for t in tags)]
    return ("\n".join(lines) + "\n").encode()


def _pure_tags(dist: md.Distribution) -> list[str] | None:
    """The tags of an installed pure-Python wheel, or None when it is not one."""
    text = dist.read_text("WHEEL") or ""
    tags = [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.lower().startswith("tag:")]
    purelib = re.search(r"^Root-Is-Purelib:\s*true\s*$", text, re.IGNORECASE | re.MULTILINE)
    if not tags or not purelib or not all(t.endswith("-none-any") for t in tags):
        return None
    return tags


def _tag_string(tags: list[str]) -> str:
    pys = sorted({t.split("-")[0] for t in tags})
    return f"{'.'.join(pys)}-none-any"


def _repack(dist: md.Distribution, out_dir: Path) -> Path | None:
    tags = _pure_tags(dist)
    if tags is None or not dist.files:
        return None
    dist_info = _dist_info_name(dist)
    entries = [(f"{dist_info}/WHEEL", _wheel_file_text(tags))]
    for f in dist.files:
        posix = PurePosixPath(str(f).replace("\\", "/"))
        if posix.parts[0] == ".." or "__pycache__" in posix.parts or posix.suffix in (".pyc", ".pyo"):
            continue
        if posix.parts[0] == dist_info and posix.name in _SKIP_META:
            continue
        if posix.suffix in _COMPILED:
            return None
        local = Path(str(dist.locate_file(f)))
        if not local.is_file():
            continue
        entries.append((str(posix), local.read_bytes()))
    name = f"{_wheel_name(dist.metadata['Name'])}-{dist.version}-{_tag_string(tags)}.whl"
    return _write_wheel(out_dir / name, entries, dist_info)


def _top_level_sources(dist: md.Distribution) -> list[Path]:
    """Where this machine imports the distribution's top-level packages and modules from."""
    names: list[str] = []
    text = dist.read_text("top_level.txt")
    if text:
        names += [n.strip() for n in text.splitlines() if n.strip()]
    for ep in dist.entry_points:
        if ep.group == GROUP:
            names.append(ep.value.split(":")[0].strip().split(".")[0])
    sources: list[Path] = []
    for name in dict.fromkeys(names):
        if name.startswith("__editable__"):
            continue
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        locations = list(spec.submodule_search_locations or [])
        if locations and spec.origin in (None, "namespace"):
            raise WfbenchError(
                f"{dist.metadata['Name']}: top-level {name!r} is a namespace package; an editable install of it "
                f"cannot be shipped: install it normally (pip install PATH) or pass wheels=DIR"
            )
        sources.append(Path(locations[0]) if locations else Path(str(spec.origin)))
    return sources


def _assemble(dist: md.Distribution, out_dir: Path) -> Path | None:
    sources = _top_level_sources(dist)
    if not sources:
        raise WfbenchError(f"{dist.metadata['Name']}: editable install whose packages cannot be found; "
                           f"reinstall it or pass wheels=DIR with its wheel")
    dist_info = f"{_wheel_name(dist.metadata['Name'])}-{dist.version}.dist-info"
    entries = [(f"{dist_info}/WHEEL", _wheel_file_text(["py3-none-any"]))]
    metadata = dist.read_text("METADATA") or dist.read_text("PKG-INFO")  # PKG-INFO: a *.egg-info checkout
    if not metadata:
        raise WfbenchError(f"{dist.metadata['Name']}: installed without metadata; reinstall it (pip install -e PATH)")
    entries.append((f"{dist_info}/METADATA", metadata.encode()))
    for meta in ("entry_points.txt", "top_level.txt"):
        text = dist.read_text(meta)
        if text is not None:
            entries.append((f"{dist_info}/{meta}", text.encode()))
    for src in sources:
        if src.is_file():
            entries.append((src.name, src.read_bytes()))
            continue
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src.parent)
            if not path.is_file() or "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo"):
                continue
            if path.suffix in _COMPILED:
                return None
            entries.append((rel.as_posix(), path.read_bytes()))
    name = f"{_wheel_name(dist.metadata['Name'])}-{dist.version}-py3-none-any.whl"
    return _write_wheel(out_dir / name, entries, dist_info)


def _signature(dist: md.Distribution) -> tuple[Any, ...]:
    key: tuple[Any, ...] = (canonical_name(dist.metadata["Name"]), dist.version, str(dist.locate_file("")))
    if _from_source(dist):
        stamp = []
        for src in _top_level_sources(dist):
            files = [src] if src.is_file() else \
                [p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
            stamp += [(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files]
        key += (hashlib.sha256(repr(sorted(stamp)).encode()).hexdigest(),)
    return key


def wheel_for(dist: md.Distribution) -> Path | None:
    """A wheel of this installed distribution (cached for the process), or None when it has compiled code."""
    key = _signature(dist)
    if key in _cache and _cache[key].exists():
        return _cache[key]
    out = _tmp() / hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    out.mkdir(exist_ok=True)
    wheel = _assemble(dist, out) if _from_source(dist) else _repack(dist, out)
    if wheel is not None:
        _cache[key] = wheel
    return wheel


def _prebuilt(folder: str | None) -> dict[str, Path]:
    if not folder:
        return {}
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise WfbenchError(f"wheels={folder}: not a folder of .whl files")
    return {canonical_name(p.name.split("-")[0]): p for p in sorted(root.glob("*.whl"))}


def prepare(registry: Any, case_ids: Iterable[str], *, prebuilt: str | None = None,
            progress: Callable[[str], None] = lambda msg: None, extra: Iterable[str] = ()) -> Shipment:
    """Wheels for everything the GPU host needs from here (see the module docstring); ``extra`` names more
    installed distributions to ship with their requirements (pytest, for the GPU tests)."""
    ids = list(case_ids)
    # what is installed, read once for the whole shipment (each read parses every distribution's metadata)
    installed, owners = _installed(), md.packages_distributions()
    dists = select_distributions(registry, ids, installed=installed, owners=owners)
    more = []
    for name in extra:
        if canonical_name(name) not in installed:
            raise WfbenchError(f"{name} is not installed here, so it cannot be shipped to the GPU host; "
                               f"pip install {name}")
        more.append(installed[canonical_name(name)])
    deps, _missing = dependency_closure(dists + more, installed=installed)
    deps = [*more, *(d for d in deps if d not in more)]
    given = _prebuilt(prebuilt)
    wheels: list[Path] = []
    plugin_wheels: list[str] = []
    main = ""
    host: list[str] = []
    needed = {canonical_name(r.origin.distribution) for cid, r in
              (registry.cases.items() if registry is not None else ()) if cid in ids}
    core_name = canonical_name(dists[0].metadata["Name"])
    for dist in [*dists, *deps]:
        name = canonical_name(dist.metadata["Name"])
        wheel = given.get(name) or wheel_for(dist)
        is_plugin = dist in dists
        if wheel is None:
            if name == core_name or (is_plugin and name in needed):
                raise WfbenchError(f"{dist.metadata['Name']} contains compiled code and cannot be shipped; "
                                   f"install the same version on the GPU host")
            if is_plugin:
                progress(f"not shipping plugin {dist.metadata['Name']} (compiled code); the host may lack it")
                continue
            host.append(name)
            continue
        problem = plugin_files_problem(dist, wheel, installed=installed, owners=owners) if is_plugin else None
        if problem:
            if name in needed:
                raise WfbenchError(problem)
            progress(f"not shipping plugin {dist.metadata['Name']}: {problem}")
            continue
        wheels.append(wheel)
        if name == core_name:
            main = wheel.name
        elif is_plugin:
            plugin_wheels.append(wheel.name)
    reqs = _host_requirement_specs(dists + deps, set(host))
    return Shipment(tuple(wheels), main, tuple(plugin_wheels), tuple(reqs))


def plugin_files_problem(dist: md.Distribution, wheel: Path, *, installed: dict[str, md.Distribution] | None = None,
                         owners: Mapping[str, list[str]] | None = None) -> str | None:
    """Why a plugin's wheel would fail on the GPU host, in one line, or None: files its RECORD lists that are
    gone from disk, or kernel files its cases read here (:func:`wfbench_core.case.resource_text`) that the
    installed distribution does not hold (not declared as package data; read here from a source tree).
    ``installed`` and ``owners`` as for :func:`select_distributions`."""
    from wfbench_core.case import resources_read

    name = dist.metadata["Name"]
    missing = [] if _from_source(dist) else [
        str(f) for f in dist.files or ()
        if PurePosixPath(str(f)).parts[0] != ".." and ".dist-info" not in str(f) and "__pycache__" not in str(f)
        and not Path(str(dist.locate_file(f))).is_file()]
    with zipfile.ZipFile(wheel) as z:
        shipped = set(z.namelist())
    installed = _installed() if installed is None else installed
    owners = md.packages_distributions() if owners is None else owners
    for package, files in sorted(resources_read().items()):
        owner = _dist_of_module(package, installed, owners)
        if owner is None or canonical_name(owner.metadata["Name"]) != canonical_name(name):
            continue
        missing += [f"{package.replace('.', '/')}/{f}" for f in sorted(files)
                    if f"{package.replace('.', '/')}/{f}" not in shipped]
    if not missing:
        return None
    return (f"plugin {name}: installed files are missing ({', '.join(sorted(set(missing)))}), so a GPU host could "
            f"not run its cases; declare its kernel files as package data and reinstall it")


def _host_requirement_specs(dists: list[md.Distribution], names: set[str]) -> list[str]:
    specs: dict[str, str] = {}
    for dist in dists:
        for req in dist.requires or []:
            spec, _, marker = req.partition(";")
            if "extra" in marker:
                continue
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
            if m and canonical_name(m.group(1)) in names:
                specs.setdefault(canonical_name(m.group(1)), spec.strip())
    return sorted(specs.values())
