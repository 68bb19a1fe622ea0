"""Warnings name the line that built the learner, whatever the road through dponline
(:mod:`dponline.warn`)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dponline.bandits import DPIMED, DPKLUCB
from dponline.environments.catalogue import build_environment
from dponline.experiments.checkpoints import LegacyCheckpointWarning, warn_legacy_pickles
from dponline.privacy import PrivacyWarning
from dponline.registry import build_learner, learners
from dponline.warn import warn_caller


def _caught(build) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build()
    return caught


def test_warn_caller_names_the_caller_outside_the_package() -> None:
    (w,) = _caught(lambda: warn_caller("look here", PrivacyWarning))
    assert (w.filename, w.category) == (__file__, PrivacyWarning)
    (w,) = _caught(lambda: warn_caller(PrivacyWarning("an instance keeps its class")))
    assert w.category is PrivacyWarning


# learners whose paper calibration proves less than the epsilon asked here (each warns once the
# budget allows a weaker guarantee); the depth of dponline frames differs between them
WEAKER_PAPER_PROOFS = {
    "dp-ftrl": 0.01,
    "dp-scrible": 0.01,
    "noisy-sgd": 1.0,
    "private-bandit": 0.01,
}


@pytest.mark.parametrize("name", sorted(WEAKER_PAPER_PROOFS))
def test_a_weaker_paper_proof_warns_at_the_line_that_built_the_learner(name: str) -> None:
    entry = learners()[name]
    case = entry.test_case
    env = build_environment(
        case.environment, case.horizon, np.random.default_rng(1), **case.environment_options
    )

    def build() -> None:
        build_learner(
            entry,
            env,
            epsilon=WEAKER_PAPER_PROOFS[name],
            calibration="paper",
            allow_weaker=True,
            replicas=2,
            rng=np.random.default_rng(0),
            **case.learner_options,
        )

    caught = [w for w in _caught(build) if w.category is PrivacyWarning]
    assert caught, f"{name}: no PrivacyWarning (update WEAKER_PAPER_PROOFS)"
    assert {w.filename for w in caught} == {__file__}


@pytest.mark.parametrize("learner", [DPIMED, DPKLUCB])
def test_first_phases_filling_the_horizon_warn_here_directly_and_through_the_registry(
    learner: type,
) -> None:
    from dponline.privacy import PrivacyBudget

    direct = _caught(lambda: learner(3, 30, budget=PrivacyBudget(epsilon=0.1)))
    name = {DPIMED: "dp-imed", DPKLUCB: "dp-klucb"}[learner]
    env = build_environment("k_armed", 30, np.random.default_rng(1), means=[0.2, 0.5, 0.8])
    registry = _caught(lambda: build_learner(name, env, epsilon=0.1))
    for caught in (direct, registry):
        (w,) = [w for w in caught if "fill the horizon" in str(w.message)]
        assert w.filename == __file__


def test_legacy_pickles_warn_at_the_caller(tmp_path) -> None:
    (tmp_path / "old.pkl").write_bytes(b"")
    (w,) = _caught(lambda: warn_legacy_pickles(tmp_path))
    assert (w.filename, w.category) == (__file__, LegacyCheckpointWarning)
