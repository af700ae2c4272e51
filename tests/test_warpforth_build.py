"""``--warpforth``: warpforthc built from WarpForth source by WarpForth's recipe, cached, recorded.

git, wfbench's CLI, the cache and the bundle are real; the toolchain (cmake, ninja, c++, MLIR) and the
warpforthc it makes are stand-ins (tests/standins.py) that record what they were given and saw. One test
builds the real WarpForth with the real toolchain; it is opt-in (minutes): set WFBENCH_TEST_WARPFORTH to a
WarpForth repository (a path or URL).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import standins
from wfbench_core.compiling.bundle import read_manifest
from wfbench_core.cli import main
from wfbench_core.compiling.warpforth_source import iter_labels, parse_spec

MEMREF = "lib/Conversion/ForthToMemRef/ForthToMemRef.cpp"
OLD_LINE = "    static_cast<unsigned>(NVVM::kSharedMemorySpace);"
TOOLS = ("add_subdirectory(warpforth-translate)\nadd_subdirectory(warpforth-opt)\nadd_subdirectory(warpforthc)\n"
         "add_subdirectory(warpforth-runner)\n")
CI = 'name: CI\nenv:\n  LLVM_VERSION: "20"\njobs: {}\n'

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture
def warpforth(tmp_path: Path) -> Path:
    """A WarpForth-shaped checkout: the files the recipe touches, two commits (HEAD~1 and HEAD)."""
    repo = tmp_path / "warpforth"
    files = {MEMREF: f"constexpr unsigned kWorkgroupAddressSpace =\n{OLD_LINE}\n", "tools/CMakeLists.txt": TOOLS,
             ".github/workflows/ci.yml": CI, "CMakeLists.txt": "project(warpforth)\n", "README.md": "v1\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    (repo / "README.md").write_text("v2\n")
    git(repo, "commit", "-qam", "two")
    return repo


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The stand-in toolchain on PATH, a fresh wfbench cache; returns a reader of what cmake saw."""
    def use(mlir_version: str = "22.1.8") -> Path:
        root = tmp_path / f"toolchain-{mlir_version}"
        for k, v in standins.toolchain(root, mlir_version=mlir_version).items():
            monkeypatch.setenv(k, v)
        return root / "stub.log"

    monkeypatch.setenv("WFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCACHE_DISABLE", "1")
    return use


def calls(log: Path, step: str = "configure") -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(ln) for ln in log.read_text().splitlines() if json.loads(ln)["step"] == step]


def build(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["build", "-c", "axpy_f64", "--no-check-cuda", *args])
    return r.exit_code, r.stdout, r.stderr


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain", "--untracked-files=all")


# -------------------------------------------------------------------------------------------------
# the value of --warpforth
# -------------------------------------------------------------------------------------------------


def test_each_form_of_the_value(warpforth: Path) -> None:
    home = warpforth
    assert parse_spec(str(warpforth), home).is_working_tree
    spec = parse_spec(f"{warpforth}@HEAD~1", home)
    assert (spec.path, spec.ref) == (warpforth, "HEAD~1")
    assert (parse_spec("origin/main", home).path, parse_spec("origin/main", home).ref) == (home, "origin/main")
    for text, url, ref in (("https://github.com/tetsuo-cpp/warpforth", "https://github.com/tetsuo-cpp/warpforth", ""),
                           ("https://github.com/o/warpforth@feature/x", "https://github.com/o/warpforth", "feature/x"),
                           ("https://user@host.example/o/w.git", "https://user@host.example/o/w.git", ""),
                           ("git@github.com:o/warpforth.git", "git@github.com:o/warpforth.git", ""),
                           ("git@github.com:o/warpforth.git@v1.0", "git@github.com:o/warpforth.git", "v1.0"),
                           (f"file://{warpforth}@HEAD~1", f"file://{warpforth}", "HEAD~1")):
        spec = parse_spec(text, home)
        assert (spec.url, spec.ref) == (url, ref), text
    assert list(iter_labels(("base=origin/main", "head=."))) == [("base", "origin/main"), ("head", ".")]
    assert list(iter_labels(("https://h/o/w?x=1",))) == [("", "https://h/o/w?x=1")]


@pytest.mark.parametrize("values, message", [
    (("base=HEAD", "base=."), "--warpforth: label 'base' given twice"),
    (("HEAD", "head=."), "--warpforth 'HEAD': with several compilers each needs a label, e.g. head=."),
    (("base=no-such-ref",), "--warpforth 'no-such-ref': 'no-such-ref' is not a commit, branch or tag of"),
])
def test_bad_values_are_one_line_before_anything_is_built(warpforth: Path, tools, monkeypatch, values,  # type: ignore[no-untyped-def]
                                                           message: str) -> None:
    log = tools()
    monkeypatch.chdir(warpforth)
    rc, out, err = build(*(a for v in values for a in ("--warpforth", v)), "-o", str(warpforth.parent / "b"))
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert calls(log) == [] and not (warpforth.parent / "b").exists()


def test_a_ref_outside_any_checkout_says_where_to_run(tmp_path: Path, tools, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tools()
    monkeypatch.chdir(tmp_path)
    rc, _, err = build("--warpforth", "origin/main")
    assert rc == 2 and "not a folder, a URL, nor a ref of a checkout here; run in a WarpForth checkout" in err


# -------------------------------------------------------------------------------------------------
# the toolchain
# -------------------------------------------------------------------------------------------------


def test_a_missing_toolchain_is_one_line_naming_the_packages(warpforth: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bare = tmp_path / "bare-bin"  # git only: no cmake, ninja, compiler
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git"))  # type: ignore[arg-type]
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("WFBENCH_MLIR_DIR", str(tmp_path / "no-mlir"))
    monkeypatch.setenv("WFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    before = status(warpforth)
    rc, _, err = build("--warpforth", str(warpforth), "-o", str(tmp_path / "b"))
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert ("cannot build warpforthc: cmake, ninja, a C++ compiler, MLIR not found; install them (Debian/Ubuntu: "
            "apt-get install cmake ninja-build g++ llvm-20-dev libmlir-20-dev mlir-20-tools") in err  # 20: its ci.yml
    assert "set WFBENCH_MLIR_DIR" in err
    assert status(warpforth) == before and not (tmp_path / "cache" / "warpforthc").exists()


def test_toolchain_says_what_it_finds_and_which_packages_ci_installs(warpforth: Path, tools) -> None:  # type: ignore[no-untyped-def]
    tools("22.1.8")
    r = CliRunner().invoke(main, ["toolchain"])
    assert r.exit_code == 0 and "MLIR    22.1.8 (" in r.stdout and "/stand-in" not in r.stdout, r.stdout
    r = CliRunner().invoke(main, ["toolchain", "--packages", str(warpforth)])
    assert r.stdout.split() == ["cmake", "ninja-build", "g++", "llvm-20-dev", "libmlir-20-dev", "mlir-20-tools"]
    (warpforth / ".github/workflows/ci.yml").write_text(CI.replace('"20"', '"21"'))
    r = CliRunner().invoke(main, ["toolchain", "--packages", str(warpforth)])
    assert "libmlir-21-dev" in r.stdout.split()


# -------------------------------------------------------------------------------------------------
# base and head from one checkout
# -------------------------------------------------------------------------------------------------


def test_base_ref_and_dirty_head_build_in_scratch_copies_and_are_recorded(warpforth: Path, tmp_path: Path, tools,  # type: ignore[no-untyped-def]
                                                                          monkeypatch) -> None:
    log = tools("22.1.8")
    (warpforth / "README.md").write_text("v3, not committed\n")  # a change
    (warpforth / "NEW.md").write_text("a new file\n")  # an untracked source file
    (warpforth / "build").mkdir()  # WarpForth's README builds here; not source
    (warpforth / "build" / "CMakeCache.txt").write_text("x")
    (warpforth / "build" / "huge.o").write_bytes(b"\0" * 1000)
    before = status(warpforth)
    base_commit, head_commit = git(warpforth, "rev-parse", "HEAD~1", "HEAD").split()
    monkeypatch.chdir(warpforth)
    rc, out, err = build("--warpforth", "base=HEAD~1", "--warpforth", "head=.", "-o", str(tmp_path / "bundle"))
    assert rc == 0, err
    configured = calls(log)
    assert len(configured) == 2 and len(calls(log, "build")) == 2
    assert [c["args"][c["args"].index("--target") + 1] for c in calls(log, "build")] == ["warpforthc"] * 2
    for c in configured:  # the recipe: Ninja, Release, the MLIR found; in a scratch copy with both changes
        assert {"-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"} <= set(c["args"])
        assert f"-DMLIR_DIR={os.environ['WFBENCH_MLIR_DIR']}" in c["args"]
        assert c["memref"] == ["static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);"] and c["runner"] is False
        assert not c["src"].startswith(str(warpforth))
    base_files, head_files = configured[0]["files"], configured[1]["files"]
    assert "NEW.md" in head_files and "NEW.md" not in base_files
    assert not any(f.startswith("build/") for f in head_files)
    # the user's tree: as it was, with no worktree left registered
    assert status(warpforth) == before and OLD_LINE in (warpforth / MEMREF).read_text()
    assert "warpforth-runner" in (warpforth / "tools/CMakeLists.txt").read_text()
    assert len(git(warpforth, "worktree", "list").splitlines()) == 1
    manifest = read_manifest(tmp_path / "bundle")
    base = read_manifest(tmp_path / "bundle" / "base").warpforthc
    head = read_manifest(tmp_path / "bundle" / "head").warpforthc
    assert (base.git_commit, base.git_dirty, head.git_commit, head.git_dirty) == (base_commit, False, head_commit, True)
    assert "NVVM::kSharedMemorySpace -> NVVM::NVVMMemorySpace::Shared" in head.recipe and "MLIR 22.1.8" in head.recipe
    assert base.source_id == git(warpforth, "rev-parse", "HEAD~1^{tree}").strip()
    assert manifest.source.git_commit == head_commit and manifest.source.git_dirty
    # a cache entry keeps the binary, the bitcode it reads, the provenance and the log; nothing else
    for entry in (tmp_path / "cache" / "warpforthc").iterdir():
        if entry.is_dir():
            kept = sorted(str(p.relative_to(entry)) for p in entry.rglob("*") if p.is_file())
            assert kept == ["build.log", "build/bin/warpforthc", "build/bin/warpforthc.wfbench.json",
                            "build/lib/Bitcode/libdevice.10.bc"], kept
    # again: both from the cache, nothing configured or built
    rc, out, err = build("--warpforth", "base=HEAD~1", "--warpforth", "head=.", "-o", str(tmp_path / "bundle2"))
    assert rc == 0 and len(calls(log)) == 2 and err.count("cached build") == 2, err


def test_a_clean_working_tree_shares_the_cache_entry_of_its_commit(warpforth: Path, tmp_path: Path, tools) -> None:  # type: ignore[no-untyped-def]
    log = tools()
    assert build("--warpforth", str(warpforth), "-o", str(tmp_path / "a"))[0] == 0
    assert build("--warpforth", f"{warpforth}@HEAD", "-o", str(tmp_path / "b"))[0] == 0
    assert build("--warpforth", f"file://{warpforth}@main", "-o", str(tmp_path / "c"))[0] == 0
    assert len(calls(log)) == 1
    info = read_manifest(tmp_path / "c").warpforthc
    assert info.git_commit == git(warpforth, "rev-parse", "HEAD").strip() and not info.git_dirty


def test_the_trees_build_sees_no_secret_of_this_process(warpforth: Path, tmp_path: Path, tools,  # type: ignore[no-untyped-def]
                                                         monkeypatch) -> None:
    """The tree under test runs its own code when configured and built (its CMakeLists.txt): it gets the
    environment of every child process, without the credentials this process holds."""
    log = tools()
    for name in ("VAST_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK"):
        monkeypatch.setenv(name, "secret")
    assert build("--warpforth", str(warpforth), "-o", str(tmp_path / "a"))[0] == 0
    for step in ("configure", "build"):
        seen = calls(log, step)[0]["env"]
        assert "PATH" in seen and "STUB_LOG" in seen  # the rest of the environment is passed on
        assert not {"VAST_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK"} & set(seen)


def test_the_toolchain_is_part_of_the_key_and_mlir_20_needs_no_edit(warpforth: Path, tmp_path: Path, tools) -> None:  # type: ignore[no-untyped-def]
    log22 = tools("22.1.8")
    assert build("--warpforth", str(warpforth), "-o", str(tmp_path / "a"))[0] == 0
    log20 = tools("20.1.8")
    rc, _, err = build("--warpforth", str(warpforth), "-o", str(tmp_path / "b"))
    assert rc == 0, err
    assert len(calls(log22)) == 1 and len(calls(log20)) == 1
    assert calls(log20)[0]["memref"] == ["static_cast<unsigned>(NVVM::kSharedMemorySpace);"]
    assert calls(log20)[0]["runner"] is False
    recipe = read_manifest(tmp_path / "b").warpforthc.recipe
    assert "MLIR 20.1.8" in recipe and "kSharedMemorySpace" not in recipe and "warpforth-runner" in recipe


@pytest.mark.parametrize("step, says", [
    ("configure", "building warpforthc: cmake configure failed (exit 1): CMake Error at CMakeLists.txt:7"),
    ("build", "building warpforthc: cmake --build --target warpforthc failed (exit 1): ForthToMemRef.cpp:35:37: "
              "error: no member named 'kSharedMemorySpace'"),
])
def test_a_failed_build_is_one_line_with_its_log_and_is_retried(warpforth: Path, tmp_path: Path, tools, monkeypatch,  # type: ignore[no-untyped-def]
                                                              step: str, says: str) -> None:
    log = tools()
    monkeypatch.setenv("STAND_IN_CMAKE_FAIL", step)
    rc, _, err = build("--warpforth", str(warpforth), "-o", str(tmp_path / "b"))
    assert rc == 2 and says in err and len(err.strip().splitlines()) == 2, err  # the progress line, the error
    build_log = Path(err.rsplit("log: ", 1)[1].strip())
    assert build_log.is_file() and [p.name for p in build_log.parent.iterdir()] == ["build.log"]
    assert len(git(warpforth, "worktree", "list").splitlines()) == 1 and not (tmp_path / "b").exists()
    monkeypatch.delenv("STAND_IN_CMAKE_FAIL")
    assert build("--warpforth", str(warpforth), "-o", str(tmp_path / "b"))[0] == 0
    assert len(calls(log)) == 2


def test_warpforth_and_warpforthc_labels_combine(warpforth: Path, tmp_path: Path, tools, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A CI that just built its head warpforthc gives it as --warpforthc; the base comes from the recipe."""
    tools()
    head = tmp_path / "prebuilt" / "warpforthc"
    head.parent.mkdir()
    lib = tmp_path / "prebuilt" / "libdevice.10.bc"
    lib.write_bytes(b"BC")
    head.write_text(standins.warpforthc_text().replace("@LIBDEVICE@", str(lib)))
    head.chmod(0o755)
    monkeypatch.chdir(warpforth)
    rc, out, err = build("--warpforth", "base=HEAD~1", "--warpforthc", f"head={head}", "-o", str(tmp_path / "b"))
    assert rc == 0 and "compilers head, base" in out, (out, err)
    assert read_manifest(tmp_path / "b" / "base").warpforthc.git_commit
    assert read_manifest(tmp_path / "b" / "head").warpforthc.git_commit == ""
    rc, _, err = build("--warpforth", "head=HEAD~1", "--warpforthc", f"head={head}", "-o", str(tmp_path / "c"))
    assert rc == 2 and "label 'head' given to both --warpforthc and --warpforth" in err


# -------------------------------------------------------------------------------------------------
# the real thing (opt-in: minutes)
# -------------------------------------------------------------------------------------------------


@pytest.mark.warpforthc
def test_the_real_recipe_builds_a_warpforthc_that_compiles_a_case(tmp_path: Path) -> None:
    """WFBENCH_TEST_WARPFORTH=PATH-or-URL of WarpForth: build it for real (the shared wfbench cache keeps it)."""
    from wfbench_core.errors import WfbenchError
    from wfbench_core.compiling.warpforth_build import find_toolchain

    repo = os.environ.get("WFBENCH_TEST_WARPFORTH")
    if not repo:
        pytest.skip("opt-in (minutes): set WFBENCH_TEST_WARPFORTH to a WarpForth repository path or URL")
    try:
        find_toolchain()
    except WfbenchError as exc:
        pytest.skip(str(exc))
    checkout = tmp_path / "warpforth"
    subprocess.run(["git", "clone", "-q", repo, str(checkout)], check=True)
    r = CliRunner().invoke(main, ["build", "-c", "axpy_f64", "-c", "reduce_sum_f64", "--warpforth", str(checkout),
                                  "-o", str(tmp_path / "bundle")])
    assert r.exit_code == 0, r.stderr
    info = read_manifest(tmp_path / "bundle").warpforthc
    assert info.git_commit == git(checkout, "rev-parse", "HEAD").strip() and not info.git_dirty
    assert status(checkout) == ""
    ptx = (tmp_path / "bundle" / "axpy_f64" / "canonical.ptx").read_text()
    assert ".entry axpy_f64" in ptx


def test_a_cache_entry_moved_elsewhere_is_rebuilt_not_used(warpforth: Path, tmp_path: Path, tools, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """warpforthc reads libdevice at the absolute path it was built at: a cache restored under another folder
    (another home, a renamed runner user) would hold binaries that cannot compile anything."""
    log = tools()
    assert build("--warpforth", str(warpforth), "-o", str(tmp_path / "a"))[0] == 0
    shutil.copytree(tmp_path / "cache", tmp_path / "moved")
    monkeypatch.setenv("WFBENCH_CACHE_DIR", str(tmp_path / "moved"))
    rc, _, err = build("--warpforth", str(warpforth), "-o", str(tmp_path / "b"))
    assert rc == 0 and "holds no finished build made there, or not the files its build recorded; building it " \
                       "again" in err, err
    assert len(calls(log)) == 2


@pytest.mark.parametrize("plant", ["replaced binary", "another commit's entry"])
def test_a_planted_cache_entry_is_rebuilt_not_used(plant: str, warpforth: Path, tmp_path: Path, tools) -> None:  # type: ignore[no-untyped-def]
    """An entry is trusted by its content, as its build recorded it beside the entry, never by its folder name."""
    log = tools()
    assert build("--warpforth", f"{warpforth}@HEAD~1", "-o", str(tmp_path / "a"))[0] == 0
    assert build("--warpforth", f"{warpforth}@HEAD", "-o", str(tmp_path / "b"))[0] == 0
    head = git(warpforth, "rev-parse", "HEAD").strip()
    root = tmp_path / "cache" / "warpforthc"
    entry = next(p for p in root.iterdir() if p.is_dir() and p.name.startswith(head[:12]))
    other = next(p for p in root.iterdir() if p.is_dir() and p != entry)
    planted = "#!/bin/sh\necho planted >> {0}\nexit 1\n".format(tmp_path / "planted-ran")
    if plant == "replaced binary":
        (entry / "build/bin/warpforthc").write_text(planted)
    else:  # the other commit's binary, provenance and bitcode in this commit's entry
        shutil.rmtree(entry)
        shutil.copytree(other, entry)
        text = (entry / "build/bin/warpforthc.wfbench.json").read_text().replace(str(other), str(entry))
        (entry / "build/bin/warpforthc.wfbench.json").write_text(text)
    rc, _, err = build("--warpforth", f"{warpforth}@HEAD", "-o", str(tmp_path / "c"))
    assert rc == 0 and "not the files its build recorded; building it again" in err, err
    assert "cached build" not in err and len(calls(log)) == 3
    assert not (tmp_path / "planted-ran").exists()
    assert read_manifest(tmp_path / "c").warpforthc.git_commit == head
