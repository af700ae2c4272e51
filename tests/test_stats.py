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
