"""``wfbench bisect``: the search over a real git history of stand-in compilers (tests/synth_compiler.py) that
emit the real warpforthc PTX of the fixtures, one commit of which injects a barrier at reduce_sum_f64's entry.

The search logic is checked with a judge that reads the two compilers' real output; the whole command, with
base/head runs executed by the real executor and its worker, on the stand-in GPU (tests/fake_gpu.py,
``barriers``: each barrier costs 2 %); on a GPU host the same command runs on the real GPU.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from synth_compiler import compiler_tree, make_history
from testkit import use_stand_in_gpu
from wfbench_core.studies import bisect
from wfbench_core.compiling import diagnostics as dg
from wfbench_core.review.case_verdict import SAME, SLOWER
from wfbench_core.cli import main
from wfbench_core.compiling.compile import compile_warpforth
from wfbench_core.discover.registry import Registry

CASE = "reduce_sum_f64"
COMMITS = 8  # after GOOD; the last is BAD


def static_judge(calls: list[tuple[Path, Path]]):  # type: ignore[no-untyped-def]
    """SLOWER when the head compiler's PTX of the case has more barriers than the base compiler's (both really
    compiled); every call is recorded."""
    case = Registry.load().case(CASE)
    source = case.render("canonical")[0]

    def judge(base: Path, head: Path) -> bisect.Outcome:
        calls.append((base, head))
        b, h = (compile_warpforth(source, binary=x, case_id=CASE).ptx.count("bar.sync") for x in (base, head))
        return bisect.Outcome(SLOWER if h > b else SAME, f"| {CASE} | {h - b:+d} barriers |")

    return judge


@pytest.mark.parametrize("slow", range(1, COMMITS + 1))
def test_the_slow_commit_is_found_in_at_most_four_runs(tmp_path: Path, slow: int) -> None:
    history = make_history(tmp_path / "wf", commits=COMMITS, slow=slow)
    good, commits = history[0], bisect.commits_between(tmp_path / "wf", history[0], history[-1])
    assert commits == history[1:]
    built: list[str] = []
    build = bisect.command_builder(tmp_path / "wf", tmp_path / "cache", "true", "warpforthc")
    calls: list[tuple[Path, Path]] = []
    found = bisect.search(good, commits, build=lambda c: built.append(c) or build(c), judge=static_judge(calls))
    assert found.first_slower == history[slow] and found.parent == history[slow - 1]
    assert found.runs == len(calls) == bisect.max_runs(COMMITS) == 4  # 1 (GOOD vs BAD) + log2(8)
    assert all(base == calls[0][0] for base, _ in calls)  # base = GOOD in every run
    assert len(built) == len(set(built))  # each commit built once


def test_builds_are_cached_by_commit(tmp_path: Path) -> None:
    history = make_history(tmp_path / "wf", commits=COMMITS, slow=3)
    log = tmp_path / "built.log"
    build = bisect.command_builder(tmp_path / "wf", tmp_path / "cache", f"echo built >> {log}", "warpforthc")
    first = build(history[2])
    assert first.is_file() and os.access(first, os.X_OK) and log.read_text().count("built") == 1
    assert build(history[2]) == first and log.read_text().count("built") == 1
    other = bisect.command_builder(tmp_path / "wf", tmp_path / "cache", f"echo again >> {log}", "warpforthc")
    assert other(history[2]) != first  # another recipe is another build


def test_the_build_command_sees_no_secret_of_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bisect's build command builds untrusted commits: it gets no credential of this process."""
    history = make_history(tmp_path / "wf", commits=2, slow=1)
    monkeypatch.setenv("VAST_API_KEY", "secret")
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    seen = tmp_path / "env.txt"
    bisect.command_builder(tmp_path / "wf", tmp_path / "cache", f"env > {seen}", "warpforthc")(history[1])
    names = {line.split("=", 1)[0] for line in seen.read_text().splitlines()}
    assert "PATH" in names and not {"VAST_API_KEY", "GITHUB_TOKEN"} & names


def test_a_failing_build_is_one_line_and_retried(tmp_path: Path) -> None:
    history = make_history(tmp_path / "wf", commits=2, slow=1)
    build = bisect.command_builder(tmp_path / "wf", tmp_path / "cache", "echo no compiler >&2; exit 3", "bin/warpforthc")
    with pytest.raises(bisect.WfbenchError, match=r"building warpforthc at [0-9a-f]{10} failed \('echo no compiler"):
        build(history[1])
    good = bisect.command_builder(tmp_path / "wf", tmp_path / "cache", "echo no compiler >&2; exit 3", "warpforthc")
    with pytest.raises(bisect.WfbenchError, match="exit 3"):
        good(history[1])


def test_not_slower_to_begin_with_stops_after_one_run(tmp_path: Path) -> None:
    history = make_history(tmp_path / "wf", commits=COMMITS, slow=4, case="axpy_f64")  # another kernel slows
    build = bisect.command_builder(tmp_path / "wf", tmp_path / "cache", "true", "warpforthc")
    calls: list[tuple[Path, Path]] = []
    found = bisect.search(history[0], history[1:], build=build, judge=static_judge(calls))
    assert not found.found and found.runs == 1
    text = bisect.render_markdown(found, CASE)
    assert f"GOOD against BAD is {SAME}, not {SLOWER}: nothing to bisect." in text


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def stand_in_gpu(monkeypatch: pytest.MonkeyPatch, nvcc: Path) -> None:
    use_stand_in_gpu(monkeypatch, FAKE_GPU_BEHAVIOUR=f"{CASE}=barriers,axpy_f64=barriers")


QUICK = ("--warmup-s", "0", "--min-sample-ms", "1", "--samples", "20")


@pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")
def test_bisect_command_on_the_stand_in_gpu(stand_in_gpu: None, tmp_path: Path) -> None:
    history = make_history(tmp_path / "wf", commits=COMMITS, slow=6)
    report = tmp_path / "bisect.md"
    r = invoke("bisect", "--warpforth", str(tmp_path / "wf"), history[0], history[-1], "-c", CASE, "--build-cmd",
               "true", "--binary", "warpforthc", "--cache", str(tmp_path / "cache"), "--arch", "sm_90",
               "--results", str(tmp_path / "runs"), "-o", str(report), "-q", *QUICK)
    assert r.exit_code == 0, r.output
    text = report.read_text()
    assert r.stdout == text
    assert f"First commit whose head is SLOWER: `{history[6]}` step 6: {CASE} gets 'bar.sync 0;'" in text
    assert f"8 commits after GOOD up to BAD; 4 base/head runs (at most 4" in text
    verdicts = re.findall(r"^\| \d \| `[0-9a-f]{10}` \| `([0-9a-f]{10})`.*\| (\**\w+\**) \|$", text, re.MULTILINE)
    assert len(verdicts) == 4 and verdicts[0] == (history[-1][:10], "**SLOWER**")
    assert "### wfbench compare" in text and "| reduce_sum_f64 v1 |" in text
    assert re.search(r"^- Added `BAR\.SYNC\.DEFER_BLOCKING 0x0` at head 0x[0-9a-f]{4} .*before the first loop", text,
                     re.MULTILINE)
    assert len(list((tmp_path / "runs").glob("run-*.json"))) == 4


@pytest.mark.skipif(dg.tools_available() is not None, reason="CUDA binary tools missing")
def test_bisect_command_stops_when_bad_is_not_slower(stand_in_gpu: None, tmp_path: Path) -> None:
    history = make_history(tmp_path / "wf", commits=COMMITS, slow=2, case="axpy_f64")
    r = invoke("bisect", "--warpforth", str(tmp_path / "wf"), history[0], history[-1], "-c", CASE, "--build-cmd",
               "true", "--binary", "warpforthc", "--cache", str(tmp_path / "cache"), "--arch", "sm_90",
               "--results", str(tmp_path / "runs"), "-q", *QUICK)
    assert r.exit_code == 1
    assert "not SLOWER: nothing to bisect." in r.stdout and len(list((tmp_path / "runs").glob("*.json"))) == 1


@pytest.mark.parametrize("args, expect", [
    (("nope", "BAD", "-c", CASE), "'nope' is not a commit there"),
    (("BAD", "GOOD", "-c", CASE), "is not an ancestor of"),
    (("GOOD", "GOOD", "-c", CASE), "GOOD and BAD are the same commit"),
    (("GOOD", "BAD", "-c", "no_such_case"), "unknown case 'no_such_case'"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...], expect: str) -> None:
    history = make_history(tmp_path / "wf", commits=2, slow=1)
    argv = [{"GOOD": history[0], "BAD": history[-1]}.get(a, a) for a in args]
    r = CliRunner().invoke(main, ["bisect", "--warpforth", str(tmp_path / "wf"), *argv, "--arch", "sm_90"])
    assert r.exit_code == 2, r.output
    assert expect in r.stderr and "Traceback" not in r.output + r.stderr


def test_not_a_repository(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["bisect", "--warpforth", str(tmp_path), "a", "b", "-c", CASE, "--arch", "sm_90"])
    assert r.exit_code == 2 and "not a git repository" in r.stderr


GPU_CHAIN = 512  # chain steps the GPU test's slow commit adds (tools/power_study.py's calibration: +8.6 % on H200)


@pytest.mark.gpu
def test_bisect_on_the_gpu(tmp_path: Path) -> None:
    """The synthetic history on a real GPU: the commit that adds the power study's dependent chain at
    reduce_sum_f64's entry (512 steps per thread: +8.6 % on an H200, a cost any board measures; one barrier
    there cost the H200 +0.07 %, SAME, and left bisect nothing to find) is found in at most four base/head runs."""
    history = make_history(tmp_path / "wf", commits=COMMITS, slow=5, chain=GPU_CHAIN)
    r = invoke("bisect", "--warpforth", str(tmp_path / "wf"), history[0], history[-1], "-c", CASE, "--build-cmd",
               "true", "--binary", "warpforthc", "--cache", str(tmp_path / "cache"), "--results",
               str(tmp_path / "runs"), "-q")
    assert r.exit_code == 0, r.output
    assert f"First commit whose head is SLOWER: `{history[5]}`" in r.stdout
    assert len(list((tmp_path / "runs").glob("run-*.json"))) <= 4


def test_a_chain_history_slows_the_case_from_its_slow_commit_on(tmp_path: Path, nvcc) -> None:  # type: ignore[no-untyped-def]
    """``--chain K``: from the slow commit on, the stand-in compiler emits the case's PTX with the power study's
    K-step chain (ptxas keeps it); before it, the stored PTX unchanged."""
    import subprocess

    from wfbench_core.compiling.diagnostics import assemble
    from wfbench_core.discover.registry import Registry

    history = make_history(tmp_path / "wf", commits=3, slow=2, chain=256)
    case = Registry.load().case(CASE)
    src = tmp_path / "k.forth"
    src.write_text(case.render("canonical")[0])
    emitted = {}
    for n in (1, 2, 3):
        compiler = compiler_tree(tmp_path / "wf", history[n], tmp_path / f"tree{n}")
        subprocess.run([str(compiler), str(src), "-o", str(tmp_path / f"{n}.ptx")], check=True)
        emitted[n] = (tmp_path / f"{n}.ptx").read_text()
    stored = (Path(__file__).parent / "fixtures" / "ptx" / f"{CASE}.canonical.ptx").read_text()
    assert emitted[1] == stored and emitted[2] == emitted[3] != stored
    base, head = (assemble(emitted[n], case.wf_kernel, "sm_90") for n in (1, 3))
    assert len(head.sass) > len(base.sass)  # ptxas kept the chain
