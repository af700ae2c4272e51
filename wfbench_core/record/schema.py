"""The result schema: the frozen records of a run and what each field may hold.

Bump :data:`SCHEMA_VERSION` on any incompatible change; readers refuse versions they do not know. The records
are read and written through :mod:`wfbench_core.record.results`, which offers every name here.
"""

from __future__ import annotations

from typing import Any

import attrs

from wfbench_core.case import CaseKey
from wfbench_core.record.ceiling_record import (  # the ceiling record is part of the schema
    CEILING_ERROR,
    CEILING_FAILED,
    CEILING_IMPLAUSIBLE,
    CEILING_MISSING,
    CEILING_OK,
    CEILING_STATUSES,
    CeilingResult,
)
from wfbench_core.record.status import (  # part of the schema
    ERROR,
    FAILED,
    FAILING,
    IMPLAUSIBLE,
    OK,
    STATUSES,
    UNSTABLE,
)
from wfbench_core.record.timing_record import (
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

SCHEMA_VERSION = 6  # wfbench_core.record.result_rules.UPGRADES reads the older ones

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CEILING_ERROR",
    "CEILING_FAILED",
    "CEILING_IMPLAUSIBLE",
    "CEILING_MISSING",
    "CEILING_OK",
    "CEILING_STATUSES",
    "ERROR",
    "FAILED",
    "FAILING",
    "IMPLAUSIBLE",
    "MODE_AA",
    "MODE_PAIRED",
    "OK",
    "SCHEMA_VERSION",
    "STATUSES",
    "TIMING_COLD_L2",
    "TIMING_EVENTS",
    "TIMING_GRAPH",
    "TIMING_MODES",
    "UNSTABLE",
    "CaseKey",
    "CaseResult",
    "CeilingResult",
    "Check",
    "CompileRecord",
    "CompilerInfo",
    "Costs",
    "Environment",
    "KernelAttrs",
    "KernelProfile",
    "NvmlSummary",
    "RunResult",
    "Sampled",
    "Sampling",
    "SideDiagnostics",
    "SideStats",
    "Source",
    "Timing",
    "TimingProtocol",
    "setting",
    "setting_problem",
    "sm_arch",
]

# timing modes: the paired WarpForth/CUDA comparison, or the CUDA PTX against itself (the method's floor)
MODE_PAIRED = "paired"
MODE_AA = "aa"



def setting(default: Any, help: str, *, flag: str = "", low: float | None = None,
            high: float | None = None, choices: tuple[str, ...] = ()) -> Any:
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

    warmup_s: float = setting(1.0, "Busy-GPU warm-up before timing each case (a case timed right after another "
                                   "is credited most of it: docs/timing.md).", flag="--warmup-s", low=0, high=600)
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
    mix: dict[str, int] = attrs.Factory(dict)  # class -> count (wfbench_core.compiling.diagnostics.CLASSES, plus tags)
    sass_sha256: str = ""  # of the normalised SASS: equal hashes mean identical machine code
    loop_instructions: int = 0  # length of the innermost loop (0: straight-line code)
    loop_mix: dict[str, int] = attrs.Factory(dict)
    # resources as the cubin holds them (wfbench_core.compiling.code_identity): cuobjdump -res-usage and the kernel's
    # launch attributes (.nv.info: max threads / launch bounds, register cap ...); part of the code's identity
    local_bytes: int = 0
    max_threads: int = 0  # threads per block the launch bounds allow (0: unbounded)
    resources: dict[str, int] = attrs.Factory(dict)
    launch_attrs: tuple[str, ...] = ()
    # instructions, other than LDL/STL, that form a stack address (wfbench_core.compiling.stack_tax); None in
    # results written before it was counted
    stack_addressing: int | None = None
    data_sha256: str = ""  # of the cubin's initialized constant and global data ("" when it has none)


@attrs.frozen
class KernelProfile:
    """Nsight Compute metrics of one launch of one side's kernel at the canonical size."""

    ncu_version: str = ""
    duration_us: float = 0.0
    dram_pct: float | None = None  # DRAM throughput, % of peak
    l2_pct: float | None = None  # L2 (lts) throughput, % of peak
    l1_pct: float | None = None  # L1/TEX throughput, % of peak
    sm_pct: float | None = None  # SM (compute) throughput, % of peak
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    instructions: int | None = None  # warp instructions executed
    registers: int | None = None
    dram_bytes: int | None = None  # read + write
    stalls: dict[str, float] = attrs.Factory(dict)  # stall reason -> warps stalled per issued instruction
    clock_control: str = ""  # ncu --clock-control used
    local_load_bytes: int | None = None  # local memory loaded through L1 (wfbench_core.gpu.profile.LOCAL_METRICS)
    local_store_bytes: int | None = None  # and stored; None: not measured (profiles from before schema 5)


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
    placement: int | None = None  # a check of the timed buffers: which placement and buffer set failed
    buffer_set: int | None = None


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
    # inputs and references made ahead in a helper process (wfbench_core.gpu.host_prep), inputs_s and
    # reference_s spent there: how long the worker waited for them (None: made in the worker itself)
    prep_wait_s: float | None = None


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
    compile_wf: CompileRecord | None = None
    compile_cuda: CompileRecord | None = None
    attrs_wf: KernelAttrs | None = None
    attrs_cuda: KernelAttrs | None = None
    checks: tuple[Check, ...] = ()
    timing: Timing | None = None
    costs: Costs = Costs()
    diag_wf: SideDiagnostics | None = None  # static diagnostics of each side (wfbench_core.compiling.diagnostics)
    diag_cuda: SideDiagnostics | None = None
    profile_wf: KernelProfile | None = None  # Nsight Compute metrics, when profiled (wfbench explain --profile)
    profile_cuda: KernelProfile | None = None
    # the library ceiling, with --ceiling (wfbench_core.ceiling): apart from ``timing``, never in the gap
    ceiling: CeilingResult | None = None

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
    copy_gbps: float | None = None  # device-to-device copy, read+write bytes, measured in the same run
    fp64_peak_gflops: float | None = None  # f64 add/multiply peak, measured in the same run (roofline)
    default_power_limit_w: float = 0.0  # the board's default power limit (power_limit_w is the enforced one)
    depressed_host: bool = False  # memory clock or power below the board's healthy band: deltas not trusted
    depressed_why: str = ""
    extra: dict[str, str] = attrs.Factory(dict)  # transport facts: instance id, $/h, host key …


def sm_arch(compute_capability: str | tuple[int, int]) -> str:
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
