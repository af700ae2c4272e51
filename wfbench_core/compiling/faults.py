"""Classify what went wrong with a kernel: one class, one line, and whether the GPU context survived.

A benchmark of a compiler under development meets broken kernels as a matter of course. Every failure to
compile, load or launch a kernel is turned into a :class:`KernelFault` naming the case, the side
(WarpForth or CUDA) and the configuration (``check`` or ``canonical``), with one of these classes:

==========================  ====================================================================  ======
class                       what happened                                                         sticky
==========================  ====================================================================  ======
``illegal address``         a load or store outside any allocation (CUDA_ERROR_ILLEGAL_ADDRESS)   yes
``misaligned address``      a load or store not aligned to its size                               yes
``trap``                    ``trap``, an assertion, an illegal instruction, a hardware stack      yes
                            error or an unspecified launch failure
``out of resources``        too many registers, threads or shared bytes for one block             no
``hang``                    did not finish within its deadline (the worker is killed)             yes
``load failure``            the driver could not load or JIT the PTX, or find the kernel in it    no
``compile failure``         warpforthc, nvcc or NVRTC rejected the source                         no
``out of memory``           a device allocation failed                                            no
``cuda error``              any other driver error (unknown ones are treated as sticky)           yes
==========================  ====================================================================  ======

**Sticky** errors leave the CUDA context unusable: every later call in the same process fails with the
same error, so the process must be replaced before the next case (``KernelFault.sticky``).

numba-cuda raises ``CudaAPIError`` whose ``code`` is the driver's ``CUresult``; cuda.core raises
``CUDAError`` whose message starts with the result's name. :func:`classify` reads either, and the pure
:func:`classify_code` maps a result code or name to a class.
"""

from __future__ import annotations

import re

import attrs

from wfbench_core.case import CaseKey
from wfbench_core.compiling.compile import CompileError
from wfbench_core.errors import WfbenchError

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CLASSES", "COMPILE_FAILURE", "CUDA_ERROR", "HANG", "ILLEGAL_ADDRESS", "LOAD_FAILURE", "MISALIGNED_ADDRESS",
    "OUT_OF_MEMORY", "OUT_OF_RESOURCES", "SIDE_NAMES", "TRAP", "CompileFault", "Fault", "KernelFault",
    "as_kernel_fault", "classify", "classify_code", "compile_failure", "first_error_line", "hang", "launch_limits",
    "side_name",
]

ILLEGAL_ADDRESS = "illegal address"
MISALIGNED_ADDRESS = "misaligned address"
TRAP = "trap"
OUT_OF_RESOURCES = "out of resources"
HANG = "hang"
LOAD_FAILURE = "load failure"
COMPILE_FAILURE = "compile failure"
OUT_OF_MEMORY = "out of memory"
CUDA_ERROR = "cuda error"
CLASSES = (ILLEGAL_ADDRESS, MISALIGNED_ADDRESS, TRAP, OUT_OF_RESOURCES, HANG, LOAD_FAILURE, COMPILE_FAILURE,
           OUT_OF_MEMORY, CUDA_ERROR)

# CUresult values (cuda.h) -> (class, sticky). Sticky per the CUDA driver API documentation: "the process
# is left in an inconsistent state and any further CUDA work will return the same error".
_CODES: dict[int, tuple[str, str, bool]] = {
    1: ("CUDA_ERROR_INVALID_VALUE", CUDA_ERROR, False),  # at launch: see launch_limits() for the resource
    2: ("CUDA_ERROR_OUT_OF_MEMORY", OUT_OF_MEMORY, False),
    200: ("CUDA_ERROR_INVALID_IMAGE", LOAD_FAILURE, False),
    209: ("CUDA_ERROR_NO_BINARY_FOR_GPU", LOAD_FAILURE, False),
    218: ("CUDA_ERROR_INVALID_PTX", LOAD_FAILURE, False),
    221: ("CUDA_ERROR_JIT_COMPILER_NOT_FOUND", LOAD_FAILURE, False),
    222: ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", LOAD_FAILURE, False),
    223: ("CUDA_ERROR_JIT_COMPILATION_DISABLED", LOAD_FAILURE, False),
    300: ("CUDA_ERROR_INVALID_SOURCE", LOAD_FAILURE, False),
    500: ("CUDA_ERROR_NOT_FOUND", LOAD_FAILURE, False),  # kernel name not in the module
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", ILLEGAL_ADDRESS, True),
    701: ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", OUT_OF_RESOURCES, False),
    702: ("CUDA_ERROR_LAUNCH_TIMEOUT", HANG, True),
    710: ("CUDA_ERROR_ASSERT", TRAP, True),
    714: ("CUDA_ERROR_HARDWARE_STACK_ERROR", TRAP, True),
    715: ("CUDA_ERROR_ILLEGAL_INSTRUCTION", TRAP, True),
    716: ("CUDA_ERROR_MISALIGNED_ADDRESS", MISALIGNED_ADDRESS, True),
    717: ("CUDA_ERROR_INVALID_ADDRESS_SPACE", ILLEGAL_ADDRESS, True),
    718: ("CUDA_ERROR_INVALID_PC", TRAP, True),
    719: ("CUDA_ERROR_LAUNCH_FAILED", TRAP, True),
    720: ("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", OUT_OF_RESOURCES, False),
    999: ("CUDA_ERROR_UNKNOWN", CUDA_ERROR, True),
}
_BY_NAME = {name: (code, cls, sticky) for code, (name, cls, sticky) in _CODES.items()}
_NAME_RE = re.compile(r"\bCUDA_ERROR_[A-Z0-9_]+\b")

SIDE_NAMES = {"wf": "WarpForth", "cuda": "CUDA"}


@attrs.frozen
class Fault:
    """A classified failure: ``kind`` is one of :data:`CLASSES`; ``sticky`` means the context is dead."""

    kind: str
    sticky: bool
    code: int | None = None  # CUresult value, when the driver gave one
    name: str = ""  # CUresult name, e.g. CUDA_ERROR_ILLEGAL_ADDRESS, or the compiler's words
    detail: str = ""  # what else is known (the resource over its limit, the deadline, ...)

    def describe(self) -> str:
        parts = [self.kind]
        if self.name:
            parts.append(f"({self.name})")
        text = " ".join(parts)
        return f"{text}: {self.detail}" if self.detail else text


def classify_code(code: int | str) -> Fault:
    """Map a CUresult value (``700``) or name (``"CUDA_ERROR_ILLEGAL_ADDRESS"``) to a :class:`Fault`."""
    if isinstance(code, str):
        found = _BY_NAME.get(code)
        if found is None:
            return Fault(CUDA_ERROR, True, None, code)
        value, kind, sticky = found
        return Fault(kind, sticky, value, code)
    value = int(code)
    if value in _CODES:
        name, kind, sticky = _CODES[value]
        return Fault(kind, sticky, value, name)
    return Fault(CUDA_ERROR, True, value, f"CUresult {value}")


def classify(exc: BaseException) -> Fault | None:
    """The :class:`Fault` behind a driver exception, or None when ``exc`` carries no CUDA error.

    Reads numba-cuda's ``CudaAPIError.code`` (a ``CUresult`` enum member or an int) and, for cuda.core's
    ``CUDAError`` or anything else, the first ``CUDA_ERROR_*`` name in the message.
    """
    if isinstance(exc, KernelFault):
        return exc.fault
    code = getattr(exc, "code", None)
    if code is not None and type(exc).__name__ == "CudaAPIError":
        name = getattr(code, "name", None)
        try:
            value = int(code)
        except (TypeError, ValueError):
            value = None
        if value is not None:
            fault = classify_code(value)
            return attrs.evolve(fault, name=name) if name and fault.kind == CUDA_ERROR else fault
        if name:
            return classify_code(name)
    m = _NAME_RE.search(str(exc))
    if m:
        return classify_code(m.group(0))
    return None


def side_name(label: str) -> str:
    """``wf`` -> WarpForth, ``wf:head`` -> WarpForth (head), ``cuda`` -> CUDA; other labels unchanged."""
    if label.startswith("wf:"):
        return f"WarpForth ({label[3:]})"
    return SIDE_NAMES.get(label, label)


class KernelFault(WfbenchError):
    """A kernel could not be compiled, loaded, launched or finished: one line, classified.

    ``fault.kind`` is the class, ``side`` the label (``wf``, ``wf:head``, ``cuda``; "" when not known, e.g.
    during interleaved timing), ``config`` ``check`` or ``canonical``. ``sticky`` is True when the CUDA
    context is unusable and the process must be replaced before the next case.
    """

    def __init__(self, case_id: str, config: str, side: str, fault: Fault, action: str = "") -> None:
        self.case_id, self.config, self.side, self.fault = case_id, config, side, fault
        where = str(CaseKey(case_id, config=config))
        who = f" {side_name(side)}" if side else ""
        what = f"{action}: " if action else ""
        super().__init__(f"{where}{who}: {what}{fault.describe()}")

    @property
    def kind(self) -> str:
        return self.fault.kind

    @property
    def sticky(self) -> bool:
        return self.fault.sticky


def as_kernel_fault(exc: BaseException, *, case_id: str, config: str, side: str,
                    action: str = "") -> KernelFault | None:
    """Wrap a driver exception as a :class:`KernelFault`, or None when it is not a CUDA error."""
    if isinstance(exc, KernelFault):
        return exc
    fault = classify(exc)
    if fault is None:
        return None
    return KernelFault(case_id, config, side, fault, action)


def hang(case_id: str, config: str, side: str, seconds: float) -> KernelFault:
    """The fault of a kernel (or worker) that did not finish within its deadline."""
    return KernelFault(case_id, config, side, Fault(HANG, True, detail=f"did not finish within {seconds:g} s"))


def first_error_line(diagnostic: str) -> str:
    """The first line of a compiler's output that says ``error`` (else its first non-empty line)."""
    lines = [ln.strip() for ln in diagnostic.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\berror\b", ln, re.IGNORECASE):
            return ln
    return lines[0] if lines else "(no output)"


class CompileFault(KernelFault, CompileError):
    """A source that did not compile (a :class:`KernelFault` of class ``compile failure``)."""


def compile_failure(case_id: str, config: str, side: str, compiler: str, diagnostic: str) -> CompileFault:
    """A source that did not compile, with the compiler's first error line."""
    return CompileFault(case_id, config, side, Fault(COMPILE_FAILURE, False, name=compiler,
                                                     detail=first_error_line(diagnostic)))


def launch_limits(*, threads: int, dynamic_shared: int, registers: int, static_shared: int, max_threads: int,
                  max_shared_per_block: int, max_registers_per_block: int) -> str:
    """Which per-block resource a launch asks too much of ("" when none is over): threads, registers, shared."""
    over = []
    if threads > max_threads:
        over.append(f"{threads} threads per block, the kernel allows {max_threads}")
    if registers * threads > max_registers_per_block:
        over.append(f"{registers} registers x {threads} threads > {max_registers_per_block} per block")
    if static_shared + dynamic_shared > max_shared_per_block:
        over.append(f"{static_shared + dynamic_shared} bytes of shared memory > {max_shared_per_block} per block")
    return "; ".join(over)
