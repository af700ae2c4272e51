"""WarpForth source read as warpforthc reads it: header, tokens, literals, definitions, locals, bad input.

The last tests hold the reading against the real warpforthc (skipped without one): what we call a literal
compiles as one, what we call a word is unknown to it, and what we refuse it refuses too.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wfbench_core.compiling.forth_lexer import ForthSyntaxError, classify, parse, read_header, tokenize

HEAD = "\\! kernel k\n\\! param A i64[4]\n"


def texts(source: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(source)]


def test_tokens_split_on_whitespace_with_colon_and_semicolon_alone_at_a_token_start() -> None:
    assert texts(":sq dup* ;x DUP;") == [("colon", ":"), ("word", "SQ"), ("word", "DUP*"), ("semicolon", ";"),
                                        ("word", "X"), ("word", "DUP;")]
    assert texts("a\tb\r\nc") == [("word", "A"), ("word", "B"), ("word", "C")]


def test_words_are_upper_cased_ascii_only() -> None:
    assert texts("fexp tid-x ß") == [("word", "FEXP"), ("word", "TID-X"), ("word", "ß")]


def test_a_backslash_comments_only_before_whitespace_or_the_end() -> None:
    assert texts("1 \\ 2 3\n4 \\x 5 \\") == [("integer", "1"), ("integer", "4"), ("word", "\\X"), ("integer", "5")]


@pytest.mark.parametrize("text, kind", [
    ("42", "integer"), ("-1", "integer"), ("+7", "integer"), ("-", "word"), ("1.", "float"), (".5", "float"),
    ("3.14", "float"), ("-2.0", "float"), ("1.0e-5", "float"), ("1e3", "float"), ("0xE", "float"),
    ("1e", "word"), ("1.2.3", "word"), ("e", "word"), ("0x1F", "word"), ("FEXP", "word"), ("inf", "word"),
])
def test_literals_as_strtod_and_the_digit_rule_read_them(text: str, kind: str) -> None:
    assert classify(text) == kind


def test_header_names_and_where_the_code_starts() -> None:
    src = "\\ intro\n\\! kernel k\n\\! param A i64[4] -- an array\n\n\\! shared S f64[8]\n\\ note\nDUP\n"
    kernel, names, start = read_header(src)
    assert kernel == "k" and names == {"PARAM": ["A"], "SHARED": ["S"]}
    assert src[start:] == "DUP\n"


def test_definitions_locals_and_the_kernel_body() -> None:
    program = parse(HEAD + ": dot { a b n -- r } 0 ;\n: SQ DUP * ;\nA ( note ) SQ\n")
    assert [d.name.text for d in program.definitions] == ["DOT", "SQ"]
    dot = program.definitions[0]
    assert dot.locals == ("A", "B", "N") and [t.text for t in dot.locals_list] == ["{", "A", "B", "N", "--", "R", "}"]
    assert [t.text for t in dot.body] == ["0"]
    assert [(t.kind, t.text, t.line, t.column) for t in program.body] == [
        ("word", "A", 5, 1), ("paren", "(", 5, 3), ("word", "SQ", 5, 12)]
    assert program.params == ("A",) and program.kernel == "k"


@pytest.mark.parametrize("code, where, what", [
    ("1 ( open\n2", "3:3", "a ( comment with no closing )"),
    (": SQ DUP *\n", "3:1", "the definition ': SQ' has no closing ';'"),
    ("1 : SQ DUP * : CUBE ;", "3:3", "the definition ': SQ' has no closing ';'"),
    (": SQ { a b\n DUP ;", "3:6", "the locals list '{' of ': SQ' has no closing '}'"),
    (": SQ { a -- b", "3:6", "the locals list '{' of ': SQ' has no closing '}'"),
    (":", "3:1", "a ':' with no word name after it"),
    ("1 ;", "3:3", "a ';' with no ':' before it"),
    ("1 { a }", "3:3", "a '{' locals list outside the start of a word definition"),
    (": SQ { 1 } ;", "3:8", "1 in the locals list of ': SQ': locals are names"),
    ("1\n\\! param B i64", "4:1", "a \\! header directive after code"),
    ("", "2:1", "header directive '\\\\! param A'"),
])
def test_what_does_not_read_is_one_error_with_its_position(code: str, where: str, what: str) -> None:
    src = HEAD + code if "header directive '" not in what else "\\! kernel k\n\\! param A\n"
    with pytest.raises(ForthSyntaxError) as exc:
        parse(src)
    assert str(exc.value).startswith(f"{where}: {what}"), str(exc.value)


def test_no_kernel_directive() -> None:
    with pytest.raises(ForthSyntaxError, match="^1:1: no '\\\\! kernel NAME'"):
        parse("1 2 +\n")


# -- against the real compiler ---------------------------------------------------------------------------


def _compiles(warpforthc: Path, tmp_path: Path, source: str) -> tuple[bool, str]:
    src = tmp_path / "t.forth"
    src.write_text(source)
    done = subprocess.run([str(warpforthc), str(src), "-o", str(tmp_path / "t.ptx")], capture_output=True,
                          text=True, timeout=60, check=False)
    return done.returncode == 0, done.stderr


@pytest.mark.warpforthc
@pytest.mark.parametrize("text", ["42", "-1", "1.", ".5", "1.0e-5", "1e3", "0xE", "1e", "1.2.3", "0x1F", "inf"])
def test_literal_or_word_as_warpforthc_decides(warpforthc: Path, tmp_path: Path, text: str) -> None:
    ok, err = _compiles(warpforthc, tmp_path, HEAD + f"{text} DROP\n")
    assert ok == (classify(text) != "word"), err
    if not ok:
        assert f"unknown word: {text.upper()}" in err


@pytest.mark.warpforthc
@pytest.mark.parametrize("code", [": SQ DUP *\n", ": SQ { a b\n DUP ;", "1 { a }", "1 ( a comment )",
                                  "1\n\\! param B i64", "\\! param A\n"])
def test_what_we_refuse_warpforthc_refuses(warpforthc: Path, tmp_path: Path, code: str) -> None:
    source = HEAD + code if not code.startswith("\\!") else "\\! kernel k\n" + code
    ok, _ = _compiles(warpforthc, tmp_path, source)
    assert not ok
    try:
        program = parse(source)
    except ForthSyntaxError:
        return
    assert any(t.kind == "paren" for t in program.body)  # read, and reported as the word "(" it does not know


@pytest.mark.warpforthc
def test_a_source_we_read_compiles(warpforthc: Path, tmp_path: Path) -> None:
    source = (HEAD + "\\ comment\n: dot { x y -- } x y * ;\n: sq dup * ;\n"
              "tid-x 2 3 dot sq 1.5e0 f>s + CELLS a + !\n")
    parse(source)
    ok, err = _compiles(warpforthc, tmp_path, source)
    assert ok, err
