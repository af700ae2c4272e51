"""Fuzz: every command that reads a file, fed broken files through the real command line.

Seeded and bounded. Each kind of file wfbench reads (a result, a bundle's manifest and its PTX and CUDA
files, an execute request, WarpForth PTX, the history's index and run files, the Vast.ai key file) starts
from a real, valid one and is broken in each of these ways: random bytes, a truncation, non-UTF-8 bytes,
a wrong shape (a key dropped or added, a value wrapped, a list emptied), a wrong type (a value replaced by
one of another JSON type), impossible numbers, nesting deeper than any parser allows. Every command that
reads it is then run through click's runner (and the commonest through a real process).

What must hold, for every command and input:

- no traceback, ever (an exception leaving the command is a failure here);
- an input the command refuses: exit 2 and exactly one ``wfbench: error:`` line naming the file;
- results: the command refuses exactly what the one loader (``results.parse_result``) refuses, and a result
  it accepts never makes a command crash or print a non-positive gap;
- history files are warned about (one line naming the file) and skipped, as docs/history.md says.

``pytest -s`` prints the counts (commands x inputs); ``WFBENCH_FUZZ_OUT=FILE`` also writes them as JSON.
"""

from __future__ import annotations

import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from click.testing import CliRunner

from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError

SEED = 20261202
FIXTURES = Path(__file__).parent / "fixtures"
PER_KIND = 5  # inputs of each kind of breakage per file type (JSON kinds); random bytes get more
COUNTS: collections.Counter[tuple[str, str]] = collections.Counter()  # (command, file) -> inputs refused
ACCEPTED: collections.Counter[tuple[str, str]] = collections.Counter()  # (command, file) -> inputs still valid
RAN: set[str] = set()  # the tests of this module that have run in this session


@pytest.fixture(autouse=True)
def _ran(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    yield
    RAN.add(request.node.nodeid)


# -------------------------------------------------------------------------------------------------------------
# breaking files


def _paths(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield from _paths(v, prefix + (i,))


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (_replace(v, rest, value) if k == head else v) for k, v in doc.items()}
    return [(_replace(v, rest, value) if i == head else v) for i, v in enumerate(doc)]


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


_DELETE = object()
_OTHER_TYPES = ({}, [], "x", 7, -1.5, True, None)


def _wrong_type(rng: random.Random, doc: Any) -> Any:
    path = rng.choice([p for p in _paths(doc) if p])
    old = _get(doc, path)
    choices = [v for v in _OTHER_TYPES if type(v) is not type(old) and not (isinstance(old, (int, float))
                                                                            and type(v) in (int, float))]
    return _replace(doc, path, rng.choice(choices))


def _wrong_shape(rng: random.Random, doc: Any) -> Any:
    containers = [p for p in _paths(doc) if isinstance(_get(doc, p), (dict, list)) and _get(doc, p)]
    path = rng.choice(containers)
    node = _get(doc, path)
    how = rng.randrange(3)
    if isinstance(node, dict):
        key = rng.choice(list(node))
        if how == 0:
            new = {k: v for k, v in node.items() if k != key}
        elif how == 1:
            new = {**node, "surprise": 1}
        else:
            new = {**node, key: [node[key]]}
    else:
        new = [] if how == 0 else node[:1] if how == 1 else [node]
    return _replace(doc, path, new)


def _impossible_number(rng: random.Random, doc: Any) -> Any:
    numbers = [p for p in _paths(doc) if p and type(_get(doc, p)) in (int, float)]
    return _replace(doc, rng.choice(numbers), rng.choice([0, -1, -14702.375, 1e308, -0.0, 2**70]))


def _text(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode()


def broken_json(rng: random.Random, valid: bytes) -> Iterator[tuple[str, bytes]]:
    """``(kind, bytes)``: broken variants of a valid JSON file."""
    doc = json.loads(valid)
    for _ in range(PER_KIND * 2):
        yield "random bytes", rng.randbytes(rng.randrange(0, 600))
    for _ in range(PER_KIND):
        yield "truncated", valid[:rng.randrange(0, len(valid))]
        at = rng.randrange(0, len(valid))
        yield "non-UTF-8", valid[:at] + rng.choice([b"\xff", b"\xe9", b"\xc3\x28", b"\x80"]) + valid[at:]
        yield "wrong shape", _text(_wrong_shape(rng, doc))
        yield "wrong type", _text(_wrong_type(rng, doc))
        yield "impossible number", _text(_impossible_number(rng, doc))
    yield "wrong shape", b"[" + valid + b"]"
    yield "nested too deeply", b"[" * 200_000 + b"]" * 200_000
    yield "NaN", valid.replace(b": 0", b": NaN", 1) if b": 0" in valid else b'{"x": NaN}'


def broken_text(rng: random.Random, valid: bytes, *, text: bool = True) -> Iterator[tuple[str, bytes]]:
    """Broken variants of a text file (PTX, CUDA source, a key): binary, not UTF-8, and (``text``) garbage
    text and truncations."""
    for _ in range(PER_KIND):
        yield "random bytes", rng.randbytes(rng.randrange(1, 600)) + b"\x00"
        at = rng.randrange(0, len(valid))
        yield "non-UTF-8", valid[:at] + rng.choice([b"\xff", b"\xe9", b"\xc3\x28", b"\x80"]) + valid[at:]
        if text:
            yield "garbage text", "".join(rng.choice("abc .{}();\n") for _ in range(rng.randrange(200))).encode()
            yield "truncated", valid[:rng.randrange(0, len(valid))]


# -------------------------------------------------------------------------------------------------------------
# running commands


def _run(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, args, env=env)


def _no_crash(res: Any, what: str) -> None:
    assert res.exception is None or isinstance(res.exception, SystemExit), \
        f"{what}: {type(res.exception).__name__}: {res.exception}"
    assert "Traceback" not in res.output + res.stderr, what


def refused(res: Any, names: str, what: str) -> bool:
    """True when the command refused the input: exit 2, one error line naming the file. Never a crash."""
    _no_crash(res, what)
    if res.exit_code == 2:
        lines = res.stderr.strip().splitlines()
        errors = [ln for ln in lines if ln.startswith("wfbench: error:")]
        assert len(errors) == 1 and len(lines) == len(errors) + sum(ln.startswith("wfbench: warning:")
                                                                   for ln in lines), (what, res.stderr)
        assert names in errors[0], (what, errors[0])
        return True
    return False


def tally(command: str, file: str, was_refused: bool) -> None:
    (COUNTS if was_refused else ACCEPTED)[(command, file)] += 1


# -------------------------------------------------------------------------------------------------------------
# result files


def _valid_result() -> bytes:
    from wfbench_core.record.results import dumps, load_result

    return dumps(load_result(FIXTURES / "h200-run1.json")).encode()


def test_result_files(tmp_path: Path) -> None:
    from wfbench_core.record.results import parse_result

    rng = random.Random(SEED)
    good = str(FIXTURES / "h200-run1.json")
    hist = tmp_path / "hist"
    for n, (kind, data) in enumerate(broken_json(rng, _valid_result())):
        path = tmp_path / f"r{n}.json"
        path.write_bytes(data)
        try:
            parse_result(data, str(path))
            valid = True
        except WfbenchError:
            valid = False
        commands = {
            "export": ["export", str(path)],
            "check": ["check", str(path), "--history", str(hist)],
            "compare base": ["compare", str(path), good],
            "compare head": ["compare", good, str(path)],
            "compare labels": ["compare", str(path)],
            "history add": ["history", "add", str(path), "--history", str(hist)],
        }
        if not valid:  # these go on to compile or time when the result is fine
            commands["explain --result"] = ["explain", "axpy_f64", "--result", str(path), "--wf-ptx", str(path)]
            commands["crosscheck --against"] = ["crosscheck", str(tmp_path), "--against", str(path)]
        for command, args in commands.items():
            res = _run(args)
            what = f"{command} on {kind} #{n}"
            was_refused = refused(res, str(path), what)
            if command in ("explain --result", "crosscheck --against"):
                assert was_refused, what
            elif command != "compare labels":  # a run of one compiler is refused for its labels, not its figures
                assert was_refused == (not valid), (what, res.exit_code, res.stderr)
            if valid:
                assert not re.search(r"-\d[\d.]*x\b|\bnan\b|\binf\b", res.output), (what, res.output)
                shutil.rmtree(hist, ignore_errors=True)
            tally(command, "result", was_refused)
    assert not hist.exists() or not any((hist / "runs").rglob("r*.json"))


# -------------------------------------------------------------------------------------------------------------
# bundles and requests


@pytest.fixture
def bundle(prebuilt_bundle, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    return prebuilt_bundle(("scale_i64",), tmp_path / "good-bundle")


def _bundle_commands(b: Path) -> dict[str, list[str]]:
    return {
        "execute --validate-only": ["execute", str(b), "--validate-only"],
        "explain --bundle": ["explain", "scale_i64", "--bundle", str(b)],
        "crosscheck": ["crosscheck", str(b), "-c", "scale_i64"],
    }


def test_bundle_manifests_and_files(bundle: Path, tmp_path: Path) -> None:
    from wfbench_core.compiling.prepare import validate
    from wfbench_core.discover.registry import Registry

    rng = random.Random(SEED + 1)
    reg = Registry.load()
    manifest = (bundle / "manifest.json").read_bytes()
    inputs = [("manifest.json", kind, data) for kind, data in broken_json(rng, manifest)]
    for name in ("scale_i64/check.ptx", "scale_i64/canonical.cu"):
        inputs += [(name, kind, data) for kind, data in broken_text(rng, (bundle / name).read_bytes())]
    for n, (name, kind, data) in enumerate(inputs):
        b = tmp_path / f"b{n}"
        shutil.copytree(bundle, b)
        (b / name).write_bytes(data)
        try:
            validate(b, reg)
            valid = True
        except WfbenchError:
            valid = False
        for command, args in _bundle_commands(b).items():
            if valid and command != "execute --validate-only":
                continue  # a bundle that is still whole would be compiled or timed
            res = _run(args)
            what = f"{command} on {name} {kind} #{n}"
            was_refused = refused(res, str(b), what)
            assert was_refused == (not valid), (what, res.exit_code, res.stderr)
            tally(command, "bundle " + name.split("/")[-1].replace("check.", "").replace("canonical.", ""),
                  was_refused)
        shutil.rmtree(b)


def test_request_files(bundle: Path, tmp_path: Path) -> None:
    from wfbench_core.record.request import ExecuteRequest

    rng = random.Random(SEED + 2)
    for n, (kind, data) in enumerate(broken_json(rng, ExecuteRequest().to_json().encode())):
        path = tmp_path / f"q{n}.json"
        path.write_bytes(data)
        try:
            ExecuteRequest.from_json(data.decode("utf-8"), str(path))
            valid = b"\x00" not in data
        except (WfbenchError, UnicodeDecodeError):
            valid = False
        res = _run(["execute", str(bundle), "--request", str(path), "--validate-only"])
        was_refused = refused(res, str(path), f"--request {kind} #{n}")
        assert was_refused == (not valid), (kind, n, res.stderr)
        tally("execute --request", "request", was_refused)


# -------------------------------------------------------------------------------------------------------------
# PTX, and the Vast.ai key file (a config)


def test_ptx_files(tmp_path: Path) -> None:
    rng = random.Random(SEED + 3)
    ptx = (FIXTURES / "ptx" / "scale_i64.canonical.ptx").read_bytes()
    for n, (kind, data) in enumerate(broken_text(rng, ptx)):
        path = tmp_path / f"p{n}.ptx"
        path.write_bytes(data)
        res = _run(["explain", "scale_i64", "--wf-ptx", str(path), "-q"])
        # PTX cut after its kernel's .entry line gets as far as ptxas, whose refusal names the side
        assert refused(res, str(path) if kind != "truncated" else "", f"--wf-ptx {kind} #{n}"), res.stderr
        assert str(path) in res.stderr or "WarpForth" in res.stderr, res.stderr
        tally("explain --wf-ptx", "PTX", True)


def test_vast_key_file(tmp_path: Path) -> None:
    pytest.importorskip("vastai")
    pytest.importorskip("paramiko")
    rng = random.Random(SEED + 4)
    warpforthc = tmp_path / "warpforthc"
    warpforthc.write_text("#!/bin/sh\nexit 1\n")
    warpforthc.chmod(0o755)
    key = tmp_path / "home" / ".config" / "vastai" / "vast_api_key"
    key.parent.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
           "VAST_API_KEY": ""}
    for n, (kind, data) in enumerate(broken_text(rng, b"0123456789abcdef" * 4 + b"\n", text=False)):
        key.write_bytes(data)
        res = _run(["run", "-c", "scale_i64", "--transport", "vast", "--warpforthc", str(warpforthc)], env=env)
        assert refused(res, str(key), f"vast key {kind} #{n}"), res.stderr
        assert data.decode("latin-1") not in res.stderr  # the key itself is never printed
        tally("run --transport vast", "Vast.ai key file", True)


# -------------------------------------------------------------------------------------------------------------
# the history: a bad file is named in one warning line and skipped, the rest stays usable


@pytest.fixture
def history(tmp_path: Path) -> Path:
    h = tmp_path / "history"
    res = _run(["history", "add", str(FIXTURES / "h200-run1.json"), "--history", str(h)])
    assert res.exit_code == 0, res.output
    return h


def _history_commands(h: Path, out: Path) -> dict[str, list[str]]:
    return {
        "history list": ["history", "list", "--history", str(h)],
        "history reindex": ["history", "reindex", "--history", str(h)],
        "dashboard": ["dashboard", "--history", str(h), "--out", str(out)],
        "check": ["check", "--history", str(h)],
    }


def _warned(res: Any, path: Path, what: str) -> bool:
    _no_crash(res, what)
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("wfbench: warning:")]
    return any(str(path) in ln for ln in warnings) or (res.exit_code == 2 and str(path) in res.stderr)


def test_history_index_and_run_files(history: Path, tmp_path: Path) -> None:
    rng = random.Random(SEED + 5)
    (run,) = (history / "runs").rglob("*.json")
    index, run_bytes, index_bytes = history / "index.json", run.read_bytes(), (history / "index.json").read_bytes()
    files: list[tuple[Path, str, Callable[[], Iterator[tuple[str, bytes]]]]] = [
        (index, "history index", lambda: broken_json(rng, index_bytes)),
        (run, "history run", lambda: broken_json(rng, run_bytes)),
    ]
    for path, label, inputs in files:
        for n, (kind, data) in enumerate(inputs()):
            for command, args in _history_commands(history, tmp_path / "site").items():
                if path == index and command == "history reindex":
                    continue  # it never reads the index: it rebuilds it
                run.write_bytes(run_bytes)
                index.write_bytes(index_bytes)
                if path == run:  # the index lists it: every reader but check would trust the index instead
                    index.unlink()
                path.write_bytes(data)
                res = _run(args)
                what = f"{command} on {label} {kind} #{n}"
                named = _warned(res, path, what)
                if path == run:  # a damaged run file never passes unnoticed (its hash is in its name)
                    assert named, (what, res.exit_code, res.stderr)
                    assert res.exit_code in (0, 2, 4), (what, res.stderr)
                else:  # the index is derived: damaged, it is rebuilt (named) or, if still whole, used
                    assert res.exit_code in (0, 4), (what, res.stderr)
                    assert not re.search(r"-\d[\d.]*x\b|\bnan\b|\binf\b", res.output), (what, res.output)
                tally(command, label, named)


# -------------------------------------------------------------------------------------------------------------
# real processes, and the counts


@pytest.mark.parametrize("file, args", [
    ("r.json", ["export", "{}"]),
    ("r.json", ["compare", "{}", str(FIXTURES / "h200-run1.json")]),
    ("p.ptx", ["explain", "scale_i64", "--wf-ptx", "{}"]),
    ("q.json", ["execute", str(FIXTURES), "--request", "{}", "--validate-only"]),
])
def test_a_real_process_answers_binary_input_in_one_line(tmp_path: Path, file: str, args: list[str]) -> None:
    path = tmp_path / file
    path.write_bytes(b"\xff\xfe" + bytes(range(256)))
    argv = [a.replace("{}", str(path)) for a in args]
    proc = subprocess.run([sys.executable, "-m", "wfbench_core", *argv], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[1])
    if "execute" in argv:  # a folder that is not a bundle is named first; the request file is read before it
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        return
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"wfbench: error: {path}: not "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_zz_counts(request: pytest.FixtureRequest) -> None:
    """The counts of this module's run (commands x inputs refused), for the record; every input is counted.
    It runs last of the module (its name sorts last), and counts only once all the others have run."""
    others = {i.nodeid for i in request.session.items if i.module is request.module and i is not request.node}
    if not COUNTS or others - RAN or request.config.option.keyword or request.config.option.markexpr:
        pytest.skip("counts the whole module: run with the rest of it (no -k or -m), after them")
    lines = [f"{command:26} {file:22} {COUNTS[(command, file)]:4} answered in one line, "
             f"{ACCEPTED[(command, file)]:3} still valid" for command, file in sorted(set(COUNTS) | set(ACCEPTED))]
    total = sum(COUNTS.values())
    lines.append(f"{len({c for c, _ in COUNTS})} commands x {len({f for _, f in COUNTS})} file kinds: {total} broken "
                 f"inputs answered in one line naming the file, {sum(ACCEPTED.values())} mutations still valid, "
                 f"0 tracebacks")
    print("\n" + "\n".join(lines))
    out = os.environ.get("WFBENCH_FUZZ_OUT")
    if out:
        Path(out).write_text(json.dumps({"refused": {f"{c} | {f}": n for (c, f), n in COUNTS.items()},
                                         "still_valid": {f"{c} | {f}": n for (c, f), n in ACCEPTED.items()},
                                         "total_refused": total, "tracebacks": 0}, indent=1))
    assert total > 300
