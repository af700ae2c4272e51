"""Steps of the wfbench GitHub action (action.yml) that are easier in Python than in bash.

    python ci_steps.py base-commit HISTORY_DIR WARPFORTH DEFAULT_REF
                                                      print the WarpForth commit of the newest stored run that is
                                                      on WarpForth's default branch (or nothing)
    python ci_steps.py test-modules MARK CHECKOUT     print the test modules of a wfbench checkout marked MARK
    python ci_steps.py summary RESULTS_DIR            job summary: tests, table, failed cases, base/head verdicts;
                                                      exit 1 naming each failure; writes storable=true|false
    python ci_steps.py head-view RESULT_JSON OUT      the head compiler of a base/head run as a run of its own
    python ci_steps.py gate RESULT_JSON               exit 1 unless every case of the result passed
    python ci_steps.py plan OUT_JSON                  gpu-bench's GPU-model matrix from GPU_MODELS, MAX_DPH,
                                                      RENTAL_MIN, MAX_TOTAL_COST: writes matrix=JSON
    python ci_steps.py merge ARTIFACTS_DIR            the summary of every model's artifact (MATRIX: the plan);
                                                      writes storable=JSON and, with COMMENT_OUT, the PR comment;
                                                      exit 1: a model regressed, 3: a model has no complete result

They read results with wfbench itself, so a case's status means here what it means everywhere. Errors are
one ``::error::`` line (a GitHub annotation) and exit status 1.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

RESULT_NAME = "wfbench-run.json"
TABLE_NAME = "table.txt"
WARPFORTHC_TESTS = "warpforthc-tests.xml"  # pytest's JUnit report of the warpforthc tests on the runner
HEAD = "head"


def command(kind: str, message: str) -> str:
    """A workflow command (``::error::…``) carrying ``message`` as data: ``%``, CR and LF escaped as GitHub's
    runner unescapes them, so no text from a result (a case message, a GPU host's error) can end the line and
    start a command of its own."""
    return f"::{kind}::" + message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def fail(message: str) -> None:
    print(command("error", message))
    sys.exit(1)


def _failed(result: object) -> list[object]:
    from wfbench_core.record.results import ERROR, FAILED

    return [c for c in result.cases if c.status in (FAILED, ERROR)]  # type: ignore[attr-defined]


def _load(path: Path) -> object:
    from wfbench_core.errors import WfbenchError
    from wfbench_core.record.results import load_result

    try:
        return load_result(path)
    except WfbenchError as exc:
        fail(str(exc))
    raise AssertionError  # unreachable


def _label(case: object) -> str:
    label = getattr(case, "compiler_label", "")
    return case.id + (f" [{label}]" if label else "")  # type: ignore[attr-defined]


def _tests_section(results: Path, result: object | None) -> tuple[list[str], list[str]]:
    """The counts of the tests run before the benchmark: (summary lines, errors)."""
    import json

    from wfbench_transports.host_tests import EXTRA_KEY, counts, describe

    rows, errors = [], []
    gpu = getattr(getattr(result, "environment", None), "extra", {}).get(EXTRA_KEY) if result is not None else None
    runs = [("`pytest -m gpu` on the rented GPU", json.loads(gpu) if gpu else None, os.environ.get("GPU_TESTS") == "true"),
            ("`pytest -m warpforthc` here, with the head warpforthc",
             counts((results / WARPFORTHC_TESTS).read_text()) if (results / WARPFORTHC_TESTS).is_file() else None,
             True)]
    for where, data, expected in runs:
        if data is None:
            if expected:
                rows.append(f"| {where} | not run: see the log | | | |")
                errors.append(f"{where.replace('`', '')}: not run")
            continue
        rows.append(f"| {where} | {data['passed']} | {data['failed']} | {data['errors']} | {data['skipped']} |")
        for name in data.get("failed_tests", []):
            errors.append(f"{where.replace('`', '')}: {name} failed")
        if (data["failed"] or data["errors"]) and not data.get("failed_tests"):
            errors.append(f"{where.replace('`', '')}: {describe(data)}")
    if not rows:
        return [], errors
    return ["### Tests before the benchmark", "", "| tests | passed | failed | errors | skipped |",
            "|---|---|---|---|---|", *rows, ""], errors


def _verdict_section(result_path: Path) -> tuple[list[str], list[str]]:
    """A base/head run's verdicts, by ``wfbench compare`` (its exit status says whether head regressed)."""
    import subprocess

    proc = subprocess.run(["wfbench", "compare", str(result_path), "--markdown", "--fail-on-regression"],
                          capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        return [], [f"wfbench compare could not judge the run: {proc.stderr.strip() or proc.stdout.strip()}"]
    lines = [proc.stdout.rstrip(), ""]
    return lines, (["head is slower than base or breaks a case (wfbench compare --fail-on-regression exited 1)"]
                   if proc.returncode == 1 else [])


def summary(results: Path) -> int:
    from wfbench_core.review.base_head import labels

    env = os.environ
    repo = env.get("WFBENCH_REPO") or env.get("GITHUB_REPOSITORY", "")
    lines = [f"## wfbench: WarpForth vs CUDA on {env.get('GPU_NAME', '?')} ({env.get('GPU_ARCH', '?')})", "",
             f"WarpForth {repo}@{env.get('WFBENCH_COMMIT') or 'unknown'}"
             + (f", against base {env['BASE_COMMIT']}" if env.get("BASE_COMMIT") else "")
             + "; gap = WarpForth / CUDA median kernel time, lower is better.", ""]
    result_path, table = results / RESULT_NAME, results / TABLE_NAME
    result = _load(result_path) if result_path.is_file() else None
    tests, errors = _tests_section(results, result)
    lines += tests
    failed: list[object] = _failed(result) if result is not None else []
    if result is None:
        lines += ["No result: see the log of the benchmark step. Nothing is stored.", ""]
        errors.append(f"no result ({result_path}): the benchmark did not finish")
    else:
        if table.is_file() and table.read_text().strip():
            lines += ["```", table.read_text().rstrip(), "```", ""]
        if labels(result) and not failed:  # type: ignore[arg-type]
            verdict, why = _verdict_section(result_path)
            lines += verdict
            errors += why
        if failed:
            lines += [f"### {len(failed)} case(s) failed: this run is not stored in the history", "",
                      "| case | status | reason |", "|---|---|---|"]
            for c in failed:
                reason = (c.message or "(no message)").replace("|", "\\|").replace("\n", " ")  # type: ignore[attr-defined]
                lines.append(f"| {_label(c)} | {c.status.upper()} | {reason} |")  # type: ignore[attr-defined]
            lines.append("")
    _write(env.get("GITHUB_STEP_SUMMARY"), "\n".join(lines) + "\n")
    _write(env.get("GITHUB_OUTPUT"), f"storable={'true' if result is not None and not failed else 'false'}\n")
    for c in failed:
        print(command("error", f"{_label(c)} {c.status.upper()}: {c.message or '(no message)'}"))  # type: ignore[attr-defined]
    for e in errors:
        print(command("error", e))
    return 1 if failed or errors else 0


def _write(path: str | None, text: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(text)
    else:
        print(text, end="")


def base_commit(history: Path, warpforth: Path, default_ref: str) -> int:
    """The WarpForth commit of the newest stored run whose commit is on WarpForth's default branch
    (``default_ref``, fetched into the checkout ``warpforth``): the base of the next base/head run.

    The commit is the one the trusted run recorded itself (its bundle's source, checked when the result came
    back), and it is built only when it is an ancestor of the default branch: a stored run naming any other
    commit is passed over with a warning, so no stored file decides what an unreviewed tree the runner builds.
    """
    import subprocess

    from wfbench_core.host.childenv import child_env
    from wfbench_core.review.history import History, utc_sortable

    if not history.is_dir():
        return 0
    runs = sorted(History.open(history).runs.values(), key=lambda e: (utc_sortable(e.created), e.file))
    for entry in reversed(runs):
        commit = entry.git_commit or ""
        if not re.fullmatch(r"[0-9a-f]{40}", commit):
            continue
        on_default = subprocess.run(["git", "-C", str(warpforth), "merge-base", "--is-ancestor", commit,
                                     str(default_ref)], capture_output=True, env=child_env(), check=False)
        if on_default.returncode == 0:
            print(commit)
            return 0
        print(command("warning", f"stored run {entry.file} names WarpForth commit {commit}, which is not on its "
                                 f"default branch ({default_ref}): not used as the base"), file=sys.stderr)
    return 0


def test_modules(mark: str, checkout: Path) -> int:
    """Modules of CHECKOUT/tests holding tests marked MARK, one path a line."""
    from wfbench_transports.host_tests import modules_marked

    for rel in modules_marked(checkout, mark):
        print(checkout / rel)
    return 0


def head_view(result_path: Path, out: Path) -> int:
    """The head compiler's cases of a base/head run, as a run of that compiler (what the history keeps)."""
    from wfbench_core.review.base_head import one_compiler
    from wfbench_core.errors import WfbenchError
    from wfbench_core.record.results import write_result

    try:
        write_result(one_compiler(_load(result_path), HEAD, where=str(result_path)), out)  # type: ignore[arg-type]
    except WfbenchError as exc:
        fail(str(exc))
    print(f"{out}: the run of {HEAD} (what the history keeps)")
    return 0


def gate(result_path: Path) -> int:
    if not result_path.is_file():
        fail(f"{result_path}: no result to store")
    failed = _failed(_load(result_path))
    if failed:
        names = ", ".join(f"{_label(c)} ({c.status.upper()})" for c in failed)  # type: ignore[attr-defined]
        fail(f"{result_path}: {len(failed)} case(s) failed or could not run ({names}): a failed run is never stored")
    print(f"{result_path}: every case passed")
    return 0


def plan(out: Path) -> int:
    """The matrix of gpu-bench's GPU jobs (one rental per model, within the total cost cap), as JSON."""
    import json

    from wfbench_core.errors import WfbenchError
    from wfbench_core.review import matrix

    def resolve(name: str) -> tuple[str, str]:
        from wfbench_transports.vast_config import arch_of, gpu_model

        model = gpu_model(name)
        return model.key, arch_of(model.cc)

    env = os.environ
    try:
        legs = matrix.plan(env.get("GPU_MODELS", ""), max_dph=_number("MAX_DPH"), rental_min=int(_number("RENTAL_MIN")),
                           max_total_cost=_number("MAX_TOTAL_COST"), resolve=resolve)
    except WfbenchError as exc:
        fail(str(exc))
    text = json.dumps([leg.as_json() for leg in legs])
    out.write_text(text + "\n")
    _write(env.get("GITHUB_OUTPUT"), f"matrix={text}\n")
    rows = [f"| {leg.gpu} | {leg.arch} | {leg.max_dph:.2f} | {leg.max_cost:.4f} |" for leg in legs]
    _write(env.get("GITHUB_STEP_SUMMARY"), "\n".join([
        "## wfbench: the GPU models of this run", "", "| GPU model | arch | max $/hour | max $ per rental |",
        "|---|---|---:|---:|", *rows, "", f"At most ${sum(leg.max_cost for leg in legs):.2f} in all "
        f"(max-total-cost ${_number('MAX_TOTAL_COST'):.2f}).", ""]) + "\n")
    print(text)
    return 0


def _number(name: str) -> float:
    try:
        return float(os.environ.get(name, ""))
    except ValueError:
        fail(f"{name}={os.environ.get(name, '')!r} is not a number")
    raise AssertionError  # unreachable


def merge(artifacts: Path) -> int:
    """Every model's result in one summary table; the storable models; the pull-request comment."""
    import json

    from wfbench_core.errors import WfbenchError
    from wfbench_core.review import matrix

    env = os.environ
    try:
        outcomes = matrix.merge(matrix.legs_of(env.get("MATRIX", "")), artifacts)
    except WfbenchError as exc:
        fail(str(exc))
    _write(env.get("GITHUB_STEP_SUMMARY"), matrix.summary(outcomes))
    storable = json.dumps([o.as_json() for o in outcomes if o.storable])
    _write(env.get("GITHUB_OUTPUT"), f"storable={storable}\n")
    if env.get("COMMENT_OUT"):
        Path(env["COMMENT_OUT"]).parent.mkdir(parents=True, exist_ok=True)
        Path(env["COMMENT_OUT"]).write_text(matrix.comment(outcomes))
    for o in outcomes:
        if o.regressed:
            print(command("error", f"{o.leg.gpu}: head is slower than base or breaks a case"))
        if o.problem:
            print(command("error", f"{o.leg.gpu}: {o.problem}"))
    print(f"{len(outcomes)} model(s); storable: {', '.join(o.leg.gpu for o in outcomes if o.storable) or 'none'}")
    return matrix.exit_status(outcomes)


def main(argv: list[str]) -> int:
    commands = {"base-commit": (3, base_commit), "test-modules": (2, test_modules), "summary": (1, summary),
                "head-view": (2, head_view), "gate": (1, gate), "plan": (1, plan), "merge": (1, merge)}
    if not argv or argv[0] not in commands or len(argv) - 1 != commands[argv[0]][0]:
        fail(f"usage: ci_steps.py {{{'|'.join(commands)}}} ARGS (got {' '.join(argv) or 'nothing'})")
    command, args = argv[0], argv[1:]
    if command == "test-modules":
        return test_modules(args[0], Path(args[1]))
    if command == "base-commit":
        return base_commit(Path(args[0]), Path(args[1]), args[2])
    return commands[command][1](*map(Path, args))  # type: ignore[operator]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
