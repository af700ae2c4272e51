#!/usr/bin/env python3
"""Regenerate wfbench's list of WarpForth's words (``wfbench_core/compiling/warpforth_language.json``) from WarpForth's
own language reference, ``docs/language.md``, at a commit of a WarpForth checkout.

    python3 tools/warpforth_language.py CHECKOUT [--ref REF] [--out FILE] [--check]

The doc is read at REF (default HEAD) with ``git show``, so uncommitted edits do not leak in, and the file
records the commit and the doc's digest. The word families are the doc's sections (``FAMILIES`` below says
which section feeds which family, and how some sections split: indexing by dimension, reduced-width memory
by width class and memory space). A section with words that no family takes is an error: a newer doc that
adds words makes this script fail until ``FAMILIES`` says where they belong. ``--check`` compares instead of
writing (exit 1 when the stored file differs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "wfbench_core" / "compiling" / "warpforth_language.json"
REPOSITORY = "https://github.com/tetsuo-cpp/warpforth"
DOC = "docs/language.md"


class Spec(NamedTuple):
    """One family: which section of the doc, and which of its words.

    ``take``: ``table`` (the first column of the section's tables, ``A`` / ``B`` cells split), ``code`` (the
    upper-case words of its code blocks, comments left out), ``literals`` (``<integer>`` and ``<float>``, one
    per ``… Literals`` subsection) or ``named`` (the tokens in ``named``, each checked to be in the section's
    code). ``label`` keeps only the tables under a bold line starting so; ``where`` only rows whose column has
    that value; ``match`` only words matching the pattern.
    """

    id: str
    title: str
    section: str
    take: tuple[str, ...] = ("table",)
    label: str = ""
    where: tuple[str, str] | None = None
    match: str = ""
    named: tuple[str, ...] = ()


FAMILIES = (
    Spec("literals", "literals", "Literals", ("literals",)),
    Spec("stack", "stack operations", "Stack Operations"),
    Spec("int-arith", "integer arithmetic", "Integer Arithmetic"),
    Spec("float-arith", "float arithmetic", "Float Arithmetic"),
    Spec("float-math", "float math intrinsics", "Float Math Intrinsics"),
    Spec("bitwise", "bitwise", "Bitwise Operations"),
    Spec("int-compare", "integer comparison", "Integer Comparison"),
    Spec("float-compare", "float comparison", "Float Comparison"),
    Spec("conversion", "type conversion", "Type Conversion"),
    Spec("address", "address arithmetic", "Address Arithmetic"),
    Spec("global-i64", "global i64", "Global Memory (i64)"),
    Spec("global-f64", "global f64", "Global Memory (f64)"),
    Spec("shared-i64", "shared i64", "Shared Memory (i64)"),
    Spec("shared-f64", "shared f64", "Shared Memory (f64)"),
    Spec("global-int-narrow", "reduced-width global integer", "Reduced-Width Memory", label="Integer",
         where=("Memory", "Global")),
    Spec("shared-int-narrow", "reduced-width shared integer", "Reduced-Width Memory", label="Integer",
         where=("Memory", "Shared")),
    Spec("global-float-narrow", "reduced-width global float", "Reduced-Width Memory", label="Float",
         where=("Memory", "Global")),
    Spec("shared-float-narrow", "reduced-width shared float", "Reduced-Width Memory", label="Float",
         where=("Memory", "Shared")),
    Spec("if", "IF ELSE THEN", "Conditionals", ("code",)),
    Spec("until", "BEGIN UNTIL", "Post-Test Loop", ("code",)),
    Spec("while", "BEGIN WHILE REPEAT", "Pre-Test Loop", ("code",)),
    Spec("do", "DO LOOP", "Counted Loop", ("code", "table"), match=r"DO|LOOP|\+LOOP|I"),
    Spec("do-nested", "outer DO index J K", "Counted Loop", match=r"J|K"),
    Spec("do-exit", "loop exit LEAVE UNLOOP EXIT", "Counted Loop", match=r"LEAVE|UNLOOP|EXIT"),
    Spec("user-words", "user words : ;", "User-Defined Words", ("named",), named=(":", ";")),
    Spec("locals", "locals { -- }", "Local Variables", ("named",), named=("{", "--", "}")),
    Spec("index-x", "indexing X", "Thread and Block Indexing", match=r".*-X|GLOBAL-ID"),
    Spec("index-y", "indexing Y", "Thread and Block Indexing", match=r".*-Y"),
    Spec("index-z", "indexing Z", "Thread and Block Indexing", match=r".*-Z"),
    Spec("sync", "synchronization", "Synchronization"),
)
#: sections whose code shows the kernel header, not words
HEADER_SECTIONS = ("Kernel Header", "Kernel Declaration", "Parameters", "Shared Memory")


class Section(NamedTuple):
    title: str
    level: int
    text: str  # its own text, up to the next heading of any level


def sections(doc: str) -> list[Section]:
    out: list[Section] = []
    title, level, lines = "", 0, []
    in_code = False
    for line in doc.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"(#+)\s+(.*)", line)
        if m:
            out.append(Section(title, level, "\n".join(lines)))
            title, level, lines = m.group(2).strip(), len(m.group(1)), []
        else:
            lines.append(line)
    out.append(Section(title, level, "\n".join(lines)))
    return [s for s in out if s.title]


def tables(text: str) -> list[tuple[str, list[dict[str, str]]]]:
    """Each table of a section: (the bold line above it, rows as {column: cell})."""
    found: list[tuple[str, list[dict[str, str]]]] = []
    label, head, rows = "", None, []
    for line in text.splitlines() + [""]:
        bold = re.match(r"\*\*(.+?)\*\*", line.strip())
        if line.strip().startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if head is None:
                head = cells
            elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(dict(zip(head, cells)))
            continue
        if head is not None:
            found.append((label, rows))
            head, rows = None, []
        if bold:
            label = bold.group(1)
    return found


def table_words(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def code_tokens(text: str) -> list[str]:
    """The tokens of a section's code blocks, ``\\ …`` comments left out."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    tokens: list[str] = []
    for block in blocks:
        for line in block.splitlines():
            tokens += re.split(r"(?:^|\s)\\(?:\s.*|$)", line, maxsplit=1)[0].split()
    return tokens


def is_word(token: str) -> bool:
    return any(c.isupper() for c in token) and not any(c.islower() for c in token)


def family_words(spec: Spec, secs: list[Section]) -> list[str]:
    section = next((s for s in secs if s.title == spec.section), None)
    if section is None:
        raise SystemExit(f"{DOC} has no section {spec.section!r} (family {spec.id}): update FAMILIES")
    words: list[str] = []
    for how in spec.take:
        words += _taken(how, spec, section, secs)
    if spec.match:
        words = [w for w in words if re.fullmatch(spec.match, w)]
    words = list(dict.fromkeys(words))
    if not words:
        raise SystemExit(f"{DOC}, section {spec.section!r}: family {spec.id} found no words: update FAMILIES")
    return words


def _taken(how: str, spec: Spec, section: Section, secs: list[Section]) -> list[str]:
    if how == "literals":
        start = secs.index(section)
        subs = [s.title for s in secs[start + 1:] if s.level > section.level]
        return [f"<{t.split()[0].lower()}>" for t in subs if t.endswith("Literals")]
    if how == "table":
        return [w for label, rows in tables(section.text) if label.startswith(spec.label) for row in rows
                if not spec.where or row.get(spec.where[0]) == spec.where[1]
                for w in table_words(list(row.values())[0])]
    if how == "code":
        return [t for t in code_tokens(section.text) if is_word(t)]
    if how == "named":
        missing = [w for w in spec.named if w not in code_tokens(section.text)]
        if missing:
            raise SystemExit(f"{DOC}, section {spec.section!r}: no {' '.join(missing)} in its code any more "
                             f"(family {spec.id}): update FAMILIES")
        return list(spec.named)
    raise ValueError(f"family {spec.id}: unknown way to take words {how!r}")


def unplaced(secs: list[Section], placed: set[str]) -> list[str]:
    """Words of the doc's tables and code that no family took."""
    out = []
    for s in secs:
        if s.title in HEADER_SECTIONS:
            continue
        words = [w for _, rows in tables(s.text) for row in rows for w in table_words(list(row.values())[0])]
        words += [t for t in code_tokens(s.text) if is_word(t)]
        out += [f"{w} ({s.title})" for w in words if w not in placed]
    return list(dict.fromkeys(out))


def build(doc: str, commit: str) -> dict[str, object]:
    secs = sections(doc)
    families = [{"id": s.id, "title": s.title, "section": s.section, "words": family_words(s, secs)}
                for s in FAMILIES]
    left = unplaced(secs, {w for f in families for w in f["words"]})  # type: ignore[attr-defined]
    if left:
        raise SystemExit(f"{DOC}: words no family takes: {', '.join(left)}; add them to FAMILIES")
    return {
        "source": {"repository": REPOSITORY, "commit": commit, "path": DOC,
                   "sha256": hashlib.sha256(doc.encode()).hexdigest()},
        "generated_by": "tools/warpforth_language.py",
        "families": families,
    }


def git(checkout: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in {checkout}: {done.stderr.strip()}")
    return done.stdout


def render(data: dict[str, object]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path, help="a WarpForth git checkout")
    ap.add_argument("--ref", default="HEAD", help="the commit to read docs/language.md at [HEAD]")
    ap.add_argument("--out", type=Path, default=OUT, help=f"the file to write [{OUT.relative_to(ROOT)}]")
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = ap.parse_args(argv)
    commit = git(args.checkout, "rev-parse", "--verify", f"{args.ref}^{{commit}}").strip()
    text = render(build(git(args.checkout, "show", f"{commit}:{DOC}"), commit))
    if args.check:
        same = args.out.is_file() and args.out.read_text() == text
        print(f"{args.out}: {'up to date' if same else 'differs from ' + DOC + ' at ' + commit[:12]}")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"{args.out}: {len(FAMILIES)} families from {DOC} at {commit[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
