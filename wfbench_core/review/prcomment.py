"""The pull-request comment: one Markdown comment per pull request, found again by its hidden marker and
rewritten on every run.

It holds the base/head verdict table, the head-against-base explanation of every case whose verdict is not
SAME (:mod:`wfbench_core.review.headbase`, from the run's base/head bundle), the full comparison of
:mod:`wfbench_core.review.compare` folded away, and links to the run's artifacts. Every piece is written with
:mod:`wfbench_core.review.markdown`, like ``compare --markdown`` and ``explain``.

GitHub refuses a comment over 65,536 characters; explanations that would not fit are left out, each with the
command that prints it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.review import compare, compare_table
from wfbench_core.review import markdown as md
from wfbench_core.review.case_verdict import BROKEN, SAME, VERDICTS

if TYPE_CHECKING:
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.results import CompilerInfo, RunResult

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "LIMIT", "MARGIN", "MARKER", "Artifact", "arch_of", "broken_lines", "build", "compiler_mismatches",
    "explain_cases", "parse_artifact", "summary", "verdict_table",
]

#: The first line of the comment; the workflow finds the comment to update by it. Never change it.
MARKER = "<!-- wfbench:pr-comment -->"
LIMIT = 65_536  # GitHub's limit on a comment body, in characters
MARGIN = 1_024  # kept free below it


@attrs.frozen
class Artifact:
    name: str
    url: str


def parse_artifact(text: str) -> Artifact:
    """``NAME=URL`` of ``--artifact``."""
    name, sep, url = text.partition("=")
    if not sep or not name.strip() or not url.startswith(("https://", "http://")):
        raise WfbenchError(f"--artifact {text!r}: expected NAME=URL with an http(s) URL")
    return Artifact(name.strip(), url.strip())


def _gap(c: compare.CaseComparison) -> list[str]:
    if not c.compared or c.gap is None:
        return ["-", c.reason or "not compared"]
    g = c.gap
    return [f"{g.base:.3f}x → {g.head:.3f}x", f"{g.percent:+.2f}% [{(g.ci_low - 1) * 100:+.2f}, "
                                              f"{(g.ci_high - 1) * 100:+.2f}]"]


def verdict_table(cmp: compare.RunComparison, verdicts: Mapping[str, str]) -> list[str]:
    """Case, verdict, gap base → head and its change with the interval; the most urgent verdicts first."""
    order = sorted(cmp.cases, key=lambda c: (VERDICTS.index(verdicts[c.case_id]), c.case_id))
    rows = [["case", "verdict", "gap", "gap change [CI]"]]
    for c in order:
        v = verdicts[c.case_id]
        rows.append([f"{c.case_id} v{c.version}", f"**{v}**" if v != SAME else v, *map(md.cell, _gap(c))])
    return md.table(rows)


def broken_lines(cmp: compare.RunComparison, verdicts: Mapping[str, str]) -> list[str]:
    """What the comment leads with when the head breaks cases: each one with the head's own line."""
    broken = [c for c in cmp.cases if verdicts[c.case_id] == BROKEN]
    if not broken:
        return []
    return [f"**The head breaks {len(broken)} case(s) the base passed:**", "",
            *md.bullets(f"{c.case_id} v{c.version}: {md.cell(c.reason)}" for c in broken), ""]


def summary(verdicts: Mapping[str, str]) -> str:
    counts = {v: sum(1 for x in verdicts.values() if x == v) for v in VERDICTS}
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n)


def build(cmp: compare.RunComparison, verdicts: Mapping[str, str], explanations: Mapping[str, Sequence[str]], *,
          artifacts: Sequence[Artifact] = (), run_url: str = "", limit: int = LIMIT - MARGIN) -> str:
    """The comment. ``explanations`` holds the head-against-base lines of the cases to explain (the others
    are not SAME but have none: the line says why)."""
    head = [MARKER, "## wfbench: head against base", "",
            f"{cmp.base_name} (warpforthc {cmp.base_compiler}) → {cmp.head_name} (warpforthc {cmp.head_compiler}); "
            f"{cmp.platform}" + (f"; [the run]({run_url})" if run_url else ""), "",
            f"**{summary(verdicts)}**", "", *broken_lines(cmp, verdicts)] + verdict_table(cmp, verdicts)
    tail = ["", *md.details("Full comparison (wfbench compare)", compare_table.render_markdown(cmp).splitlines())]
    if artifacts:
        tail += ["", "### Artifacts", "", *md.bullets(f"[{a.name}]({a.url})" for a in artifacts)]
    body: list[str] = []
    for c in sorted((c for c in cmp.cases if verdicts[c.case_id] != SAME),
                    key=lambda c: (VERDICTS.index(verdicts[c.case_id]), c.case_id)):
        section = [f"### {c.case_id}: {verdicts[c.case_id]}, head against base", "",
                   *explanations.get(c.case_id, ["(no explanation)"])]
        size = sum(len(x) + 1 for x in head + body + section + tail)
        if size > limit:
            section = [f"### {c.case_id}: {verdicts[c.case_id]}, head against base", "",
                       f"Explanation left out to keep this comment under GitHub's limit: run `wfbench explain "
                       f"{c.case_id} --bundle BASEHEAD`."]
        body += [""] + section
    return "\n".join(head + body + tail) + "\n"


def explain_cases(registry: Registry, bundle: Path, case_ids: Sequence[str], arch: str, *,
                  progress: Callable[[str], None] = lambda msg: None) -> dict[str, list[str]]:
    """Head against base of each case from the bundle; a case that cannot be explained gets one line why
    (it never costs the others, nor the comment)."""
    from wfbench_core.review.headbase import explain_bundle

    out = {}
    for cid in case_ids:
        try:
            out[cid] = explain_bundle(registry.case(cid), bundle, arch, progress=progress)
        except WfbenchError as exc:
            out[cid] = [f"No head-against-base explanation: {exc}"]
    return out


def _same_compiler(a: CompilerInfo, b: CompilerInfo) -> bool:
    """One warpforthc build: the binary's hash where both record it, else its version, commit and tree."""
    if a.binary_sha256 and b.binary_sha256:
        return a.binary_sha256 == b.binary_sha256
    return (a.version, a.git_commit, a.source_id) == (b.version, b.git_commit, b.source_id)


def compiler_mismatches(run: RunResult, bundle: Path, where: str) -> list[str]:
    """One line for each label whose warpforthc in ``bundle`` is not the one ``run`` was timed with: the comment
    would explain other PTX than the PTX timed."""
    from wfbench_core.compiling.bundle import read_manifest

    manifest = read_manifest(bundle)
    out = []
    for label in manifest.labels or ("",):
        timed = run.compilers.get(label, run.warpforthc)
        built = read_manifest(bundle / label).warpforthc if label else manifest.warpforthc
        if not _same_compiler(timed, built):
            name = f"{label} warpforthc" if label else "warpforthc"
            out.append(f"{bundle}: its {name} ({built.version}) is not the one {where} was timed with "
                       f"({timed.version}); the explanations are of the bundle's PTX, not of the PTX timed")
    return out


def arch_of(compute_capability: str) -> str | None:
    """``sm_90`` of ``9.0``; None when unknown."""
    major, _, minor = compute_capability.partition(".")
    return f"sm_{major}{minor}" if major.isdigit() and minor.isdigit() else None
