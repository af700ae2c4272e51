"""``wfbench coverage``: which of WarpForth's word families the installed cases use."""

from __future__ import annotations

import click

from wfbench_core.cli.common import case_options, load_registry

__all__ = ["coverage_cmd"]  # internal, not the plugin API


@click.command("coverage")
@case_options
@click.option("--warpforthc", "warpforthc", metavar="PATH",
              help="Also probe which listed words this warpforthc accepts (a tiny kernel per word); implies "
                   "--probe.")
@click.option("--probe", is_flag=True,
              help="Probe the warpforthc that build would use ($WFBENCH_WARPFORTHC, else PATH).")
@click.option("--fail-on-uncovered", is_flag=True,
              help="Exit 1 when a family (one the probed warpforthc accepts, when probing) is neither used by "
                   "a case nor excused.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def coverage_cmd(case_ids: tuple[str, ...], priorities: tuple[str, ...], warpforthc: str | None, probe: bool,
                 fail_on_uncovered: bool, as_json: bool) -> None:
    """For every word family of WarpForth's language reference: the cases that use it and the words no case
    uses; words the reference does not list; with --probe, the words a warpforthc rejects."""
    from wfbench_core.compiling import coverage, coverage_table

    reg = load_registry()
    cases = reg.select(case_ids, priorities=priorities)
    origins = {c.id: reg.cases[c.id].plugin for c in cases}
    language = coverage.load_language()
    m = coverage.coverage_map(coverage.case_sources(cases, origins), language,
                              coverage.load_excuses(language), origins)
    verdicts, binary = None, ""
    if warpforthc or probe:
        from wfbench_core.compiling.compile import find_warpforthc
        from wfbench_core.compiling.coverage_probe import probe as run_probe

        path = find_warpforthc(warpforthc)
        binary = str(path)
        verdicts = run_probe(path, [*sorted(language.words), *(u.word for u in m.unknown)])
    if as_json:
        import json

        click.echo(json.dumps(coverage_table.as_json(m, verdicts, binary), indent=1))
    else:
        click.echo(coverage_table.render(m, verdicts, binary))
    keep = None if verdicts is None else coverage_table.supported(m, verdicts)
    uncovered = m.uncovered(keep)
    if fail_on_uncovered and uncovered:
        raise coverage.UncoveredError(
            f"{len(uncovered)} word famil{'y is' if len(uncovered) == 1 else 'ies are'} neither used by a case "
            f"nor excused: {', '.join(r.family.title for r in uncovered)} (add a case that uses "
            f"{'it' if len(uncovered) == 1 else 'them'}, or its reason to {coverage.EXCUSES_FILE.name})")
