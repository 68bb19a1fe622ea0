"""The learner battery (:mod:`dponline.checks`) over every registered learner and test case.

Nothing here is specific to a learner: each learner's module declares its entry (factory, feedback
kind, action space, test cases, how to audit it) and every entry is collected from the registry.
Statistical checks are the privacy audits: each refutes a correct claim with probability at most
alpha = 1e-3 (one-sided Clopper-Pearson bounds at alpha/2 each; fixed seeds, so a run is
reproducible), and a tenth of the noise must be refuted.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, ClassVar

import numpy as np
import pytest

from dponline.checks import (
    CHECKS,
    check_audit,
    check_learner,
    check_replicas_independent,
    check_resume_bit_exact,
)
from dponline.cli import main
from dponline.experiments.spec import parse_spec
from dponline.privacy.bounds import Box
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    LossVectorFeedback,
    NoiseHandle,
    checked_budget,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    budget_from_options,
    learners,
    register_learner,
    unregister_learner,
)
from dponline.rng import as_generator, generator_from_state, generator_state

CASES = [
    pytest.param(entry, case, id=f"{name}[{case.label}]" if case.label else name)
    for name, entry in learners().items()
    for case in entry.test_cases
]
PRIVATE_CASES = [p for p in CASES if p.values[0].private]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("entry, case", CASES)
def test_battery(check, entry, case):
    check(entry, case)


@pytest.mark.parametrize("entry, case", PRIVATE_CASES)
def test_audit_not_refuted_and_a_tenth_of_the_noise_refuted(entry, case):
    """Tight calibration at the case's trials: not refuted (false failure <= alpha = 1e-3),
    a tenth of the noise refuted."""
    check_audit(entry, case)


@pytest.mark.slow
@pytest.mark.parametrize("entry, case", PRIVATE_CASES)
def test_paper_calibration_audit_not_refuted(entry, case):
    """The paper's own noise, against what it proves, with three times the trials: not refuted
    (false failure <= alpha = 1e-3). A tenth of a paper's noise is not always detectable (Theorem
    3.5's sigma is far above what privacy needs at these horizons), so it is not asserted."""
    trials = 3 * case.audit.trials
    check_audit(
        entry,
        case,
        calibration="paper",
        trials=trials,
        pilot_trials=3 * case.audit.pilot_trials,
        tenth_refuted=False,
    )


def test_every_learner_of_the_papers_so_far_is_registered():
    # a module that stopped registering its entries would silently leave the battery
    expected = {
        "dp-ftrl": "ftrl",
        "dp-ftpl": "ftpl",
        "dp-exp2": "exp2",
        "dp-scrible": "scrible",
        "dp-frank-wolfe": "frank-wolfe",
        "dp-glm-bandit": "glm-bandit",
    }
    catalogue = learners()
    for private, counterpart in expected.items():
        assert catalogue[private].private and not catalogue[counterpart].private
    batch_baselines = {"noisy-sfw", "noisy-sgd", "local-md"}  # Han et al. App. C, no counterpart
    assert all(catalogue[name].private for name in batch_baselines)
    assert {p.values[0].name for p in PRIVATE_CASES} >= set(expected) | batch_baselines


# --- a throwaway learner, defined here, picked up by the battery, the specs and the CLI -------


class NoisyLastLoss(NoiseHandle):
    """A tiny private experts learner: plays softmax(-(l_{t-1} + Z_t)), Z_t ~ Lap(N / epsilon)^N.

    Each loss vector enters exactly one release, through the Laplace mechanism with the l1
    sensitivity N of [0, 1]^N (Dwork & Roth 2014, Theorem 3.6), and releases use disjoint rounds
    (parallel composition): event-level epsilon-DP over loss sequences differing in one round.
    ``understate`` divides the noise without saying so (a broken learner the audit must catch).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR

    def __init__(self, dim, horizon, *, budget, replicas=1, rng=None, understate=1.0):
        self.dim = checked_count("dim", dim)
        self.horizon = checked_count("horizon", horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget)
        self.bounds = Box(0.0, 1.0, dim=self.dim)
        self.scale = 0.0 if budget is None else self.dim / budget.epsilon / understate
        self.privacy = (
            None
            if budget is None
            else PrivacyGuarantee(
                budget.epsilon,
                0.0,
                derivation=f"Laplace mechanism, l1 sensitivity {self.dim}, scale N/epsilon; "
                "each loss in one release (parallel composition)",
            )
        )
        self._rng = as_generator(rng)
        self._last = np.zeros((self.replicas, self.dim))
        self._acted = False
        self.t = 0

    def _scale_noise(self, factor: float) -> None:
        self.scale *= factor

    def act(self) -> np.ndarray:
        self._acted = True
        z = -self._last - (-self._last).max(axis=1, keepdims=True)
        return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)

    def observe(self, feedback: Feedback) -> None:
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError(f"observes LossVectorFeedback, got {type(feedback).__name__}")
        if self.t >= self.horizon:
            raise ValueError(f"built for {self.horizon} rounds; round {self.t + 1} would void it")
        if not self._acted:
            raise ValueError("observe() must follow act()")
        loss = self.bounds.check(feedback.loss, what="loss")
        if loss.shape not in ((self.dim,), (self.replicas, self.dim)):
            raise ValueError(f"loss must have shape ({self.dim},), got {loss.shape}")
        noise = self._rng.laplace(0.0, 1.0, (self.replicas, self.dim))
        self._last = loss + self.scale * noise
        self._acted = False
        self.t += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "acted": self._acted,
            "last": self._last.copy(),
            "rng": generator_state(self._rng),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t, self._acted = int(state["t"]), bool(state["acted"])
        self._last = np.array(state["last"], dtype=float)
        self._rng = generator_from_state(state["rng"])


def _throwaway_entry(name: str, **learner_kw: Any) -> LearnerEntry:
    def factory(env, **kw):
        budget = budget_from_options(kw, 0.0)
        return NoisyLastLoss(env.dim, env.horizon, budget=budget, **learner_kw, **kw)

    return LearnerEntry(
        name,
        factory,
        paper="(test) the Laplace mechanism on the last loss",
        setting="experts",
        guarantee="event-level epsilon-DP",
        calibrations=("tight",),
        private=True,
        feedback_kind=FeedbackKind.LOSS_VECTOR,
        action_space="simplex",
        test_cases=(
            LearnerTestCase(
                "alternating",
                horizon=12,
                environment_options={"n_experts": 3},
                audit=AuditCase(
                    horizon=2,
                    values=(0.0, 1.0),
                    environment_options={"n_experts": 2},
                    trials=20_000,
                    pilot_trials=5_000,
                    seed=1,
                ),
            ),
        ),
    )


@pytest.fixture
def throwaway():
    """Register the throwaway learner for one test and unregister it afterwards."""
    entry = register_learner(_throwaway_entry("noisy-last-loss"))
    try:
        yield entry
    finally:
        unregister_learner(entry.name)
    assert entry.name not in learners()


def test_a_registered_learner_is_picked_up_by_the_battery_specs_and_cli(throwaway, capsys):
    assert learners()["noisy-last-loss"] is throwaway
    # every check of the battery, the audit included (false failure <= alpha = 1e-3)
    check_learner(throwaway)
    spec = parse_spec(
        {"environment": {"name": "alternating"}, "learners": [{"name": "noisy-last-loss"}]}
    )
    assert {t.learner for t in spec.tasks()} == {"noisy-last-loss"}
    assert main(["list", "--json"]) == 0
    listed = {r["name"]: r for r in json.loads(capsys.readouterr().out)["learners"]}
    assert listed["noisy-last-loss"]["environments"] == [
        "stocks",
        "alternating",
        "switching_best",
        "stochastic",
    ]
    with pytest.raises(ValueError, match="already registered"):
        register_learner(_throwaway_entry("noisy-last-loss"))


def test_the_battery_catches_a_broken_learner():
    """Under-noised by 10 without saying so: the audit refutes its claim (the refutation has
    power, not chance: measured epsilon lower bound 3.6 against the claimed 1). Replicas that
    share their noise and a state without the RNG are caught too."""
    entry = register_learner(_throwaway_entry("understated", understate=10.0))
    try:
        with pytest.raises(AssertionError, match="refutes the claim"):
            check_audit(entry, entry.test_case)
    finally:
        unregister_learner(entry.name)

    class SharedNoise(NoisyLastLoss):
        def observe(self, feedback):
            self._rng = np.random.default_rng(0)  # every replica, every round: the same draws
            super().observe(feedback)
            self._last[:] = self._last[0]

    class ForgetsRng(NoisyLastLoss):
        def load_state_dict(self, state):
            super().load_state_dict({**state, "rng": generator_state(np.random.default_rng())})

    for cls, check, message in (
        (SharedNoise, check_replicas_independent, "released the same run"),
        (ForgetsRng, check_resume_bit_exact, "resumed run differs"),
    ):

        def factory(env, cls=cls, **kw):
            budget = budget_from_options(kw, 0.0)
            return cls(env.dim, env.horizon, budget=budget, **kw)

        broken = dataclasses.replace(_throwaway_entry(f"broken-{cls.__name__}"), factory=factory)
        with pytest.raises(AssertionError, match=message):
            check(broken, broken.test_case)


def test_registry_refuses_malformed_entries():
    good = _throwaway_entry("x")
    with pytest.raises(ValueError, match="needs an AuditCase"):
        dataclasses.replace(good, test_cases=(LearnerTestCase("alternating", horizon=8),))
    with pytest.raises(TypeError, match="FeedbackKind"):
        dataclasses.replace(good, feedback_kind="experts")
    with pytest.raises(ValueError, match="calibrations"):
        dataclasses.replace(good, calibrations=("exact",))
    with pytest.raises(TypeError, match="LearnerEntry"):
        register_learner({"name": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no learner named 'nope'"):
        unregister_learner("nope")
    assert math.isfinite(good.test_case.epsilon)
