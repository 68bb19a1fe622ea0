"""Private explore-then-commit: the worked example of docs/extending.md, a learner added to
dponline from outside the package (a K-armed bandit on the library's base class, its guarantee
and its proof, its registry entry with a test case and an audit case).

**The algorithm.** K arms, T rounds, m pulls of each arm. Rounds 1..Km pull the arms in turn,
m rounds each (arm 0 for m rounds, then arm 1, ...). At round Km + 1 the learner releases
every arm's exploration reward sum plus its own Laplace(1/epsilon) noise and from then on plays
the arm with the largest released sum.

**The guarantee (ours, proved here; not a paper's).** Neighbouring reward sequences differ in
one round's rewards, each reward in [0, 1]. The arms of rounds 1..Km do not depend on any
reward. A reward of a round s <= Km enters one arm's exploration sum, once, so the vector of
the K sums moves by at most 1 in l1 norm between neighbours, and Laplace(1/epsilon) noise on
each sum releases it epsilon-DP (the Laplace mechanism). Every later arm is a function of that
release (post-processing), and the rewards of rounds after Km are never read. So the whole
sequence of arms is epsilon-DP, with delta = 0. The audit case below puts this to the test:
the claim must survive, and a tenth of the noise must be caught.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.bandits import KArmedLearner, RewardSumCalibrator
from dponline.bandits.k_armed import arms_of
from dponline.privacy.arguments import checked_count, checked_real_array, saved_field
from dponline.privacy.calibration import calibrate
from dponline.protocol import FeedbackKind, checked_budget
from dponline.registry import AuditCase, LearnerEntry, LearnerTestCase, register_learner


class PrivateExploreThenCommit(KArmedLearner):
    """Explore-then-commit whose commit is the argmax of Laplace-noised exploration sums.

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T >= K rounds.
    budget:
        A :class:`~dponline.privacy.budget.PrivacyBudget`, or ``None`` for the same rounds
        without noise (the non-private counterpart).
    pulls_per_arm:
        m, the pulls of each arm before the commit (default ceil((T / K)^(2/3)), the classical
        choice for a gap the learner does not know); at most T // K.
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    paper: ClassVar[str] = "explore-then-commit with a Laplace-noised commit (docs/extending.md)"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        budget: Any,
        pulls_per_arm: int | None = None,
        replicas: int = 1,
        rng: Any = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        if self.horizon < self.n_arms:
            raise ValueError(f"explore-then-commit needs T >= K, got T = {self.horizon}")
        if pulls_per_arm is None:
            pulls_per_arm = math.ceil((self.horizon / self.n_arms) ** (2 / 3))
        m = checked_count("pulls_per_arm", pulls_per_arm)
        self.pulls_per_arm = min(m, self.horizon // self.n_arms)
        # the one road from a budget to noise: a calibrator proves the guarantee for the noise
        budget = checked_budget(budget)
        if budget is None:
            self.privacy, self.scale = None, 0.0
        else:
            calibrator = RewardSumCalibrator(
                "each arm's exploration reward sum", "one release of the K sums"
            )
            calibration = calibrate(calibrator, budget)
            self.privacy, self.scale = calibration.guarantee, float(calibration.noise.scale)
        #: the noisy sums released at the commit (zeros before it), shape (replicas, K)
        self.released = np.zeros((self.replicas, self.n_arms))

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Arm t // m for the rest of its m rounds while exploring; then the largest released
        sum for every round left."""
        k, m = self.n_arms, self.pulls_per_arm
        exploring = t < k * m
        arms = np.where(exploring, t // m, 0)
        lengths = np.where(exploring, m - t % m, np.maximum(self.horizon - t, 1))  # >= 1
        done = rows[~exploring]
        if done.size:
            noisy = self.sums[done].copy()  # the exploration sums: nothing else is pulled yet
            for a in range(k):  # arm by arm, so that each replica draws in arm order
                noisy[:, a] += self._noise(done, self.scale)
            self.released[done] = noisy
            arms[~exploring] = np.argmax(noisy, axis=1)
        return arms, lengths

    # what the state depends on, and the state beyond the base class's
    def _extra_config(self) -> dict[str, Any]:
        return {"pulls_per_arm": self.pulls_per_arm, "scale": self.scale}

    def _extra_state(self) -> dict[str, Any]:
        return {"released": self.released.copy()}

    def _prepare_extra(self, state: dict[str, Any]) -> Callable[[], None]:
        shape = (self.replicas, self.n_arms)
        released = np.array(
            checked_real_array("saved released", saved_field(state, "released"), shape)
        )

        def install() -> None:
            self.released = released

        return install


def released(learner: PrivateExploreThenCommit) -> np.ndarray:
    """What the learner releases each round, (replicas, K): the noisy sums (zeros before the
    commit). The arms are a function of them."""
    return learner.released.copy()


def commits_to_arm_0(outputs: np.ndarray) -> np.ndarray:
    """1 where the last round's release puts arm 0 first (the audit's event)."""
    return (outputs[:, -1, 0] > outputs[:, -1, 1]).astype(float)


def _build(env: Any, *, budget: Any, **options: Any) -> PrivateExploreThenCommit:
    """The registry's factory: the arms and the horizon from the environment."""
    return PrivateExploreThenCommit(arms_of(env), env.horizon, budget=budget, **options)


register_learner(
    LearnerEntry(
        "dp-explore-then-commit",
        _build,
        paper="explore-then-commit with Laplace(1/epsilon) on the K exploration sums "
        "(docs/extending.md's example)",
        setting="stochastic K-armed bandit",
        guarantee="event-level epsilon-DP over reward sequences differing in one round "
        "(rewards 1 - loss in [0, 1]): one release of the K exploration sums, l1 sensitivity "
        "1, Laplace mechanism; the commit is post-processing (ours: this module's docstring)",
        calibrations=("tight",),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                learner_options={"pulls_per_arm": 2},
                release=released,
                # two arms, one pull each, then the commit: round 1's loss of arm 0 is 0 or 1
                # (arm 1's losses are 0), so arm 0's sum is 1 or 0 against arm 1's 1
                audit=AuditCase(
                    horizon=3,
                    values=(0.0, 1.0),
                    environment_options={"n_arms": 2},
                    learner_options={"pulls_per_arm": 1},
                    statistic=commits_to_arm_0,
                ),
            ),
        ),
        options={
            "pulls_per_arm": "m, the pulls of each arm before the commit (default "
            "ceil((T / K)^(2/3)), at most T // K)"
        },
        default_delta=0.0,
    )
)
