"""The learner battery (:mod:`dponline.checks`) over every registered learner and test case.

Nothing here is specific to a learner: each learner's module declares its entry (factory, feedback
kind, action space, test cases, how to audit it) and every entry is collected from the registry.
Statistical checks are the privacy audits: each refutes a correct claim with probability at most
alpha = 1e-3 (one-sided Clopper-Pearson bounds at alpha/2 each), 2 alpha where the claim states
rho too (an epsilon test and a rho test); fixed seeds, so a run is reproducible; and a tenth of
the noise must be refuted.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from dponline.checks import (
    CHECKS,
    check_audit,
    check_learner,
    check_refuses_corrupt_state,
    check_rejects_invalid_inputs,
    check_replicas_independent,
    check_resume_bit_exact,
)
from dponline.cli import main
from dponline.experiments.spec import parse_spec
from dponline.privacy.arguments import checked_generator, checked_real_array, saved_field
from dponline.privacy.bounds import Box
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    LossVectorFeedback,
    NoiseHandle,
    RoundDiscipline,
    checked_budget,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    learners,
    register_learner,
    unregister_learner,
)
from dponline.rng import as_generator, generator_state

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
    """Tight calibration at the case's trials: not refuted (false failure <= alpha = 1e-3, or
    2 alpha with a rho test), a tenth of the noise refuted."""
    check_audit(entry, case)


@pytest.mark.slow
@pytest.mark.parametrize("entry, case", PRIVATE_CASES)
def test_paper_calibration_audit_not_refuted(entry, case):
    """The paper's own noise, against what it proves, with three times the trials: not refuted
    (false failure <= alpha = 1e-3, or 2 alpha with a rho test). A tenth of a paper's noise is
    not always detectable (Theorem 3.5's sigma is far above what privacy needs at these
    horizons), so it is not asserted."""
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
        # the stochastic K-armed suite and the batched conversion (issue 24)
        "adap-ucb": "ucb1",
        "adac-ucb": "ucb1",
        "adap-klucb": "kl-ucb",
        "dp-klucb": "kl-ucb",
        "dp-imed": "imed",
        "dp-se": "successive-elimination",
        "dp-ucb": "ucb1",
        "lazy-dp-ts": "thompson",
        "batched-exp3": "exp3",
        "batched-exp2": "exp2",
        "private-exp4": "exp4",
        "batched-exp4": "exp4",
    }
    catalogue = learners()
    for private, counterpart in expected.items():
        assert catalogue[private].private and not catalogue[counterpart].private
    batch_baselines = {"noisy-sfw", "noisy-sgd", "local-md"}  # Han et al. App. C, no counterpart
    assert all(catalogue[name].private for name in batch_baselines)
    assert {p.values[0].name for p in PRIVATE_CASES} >= set(expected) | batch_baselines


# --- a throwaway learner, defined here, picked up by the battery, the specs and the CLI -------


class NoisyLastLoss(NoiseHandle, RoundDiscipline):
    """A tiny private experts learner: plays softmax(-(l_{t-1} + Z_t)), Z_t ~ Lap(N / epsilon)^N.

    Each loss vector enters exactly one release, through the Laplace mechanism with the l1
    sensitivity N of [0, 1]^N (Dwork & Roth 2014, Theorem 3.6), and releases use disjoint rounds
    (parallel composition): event-level epsilon-DP over loss sequences differing in one round.
    ``understate`` divides the noise without saying so (a broken learner the audit must catch).
    The rounds, their errors and the load-time checks of the round counter come from
    RoundDiscipline, as for the library's learners.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_VECTOR

    def __init__(self, dim, horizon, *, budget, replicas=1, rng=None, understate=1.0):
        self.dim = checked_count("dim", dim)
        self._start_rounds(horizon)
        self.replicas = checked_count("replicas", replicas)
        self.budget = checked_budget(budget)
        self.bounds = Box(0.0, 1.0, dim=self.dim)
        self.scale = 0.0 if budget is None else self.dim / budget.epsilon / understate
        # through the budget, which refuses a unit the proof does not cover (a person's rounds;
        # the battery's check_unit_of_privacy caught the learner stating one round for it)
        self.privacy = (
            None
            if budget is None
            else budget.prove(
                budget.epsilon,
                0.0,
                f"Laplace mechanism, l1 sensitivity {self.dim}, scale N/epsilon; each loss in "
                "one release (parallel composition)",
            )
        )
        self._rng = as_generator(rng)
        self._last = np.zeros((self.replicas, self.dim))

    def _scale_noise(self, factor: float) -> None:
        self.scale *= factor

    def act(self) -> np.ndarray:
        self._acted = True
        z = -self._last - (-self._last).max(axis=1, keepdims=True)
        return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)

    def observe(self, feedback: Feedback) -> None:
        if not isinstance(feedback, LossVectorFeedback):
            raise TypeError(f"observes LossVectorFeedback, got {type(feedback).__name__}")
        self._check_round()
        shapes = (self.dim,), (self.replicas, self.dim)
        loss = self.bounds.check(checked_real_array("loss", feedback.loss, *shapes), what="loss")
        noise = self._rng.laplace(0.0, 1.0, (self.replicas, self.dim))
        self._last = loss + self.scale * noise
        self._end_round()

    def state_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "acted": self._acted,
            "last": self._last.copy(),
            "rng": generator_state(self._rng),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        t, acted = self._checked_rounds(state)
        shape = (self.replicas, self.dim)
        last = np.array(checked_real_array("saved last", saved_field(state, "last"), shape))
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self._set_rounds(t, acted)
            self._last, self._rng = last, rng

        return install


def _throwaway_entry(name: str, **learner_kw: Any) -> LearnerEntry:
    def factory(env, *, budget, **kw):
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
        default_delta=0.0,  # pure DP: Laplace noise
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
        {
            "environment": {"name": "alternating"},
            "horizon": 20,
            "learners": [{"name": "noisy-last-loss"}],
        }
    )
    assert {t.learner for t in spec.tasks()} == {"noisy-last-loss"}
    assert main(["list", "--json"]) == 0
    listed = {r["name"]: r for r in json.loads(capsys.readouterr().out)["learners"]}
    assert listed["noisy-last-loss"]["environments"] == [
        "stocks",
        "alternating",
        "switching_best",
        "stochastic",
        "expert_losses",
    ]
    with pytest.raises(ValueError, match="already registered"):
        register_learner(_throwaway_entry("noisy-last-loss"))


def test_the_battery_catches_a_broken_learner():
    """Under-noised by 10 without saying so: the audit refutes its claim (the refutation has
    power, not chance: measured epsilon lower bound 3.6 against the claimed 1). Replicas that
    share their noise, a state without the RNG, a load that changes the learner before it
    refuses the state and a complex loss cast to its real part are caught too."""
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

    class HalfLoads(NoisyLastLoss):  # installs part of a state before it checks the rest
        def load_state_dict(self, state):
            self._last = np.array(state["last"], dtype=float)
            super().load_state_dict(state)

    class DropsImaginaryParts(NoisyLastLoss):  # learns from the real part of a complex loss
        def observe(self, feedback):
            super().observe(LossVectorFeedback(np.real(feedback.loss)))

    for cls, check, message in (
        (SharedNoise, check_replicas_independent, "released the same run"),
        (ForgetsRng, check_resume_bit_exact, "resumed run differs"),
        (HalfLoads, check_refuses_corrupt_state, r"changed the learner's state\['last'\]"),
        (DropsImaginaryParts, check_rejects_invalid_inputs, "a complex loss was accepted"),
    ):

        def factory(env, cls=cls, *, budget, **kw):
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
