"""Static diagnostics of one side's kernel, without a GPU: ptxas resources, SASS mix, theoretical occupancy.

``ptxas -arch=sm_XX -v`` assembles the PTX (the same PTX the GPU host loads) and reports registers, spills,
stack frame, shared and constant bytes; ``cuobjdump -sass`` of that cubin gives the machine code, which is
classified instruction by instruction (:data:`~wfbench_core.compiling.sass.CLASSES`, read in :mod:`wfbench_core.compiling.sass`); ``cuobjdump -res-usage -elf`` gives the cubin's
resource usage and launch attributes. The normalised SASS with those resources identifies identical code
across compilers and runs (:mod:`wfbench_core.compiling.code_identity`). Theoretical occupancy follows the CUDA
occupancy rules from one table of per-architecture limits (:data:`ARCH_LIMITS`).

The driver on the GPU host JIT-compiles the PTX itself; with the same PTX and a ptxas of the same CUDA major
version the code is the same, but a different ptxas may schedule differently. ``ptxas_version`` is recorded.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from wfbench_core.compiling.code_identity import identical, max_threads, parse_data, parse_nv_info, parse_res_usage
from wfbench_core.compiling.cudatools import find_tool, require_tools
from wfbench_core.compiling.sass import (
    CLASSES,
    TAGS,
    DiagnosticsError,
    Instr,
    Loop,
    PtxasReport,
    classify,
    code_of,
    hottest_loop,
    loops,
    mix_of,
    normalized_sass,
    parse_ptxas,
    parse_sass,
    sass_sha256,
)
from wfbench_core.compiling.stack_tax import cell, stack_addressing, tax_of
from wfbench_core.errors import WfbenchError
from wfbench_core.host.childenv import child_env
from wfbench_core.record.results import KernelProfile, SideDiagnostics

if TYPE_CHECKING:
    from wfbench_core.case import Case

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "ARCH_LIMITS", "CLASSES", "TAGS", "TOOL_TIMEOUT_S", "ArchLimits", "Assembled", "DiagnosticsError", "Instr",
    "Loop", "Occupancy", "PtxasReport", "arch_limits", "assemble", "classify", "code_of", "compact", "diagnose",
    "diagnose_case", "hottest_loop", "loops", "memory_order", "mix_differences", "mix_of", "normalized_sass",
    "parse_ptxas", "parse_sass", "sass_sha256", "summarize", "theoretical_occupancy", "tool_outputs",
    "tool_version", "tools_available",
]

TOOL_TIMEOUT_S = 300


# -- Per-architecture limits (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability")


@attrs.frozen
class ArchLimits:
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident blocks per SM
    registers: int = 65536  # 32-bit registers per SM
    shared_bytes: int = 0  # shared memory per SM usable by blocks (the largest carve-out)
    reserved_shared_per_block: int = 0  # shared memory the system reserves for each resident block
    reg_alloc_unit: int = 256  # registers are allocated per warp in units of this many
    reg_thread_granularity: int = 8  # per-thread register counts are rounded up to this
    shared_granularity: int = 128  # shared memory is allocated per block in units of this many bytes


ARCH_LIMITS: Mapping[str, ArchLimits] = {
    "sm_70": ArchLimits(max_warps=64, max_blocks=32, shared_bytes=96 * 1024, shared_granularity=256),
    "sm_75": ArchLimits(max_warps=32, max_blocks=16, shared_bytes=64 * 1024, shared_granularity=256),
    "sm_80": ArchLimits(max_warps=64, max_blocks=32, shared_bytes=164 * 1024, reserved_shared_per_block=1024),
    "sm_86": ArchLimits(max_warps=48, max_blocks=16, shared_bytes=100 * 1024, reserved_shared_per_block=1024),
    "sm_87": ArchLimits(max_warps=48, max_blocks=16, shared_bytes=164 * 1024, reserved_shared_per_block=1024),
    "sm_89": ArchLimits(max_warps=48, max_blocks=24, shared_bytes=100 * 1024, reserved_shared_per_block=1024),
    "sm_90": ArchLimits(max_warps=64, max_blocks=32, shared_bytes=228 * 1024, reserved_shared_per_block=1024),
    "sm_100": ArchLimits(max_warps=64, max_blocks=32, shared_bytes=228 * 1024, reserved_shared_per_block=1024),
    "sm_120": ArchLimits(max_warps=48, max_blocks=32, shared_bytes=100 * 1024, reserved_shared_per_block=1024),
}


def arch_limits(arch: str) -> ArchLimits:
    base = re.sub(r"[af]$", "", arch)  # sm_90a, sm_100f: same resident limits as the base architecture
    if base not in ARCH_LIMITS:
        raise WfbenchError(f"no occupancy limits known for {arch}; known: {', '.join(ARCH_LIMITS)}")
    return ARCH_LIMITS[base]


@attrs.frozen
class Occupancy:
    blocks: int  # resident blocks per SM
    warps: int  # resident warps per SM
    fraction: float  # warps / max_warps
    limiter: str  # "warps" | "blocks" | "registers" | "shared"


def theoretical_occupancy(arch: str, *, block_threads: int, registers: int, shared_bytes: int) -> Occupancy:
    """Resident blocks and warps per SM for a kernel of ``registers`` per thread and ``shared_bytes`` per block."""
    lim = arch_limits(arch)
    if block_threads < 1:
        raise WfbenchError(f"block of {block_threads} threads: need at least one")
    warps_per_block = -(-block_threads // 32)
    by = {"warps": lim.max_warps // warps_per_block, "blocks": lim.max_blocks}
    if registers:
        regs = -(-registers // lim.reg_thread_granularity) * lim.reg_thread_granularity
        per_warp = -(-(regs * 32) // lim.reg_alloc_unit) * lim.reg_alloc_unit
        by["registers"] = (lim.registers // per_warp) // warps_per_block
    if shared_bytes:
        per_block = -(-(shared_bytes + lim.reserved_shared_per_block) // lim.shared_granularity) * lim.shared_granularity
        by["shared"] = lim.shared_bytes // per_block
    limiter = min(by, key=lambda k: by[k])
    blocks = by[limiter]
    return Occupancy(blocks, blocks * warps_per_block, blocks * warps_per_block / lim.max_warps, limiter)


# -- Running the tools ----------------------------------------------------------------------------


def tools_available() -> str | None:
    """None when ptxas, cuobjdump and nvdisasm are all found, else one line saying which is missing."""
    missing = [n for n in ("ptxas", "cuobjdump", "nvdisasm") if find_tool(n) is None]
    return f"not found: {', '.join(missing)}" if missing else None


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False,
                              env=child_env(env))
    except subprocess.TimeoutExpired:
        raise DiagnosticsError(f"{what}: {Path(cmd[0]).name} took over {TOOL_TIMEOUT_S} s") from None
    except OSError as exc:
        raise DiagnosticsError(f"{what}: cannot run {cmd[0]}: {exc.strerror}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        raise DiagnosticsError(f"{what}: {Path(cmd[0]).name} failed: {'; '.join(lines[:4]) or 'no output'}")
    return proc


def tool_version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=child_env()).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else ""


@attrs.frozen
class Assembled:
    """A side's PTX assembled for one architecture: the ptxas report, the kernel's SASS and the cubin's
    resource usage and launch attributes (:mod:`wfbench_core.compiling.code_identity`)."""

    ptxas: PtxasReport
    sass: tuple[Instr, ...]
    ptxas_version: str
    resources: tuple[tuple[str, int], ...] = ()
    launch_attrs: tuple[str, ...] = ()
    data_sha256: str = ""  # initialized .const / .global data (wfbench_core.compiling.code_identity.parse_data)


def tool_outputs(ptx: str, arch: str, tools: Mapping[str, Path], *, what: str) -> tuple[str, str, str]:
    """What the tools print for ``ptx`` assembled for ``arch``: ``ptxas -v``'s report, ``cuobjdump -sass``'s
    listing and ``cuobjdump -res-usage -elf``'s output (``tools``: the paths of ptxas, cuobjdump and nvdisasm;
    ``what`` names the side in an error)."""
    ptxas, cuobjdump, nvdisasm = tools["ptxas"], tools["cuobjdump"], tools["nvdisasm"]
    env = {"NVDISASM_PATH": str(nvdisasm), "PATH": f"{nvdisasm.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory(prefix="wfbench-diag-") as tmp:
        src, cubin = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        report = _run([str(ptxas), f"-arch={arch}", "-v", str(src), "-o", str(cubin)], what).stderr
        listing = _run([str(cuobjdump), "-sass", str(cubin)], what, env).stdout
        elf = _run([str(cuobjdump), "-res-usage", "-elf", str(cubin)], what, env).stdout
    return report, listing, elf


def assemble(ptx: str, kernel: str, arch: str, *, what: str = "") -> Assembled:
    """``ptxas -v`` then ``cuobjdump -sass`` on the cubin (no GPU needed)."""
    what = what or kernel
    tools = require_tools(("ptxas", "cuobjdump", "nvdisasm"), why="static diagnostics assemble the PTX and read "
                                                                   "its SASS")
    report, listing, elf = tool_outputs(ptx, arch, tools, what=f"{what} ({arch})")
    return Assembled(parse_ptxas(report, kernel), tuple(parse_sass(listing, kernel)), tool_version(tools["ptxas"]),
                     tuple(sorted(parse_res_usage(elf, kernel).items())), parse_nv_info(elf, kernel),
                     parse_data(elf, kernel))


def diagnose(ptx: str, kernel: str, arch: str, block_threads: int, dynamic_shared: int, *,
             what: str = "") -> SideDiagnostics:
    """Static diagnostics of one side for ``arch`` (``sm_90``) at a launch of ``block_threads`` threads per
    block and ``dynamic_shared`` bytes of dynamic shared memory."""
    return summarize(assemble(ptx, kernel, arch, what=what), kernel, arch, block_threads, dynamic_shared)


def summarize(a: Assembled, kernel: str, arch: str, block_threads: int, dynamic_shared: int) -> SideDiagnostics:
    """The :class:`SideDiagnostics` record of assembled code at one launch configuration."""
    p = a.ptxas
    occ = theoretical_occupancy(arch, block_threads=block_threads, registers=p.registers,
                                shared_bytes=p.shared_bytes + dynamic_shared)
    code = code_of(a.sass)
    loop = hottest_loop(a.sass)
    return SideDiagnostics(
        arch=arch, kernel=kernel, ptxas_version=a.ptxas_version, registers=p.registers,
        spill_stores=p.spill_stores, spill_loads=p.spill_loads, stack_frame=p.stack_frame,
        shared_static=p.shared_bytes, shared_dynamic=dynamic_shared, constant_bytes=p.constant_bytes,
        barriers=p.barriers, block_threads=block_threads, occupancy=occ.fraction, occupancy_limiter=occ.limiter,
        blocks_per_sm=occ.blocks, total=len(code), mix=mix_of(code), sass_sha256=sass_sha256(a.sass),
        loop_instructions=len(code_of(loop.instrs)) if loop else 0,
        loop_mix=mix_of(code_of(loop.instrs)) if loop else {}, resources=dict(a.resources),
        local_bytes=max(p.local_bytes, dict(a.resources).get("LOCAL", 0)), launch_attrs=a.launch_attrs,
        max_threads=max_threads(a.launch_attrs), stack_addressing=stack_addressing(code), data_sha256=a.data_sha256,
    )


_MEMORY = ("ldg", "stg", "ld", "st", "lds", "sts", "ldl", "stl", "atom")


def memory_order(instrs: Sequence[Instr]) -> list[str]:
    """Memory and barrier instructions in program order (``LD.E.64``, ``STS.64``, ``BAR.SYNC`` …): shows
    how many loads are issued before their values are used, which the mix alone does not."""
    return [i.opcode for i in code_of(instrs) if classify(i) in _MEMORY or i.opcode.startswith("BAR")]


def diagnose_case(case: Case, *, wf_ptx: str, cuda_ptx: str, arch: str
                  ) -> tuple[SideDiagnostics | None, SideDiagnostics | None, str]:
    """Both sides' diagnostics at the case's canonical launch, for the executor: ``(wf, cuda, note)``.

    Diagnostics never fail a case: when the tools are missing or one of them fails, the sides are None and
    ``note`` says why in one line (the caller may show it once); otherwise ``note`` is "".
    """
    missing = tools_available()
    if missing:
        return None, None, f"static diagnostics skipped ({missing})"
    launch = case.launch(case.sizes["canonical"])
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    try:
        wf = diagnose(wf_ptx, case.wf_kernel, arch, threads, launch.shared_bytes, what=f"{case.key('canonical')} WarpForth")
        cu = diagnose(cuda_ptx, case.cuda_kernel, arch, threads, launch.shared_bytes, what=f"{case.key('canonical')} CUDA")
    except WfbenchError as exc:
        return None, None, f"static diagnostics skipped: {exc}"
    return wf, cu, ""


# -- Views ----------------------------------------------------------------------------------------


def mix_differences(a: Mapping[str, int], b: Mapping[str, int], n: int = 6) -> list[tuple[str, int, int]]:
    """The ``n`` classes whose counts differ most between two mixes: ``(class, a, b)``, largest first."""
    keys = sorted(set(a) | set(b))
    diffs = [(k, a.get(k, 0), b.get(k, 0)) for k in keys if a.get(k, 0) != b.get(k, 0)]
    diffs.sort(key=lambda d: (-abs(d[1] - d[2]), d[0]))
    return diffs[:n]


def compact(wf: SideDiagnostics | None, cuda: SideDiagnostics | None, n: int = 3,
            profiles: tuple[KernelProfile | None, KernelProfile | None] = (None, None)) -> str:
    """One short cell for the run table: ``regs 28/30 occ 100/100% ld.64 4/0 ldg.64 0/4 …`` (WarpForth/CUDA),
    with the runtime-stack tax (:func:`wfbench_core.compiling.stack_tax.cell`) where a side has one."""
    if wf is None or cuda is None:
        return "-"
    parts = [f"regs {wf.registers}/{cuda.registers}",
             f"occ {wf.occupancy * 100:.0f}/{cuda.occupancy * 100:.0f}%"]
    spills = (wf.spill_stores + wf.spill_loads, cuda.spill_stores + cuda.spill_loads)
    if any(spills):
        parts.append(f"spill {spills[0]}/{spills[1]}B")
    parts += [stack] if (stack := cell(tax_of(wf, profiles[0]), tax_of(cuda, profiles[1]))) else []
    if identical(wf, cuda):
        parts.append("same code")
    else:
        parts.append(f"sass {wf.total}/{cuda.total}")
        shown = ("predicated", "ldl", "stl") if stack else ("predicated",)  # too fine-grained, or said already
        wf_mix = {k: v for k, v in wf.mix.items() if k.split(".")[0] not in shown}
        cu_mix = {k: v for k, v in cuda.mix.items() if k.split(".")[0] not in shown}
        parts += [f"{k} {x}/{y}" for k, x, y in mix_differences(wf_mix, cu_mix, n)]
    return " ".join(parts)
