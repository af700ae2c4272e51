"""The workflow tests, who may write: the job conditions evaluated for every way a run can start, and the safety properties on the jobs that run (permissions, the owner's consent, secrets, timeouts, pinned actions).

The machinery (the evaluator, the runner, the stand-ins) is tests/workflow_kit.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from workflow_kit import (  # tests/ is on sys.path
    ACTION_FILE,
    ACTION_REF,
    CALLER,
    CALLER_OWNER,
    PINNED,
    PR_COMMENT,
    PR_COMMENT_JOBS,
    PR_EVENTS,
    WORKFLOWS,
    WRITING_COMMANDS,
    all_workflows,
    caller_ctx,
    evaluate,
    every_pull_request_run,
    expanded_steps,
    github_ctx,
    is_local_action,
    load,
    load_action,
    owner_consented,
    pr_reachable_jobs,
    ran,
    run_jobs,
    triggered,
    warpforth_workflow,
    workflows_and_callers,
    write_scopes,
    writing_steps,
    yaml,
)


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
    assert writing_steps({"steps": [{"uses": "./", "with": {"mode": "execute"}}]}) == []


# -------------------------------------------------------------------------------------------------
# the safety properties
# -------------------------------------------------------------------------------------------------


def test_pull_request_runs_reach_no_write_permission_and_no_writing_step() -> None:
    reachable = pr_reachable_jobs()
    # the labelled run benchmarks every model, merges the verdicts and writes its one comment, and that is all
    assert reachable.get("gpu-bench.yml") == {"plan", "build", "bench", "summary", "comment"}
    assert reachable.get("ci.yml") == {"test"}
    assert reachable.get("warpforth:ci.yml") == {"build-and-test", "gpu-build", "gpu", "gpu-comment"}
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
    everything, benched = {"plan", "build", "bench", "summary", "persist"}, {"plan", "build", "bench", "summary"}
    assert ran(run_jobs(wf, github_ctx("push"))) == everything
    # a model whose build failed is still rented for the others (its own leg fails before renting)
    assert ran(run_jobs(wf, github_ctx("push"), fail={"build"})) == everything
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
    both = {"build-and-test", "gpu-build", "gpu", "gpu-persist"}
    bench_only, nothing = {"build-and-test", "gpu-build", "gpu"}, set()
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
        # no bundle: nothing is rented
        assert (ran(run_jobs(wf, gh, fail={"gpu-build"})) if started else set()) == expected - {
            "gpu", "gpu-persist"}, desc
    assert write_scopes(wf["jobs"]["gpu-persist"]) == ["contents"] and write_scopes(wf["jobs"]["gpu"]) == []
    assert write_scopes(wf["jobs"]["gpu-build"]) == []
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
    assert {name: jobs[name]["permissions"] for name in ("plan", "build", "bench", "summary")} == {
        name: {"contents": "read"} for name in ("plan", "build", "bench", "summary")}


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
    # inside the action, the key reaches the check (as a yes/no: build mode refuses it, execute mode needs it) and
    # the execute step that hands it over as a file (the benchmark and the clean-up read that file)
    reach = [s["name"] for s in load_action()["runs"]["steps"] if "inputs.vast-api-key" in yaml.safe_dump(s)]
    assert reach == ["Check the inputs", "Hand the Vast.ai key to wfbench as a file (no compiler runs in this job)"]
    assert next(s for s in load_action()["runs"]["steps"] if s["name"] == reach[1])["if"] == "inputs.mode == 'execute'"
    for s in load_action()["runs"]["steps"]:
        assert "inputs.vast-api-key" not in str(s.get("run", "")) and "secrets." not in yaml.safe_dump(s)
    check = next(s for s in load_action()["runs"]["steps"] if s["name"] == "Check the inputs")
    assert check["env"]["HAS_KEY"] == "${{ inputs.vast-api-key != '' }}"


# -------------------------------------------------------------------------------------------------
# the trust boundary: the tree under test and the Vast.ai key never share a job
# -------------------------------------------------------------------------------------------------

#: what builds or runs the tree under test: its build system, wfbench building compilers or compiling the bundle
BUILDS_THE_TREE = re.compile(r"\b(cmake|ninja|make)\b|\bwfbench[\"']?\s+(build|compilers|bisect)\b|--warpforthc?\b")
RENTAL_ENVIRONMENT = "gpu-rental"


def key_jobs(wf: dict[str, Any]) -> list[str]:
    """The jobs that reference the Vast.ai key."""
    return [name for name, job in wf["jobs"].items() if "secrets.VAST_API_KEY" in yaml.safe_dump(job)]


def build_jobs(wf: dict[str, Any]) -> list[str]:
    """The jobs that build or run the tree under test (a build command, or the action in build mode)."""
    return [name for name, job in wf["jobs"].items()
            if any(BUILDS_THE_TREE.search(str(s.get("run", ""))) for s in expanded_steps(job))]


def action_uses(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if is_local_action(s.get("uses"))]


GPU_WORKFLOWS = ("gpu-bench.yml", "warpforth:ci.yml")


def test_no_job_that_holds_the_vast_key_checks_out_or_builds_the_tree_under_test() -> None:
    """The rental job gets the bundle and nothing else of the tree under test: no checkout of WarpForth, no
    build, no compiler cache, the action in execute mode only. Its one checkout (gpu-bench.yml, for ``uses:
    ./``) is this repository's own commit; the action's own checkout is of the history branch, read-only."""
    action_default = load_action()["inputs"]["history-branch"]["default"]
    for wf_name in GPU_WORKFLOWS:
        wf = workflows_and_callers()[wf_name]
        assert key_jobs(wf), f"{wf_name}: no job rents"
        for name in key_jobs(wf):
            job = wf["jobs"][name]
            assert [s.get("with", {}).get("mode") for s in action_uses(job)] == ["execute"], f"{wf_name}:{name}"
            for step in expanded_steps(job):
                where = f"{wf_name}:{name}: {step.get('name') or step.get('uses')}"
                assert not BUILDS_THE_TREE.search(str(step.get("run", ""))), f"{where} builds the tree under test"
                uses = str(step.get("uses", "")).split("@")[0]
                assert not uses.startswith("actions/cache"), f"{where} restores executables"
                if uses == "actions/checkout":
                    given = step.get("with") or {}
                    assert given.get("persist-credentials") is False, where
                    if given.get("ref") == "${{ inputs.history-branch }}":  # the action's read of the history
                        assert action_default == "benchmark-data" and set(given) == {
                            "ref", "path", "persist-credentials"}, where
                        continue
                    assert wf_name == "gpu-bench.yml" and set(given) == {"persist-credentials"}, \
                        f"{where} checks out another tree than this repository's own commit"


def test_the_rental_job_runs_under_a_protected_environment_and_alone_sees_the_key() -> None:
    for wf_name in GPU_WORKFLOWS:
        wf = workflows_and_callers()[wf_name]
        for name in key_jobs(wf):
            job = wf["jobs"][name]
            env = job.get("environment")
            assert (env if isinstance(env, str) else (env or {}).get("name")) == RENTAL_ENVIRONMENT, \
                f"{wf_name}:{name} holds the key outside the protected environment"
            assert job["permissions"] == {"contents": "read"}, f"{wf_name}:{name}"
            (step,) = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
            assert step["with"]["vast-api-key"] == "${{ secrets.VAST_API_KEY }}" and step["with"]["mode"] == "execute"


def test_the_build_job_holds_no_secret_and_hands_over_only_the_bundle_artifact() -> None:
    """Every job that builds the tree under test references no secret at all and has a read-only token; the
    rental job needs it, takes none of its outputs, and downloads the artifact it uploaded, by the same name."""
    action = load_action()
    steps = {s["name"]: s for s in action["runs"]["steps"]}
    upload = [s for s in action["runs"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")
              and s["with"]["name"] == "${{ inputs.bundle-artifact }}"]
    download = [s for s in action["runs"]["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@")
                and s["with"]["name"] == "${{ inputs.bundle-artifact }}"]
    assert [s["if"] for s in upload] == ["inputs.mode == 'build'"]
    assert [s["if"] for s in download] == ["inputs.mode == 'execute'"]
    assert "Hand the bundle to the execute job (the artifact is all that passes between the two jobs)" in steps
    for wf_name in GPU_WORKFLOWS:
        wf = workflows_and_callers()[wf_name]
        builders = build_jobs(wf)
        gpu_builders = [b for b in builders if any(s.get("with", {}).get("mode") == "build"
                                                   for s in action_uses(wf["jobs"][b]))]
        assert gpu_builders, f"{wf_name}: no job builds the bundle"
        for name in builders:
            job = wf["jobs"][name]
            assert "secrets." not in yaml.safe_dump(job), f"{wf_name}:{name} builds the tree under test and sees a secret"
            assert job.get("permissions", wf.get("permissions")) in ({"contents": "read"}, None), f"{wf_name}:{name}"
            assert "environment" not in job, f"{wf_name}:{name}"
        for name in key_jobs(wf):
            job = wf["jobs"][name]
            needs = [job["needs"]] if isinstance(job["needs"], str) else job["needs"]
            (builder,) = [b for b in gpu_builders if b in needs]
            assert f"needs.{builder}." not in yaml.safe_dump({k: v for k, v in job.items() if k != "if"}), \
                f"{wf_name}:{name} takes something of {builder} that is not the artifact"
            (given,) = [s["with"] for s in action_uses(job)]
            (built,) = [s["with"] for s in action_uses(wf["jobs"][builder])]
            assert given.get("bundle-artifact") == built.get("bundle-artifact"), f"{wf_name}: {builder} -> {name}"


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
