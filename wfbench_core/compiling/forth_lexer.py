"""WarpForth source read the way ``warpforthc`` reads it: the ``\\!`` header, then tokens, then definitions.

This follows WarpForth's own lexer and parser (``lib/Translation/ForthToMLIR``), so that what it finds is
what the compiler sees:

- the header is the run of lines at the top that are blank, ``\\ …`` comments or ``\\!`` directives
  (``kernel NAME``, ``param NAME TYPE``, ``shared NAME TYPE``; ``-- …`` on a directive is an annotation);
- tokens are runs of non-whitespace (space, tab, CR, LF); ``:`` and ``;`` at the start of a token are tokens
  of their own; a ``\\`` followed by whitespace or the end starts a comment to the end of the line;
- a token is an integer literal when it is an optional sign and decimal digits, a float literal when it
  holds ``.``, ``e`` or ``E`` and C's ``strtod`` reads all of it, else a word, upper-cased (ASCII only):
  WarpForth is case-insensitive;
- ``: NAME … ;`` defines a word; ``{ a b -- }`` right after the name declares its read-only locals.

One thing is read on purpose differently: a ``(`` token starts a comment that ends at the next ``)``, as in
standard Forth. WarpForth has no such comment (``(`` is an unknown word to it), so the comment is kept as a
``paren`` token, and whoever reads the tokens can say so.

Positions are ``line:column``, both from 1, as warpforthc prints them.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

import attrs

from wfbench_core.errors import WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CONTROL_WORDS", "WHITESPACE", "Definition", "ForthSyntaxError", "Program", "Token", "classify", "parse",
    "read_header", "tokenize", "upper",
]

WHITESPACE = " \t\r\n"
#: the words WarpForth's parser handles itself, before any name lookup (a local or user word cannot shadow them)
CONTROL_WORDS = frozenset({"IF", "ELSE", "THEN", "BEGIN", "UNTIL", "WHILE", "REPEAT", "DO", "LOOP", "+LOOP",
                           "LEAVE", "UNLOOP", "EXIT"})
_INTEGER = re.compile(r"[-+]?[0-9]+")
# what C's strtod reads: decimal or hexadecimal floats, inf/infinity, nan with an optional (chars)
_STRTOD = re.compile(r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
                     r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][-+]?[0-9]+)?"
                     r"|(?i:inf(?:inity)?)|(?i:nan)(?:\([0-9A-Za-z_]*\))?)")
_DIRECTIVE_ARITY = {"KERNEL": 2, "PARAM": 3, "SHARED": 3}


class ForthSyntaxError(WfbenchError):
    """The source does not read as WarpForth; ``str()`` is ``LINE:COLUMN: what``."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.line, self.column, self.what = line, column, message


@attrs.frozen
class Token:
    """``kind`` is ``word``, ``integer``, ``float``, ``colon``, ``semicolon`` or ``paren`` (a ``( … )`` comment)."""

    kind: str
    text: str
    line: int
    column: int


@attrs.frozen
class Definition:
    """``: NAME { locals -- } body ;``"""

    colon: Token
    name: Token
    locals: tuple[str, ...]
    locals_list: tuple[Token, ...]  # the ``{ … }`` tokens, braces included; empty without locals
    body: tuple[Token, ...]
    semicolon: Token


@attrs.frozen
class Program:
    """A WarpForth source: its header's names, its word definitions and the kernel body, in source order."""

    kernel: str
    params: tuple[str, ...]
    shared: tuple[str, ...]
    definitions: tuple[Definition, ...]
    body: tuple[Token, ...]


def upper(text: str) -> str:
    """ASCII upper case, as C's toupper in the C locale (other characters are left alone)."""
    return text.translate(_UPPER)


_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}


def classify(text: str) -> str:
    """``integer``, ``float`` or ``word``, as WarpForth's lexer decides."""
    if any(c in text for c in ".eE") and _STRTOD.fullmatch(text):
        return "float"
    return "integer" if _INTEGER.fullmatch(text) else "word"


class _Positions:
    def __init__(self, source: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]

    def __call__(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1


def _lines(source: str) -> Iterator[tuple[int, int, int]]:
    """(start, end, next start) of each line; CR, LF and CRLF end a line, as in WarpForth's header reader."""
    start = 0
    while True:
        end = start
        while end < len(source) and source[end] not in "\r\n":
            end += 1
        nxt = end + (2 if source[end:end + 2] == "\r\n" else 1)
        yield start, end, nxt
        if end >= len(source):
            return
        start = nxt


def read_header(source: str) -> tuple[str, dict[str, list[str]], int]:
    """The kernel name, ``{"PARAM": names, "SHARED": names}`` and the offset where the code starts."""
    pos = _Positions(source)
    names: dict[str, list[str]] = {"PARAM": [], "SHARED": []}
    kernel, code_start, ended = "", 0, False
    for start, end, nxt in _lines(source):
        trimmed = source[start:end].strip(" \t\r")
        column = len(source[start:end]) - len(source[start:end].lstrip(" \t")) + 1
        comment = trimmed.startswith("\\") and (len(trimmed) == 1 or trimmed[1] in " \t")
        if trimmed.startswith("\\!"):
            if ended:
                raise ForthSyntaxError(pos(start)[0], column, "a \\! header directive after code: the header "
                                       "(kernel, param, shared) comes before any code")
            tokens = [t for t in re.split(r"[ \t]+", trimmed[2:].split("--", 1)[0]) if t]
            directive = upper(tokens[0]) if tokens else ""
            if _DIRECTIVE_ARITY.get(directive) != len(tokens):
                raise ForthSyntaxError(pos(start)[0], column, f"header directive {trimmed!r}: expected "
                                       "'\\! kernel NAME', '\\! param NAME TYPE' or '\\! shared NAME TYPE'")
            if directive == "KERNEL":
                kernel = tokens[1]
            else:
                names[directive].append(upper(tokens[1]))
            code_start = min(nxt, len(source))
        elif not trimmed or comment:
            if not ended:
                code_start = min(nxt, len(source))
        else:
            ended = True
    if not kernel:
        raise ForthSyntaxError(1, 1, "no '\\! kernel NAME' header directive")
    return kernel, names, code_start


def tokenize(source: str, start: int = 0) -> list[Token]:
    """The tokens of ``source`` from offset ``start`` (the code after the header)."""
    pos = _Positions(source)
    tokens: list[Token] = []
    i, n = start, len(source)
    while True:
        while i < n and source[i] in WHITESPACE:
            i += 1
        if i >= n:
            return tokens
        if source[i] == "\\" and (i + 1 >= n or source[i + 1] in WHITESPACE):
            while i < n and source[i] != "\n":
                i += 1
            continue
        line, column = pos(i)
        if source[i] in ":;":
            tokens.append(Token("colon" if source[i] == ":" else "semicolon", source[i], line, column))
            i += 1
            continue
        j = i
        while j < n and source[j] not in WHITESPACE:
            j += 1
        text = source[i:j]
        if text == "(":
            close = source.find(")", j)
            if close < 0:
                raise ForthSyntaxError(line, column, "a ( comment with no closing )")
            tokens.append(Token("paren", "(", line, column))
            i = close + 1
            continue
        kind = classify(text)
        tokens.append(Token(kind, upper(text) if kind == "word" else text, line, column))
        i = j


def parse(source: str) -> Program:
    """Header, definitions and kernel body of a WarpForth source; :class:`ForthSyntaxError` where it does not read."""
    kernel, names, code_start = read_header(source)
    tokens = tokenize(source, code_start)
    definitions: list[Definition] = []
    body: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind == "colon":
            definition, i = _definition(tokens, i)
            definitions.append(definition)
            continue
        if tok.kind == "semicolon":
            raise ForthSyntaxError(tok.line, tok.column, "a ';' with no ':' before it")
        _no_locals_here(tok)
        body.append(tok)
        i += 1
    return Program(kernel, tuple(names["PARAM"]), tuple(names["SHARED"]), tuple(definitions), tuple(body))


def _no_locals_here(tok: Token) -> None:
    if tok.kind == "word" and tok.text == "{":
        raise ForthSyntaxError(tok.line, tok.column, "a '{' locals list outside the start of a word definition "
                               "(write ': NAME { a b -- } … ;')")


def _definition(tokens: list[Token], i: int) -> tuple[Definition, int]:
    colon = tokens[i]
    i += 1
    if i >= len(tokens) or tokens[i].kind != "word":
        raise ForthSyntaxError(colon.line, colon.column, "a ':' with no word name after it")
    name = tokens[i]
    i += 1
    locals_, locals_list, i = _locals(tokens, i, name)
    body: list[Token] = []
    while i < len(tokens) and tokens[i].kind not in ("colon", "semicolon"):
        _no_locals_here(tokens[i])
        body.append(tokens[i])
        i += 1
    if i >= len(tokens) or tokens[i].kind != "semicolon":
        raise ForthSyntaxError(colon.line, colon.column, f"the definition ': {name.text}' has no closing ';'")
    return Definition(colon, name, locals_, locals_list, tuple(body), tokens[i]), i + 1


def _locals(tokens: list[Token], i: int, name: Token) -> tuple[tuple[str, ...], tuple[Token, ...], int]:
    """``{ a b -- c }`` after a definition's name: the local names (before ``--``), the list's tokens, the next index."""
    if i >= len(tokens) or tokens[i].kind != "word" or tokens[i].text != "{":
        return (), (), i
    start = i
    brace = tokens[i]
    names: list[str] = []
    outputs = False
    i += 1
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind == "word" and tok.text == "}":
            return tuple(names), tuple(tokens[start:i + 1]), i + 1
        if tok.kind == "word" and tok.text == "--":
            outputs = True
        elif not outputs and tok.kind in ("colon", "semicolon"):
            break  # warpforthc skips anything after '--' up to the '}'; before it, ':' or ';' ends the list
        elif not outputs and tok.kind in ("integer", "float"):
            raise ForthSyntaxError(tok.line, tok.column, f"{tok.text} in the locals list of ': {name.text}': "
                                   "locals are names")
        elif not outputs and tok.kind == "word":
            names.append(tok.text)
        i += 1
    raise ForthSyntaxError(brace.line, brace.column, f"the locals list '{{' of ': {name.text}' has no closing '}}'")
