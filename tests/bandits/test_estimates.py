"""Each arm's private mean of all its recorded outcomes (dponline.bandits.estimates): the
Laplace draw exactly, a person's scale, refusals, and an audit that could refute the claim."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits.estimates import laplace_arm_means
from dponline.privacy.audit import audit
from dponline.privacy.floating_point import snapped


def test_the_means_are_the_totals_with_one_laplace_draw_each():
    totals, counts = np.array([60.0, 100.0, 0.0]), np.array([200, 290, 0])
    est = laplace_arm_means(totals, counts, 0.5, rng=3)
    noise = np.random.default_rng(3).laplace(0.0, 2.0, size=3)  # scale 1 / epsilon
    exact = np.clip((totals + noise)[:2] / counts[:2], 0, 1)
    np.testing.assert_array_equal(est.means[:2], snapped(exact))  # on the 2^-16 grid
    assert np.abs(est.means[:2] - exact).max() <= 2.0**-17
    assert np.isnan(est.means[2]) and np.isnan(est.noise_sd[2])  # no outcomes: no estimate
    np.testing.assert_allclose(est.noise_sd[:2], np.sqrt(2.0) * 2.0 / counts[:2])
    assert (est.privacy.epsilon, est.privacy.delta) == (0.5, 0.0)
    lo, hi = est.interval(sampling=False)
    np.testing.assert_allclose(hi[:2] - est.means[:2], 1.96 * est.noise_sd[:2])
    lo, hi = est.interval()  # with the sampling error at the private mean
    m = est.means[:2]
    half = 1.96 * np.sqrt(est.noise_sd[:2] ** 2 + m * (1 - m) / counts[:2])
    np.testing.assert_allclose(hi[:2], np.clip(m + half, 0, 1))
    np.testing.assert_allclose(lo[:2], np.clip(m - half, 0, 1))
    floats = laplace_arm_means(totals, counts.astype(float), 0.5, rng=3)  # whole numbers
    np.testing.assert_array_equal(floats.means[:2], est.means[:2])
    person = laplace_arm_means(totals, counts, 0.5, participations=4, rng=3)
    np.testing.assert_allclose(person.noise_sd[:2], 4 * est.noise_sd[:2])  # k / epsilon
    assert person.privacy.participations == 4 and person.privacy.epsilon <= 0.5 + 1e-12


@pytest.mark.parametrize(
    ("totals", "counts", "match"),
    [
        ([1.0, 2.0], [1, 1], r"each total must lie in \[0, its count\]"),
        ([1.0], [1, 2], "one value per arm"),
        ([1.0, 1.0], [1.5, 2], "whole numbers"),
        ([np.nan, 1.0], [1, 2], "finite|nan|NaN"),
    ],
)
def test_what_it_refuses(totals, counts, match):
    with pytest.raises(ValueError, match=match):
        laplace_arm_means(np.array(totals), np.array(counts), 1.0, rng=0)


def test_an_audit_does_not_refute_epsilon_and_refutes_a_tenth_of_it():
    """Two outcome tables that differ in one outcome (0 or 1 in arm 0's total): arm 0's
    released mean, audited with the fitted discriminant, does not refute epsilon = 1 and
    refutes a claim of 0.1 (ten times less privacy loss than the noise allows); each verdict
    wrong for a true claim with chance at most 1e-3, fixed seeds."""
    counts = np.array([10, 10])

    def sampler(totals, n, rng):  # type: ignore[no-untyped-def]
        seeds = rng.integers(0, 2**63, n)
        return np.array([[laplace_arm_means(totals, counts, 1.0, rng=s).means[0]] for s in seeds])

    a, b = np.array([5.0, 5.0]), np.array([6.0, 5.0])
    run = dict(trials=4000, pilot_trials=1000, alpha=1e-3, rng=0)
    assert not audit(sampler, a, b, claim=(1.0, 0.0), **run).refuted
    assert audit(sampler, a, b, claim=(0.1, 0.0), **run).refuted


def test_the_trial_example_prints_what_the_guide_quotes(capsys):
    """examples/adaptive_trial.py (4 s): tickets, a hold, cancellations, a JSON checkpoint
    after every allocation and a restart from it, the final release; the restart changes no
    allocation."""
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "adaptive_trial.py"
    runpy.run_path(str(example), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("does not depend on its value (DelayedPolicy, hold=200)")
    assert lines[1:] == [
        "allocated: {'A': 209, 'B': 211, 'C': 210, 'D': 2370} late: 0",
        "A: 0.277 [0.206, 0.347] from 189 outcomes",
        "B: 0.339 [0.266, 0.411] from 192 outcomes",
        "C: 0.383 [0.308, 0.459] from 189 outcomes",
        "D: 0.444 [0.422, 0.465] from 2049 outcomes",
        "the same allocations without the restart: True",
    ]
