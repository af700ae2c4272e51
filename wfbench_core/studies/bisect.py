"""Which WarpForth commit made a case slower: a binary search over the commits between GOOD and BAD.

Every step is one base/head run on one GPU: base is warpforthc built at GOOD, head is warpforthc built at
the midpoint, both timed against the same CUDA samples, and the case's verdict (SAME, SLOWER, FASTER,
AMBIGUOUS: :mod:`wfbench_core.review.case_verdict`) decides which half holds the change. Before any search, GOOD
against BAD must be SLOWER; otherwise there is nothing to find and the search stops there.

Counting base/head runs: one for GOOD against BAD, then ``ceil(log2(n))`` for the ``n`` commits after GOOD
up to BAD (BAD included): 4 runs for 8 commits. Anything other than SLOWER at a midpoint (SAME, FASTER,
AMBIGUOUS) counts as "not yet slower", so the search moves later; the report lists every run's verdict.

The search takes two callables, so any compiler builder and any way of timing plugs in:

* ``build(commit) -> Path``: warpforthc built at that commit (each commit is built at most once per search;
  :func:`command_builder` builds from a git checkout with a shell command and caches by commit);
* ``judge(base, head) -> Outcome``: one base/head run of the case with those two compilers
  (:func:`gpu_judge` builds the bundle and executes it on this machine's GPU).

The first SLOWER commit is reported with the verdict table of its run and the head-against-base explanation
of it against its parent (:mod:`wfbench_core.review.headbase`).
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.host.childenv import child_env
from wfbench_core.review.case_verdict import SLOWER

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "BUILD_TIMEOUT_S", "BUILT", "Bisection", "Outcome", "Progress", "Step", "bundle_explainer", "command_builder",
    "commits_between", "gpu_judge", "max_runs", "render_markdown", "resolve", "search", "subject",
]

Progress = Callable[[str], None]
BUILD_TIMEOUT_S = 3600
BUILT = ".wfbench-built"  # written into a cached build folder once its build succeeded


@attrs.frozen
class Outcome:
    """One base/head run of the case."""

    verdict: str  # SAME | SLOWER | FASTER | AMBIGUOUS
    table: str = ""  # the run's verdict table (Markdown)
    result: Path | None = None  # the run's result file, when kept


@attrs.frozen
class Step:
    base: str
    head: str
    outcome: Outcome


@attrs.frozen
class Bisection:
    good: str
    bad: str
    commits: tuple[str, ...]  # after GOOD up to BAD, oldest first
    steps: tuple[Step, ...]  # the base/head runs, in the order they ran
    first_slower: str | None = None
    parent: str | None = None  # the commit before it (GOOD or a commit between)
    explanation: tuple[str, ...] = ()

    @property
    def runs(self) -> int:
        return len(self.steps)

    @property
    def found(self) -> bool:
        return self.first_slower is not None


def max_runs(n_commits: int) -> int:
    """Base/head runs a search over ``n_commits`` commits after GOOD takes at most."""
    return 1 + math.ceil(math.log2(n_commits)) if n_commits > 1 else 1


def search(good: str, commits: Sequence[str], *, build: Callable[[str], Path],
           judge: Callable[[Path, Path], Outcome], explain: Callable[[Path, Path], list[str]] | None = None,
           progress: Progress = lambda msg: None) -> Bisection:
    """The first of ``commits`` (after ``good``, oldest first, the last one BAD) whose head is SLOWER than
    ``good``'s."""
    if not commits:
        raise WfbenchError(f"no commits after {good[:10]}: nothing to bisect")
    built: dict[str, Path] = {}

    def binary(commit: str) -> Path:
        if commit not in built:
            progress(f"building warpforthc at {commit[:10]}")
            built[commit] = build(commit)
        return built[commit]

    def run(head: str) -> Outcome:
        progress(f"base/head run {len(steps) + 1}: {good[:10]} against {head[:10]}")
        out = judge(binary(good), binary(head))
        steps.append(Step(good, head, out))
        progress(f"  {head[:10]}: {out.verdict}")
        return out

    steps: list[Step] = []
    if run(commits[-1]).verdict != SLOWER:
        return Bisection(good, commits[-1], tuple(commits), tuple(steps))
    lo, hi = -1, len(commits) - 1  # commits[lo] (GOOD at -1) is not slower, commits[hi] is
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if run(commits[mid]).verdict == SLOWER:
            hi = mid
        else:
            lo = mid
    culprit, parent = commits[hi], commits[lo] if lo >= 0 else good
    lines = explain(binary(parent), binary(culprit)) if explain is not None else []
    return Bisection(good, commits[-1], tuple(commits), tuple(steps), culprit, parent, tuple(lines))


# -------------------------------------------------------------------------------------------------
# git


def _git(repo: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=120,
                              env=child_env())
    except OSError as exc:
        raise WfbenchError(f"cannot run git: {exc.strerror}") from None
    if proc.returncode != 0:
        raise WfbenchError(f"{repo}: git {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1:] or '?'}")
    return proc.stdout.strip()


def resolve(repo: Path, rev: str) -> str:
    """The full commit hash of ``rev`` in ``repo``; one clear line when it is not a commit there."""
    if not (Path(repo) / ".git").exists() and _try_git(repo, "rev-parse", "--git-dir") is None:
        raise WfbenchError(f"{repo}: not a git repository; --warpforth takes a WarpForth checkout")
    found = _try_git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if not found:
        raise WfbenchError(f"{repo}: {rev!r} is not a commit there")
    return found


def _try_git(repo: Path, *args: str) -> str | None:
    try:
        return _git(repo, *args)
    except WfbenchError:
        return None


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """The first-parent commits after GOOD up to BAD, oldest first; GOOD must be an ancestor of BAD."""
    g, b = resolve(repo, good), resolve(repo, bad)
    if g == b:
        raise WfbenchError(f"GOOD and BAD are the same commit ({g[:10]}): nothing to bisect")
    if _try_git(repo, "merge-base", "--is-ancestor", g, b) is None:
        raise WfbenchError(f"{good} ({g[:10]}) is not an ancestor of {bad} ({b[:10]}); give GOOD first, then BAD")
    out = _git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{g}..{b}")
    return out.split()


def subject(repo: Path, commit: str) -> str:
    return _try_git(repo, "log", "-1", "--format=%s", commit) or ""


# -------------------------------------------------------------------------------------------------
# building warpforthc at a commit


def command_builder(repo: Path, cache: Path, command: str, binary: str, *,
                    progress: Progress = lambda msg: None) -> Callable[[str], Path]:
    """``build(commit)``: the commit's tree (``git archive``) in ``cache/<recipe>/<commit>``, ``command`` run there by
    the shell, ``binary`` (relative to the tree) returned. Built once: a folder whose build finished is
    reused; one whose build failed or stopped is built again. The build stays where it was made (warpforthc
    reads its libdevice bitcode from the absolute path it was built at)."""

    recipe = hashlib.sha256(f"{command}\0{binary}".encode()).hexdigest()[:12]  # another recipe, another build

    def build(commit: str) -> Path:
        where = Path(cache) / recipe / commit
        out = where / binary
        if (where / BUILT).exists() and out.is_file():
            return out
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        with tempfile.TemporaryFile() as tar:
            subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], stdout=tar, check=True,
                           env=child_env())
            tar.seek(0)
            subprocess.run(["tar", "-x", "-C", str(where)], stdin=tar, check=True, env=child_env())
        progress(f"  {command} (in {where})")
        try:
            proc = subprocess.run(command, shell=True, cwd=where, capture_output=True, text=True,
                                  timeout=BUILD_TIMEOUT_S, env=child_env())
        except subprocess.TimeoutExpired:
            raise WfbenchError(f"building warpforthc at {commit[:10]} took over {BUILD_TIMEOUT_S} s") from None
        if proc.returncode != 0 or not out.is_file() or not os.access(out, os.X_OK):
            tail = "; ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise WfbenchError(f"building warpforthc at {commit[:10]} failed ({command!r} exit {proc.returncode}"
                               f"{'' if out.is_file() else f', no {binary}'}): {tail or 'no output'}")
        (where / BUILT).write_text(commit + "\n")
        return out

    return build


# -------------------------------------------------------------------------------------------------
# one base/head run on this machine's GPU


def gpu_judge(registry: Any, case_id: str, *, execute: Any, arch: str | None, out_dir: Path,
              progress: Progress = lambda msg: None) -> Callable[[Path, Path], Outcome]:
    """``judge(base, head)``: build the case's base/head bundle with the two compilers and execute it here
    (the executor's supervised worker, as the local transport does); the verdict comes from
    :func:`wfbench_core.review.case_verdict.base_head`. Each run's result is kept in ``out_dir``."""
    import attrs as _attrs

    from wfbench_core.record.request import RunRequest
    from wfbench_core.review import compare_table
    from wfbench_core.review.case_verdict import base_head
    from wfbench_core.run import runner
    from wfbench_core.run.executor import execute as run_bundle

    case = registry.case(case_id)
    count = [0]

    def judge(base: Path, head: Path) -> Outcome:
        count[0] += 1
        request = RunRequest(cases=registry.refs([case]), execute=_attrs.evolve(execute, case_ids=(case_id,)),
                             compilers={"base": base, "head": head}, check_cuda=False)
        out = Path(out_dir) / f"run-{count[0]}.json"
        with tempfile.TemporaryDirectory(prefix="wfbench-bisect-") as tmp:
            runner.build(request, registry, Path(tmp) / "bundle", arch=arch, progress=progress)
            result = run_bundle(Path(tmp) / "bundle", registry=registry, request=request.execute,
                                progress=progress, out=out)
        cmp, verdicts = base_head(result, name=out.name)
        return Outcome(verdicts.get(case_id, "AMBIGUOUS"), compare_table.render_markdown(cmp), out)

    return judge


def bundle_explainer(registry: Any, case_id: str, arch: str) -> Callable[[Path, Path], list[str]]:
    """``explain(base, head)``: head against base of the case, from a base/head bundle the two compilers build
    here (ptxas and cuobjdump; no GPU)."""
    from wfbench_core.compiling.bundle import build_bundle
    from wfbench_core.review.headbase import explain_bundle

    case = registry.case(case_id)

    def explain(base: Path, head: Path) -> list[str]:
        with tempfile.TemporaryDirectory(prefix="wfbench-bisect-") as tmp:
            build_bundle([case], Path(tmp) / "bundle", warpforthc={"base": base, "head": head}, arch=arch)
            try:
                return explain_bundle(case, Path(tmp) / "bundle", arch)
            except WfbenchError as exc:
                return [f"No head-against-base explanation: {exc}"]

    return explain


# -------------------------------------------------------------------------------------------------
# the report


def render_markdown(b: Bisection, case_id: str, *, subjects: dict[str, str] | None = None) -> str:
    """The search in Markdown: every run's verdict, then the first SLOWER commit with its verdict table and
    its head-against-base explanation (or why the search stopped)."""
    from wfbench_core.review import markdown as md

    subjects = subjects or {}
    n = len(b.commits)
    lines = [f"### wfbench bisect {case_id}: {b.good[:10]}..{b.bad[:10]}", "",
             f"{n} commit{'s' * (n != 1)} after GOOD up to BAD; {b.runs} base/head run{'s' * (b.runs != 1)} "
             f"(at most {max_runs(n)}: one for GOOD against BAD, then a binary search), base = GOOD in every run.",
             ""]
    rows = [["run", "base", "head", "verdict"]]
    rows += [[str(k), f"`{s.base[:10]}`", f"`{s.head[:10]}` {md.cell(subjects.get(s.head, ''))}".rstrip(),
              f"**{s.outcome.verdict}**" if s.outcome.verdict == SLOWER else s.outcome.verdict]
             for k, s in enumerate(b.steps, 1)]
    lines += md.table(rows) + [""]
    if not b.found:
        first = b.steps[0].outcome
        lines += [f"GOOD against BAD is {first.verdict}, not {SLOWER}: nothing to bisect.", ""]
        return "\n".join(lines + (first.table.splitlines() if first.table else [])).rstrip() + "\n"
    assert b.first_slower is not None and b.parent is not None
    run = next(s for s in b.steps if s.head == b.first_slower)
    lines += [f"First commit whose head is {SLOWER}: `{b.first_slower}` {subjects.get(b.first_slower, '')}".rstrip(),
              f"(its parent `{b.parent[:10]}` is not).", ""]
    lines += run.outcome.table.splitlines()
    if b.explanation:
        lines += ["", f"#### {b.first_slower[:10]} against its parent {b.parent[:10]}", "", *b.explanation]
    return "\n".join(lines).rstrip() + "\n"
