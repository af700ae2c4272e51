"""The runtime-stack tax of one kernel: what keeping stack cells in local memory costs it.

WarpForth keeps its data stack in an array. Where every stack index is known at compile time the array is
promoted to registers and the kernel has no stack frame; where an index is only known at run time (``I PICK``
with a computed ``I``, ``ROLL`` by a parameter) the array stays in local memory, and every push, pick and
drop becomes a local store or load. This module is the one place where that cost is counted:

- **stack frame**: the bytes of local memory per thread that ``ptxas -v`` reports (``N bytes stack frame``),
  with its spill stores and loads (:class:`~wfbench_core.record.results.SideDiagnostics`);
- **local loads and stores**: the ``LDL`` and ``STL`` instructions of the SASS, by width in bits (the mix's
  ``ldl.W`` / ``stl.W`` classes, :func:`wfbench_core.compiling.diagnostics.classify`), in the whole kernel and in
  its innermost loop;
- **stack addressing**: the other instructions that form an address in the stack (:func:`addresses_stack`):
  they read the stack pointer ``R1`` (not counting the frame set-up, which writes it) or the local window
  (``c[0x0][0x20]``, ``c[0x0][0x24]``: the generic address of local memory, used where a local address
  becomes a generic pointer or back);
- **local traffic**, when profiled: the bytes Nsight Compute counts through L1 for local loads and stores
  (:data:`wfbench_core.gpu.profile.LOCAL_METRICS`).

Every view (the run table's static column, ``wfbench explain``, head against base, the docs' figures) reads
these through :func:`tax_of`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from wfbench_core.record.results import KernelProfile, SideDiagnostics

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "LOCAL_WINDOW", "STACK_POINTER", "StackTax", "addresses_stack", "by_width", "cell", "change", "delta_rows",
    "rows", "sentence", "size", "stack_addressing", "tax_of",
]

#: The stack pointer: the ABI keeps it in R1 (set up from ``c[0x0][0x28]`` at the kernel's entry).
STACK_POINTER = "R1"
#: The local window in constant bank 0 (low and high word): the generic address at which local memory starts.
LOCAL_WINDOW = ("c[0x0][0x20]", "c[0x0][0x24]")

_SP = re.compile(rf"\b{STACK_POINTER}\b")


def addresses_stack(opcode: str, operands: str) -> bool:
    """Whether an instruction that is not a local load or store forms a stack address: it reads the stack
    pointer or the local window. The frame set-up (``LDC R1, c[0x0][0x28]``, ``VIADD R1, R1, -frame``)
    writes the stack pointer and is not counted."""
    if opcode.split(".")[0] in ("LDL", "STL"):
        return False
    first = operands.split(",", 1)[0].strip()
    if first == STACK_POINTER:
        return False
    return bool(_SP.search(operands)) or any(w in operands for w in LOCAL_WINDOW)


class _Instruction(Protocol):  # wfbench_core.compiling.diagnostics.Instr, which imports this module
    @property
    def opcode(self) -> str: ...

    @property
    def operands(self) -> str: ...


def stack_addressing(instrs: Sequence[_Instruction]) -> int:
    """How many of ``instrs`` (SASS instructions, padding dropped) form a stack address."""
    return sum(1 for i in instrs if addresses_stack(i.opcode, i.operands))


def _widths(mix: dict[str, int], cls: str) -> tuple[tuple[int, int], ...]:
    out = []
    for k, v in mix.items():
        name, _, width = k.partition(".")
        if name == cls and width.isdigit() and v:
            out.append((int(width), v))
    return tuple(sorted(out))


@attrs.frozen
class StackTax:
    """One side's runtime-stack tax, as every view shows it."""

    frame: int  # bytes per thread (ptxas -v)
    spill_stores: int  # bytes
    spill_loads: int
    loads: tuple[tuple[int, int], ...]  # LDL: (width in bits, count), narrowest first
    stores: tuple[tuple[int, int], ...]  # STL
    loop_loads: int  # LDL in the innermost loop
    loop_stores: int
    addressing: int | None  # stack-addressing instructions; None: the result predates the count
    load_bytes: int | None = None  # local traffic through L1 (Nsight Compute); None: not profiled
    store_bytes: int | None = None

    @property
    def ldl(self) -> int:
        return sum(n for _, n in self.loads)

    @property
    def stl(self) -> int:
        return sum(n for _, n in self.stores)

    @property
    def traffic(self) -> int | None:
        """Local bytes loaded and stored (Nsight Compute), None when not profiled."""
        if self.load_bytes is None or self.store_bytes is None:
            return None
        return self.load_bytes + self.store_bytes

    @property
    def carried(self) -> bool:
        """Whether the kernel pays any stack tax at all."""
        return bool(self.frame or self.ldl or self.stl or self.spill_stores or self.spill_loads or self.traffic)


def tax_of(diag: SideDiagnostics, profile: KernelProfile | None = None) -> StackTax:
    """The stack tax of one side from its stored diagnostics (and profile)."""
    return StackTax(
        frame=diag.stack_frame, spill_stores=diag.spill_stores, spill_loads=diag.spill_loads,
        loads=_widths(diag.mix, "ldl"), stores=_widths(diag.mix, "stl"),
        loop_loads=sum(n for _, n in _widths(diag.loop_mix, "ldl")),
        loop_stores=sum(n for _, n in _widths(diag.loop_mix, "stl")),
        addressing=diag.stack_addressing,
        load_bytes=profile.local_load_bytes if profile is not None else None,
        store_bytes=profile.local_store_bytes if profile is not None else None,
    )


# -------------------------------------------------------------------------------------------------
# words


def size(n: int | None) -> str:
    """Bytes as a short figure in decimal units (as Nsight Compute counts them): ``0``, ``640 B``, ``1.2 MB``."""
    if n is None:
        return "-"
    if n == 0:
        return "0"
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def by_width(counts: tuple[tuple[int, int], ...], op: str) -> str:
    """``STL.64 x19, STL.128 x3`` (``none`` when there are none)."""
    return ", ".join(f"{op}.{w} x{n}" for w, n in counts) or "none"


def cell(wf: StackTax, cuda: StackTax) -> str:
    """The run table's part of the static column (WarpForth/CUDA): "" when neither side has a stack tax,
    else ``stack 2048/48B stl 19/3 ldl 1/6`` and, when profiled, ``local 1.2MB/0.1MB``."""
    if not (wf.carried or cuda.carried):
        return ""
    parts = [f"stack {wf.frame}/{cuda.frame}B", f"stl {wf.stl}/{cuda.stl}", f"ldl {wf.ldl}/{cuda.ldl}"]
    if wf.traffic is not None and cuda.traffic is not None:
        parts.append(f"local {size(wf.traffic).replace(' ', '')}/{size(cuda.traffic).replace(' ', '')}")
    return " ".join(parts)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def sentence(label: str, t: StackTax) -> str:
    """One finding: what the side's stack costs (empty when it has none)."""
    if not t.carried:
        return ""
    words = [f"{t.frame} B stack frame"]
    if t.spill_stores or t.spill_loads:
        words.append(f"{t.spill_stores} B of spill stores and {t.spill_loads} B of spill loads")
    words.append(f"{_n(t.stl, 'local store')} ({by_width(t.stores, 'STL')}) and {_n(t.ldl, 'local load')} "
                 f"({by_width(t.loads, 'LDL')}), {t.loop_stores + t.loop_loads} of them in the innermost loop")
    if t.addressing:
        words.append(f"{_n(t.addressing, 'more instruction')} form{'s' * (t.addressing == 1)} stack addresses")
    if t.traffic is not None:
        words.append(f"local traffic {size(t.load_bytes)} loaded and {size(t.store_bytes)} stored")
    return f"{label} pays a runtime-stack tax in local memory: " + "; ".join(words) + "."


def rows(taxes: Sequence[StackTax]) -> list[list[str]]:
    """Rows of the static table, one column per side (the label row is the caller's)."""

    def row(name: str, fn: Callable[[StackTax], str]) -> list[str]:
        return [name, *[fn(t) for t in taxes]]

    out = [row("local stores (STL)", lambda t: f"{t.stl}" + (f" ({by_width(t.stores, 'STL')})" if t.stl else "")),
           row("local loads (LDL)", lambda t: f"{t.ldl}" + (f" ({by_width(t.loads, 'LDL')})" if t.ldl else "")),
           row("LDL + STL in the innermost loop", lambda t: str(t.loop_loads + t.loop_stores)),
           row("stack-addressing instructions", lambda t: "-" if t.addressing is None else str(t.addressing))]
    if any(t.traffic is not None for t in taxes):
        out.append(row("local traffic, loaded / stored (ncu)", lambda t: f"{size(t.load_bytes)} / {size(t.store_bytes)}"))
    return out


def _arrow(name: str, a: int | None, b: int | None, fmt: Callable[[int | None], str] = str,
           unit: str = "") -> str:
    return f"{name} {fmt(a)} → {fmt(b)}{unit}"


def change(base: StackTax, head: StackTax) -> str:
    """What head did to the stack tax, only the figures that moved: ``stack frame 2048 → 0 B, STL 19 → 0,
    LDL 1 → 0, local traffic 1.2 MB → 0``; "" when none did."""
    parts = []
    if base.frame != head.frame:
        parts.append(_arrow("stack frame", base.frame, head.frame, unit=" B"))
    for name, a, b in (("spill stores", base.spill_stores, head.spill_stores),
                       ("spill loads", base.spill_loads, head.spill_loads)):
        if a != b:
            parts.append(_arrow(name, a, b, unit=" B"))
    for name, x, y in (("STL", base.stl, head.stl), ("LDL", base.ldl, head.ldl),
                       ("stack addressing", base.addressing, head.addressing)):
        if x != y and x is not None and y is not None:
            parts.append(_arrow(name, x, y))
    if base.traffic is not None and head.traffic is not None and base.traffic != head.traffic:
        parts.append(_arrow("local traffic", base.traffic, head.traffic, size))
    return ", ".join(parts)


def delta_rows(base: StackTax, head: StackTax) -> list[list[str]]:
    """Head-against-base rows (base, head, change) of the LDL/STL counts, stack addressing and local traffic."""

    def signed(a: int | None, b: int | None) -> str:
        return "-" if a is None or b is None else ("=" if a == b else f"{b - a:+d}")

    out = [["local stores (STL)", str(base.stl), str(head.stl), signed(base.stl, head.stl)],
           ["local loads (LDL)", str(base.ldl), str(head.ldl), signed(base.ldl, head.ldl)],
           ["stack-addressing instructions", "-" if base.addressing is None else str(base.addressing),
            "-" if head.addressing is None else str(head.addressing), signed(base.addressing, head.addressing)]]
    if base.traffic is not None and head.traffic is not None:
        moved = head.traffic - base.traffic
        out.append(["local traffic (ncu)", size(base.traffic), size(head.traffic),
                    "=" if not moved else ("+" if moved > 0 else "-") + size(abs(moved))])
    return out
