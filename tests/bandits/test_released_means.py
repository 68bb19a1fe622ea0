"""Each arm's mean as a K-armed learner released it (KArmedLearner.released_means): the exact
statistic its decisions read, NaN before a release, a non-private learner's exact means, and
audits that could refute publishing them under the learner's guarantee."""

from __future__ import annotations

import numpy as np
import pytest

from dponline.bandits import DPIMED, DPSE, DPUCB, KLUCB, AdaPUCB, LazyDPTS
from dponline.bandits.delayed import DelayedPolicy
from dponline.bandits.river_style import RiverPolicy
from dponline.privacy.audit import audit
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.floating_point import snapped
from dponline.protocol import BanditFeedback


def _play(learner, losses: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    """Every replica plays ``losses`` (rounds x arms): its loss is that of the arm it plays."""
    for row in losses:
        arms = np.asarray(learner.act()).reshape(-1)
        learner.observe(BanditFeedback(row[arms]))


def test_they_are_the_statistics_the_decisions_read():
    losses = (np.random.default_rng(0).random((400, 3)) < 0.5).astype(float)
    imed = DPIMED(3, 400, budget=PrivacyBudget(1.0), first_phase=5, rng=0)
    adap = AdaPUCB(3, 400, budget=PrivacyBudget(1.0), rng=0)
    lazy = LazyDPTS(3, 400, budget=PrivacyBudget(1.0), rng=0)
    ucb = DPUCB(3, 400, budget=PrivacyBudget(1.0), noise="laplace", rng=0)
    for learner in (imed, adap, lazy, ucb):
        assert np.isnan(learner.released_means()).all()  # nothing released yet
        _play(learner, losses)
    np.testing.assert_array_equal(imed.released_means(), snapped(imed.noisy_sum / imed.phase_end))
    np.testing.assert_array_equal(adap.released_means(), snapped(adap.private_mean))
    np.testing.assert_array_equal(lazy.released_means(), snapped(lazy.private_mean))
    np.testing.assert_array_equal(ucb.released_means(), snapped(ucb.private_sum / ucb.pulls))
    exact = KLUCB(3, 400, rng=0)
    _play(exact, losses)
    np.testing.assert_array_equal(exact.released_means(), exact.sums / exact.pulls)
    for learner in (imed, adap, lazy, ucb):  # noisy: not the exact means
        assert not np.allclose(learner.released_means(), learner.sums / learner.pulls)


def test_a_learner_that_keeps_none_says_so_and_the_policies_name_the_arms():
    se = DPSE(3, 400, budget=PrivacyBudget(1.0), rng=0)
    with pytest.raises(ValueError, match="DPSE keeps no released per-arm means"):
        se.released_means()
    arms = ["A", "B"]
    for policy in (
        RiverPolicy.from_registry("dp-imed", arms, None, seed=0, first_phase=1),
        DelayedPolicy.from_registry("dp-imed", arms, None, seed=0, first_phase=1),
    ):
        for _ in range(3):
            policy.update(policy.pull(arms), 1.0)
        means = policy.released_means()
        assert list(means) == arms and all(np.isfinite(list(means.values())))
        assert means == dict(zip(arms, policy.learner.released_means()[0], strict=True))
    with pytest.raises(TypeError, match="keeps no per-arm means"):
        RiverPolicy.from_registry("dp-exp2", arms, 10).released_means()


def _learner(name: str, n: int, rng, fraction: float):  # type: ignore[no-untyped-def]
    budget = PrivacyBudget(1.0)
    build = {
        "dp-imed": lambda: DPIMED(2, 3, budget=budget, first_phase=1, replicas=n, rng=rng),
        "adap-ucb": lambda: AdaPUCB(2, 3, budget=budget, replicas=n, rng=rng),
        "lazy-dp-ts": lambda: LazyDPTS(2, 3, budget=budget, replicas=n, rng=rng),
        "dp-ucb": lambda: DPUCB(2, 3, budget=budget, noise="laplace", replicas=n, rng=rng),
    }[name]
    learner = build()
    learner.scale_noise(fraction)
    return learner


@pytest.mark.parametrize("name", ["dp-imed", "adap-ucb", "lazy-dp-ts", "dp-ucb"])
def test_publishing_them_keeps_the_guarantee(name):
    """Two reward streams that differ in round 1's reward of arm 0 (0 or 1; every other reward
    1/2): arm 0's released mean after 3 rounds, audited with the fitted discriminant, is not
    refuted at the claim of epsilon = 1 and is refuted at a tenth of the noise (each verdict
    wrong for a true claim with chance at most 1e-3; fixed seeds)."""
    stream_a = np.full((3, 2), 0.5)
    stream_b = stream_a.copy()
    stream_a[0, 0], stream_b[0, 0] = 1.0, 0.0  # losses: reward 0 or 1

    def run(fraction: float):  # type: ignore[no-untyped-def]
        def sampler(losses, n, rng):  # type: ignore[no-untyped-def]
            learner = _learner(name, n, rng, fraction)
            _play(learner, losses)
            return learner.released_means()[:, :1]

        return audit(sampler, stream_a, stream_b, claim=(1.0, 0.0), alpha=1e-3, rng=0)

    assert not run(1.0).refuted
    assert run(0.1).refuted
