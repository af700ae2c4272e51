"""``wfbench coverage``: the word families the cases use, the words they do not, excuses, probing a real
warpforthc, bad input from a third-party case, and the table the README and docs/coverage.md show."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit import load_tool

from wfbench_core.compiling import coverage
from wfbench_core.compiling.coverage import case_words, coverage_map, load_excuses, load_language
from wfbench_core.compiling.coverage_probe import SNIPPETS, probe
from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError

HEAD = "\\! kernel k\n\\! param A i64[4]\n\\! shared S i64[4]\n"
LANGUAGE = load_language()


def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def uses(source: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for family, word in case_words("c", HEAD + source, LANGUAGE).uses:
        out.setdefault(family, set()).add(word)
    return out


def test_the_word_list_is_warpforths_reference_at_the_pinned_commit() -> None:
    assert LANGUAGE.commit.startswith("83c30d0") and LANGUAGE.path == "docs/language.md"
    titles = {f.id: f.words for f in LANGUAGE.families}
    assert titles["index-z"] == ("TID-Z", "BID-Z", "BDIM-Z", "GDIM-Z")
    assert titles["until"] == ("BEGIN", "UNTIL") and "ELSE" in titles["if"] and titles["do-nested"] == ("J", "K")
    assert {"ROLL", "TUCK"} <= set(titles["stack"]) and "F>S" in titles["conversion"]
    assert "FLOG" in titles["float-math"] and "LEAVE" in titles["do-exit"]
    ids = [f.id for f in LANGUAGE.families]
    assert ids == [s.id for s in load_tool("warpforth_language").FAMILIES] and len(set(ids)) == len(ids)


def test_families_of_words_literals_definitions_and_locals() -> None:
    found = uses(": dot { x y -- } x y * ;\n: sq dup * ;\n1 2 dot sq 1.5 f>s tid-z A ! S s@ DROP\n")
    assert found["user-words"] == {":", ";"} and found["locals"] == {"{", "--", "}"}
    assert found["literals"] == {"<integer>", "<float>"} and found["conversion"] == {"F>S"}
    assert found["index-z"] == {"TID-Z"} and found["shared-i64"] == {"S@"} and found["stack"] == {"DUP", "DROP"}
    assert "X" not in str(found) and "SQ" not in str(found) and "DOT" not in str(found)


def test_begin_counts_for_the_loop_that_closes_it() -> None:
    assert uses("BEGIN 1 UNTIL")["until"] == {"BEGIN", "UNTIL"}
    assert "while" not in uses("BEGIN 1 UNTIL")
    nested = uses("BEGIN DUP WHILE BEGIN 1 IF THEN 1 UNTIL REPEAT")
    assert nested["until"] == {"BEGIN", "UNTIL"} and nested["while"] == {"BEGIN", "WHILE", "REPEAT"}


def test_words_the_reference_does_not_list_are_reported_with_their_first_position() -> None:
    cw = case_words("c", HEAD + ": sq { x -- } x DUP * ;\nx FROB 2 frob ( note ) sq\n", LANGUAGE)
    assert [(u.word, u.line, u.column) for u in cw.unknown] == [("X", 5, 1), ("FROB", 5, 3), ("(", 5, 15)]


def test_the_builtin_cases_map() -> None:
    from wfbench_core.discover.registry import Registry

    cases = Registry.load().select(["attention_f32_naive", "reduce_sum_f64", "scale_i64"])
    m = coverage_map(coverage.case_sources(cases), LANGUAGE, {})
    rows = {r.family.id: r for r in m.rows}
    assert rows["global-float-narrow"].used == ("F32@", "F32!") and rows["global-float-narrow"].cases == (
        "attention_f32_naive",)
    assert rows["while"].cases == ("attention_f32_naive", "reduce_sum_f64", "scale_i64")
    assert rows["index-z"].cases == () and rows["index-z"].unused == ("TID-Z", "BID-Z", "BDIM-Z", "GDIM-Z")
    assert "index-z" in {r.family.id for r in m.uncovered()} and m.unknown == ()


def test_excuses_count_as_covered_and_bad_ones_are_refused(tmp_path: Path) -> None:
    m = coverage_map({"c": HEAD + "1 DROP\n"}, LANGUAGE, {"index-z": "no 3-D grid in the suite"})
    row = next(r for r in m.rows if r.family.id == "index-z")
    assert row.covered and row not in m.uncovered()
    bad = tmp_path / "excuses.json"
    bad.write_text(json.dumps({"excuses": {"index-w": "x"}}))
    with pytest.raises(WfbenchError, match="no word family 'index-w'"):
        load_excuses(LANGUAGE, bad)
    bad.write_text(json.dumps({"excuses": {"index-z": " "}}))
    with pytest.raises(WfbenchError, match="gives no reason"):
        load_excuses(LANGUAGE, bad)
    assert load_excuses(LANGUAGE) == json.loads(coverage.EXCUSES_FILE.read_text())["excuses"]


def test_command_table_json_and_fail_on_uncovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = invoke("coverage", "-c", "scale_i64")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[0].split(" | ") == ["family".ljust(len(lines[0].split(" | ")[0])), *lines[0].split(" | ")[1:]]
    assert any(ln.startswith("global i64 ") and "| scale_i64 " in ln and "@ !" in ln for ln in lines)
    data = json.loads(invoke("coverage", "-c", "scale_i64", "--json").output)
    assert data["language"]["commit"] == LANGUAGE.commit and data["cases"] == ["scale_i64"]
    assert "index-z" in data["uncovered"] and data["probe"] is None
    r = invoke("coverage", "-c", "scale_i64", "--fail-on-uncovered")
    assert r.exit_code == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("wfbench: error:")]
    assert len(errors) == 1 and "indexing Z" in errors[0] and "coverage_excuses.json" in errors[0]
    # every family the case leaves alone excused: covered, exit 0, the reason in the table
    unused = [f for f in data["families"] if not f["cases"]]
    excuses = tmp_path / "excuses.json"
    excuses.write_text(json.dumps({"excuses": {f["id"]: f"not {f['id']} here" for f in unused}}))
    monkeypatch.setattr(coverage, "EXCUSES_FILE", excuses)
    r = invoke("coverage", "-c", "scale_i64", "--fail-on-uncovered")
    assert r.exit_code == 0, r.output
    assert any(ln.startswith("indexing Z ") and "| excused: not index-z here " in ln for ln in r.output.splitlines())


def test_a_family_the_probed_warpforthc_rejects_whole_is_not_asked_of_a_case() -> None:
    from wfbench_core.compiling.coverage_table import render, supported

    m = coverage_map({"c": HEAD + "1 DROP\n"}, LANGUAGE, {})
    verdicts = {w: "" for w in LANGUAGE.words}
    verdicts.update({w: f"unknown word: {w}" for w in ("TID-Z", "BID-Z", "BDIM-Z", "GDIM-Z", "HF@")})
    keep = supported(m, verdicts)
    assert "index-z" not in keep and "global-float-narrow" in keep
    assert "index-z" in {r.family.id for r in m.uncovered()}
    assert "index-z" not in {r.family.id for r in m.uncovered(keep)}
    text = render(m, verdicts, "wfc")
    assert any(ln.startswith("indexing Z ") and "this warpforthc accepts none of its words" in ln
               for ln in text.splitlines())
    assert f"warpforthc wfc accepts {len(LANGUAGE.words) - 5} of {len(LANGUAGE.words)} listed words:" in text
    assert "  rejects HF@: unknown word: HF@" in text


BAD_CASE = """
    import attrs
    from wfbench_core import hookimpl
    from wfbench_cases.scale_i64 import CASE

    @hookimpl
    def wfbench_register_cases(register):
        register(attrs.evolve(CASE, id="bad_forth", warpforth=CASE.warpforth + {tail!r}))
"""


@pytest.mark.parametrize("tail, where, what", [
    ("( stack: a b", "14:1", "a ( comment with no closing )"),
    (": SQ DUP *\n", "14:1", "the definition ': SQ' has no closing ';'"),
    (": SQ { a b\nDUP ;\n", "14:6", "the locals list '{' of ': SQ' has no closing '}'"),
])
def test_a_case_that_does_not_read_is_one_line_naming_it_and_the_position(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str, where: str, what: str) -> None:
    (tmp_path / "bad_forth_plugin.py").write_text(textwrap.dedent(BAD_CASE.format(tail=tail)))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "bad_forth_plugin", raising=False)  # each test its own module
    r = invoke("coverage", env={"WFBENCH_PLUGINS": "bad_forth_plugin"})
    assert r.exit_code == 2 and r.stdout == ""
    assert "Traceback" not in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("wfbench: error:")]
    assert errors == [f"wfbench: error: case bad_forth (plugin bad_forth_plugin): its WarpForth source does not "
                      f"read at {where}: {what}"]


# -- a real warpforthc ------------------------------------------------------------------------------------


@pytest.mark.warpforthc
def test_probe_rejects_only_words_the_binary_does_not_know(warpforthc: Path) -> None:
    verdicts = probe(warpforthc, [*sorted(LANGUAGE.words), "FROB", "ADD"])
    assert verdicts["FROB"] == "unknown word: FROB"
    assert verdicts["ADD"] == ""  # not in the reference, but this warpforthc takes it
    core = {"DUP", "+", "F@", "IF", "ELSE", "BEGIN", "UNTIL", "DO", "I", "J", "K", "LEAVE", "UNLOOP", "EXIT",
            ":", ";", "{", "--", "}", "<integer>", "<float>", "TID-X", "BARRIER"}
    assert {w: v for w, v in verdicts.items() if w in core and v} == {}
    # a rejection is always the binary not knowing the word, never a probe kernel that is wrong
    assert all(v == f"unknown word: {w}" for w, v in verdicts.items() if v), verdicts
    assert set(SNIPPETS) - LANGUAGE.words == {"("}


@pytest.mark.warpforthc
def test_probing_reports_what_the_binary_accepts(warpforthc: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "alias_plugin.py").write_text(textwrap.dedent(BAD_CASE.format(tail="1 2 ADD FROB DROP\n")))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "alias_plugin", raising=False)
    env = {"WFBENCH_PLUGINS": "alias_plugin"}
    r = invoke("coverage", "-c", "bad_forth", "--warpforthc", str(warpforthc), env=env)
    assert r.exit_code == 0, r.output
    assert "  bad_forth 14:5: ADD; this warpforthc accepts it" in r.output
    assert "  bad_forth 14:9: FROB; this warpforthc rejects it: unknown word: FROB" in r.output
    data = json.loads(invoke("coverage", "-c", "bad_forth", "--probe", "--json",
                             env={**env, "WFBENCH_WARPFORTHC": str(warpforthc)}).output)
    assert data["probe"] == {"warpforthc": str(warpforthc.resolve())}
    assert {(u["word"], u["accepted"]) for u in data["unknown"]} == {("ADD", True), ("FROB", False)}
    assert all("supported" in f for f in data["families"])


# -- the documents ----------------------------------------------------------------------------------------


def test_readme_and_docs_show_the_commands_output_now() -> None:
    tool = load_tool("coverage_doc")
    shown = [d for d in tool.documents() if tool.BLOCK.search(d.read_text())]
    assert {d.name for d in shown} == {"README.md", "coverage.md"}
    assert tool.stale() == [], "run python3 tools/coverage_doc.py"


def test_a_stale_block_is_found() -> None:
    tool = load_tool("coverage_doc")
    out = tool.output()
    assert out.startswith("family ") and "indexing Z" in out
    assert tool.stale(out.replace("all ", "every ", 1)) == ["README.md", "docs/coverage.md"]


# -- the word list's generator ----------------------------------------------------------------------------

SMALL_DOC = """# Ref
## Literals
### Integer Literals
### Float Literals
## Stack Operations
| Word | Effect |
|------|--------|
| `DUP` | `( a -- a a )` |
| `OR` | `( a b -- a\\|b )` |
## Conditionals
```forth
condition IF \\ TRUE-ish
ELSE THEN
```
"""


def test_the_generator_reads_sections_and_refuses_words_no_family_takes() -> None:
    tool = load_tool("warpforth_language")
    specs = (tool.Spec("literals", "literals", "Literals", ("literals",)),
             tool.Spec("stack", "stack", "Stack Operations"), tool.Spec("if", "if", "Conditionals", ("code",)))
    tool.FAMILIES = specs
    data = tool.build(SMALL_DOC, "0" * 40)
    assert [(f["id"], f["words"]) for f in data["families"]] == [
        ("literals", ["<integer>", "<float>"]), ("stack", ["DUP", "OR"]), ("if", ["IF", "ELSE", "THEN"])]
    with pytest.raises(SystemExit, match=r"words no family takes: SWAP \(Extra\)"):
        tool.build(SMALL_DOC + "## Extra\n| Word |\n|--|\n| `SWAP` |\n", "0" * 40)
    tool.FAMILIES = specs[1:] + (tool.Spec("gone", "gone", "Missing"),)
    with pytest.raises(SystemExit, match="no section 'Missing'"):
        tool.build(SMALL_DOC, "0" * 40)


def test_the_stored_word_list_is_what_the_generator_makes_at_its_commit() -> None:
    """Opt-in: WFBENCH_TEST_WARPFORTH names a local WarpForth checkout holding the pinned commit."""
    repo = os.environ.get("WFBENCH_TEST_WARPFORTH", "")
    if not repo or not Path(repo).is_dir() or shutil.which("git") is None:
        pytest.skip("set WFBENCH_TEST_WARPFORTH to a local WarpForth checkout")
    has = subprocess.run(["git", "-C", repo, "cat-file", "-e", f"{LANGUAGE.commit}^{{commit}}"], check=False)
    if has.returncode != 0:
        pytest.skip(f"{repo} lacks commit {LANGUAGE.commit[:12]}")
    assert load_tool("warpforth_language").main([repo, "--ref", LANGUAGE.commit, "--check"]) == 0
