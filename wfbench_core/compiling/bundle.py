"""The bundle: a self-describing directory a GPU host can execute without ``warpforthc``.

Layout::

    BUNDLE/
      manifest.json              BundleManifest (schema below)
      <case>/check.forth         rendered WarpForth source, for the record
      <case>/check.ptx           WarpForth PTX
      <case>/check.cu            rendered CUDA source (compiled on the GPU host)
      <case>/canonical.{forth,ptx,cu}
      <case>/sweep/<sizes>.{forth,ptx,cu}   with sweep sizes (``wfbench build --sweep``): one set per size, the
                                 case's canonical configuration at that size (``wfbench sweep --bundle``)

The GPU host needs wfbench and the case plugins installed (for input generators and references); it
recomputes each case's fingerprint and refuses a bundle built from a different case definition.
This contract is transport-independent: local runs, SSH hosts and rentals all execute the same bundle.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import attrs

from wfbench_core import SUITE_VERSION, __version__
from wfbench_core.case import CONFIGS, Case, CaseKey, sha256_text
from wfbench_core.compiling.compile import (
    Compiled,
    CompileError,
    compile_cuda,
    compile_warpforth,
    ptx_problem,
    warpforthc_info,
)
from wfbench_core.compiling.faults import CompileFault, compile_failure
from wfbench_core.errors import WfbenchError
from wfbench_core.record.fsutil import atomic_write, make_temp_dir, os_error_line, read_json, read_text
from wfbench_core.record.results import CompileRecord, CompilerInfo, Source, converter, structure

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BUNDLE_SCHEMA", "MANIFEST", "MANIFEST_WHAT", "BundleCase", "BundleConfig", "BundleManifest",
    "BundleSweepPoint", "LoadedConfig", "build_bundle", "load_case_files", "load_sweep_point", "read_manifest",
    "read_variants", "shipped_files", "sweep_config", "sweep_name", "utcnow", "write_case", "write_manifest",
    "write_sweep",
]

BUNDLE_SCHEMA = 1
MANIFEST = "manifest.json"


@attrs.frozen
class BundleConfig:
    wf_ptx: str  # path relative to the bundle
    cuda_source: str
    wf_source: str
    wf_ptx_sha256: str
    cuda_source_sha256: str
    compile_wf: CompileRecord


@attrs.frozen
class BundleSweepPoint:
    """One size of a case's sweep: its sizes, the fingerprint of the case at them, its files."""

    sizes: dict[str, int]
    fingerprint: str
    config: BundleConfig


@attrs.frozen
class BundleCase:
    id: str
    version: int
    fingerprint: str
    plugin: str
    configs: dict[str, BundleConfig]
    sweep: tuple[BundleSweepPoint, ...] = ()


@attrs.frozen
class BundleManifest:
    bundle_schema: int
    wfbench_version: str
    suite_version: int
    created: str
    arch: str  # target asked of warpforthc ("" when not given)
    warpforthc: CompilerInfo
    cases: tuple[BundleCase, ...]
    source: Source = Source()
    compiler_label: str = ""  # which warpforthc of a base/head run built it
    failures: dict[str, str] = attrs.Factory(dict)  # case id -> why it is not in the bundle
    labels: tuple[str, ...] = ()  # base/head bundle: one sub-bundle per label, in folders of that name


def utcnow() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def build_bundle(
    cases: Iterable[Case],
    out_dir: Path,
    *,
    warpforthc: Path | Mapping[str, Path],
    arch: str | None = None,
    source: Source = Source(),
    plugins: dict[str, str] | None = None,
    progress: Callable[[str], None] = lambda msg: None,
    compiler_label: str = "",
    keep_going: bool = True,
    check_cuda: CompilerInfo | None = None,
    sweeps: Mapping[str, list[dict[str, int]]] | None = None,
) -> BundleManifest:
    """Compile every case's WarpForth source (both configurations) and write the bundle.

    ``sweeps`` (case id -> sizes, from :meth:`~wfbench_core.case.Case.sweep_points`) adds each size's
    configuration too, for ``wfbench sweep --bundle``.

    ``warpforthc`` is one binary, or ``{label: binary}`` for a base/head bundle (one sub-bundle per
    label, timed together on the GPU host). A case whose WarpForth source does not compile is recorded
    in ``failures`` (or raised with ``keep_going=False``); the others are still built. With
    ``check_cuda`` the CUDA side is compiled here too, so a broken baseline fails before it is shipped.
    """
    compilers = {"": Path(warpforthc)} if isinstance(warpforthc, (str, os.PathLike)) else dict(warpforthc)
    for label in compilers:
        if len(compilers) > 1 and (not label or not label.replace("_", "").replace("-", "").isalnum()):
            raise WfbenchError(f"compiler label {label!r} must be letters, digits, '-' or '_' (e.g. base=PATH)")
    cases = list(cases)
    out_dir = Path(out_dir)
    if out_dir.exists() and not (out_dir / MANIFEST).exists() and any(out_dir.iterdir()):
        raise WfbenchError(f"{out_dir} exists and is not a wfbench bundle; choose an empty or new folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # Build beside the target and swap it in at the end: a failed build leaves the old bundle intact.
    work = make_temp_dir(f".{out_dir.name}.", out_dir.parent)
    try:
        if list(compilers) == [""]:
            manifest = _build_into(work, cases, compilers[""], warpforthc_info(compilers[""]), arch, source,
                                   plugins, progress, compiler_label, keep_going, check_cuda, sweeps)
        else:
            subs = {}
            for label, binary in compilers.items():
                progress(f"warpforthc {label}: {binary}")
                (work / label).mkdir()
                subs[label] = _build_into(work / label, cases, binary, warpforthc_info(binary), arch, source,
                                          plugins, progress, label, keep_going, check_cuda, sweeps)
            first = next(iter(subs.values()))
            manifest = attrs.evolve(first, cases=(), labels=tuple(subs), compiler_label="", failures={
                str(CaseKey(cid, label)): why for label, sub in subs.items() for cid, why in sub.failures.items()})
            write_manifest(work, manifest)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(work, out_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return manifest


def _build_into(out_dir: Path, cases: Iterable[Case], warpforthc: Path, info: CompilerInfo, arch: str | None,
                source: Source, plugins: dict[str, str] | None, progress: Callable[[str], None],
                compiler_label: str, keep_going: bool, check_cuda: CompilerInfo | None,
                sweeps: Mapping[str, list[dict[str, int]]] | None = None) -> BundleManifest:
    built: list[BundleCase] = []
    failures: dict[str, str] = {}
    for case in cases:
        progress(f"compile {case.id}")
        try:
            built.append(_build_case(case, out_dir, warpforthc, arch, (plugins or {}).get(case.id, ""),
                                     (sweeps or {}).get(case.id, [])))
            if check_cuda is not None:
                try:
                    compile_cuda(case.render("canonical")[1], case_id=case.key("canonical"),
                                 arch=arch or "sm_80", compiler=check_cuda)
                except CompileError as exc:
                    built.pop()
                    raise _classified(exc, case.id, "canonical", "cuda", check_cuda.kind) from None
        except CompileError as exc:
            if not keep_going:
                raise
            failures[case.id] = str(exc)
            progress(f"  {exc}")
            shutil.rmtree(out_dir / case.id, ignore_errors=True)
    manifest = BundleManifest(
        bundle_schema=BUNDLE_SCHEMA,
        wfbench_version=__version__,
        suite_version=SUITE_VERSION,
        created=utcnow(),
        arch=arch or "",
        warpforthc=info,
        cases=tuple(built),
        source=source,
        compiler_label=compiler_label,
        failures=failures,
    )
    write_manifest(out_dir, manifest)
    return manifest


def write_manifest(out_dir: Path, manifest: BundleManifest) -> None:
    atomic_write(out_dir / MANIFEST, json.dumps(converter().unstructure(manifest), indent=1) + "\n")


def _build_case(case: Case, out_dir: Path, warpforthc: Path, arch: str | None, plugin: str,
                sweep: list[dict[str, int]]) -> BundleCase:
    def compile_wf(config: str, src: str) -> Compiled:
        try:
            return compile_warpforth(src, binary=warpforthc, case_id=case.key(config), arch=arch)
        except CompileError as exc:
            raise _classified(exc, case.id, config, "wf", "warpforthc") from None

    def compile_point(at: Case, src: str) -> Compiled:
        config = sweep_config(at.sizes["canonical"])
        try:
            return compile_warpforth(src, binary=warpforthc, case_id=case.key(config), arch=arch)
        except CompileError as exc:
            raise _classified(exc, case.id, config, "wf", "warpforthc") from None

    entry = write_case(case, out_dir, plugin, compile_wf)
    return attrs.evolve(entry, sweep=write_sweep(case, out_dir, sweep, compile_point)) if sweep else entry


def sweep_config(sizes: Mapping[str, int]) -> str:
    """How a sweep point is named where a configuration is (``sweep:N-4096_blocks-16``)."""
    return f"sweep:{sweep_name(sizes)}"


def sweep_name(sizes: Mapping[str, int]) -> str:
    """A sweep point's file stem: ``N-4096_blocks-16``."""
    return "_".join(f"{k}-{v}" for k, v in sorted(sizes.items()))


def write_sweep(case: Case, out_dir: Path, sizes: list[dict[str, int]],
                compile_point: Callable[[Case, str], Compiled]) -> tuple[BundleSweepPoint, ...]:
    """Write one set of files per sweep size (the case's canonical configuration at that size) into
    ``<case>/sweep/``; ``compile_point(case at the size, its WarpForth source)`` gives each size's PTX."""
    folder = out_dir / case.id / "sweep"
    folder.mkdir(parents=True, exist_ok=True)
    points = []
    for point in sizes:
        at = case.at_sizes(point)
        wf_src, cuda_src = at.render("canonical")
        compiled = compile_point(at, wf_src)
        stem = f"{case.id}/sweep/{sweep_name(point)}"
        (out_dir / f"{stem}.forth").write_text(wf_src)
        (out_dir / f"{stem}.ptx").write_text(compiled.ptx)
        (out_dir / f"{stem}.cu").write_text(cuda_src)
        points.append(BundleSweepPoint(dict(point), at.fingerprint(), BundleConfig(
            wf_ptx=f"{stem}.ptx", cuda_source=f"{stem}.cu", wf_source=f"{stem}.forth",
            wf_ptx_sha256=sha256_text(compiled.ptx), cuda_source_sha256=sha256_text(cuda_src),
            compile_wf=compiled.record)))
    return tuple(points)


def _classified(exc: CompileError, case_id: str, config: str, side: str, compiler: str) -> CompileError:
    """A compile failure as one classified line: case, side, configuration, the compiler's first error."""
    if isinstance(exc, CompileFault):
        return exc
    diagnostic = exc.diagnostic or str(exc).split(": ", 1)[-1]
    return compile_failure(case_id, config, side, compiler, diagnostic)


def write_case(case: Case, out_dir: Path, plugin: str, compile_wf: Callable[[str, str], Compiled]) -> BundleCase:
    """Write one case's files into the bundle; ``compile_wf(config, warpforth_source)`` gives its PTX."""
    folder = out_dir / case.id
    folder.mkdir(exist_ok=True)
    configs = {}
    for config in CONFIGS:
        wf_src, cuda_src = case.render(config)
        compiled = compile_wf(config, wf_src)
        atomic_write(folder / f"{config}.forth", wf_src)
        atomic_write(folder / f"{config}.ptx", compiled.ptx)
        atomic_write(folder / f"{config}.cu", cuda_src)
        configs[config] = BundleConfig(
            wf_ptx=f"{case.id}/{config}.ptx",
            cuda_source=f"{case.id}/{config}.cu",
            wf_source=f"{case.id}/{config}.forth",
            wf_ptx_sha256=sha256_text(compiled.ptx),
            cuda_source_sha256=sha256_text(cuda_src),
            compile_wf=compiled.record,
        )
    return BundleCase(case.id, case.version, case.fingerprint(), plugin, configs)


@attrs.frozen
class LoadedConfig:
    wf_ptx: str
    cuda_source: str
    compile_wf: CompileRecord


MANIFEST_WHAT = "a wfbench bundle manifest"


def read_manifest(bundle: Path) -> BundleManifest:
    path = Path(bundle) / MANIFEST
    if not path.is_file():
        raise WfbenchError(f"{bundle}: not a wfbench bundle (no {MANIFEST}); make one with 'wfbench build'")
    data = read_json(path, MANIFEST_WHAT)
    if not isinstance(data, dict) or data.get("bundle_schema") != BUNDLE_SCHEMA:
        found = data.get("bundle_schema") if isinstance(data, dict) else None
        raise WfbenchError(
            f"{path}: bundle schema {found!r} is not {BUNDLE_SCHEMA}; build and execute with the same wfbench version"
        )
    manifest: BundleManifest = structure(data, BundleManifest, str(path), f"not {MANIFEST_WHAT}")
    for label in manifest.labels:
        if not _plain_name(label):
            raise WfbenchError(f"{path}: compiler label {label!r} is not a folder name of the bundle; rebuild it")
    for entry in manifest.cases:
        if sorted(entry.configs) != sorted(CONFIGS):
            raise WfbenchError(f"{path}: case {entry.id!r} has configurations {sorted(entry.configs)}, not "
                               f"{list(CONFIGS)}; rebuild the bundle")
    return manifest


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def read_variants(bundle: Path) -> dict[str, tuple[BundleManifest, Path]]:
    """``{label: (manifest, folder)}``: one entry labelled "" for a plain bundle, one per base/head label."""
    top = read_manifest(bundle)
    if not top.labels:
        return {"": (top, Path(bundle))}
    return {label: (read_manifest(Path(bundle) / label), Path(bundle) / label) for label in top.labels}


def _bundle_file(bundle: Path, rel: str, case_id: str, what: str) -> str:
    """A file the manifest names, read as text; it must lie inside the bundle."""
    root = Path(bundle).resolve()
    path = (root / rel).resolve()
    if root != path and root not in path.parents:
        raise WfbenchError(f"{Path(bundle) / MANIFEST}: case {case_id!r} names {rel!r}, outside the bundle; "
                           f"rebuild the bundle")
    if not path.is_file():
        try:  # a loop of links: the line Python < 3.13 gives through resolve()'s RuntimeError (3.13 passes it)
            (Path(bundle) / rel).stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise WfbenchError(os_error_line(exc)) from None
        raise WfbenchError(f"{case_id}: bundle file missing or unreadable: {Path(bundle) / rel}; rebuild the bundle")
    return read_text(path, what)


def shipped_files(bundle: Path) -> list[str]:
    """The files a transport ships of a bundle: its manifests and the files they name, and nothing else
    (a stray file, or a link to a private key, stays here). Each is checked with ``lstat``, every folder on
    its way too: a regular file inside the bundle, never a symbolic link; else one line naming it."""
    import stat

    root = Path(bundle)
    names = [MANIFEST]
    for label, (manifest, _) in read_variants(root).items():
        prefix = f"{label}/" if label else ""
        if label:
            names.append(prefix + MANIFEST)
        for entry in manifest.cases:
            for bc in [*entry.configs.values(), *(point.config for point in entry.sweep)]:
                names += [prefix + bc.wf_ptx, prefix + bc.cuda_source, prefix + bc.wf_source]
    for rel in names:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise WfbenchError(f"{root / MANIFEST}: names {rel!r}, outside the bundle; rebuild the bundle")
        for depth in range(1, len(parts) + 1):
            path = root.joinpath(*parts[:depth])
            try:
                mode = path.lstat().st_mode
            except OSError:
                raise WfbenchError(f"{path}: missing; rebuild the bundle") from None
            last = depth == len(parts)
            if not (stat.S_ISREG(mode) if last else stat.S_ISDIR(mode)):
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file" if last else "not a folder"
                raise WfbenchError(f"{path}: {kind}; a bundle ships only regular files inside it: rebuild the bundle")
    return list(dict.fromkeys(names))


def load_sweep_point(bundle: Path, entry: BundleCase, case: Case, index: int) -> tuple[Case, LoadedConfig]:
    """Sweep point ``index`` of a case whose files :func:`load_case_files` verified: the case at its sizes, and
    its canonical files, their hashes checked and the point's fingerprint matched with the installed case's."""
    point = entry.sweep[index]
    at = case.at_sizes(point.sizes)
    try:
        fingerprint = at.fingerprint()
    except (ValueError, KeyError) as exc:
        raise WfbenchError(f"{Path(bundle) / MANIFEST}: {entry.id} sweep sizes {point.sizes}: {exc}; rebuild the "
                           f"bundle") from None
    if fingerprint != point.fingerprint:
        raise WfbenchError(f"{entry.id} at {sweep_name(point.sizes)}: the case installed here differs from the one "
                           f"in the bundle; install the same wfbench/case plugin version on both sides")
    return at, _load_config(bundle, entry.id, sweep_config(point.sizes), point.config, at)


def _load_config(bundle: Path, case_id: str, config: str, bc: BundleConfig, case: Case | None) -> LoadedConfig:
    ptx = _bundle_file(bundle, bc.wf_ptx, case_id, "WarpForth PTX text")
    cu = _bundle_file(bundle, bc.cuda_source, case_id, "CUDA source text")
    for rel, text, digest in ((bc.wf_ptx, ptx, bc.wf_ptx_sha256), (bc.cuda_source, cu, bc.cuda_source_sha256)):
        if sha256_text(text) != digest:
            raise WfbenchError(f"{Path(bundle) / rel}: does not match the hash in the bundle's manifest (case "
                               f"{case_id}, {config}); rebuild the bundle")
    why = ptx_problem(ptx, case.wf_kernel) if case is not None else ""
    if why:
        raise WfbenchError(f"{Path(bundle) / bc.wf_ptx}: {why}; rebuild the bundle")
    return LoadedConfig(ptx, cu, bc.compile_wf)


def load_case_files(bundle: Path, entry: BundleCase, case: Case | None) -> dict[str, LoadedConfig]:
    """Read a case's files, verifying hashes and that the installed case matches the one built."""
    if case is not None and case.fingerprint() != entry.fingerprint:
        raise WfbenchError(
            f"{entry.id}: the case installed here (v{case.version}, fingerprint {case.fingerprint()[:12]}) differs "
            f"from the one in the bundle (v{entry.version}, {entry.fingerprint[:12]}); install the same "
            f"wfbench/case plugin version on both sides"
        )
    return {config: _load_config(bundle, entry.id, config, bc, case) for config, bc in entry.configs.items()}
