"""``wfbench explain CASE``: why a case's gap is what it is, side by side, in Markdown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from wfbench_core.cli.common import load_registry, progress_printer
from wfbench_core.errors import WfbenchError

if TYPE_CHECKING:
    from wfbench_core.case import Case
    from wfbench_core.gpu.ceiling_profile import LibraryKernel
    from wfbench_core.gpu.child import Recipe
    from wfbench_core.record.results import CaseResult, RunResult
    from wfbench_core.review.explain import SideReport

    Progress = Callable[[str], None]

__all__ = ["explain_cmd"]  # internal, not the plugin API


def _wf_sides(case: Case, bundle: Path | None, wf_ptx: Path | None, warpforthc: str | None, arch: str,
              progress: Progress) -> tuple[dict[str, str], list[str]]:
    """``({label: PTX}, provenance lines)`` of the WarpForth side, from exactly one source."""
    if wf_ptx is not None:
        from wfbench_core.compiling.compile import ptx_problem
        from wfbench_core.record.fsutil import read_text

        ptx = read_text(wf_ptx, "PTX text")
        why = ptx_problem(ptx, case.wf_kernel)
        if why:
            raise WfbenchError(f"{wf_ptx}: {why}; give the WarpForth PTX of case {case.id}")
        return {"": ptx}, [f"WarpForth PTX: {wf_ptx.name}."]
    if bundle is not None:
        from wfbench_core.compiling.bundle import load_case_files, read_variants

        out, lines = {}, []
        for label, (manifest, folder) in read_variants(bundle).items():
            entry = next((e for e in manifest.cases if e.id == case.id), None)
            if entry is None:
                failure = manifest.failures.get(case.id)
                raise WfbenchError(f"case {case.id!r} is not in bundle {folder}"
                                   + (f" ({failure})" if failure else "; build it with 'wfbench build -c " + case.id + "'"))
            out[label] = load_case_files(folder, entry, case)["canonical"].wf_ptx
            lines.append(f"WarpForth PTX{f' ({label})' if label else ''}: bundle {bundle.name}, warpforthc "
                         f"{manifest.warpforthc.version}.")
        return out, lines
    from wfbench_core.compiling.compile import compile_warpforth, find_warpforthc, warpforthc_info

    binary = find_warpforthc(warpforthc)
    progress(f"compiling {case.id} with {binary}")
    compiled = compile_warpforth(case.render("canonical")[0], binary=binary, case_id=case.key("canonical"),
                                 arch=arch)
    return {"": compiled.ptx}, [f"WarpForth PTX: warpforthc {warpforthc_info(binary).version}."]


def _profiled(reports: list[SideReport], case: Case, ncu: str | None, recipe: Recipe | None, progress: Progress
              ) -> list[SideReport]:
    """The reports with each side profiled by Nsight Compute (the launcher loads the plugins of ``recipe``)."""
    from wfbench_core.gpu.profile import profile_side

    profiled = []
    for r in reports:
        progress(f"profiling {case.key('canonical')} {r.side.label} with Nsight Compute")
        p = profile_side(case_id=case.id, ptx=r.side.ptx, kernel=r.side.kernel,
                         label=r.side.label.replace(" ", "-").lower(), ncu=ncu, recipe=recipe)
        profiled.append(attrs.evolve(r, profile=p))
    return profiled


def _with_diagnostics(run: RunResult, result_path: Path, case: Case, label: str, reports: list[SideReport]
                      ) -> tuple[RunResult, CaseResult]:
    """The run with the diagnostics (and profiles) of ``case`` in it, and its updated CaseResult; the run's file is
    never changed (a stored result is write-once)."""
    try:
        result = run.case(case.id, label)
    except KeyError:
        raise WfbenchError(f"{result_path}: has no result for case {case.id!r}"
                           + (f" (compiler {label})" if label else "")) from None
    updated = attrs.evolve(result, diag_wf=reports[0].diag, diag_cuda=reports[-1].diag,
                           profile_wf=reports[0].profile or result.profile_wf,
                           profile_cuda=reports[-1].profile or result.profile_cuda)
    return attrs.evolve(run, cases=tuple(updated if c is result else c for c in run.cases)), updated


def _save(run: RunResult, out: Path, result_path: Path, timed: CaseResult, explained_ptx: str, progress: Progress
          ) -> None:
    """Write ``run`` to the new file ``out`` (never over an existing one), warning when the WarpForth PTX explained
    is not the PTX the run timed (``timed``: the case's result)."""
    from wfbench_core.case import sha256_text
    from wfbench_core.record.fsutil import create_exclusive
    from wfbench_core.record.results import dumps

    if timed.compile_wf is not None and timed.compile_wf.ptx_sha256 != sha256_text(explained_ptx):
        click.echo(f"wfbench: warning: {result_path}: {timed.id} was timed with other WarpForth PTX than the PTX "
                   f"explained here; the diagnostics saved in {out} are of the PTX explained", err=True)
    if not create_exclusive(out, dumps(run).encode()):
        raise WfbenchError(f"{out}: exists; --save-result writes a new file, never over a result")
    progress(f"saved {result_path} with the diagnostics of {timed.id} as {out}")


@click.command("explain")
@click.argument("case_id", metavar="CASE")
@click.option("--bundle", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Take the WarpForth PTX from this bundle ('wfbench build'); a base/head bundle explains both.")
@click.option("--wf-ptx", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Take the WarpForth PTX (canonical configuration) from this file.")
@click.option("--warpforthc", default=None, metavar="PATH",
              help="Compile the WarpForth side with this warpforthc (default without --bundle/--wf-ptx: "
                   "$WFBENCH_WARPFORTHC, then PATH).")
@click.option("--arch", default=None, metavar="sm_XX",
              help="Target of the SASS [default: this host's GPU with --profile, else the bundle's, else sm_90].")
@click.option("--cuda-compiler", type=click.Choice(["auto", "nvcc", "nvrtc"]), default="auto", show_default=True)
@click.option("--profile", is_flag=True, help="Also profile both kernels with Nsight Compute (GPU host).")
@click.option("--ncu", default=None, metavar="PATH", help="Nsight Compute binary [default: $WFBENCH_NCU, PATH, "
              "$CUDA_HOME/bin, /usr/local/cuda/bin, next to nvcc, the nsight-compute folders].")
@click.option("--result", "result_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A run result: show its timing and roofline for the case (read only: never changed).")
@click.option("--save-result", "save_result", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --result: write a copy of it with the diagnostics (and profiles) of CASE to this new file. "
                   "--result itself is never changed.")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the Markdown report here instead of printing it.")
@click.option("--loop-lines", type=click.IntRange(1, 10_000), default=60, show_default=True,
              help="Most SASS lines shown of each hottest loop.")
@click.option("--ceiling", is_flag=True,
              help="Add the case's library ceiling: its routine, what it does differently, tensor-core use, its "
                   "kernels' names, with --result its time and 'WarpForth time / ceiling time', and with "
                   "--profile its kernels' Nsight Compute figures beside both sides'.")
@click.option("--quiet", "-q", is_flag=True)
def explain_cmd(case_id: str, bundle: Path | None, wf_ptx: Path | None, warpforthc: str | None, arch: str | None,
            cuda_compiler: str, profile: bool, ncu: str | None, result_path: Path | None, save_result: Path | None,
            out: Path | None, loop_lines: int, ceiling: bool, quiet: bool) -> None:
    """Explain CASE's gap: static diagnostics of both sides (ptxas, SASS mix, occupancy), the largest SASS
    differences, each side's hottest loop, and with --profile Nsight Compute metrics. Markdown output."""
    from wfbench_core.compiling import compile as comp
    from wfbench_core.compiling.diagnostics import arch_limits
    from wfbench_core.review.explain import ExplainedSide, analyse, render_markdown

    if bundle is not None and wf_ptx is not None:
        raise WfbenchError("give the WarpForth PTX one way: --bundle or --wf-ptx (or neither, to compile it here)")
    if save_result is not None and result_path is None:
        raise WfbenchError("--save-result writes a copy of --result FILE with the diagnostics; give --result too")
    progress = progress_printer(quiet)
    run = None
    if result_path is not None:  # a bad result file is reported before anything is compiled
        from wfbench_core.record.results import load_result

        run = load_result(result_path)
    reg = load_registry()
    case = reg.case(case_id)
    arch = _arch(arch, profile, bundle)
    arch_limits(arch)  # an architecture without known limits is refused before anything is compiled
    wf, provenance = _wf_sides(case, bundle, wf_ptx, warpforthc, arch, progress)
    compiler = comp.cuda_compiler(cuda_compiler)
    cuda_ptx = comp.compile_cuda(case.render("canonical")[1], case_id=case.key("canonical"), arch=arch,
                                 compiler=compiler).ptx
    provenance.append(f"CUDA PTX: {compiler.kind} {compiler.version} {' '.join(compiler.flags)}.")
    sides = [ExplainedSide(f"WarpForth {label}" if label else "WarpForth", case.wf_kernel, ptx)
             for label, ptx in wf.items()]
    sides.append(ExplainedSide("CUDA", case.cuda_kernel, cuda_ptx))
    progress(f"assembling {len(sides)} side(s) for {arch}")
    reports = analyse(case, sides, arch)
    if profile:
        reports = _profiled(reports, case, ncu, reg.recipe, progress)
    result = environment = None
    if run is not None and result_path is not None:
        environment = run.environment
        label = next(iter(wf))
        updated_run, result = _with_diagnostics(run, result_path, case, label, reports)
        if save_result is not None:
            _save(updated_run, save_result, result_path, run.case(case.id, label), wf[label], progress)
    text = render_markdown(case, reports, arch=arch, provenance=provenance, result=result, environment=environment,
                           loop_lines=loop_lines)
    if ceiling:
        text += _ceiling_section(case, reg.ceiling(case.id), result, reports if profile else None, ncu, reg.recipe,
                                 progress)
    if out is not None:
        from wfbench_core.record.fsutil import atomic_write

        atomic_write(out, text)
        progress(f"report: {out}")
    else:
        click.echo(text, nl=False)


def _ceiling_section(case: Case, declared: object, result: CaseResult | None, profiled: list[SideReport] | None,
                     ncu: str | None, recipe: Recipe | None, progress: Progress) -> str:
    """The case's library ceiling; with the sides ``profiled``, its kernels profiled beside them (a failure to
    profile the library is a line of the report, not the end of it)."""
    from wfbench_core.ceiling import Ceiling
    from wfbench_core.review.ceiling_explain import ceiling_markdown

    if profiled is None or not isinstance(declared, Ceiling):
        return ceiling_markdown(case, declared, result)
    from wfbench_core.gpu.ceiling_profile import profile_ceiling

    progress(f"profiling {case.key('canonical')} {declared.library} ceiling with Nsight Compute")
    try:
        kernels: list[LibraryKernel] | str = profile_ceiling(case.id, ncu=ncu, recipe=recipe)
    except WfbenchError as exc:
        kernels = str(exc)
    return ceiling_markdown(case, declared, result, ([(r.side.label, r.profile) for r in profiled], kernels))


def _arch(arch: str | None, profile: bool, bundle: Path | None) -> str:
    """The SASS target: as given, else this host's GPU when profiling, else the bundle's, else sm_90."""
    if arch is None and profile:
        from wfbench_core.gpu.device import Device

        arch = Device().arch()  # NoGpuError (one line) without a GPU
    if arch is None and bundle is not None:
        from wfbench_core.compiling.bundle import read_manifest

        arch = read_manifest(bundle).arch or None
    return arch or "sm_90"
