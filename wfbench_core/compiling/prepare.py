"""Match a bundle with the installed cases (no GPU needed): what the executor plans and the worker loads."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

from wfbench_core.case import Case
from wfbench_core.compiling.bundle import (
    BundleCase,
    BundleManifest,
    LoadedConfig,
    load_case_files,
    read_manifest,
    read_variants,
)
from wfbench_core.discover.registry import Registry
from wfbench_core.errors import WfbenchError

__all__ = ["Prepared", "prepare", "prepare_all"]  # internal, not the plugin API


@attrs.frozen
class Prepared:
    """A case of the bundle matched with its installed plugin; ``files`` once loaded (:meth:`loaded`)."""

    case: Case
    plugin: str
    files: dict[str, LoadedConfig]
    entry: BundleCase | None = attrs.field(default=None, eq=False, repr=False)
    folder: Path | None = attrs.field(default=None, eq=False, repr=False)

    def loaded(self) -> Prepared:
        """With the case's files read and verified (hashes, fingerprint): no second match with the plugins."""
        if self.files or self.entry is None or self.folder is None:
            return self
        return attrs.evolve(self, files=load_case_files(self.folder, self.entry, self.case))


def prepare(bundle: Path, registry: Registry, case_ids: Iterable[str] = (), *,
            load: bool = True) -> tuple[BundleManifest, list[Prepared]]:
    """Read a plain bundle and match every case with the installed plugin (no GPU needed).

    With ``load`` the case's files are read and verified (hashes, fingerprint); without, only the manifest
    is matched with the installed cases (the executor's plan: each case is loaded once, where it runs).
    """
    manifest = read_manifest(bundle)
    wanted = list(case_ids)
    entries = {e.id: e for e in manifest.cases}
    for cid in wanted:
        if cid not in entries and cid not in manifest.failures:
            raise WfbenchError(f"case {cid!r} is not in bundle {bundle}; it holds {', '.join(entries) or 'no cases'}")
    prepared = []
    for entry in manifest.cases:
        if wanted and entry.id not in wanted:
            continue
        if entry.id not in registry.cases:
            raise WfbenchError(
                f"case {entry.id!r} of bundle {bundle} is not installed on this host"
                + (f" (it came from plugin {entry.plugin})" if entry.plugin else "")
                + "; install the same case plugins here"
            )
        reg = registry.cases[entry.id]
        matched = Prepared(reg.value, reg.plugin, {}, entry, Path(bundle))
        prepared.append(matched.loaded() if load else matched)
    return manifest, prepared


def prepare_all(bundle: Path, registry: Registry, case_ids: Iterable[str] = (), *, load: bool = True
                ) -> tuple[dict[str, BundleManifest], dict[str, dict[str, Prepared]]]:
    """Every variant of a bundle: ``({label: manifest}, {case id: {label: Prepared}})``, cases in bundle order."""
    manifests: dict[str, BundleManifest] = {}
    by_case: dict[str, dict[str, Prepared]] = {}
    for label, (_, folder) in read_variants(bundle).items():
        manifest, prepared = prepare(folder, registry, case_ids, load=load)
        manifests[label] = manifest
        for p in prepared:
            by_case.setdefault(p.case.id, {})[label] = p
    return manifests, by_case


def validate(bundle: Path, registry: Registry, case_ids: Iterable[str] = ()) -> list[str]:
    """Check a bundle against the installed cases without touching a GPU; returns the case IDs."""
    return list(prepare_all(bundle, registry, case_ids)[1])
