"""Reading what ptxas and cuobjdump print: the ``ptxas -v`` facts of one kernel and its SASS listing, each
instruction classified (:data:`CLASSES`), its loops found. Text in, records out: no tool runs here
(:mod:`wfbench_core.compiling.diagnostics` runs them).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence

import attrs

from wfbench_core.errors import WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CLASSES",
    "TAGS",
    "DiagnosticsError",
    "Instr",
    "Loop",
    "PtxasReport",
    "classify",
    "code_of",
    "hottest_loop",
    "loops",
    "mix_of",
    "normalized_sass",
    "parse_ptxas",
    "parse_sass",
    "sass_sha256",
]


class DiagnosticsError(WfbenchError):
    """ptxas or cuobjdump failed on a side's PTX; the message names the side and carries the tool's words."""


# -- ptxas -v -------------------------------------------------------------------------------------


@attrs.frozen
class PtxasReport:
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    shared_bytes: int = 0
    constant_bytes: int = 0
    local_bytes: int = 0
    barriers: int = 0


def parse_ptxas(report: str, kernel: str) -> PtxasReport:
    """The ``-v`` facts of one entry function (a report may hold several)."""
    m = re.search(rf"Compiling entry function '{re.escape(kernel)}'", report)
    if not m:
        raise DiagnosticsError(f"ptxas -v reported no entry function {kernel!r}")
    nxt = re.search(r"Compiling entry function '", report[m.end():])
    block = report[m.end(): m.end() + nxt.start()] if nxt else report[m.end():]

    def num(pattern: str) -> int:
        found = re.search(pattern, block)
        return int(found.group(1)) if found else 0

    used = re.search(r"Used (\d+) registers", block)
    if not used:
        raise DiagnosticsError(f"ptxas -v gave no register count for {kernel!r}")
    return PtxasReport(
        registers=int(used.group(1)),
        spill_stores=num(r"(\d+) bytes spill stores"),
        spill_loads=num(r"(\d+) bytes spill loads"),
        stack_frame=num(r"(\d+) bytes stack frame"),
        shared_bytes=num(r"(\d+) bytes smem"),
        constant_bytes=sum(int(x) for x in re.findall(r"(\d+) bytes cmem\[\d+\]", block)),
        local_bytes=num(r"(\d+) bytes lmem"),
        barriers=num(r"used (\d+) barriers"),
    )


# -- SASS -----------------------------------------------------------------------------------------


@attrs.frozen
class Instr:
    address: int
    predicate: str  # "" or "@P0", "@!P2" …
    opcode: str  # "LDG.E.64.CONSTANT"
    operands: str

    @property
    def text(self) -> str:
        return " ".join(x for x in (self.predicate, self.opcode, self.operands) if x)


_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*([^;]*);")


def parse_sass(listing: str, kernel: str) -> list[Instr]:
    """The instructions of ``kernel`` in a ``cuobjdump -sass`` listing (addresses, predicates, opcodes)."""
    sections = re.split(r"^\s*Function : ", listing, flags=re.MULTILINE)
    for section in sections[1:]:
        name, _, body = section.partition("\n")
        if name.strip() != kernel:
            continue
        out = []
        for line in body.splitlines():
            m = _LINE.match(line)
            if m:
                out.append(Instr(int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), m.group(4).strip()))
        return out
    raise DiagnosticsError(f"cuobjdump listing has no function {kernel!r}")


def code_of(instrs: Sequence[Instr]) -> list[Instr]:
    """Drop the padding after the last EXIT: NOPs and the branch-to-self that ends every SASS function."""
    return [i for i in instrs
            if i.opcode != "NOP" and not (i.opcode == "BRA" and _target(i) == i.address)]


def _target(i: Instr) -> int | None:
    m = re.search(r"(?:^|[\s,`(])0x([0-9a-f]+)\b", i.operands)
    return int(m.group(1), 16) if m and i.opcode in ("BRA", "BRX", "JMP", "CALL", "BSSY", "BREAK") else None


_WIDTH = re.compile(r"\.(U8|S8|U16|S16|8|16|32|64|128)(?:\.|$)")


def _width(opcode: str) -> int:
    m = _WIDTH.search(opcode)
    if not m:
        return 32
    return int(re.sub(r"[US]", "", m.group(1)))


#: Every SASS instruction falls in exactly one class; the classes partition ``total``.
CLASSES = (
    "ldg", "stg", "ld", "st", "lds", "sts", "ldl", "stl", "ldc", "atom",
    "dadd", "dmul", "dfma", "f64", "fp32", "imad", "imad.wide", "ialu", "conv", "branch", "control", "barrier",
    "uniform", "special", "other",
)

_F32 = {"FADD", "FMUL", "FFMA", "FMNMX", "FSEL", "FSET", "FSETP", "FCHK", "MUFU", "FSWZADD", "HADD2", "HMUL2",
        "HFMA2", "FMUL32I", "FADD32I", "FFMA32I"}
_F64 = {"DSETP", "DMNMX", "DSET"}
_CONV = {"F2F", "F2I", "I2F", "I2FP", "F2IP", "FRND", "F2FP", "I2I", "I2IP"}
_IALU = {"IADD3", "IADD", "IADD32I", "LOP3", "LOP", "LOP32I", "SHF", "SHL", "SHR", "ISETP", "LEA", "SEL", "MOV",
         "MOV32I", "IABS", "IMNMX", "VIMNMX", "POPC", "FLO", "PRMT", "BREV", "IDP", "ISCADD", "PLOP3", "P2R", "R2P",
         "BMSK", "SGXT", "VIADD", "VIADDMNMX", "IMUL", "IMNMX3"}
_BRANCH = {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "BRXU", "JMXU"}
_CONTROL = {"EXIT", "BSSY", "BSYNC", "WARPSYNC", "BREAK", "BPT", "KILL", "YIELD", "NANOSLEEP", "ACQBULK"}
_BARRIER = {"BAR", "MEMBAR", "ERRBAR", "DEPBAR", "CCTL", "FENCE", "SYNCS", "ARRIVES"}
_SPECIAL = {"S2R", "CS2R", "S2UR", "VOTE", "VOTEU", "SHFL", "MATCH", "REDUX", "R2UR", "B2R"}


def classify(i: Instr) -> str:
    """The instruction's class (one of :data:`CLASSES`)."""
    op = i.opcode.split(".")[0]
    if op == "LDG":
        return "ldg"
    if op == "STG":
        return "stg"
    if op in ("LD", "ST"):  # generic address space: may be global, shared or local, resolved at run time
        return op.lower()
    if op in ("LDS", "LDSM"):
        return "lds"
    if op == "STS":
        return "sts"
    if op == "LDL":
        return "ldl"
    if op == "STL":
        return "stl"
    if op in ("LDC", "ULDC"):
        return "ldc"
    if op in ("ATOM", "ATOMG", "ATOMS", "RED", "REDG", "ATOMU"):
        return "atom"
    if op in ("DADD", "DMUL", "DFMA"):
        return op.lower()
    if op in _F64:
        return "f64"
    if op in _F32:
        return "fp32"
    if op == "IMAD":
        return "imad.wide" if ".WIDE" in i.opcode else "imad"
    if op in _CONV:
        return "conv"
    if op in _IALU:
        return "ialu"
    if op in _BRANCH:
        return "branch"
    if op in _CONTROL:
        return "control"
    if op in _BARRIER:
        return "barrier"
    if op in _SPECIAL:
        return "special"
    if op.startswith("U"):
        return "uniform"
    return "other"


def _addr64(i: Instr) -> bool:
    """Part of 64-bit integer arithmetic: a wide multiply, or the carry into a high word (``.X``, ``LEA.HI``)."""
    parts = i.opcode.split(".")
    return (parts[0] == "IMAD" and "WIDE" in parts) or "X" in parts[1:] or i.opcode.startswith("LEA.HI")


def mix_of(instrs: Sequence[Instr]) -> dict[str, int]:
    """Counts per class, memory classes split by width (``ldg.64``), plus the tags ``addr64``,
    ``predicated`` and ``ldg.nc`` (read-only-cache loads), which overlap the classes."""
    mix: Counter[str] = Counter()
    for i in instrs:
        cls = classify(i)
        if cls in ("ldg", "stg", "ld", "st", "lds", "sts", "ldl", "stl", "atom"):
            mix[f"{cls}.{_width(i.opcode)}"] += 1
        else:
            mix[cls] += 1
        if _addr64(i):
            mix["addr64"] += 1
        if i.predicate:
            mix["predicated"] += 1
        if cls == "ldg" and ".CONSTANT" in i.opcode:
            mix["ldg.nc"] += 1
    return dict(sorted(mix.items()))


#: Keys of a mix that are tags (overlapping the classes), not part of the partition.
TAGS = ("addr64", "predicated", "ldg.nc")


def normalized_sass(instrs: Sequence[Instr]) -> str:
    """One instruction per line: predicate, opcode, operands; no addresses of the listing, no encodings."""
    return "\n".join(i.text for i in code_of(instrs)) + "\n"


def sass_sha256(instrs: Sequence[Instr]) -> str:
    return hashlib.sha256(normalized_sass(instrs).encode()).hexdigest()


@attrs.frozen
class Loop:
    start: int  # address of the loop head (the backward branch's target)
    end: int  # address of the backward branch
    depth: int  # how many other loops contain it
    instrs: tuple[Instr, ...]


def loops(instrs: Sequence[Instr]) -> list[Loop]:
    """Every loop: a backward branch and the address range from its target to itself."""
    spans = []
    for i in code_of(instrs):
        t = _target(i)
        if i.opcode.startswith(("BRA", "JMP")) and t is not None and t <= i.address:
            spans.append((t, i.address))
    out = []
    for s, e in spans:
        depth = sum(1 for s2, e2 in spans if (s2, e2) != (s, e) and s2 <= s and e <= e2)
        body = tuple(i for i in instrs if s <= i.address <= e)
        out.append(Loop(s, e, depth, body))
    return out


def hottest_loop(instrs: Sequence[Instr]) -> Loop | None:
    """The innermost loop (deepest nesting; among loops equally deep the longest body), or None for
    straight-line code.

    Without a profile this is the best static guess of where the time goes: the innermost loop runs most
    often, and of sibling loops at the same depth the longest is usually the unrolled main loop (the short
    one its remainder).
    """
    found = loops(instrs)
    if not found:
        return None
    return min(found, key=lambda lp: (-lp.depth, -len(lp.instrs), lp.start))
