"""The result schema: frozen records, one cattrs converter, JSON in and out.

Bump :data:`SCHEMA_VERSION` on any incompatible change; readers refuse versions they do not know.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Optional

import attrs
import cattrs
from cattrs.preconf.json import make_converter

from wfbench_core.errors import WfbenchError

SCHEMA_VERSION = 1

# status of a case in a run
OK = "ok"  # correct, timed, stable
UNSTABLE = "unstable"  # correct and timed, but MAD/median above the threshold on a side
FAILED = "failed"  # a correctness check failed: not timed
ERROR = "error"  # could not compile, load or launch
STATUSES = (OK, UNSTABLE, FAILED, ERROR)

# timing modes: the paired WarpForth/CUDA comparison, or the CUDA PTX against itself (the method's floor)
MODE_PAIRED = "paired"
MODE_AA = "aa"


@attrs.frozen
class Protocol:
    """How samples are taken; stored with every run."""

    warmup_s: float = 1.0
    min_sample_ms: float = 50.0
    samples: int = 30
    unstable_noise: float = 0.03
    max_case_s: float = 60.0  # a case whose timing phase would take longer is refused (ERROR), not cut short
    suite_budget_s: float = 0.0  # 0 = none; cases not started within it end as ERROR "over budget"


@attrs.frozen
class CompilerInfo:
    """One compiler as it was used: version and the exact command or option set."""

    kind: str  # "warpforthc" | "nvcc" | "nvrtc"
    version: str
    flags: tuple[str, ...] = ()
    llvm_version: str = ""
    arch_flag: bool = False  # warpforthc: whether it accepted --arch
    binary_sha256: str = ""  # warpforthc: identifies the build when it reports no version


@attrs.frozen
class CompileRecord:
    """One source compiled to PTX."""

    compiler: str
    command: tuple[str, ...]
    source_sha256: str
    ptx_sha256: str
    ptx_target: str
    wall_s: float


@attrs.frozen
class KernelAttrs:
    """What the driver says about a loaded kernel."""

    registers: int
    local_bytes: int
    shared_bytes: int
    max_threads: int


@attrs.frozen
class SideStats:
    """Per-launch kernel time of one side, in microseconds, and the raw per-sample values."""

    median_us: float
    p95_us: float
    mad_us: float
    noise: float  # MAD / median
    n: int
    samples_us: tuple[float, ...]


@attrs.frozen
class Timing:
    """The paired samples of one case: sample i of each side was taken back to back."""

    launches_per_sample: int
    warmup_s: float
    warpforth: SideStats
    cuda: SideStats
    gap: float  # median WarpForth / median CUDA
    order: tuple[str, ...]  # which side went first in each pair: "wf" or "cuda"
    clocks_sm_mhz: tuple[int, ...] = ()  # SM clock sampled during timing
    gbps_wf: Optional[float] = None
    gbps_cuda: Optional[float] = None
    gflops_wf: Optional[float] = None
    gflops_cuda: Optional[float] = None
    # MAD/median of the per-pair ratios WarpForth/CUDA: what pairing leaves of the noise, since a clock dip
    # that slows both samples of a pair cancels in their ratio
    pair_ratio_noise: Optional[float] = None


@attrs.frozen
class Check:
    """One correctness comparison of one output."""

    config: str  # "check" | "canonical"
    side: str  # "wf" | "cuda" | "wf~cuda" (the two sides against each other)
    what: str  # "reference" | "idempotent" | "cross" | "after-timing"
    output: str
    passed: bool
    max_abs_err: float
    max_rel_err: float
    mismatches: int
    total: int


@attrs.frozen
class Costs:
    """Everything that is not kernel time, reported apart (seconds)."""

    compile_wf_s: float = 0.0
    compile_cuda_s: float = 0.0
    load_s: float = 0.0
    inputs_s: float = 0.0
    reference_s: float = 0.0
    alloc_copy_s: float = 0.0
    correctness_s: float = 0.0
    timing_s: float = 0.0


@attrs.frozen
class CaseResult:
    """One case in one run."""

    id: str
    version: int
    priority: str
    fingerprint: str
    status: str
    mode: str = MODE_PAIRED
    message: str = ""
    metric: str = "bandwidth"
    work_bytes: int = 0
    work_flops: int = 0
    cuda_source_sha256: str = ""
    warpforth_source_sha256: str = ""
    plugin: str = ""
    compiler_label: str = ""  # in a base/head run: which warpforthc ("base", "head"); "" otherwise
    compile_wf: Optional[CompileRecord] = None
    compile_cuda: Optional[CompileRecord] = None
    attrs_wf: Optional[KernelAttrs] = None
    attrs_cuda: Optional[KernelAttrs] = None
    checks: tuple[Check, ...] = ()
    timing: Optional[Timing] = None
    costs: Costs = Costs()

    @property
    def timed(self) -> bool:
        return self.timing is not None and self.status in (OK, UNSTABLE)


@attrs.frozen
class Environment:
    """The GPU host and toolchain as seen during the run."""

    gpu_name: str = ""
    gpu_uuid: str = ""
    compute_capability: str = ""  # "9.0"
    sm_count: int = 0
    driver_version: str = ""
    cuda_driver_version: str = ""  # what the driver supports, e.g. "13.0"
    sm_clock_mhz: int = 0
    mem_clock_mhz: int = 0
    max_sm_clock_mhz: int = 0
    max_mem_clock_mhz: int = 0
    power_limit_w: float = 0.0
    temperature_c: int = 0
    l2_bytes: int = 0
    memory_bytes: int = 0
    host: str = ""
    platform: str = ""
    python: str = ""
    numba_cuda_version: str = ""
    cuda_core_version: str = ""
    copy_gbps: Optional[float] = None  # device-to-device copy, read+write bytes, measured in the same run
    extra: dict[str, str] = attrs.Factory(dict)  # transport facts: instance id, $/h, host key …


def sm_arch(compute_capability: "str | tuple[int, int]") -> str:
    """``"9.0"`` or ``(9, 0)`` -> ``"sm_90"``: the one spelling of a compute capability as a PTX target."""
    if isinstance(compute_capability, tuple):
        major, minor = compute_capability
    else:
        major_s, _, minor_s = compute_capability.partition(".")
        major, minor = int(major_s), int(minor_s or 0)
    return f"sm_{major}{minor}"


@attrs.frozen
class Source:
    """What was benchmarked: the tree and the CI run, when known."""

    git_commit: str = ""
    git_repo: str = ""
    ci_run_id: str = ""
    ci_run_url: str = ""
    label: str = ""


@attrs.frozen
class RunResult:
    """One run of wfbench on one GPU."""

    schema_version: int
    suite_version: int
    wfbench_version: str
    created: str  # ISO 8601, UTC
    mode: str
    protocol: Protocol
    environment: Environment
    warpforthc: CompilerInfo
    cuda_compiler: CompilerInfo
    cases: tuple[CaseResult, ...]
    source: Source = Source()
    wall_s: float = 0.0
    compilers: dict[str, CompilerInfo] = attrs.Factory(dict)  # base/head run: label -> warpforthc
    # False while the run is in progress or when it was cut short: the file then holds the cases finished so far
    complete: bool = True

    def case(self, case_id: str, compiler_label: str = "") -> CaseResult:
        for c in self.cases:
            if c.id == case_id and c.compiler_label == compiler_label:
                return c
        raise KeyError(case_id)


@functools.lru_cache(maxsize=1)
def converter() -> cattrs.Converter:
    """The one converter for every stored or sent record."""
    conv = make_converter(forbid_extra_keys=True)
    return conv


def dumps(record: Any) -> str:
    return json.dumps(converter().unstructure(record), indent=1, sort_keys=False, allow_nan=False) + "\n"


def loads(text: str, cls: type = RunResult, *, where: str = "result") -> Any:
    """A record from JSON text; a :class:`RunResult` goes through :func:`parse_result`, the one result loader."""
    if cls is RunResult:
        return parse_result(text, where)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WfbenchError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}); is the file complete?") from None
    return _structure(data, cls, where, f"not a wfbench {cls.__name__}")


def _structure(data: Any, cls: type, where: str, what: str) -> Any:
    try:
        return converter().structure(data, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError, AttributeError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            errors = cattrs.transform_error(exc)
            detail = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
        else:
            detail = str(exc) or type(exc).__name__
        raise WfbenchError(f"{where}: {what} ({detail})") from None


def _not_a_result(where: str, why: str) -> WfbenchError:
    return WfbenchError(f"{where}: not a wfbench result ({why})")


def _iso_time(value: str) -> bool:
    import datetime

    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def parse_result(data: str | bytes, where: str = "result") -> RunResult:
    """The one result loader: every command that reads a result file reads it through here.

    Whatever the bytes are (binary, not UTF-8, truncated, JSON of another tool, a result with impossible
    values), the answer is a :class:`RunResult` or one line, ``WHERE: not a wfbench result (why)``.
    """
    if isinstance(data, bytes):
        if b"\x00" in data:
            raise _not_a_result(where, "binary data, not JSON text")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_a_result(where, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}") \
                from None
    else:
        text = data
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise _not_a_result(where, "empty file")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            end = text.count("\n", 0, len(text.rstrip())) + 1
            why = f"truncated JSON: it ends at line {end} before the document is complete"
        else:
            why = f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        raise _not_a_result(where, why) from None
    except RecursionError:
        raise _not_a_result(where, "JSON nested too deeply") from None
    if not isinstance(raw, dict):
        raise _not_a_result(where, f"a JSON {type(raw).__name__.replace('dict', 'object')}, not an object")
    if "schema_version" not in raw or "cases" not in raw:
        keys = ", ".join(sorted(map(str, raw))[:5]) or "none"
        raise _not_a_result(where, f"no schema_version or cases; its keys: {keys}")
    found = raw["schema_version"]
    if not isinstance(raw["cases"], list):
        raise _not_a_result(where, f"'cases' is a JSON {type(raw['cases']).__name__.replace('dict', 'object')}, "
                                   f"not a list")
    if found != SCHEMA_VERSION:
        raise WfbenchError(f"{where}: a wfbench result of schema version {found!r}; this wfbench reads version "
                           f"{SCHEMA_VERSION}; use the wfbench version that wrote it")
    result: RunResult = _structure(raw, RunResult, where, "not a wfbench result")
    if not _iso_time(result.created):
        raise _not_a_result(where, f"'created' is {result.created!r}, not an ISO 8601 time")
    for case in result.cases:
        if case.status not in STATUSES:
            raise _not_a_result(where, f"case {case.id!r} has status {case.status!r}, not one of "
                                       f"{', '.join(STATUSES)}")
        if case.timing is not None and not (case.timing.gap > 0 and case.timing.cuda.median_us > 0):
            raise _not_a_result(where, f"case {case.id!r} has a gap of {case.timing.gap!r}; times must be positive")
    return result


def load_result(path: str | Path) -> RunResult:
    """Read a result file (see :func:`parse_result`)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except IsADirectoryError:
        raise WfbenchError(f"{p}: a directory, not a result file") from None
    except OSError as exc:
        raise WfbenchError(f"{p}: cannot read ({exc.strerror})") from None
    return parse_result(data, str(p))


def write_result(result: RunResult, path: str | Path) -> None:
    """Write atomically: a reader never sees half a file."""
    from wfbench_core.fsutil import atomic_write

    atomic_write(Path(path), dumps(result))
