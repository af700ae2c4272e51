"""Execute a bundle on the GPU host: compile the CUDA side here, check, time, and make the result.

This is the one entry point every transport calls (``wfbench execute BUNDLE``), locally or remotely.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import attrs

from wfbench_core import SUITE_VERSION, __version__
from wfbench_core.bundle import BundleManifest, LoadedConfig, load_case_files, read_manifest, read_variants, utcnow
from wfbench_core.case import CONFIGS, Case
from wfbench_core.compile import cuda_compiler, compile_cuda
from wfbench_core.errors import WfbenchError
from wfbench_core.nvml import mark_host
from wfbench_core.registry import Registry
from wfbench_core.results import (
    ERROR,
    SCHEMA_VERSION,
    FAILED,
    MODE_AA,
    MODE_PAIRED,
    OK,
    UNSTABLE,
    CaseResult,
    CompilerInfo,
    Protocol,
    RunResult,
    Source,
    Timing,
)
from wfbench_core.stats import gap, is_unstable, pair_ratio_noise, summarize
from wfbench_core.timer import Measurement, Side

Progress = Callable[[str], None]


@attrs.frozen
class Prepared:
    case: Case
    plugin: str
    files: dict[str, LoadedConfig]


def prepare(bundle: Path, registry: Registry, case_ids: Iterable[str] = ()) -> tuple[BundleManifest, list[Prepared]]:
    """Read a plain bundle and match every case with the installed plugin (no GPU needed)."""
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
                f"case {entry.id!r} of the bundle is not installed on this host"
                + (f" (it came from plugin {entry.plugin})" if entry.plugin else "")
                + "; install the same case plugins here"
            )
        reg = registry.cases[entry.id]
        prepared.append(Prepared(reg.value, reg.plugin, load_case_files(bundle, entry, reg.value)))
    return manifest, prepared


def prepare_all(bundle: Path, registry: Registry, case_ids: Iterable[str] = ()
                ) -> tuple[dict[str, BundleManifest], dict[str, dict[str, Prepared]]]:
    """Every variant of a bundle: ``({label: manifest}, {case id: {label: Prepared}})``, cases in bundle order."""
    manifests: dict[str, BundleManifest] = {}
    by_case: dict[str, dict[str, Prepared]] = {}
    for label, (_, folder) in read_variants(bundle).items():
        manifest, prepared = prepare(folder, registry, case_ids)
        manifests[label] = manifest
        for p in prepared:
            by_case.setdefault(p.case.id, {})[label] = p
    return manifests, by_case


def validate(bundle: Path, registry: Registry, case_ids: Iterable[str] = ()) -> list[str]:
    """Check a bundle against the installed cases without touching a GPU; returns the case IDs."""
    return list(prepare_all(bundle, registry, case_ids)[1])


def execute(
    bundle: Path,
    *,
    registry: Registry,
    protocol: Protocol = Protocol(),
    mode: str = MODE_PAIRED,
    case_ids: Sequence[str] = (),
    cuda_compiler_kind: str = "auto",
    progress: Progress = lambda msg: None,
) -> RunResult:
    """Run every case of the bundle (or ``case_ids``) on this host's GPU and return the result.

    A base/head bundle times every compiler's PTX and the CUDA PTX in the same interleaved rounds and
    reports one CaseResult per compiler label, all against the same CUDA samples.
    """
    t_start = time.perf_counter()
    manifests, by_case = prepare_all(bundle, registry, case_ids)
    if mode == MODE_AA and len(manifests) > 1:
        raise WfbenchError("--aa times the CUDA PTX against itself; it takes a single warpforthc, not base/head")
    timer = registry.make_timer(protocol)
    environment = timer.environment()  # raises NoGpuError with one clear line when there is no GPU
    arch = "sm_" + environment.compute_capability.replace(".", "")
    cuda = cuda_compiler(cuda_compiler_kind)
    progress(f"GPU {environment.gpu_name} ({arch}), driver {environment.driver_version}; "
             f"CUDA side: {cuda.kind} {cuda.version} {' '.join(cuda.flags)}")
    copy = timer.copy_gbps()
    environment = attrs.evolve(environment, copy_gbps=copy)
    if copy:
        progress(f"device-to-device copy: {copy:.0f} GB/s (read + write)")

    results: list[CaseResult] = []
    for case_id, variants in by_case.items():
        spent = time.perf_counter() - t_start
        if protocol.suite_budget_s and spent > protocol.suite_budget_s:
            why = f"not run: the suite budget of {protocol.suite_budget_s:.0f} s was spent ({spent:.0f} s)"
            progress(f"{case_id}: {why}")
            results.extend(_error_result(case_id, p.case, p.plugin, label, mode, why) for label, p in variants.items())
            continue
        progress(f"{case_id}: checking and timing")
        for result in run_case(variants, timer=timer, protocol=protocol, cuda=cuda, arch=arch, mode=mode):
            progress(_one_line(result))
            results.append(result)

    for label, manifest in manifests.items():
        for cid, why in manifest.failures.items():
            if case_ids and cid not in case_ids:
                continue
            reg = registry.cases.get(cid)
            results.append(_error_result(cid, reg.value if reg else None, reg.plugin if reg else "", label, mode, why))

    first = next(iter(manifests.values()))
    return RunResult(
        schema_version=SCHEMA_VERSION,
        suite_version=SUITE_VERSION,
        wfbench_version=__version__,
        created=utcnow(),
        mode=mode,
        protocol=protocol,
        environment=mark_host(environment, results),
        warpforthc=first.warpforthc,
        cuda_compiler=cuda,
        cases=tuple(results),
        source=first.source,
        wall_s=time.perf_counter() - t_start,
        compilers={label: m.warpforthc for label, m in manifests.items() if label},
    )


def _error_result(case_id: str, case: Case | None, plugin: str, label: str, mode: str, why: str) -> CaseResult:
    """A case that was not checked or timed (it did not compile, or the suite budget was spent)."""
    return CaseResult(id=case_id, version=case.version if case else 0, priority=case.priority if case else "",
                      fingerprint=case.fingerprint() if case else "", status=ERROR, mode=mode, message=why,
                      plugin=plugin, compiler_label=label)


def _wf_label(label: str) -> str:
    return f"wf:{label}" if label else "wf"


def run_case(variants: dict[str, Prepared], *, timer: object, protocol: Protocol, cuda: CompilerInfo, arch: str,
             mode: str) -> list[CaseResult]:
    """Check and time one case: every WarpForth variant (one, or base and head) against the CUDA side."""
    some = next(iter(variants.values()))
    case = some.case
    work = case.work(case.sizes["canonical"])
    bases = {
        label: CaseResult(
            id=case.id, version=case.version, priority=case.priority, fingerprint=case.fingerprint(),
            status=ERROR, mode=mode, metric=case.metric, work_bytes=work.bytes, work_flops=work.flops,
            cuda_source_sha256=case.cuda_source_sha256(),
            warpforth_source_sha256=prep.files["canonical"].compile_wf.source_sha256,
            plugin=prep.plugin, compiler_label=label, compile_wf=prep.files["canonical"].compile_wf,
        )
        for label, prep in variants.items()
    }

    def all_(**changes: object) -> list[CaseResult]:
        return [attrs.evolve(b, **changes) for b in bases.values()]  # type: ignore[arg-type]

    cuda_ptx: dict[str, str] = {}
    compile_s = 0.0
    try:
        for config in CONFIGS:
            compiled = compile_cuda(some.files[config].cuda_source, case_id=f"{case.id}[{config}]", arch=arch,
                                    compiler=cuda)
            cuda_ptx[config] = compiled.ptx
            compile_s += compiled.record.wall_s
            if config == "canonical":
                bases = {k: attrs.evolve(b, compile_cuda=compiled.record) for k, b in bases.items()}
    except WfbenchError as exc:
        return all_(message=str(exc))

    if mode == MODE_AA:
        sides = [Side("wf", case.cuda_kernel, cuda_ptx)]
    else:
        sides = [Side(_wf_label(label), case.wf_kernel, {c: prep.files[c].wf_ptx for c in CONFIGS})
                 for label, prep in variants.items()]
    sides.append(Side("cuda", case.cuda_kernel, cuda_ptx))
    try:
        m: Measurement = timer.measure(case, sides, reference_label="cuda")  # type: ignore[attr-defined]
    except WfbenchError as exc:
        return all_(message=str(exc))

    out = []
    cu = summarize(m.samples_us["cuda"]) if m.passed else None
    for label, base in bases.items():
        prep = variants[label]
        side = _wf_label(label)
        costs = attrs.evolve(m.costs, compile_cuda_s=compile_s,
                             compile_wf_s=sum(prep.files[c].compile_wf.wall_s for c in CONFIGS))
        base = attrs.evolve(base, checks=m.checks, costs=costs, attrs_wf=m.kernel_attrs.get(side),
                            attrs_cuda=m.kernel_attrs.get("cuda"))
        if not m.passed or cu is None:
            out.append(attrs.evolve(base, status=FAILED, message=m.message))
            continue
        wf = summarize(m.samples_us[side])
        timing = Timing(
            launches_per_sample=m.launches_per_sample, warmup_s=m.warmup_s, warpforth=wf, cuda=cu,
            gap=gap(wf, cu), order=tuple(m.first),
            clocks_sm_mhz=m.clocks_sm_mhz,
            gbps_wf=_rate(work.bytes, wf.median_us), gbps_cuda=_rate(work.bytes, cu.median_us),
            gflops_wf=_rate(work.flops, wf.median_us), gflops_cuda=_rate(work.flops, cu.median_us),
            pair_ratio_noise=pair_ratio_noise(wf.samples_us, cu.samples_us),
            **m.timing_fields(side),
        )
        unstable = is_unstable(wf, cu, protocol.unstable_noise)
        message = (f"noisy: MAD/median {wf.noise:.1%} (WarpForth), {cu.noise:.1%} (CUDA) > "
                   f"{protocol.unstable_noise:.0%}") if unstable else ""
        out.append(attrs.evolve(base, status=UNSTABLE if unstable else OK, timing=timing, message=message))
    return out


def _rate(amount: int, median_us: float) -> float | None:
    """Bytes or FLOPs per launch at a median time, in G/s."""
    return amount / (median_us * 1e-6) / 1e9 if amount else None


def _one_line(r: CaseResult) -> str:
    name = f"{r.id} [{r.compiler_label}]" if r.compiler_label else r.id
    if r.timing is None:
        return f"{name}: {r.status.upper()}: {r.message}"
    t = r.timing
    return (f"{name}: WF {t.warpforth.median_us:.2f} us, CUDA {t.cuda.median_us:.2f} us, gap {t.gap:.3f}x, "
            f"noise {max(t.warpforth.noise, t.cuda.noise):.2%} [{r.status}]")


def detect_source(commit: str | None = None, warpforthc: Path | None = None, label: str = "") -> Source:
    """Commit and CI run of what is benchmarked: the flag, CI variables, or the warpforthc build tree.

    ``WFBENCH_COMMIT`` and ``WFBENCH_REPO`` (``owner/name`` or a URL) name the benchmarked WarpForth tree
    when wfbench runs in another repository's CI; the CI run itself comes from ``GITHUB_*``.
    """
    env = os.environ
    ci_repo = env.get("GITHUB_REPOSITORY", "")
    server = env.get("GITHUB_SERVER_URL", "https://github.com")
    run_id = env.get("GITHUB_RUN_ID", "")
    if not commit and env.get("WFBENCH_COMMIT"):
        commit = env["WFBENCH_COMMIT"]
    if not commit and warpforthc is not None:
        try:
            commit = subprocess.run(["git", "-C", str(Path(warpforthc).parent), "rev-parse", "HEAD"],
                                    capture_output=True, text=True, timeout=10, check=False).stdout.strip()
        except OSError:
            commit = ""
    repo = env.get("WFBENCH_REPO", "") or ci_repo
    if repo and "://" not in repo:
        repo = f"{server}/{repo}"
    return Source(
        git_commit=commit or "",
        git_repo=repo,
        ci_run_id=run_id,
        ci_run_url=f"{server}/{ci_repo}/actions/runs/{run_id}" if ci_repo and run_id else "",
        label=label,
    )
