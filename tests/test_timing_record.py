"""The timing record goes whole from the timer to the result file, with ``--repeat`` too (no GPU needed)."""

from __future__ import annotations

from typing import Any

import attrs

from wfbench_core.record.results import OK, CaseResult, NvmlSummary, SideStats, Timing

STATS = SideStats(2.0, 2.0, 0.0, 0.0, 4, (2.0, 2.0, 2.0, 2.0))
NVML = NvmlSummary(n=3, sm_mhz_min=1900, sm_mhz_median=1980, sm_mhz_max=1980)
THROTTLED = attrs.evolve(NVML, reasons=("sw_power_cap",), power_throttled=True)


# fields the record gained after --repeat first pooled it (left out where Timing lacks them, so that the test
# below runs, and fails, on code from before them)
LATER = {"launch_floor_us": (lambda k: 0.5 + k, 1.5), "placement_checks": (lambda k: 4, 12),
         "pair_sm_mhz": (lambda k: (1980.0 - k,) * 4, (1980.0,) * 4 + (1979.0,) * 4 + (1978.0,) * 4),
         "clock_retakes": (lambda k: 2, 6), "buffer_bytes": (lambda k: 4096, 4096),
         "pair_side_mhz": (lambda k: ((1980.0 - k, 1980.0 - k),) * 4,
                           ((1980.0, 1980.0),) * 4 + ((1979.0, 1979.0),) * 4 + ((1978.0, 1978.0),) * 4),
         "warmup_carried_s": (lambda k: 0.9, 0.9 * 3),
         "stack_bytes": (lambda k: (2048, 3072), (2048, 3072) * 3)}


def _pass(k: int, nvml: NvmlSummary) -> CaseResult:
    """One --repeat pass of a case whose record has a non-default value in every field."""
    later = {name: value(k) for name, (value, _) in LATER.items() if name in attrs.fields_dict(Timing)}
    timing = Timing(launches_per_sample=64, warmup_busy_s=1.0 + k, order=("wf", "cuda", "wf", "cuda"),
                    clocks_sm_mhz=(1980 + k,), timing_mode="graph", placement_of=(0, 0, 1, 1),
                    placement_seed=7 + k, stop_reason=("target", "budget")[k % 2], short_retakes=1, buffer_sets=8,
                    gate_retakes=2, nvml=nvml, warpforth=attrs.evolve(STATS, launches=16),
                    cuda=attrs.evolve(STATS, launches=64), gap=1.0, **later)
    return CaseResult(id="c", version=1, priority="P0", fingerprint="f", status=OK, timing=timing)


def test_repeat_keeps_every_field_of_the_timing_record() -> None:
    from wfbench_core.stats import PROCESS_STRIDE
    from wfbench_core.run.executor import merge_repeats

    (merged,) = merge_repeats([[_pass(0, NVML)], [_pass(1, THROTTLED)], [_pass(2, NVML)]], 0.03)
    t = merged.timing
    assert t is not None and merged.status == OK
    pooled = {name: getattr(t, name) for name in (
        "launches_per_sample", "warmup_busy_s", "order", "clocks_sm_mhz", "timing_mode", "placement_of",
        "placement_seed", "stop_reason", "short_retakes", "buffer_sets", "gate_retakes", "nvml")}
    assert pooled == {
        "launches_per_sample": 64, "warmup_busy_s": 1.0 + 2.0 + 3.0, "order": ("wf", "cuda") * 6,
        "clocks_sm_mhz": (1980, 1981, 1982), "timing_mode": "graph", "placement_of": tuple(k * PROCESS_STRIDE + w for k in range(3) for w in (0, 0, 1, 1)),
        "placement_seed": 7, "stop_reason": "target", "short_retakes": 3, "buffer_sets": 8, "gate_retakes": 6,
        "nvml": THROTTLED,
    }
    later = {name: value for name, (_, value) in LATER.items() if name in attrs.fields_dict(Timing)}
    assert {name: getattr(t, name) for name in later} == later
    assert t.throttled and t.placements == 6 and t.repeat_gaps == (1.0, 1.0, 1.0) and t.warpforth.n == 12
    assert (t.warpforth.launches, t.cuda.launches) == (16, 64)  # each side's own launches per sample


def test_every_field_of_the_record_has_a_pooling_rule_and_is_set_above() -> None:
    from wfbench_core.gpu.outcome import POOL
    from wfbench_core.record.timing_record import Sampling

    names = [f.name for f in attrs.fields(Sampling)]
    assert sorted(POOL) == sorted(names)  # a new field needs its rule for --repeat
    one = _pass(0, NVML).timing
    assert [n for n in names if getattr(one, n) == attrs.fields_dict(Sampling)[n].default] == []


class _RecordTimer:
    """A timer whose record has a non-default value in every field (seed and samples vary by call)."""

    calls = 0

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol

    def environment(self) -> Any:
        from wfbench_core.record.results import Environment

        return Environment(gpu_name="Fake GPU", gpu_uuid="GPU-fake", compute_capability="9.0")

    def copy_gbps(self) -> None:
        return None

    def measure(self, case: Any, sides: Any, *, reference_label: str) -> Any:
        from wfbench_core.contracts import Measurement
        from wfbench_core.record.results import Costs, Sampled
        from wfbench_core.record.timing_record import sampling_fields

        _RecordTimer.calls += 1
        k = _RecordTimer.calls
        record = attrs.evolve(_pass(k, NVML).timing, stop_reason="samples", launch_floor_us=0.5)
        sampled = Sampled(samples_us={s.label: (3.0 + k if s.label.startswith("wf") else 2.0,) * 4 for s in sides},
                          **sampling_fields(record))
        return Measurement(passed=True, message="", checks=(), kernel_attrs={}, costs=Costs(), sampled=sampled)


def test_a_repeat_run_stores_every_field_the_timer_recorded(prebuilt_bundle) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core import hookimpl
    from wfbench_core.stats import PROCESS_STRIDE
    from wfbench_core.run.executor import execute
    from wfbench_core.discover.registry import Registry
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import RunResult, dumps, loads

    class Plugin:
        @hookimpl(tryfirst=True)
        def wfbench_make_timer(self, protocol):  # type: ignore[no-untyped-def]
            return _RecordTimer(protocol)

    _RecordTimer.calls = 0
    bundle = prebuilt_bundle(case_ids=("scale_i64",))
    run = loads(dumps(execute(bundle, registry=Registry.load(plugins=[Plugin()]), request=ExecuteRequest(repeat=2))),
                RunResult)
    (case,) = run.cases
    t = case.timing
    assert t is not None and (t.buffer_sets, t.gate_retakes, t.short_retakes) == (8, 4, 2)
    assert (t.launches_per_sample, t.timing_mode, t.placement_seed, t.clocks_sm_mhz) == (64, "graph", 8, (1981, 1982))
    assert t.warmup_busy_s == 2.0 + 3.0 and t.placement_of == (0, 0, 1, 1, PROCESS_STRIDE, PROCESS_STRIDE, PROCESS_STRIDE + 1, PROCESS_STRIDE + 1) and t.nvml == NVML
    assert t.repeat_gaps == (2.0, 2.5) and t.gap == (4.0 + 5.0) / 2 / 2.0
