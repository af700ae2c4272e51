"""A CI run over several GPU models: the plan (one rental per model, within a total cost cap) and the merge of
every model's result into one table (model × case → verdict and gap).

``gpu-bench.yml`` runs :func:`plan` in its ``plan`` job (the matrix of its GPU jobs), and :func:`merge` in its
``summary`` job, which downloads every model's result artifact. Each model is its own series: the history keys
series by GPU model already, so nothing here joins two models. The verdicts are those of
:mod:`wfbench_core.review.case_verdict`, as in ``compare`` and the pull-request comment, and the Markdown is
:mod:`wfbench_core.review.markdown`'s.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.review import markdown as md
from wfbench_core.review.case_verdict import BROKEN, REGRESSIONS, SAME, SLOWER, VERDICTS

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "COMMENT_PART", "RESULT_NAME", "RUN_LOG", "Leg", "ModelOutcome", "comment", "exit_status", "legs_of", "merge",
    "newest_artifact", "outcome", "plan", "result_artifact", "summary", "table",
]

RESULT_NAME = "wfbench-run.json"  # in each model's artifact, as the action writes it
RUN_LOG = "run.log"  # the benchmark step's stderr: why a model has no result
COMMENT_PART = "pr-comment.md"  # a model's part of the pull-request comment (base/head runs of pull requests)
#: exit status of the merge: a model regressed; no regression, but a model has no complete result
REGRESSED, INCOMPLETE = 1, 3


def result_artifact(gpu: str, attempt: str) -> str:
    """The name of a model's result artifact, as the workflow's GPU job uploads it (one per run attempt: a
    re-run job cannot upload a name its run already has)."""
    return f"wfbench-result-{gpu}-{attempt}"


@attrs.frozen
class Leg:
    """One matrix job: the pinned model, its architecture and its price caps."""

    gpu: str
    arch: str
    max_dph: float
    max_cost: float

    def as_json(self) -> dict[str, str]:
        return {"gpu": self.gpu, "arch": self.arch, "max-dph": f"{self.max_dph:.2f}", "max-cost": f"{self.max_cost:.4f}"}


def _cents_up(x: float) -> float:
    """A dollar amount rounded up to 1/100 cent: a cap is never below what it allows."""
    return math.ceil(round(x * 10_000, 6)) / 10_000


def plan(models: str, *, max_dph: float, rental_min: int, max_total_cost: float,
         resolve: Callable[[str], tuple[str, str]]) -> list[Leg]:
    """The legs of ``models`` ("RTX 4090, L40S@1.20, H200@3.50": a model, optionally with its own $/hour cap,
    else ``max_dph``). ``resolve`` turns a name into (pinned key, sm_XX) and refuses unknown ones. Refused in one
    line: an empty or repeated model, a bad price, and a plan whose worst case (every rental at its price cap
    for all of ``rental_min``) costs more than ``max_total_cost``."""
    if rental_min <= 0 or max_total_cost <= 0 or max_dph <= 0:
        raise WfbenchError(f"gpu-models: rental-min ({rental_min}), max-dph ({max_dph:g}) and max-total-cost "
                           f"({max_total_cost:g}) must be positive")
    legs: list[Leg] = []
    for item in (x.strip() for x in models.replace("\n", ",").split(",")):
        if not item:
            continue
        name, at, price = item.partition("@")
        try:
            dph = float(price) if at else max_dph
        except ValueError:
            dph = math.nan
        if not dph > 0:
            raise WfbenchError(f"gpu-models: {item!r}: the price after @ must be a positive $/hour, e.g. "
                               f"'{name.strip()}@1.50'")
        key, arch = resolve(name.strip())
        if any(leg.gpu == key for leg in legs):
            raise WfbenchError(f"gpu-models: {key} is listed twice: each model is one rental and one series")
        legs.append(Leg(key, arch, dph, _cents_up(dph * rental_min / 60)))
    if not legs:
        raise WfbenchError("gpu-models is empty: name at least one GPU model, e.g. 'RTX 4090, H200@3.50'")
    worst = sum(leg.max_cost for leg in legs)
    if worst > max_total_cost + 1e-9:
        prices = " + ".join(f"{leg.gpu} ${leg.max_dph:.2f}/h" for leg in legs)
        raise WfbenchError(f"gpu-models: {len(legs)} rental(s) of up to {rental_min} min at {prices} may cost "
                           f"${worst:.2f}, over max-total-cost ${max_total_cost:.2f}: raise max-total-cost, lower "
                           f"the prices or rental-min, or pin fewer models")
    return legs


def legs_of(text: str) -> list[Leg]:
    """The plan as the workflow passes it on (its JSON)."""
    try:
        return [Leg(d["gpu"], d["arch"], float(d["max-dph"]), float(d["max-cost"]))
                for d in json.loads(text)]
    except (ValueError, KeyError, TypeError) as exc:
        raise WfbenchError(f"the matrix is not the plan job's JSON ({exc}): pass needs.plan.outputs.matrix") from None


# --------------------------------------------------------------------------------------------------------
# the merge
# --------------------------------------------------------------------------------------------------------


@attrs.frozen
class ModelOutcome:
    """What one model's job left: its cells per case and how the run ended."""

    leg: Leg
    artifact: str  # the artifact read (the newest attempt's), "" when there is none
    state: str  # "base/head", "head alone", or why there is no complete result
    cells: Mapping[str, str] = attrs.field(factory=dict)  # case id + version -> cell text
    verdicts: Mapping[str, str] = attrs.field(factory=dict)  # case id -> verdict (base/head runs)
    problem: str = ""  # why the model has no complete result ("" when it has one)
    storable: bool = False  # a result whose every case passed (the history may keep it)
    part: str = ""  # its part of the pull-request comment, when the job wrote one

    @property
    def regressed(self) -> bool:
        return any(v in REGRESSIONS for v in self.verdicts.values())

    def as_json(self) -> dict[str, str]:
        """The leg with the artifact to store (what the persist jobs get)."""
        return {**self.leg.as_json(), "artifact": self.artifact}


def _why_no_result(folder: Path) -> str:
    """The last error line of the benchmark step, or a pointer to the log."""
    log = folder / RUN_LOG
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()] if log.is_file() else []
    errors = [ln for ln in lines if re.match(r"(wfbench: error:|::error::|error:)", ln, re.I)]
    return (errors or [ln for ln in lines if ln] or ["see the log of its benchmark step"])[-1]


def outcome(leg: Leg, folder: Path | None) -> ModelOutcome:
    """One model's outcome from its downloaded artifact folder (None when the job never uploaded one)."""
    from wfbench_core.record.results import ERROR, FAILED, load_result
    from wfbench_core.review.base_head import labels
    from wfbench_core.review.case_verdict import base_head

    if folder is None or not folder.is_dir():
        return ModelOutcome(leg, "", "no result", problem="its job uploaded no result: see that job's log")
    part = (folder / COMMENT_PART).read_text() if (folder / COMMENT_PART).is_file() else ""
    if not (folder / RESULT_NAME).is_file():
        return ModelOutcome(leg, folder.name, "no result", problem=_why_no_result(folder))
    run = load_result(folder / RESULT_NAME)
    failed = {f"{c.id} v{c.version}": c.status.upper() for c in run.cases if c.status in (FAILED, ERROR)}
    cmp, verdicts = base_head(run, name=folder.name) if labels(run) else (None, {})
    alone = {f"{c.case_id} v{c.version}" for c in cmp.cases if c.broken} if cmp else set()
    storable = not failed and not alone  # a run with any failed case is never stored
    failed = {k: v for k, v in failed.items() if k not in alone}  # a case failed on one side alone has a verdict
    problem = (f"{len(failed)} case(s) failed: " + ", ".join(f"{k} ({v})" for k, v in sorted(failed.items()))
               if failed else "")
    if cmp is not None and not failed:
        cells = {}
        for c in cmp.cases:
            v = verdicts[c.case_id]
            change = f" {c.gap.head:.3f}x ({c.gap.percent:+.2f}%)" if c.compared and c.gap is not None else ""
            cells[f"{c.case_id} v{c.version}"] = (f"**{v}**" if v != SAME else v) + change
        return ModelOutcome(leg, folder.name, "base/head", cells, verdicts, storable=storable, part=part)
    cells = {f"{c.id} v{c.version}": (f"{c.timing.gap:.3f}x" if c.timing is not None and not c.compiler_label
                                      else failed.get(f"{c.id} v{c.version}", "")) for c in run.cases
             if not c.compiler_label or f"{c.id} v{c.version}" in failed}
    return ModelOutcome(leg, folder.name, "head alone" if not labels(run) else "base/head", cells, problem=problem,
                        storable=not failed, part=part)


def newest_artifact(artifacts: Path, gpu: str) -> Path | None:
    """The model's artifact of the newest run attempt among the downloaded ones (a re-run of a failed job
    uploads a new one; a job that was not re-run keeps its first)."""
    pattern = re.compile(re.escape(result_artifact(gpu, "")) + r"(\d+)")
    found = [(int(m.group(1)), p) for p in (artifacts.iterdir() if artifacts.is_dir() else ())
             for m in [pattern.fullmatch(p.name)] if m and p.is_dir()]
    return max(found)[1] if found else None


def merge(legs: Sequence[Leg], artifacts: Path) -> list[ModelOutcome]:
    """Every model's outcome, in the plan's order; ``artifacts`` holds one folder per downloaded artifact."""
    return [outcome(leg, newest_artifact(artifacts, leg.gpu)) for leg in legs]


def _counts(o: ModelOutcome) -> str:
    if o.problem:
        return o.problem
    if not o.verdicts:
        return "head alone: no stored base yet, gaps only"
    return ", ".join(f"{n} {v}" for v in VERDICTS for n in [sum(1 for x in o.verdicts.values() if x == v)] if n)


def table(outcomes: Sequence[ModelOutcome]) -> list[str]:
    """The models (how each run ended), then one row per case and one column per model."""
    lines = md.table([["GPU model", "run", "verdicts"],
                      *[[f"{o.leg.gpu} ({o.leg.arch})", o.state, md.cell(_counts(o))] for o in outcomes]])
    cases = sorted({k for o in outcomes for k in o.cells})
    if cases:
        lines += ["", *md.table([["case", *(o.leg.gpu for o in outcomes)],
                                 *[[k, *(md.cell(o.cells.get(k, "-")) for o in outcomes)] for k in cases]])]
    return lines


def summary(outcomes: Sequence[ModelOutcome]) -> str:
    """The job summary: the merged table, what the cells mean, each model in trouble named."""
    lines = [f"## wfbench: {len(outcomes)} GPU model(s)", "",
             "Per case and model: the base/head verdict, head's gap (WarpForth / CUDA median time, lower is "
             "better) and its change against base; where there is no base yet, the gap alone. Each model is its "
             "own series.",
             "", *table(outcomes), ""]
    for o in outcomes:
        if o.regressed:
            slower, broken = ([c for c, v in sorted(o.verdicts.items()) if v == word] for word in (SLOWER, BROKEN))
            said = ([f"head is slower than base on {', '.join(slower)}"] if slower else []) + \
                ([f"head breaks {', '.join(broken)} (failed where base was timed)"] if broken else [])
            lines.append(f"- **{o.leg.gpu}**: {'; '.join(said)}")
        if o.problem:
            lines.append(f"- **{o.leg.gpu}**: {o.problem}")
    return "\n".join(lines) + "\n"


def exit_status(outcomes: Sequence[ModelOutcome]) -> int:
    """REGRESSED when any model regressed, else INCOMPLETE when any model has no complete result, else 0."""
    if any(o.regressed for o in outcomes):
        return REGRESSED
    return INCOMPLETE if any(o.problem for o in outcomes) else 0


def comment(outcomes: Sequence[ModelOutcome], *, limit: int | None = None) -> str:
    """The one pull-request comment of the whole matrix: the merged table, then each model's own part (its
    verdict table and the head-against-base explanation of every case that is not SAME), headings one level
    down. A part over its share of GitHub's limit keeps its verdict table only."""
    from wfbench_core.review.prcomment import LIMIT, MARGIN, MARKER

    limit = LIMIT - MARGIN if limit is None else limit
    head = [MARKER, f"## wfbench: head against base on {len(outcomes)} GPU model(s)", "", *table(outcomes)]
    parts = [o for o in outcomes if o.part.strip()]
    share = (limit - sum(len(x) + 1 for x in head)) // max(1, len(parts))
    body: list[str] = []
    for o in parts:
        lines = [ln for ln in o.part.splitlines() if ln.strip() != MARKER]
        lines = [("#" + ln if ln.startswith("#") else ln) for ln in lines]
        lines[:1] = [f"### {o.leg.gpu}: head against base"] if lines and lines[0].startswith("###") else \
            [f"### {o.leg.gpu}: head against base", *lines[:1]]
        if sum(len(x) + 1 for x in lines) + 1 > share:
            cut = next((i for i, ln in enumerate(lines[1:], 1) if ln.startswith("#### ")), len(lines))
            lines = lines[:cut] + ["", f"Explanations left out to keep this comment under GitHub's limit: the "
                                       f"artifact {o.artifact} holds {COMMENT_PART}."]
        body += ["", *lines]
    for o in outcomes:
        if not o.part.strip() and o.state == "base/head" and not o.problem:
            body += ["", f"### {o.leg.gpu}", "", "No head-against-base text: its job wrote none (see its log)."]
    return "\n".join(head + body) + "\n"
