"""Helpers for testing wfbench and third-party case plugins, most of them without a GPU.

- :func:`check_case` validates a case the way CI can: renders, references, fingerprints, and compiles
  the CUDA side with the real nvcc/ptxas when they are installed.
- :func:`bundle_from_ptx` writes a real bundle from WarpForth PTX produced earlier by ``warpforthc``
  (e.g. PTX files kept beside the tests), so bundle consumers can be tested where no ``warpforthc`` is;
  :func:`base_head_bundle_from_ptx` writes a base/head bundle the same way.
- :func:`inject_at_entry` makes a head kernel with one extra PTX statement: an injected regression.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import attrs

from wfbench_core import SUITE_VERSION, __version__
from wfbench_core.case import CONFIGS, Case, sha256_text
from wfbench_core.compiling.bundle import (
    BUNDLE_SCHEMA,
    BundleManifest,
    sweep_name,
    utcnow,
    write_case,
    write_manifest,
    write_sweep,
)
from wfbench_core.compiling.compile import Compiled, compile_cuda, cuda_compiler, find_nvcc, ptx_target, ptxas_check
from wfbench_core.record.results import CompileRecord, CompilerInfo, Source

__all__ = ["base_head_bundle_from_ptx", "bundle_from_ptx", "check_case", "inject_at_entry", "ptx_dir_loader"]


def check_case(case: Case, *, arch: str = "sm_90", compile_cuda_side: bool | None = None) -> None:
    """Raise ``AssertionError`` unless the case is well formed.

    Checks both configurations: sources render, inputs are deterministic, the reference returns every
    output with a finite value, the launch covers at least one block, and the fingerprint is stable.
    With nvcc installed (or ``compile_cuda_side=True``) the CUDA source is compiled with the canonical
    flags and assembled by ptxas for ``arch`` (once when both configurations render the same source).
    """
    import numpy as np

    assert case.fingerprint() == case.fingerprint(), f"{case.id}: fingerprint is not deterministic"
    for config in CONFIGS:
        wf, cu = case.render(config)
        assert case.wf_kernel in wf, f"{case.id}: WarpForth source does not name kernel {case.wf_kernel}"
        assert case.cuda_kernel in cu, f"{case.id}: CUDA source does not name kernel {case.cuda_kernel}"
        a, b = case.make_inputs(config), case.make_inputs(config)
        for name in a:
            assert np.array_equal(np.asarray(a[name]), np.asarray(b[name])), f"{case.id}: inputs not seeded"
        ref = case.make_reference(a, config)
        for name, arr in ref.items():
            assert np.all(np.isfinite(arr)) or not np.issubdtype(arr.dtype, np.floating), \
                f"{case.key(config)}: reference output {name} is not finite"
        launch = case.launch(case.sizes[config])
        assert launch.block[0] * launch.block[1] * launch.block[2] <= 1024, f"{case.id}: block over 1024 threads"
        assert launch.shared_bytes <= 48 * 1024, f"{case.id}: dynamic shared memory over 48 KiB"
    if compile_cuda_side is None:
        compile_cuda_side = find_nvcc() is not None
    if compile_cuda_side:
        compiler = cuda_compiler("nvcc")
        compiled: set[str] = set()
        for config in CONFIGS:
            source = case.render(config)[1]
            if source in compiled:
                continue  # a CUDA source the same at both configurations (sizes as arguments) is compiled once
            compiled.add(source)
            ptx = compile_cuda(source, case_id=case.key(config), arch=arch, compiler=compiler).ptx
            ptxas_check(ptx, arch=arch, case_id=case.key(config))


def bundle_from_ptx(
    cases: Iterable[Case],
    out_dir: Path,
    wf_ptx: Callable[[Case, str], str],
    *,
    warpforthc: CompilerInfo = CompilerInfo(kind="warpforthc", version="prebuilt"),
    source: Source = Source(),
    plugin: str = "",
    compiler_label: str = "",
    sweeps: Mapping[str, list[dict[str, int]]] | None = None,
) -> BundleManifest:
    """Write a bundle whose WarpForth PTX comes from ``wf_ptx(case, config)`` instead of a compiler run.

    ``compiler_label`` names the compiler of a base/head bundle's sub-bundle, as ``wfbench build`` does.
    ``sweeps`` (case id -> sizes) adds sweep points as ``wfbench build --sweep`` does; each point's PTX is
    ``wf_ptx(case at its sizes, "sweep")``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def prebuilt(case: Case) -> Callable[[str, str], Compiled]:
        def compile_wf(config: str, src: str) -> Compiled:
            ptx = wf_ptx(case, config)
            return Compiled(ptx, CompileRecord("warpforthc", ("warpforthc", f"{case.id}.forth"), sha256_text(src),
                                               sha256_text(ptx), ptx_target(ptx), 0.0))

        return compile_wf

    def point(at: Case, src: str) -> Compiled:
        return prebuilt(at)("sweep", src)

    entries = tuple(write_case(case, out_dir, plugin, prebuilt(case)) for case in cases)
    entries = tuple(attrs.evolve(e, sweep=write_sweep(case, out_dir, sweeps[case.id], point))
                    if sweeps and sweeps.get(case.id) else e for e, case in zip(entries, cases))
    manifest = BundleManifest(BUNDLE_SCHEMA, __version__, SUITE_VERSION, utcnow(), "", warpforthc, entries, source,
                              compiler_label)
    write_manifest(out_dir, manifest)
    return manifest


def ptx_dir_loader(folder: str | os.PathLike[str]) -> Callable[[Case, str], str]:
    """``wf_ptx`` for :func:`bundle_from_ptx` reading ``<folder>/<case>.<config>.ptx`` (a sweep point's:
    ``<case>.sweep-<sizes>.ptx``, e.g. ``axpy_f64.sweep-N-4096_blocks-16.ptx``).

    Each PTX file must sit beside ``<case>.<config>.forth.sha256`` holding the SHA-256 of the WarpForth
    source it was compiled from; a stale file (the case changed since) is refused.
    """
    root = Path(folder)

    def load(case: Case, config: str) -> str:
        name = f"sweep-{sweep_name(case.sizes['canonical'])}" if config == "sweep" else config
        ptx_path = root / f"{case.id}.{name}.ptx"
        sha_path = root / f"{case.id}.{name}.forth.sha256"
        if not ptx_path.exists() or not sha_path.exists():
            raise FileNotFoundError(f"no prebuilt PTX for {case.key(name)} in {root}")
        if sha_path.read_text().strip() != sha256_text(case.render("canonical" if config == "sweep" else config)[0]):
            raise AssertionError(f"prebuilt PTX for {case.key(config)} is stale: regenerate it with warpforthc")
        return ptx_path.read_text()

    return load


def base_head_bundle_from_ptx(cases: Iterable[Case], out_dir: Path,
                              variants: Mapping[str, Callable[[Case, str], str]], *,
                              version: str = "prebuilt-{label}") -> BundleManifest:
    """A base/head bundle (one sub-bundle per label, as ``wfbench build --warpforthc base=… --warpforthc
    head=…`` writes it) whose WarpForth PTX of each label comes from ``variants[label](case, config)``.

    ``version`` is each label's ``warpforthc`` version, ``{label}`` replaced by the label.
    """
    cases = list(cases)
    out_dir = Path(out_dir)
    subs = {label: bundle_from_ptx(cases, out_dir / label, wf_ptx, compiler_label=label,
                                   warpforthc=CompilerInfo(kind="warpforthc", version=version.format(label=label)))
            for label, wf_ptx in variants.items()}
    top = attrs.evolve(next(iter(subs.values())), cases=(), labels=tuple(subs), compiler_label="")
    write_manifest(out_dir, top)
    return top


_DECLARATION = re.compile(r"^\s*(\.reg|\.shared|\.local|\.pragma|//|$)")


def inject_at_entry(ptx: str, kernel: str, instruction: str) -> str:
    """``ptx`` with ``instruction`` (one PTX statement, e.g. ``bar.sync 0;``) inserted as the first
    statement of ``kernel``'s body, after its declarations: an injected regression for tests."""
    m = re.search(rf"\.entry\s+{re.escape(kernel)}\s*\(", ptx)
    if m is None:
        raise ValueError(f"no entry function {kernel!r} in the PTX")
    body = ptx.index("{", ptx.index(")", m.end())) + 1
    lines = ptx[body:].split("\n")
    n = next(k for k, line in enumerate(lines) if k > 0 and not _DECLARATION.match(line))
    lines.insert(n, f"\t{instruction.strip()}")
    return ptx[:body] + "\n".join(lines)
