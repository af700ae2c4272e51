"""The result schema: frozen records, one cattrs converter, JSON in and out.

Bump :data:`SCHEMA_VERSION` on any incompatible change; readers refuse versions they do not know.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, Optional

import attrs
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import cattrs

from wfbench_core.case import CaseKey
from wfbench_core.errors import WfbenchError
from wfbench_core.record.timing_record import (  # noqa: F401 - the timing record is part of the schema
    TIMING_COLD_L2,
    TIMING_EVENTS,
    TIMING_GRAPH,
    TIMING_MODES,
    NvmlSummary,
    Sampled,
    Sampling,
    SideStats,
    Timing,
)

from wfbench_core.record.ceiling_record import (  # noqa: F401 - the ceiling record is part of the schema
    CEILING_ERROR, CEILING_FAILED, CEILING_IMPLAUSIBLE, CEILING_MISSING, CEILING_OK, CEILING_STATUSES, CeilingResult,
)

SCHEMA_VERSION = 6  # wfbench_core.record.result_rules.UPGRADES reads the older ones

from wfbench_core.record.status import (  # noqa: E402,F401 - part of the schema
    ERROR, FAILED, FAILING, IMPLAUSIBLE, OK, STATUSES, UNSTABLE,
)

# timing modes: the paired WarpForth/CUDA comparison, or the CUDA PTX against itself (the method's floor)
MODE_PAIRED = "paired"
MODE_AA = "aa"



def setting(default: Any, help: str, *, flag: str = "", low: Optional[float] = None,
            high: Optional[float] = None, choices: tuple[str, ...] = ()) -> Any:
    """A protocol setting: its default, help text, command-line flag and allowed range, in one place.

    The CLI (``wfbench run/execute``) and the pytest plugin (``--wfbench-…``) make their options from
    these fields; the range is also checked whenever a protocol is constructed or loaded.
    """

    def in_range(instance: Any, attribute: Any, value: Any) -> None:
        problem = setting_problem(attribute, value, flag or attribute.name)
        if problem:
            raise ValueError(problem)

    return attrs.field(default=default, validator=in_range,
                       metadata={"help": help, "flag": flag, "low": low, "high": high, "choices": choices})


def setting_problem(field: Any, value: Any, name: str) -> str:
    """Why ``value`` is out of a setting's range, naming it ``name``; "" when it is fine."""
    low, high, choices = field.metadata.get("low"), field.metadata.get("high"), field.metadata.get("choices")
    if choices:
        return "" if value in choices else f"{name} must be one of {', '.join(choices)}, not {value!r}"
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"at least {low:g}" if high is None else f"between {low:g} and {high:g}"
        return f"{name} must be {bounds}, not {value!r}"
    return ""


@attrs.frozen
class TimingProtocol:
    """How samples are taken (the timing protocol); stored with every run."""

    warmup_s: float = setting(1.0, "Busy-GPU warm-up before timing each case.", flag="--warmup-s", low=0, high=600)
    min_sample_ms: float = setting(50.0, "Each sample lasts at least this long.", flag="--min-sample-ms",
                                   low=1, high=10_000)
    samples: int = setting(60, "Paired samples per case at most (adaptive stopping may take fewer).",
                           flag="--samples", low=5, high=10_000)
    unstable_noise: float = setting(0.03, "A case whose MAD/median exceeds this on a side is marked unstable.",
                                    flag="--unstable-noise", low=0, high=1)
    max_case_s: float = setting(60.0, "A case whose timing phase would take longer is refused (ERROR), not cut "
                                "short.", flag="--max-case-s", low=1)
    suite_budget_s: float = setting(0.0, "Suite time budget on the GPU host (0 = none); cases left when it is "
                                    "spent end as ERROR.", flag="--budget-s", low=0)
    timing_mode: str = setting(TIMING_EVENTS, "How a sample is timed: events (back-to-back launches between two "
                               "events), graph (the launches replayed as a CUDA graph, for kernels of a few us) "
                               "or cold-l2 (L2 flushed before every launch, each launch timed alone).",
                               flag="--timing-mode", choices=TIMING_MODES)
    placements: int = setting(30, "Fresh buffer placements a case's samples are spread over, in blocks of "
                              "equal size (1 = one placement, at offset 0).", flag="--placements", low=1, high=1000)
    rotation: int = setting(8, "Buffer sets a sample's launches rotate over inside each placement, where the "
                            "cache state allows (a power of two; 1 = one set).", flag="--rotation", low=1, high=64)
    min_samples: int = setting(30, "Adaptive stopping looks at the gap's interval only from this many pairs on.",
                               flag="--min-samples", low=2, high=10_000)
    target_halfwidth: float = setting(0.0025, "Stop sampling a case once the gap's 95 % interval half-width is "
                                      "below this (0 = never).", flag="--target-halfwidth", low=0, high=1)
    case_budget_s: float = setting(8.0, "Stop sampling a case after this much sampling time (0 = none).",
                                   flag="--case-budget-s", low=0)


@attrs.frozen
class CompilerInfo:
    """One compiler as it was used: version and the exact command or option set."""

    kind: str  # "warpforthc" | "nvcc" | "nvrtc"
    version: str
    flags: tuple[str, ...] = ()
    llvm_version: str = ""
    arch_flag: bool = False  # warpforthc: whether it accepted --arch
    binary_sha256: str = ""  # warpforthc: identifies the build when it reports no version
    # warpforthc built by wfbench (--warpforth): the WarpForth tree it was built from, and how
    git_repo: str = ""
    git_commit: str = ""
    git_dirty: bool = False  # built from a working tree with changes against git_commit
    source_id: str = ""  # the commit's git tree id, or a hash of the dirty working tree's files
    recipe: str = ""  # toolchain and the changes made to the scratch copy


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
class SideDiagnostics:
    """Static diagnostics of one side's kernel for one architecture (``ptxas -v`` and the SASS), no GPU needed."""

    arch: str  # "sm_90"
    kernel: str
    ptxas_version: str = ""
    registers: int = 0
    spill_stores: int = 0  # bytes
    spill_loads: int = 0  # bytes
    stack_frame: int = 0  # bytes
    shared_static: int = 0  # bytes per block
    shared_dynamic: int = 0  # bytes per block, from the case's launch
    constant_bytes: int = 0
    barriers: int = 0
    block_threads: int = 0
    occupancy: float = 0.0  # theoretical: resident warps / the SM's maximum
    occupancy_limiter: str = ""  # "warps" | "blocks" | "registers" | "shared"
    blocks_per_sm: int = 0
    total: int = 0  # SASS instructions, padding excluded
    mix: dict[str, int] = attrs.Factory(dict)  # class -> count (wfbench_core.build.diagnostics.CLASSES, plus tags)
    sass_sha256: str = ""  # of the normalised SASS: equal hashes mean identical machine code
    loop_instructions: int = 0  # length of the innermost loop (0: straight-line code)
    loop_mix: dict[str, int] = attrs.Factory(dict)
    # resources as the cubin holds them (wfbench_core.build.code_identity): cuobjdump -res-usage and the kernel's
    # launch attributes (.nv.info: max threads / launch bounds, register cap ...); part of the code's identity
    local_bytes: int = 0
    max_threads: int = 0  # threads per block the launch bounds allow (0: unbounded)
    resources: dict[str, int] = attrs.Factory(dict)
    launch_attrs: tuple[str, ...] = ()
    # instructions, other than LDL/STL, that form a stack address (wfbench_core.build.stack_tax); None in
    # results written before it was counted
    stack_addressing: Optional[int] = None
    data_sha256: str = ""  # of the cubin's initialized constant and global data ("" when it has none)


@attrs.frozen
class KernelProfile:
    """Nsight Compute metrics of one launch of one side's kernel at the canonical size."""

    ncu_version: str = ""
    duration_us: float = 0.0
    dram_pct: Optional[float] = None  # DRAM throughput, % of peak
    l2_pct: Optional[float] = None  # L2 (lts) throughput, % of peak
    l1_pct: Optional[float] = None  # L1/TEX throughput, % of peak
    sm_pct: Optional[float] = None  # SM (compute) throughput, % of peak
    achieved_occupancy_pct: Optional[float] = None
    theoretical_occupancy_pct: Optional[float] = None
    instructions: Optional[int] = None  # warp instructions executed
    registers: Optional[int] = None
    dram_bytes: Optional[int] = None  # read + write
    stalls: dict[str, float] = attrs.Factory(dict)  # stall reason -> warps stalled per issued instruction
    clock_control: str = ""  # ncu --clock-control used
    local_load_bytes: Optional[int] = None  # local memory loaded through L1 (wfbench_core.gpu.profile.LOCAL_METRICS)
    local_store_bytes: Optional[int] = None  # and stored; None: not measured (profiles from before schema 5)


@attrs.frozen
class Check:
    """One correctness comparison of one output."""

    config: str  # "check" | "canonical"
    side: str  # "wf" | "cuda" | "wf~cuda" (the two sides against each other)
    # "reference" | "idempotent" | "cross" | "after-timing" | "left-by-timing" | "timed-buffers" | "relaunch"
    what: str
    output: str
    passed: bool
    max_abs_err: float  # over the written elements with finite values on both sides
    max_rel_err: float
    mismatches: int  # elements outside tolerance, unwritten ones included
    total: int
    unwritten: int = 0  # elements still holding the poison (NaN / integer sentinel): never written
    nonfinite: int = 0  # written elements that are NaN or inf where the reference is finite
    placement: Optional[int] = None  # a check of the timed buffers: which placement and buffer set failed
    buffer_set: Optional[int] = None


@attrs.frozen
class Costs:
    """Everything that is not kernel time, reported apart (seconds)."""

    compile_wf_s: float = 0.0
    compile_cuda_s: float = 0.0  # nvcc's own wall time; the worker makes these compiles ahead, in parallel
    load_s: float = 0.0
    inputs_s: float = 0.0
    reference_s: float = 0.0
    alloc_copy_s: float = 0.0
    correctness_s: float = 0.0
    timing_s: float = 0.0
    placement_checks_s: float = 0.0  # verifying the timed buffers (part of timing_s)


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
    work_flop_type: str = ""  # what the FLOPs are (wfbench_core.gpu.plausibility.FLOP_TYPES); "" before recorded
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
    diag_wf: Optional[SideDiagnostics] = None  # static diagnostics of each side (wfbench_core.build.diagnostics)
    diag_cuda: Optional[SideDiagnostics] = None
    profile_wf: Optional[KernelProfile] = None  # Nsight Compute metrics, when profiled (wfbench explain --profile)
    profile_cuda: Optional[KernelProfile] = None
    # the library ceiling, with --ceiling (wfbench_core.ceiling): apart from ``timing``, never in the gap
    ceiling: Optional[CeilingResult] = None

    @property
    def key(self) -> CaseKey:
        """The case's identity in this run: its ID and compiler label."""
        return CaseKey(self.id, self.compiler_label)

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
    fp64_peak_gflops: Optional[float] = None  # f64 add/multiply peak, measured in the same run (roofline)
    default_power_limit_w: float = 0.0  # the board's default power limit (power_limit_w is the enforced one)
    depressed_host: bool = False  # memory clock or power below the board's healthy band: deltas not trusted
    depressed_why: str = ""
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
    git_dirty: bool = False  # the tree had uncommitted changes against git_commit (warpforthc built by wfbench)


@attrs.frozen
class RunResult:
    """One run of wfbench on one GPU."""

    schema_version: int
    suite_version: int
    wfbench_version: str
    created: str  # ISO 8601, UTC
    mode: str
    protocol: TimingProtocol
    environment: Environment
    warpforthc: CompilerInfo
    cuda_compiler: CompilerInfo
    cases: tuple[CaseResult, ...]
    source: Source = Source()
    wall_s: float = 0.0
    compilers: dict[str, CompilerInfo] = attrs.Factory(dict)  # base/head run: label -> warpforthc
    # False while the run is in progress: the executor rewrites the file after every case, so a run ended
    # by a signal or a lost connection keeps the cases it finished
    complete: bool = True

    def case(self, case_id: str, compiler_label: str = "") -> CaseResult:
        for c in self.cases:
            if c.id == case_id and c.compiler_label == compiler_label:
                return c
        raise KeyError(case_id)


@functools.lru_cache(maxsize=1)
def converter() -> "cattrs.Converter":
    """The one converter for every stored or sent record (cattrs is imported on first use)."""
    from cattrs.preconf.json import make_converter

    conv = make_converter(forbid_extra_keys=True)
    # strict scalars: cattrs would call str(), int() or float() on whatever a file holds (a list becomes a
    # string, "nan" a float); a stored or sent record has exactly the JSON types it was written with
    for kind, ok in ((str, lambda v: isinstance(v, str)), (bool, lambda v: isinstance(v, bool)),
                     (int, lambda v: isinstance(v, int) and not isinstance(v, bool)),
                     (float, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))):
        conv.register_structure_hook(kind, _strict(kind, ok))
    return conv


def _strict(kind: type, ok: Any) -> Any:
    def structure(value: Any, _: Any) -> Any:
        if not ok(value):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise TypeError(f"expected {'a finite number' if kind is float else kind.__name__}, got {shown}")
        return kind(value)

    return structure


def dumps(record: Any) -> str:
    return json.dumps(converter().unstructure(record), indent=1, sort_keys=False, allow_nan=False) + "\n"


def loads(text: str, cls: type = RunResult, *, where: str = "result") -> Any:
    """A record from JSON text; a :class:`RunResult` goes through :func:`parse_result`, the one result loader."""
    if cls is RunResult:
        return parse_result(text, where)
    from wfbench_core.record.fsutil import parse_json

    return structure(parse_json(text, where, f"a wfbench {cls.__name__}"), cls, where, f"not a wfbench {cls.__name__}")


def structure(data: Any, cls: type, where: str, what: str) -> Any:
    import cattrs

    try:
        return converter().structure(data, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            errors = cattrs.transform_error(exc)
            detail = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
        else:
            detail = str(exc) or type(exc).__name__
        raise WfbenchError(f"{where}: {what} ({detail})") from None


RESULT = "a wfbench result"


def parse_result(data: str | bytes, where: str = "result") -> RunResult:
    """The one result loader: every command that reads a result file reads it through here.

    Whatever the bytes are (binary, not UTF-8, truncated, JSON of another tool, a result with impossible
    values such as unequal or non-positive samples), the answer is a :class:`RunResult` or one line,
    ``WHERE: not a wfbench result (why)`` (see :mod:`wfbench_core.record.result_rules` for what a result must satisfy).
    """
    from wfbench_core.record import result_rules
    from wfbench_core.record.fsutil import decode_text, not_a, parse_json

    text = decode_text(data, where, RESULT, kind="JSON text") if isinstance(data, bytes) else data
    raw = parse_json(text.removeprefix("\ufeff"), where, RESULT)
    if not isinstance(raw, dict):
        raise not_a(where, RESULT, f"a JSON {type(raw).__name__.replace('dict', 'object')}, not an object")
    if raw.get("kind") == "sweep":
        raise not_a(where, RESULT, "a sweep of 'wfbench sweep': sweeps are their own series, never runs; 'wfbench "
                                   "history add' stores them apart and the dashboard draws them")
    if "schema_version" not in raw or "cases" not in raw:
        keys = ", ".join(sorted(map(str, raw))[:5]) or "none"
        raise not_a(where, RESULT, f"no schema_version or cases; its keys: {keys}")
    found = raw["schema_version"]
    if not isinstance(raw["cases"], list):
        raise not_a(where, RESULT, f"'cases' is a JSON {type(raw['cases']).__name__.replace('dict', 'object')}, "
                                   f"not a list")
    while type(found) is int and found in result_rules.UPGRADES:
        raw, found = result_rules.UPGRADES[found](raw), found + 1
    if found != SCHEMA_VERSION:
        raise WfbenchError(f"{where}: a wfbench result of schema version {found!r}; this wfbench reads versions "
                           f"1 to {SCHEMA_VERSION}; use the wfbench version that wrote it")
    result: RunResult = structure(raw, RunResult, where, "not a wfbench result")
    why = result_rules.problem(result)
    if why:
        raise not_a(where, RESULT, why)
    return result


def load_result(path: str | Path) -> RunResult:
    """Read a result file (see :func:`parse_result`)."""
    from wfbench_core.record.fsutil import read_bytes

    return parse_result(read_bytes(path, "a result file"), str(path))


def write_result(result: RunResult, path: str | Path) -> None:
    """Write atomically: a reader never sees half a file."""
    from wfbench_core.record.fsutil import atomic_write

    atomic_write(Path(path), dumps(result))
