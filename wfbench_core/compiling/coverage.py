"""Which of WarpForth's words the cases use: the coverage map behind ``wfbench coverage``.

The language is WarpForth's own reference (``docs/language.md`` at a pinned commit), kept as word families in
``warpforth_language.json`` beside this module (``tools/warpforth_language.py`` regenerates it). Families no
case needs to use are excused, with the reason, in ``coverage_excuses.json``.

Each case's WarpForth source, rendered at its canonical sizes, is read as warpforthc reads it
(:mod:`wfbench_core.compiling.forth_lexer`). A token is the case's own name (a param or shared buffer of its
header, a user word it defines, a local of the definition it is in), a literal, a word of the language, or a
word the reference does not list, which is reported with its position.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import attrs

from wfbench_core.case import Case
from wfbench_core.compiling.forth_lexer import CONTROL_WORDS, ForthSyntaxError, Program, Token, parse
from wfbench_core.errors import WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "EXCUSES_FILE", "LANGUAGE_FILE", "LITERALS", "CaseSourceError", "CaseWords", "CoverageMap", "Family",
    "FamilyRow", "Language", "UncoveredError", "Unknown", "case_sources", "case_words", "coverage_map",
    "load_excuses", "load_language",
]

LANGUAGE_FILE = Path(__file__).with_name("warpforth_language.json")
EXCUSES_FILE = Path(__file__).with_name("coverage_excuses.json")
LITERALS = {"integer": "<integer>", "float": "<float>"}


class CaseSourceError(WfbenchError):
    """A case's WarpForth source does not read (an unterminated comment, definition or locals list)."""


class UncoveredError(WfbenchError):
    """Some word families are neither used by a case nor excused (``--fail-on-uncovered``)."""

    exit_code = 1


@attrs.frozen
class Family:
    id: str
    title: str
    words: tuple[str, ...] = attrs.field(converter=tuple)


@attrs.frozen
class Language:
    """WarpForth's words by family, as its reference lists them at ``commit``."""

    repository: str
    commit: str
    path: str
    families: tuple[Family, ...]

    @property
    def words(self) -> frozenset[str]:
        return frozenset(w for f in self.families for w in f.words)

    def families_of(self, word: str) -> tuple[str, ...]:
        return tuple(f.id for f in self.families if word in f.words)


def load_language(path: Path | None = None) -> Language:
    data = json.loads((path or LANGUAGE_FILE).read_text())
    src = data["source"]
    return Language(src["repository"], src["commit"], src["path"],
                    tuple(Family(f["id"], f["title"], f["words"]) for f in data["families"]))


def load_excuses(language: Language, path: Path | None = None) -> dict[str, str]:
    """``{family id: reason}``; a family the language does not have, or an empty reason, is an error."""
    path = path or EXCUSES_FILE
    excuses = json.loads(path.read_text())["excuses"]
    known = {f.id for f in language.families}
    for family, reason in excuses.items():
        if family not in known:
            raise WfbenchError(f"{path.name}: no word family {family!r} (families: {', '.join(sorted(known))})")
        if not str(reason).strip():
            raise WfbenchError(f"{path.name}: the excuse of {family!r} gives no reason")
    return dict(excuses)


@attrs.frozen
class Unknown:
    """A word of a case that the reference does not list, at its first use."""

    case_id: str
    word: str
    line: int
    column: int


@attrs.frozen
class CaseWords:
    """What one case uses: ``(family id, word)`` pairs, and the words the reference does not list."""

    case_id: str
    uses: frozenset[tuple[str, str]]
    unknown: tuple[Unknown, ...]


def _names(program: Program, definition_locals: Iterable[str] = ()) -> set[str]:
    return {*program.params, *program.shared, *(d.name.text for d in program.definitions), *definition_locals}


def _words(program: Program) -> Iterator[tuple[Token, bool]]:
    """Every token that is a use, with whether it is a language word (True) or possibly the case's own name."""
    for d in program.definitions:
        yield d.colon, True
        own = _names(program, d.locals)
        for tok in d.locals_list:
            if tok.text in ("{", "--", "}"):
                yield tok, True
        for tok in d.body:
            yield tok, tok.text not in own or tok.text in CONTROL_WORDS
        yield d.semicolon, True
    own = _names(program)
    for tok in program.body:
        yield tok, tok.text not in own or tok.text in CONTROL_WORDS


def case_words(case_id: str, source: str, language: Language) -> CaseWords:
    """The words ``source`` uses, by family; :class:`ForthSyntaxError` where it does not read."""
    program = parse(source)
    known = language.words
    used: list[tuple[str, Token]] = []
    unknown: dict[str, Unknown] = {}
    for tok, language_word in _words(program):
        if not language_word:
            continue
        word = LITERALS.get(tok.kind, tok.text)  # ":" ";" and "(" are their own text
        if word in known:
            used.append((word, tok))
        elif word not in unknown:
            unknown[word] = Unknown(case_id, word, tok.line, tok.column)
    return CaseWords(case_id, frozenset(_attribute(used, language)), tuple(unknown.values()))


def _attribute(used: list[tuple[str, Token]], language: Language) -> Iterator[tuple[str, str]]:
    """``(family, word)`` of each use. A word of several families (``BEGIN``) counts for the family of the word
    that closes it (``UNTIL`` or ``WHILE``); one never closed counts for none (warpforthc rejects it)."""
    pending: list[tuple[str, tuple[str, ...]]] = []
    for word, _ in used:
        families = language.families_of(word)
        if len(families) > 1:
            pending.append((word, families))
            continue
        if pending and families[0] in pending[-1][1]:
            yield families[0], pending.pop()[0]
        yield families[0], word


@attrs.frozen
class FamilyRow:
    family: Family
    used: tuple[str, ...]
    unused: tuple[str, ...]
    cases: tuple[str, ...]
    excuse: str = ""

    @property
    def covered(self) -> bool:
        return bool(self.cases or self.excuse)


@attrs.frozen
class CoverageMap:
    """Per family, the words used, the cases using them and the words no case uses; and the unknown words."""

    language: Language
    case_ids: tuple[str, ...]
    rows: tuple[FamilyRow, ...]
    unknown: tuple[Unknown, ...]

    def uncovered(self, supported: Iterable[str] | None = None) -> tuple[FamilyRow, ...]:
        """Families neither used nor excused; with ``supported`` (family ids a warpforthc accepts), only those."""
        keep = None if supported is None else set(supported)
        return tuple(r for r in self.rows if not r.covered and (keep is None or r.family.id in keep))


def coverage_map(sources: Mapping[str, str], language: Language, excuses: Mapping[str, str],
                 origins: Mapping[str, str] | None = None) -> CoverageMap:
    """The map of ``{case id: WarpForth source}``; a source that does not read is a :class:`CaseSourceError`
    naming the case (and its plugin, from ``origins``) and the position."""
    per_case = []
    for case_id, source in sources.items():
        try:
            per_case.append(case_words(case_id, source, language))
        except ForthSyntaxError as exc:
            raise CaseSourceError(f"case {_named(case_id, origins)}: its WarpForth source does not read at "
                                  f"{exc}") from None
    rows = []
    for family in language.families:
        used = {w for cw in per_case for f, w in cw.uses if f == family.id}
        cases = tuple(sorted(cw.case_id for cw in per_case if any(f == family.id for f, _ in cw.uses)))
        rows.append(FamilyRow(family, tuple(w for w in family.words if w in used),
                              tuple(w for w in family.words if w not in used), cases, excuses.get(family.id, "")))
    return CoverageMap(language, tuple(sources), tuple(rows), tuple(u for cw in per_case for u in cw.unknown))


def case_sources(cases: Iterable[Case], origins: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each case's WarpForth source at its canonical sizes, by case id."""
    out = {}
    for case in cases:
        try:
            out[case.id] = case.render("canonical")[0]
        except ValueError as exc:
            raise CaseSourceError(f"case {_named(case.id, origins)}: {exc}") from None
    return out


def _named(case_id: str, origins: Mapping[str, str] | None) -> str:
    return f"{case_id} (plugin {origins[case_id]})" if origins and case_id in origins else case_id
