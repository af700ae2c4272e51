"""Where a WarpForth source tree comes from, for ``--warpforth``: exactly one tree, named by its content.

A value of ``--warpforth`` (after an optional ``LABEL=``) is one of

- ``PATH``: a WarpForth checkout's working tree, uncommitted changes and new files included;
- ``PATH@REF``: a commit, branch or tag of that checkout;
- ``URL`` or ``URL@REF``: a repository to clone (``https://…``, ``ssh://…``, ``git@host:owner/name``);
- ``REF``: a ref of the *home* checkout: the folder another ``--warpforth`` names, else the checkout the
  command runs in. So ``--warpforth base=origin/main --warpforth head=.`` compares a working tree with
  the branch it started from.

A ref is checked out with ``git worktree add`` into wfbench's build folder (and removed afterwards), a
working tree is copied file by file: nothing is ever written into the user's tree. Untracked files count
as changes, except cmake build trees and Python virtual environments inside the checkout (WarpForth's
README builds into ``build/`` in the tree, which WarpForth does not ignore).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.host.childenv import child_env

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "GENERATED_MARKERS", "GIT_TIMEOUT_S", "Snapshot", "SourceSpec", "git", "home_checkout", "iter_labels",
    "materialize", "parse_spec", "release", "snapshot", "toplevel",
]

GIT_TIMEOUT_S = 600
#: files that mark a folder as generated, not source: its untracked contents are never part of the tree
GENERATED_MARKERS = ("CMakeCache.txt", "pyvenv.cfg")
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)


@attrs.frozen
class SourceSpec:
    """One ``--warpforth`` value, parsed."""

    text: str
    path: Path | None = None  # a local checkout (PATH, PATH@REF, or the home checkout of a REF)
    url: str = ""
    ref: str = ""  # "": the working tree of ``path``, or the default branch of ``url``

    @property
    def is_working_tree(self) -> bool:
        return self.path is not None and not self.ref


def _split_url(text: str) -> tuple[str, str]:
    """``URL@REF`` -> (URL, REF); an ``@`` of a user name (``git@host:``, ``https://user@host/``) is no ref."""
    if "://" in text:
        scheme, rest = text.split("://", 1)
        host, slash, path = rest.partition("/")
        if "@" in path:
            repo, ref = path.rsplit("@", 1)
            return f"{scheme}://{host}{slash}{repo}", ref
        return text, ""
    user_host, colon, path = text.partition(":")
    if "@" in path:
        repo, ref = path.rsplit("@", 1)
        return f"{user_host}{colon}{repo}", ref
    return text, ""


def parse_spec(text: str, home: Path | None) -> SourceSpec:
    """A ``--warpforth`` value without its label; ``home`` is the checkout a bare REF belongs to."""
    if not text:
        raise WfbenchError("--warpforth: empty value; give PATH, PATH@REF, URL[@REF] or a ref")
    if _URL.match(text):
        url, ref = _split_url(text)
        return SourceSpec(text, url=url, ref=ref)
    if Path(text).expanduser().is_dir():
        return SourceSpec(text, path=Path(text).expanduser())
    before, at, ref = text.rpartition("@")
    if at and before and Path(before).expanduser().is_dir():
        return SourceSpec(text, path=Path(before).expanduser(), ref=ref)
    if home is None:
        raise WfbenchError(f"--warpforth {text!r}: not a folder, a URL, nor a ref of a checkout here; run in a "
                           f"WarpForth checkout or give PATH@REF")
    return SourceSpec(text, path=home, ref=text)


def git(repo: Path, *args: str, what: str = "", env: dict[str, str] | None = None) -> str:
    """``git -C repo ARGS``' output; a failure is one line naming what was being done."""
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False,
                              timeout=GIT_TIMEOUT_S, env=child_env(env))
    except FileNotFoundError:
        raise WfbenchError("git is not installed: install it (Debian/Ubuntu: apt-get install git)") from None
    except subprocess.TimeoutExpired:
        raise WfbenchError(f"{what or 'git ' + args[0]} in {repo}: git took over {GIT_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise WfbenchError(f"{what or 'git ' + args[0]} in {repo} failed: {why}")
    return proc.stdout


def toplevel(folder: Path) -> Path | None:
    """The checkout ``folder`` is in, or None."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, check=False, timeout=60, env=child_env())
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


@attrs.frozen
class Snapshot:
    """One exact source tree: what is built and what a result records of it."""

    repo: str  # the checkout's folder or the URL
    commit: str
    dirty: bool  # a working tree with changes against ``commit``
    content_id: str  # the commit's git tree id; for a dirty working tree a hash of its files
    git_dir: Path  # the repository a worktree of ``commit`` is added from
    files: tuple[str, ...] = ()  # a dirty working tree: the files copied (relative to ``git_dir``)

    @property
    def short(self) -> str:
        return self.commit[:12] + ("+dirty" if self.dirty else "")

    def read(self, relpath: str) -> str | None:
        """One file of the tree (None when absent)."""
        if self.dirty:
            p = self.git_dir / relpath
            return p.read_text(errors="replace") if relpath in self.files and p.is_file() else None
        try:
            return git(self.git_dir, "show", f"{self.commit}:{relpath}")
        except WfbenchError:
            return None


def _generated(folder: Path, cache: dict[Path, bool], root: Path) -> bool:
    """Whether ``folder`` (inside ``root``) is, or is inside, a cmake build tree or a virtual environment."""
    if folder in cache:
        return cache[folder]
    found = any((folder / m).is_file() for m in GENERATED_MARKERS) or (
        folder != root and folder.parent != folder and _generated(folder.parent, cache, root))
    cache[folder] = found
    return found


def _working_files(top: Path) -> tuple[list[str], list[str]]:
    """(tracked files present, untracked source files) of a working tree."""
    def listed(*args: str) -> list[str]:
        return [f for f in git(top, "ls-files", "-z", *args, what="listing the working tree").split("\0") if f]

    tracked = [f for f in listed("--cached", "--deduplicate") if os.path.lexists(top / f)]
    cache: dict[Path, bool] = {}
    untracked = [f for f in listed("--others", "--exclude-standard")
                 if not _generated((top / f).parent, cache, top)]
    return tracked, untracked


def _digest(top: Path, files: list[str]) -> str:
    h = hashlib.sha256()
    for rel in sorted(files):
        p = top / rel
        data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
        mode = "l" if p.is_symlink() else "x" if os.access(p, os.X_OK) else "f"
        h.update(f"{rel}\0{mode}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _of_working_tree(spec: SourceSpec) -> Snapshot:
    assert spec.path is not None
    top = toplevel(spec.path)
    if top is None:
        raise WfbenchError(f"--warpforth {spec.text!r}: {spec.path} is not a git checkout (of WarpForth)")
    commit = git(top, "rev-parse", "--verify", "HEAD^{commit}", what="reading HEAD").strip()
    tracked, untracked = _working_files(top)
    changed = bool(untracked) or bool(git(top, "diff", "HEAD", "--name-only", what="looking for changes").strip())
    if not changed:
        tree = git(top, "rev-parse", f"{commit}^{{tree}}").strip()
        return Snapshot(repo=str(top), commit=commit, dirty=False, content_id=tree, git_dir=top)
    files = tracked + untracked
    return Snapshot(repo=str(top), commit=commit, dirty=True, content_id="files-" + _digest(top, files),
                    git_dir=top, files=tuple(sorted(files)))


def _of_ref(repo: Path, ref: str, shown: str, text: str) -> Snapshot:
    try:
        commit = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except WfbenchError:
        commit = ""
    if not commit:
        raise WfbenchError(f"--warpforth {text!r}: {ref!r} is not a commit, branch or tag of {shown}"
                           f" (git fetch it first?)")
    tree = git(repo, "rev-parse", f"{commit}^{{tree}}").strip()
    return Snapshot(repo=shown, commit=commit, dirty=False, content_id=tree, git_dir=repo)


def snapshot(spec: SourceSpec, clones: Path) -> Snapshot:
    """Pin ``spec`` to one exact tree; a URL is cloned into ``clones`` (which the caller removes)."""
    if spec.url:
        dest = Path(tempfile.mkdtemp(prefix="clone-", dir=clones))
        git(dest, "clone", "--quiet", "--no-checkout", spec.url, str(dest / "repo"), what=f"cloning {spec.url}")
        return _of_ref(dest / "repo", spec.ref or "HEAD", spec.url, spec.text)
    assert spec.path is not None
    if spec.is_working_tree:
        return _of_working_tree(spec)
    top = toplevel(spec.path)
    if top is None:
        raise WfbenchError(f"--warpforth {spec.text!r}: {spec.path} is not a git checkout, so it has no ref "
                           f"{spec.ref!r}")
    return _of_ref(top, spec.ref, str(top), spec.text)


def materialize(snap: Snapshot, dest: Path) -> None:
    """Put the tree at ``dest`` (a new folder): a worktree of the commit, or a copy of the working tree."""
    if not snap.dirty:
        git(snap.git_dir, "worktree", "add", "--quiet", "--detach", str(dest), snap.commit,
            what=f"checking out {snap.commit[:12]}")
        return
    dest.mkdir(parents=True)
    for rel in snap.files:
        src, out = snap.git_dir / rel, dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        else:
            shutil.copy2(src, out)


def release(snap: Snapshot, dest: Path) -> None:
    """Remove what :func:`materialize` made (a worktree is unregistered from its repository too)."""
    if not snap.dirty and dest.exists():
        try:
            git(snap.git_dir, "worktree", "remove", "--force", str(dest), what="removing the build worktree")
        except WfbenchError:
            pass
    shutil.rmtree(dest, ignore_errors=True)
    if not snap.dirty:
        try:
            git(snap.git_dir, "worktree", "prune")
        except WfbenchError:
            pass


def home_checkout(values: list[str]) -> Path | None:
    """The checkout a bare REF belongs to: the first value that is a folder, else the current folder's."""
    for text in values:
        before = text.rpartition("@")[0] if not Path(text).expanduser().is_dir() else text
        for candidate in (text, before):
            if candidate and not _URL.match(candidate) and Path(candidate).expanduser().is_dir():
                return toplevel(Path(candidate).expanduser())
    return toplevel(Path.cwd())


def iter_labels(values: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """``LABEL=VALUE`` pairs; one value may go without a label (""), several need one each."""
    seen: set[str] = set()
    for v in values:
        label, sep, rest = v.partition("=")
        if not sep or _URL.match(v) or "/" in label or not label:
            if len(values) > 1:
                raise WfbenchError(f"--warpforth {v!r}: with several compilers each needs a label, e.g. head=.")
            label, rest = "", v
        if label in seen:
            raise WfbenchError(f"--warpforth: label {label!r} given twice")
        seen.add(label)
        yield label, rest
