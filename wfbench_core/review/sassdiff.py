"""Head against base in machine code: the two kernels' SASS aligned instruction by instruction.

Both listings are normalised before they are compared: the listing's addresses go, register numbers become
their kind (``R``, ``UR``, ``P``, ``UP``, ``B``) and branch targets become ``<target>``. ptxas renames
registers and every address after an insertion moves, so without this one added instruction would look like a
hundred changed ones. :class:`difflib.SequenceMatcher` then aligns the normalised lines; where it replaces a
run of lines, a second pass pairs the lines of one opcode (``changed``: an operand or modifier moved) and
leaves the rest ``removed`` and ``added``. A removed and an added line at most :data:`NEARBY` rows apart are
then one instruction: ``moved`` when their normalised lines are equal (ptxas scheduled it elsewhere),
``changed`` when their opcode is. Lines equal once normalised but not in their text are ``renamed``
(register allocation only) and counted, not shown as changes.

Loops are the backward branches of :func:`wfbench_core.compiling.diagnostics.loops`; a base loop and a head loop are
the same loop when their backward branches (else their heads) align. Every change is placed: inside which
loop, or before, between or after the loops.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

import attrs

from wfbench_core.compiling.diagnostics import Instr, Loop, code_of, loops

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CHANGES", "CONTEXT", "NEARBY", "LoopPair", "Placed", "Row", "SassDiff", "align", "diff", "loop_name",
    "normalize", "where",
]

SAME, RENAMED, MOVED, CHANGED, REMOVED, ADDED = "same", "renamed", "moved", "changed", "removed", "added"
CHANGES = (MOVED, CHANGED, REMOVED, ADDED)
CONTEXT = 3
NEARBY = 8  # rows apart within which a removed and an added line are one instruction moved or changed

_REGISTER = re.compile(r"\b(UR|R|UP|P|B)\d+\b")
_BRANCHING = ("BRA", "BRX", "BSSY", "CALL", "JMP", "JMX", "BREAK", "BPT")
_TARGET = re.compile(r"0x[0-9a-f]+")


def normalize(i: Instr) -> str:
    """The instruction without what ptxas's allocation and layout decide: register numbers and branch targets."""
    text = _REGISTER.sub(r"\1", i.text)
    if i.opcode.split(".")[0] in _BRANCHING:
        text = _TARGET.sub("<target>", text)
    return text


def _root(i: Instr) -> str:
    return i.opcode.split(".")[0]


@attrs.frozen
class Row:
    """One line of the alignment: a base instruction, a head instruction, or both."""

    kind: str  # SAME | RENAMED | MOVED | CHANGED | REMOVED | ADDED
    base: Instr | None
    head: Instr | None

    @property
    def changed(self) -> bool:
        return self.kind in CHANGES


@attrs.frozen
class LoopPair:
    """One loop in base and head (either is None when the loop exists on one side only) and its changes."""

    base: Loop | None
    head: Loop | None
    rows: tuple[Row, ...]

    def count(self, kind: str) -> int:
        return sum(1 for r in self.rows if r.kind == kind)

    @property
    def changed(self) -> bool:
        return self.base is None or self.head is None or any(r.changed for r in self.rows)


@attrs.frozen
class Placed:
    """A changed row and where it sits: ``where`` is a phrase (``inside the loop at 0x0180-0x0220`` …)."""

    row: Row
    index: int  # position in its side's code (1-based)
    of: int  # instructions in that side's code
    where: str
    after: Instr | None  # the instruction before it on its side
    before: Instr | None  # and after it


@attrs.frozen
class SassDiff:
    base: tuple[Instr, ...]  # code (padding dropped)
    head: tuple[Instr, ...]
    rows: tuple[Row, ...]
    loops: tuple[LoopPair, ...]

    def of(self, kind: str) -> list[Row]:
        return [r for r in self.rows if r.kind == kind]

    @property
    def identical(self) -> bool:
        return all(r.kind == SAME for r in self.rows)

    def hunks(self, context: int = CONTEXT) -> list[list[Row]]:
        """Runs of changed rows with ``context`` unchanged rows either side; overlapping runs merge."""
        marks = [n for n, r in enumerate(self.rows) if r.changed]
        spans: list[list[int]] = []
        for n in marks:
            lo, hi = max(0, n - context), min(len(self.rows), n + context + 1)
            if spans and lo <= spans[-1][1]:
                spans[-1][1] = hi
            else:
                spans.append([lo, hi])
        return [list(self.rows[lo:hi]) for lo, hi in spans]

    def placed(self) -> list[Placed]:
        """Every changed row, placed in its side's code (the head's for added and changed, the base's for
        removed)."""
        return [_place(r, self.head if r.head is not None else self.base) for r in self.rows if r.changed]


# -------------------------------------------------------------------------------------------------
# alignment


def _replace(base: Sequence[Instr], head: Sequence[Instr]) -> list[Row]:
    """A replaced run: lines of one opcode pair up as ``changed``, the rest are removed and added."""
    out: list[Row] = []
    sm = difflib.SequenceMatcher(a=[_root(i) for i in base], b=[_root(i) for i in head], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out += [Row(CHANGED, b, h) for b, h in zip(base[i1:i2], head[j1:j2])]
            continue
        out += [Row(REMOVED, b, None) for b in base[i1:i2]]
        out += [Row(ADDED, None, h) for h in head[j1:j2]]
    return out


def align(base: Sequence[Instr], head: Sequence[Instr]) -> list[Row]:
    """The two kernels' code (padding dropped) aligned on their normalised lines."""
    b, h = code_of(base), code_of(head)
    sm = difflib.SequenceMatcher(a=[normalize(i) for i in b], b=[normalize(i) for i in h], autojunk=False)
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            rows += [Row(SAME if x.text == y.text else RENAMED, x, y) for x, y in zip(b[i1:i2], h[j1:j2])]
        elif tag == "replace":
            rows += _replace(b[i1:i2], h[j1:j2])
        else:
            rows += [Row(REMOVED, x, None) for x in b[i1:i2]]
            rows += [Row(ADDED, None, y) for y in h[j1:j2]]
    return _pair_nearby(_pair_nearby(rows, normalize, MOVED), _root, CHANGED)


def _pair_nearby(rows: list[Row], key: Callable[[Instr], str], kind: str) -> list[Row]:
    """Join each removed row with the nearest added row (at most :data:`NEARBY` rows away) of the same
    ``key`` into one row of ``kind``, placed where the head has it."""
    out: list[Row | None] = list(rows)
    for n, r in enumerate(rows):
        if r.kind != REMOVED or out[n] is None:
            continue
        assert r.base is not None
        near = sorted(range(max(0, n - NEARBY), min(len(rows), n + NEARBY + 1)), key=lambda m: abs(m - n))
        m = next((m for m in near if (x := out[m]) is not None and x.kind == ADDED and x.head is not None
                  and key(x.head) == key(r.base)), None)
        if m is not None:
            out[m] = Row(kind, r.base, rows[m].head)
            out[n] = None
    return [r for r in out if r is not None]


def _pair_loops(rows: Sequence[Row], base: Sequence[Instr], head: Sequence[Instr]) -> list[LoopPair]:
    to_head = {r.base.address: r.head.address for r in rows if r.base is not None and r.head is not None}
    head_loops = {(lp.start, lp.end): lp for lp in loops(head)}
    out = []
    for lp in loops(base):
        match = next((hl for hl in head_loops.values() if to_head.get(lp.end) == hl.end), None) or \
            next((hl for hl in head_loops.values() if to_head.get(lp.start) == hl.start), None)
        if match is not None:
            del head_loops[(match.start, match.end)]
        out.append(LoopPair(lp, match, _rows_in(rows, lp, match)))
    out += [LoopPair(None, hl, _rows_in(rows, None, hl)) for hl in head_loops.values()]
    return sorted(out, key=lambda p: p.head.start if p.head else p.base.start if p.base else 0)


def _rows_in(rows: Sequence[Row], base: Loop | None, head: Loop | None) -> tuple[Row, ...]:
    def inside(i: Instr | None, lp: Loop | None) -> bool:
        return i is not None and lp is not None and lp.start <= i.address <= lp.end

    return tuple(r for r in rows if inside(r.base, base) or inside(r.head, head))


def diff(base: Sequence[Instr], head: Sequence[Instr]) -> SassDiff:
    """Align two kernels' SASS (the instructions of :func:`wfbench_core.compiling.diagnostics.parse_sass`)."""
    rows = align(base, head)
    return SassDiff(tuple(code_of(base)), tuple(code_of(head)), tuple(rows), tuple(_pair_loops(rows, base, head)))


# -------------------------------------------------------------------------------------------------
# where a change sits


def loop_name(lp: Loop) -> str:
    return f"the loop at 0x{lp.start:04x}-0x{lp.end:04x}"


def where(address: int, code: Sequence[Instr]) -> str:
    """Where ``address`` sits in a kernel's code: inside which loop, or before, between or after the loops."""
    found = loops(code)
    inside = [lp for lp in found if lp.start <= address <= lp.end]
    if inside:
        lp = max(inside, key=lambda x: (x.depth, -x.start))
        return f"inside {loop_name(lp)}" + (f" (nesting depth {lp.depth})" if lp.depth else "")
    if not found:
        return "in straight-line code (no loop)"
    before = [lp for lp in found if lp.end < address]
    after = [lp for lp in found if lp.start > address]
    if not before:
        first = min(after, key=lambda x: x.start)
        return f"before the first loop (0x{first.start:04x})"
    last = max(before, key=lambda x: x.end)
    if not after:
        return f"after the last loop (which ends at 0x{last.end:04x})"
    nxt = min(after, key=lambda x: x.start)
    return f"between {loop_name(last)} and {loop_name(nxt)}"


def _place(row: Row, code: Sequence[Instr]) -> Placed:
    instr = row.head if row.head is not None else row.base
    assert instr is not None
    n = next(k for k, i in enumerate(code) if i.address == instr.address)
    return Placed(row, n + 1, len(code), where(instr.address, code),
                  code[n - 1] if n > 0 else None, code[n + 1] if n + 1 < len(code) else None)
