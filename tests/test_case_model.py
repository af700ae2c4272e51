"""The case model: validation, templating, deterministic inputs and the fingerprint."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from wfbench_cases.axpy_f64 import CASE as AXPY
from wfbench_core.case import Launch, Param, Tolerance
from wfbench_core.testing import check_case


def test_fingerprint_is_stable_and_differs_between_cases() -> None:
    from wfbench_cases.scale_i64 import CASE as SCALE

    assert AXPY.fingerprint() == AXPY.fingerprint()
    assert len(AXPY.fingerprint()) == 64
    assert AXPY.fingerprint() != SCALE.fingerprint()


@pytest.mark.parametrize(
    "change",
    [
        {"version": 2},
        {"tolerances": {"Z": Tolerance(1e-12)}},
        {"seed": 99},
        {"cuda": AXPY.cuda.replace("a * x[i] + y[i]", "y[i] + a * x[i]")},
        {"warpforth": AXPY.warpforth + "\n"},
        {"sizes": {"check": {"N": 1000, "blocks": 4}, "canonical": AXPY.sizes["canonical"]}},
        {"launch": lambda s: Launch(grid=s["blocks"], block=128)},
        {"params": (Param("A", "f64"), Param("X", "ptr", "float32"), Param("Y", "ptr", "float64"),
                    Param("Z", "ptr", "float64", output=True), Param("N", "i64"))},
        {"inputs": lambda s, rng: {"A": 2.5, "X": rng.standard_normal(s["N"]), "Y": rng.standard_normal(s["N"]),
                                   "N": s["N"]}},
        {"timing_mode": "graph"},
    ],
    ids=["version", "tolerance", "seed", "cuda", "warpforth", "sizes", "geometry", "dtype", "inputs", "mode"],
)
def test_fingerprint_changes_with_anything_that_defines_the_measurement(change: dict) -> None:
    assert attrs.evolve(AXPY, **change).fingerprint() != AXPY.fingerprint()


def test_summary_and_notes_do_not_change_the_fingerprint() -> None:
    assert attrs.evolve(AXPY, summary="x", notes="y").fingerprint() == AXPY.fingerprint()


def test_templates_fill_sizes() -> None:
    wf, cu = AXPY.render("check")
    assert "f64[100003]" in wf and "${" not in wf
    with pytest.raises(ValueError, match="needs size parameter 'M'"):
        attrs.evolve(AXPY, warpforth=AXPY.warpforth + "${M}").render("check")


def test_inputs_are_deterministic_and_typed() -> None:
    a, b = AXPY.make_inputs("check"), AXPY.make_inputs("check")
    assert np.array_equal(a["X"], b["X"]) and a["X"].dtype == np.float64
    assert isinstance(a["N"], np.int64) and isinstance(a["A"], np.float64)
    ref = AXPY.make_reference(a, "check")
    assert np.array_equal(ref["Z"], a["A"] * a["X"] + a["Y"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"id": "Bad-Id"}, "case id"),
        ({"version": 0}, "version"),
        ({"tolerances": {}}, "tolerances must name exactly the outputs"),
        ({"sizes": {"canonical": {"N": 1}}}, "lack configuration"),
        ({"priority": "P9"}, "priority"),
        ({"timing_mode": "wallclock"}, "timing_mode"),
    ],
)
def test_invalid_cases_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        attrs.evolve(AXPY, **kwargs)


def test_param_validation() -> None:
    with pytest.raises(ValueError, match="needs dtype"):
        Param("X", "ptr")
    with pytest.raises(ValueError, match="cannot be an output"):
        Param("N", "i64", output=True)
    with pytest.raises(ValueError, match="kind"):
        Param("N", "u128")


def test_launch_normalizes_dimensions() -> None:
    assert Launch(grid=4, block=(16, 16)).grid == (4, 1, 1)
    assert Launch(grid=4, block=(16, 16)).block == (16, 16, 1)
    with pytest.raises(ValueError):
        Launch(grid=0, block=1)


def test_builtin_cases_pass_the_plugin_author_checks(nvcc) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.discover.registry import Registry

    for case in Registry.load().select():
        check_case(case, compile_cuda_side=True)


def test_the_plugin_author_checks_compile_a_cuda_source_once_when_both_configurations_share_it(  # type: ignore[no-untyped-def]
        nvcc, monkeypatch) -> None:
    from wfbench_core.compiling import compile as comp
    from wfbench_core.discover.registry import Registry

    registry = Registry.load()
    shared, sized = registry.case("axpy_f64"), registry.case("gemv_i8")  # sizes as arguments; sizes in the source
    assert shared.render("check")[1] == shared.render("canonical")[1]
    assert sized.render("check")[1] != sized.render("canonical")[1]
    real, compiled = comp._compile_nvcc, []

    def counted(source, *, case_id, arch, flags):  # type: ignore[no-untyped-def]
        compiled.append(str(case_id))
        return real(source, case_id=case_id, arch=arch, flags=flags)

    monkeypatch.setattr(comp, "_compile_nvcc", counted)
    check_case(shared, compile_cuda_side=True)
    check_case(sized, compile_cuda_side=True)
    assert compiled == ["axpy_f64[check]", "gemv_i8[check]", "gemv_i8[canonical]"]
