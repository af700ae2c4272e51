"""What a result says was benchmarked: the commit, its repository, and the CI run."""

from __future__ import annotations

import pytest

from wfbench_core.compiling.provenance import detect_source


def test_ci_variables_and_benchmarked_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/wfbench")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("WFBENCH_COMMIT", "abc123")
    monkeypatch.setenv("WFBENCH_REPO", "tetsuo-cpp/warpforth")
    s = detect_source()
    assert s.git_commit == "abc123"
    assert s.git_repo == "https://github.com/tetsuo-cpp/warpforth"
    assert s.ci_run_url == "https://github.com/acme/wfbench/actions/runs/42" and s.ci_run_id == "42"
    assert detect_source("explicit").git_commit == "explicit"


def test_without_ci_the_repository_defaults_to_none(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    for var in ("GITHUB_REPOSITORY", "GITHUB_RUN_ID", "WFBENCH_COMMIT", "WFBENCH_REPO"):
        monkeypatch.delenv(var, raising=False)
    s = detect_source(warpforthc=tmp_path / "warpforthc")  # not in a git tree: no commit
    assert s.git_commit == "" and s.git_repo == "" and s.ci_run_url == ""
