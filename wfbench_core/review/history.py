"""The history store: append-only run files plus a derived index, one series per comparable setup.

Layout of a history directory (commit it to a data branch as it is)::

    runs/<year>/<created>-<sha256 prefix>.json   one RunResult per file, never rewritten
    index.json                                   derived from runs/ (``wfbench history reindex``)

A **series** is every point measured under one :class:`~wfbench_core.review.series.SeriesKey` (the records of a
series and its points live in :mod:`wfbench_core.review.series`). A run that differs in any key field starts a new
series; nothing is ever merged across keys.

Nothing of a failed run becomes history: a run with a failed or error case, or an incomplete run, is refused
whole. Unstable cases are stored and marked; trends, alerts and the headline leave them out.

Writers take an exclusive lock (``.lock``) around "store the run file, rewrite the index", so two writers
at once cannot lose each other's runs. Run files are created with an exclusive link, so an existing file is
never replaced. Readers never lock: they trust the index for the files it lists and parse any file it does
not list, so a stale or missing index costs time, never data. A corrupt or foreign file is reported with its
path and skipped; everything else stays usable.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from wfbench_core.errors import WfbenchError
from wfbench_core.record.fsutil import atomic_write, create_exclusive, read_json
from wfbench_core.record.result_rules import index_problem
from wfbench_core.record.results import FAILING, RunResult, TimingProtocol, converter, dumps, parse_result
from wfbench_core.review.series import Point, Series, SeriesKey, case_name, points_from_run

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "DEFAULT_DIR", "HISTORY_ENV", "INDEX_FILE", "INDEX_VERSION", "LOCK_FILE", "LOCK_WAIT_S", "RUNS_DIR", "RUN_NAME",
    "AddOutcome", "History", "Index", "Problem", "RunEntry", "add_run", "git_links", "point_order",
    "protocol_defaults", "refusal", "reindex", "utc_sortable",
]

HISTORY_ENV = "WFBENCH_HISTORY"
DEFAULT_DIR = "wfbench-history"
INDEX_VERSION = 4  # 2: points carry the board and the PTX hash, keys the protocol; 3: SASS hash, throttling, host
# health; 4: both sides' code identity (SASS and resources) and the gaps of --repeat processes
RUNS_DIR = "runs"
INDEX_FILE = "index.json"
LOCK_FILE = ".lock"
LOCK_WAIT_S = 60.0  # how long a writer waits for another one to finish before it says so and stops
RUN_NAME = re.compile(r"^(\d{8}T\d{6}Z)-([0-9a-f]{16})\.json$")

_GITIGNORE = ".lock\n.*.tmp\n"
_README = """\
This directory is a wfbench history (https://pypi.org/project/wfbench/ -- see docs/history.md).

runs/        one result file per run, named <created>-<sha256 prefix>.json; never edited or rewritten
index.json   derived from runs/; rebuild it with `wfbench history reindex --history DIR`

Add a run with `wfbench history add RESULT.json --history DIR`; list the series with
`wfbench history list --history DIR`; build the dashboard with `wfbench dashboard --history DIR --out SITE`.
"""


# --------------------------------------------------------------------------------------------------------
# records of the store


@attrs.frozen
class RunEntry:
    """One stored run file."""

    file: str
    sha256: str
    created: str
    gpu_name: str
    mode: str
    cases: int
    git_commit: str = ""


@attrs.frozen
class Index:
    """The derived index: every stored run and every series with its points."""

    index_version: int
    runs: tuple[RunEntry, ...]
    series: tuple[Series, ...]
    # the default protocol the keys were derived against: series keys name the settings that differ from it,
    # so an index written under other defaults is rebuilt
    protocol_defaults: str = ""


def protocol_defaults() -> str:
    """The default protocol's settings, as the index records them."""
    return json.dumps(converter().unstructure(TimingProtocol()), sort_keys=True, separators=(",", ":"))


@attrs.frozen
class Problem:
    """A file in the history that could not be used, and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@attrs.frozen
class AddOutcome:
    """What adding one run did."""

    path: Path  # the stored run file
    added: bool  # False: the same run was already stored
    series: tuple[tuple[str, SeriesKey, bool], ...]  # (series id, key, new series?) per stored case


def refusal(result: RunResult, *, allow_incomplete: bool = False) -> str | None:
    """Why this run must not become history, or None: nothing of a failed run is stored."""
    bad = [c for c in result.cases if c.status in FAILING]
    if bad:
        what = "; ".join(f"{case_name(c)} {c.status.upper()}" + (f": {c.message}" if c.message else "")
                         for c in bad)
        return f"{len(bad)} case{'s' if len(bad) != 1 else ''} did not pass ({what}); a failed run is never stored"
    if not result.complete and not allow_incomplete:
        return (f"an incomplete run ({len(result.cases)} case{'s' if len(result.cases) != 1 else ''} finished "
                f"before it stopped); not stored (--allow-incomplete stores the finished cases)")
    untimed = [case_name(c) for c in result.cases if not c.timed]
    if untimed or not result.cases:
        return f"no timing for {', '.join(untimed) or 'any case'}; nothing to store"
    return None


# --------------------------------------------------------------------------------------------------------
# the store


def _content_hash(data: bytes) -> str:
    # line endings normalised, so a checkout with CRLF conversion still matches its name
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()


def _stamp(created: str, where: str) -> str:
    try:
        when = _dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        raise WfbenchError(f"{where}: 'created' is {created!r}, not an ISO 8601 time; is this a wfbench result?") \
            from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def point_order(p: Point) -> tuple[str, str]:
    """Points sort by their UTC time, then by run file."""
    return (utc_sortable(p.created), p.run)


def utc_sortable(created: str) -> str:
    """``created`` as a string that sorts in time order whatever its UTC offset."""
    try:
        return _stamp(created, "")
    except WfbenchError:
        return created


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Exclusive writer lock on the history directory (advisory; POSIX ``flock``)."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform; the index heals itself on read
        yield
        return
    import time

    with open(root / LOCK_FILE, "a+b") as fh:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WfbenchError(f"{root / LOCK_FILE}: held by another process writing this history (waited "
                                       f"{LOCK_WAIT_S:g} s); try again when it has finished") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@attrs.define
class History:
    """A history directory as read now: its runs, its series and the files it could not use."""

    root: Path
    runs: dict[str, RunEntry] = attrs.Factory(dict)
    series: dict[str, Series] = attrs.Factory(dict)
    problems: list[Problem] = attrs.Factory(list)
    index_fresh: bool = False

    # ---- reading

    @classmethod
    def open(cls, root: str | Path, *, rebuild: bool = False, must_exist: bool = True) -> History:
        """Read the history at ``root``; ``rebuild`` ignores the index and parses every run file."""
        root = Path(root)
        if not root.exists():
            if must_exist:
                raise WfbenchError(f"{root}: no such history directory; add a run with "
                                   f"'wfbench history add RESULT.json --history {root}'")
            return cls(root=root, index_fresh=False)
        if not root.is_dir():
            raise WfbenchError(f"{root}: not a directory; --history takes the history directory")
        h = cls(root=root)
        listed = h._scan()
        index = None if rebuild else h._read_index()
        points: dict[str, list[Point]] = {}
        keys: dict[str, SeriesKey] = {}
        known: set[str] = set()
        if index is not None:
            for entry in index.runs:
                if entry.file in listed:
                    h.runs[entry.file] = entry
                    known.add(entry.file)
                else:
                    h.problems.append(Problem(str(root / entry.file),
                                              "listed in index.json but missing; run files are never removed, "
                                              "restore it from version control"))
            for s in index.series:
                kept = [p for p in s.points if p.run in known]
                if kept:
                    keys[s.id] = s.key
                    points.setdefault(s.id, []).extend(kept)
        for rel in sorted(listed - known):
            loaded = h._parse(rel)
            if loaded is None:
                continue
            entry, result = loaded
            h.runs[rel] = entry
            for key, point in points_from_run(result, rel):
                keys[key.id] = key
                points.setdefault(key.id, []).append(point)
        h.series = {sid: Series(sid, keys[sid], tuple(sorted(pts, key=point_order))) for sid, pts in points.items()}
        h.index_fresh = index is not None and known == listed
        return h

    def _scan(self) -> set[str]:
        """Every plain file under runs/ (relative paths), minus a writer's temporary files."""
        base = self.root / RUNS_DIR
        found: set[str] = set()
        if not base.is_dir():
            return found
        for path in base.rglob("*"):
            if not path.is_file():
                if path.is_symlink():  # skipped like any file that is not a run, and said so alike
                    self.problems.append(Problem(str(path), "a symbolic link to no file (a loop, or its target is "
                                                 "gone), not a wfbench run file; move it out of runs/"))
                continue
            rel = path.relative_to(self.root).as_posix()
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                continue  # a write in progress (or one that was interrupted): not a run yet
            if not RUN_NAME.match(path.name):
                self.problems.append(Problem(str(path), "not a wfbench run file (expected "
                                             "<YYYYMMDDTHHMMSSZ>-<hash>.json); move it out of runs/"))
                continue
            found.add(rel)
        return found

    def _read_index(self) -> Index | None:
        path = self.root / INDEX_FILE
        if not path.exists():
            return None
        try:
            data = read_json(path, "a wfbench history index")  # any bytes: data or one WfbenchError
            if not isinstance(data, dict) or data.get("index_version") != INDEX_VERSION \
                    or data.get("protocol_defaults") != protocol_defaults():
                return None  # written by another wfbench version: derived data, so rebuild it
            index: Index = converter().structure(data, Index)
            if index_problem(index):  # derived data that no run file gives: rebuilt from the runs
                raise ValueError(index_problem(index))
            return index
        except (WfbenchError, ValueError, TypeError, KeyError, _validation_error()):
            self.problems.append(Problem(str(path), "unreadable; it is derived, so it was rebuilt from runs/ "
                                         "('wfbench history reindex' rewrites it)"))
            return None

    def _parse(self, rel: str) -> tuple[RunEntry, RunResult] | None:
        path = self.root / rel
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.problems.append(Problem(str(path), f"cannot read ({exc.strerror})"))
            return None
        digest = _content_hash(data)
        m = RUN_NAME.match(path.name)
        assert m is not None
        try:
            result = parse_result(data, str(path))
        except WfbenchError as exc:
            self.problems.append(Problem(str(path), str(exc).removeprefix(f"{path}: ") + "; skipped"))
            return None
        if not digest.startswith(m.group(2)):
            self.problems.append(Problem(str(path), "content does not match the hash in its name (changed after "
                                         "it was stored?); restore it from version control; skipped"))
            return None
        entry = RunEntry(file=rel, sha256=digest, created=result.created, gpu_name=result.environment.gpu_name,
                         mode=result.mode, cases=len(result.cases), git_commit=result.source.git_commit)
        return entry, result

    def load_run(self, rel: str) -> RunResult:
        from wfbench_core.record.results import load_result

        return load_result(self.root / rel)

    # ---- views

    def index(self) -> Index:
        runs = tuple(sorted(self.runs.values(), key=lambda e: (utc_sortable(e.created), e.file)))
        series = tuple(sorted(self.series.values(),
                              key=lambda s: (s.key.case_id, s.key.case_version, s.key.gpu_name, s.key.mode, s.id)))
        return Index(index_version=INDEX_VERSION, runs=runs, series=series, protocol_defaults=protocol_defaults())

    def newest_run(self) -> RunEntry | None:
        if not self.runs:
            return None
        return max(self.runs.values(), key=lambda e: (utc_sortable(e.created), e.file))

    def points_of_run(self, rel: str) -> list[tuple[Series, Point]]:
        return [(s, p) for s in self.series.values() for p in s.points if p.run == rel]

    def find_series(self, key: SeriesKey) -> Series | None:
        return self.series.get(key.id)

    # ---- writing

    def write_index(self) -> None:
        text = json.dumps(converter().unstructure(self.index()), indent=1, allow_nan=False) + "\n"
        atomic_write(self.root / INDEX_FILE, text)
        self.index_fresh = True


def add_run(root: str | Path, result: RunResult, *, where: str = "result",
            allow_incomplete: bool = False) -> AddOutcome:
    """Store one run whole and refresh the index; the same run twice is a no-op.

    A run with a failed or error case, or an incomplete one (unless ``allow_incomplete``), is refused and
    nothing is written: see :func:`refusal`.
    """
    root = Path(root)
    why = refusal(result, allow_incomplete=allow_incomplete)
    if why:
        raise WfbenchError(f"{where}: {why}")
    stored = result
    data = dumps(stored).encode()
    digest = _content_hash(data)
    stamp = _stamp(result.created, where)
    rel = f"{RUNS_DIR}/{stamp[:4]}/{stamp}-{digest[:16]}.json"
    path = root / rel
    with _locked(root):
        for name, text in ((".gitignore", _GITIGNORE), ("README.txt", _README)):
            if not (root / name).exists():
                atomic_write(root / name, text)
        h = History.open(root)
        duplicate = _same_run(h, stored, rel)
        added = False
        if duplicate is None:
            added = create_exclusive(path, data)
            if added:
                h.runs[rel] = RunEntry(file=rel, sha256=digest, created=stored.created,
                                       gpu_name=stored.environment.gpu_name, mode=stored.mode,
                                       cases=len(stored.cases), git_commit=stored.source.git_commit)
            if rel in h.runs:
                known = {p.run for s in h.series.values() for p in s.points}
                if rel not in known:
                    _merge(h, points_from_run(stored, rel))
        else:
            path = root / duplicate
        series_info = []
        for key, _point in points_from_run(stored, rel):
            s = h.series.get(key.id)
            is_new = s is not None and all(p.run == rel for p in s.points) and added
            series_info.append((key.id, key, is_new))
        if added or not h.index_fresh:
            h.write_index()
    return AddOutcome(path=path, added=added, series=tuple(series_info))


def _merge(h: History, new: Sequence[tuple[SeriesKey, Point]]) -> None:
    for key, point in new:
        old = h.series.get(key.id)
        pts = (old.points if old else ()) + (point,)
        h.series[key.id] = Series(key.id, key, tuple(sorted(pts, key=point_order)))


def _same_run(h: History, stored: RunResult, rel: str) -> str | None:
    """The stored file that already holds this run, if any (same content, or same GPU at the same time)."""
    if rel in h.runs:
        return rel
    uuid = stored.environment.gpu_uuid
    for entry in h.runs.values():
        if entry.created == stored.created and entry.gpu_name == stored.environment.gpu_name and uuid:
            try:
                other = h.load_run(entry.file)
            except WfbenchError:
                continue
            if other.environment.gpu_uuid == uuid and other.mode == stored.mode:
                return entry.file
    return None


def reindex(root: str | Path) -> History:
    """Rebuild index.json from the run files."""
    root = Path(root)
    with _locked(root):
        h = History.open(root, rebuild=True)
        h.write_index()
    return h


# --------------------------------------------------------------------------------------------------------
# helpers for the views


def git_links(point: Point) -> tuple[str, str]:
    """(commit URL, run URL) when the point's source carries them; empty strings otherwise."""
    commit_url = ""
    repo = point.git_repo.rstrip("/")
    if point.git_commit and repo.startswith(("https://", "http://")):
        commit_url = f"{repo}/commit/{point.git_commit}"
    run_url = point.ci_run_url if point.ci_run_url.startswith(("https://", "http://")) else ""
    return commit_url, run_url


def _validation_error() -> type[Exception]:
    import cattrs

    return cattrs.BaseValidationError
