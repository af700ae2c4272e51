"""When two kernels are the same code: the same SASS *and* the same resources a launch gets.

Identical instruction text is not identical code. Two kernels whose SASS is the same but whose static shared
memory differs (1 KiB against 48 KiB) run at different occupancy, and so may registers, the stack, local
memory, the launch bounds (``.maxntid``, ``.reqntid``, ``.minnctapersm``, ``.maxnreg``) or the dynamic shared
memory of the launch. So a kernel's identity hashes, together with its normalised SASS:

* what ``ptxas -v`` reports (registers, spills, stack frame, static shared, constant bytes, barriers);
* its resource usage as ``cuobjdump -res-usage`` reads it from the cubin (REG, STACK, SHARED, LOCAL,
  CONSTANT banks, TEXTURE, SURFACE, SAMPLER);
* its launch attributes, the ``.nv.info.<kernel>`` section of ``cuobjdump -elf`` (EIATTR_MAX_THREADS,
  EIATTR_REQNTID, EIATTR_MAXREG_COUNT, EIATTR_NUM_BARRIERS, ...);
* its initialized data, the contents of the cubin's constant banks (``.nv.constant<N>`` but bank 0, the
  kernel's parameters: initialized ``.const`` variables, the constants ptxas places) and of
  ``.nv.global.init`` (initialized ``.global`` variables), as ``cuobjdump -elf`` dumps them: the SASS reads
  them by address (``c[0x3][0x0]``), so two kernels whose ``.const`` loop counts are 10 and 100000 have the
  same SASS. A kernel without initialized data has none, and its identity is what it was before data was
  part of it;
* the dynamic shared memory and threads per block of the case's launch.

Equal identities mean equal machine code launched alike: any timing difference between the two is noise.
The name of the kernel is in none of these, so a renamed kernel keeps its identity.
"""

from __future__ import annotations

import hashlib
import json
import re

from wfbench_core.record.results import SideDiagnostics

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "IDENTICAL_NOTE", "code_identity", "differences", "identical", "max_threads", "parse_data", "parse_nv_info",
    "parse_res_usage", "sass_note",
]

IDENTICAL_NOTE = "identical code (SASS and resources): any difference is noise"
_RESOURCE = re.compile(r"\b([A-Z]+(?:\[\d+\])?):(\d+)")


def parse_res_usage(listing: str, kernel: str) -> dict[str, int]:
    """``{"REG": 10, "SHARED": 2048, ...}`` for ``kernel`` in a ``cuobjdump -res-usage`` listing ({} when absent)."""
    lines = listing.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == f"Function {kernel}:" and i + 1 < len(lines):
            return {k: int(v) for k, v in _RESOURCE.findall(lines[i + 1])}
    return {}


def parse_nv_info(listing: str, kernel: str) -> tuple[str, ...]:
    """The attributes of ``kernel``'s ``.nv.info`` section in a ``cuobjdump -elf`` listing, as sorted
    ``NAME=VALUE`` strings (() when absent)."""
    m = re.search(rf"^\.nv\.info\.{re.escape(kernel)}\s*$", listing, flags=re.MULTILINE)
    if not m:
        return ()
    out, name = [], None
    for line in listing[m.end():].splitlines():
        text = line.strip()
        if line and not line[0].isspace() and text:  # the next section
            break
        if text.startswith("Attribute:"):
            name = text.split(":", 1)[1].strip().replace(" ", "_")
        elif text.startswith("Value:") and name:
            if not name.endswith("_INSTR_OFFSETS"):  # where instructions sit: the SASS already says
                out.append(f"{name}={' '.join(text.split(':', 1)[1].split())}")
            name = None
    return tuple(sorted(out))


_DATA_SECTION = re.compile(r"^\.nv\.(?:constant(?!0\b)\d+|global\.init)(?:\.\S+)?\s*$")


def parse_data(listing: str, kernel: str) -> str:
    """SHA-256 of the initialized data sections of a ``cuobjdump -elf`` listing (see the module docstring),
    each as its name (``.<kernel>`` dropped) and its words; "" when the cubin has none."""
    lines = listing.splitlines()
    found = []
    for i, line in enumerate(lines):
        if not _DATA_SECTION.match(line):
            continue
        name = line.strip().removesuffix(f".{kernel}")
        words = []
        for text in lines[i + 1:]:
            if not re.fullmatch(r"\s*(0x[0-9a-fA-F]+\s*)+", text):
                break
            words += text.split()
        found.append(f"{name}={' '.join(words)}")
    return hashlib.sha256("\n".join(sorted(found)).encode()).hexdigest() if found else ""


def max_threads(launch_attrs: tuple[str, ...]) -> int:
    """Threads per block the launch bounds allow (``.maxntid`` or ``.reqntid``); 0 when unbounded."""
    for attr in launch_attrs:
        name, _, value = attr.partition("=")
        if name in ("EIATTR_MAX_THREADS", "EIATTR_REQNTID"):
            dims = [int(x, 16) for x in value.split() if x.startswith("0x")]
            total = 1
            for d in dims:
                total *= max(d, 1)
            return total if dims else 0
    return 0


def _facts(d: SideDiagnostics) -> dict[str, object]:
    return {
        "arch": d.arch, "sass": d.sass_sha256, "registers": d.registers, "spill_stores": d.spill_stores,
        "spill_loads": d.spill_loads, "stack_frame": d.stack_frame, "shared_static": d.shared_static,
        "shared_dynamic": d.shared_dynamic, "constant_bytes": d.constant_bytes, "barriers": d.barriers,
        "block_threads": d.block_threads, "local_bytes": d.local_bytes, "resources": dict(sorted(d.resources.items())),
        "launch": list(d.launch_attrs),
        **({"data": d.data_sha256} if d.data_sha256 else {}),  # none: the identity of a kernel without data
    }


def code_identity(d: SideDiagnostics | None) -> str:
    """SHA-256 of the kernel's SASS with its resources and launch attributes; "" when not diagnosed."""
    if d is None or not d.sass_sha256:
        return ""
    text = json.dumps(_facts(d), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def identical(a: SideDiagnostics | None, b: SideDiagnostics | None) -> bool:
    """Whether two kernels (two sides, two compilers, two runs) are identical code for the same architecture."""
    ia, ib = code_identity(a), code_identity(b)
    return bool(ia) and ia == ib


_NAMES = {"registers": ("registers", ""), "stack_frame": ("stack", " B"), "shared_static": ("static shared", " B"),
          "shared_dynamic": ("dynamic shared", " B"), "local_bytes": ("local", " B"),
          "spill_stores": ("spill stores", " B"), "spill_loads": ("spill loads", " B"),
          "constant_bytes": ("constant", " B"), "barriers": ("barriers", ""), "block_threads": ("threads per block", "")}


def differences(a: SideDiagnostics, b: SideDiagnostics) -> list[str]:
    """What differs between two kernels' code: ``SASS``, ``static shared 1024 -> 49152 B``, launch attributes."""
    fa, fb = _facts(a), _facts(b)
    out = ["SASS"] if fa["sass"] != fb["sass"] else []
    out += [f"{label} {fa[k]} -> {fb[k]}{unit}" for k, (label, unit) in _NAMES.items() if fa[k] != fb[k]]
    if fa["resources"] != fb["resources"] and out in ([], ["SASS"]):  # what ptxas -v did not already say
        ra, rb = a.resources, b.resources
        out += [f"{k} {ra.get(k, '-')} -> {rb.get(k, '-')}" for k in sorted(set(ra) | set(rb)) if ra.get(k) != rb.get(k)]
    if fa["launch"] != fb["launch"]:
        out.append("launch attributes")
    if fa.get("data") != fb.get("data"):
        out.append("initialized .const/.global data")
    return out


def sass_note(a: SideDiagnostics | None, b: SideDiagnostics | None) -> str:
    """For compare, check and base/head runs: what two WarpForth builds of one case (or two runs) say about
    their code. :data:`IDENTICAL_NOTE` when identical, ``code differs (SASS; static shared 1024 -> 49152):
    see wfbench explain`` when not, "" when either side was not diagnosed or the architectures differ."""
    if a is None or b is None or not a.sass_sha256 or not b.sass_sha256 or a.arch != b.arch:
        return ""
    if identical(a, b):
        return IDENTICAL_NOTE
    return f"code differs ({'; '.join(differences(a, b)) or 'resources'}): see wfbench explain"
