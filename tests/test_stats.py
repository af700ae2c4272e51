"""Statistics of samples: median, p95, MAD, noise, gap, stability, geometric mean."""

from __future__ import annotations

import numpy as np
import pytest

from wfbench_core.stats import gap, geomean, is_unstable, summarize


def test_summary_of_known_samples() -> None:
    s = summarize([10.0, 11.0, 12.0, 13.0, 100.0])
    assert s.median_us == 12.0
    assert s.mad_us == 1.0  # |x - 12| = 2,1,0,1,88 -> median 1
    assert s.noise == pytest.approx(1 / 12)
    assert s.p95_us == pytest.approx(np.percentile([10, 11, 12, 13, 100], 95))
    assert s.n == 5 and s.samples_us == (10.0, 11.0, 12.0, 13.0, 100.0)


def test_gap_is_ratio_of_medians_and_stability_uses_both_sides() -> None:
    rng = np.random.default_rng(0)
    wf = summarize(200 * (1 + 0.001 * rng.standard_normal(30)))
    cu = summarize(100 * (1 + 0.001 * rng.standard_normal(30)))
    assert gap(wf, cu) == pytest.approx(wf.median_us / cu.median_us)
    assert 1.99 < gap(wf, cu) < 2.01
    assert not is_unstable(wf, cu, 0.03)
    noisy = summarize(100 * (1 + 0.2 * rng.standard_normal(30)))
    assert is_unstable(wf, noisy, 0.03) and is_unstable(noisy, cu, 0.03)


def test_geomean() -> None:
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)


def test_empty_samples_refused() -> None:
    with pytest.raises(ValueError):
        summarize([])


def test_pair_ratio_noise_cancels_what_both_sides_share() -> None:
    from wfbench_core.stats import pair_ratio_noise

    rng = np.random.default_rng(1)
    dips = 1 + 0.05 * rng.random(40)  # clock changes that slow both samples of a pair alike
    wf = 200 * dips * (1 + 0.0005 * rng.standard_normal(40))
    cu = 100 * dips * (1 + 0.0005 * rng.standard_normal(40))
    assert summarize(wf).noise > 0.005
    assert pair_ratio_noise(wf, cu) < 0.001
    assert pair_ratio_noise([2.0, 4.0, 6.0], [1.0, 2.0, 3.0]) == 0.0


def test_first_minus_second_isolates_the_position_effect() -> None:
    from wfbench_core.stats import first_minus_second

    # the same kernel on both sides: placements move both samples of a pair alike, the first of each pair
    # carries 3 us
    order = ["wf", "cuda"] * 10
    base = 100 + 10 * np.arange(20) % 7
    wf = base + np.where(np.array(order) == "wf", 3.0, 0.0)
    cu = base + np.where(np.array(order) == "cuda", 3.0, 0.0)
    assert first_minus_second(wf, cu, order) == pytest.approx([3.0] * 20)
    assert first_minus_second([5.0, 7.0], [6.0, 2.0], ["wf", "cuda"]) == pytest.approx([-1.0, -5.0])
    with pytest.raises(ValueError):
        first_minus_second([1.0, 2.0], [1.0, 2.0], ["wf"])


def test_the_suite_geomean_is_withheld_unless_the_whole_set_is_stable() -> None:
    from wfbench_core.stats import SetMember, case_set_id, suite_geomean

    members = [SetMember("a", 1, 1.2, True), SetMember("b", 2, 0.9, True)]
    g = suite_geomean(members)
    assert g is not None and g.value == pytest.approx((1.2 * 0.9) ** 0.5)
    assert g.members == (("a", 1), ("b", 2)) and g.set_id == case_set_id([("b", 2), ("a", 1)])
    assert suite_geomean(members[:1]).set_id != g.set_id, "a smaller set is another series"
    assert suite_geomean([members[0], SetMember("b", 2, 0.9, False)]) is None
    assert suite_geomean(members, complete=False) is None
    assert suite_geomean([]) is None
    assert case_set_id([("a", 1), ("b", 3)]) != g.set_id, "a new case version is another set"


def test_history_side_modules_import_no_numpy_or_scipy() -> None:
    """``wfbench --help`` imports every command module, and the history commands import these at their top:
    none of them may pull in numpy or scipy (they load when a statistic is first computed)."""
    import subprocess
    import sys

    code = ("import sys; import wfbench_core.stats, wfbench_core.review.history, wfbench_core.review.alerts, wfbench_core.review.compare, "
            "wfbench_core.review.export, wfbench_core.record.fsutil, wfbench_core.review.verdicts, wfbench_core.review.evidence, "
            "wfbench_core.compiling.code_identity, wfbench_core.review.series; "
            "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_quantiles_and_geomean_are_scipy_stats_own_numbers() -> None:
    """t_quantile and geomean avoid importing scipy.stats; the numbers are bit for bit its t.ppf, norm.ppf and
    gmean, so no stored interval or geomean moves."""
    import math

    from scipy import stats as sps

    from wfbench_core.stats import t_quantile

    for level in (0.5, 0.9, 0.95, 0.99):
        q = 0.5 + level / 2.0
        assert t_quantile(level, math.inf) == float(sps.norm.ppf(q))
        for df in (0.3, 1, 2, 3, 7.3, 14, 29, 100.25, 1e6):
            assert t_quantile(level, df) == float(sps.t.ppf(q, max(df, 1.0))), (level, df)
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 17, 25, 100):
        for _ in range(50):
            values = rng.lognormal(0.0, 0.3, n).tolist()
            assert geomean(values) == float(sps.gmean(np.asarray(values)))
