"""EXP2 with exploration (Agarwal & Singh 2017, Algorithm 5; Bubeck, Cesa-Bianchi & Kakade 2012)
over a finite action set, and DP-EXP2: Algorithm 4 (:mod:`dponline.bandits.private_reduction`)
around it.

EXP2 over actions a_1..a_K in R^N with an exploration distribution mu (uniform by default). Each
round, for every replica:

1. p_t = (1 - gamma) q_t + gamma mu (Algorithm 5, line 3); play k_t ~ p_t, x_t = a_{k_t};
2. receive a value v_t (Algorithm 4 forwards <l_t + Z_t, x_t>);
3. estimate l~_t = P_t^+ x_t v_t with P_t = E_{k ~ p_t}[a_k a_k'] (Algorithm 5, line 4) and
   update q_{t+1}(k) proportional to exp(-eta <l~_t, a_k>) q_t(k).

For the multi-armed bandit (the actions are the standard basis, :attr:`EXP2.one_hot`) P_t is
diag(p_t) and l~_t is v_t / p_t(i) at the arm played, 0 elsewhere.

Privacy (Lemma 4.2, derived once in :mod:`~dponline.bandits.private_reduction`): the exact
sensitivity of one value is the width of the loss interval (1 for [0, 1], 2 for [-1, 1]), which
the ``tight`` calibration uses. The paper's Theorem 4.1 takes lambda = ||l||_inf / epsilon, which
proves only 2 epsilon for signed losses: refused unless the budget allows a weaker paper
calibration.

Parameters. Theorem 4.1 prints eta = sqrt(log N / (2 N T (1 + 2 lambda^2 log NT))) and
gamma = eta N sqrt(1 + 2 lambda^2 log NT) (:func:`exp2_parameters`, the ``paper`` calibration).
Its proof needs eta |l^_t(i)| <= 1 for Lemma 4.4, which off the failure event F holds when
eta N (M + 4 lambda log NT) <= gamma (line 385 of the paper, with M = ||l||_inf <= 1 there); the
printed gamma is about sqrt(2) lambda sqrt(log NT) eta N, smaller than that by a factor of
roughly 2 sqrt(2 log NT) (:func:`exp2_condition_ratio`), so the printed parameters do not carry
the proof and :func:`exp2_regret_bound` is not a proven bound for them. The ``tight``
calibration runs :func:`exp2_proof_parameters`: gamma = eta N (M + 4 lambda log NT), the least
the condition allows, and the eta minimising the proof's bound at that gamma
(:func:`exp2_proven_regret_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.bandits import exp2_kernel
from dponline.bandits.private_reduction import PrivateBanditReduction, value_range
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import Box, InputBounds
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import FeedbackKind, checked_count
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike, generator_state

__all__ = [
    "DPEXP2",
    "EXP2",
    "exp2_condition_ratio",
    "exp2_parameters",
    "exp2_proof_parameters",
    "exp2_proven_regret_bound",
    "exp2_regret_bound",
    "same_arm",
]


def exp2_parameters(n_arms: int, horizon: int, laplace_scale: float) -> tuple[float, float]:
    """(eta, gamma) of Theorem 4.1 for N arms, horizon T and Laplace scale lambda."""
    n, t, lam = int(n_arms), int(horizon), float(laplace_scale)
    spread = 1.0 + 2.0 * lam**2 * math.log(n * t)
    eta = math.sqrt(math.log(n) / (2.0 * n * t * spread))
    gamma = eta * n * math.sqrt(spread)
    return eta, gamma


def exp2_condition_ratio(n_arms: int, horizon: int, laplace_scale: float) -> float:
    """eta N (1 + 4 lambda log NT) / gamma at Theorem 4.1's printed parameters: how many times
    too small the printed gamma is for the condition its proof needs (at most 1 is needed)."""
    n, t, lam = int(n_arms), int(horizon), float(laplace_scale)
    eta, gamma = exp2_parameters(n, t, lam)
    return eta * n * (1.0 + 4.0 * lam * math.log(n * t)) / gamma


def _proof_constants(n: int, t: int, lam: float, m: float) -> tuple[float, float]:
    """(L, K): |l~_t(i)| <= L = M + 4 lambda log NT off the failure event, and
    E||l~_t||_inf^2 <= K = 2 (M^2 + 10 lambda^2 log^2 NT) there (Fact C.1 and Eq. 7)."""
    log_nt = math.log(n * t)
    return m + 4.0 * lam * log_nt, 2.0 * (m * m + 10.0 * lam * lam * log_nt * log_nt)


def exp2_proof_parameters(
    n_arms: int, horizon: int, laplace_scale: float, loss_bound: float = 1.0
) -> tuple[float, float]:
    """(eta, gamma) that satisfy the condition of Theorem 4.1's proof, eta N L <= gamma with
    L = M + 4 lambda log NT (M = ``loss_bound`` = ||l||_inf), at the least gamma = eta N L, with
    the eta minimising :func:`exp2_proven_regret_bound` there: the bound is
    log N / eta + eta T N (K + 2 L M) + 2 M + ..., so eta = sqrt(log N / (T N (K + 2 L M))),
    capped so that gamma <= 1."""
    n, t, lam, m = int(n_arms), int(horizon), float(laplace_scale), float(loss_bound)
    big_l, k = _proof_constants(n, t, lam, m)
    eta = math.sqrt(math.log(n) / (t * n * (k + 2.0 * big_l * m)))
    eta = min(eta, 1.0 / (n * big_l))
    return eta, eta * n * big_l


def exp2_proven_regret_bound(
    n_arms: int,
    horizon: int,
    laplace_scale: float,
    loss_bound: float = 1.0,
    *,
    eta: float | None = None,
    gamma: float | None = None,
) -> float:
    """The bound Theorem 4.1's proof gives for (eta, gamma) that meet its condition (default
    :func:`exp2_proof_parameters`): Lemma 4.4 off the failure event F (probability at most 1/T),
    with E||l~_t||_inf^2 <= 2 (M^2 + 10 lambda^2 log^2 NT) (Eq. 7 without the paper's dropped
    factor 10), plus the regret on F, at most 2 M T times 1/T:

        log N / eta + eta T N K + 2 gamma T M + 2 M.

    Raises ``ValueError`` if (eta, gamma) violate eta N (M + 4 lambda log NT) <= gamma <= 1."""
    n, t, lam, m = int(n_arms), int(horizon), float(laplace_scale), float(loss_bound)
    if eta is None or gamma is None:
        eta, gamma = exp2_proof_parameters(n, t, lam, m)
    big_l, k = _proof_constants(n, t, lam, m)
    if eta * n * big_l > gamma * (1.0 + 1e-12) or gamma > 1.0:
        raise ValueError(
            f"(eta, gamma) = ({eta:.4g}, {gamma:.4g}) violate the proof's condition "
            f"eta N (M + 4 lambda log NT) = {eta * n * big_l:.4g} <= gamma <= 1: the proof "
            "gives no bound for them"
        )
    return math.log(n) / eta + eta * t * n * k + 2.0 * gamma * t * m + 2.0 * m


def exp2_regret_bound(n_arms: int, horizon: int, laplace_scale: float) -> float:
    """Theorem 4.1's bound as the paper's proof writes it for its printed parameters (Lemma 4.4
    plus the failure event's 1):

        log N / eta + 2 eta T N (1 + lambda^2 log^2 NT) + 2 T gamma + 1.

    Not a proven bound: the printed parameters violate the condition the proof needs
    (:func:`exp2_condition_ratio`), and Eq. 7's factor 10 is dropped; kept to reproduce the
    paper. :func:`exp2_proven_regret_bound` is the proven one."""
    n, t, lam = int(n_arms), int(horizon), float(laplace_scale)
    eta, gamma = exp2_parameters(n, t, lam)
    return (
        math.log(n) / eta
        + 2 * eta * t * n * (1 + lam**2 * math.log(n * t) ** 2)
        + 2 * t * gamma
        + 1.0
    )


class EXP2:
    """EXP2 with exploration over a finite action set (Algorithm 5; the module docstring).

    Parameters
    ----------
    actions:
        (K, N) array of action vectors; ``None`` with ``n_arms`` = N gives the multi-armed bandit
        (the standard basis).
    eta, gamma:
        Learning rate and exploration weight (Theorem 4.1's for the multi-armed bandit by
        :func:`exp2_parameters`; required for a general action set).
    exploration:
        mu, a distribution over the K actions (default uniform). For a general action set it
        should span R^N (P_t is pseudo-inverted otherwise).
    """

    def __init__(
        self,
        *,
        eta: float,
        gamma: float,
        replicas: int,
        rng: np.random.Generator,
        n_arms: int | None = None,
        actions: np.ndarray | None = None,
        exploration: np.ndarray | None = None,
    ) -> None:
        if actions is None:
            if n_arms is None:
                raise ValueError("give n_arms (multi-armed bandit) or an action set")
            if checked_count("n_arms", n_arms) < 2:
                raise ValueError(f"n_arms must be at least 2, got {n_arms!r}")
            self.actions = np.eye(int(n_arms))
        else:
            self.actions = np.array(actions, dtype=float)
            if self.actions.ndim != 2 or len(self.actions) < 2:
                raise ValueError(
                    f"actions must be a (K, N) array with K >= 2, got shape {self.actions.shape}"
                )
            if not np.all(np.isfinite(self.actions)):
                raise ValueError("actions must be finite")
        self.n_actions, self.dim = self.actions.shape
        self.one_hot = self.n_actions == self.dim and bool(
            np.array_equal(self.actions, np.eye(self.dim))
        )
        mu = (
            np.full(self.n_actions, 1.0 / self.n_actions)
            if exploration is None
            else np.array(exploration, dtype=float)
        )
        if mu.shape != (self.n_actions,) or np.any(mu < 0) or not np.isclose(mu.sum(), 1.0):
            raise ValueError(
                f"exploration must be a distribution over the {self.n_actions} actions, got {mu!r}"
            )
        self.exploration = mu / mu.sum()
        eta, gamma = checked_positive("eta", eta), checked_positive("gamma", gamma)
        self.eta, self.gamma = eta, min(1.0, gamma)
        self._explore = self.gamma * self.exploration  # gamma mu, added every round
        self.replicas = replicas
        self.rng = rng
        self._log_q = np.zeros((replicas, self.n_actions))
        self._p = np.empty_like(self._log_q)  # p_t, updated in place
        self._cdf = np.empty_like(self._log_q)  # its running sums along the actions
        self._update_probabilities()
        self._chosen = np.zeros(replicas, dtype=np.int64)

    def _update_probabilities(self) -> None:
        """p_t from the log-weights, and its running sums (the sampler's cdf) on the side,
        in place (:mod:`~dponline.bandits.exp2_kernel`)."""
        exp2_kernel.weights(self._log_q, self.gamma, self._explore, self._p, self._cdf)

    def probabilities(self) -> np.ndarray:
        """p_t = (1 - gamma) q_t + gamma mu, shape (replicas, K)."""
        return self._p.copy()

    def act(self) -> np.ndarray:
        """Play k_t ~ p_t per replica; returns action indices, shape (replicas,)."""
        u = self.rng.random(self.replicas)
        self._chosen = np.empty(self.replicas, dtype=np.int64)
        exp2_kernel.pick(self._cdf, u, self._chosen)
        return self._chosen.copy()

    def played(self) -> np.ndarray:
        """x_t = a_{k_t}, shape (replicas, N)."""
        return self.actions[self._chosen]

    def played_arms(self) -> np.ndarray:
        """k_t, the index of each replica's action, shape (replicas,)."""
        return self._chosen

    def loss_estimate(self, values: np.ndarray) -> np.ndarray:
        """l~_t = P_t^+ x_t v_t, shape (replicas, N)."""
        rows = np.arange(self.replicas)
        if self.one_hot:
            est = np.zeros((self.replicas, self.dim))
            est[rows, self._chosen] = values / self._p[rows, self._chosen]
            return est
        cov = np.einsum("rk,ki,kj->rij", self._p, self.actions, self.actions)
        x = self.played()
        return np.einsum("rij,rj->ri", np.linalg.pinv(cov, hermitian=True), x) * values[:, None]

    def learn(self, values: np.ndarray) -> None:
        """q_{t+1}(k) proportional to exp(-eta <l~_t, a_k>) q_t(k)."""
        if self.one_hot:  # l~_t is zero but at the arm played: update that weight alone
            values = np.ascontiguousarray(values, dtype=float)
            exp2_kernel.charge(self._log_q, self._p, self._chosen, values, self.eta)
        else:
            self._log_q -= self.eta * (self.loss_estimate(values) @ self.actions.T)
        self._update_probabilities()

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": {"eta": self.eta, "gamma": self.gamma, "actions": self.actions.tolist()},
            "log_q": self._log_q.copy(),
            "chosen": self._chosen.copy(),
            "rng": generator_state(self.rng),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`; a corrupt state raises and changes nothing."""
        self.prepare_load(state)()

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (step sizes and actions, log-weights, the actions chosen, the
        RNG) and return the function that installs it."""
        config = {"eta": self.eta, "gamma": self.gamma, "actions": self.actions.tolist()}
        if saved_field(state, "config") != config:
            raise ArgumentError("state was saved from an EXP2 with other step sizes or actions")
        log_q = np.array(
            checked_real_array("saved log_q", saved_field(state, "log_q"), self._log_q.shape)
        )
        chosen = checked_int_array(
            "saved chosen", saved_field(state, "chosen"), (self.replicas,), 0, self.n_actions
        )
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self._log_q, self._chosen, self.rng = log_q, chosen, rng
            self._update_probabilities()

        return install


class DPEXP2(PrivateBanditReduction):
    """DP-EXP2: Algorithm 4 around EXP2 (Agarwal & Singh 2017, Theorem 4.1).

    Parameters
    ----------
    n_arms, horizon:
        N and T: the N-armed bandit, or with ``actions`` a finite action set in R^N.
    budget:
        Pure-DP budget; ``None`` runs the non-private EXP2 (Theorem 4.1's parameters at
        lambda = 0, which meet its proof's condition). ``tight``: lambda = (value width) /
        epsilon, the exact sensitivity of one loss value, and :func:`exp2_proof_parameters`;
        ``paper``: lambda = ||l||_inf / epsilon and the printed eta, gamma (Theorem 4.1).
    loss_range:
        The declared interval of every loss coordinate (default [0, 1]); for the multi-armed
        bandit the interval of every loss value.
    eta, gamma:
        Override Theorem 4.1's parameters (required for a general action set).
    actions, exploration:
        A finite action set (K, N) and exploration distribution mu (default uniform).
    """

    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 4 around Algorithm 5 (EXP2)"

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        *,
        budget: PrivacyBudget | None,
        loss_range: tuple[float, float] = (0.0, 1.0),
        eta: float | None = None,
        gamma: float | None = None,
        actions: np.ndarray | None = None,
        exploration: np.ndarray | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        n = checked_count("n_arms", n_arms)
        if actions is None and n < 2:
            raise ValueError(f"n_arms must be at least 2, got {n_arms!r}")
        low, high = (float(v) for v in loss_range)
        bounds: InputBounds = Box(low, high, dim=n)
        self.n_arms = n if actions is None else int(np.shape(actions)[0])
        horizon = checked_count("horizon", horizon)
        replicas = checked_count("replicas", replicas)
        if actions is None:
            sensitivity = high - low  # a loss value moves by at most the interval's width
        else:  # sup over actions of sup |<l - l', a>| / ||a||_inf over the box
            a = np.asarray(actions, dtype=float)
            if a.ndim != 2 or a.shape[1] != n:
                raise ValueError(
                    f"actions must have shape (K, n_arms) = (K, {n}) (n_arms is the dimension "
                    f"of the action vectors), got {a.shape}"
                )
            lo, hi = value_range(bounds, a)
            top = np.abs(a).max(axis=1)
            # the zero action reveals nothing: <l + Z, 0> = 0 (Lemma 4.2's fictitious loss 0)
            ratios = (hi - lo)[top > 0] / top[top > 0]
            sensitivity = float(ratios.max()) if ratios.size else 0.0
        if actions is not None and (eta is None or gamma is None):
            raise ValueError(
                "Theorem 4.1's eta and gamma are for the multi-armed bandit: give eta and gamma "
                "for a general action set"
            )

        # the paper's printed parameters for `paper` (and without privacy, where they meet the
        # proof's condition); parameters the proof supports for `tight`
        proof = budget is not None and budget.calibration == "tight"
        loss_bound = max(abs(low), abs(high))

        def make(lam: float, gen: np.random.Generator) -> EXP2:
            if proof:
                default_eta, default_gamma = exp2_proof_parameters(n, horizon, lam, loss_bound)
            else:
                default_eta, default_gamma = exp2_parameters(n, horizon, lam)
            return EXP2(
                eta=default_eta if eta is None else float(eta),
                gamma=default_gamma if gamma is None else float(gamma),
                replicas=replicas,
                rng=gen,
                n_arms=n if actions is None else None,
                actions=actions,
                exploration=exploration,
            )

        super().__init__(
            make,
            horizon,
            budget=budget,
            loss_bounds=bounds,
            sensitivity=sensitivity,
            paper_numerator=max(abs(low), abs(high)),
            paper_source="Agarwal & Singh (2017) Thm 4.1 (lambda = ||l||_inf / epsilon)",
            replicas=replicas,
            rng=rng,
            clip=clip,
        )

    @property
    def gamma(self) -> float:
        return self.algorithm.gamma  # type: ignore[attr-defined, no-any-return]

    def probabilities(self) -> np.ndarray:
        """p_t = (1 - gamma) q_t + gamma mu, shape (replicas, K)."""
        return self.algorithm.probabilities()  # type: ignore[attr-defined, no-any-return]


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _dp_exp2(env: Any, *, budget: PrivacyBudget | None, **kw: Any) -> DPEXP2:
    """DP-EXP2 over ``env``'s arms and horizon (Theorem 4.1's parameters by default)."""
    return DPEXP2(env.dim, env.horizon, budget=budget, **kw)


def same_arm(outputs: np.ndarray) -> np.ndarray:
    """1 where round 2 repeats round 1's arm, outputs (n, 2): the event that round 1's loss
    decides (a low loss keeps the arm, a high one moves away from it)."""
    return (outputs[:, 0] == outputs[:, 1]).astype(float)


_EXP2_SETTING = "multi-armed bandit"

_DP_EXP2_ENTRY = register_learner(
    LearnerEntry(
        "dp-exp2",
        _dp_exp2,
        paper="Agarwal & Singh (2017), Algorithm 4 (noisy-loss reduction) around "
        "Algorithm 5 (EXP2 with uniform exploration), parameters of Theorem 4.1",
        setting=_EXP2_SETTING,
        guarantee=(
            "event-level epsilon-DP (Laplace on each observed loss, Lemma 4.2) over loss "
            "sequences differing in one round, for losses in [0, 1]"
        ),
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "stock_bandit",
                environment_options={"dataset": "djia"},
                audit=AuditCase(
                    # two rounds, two arms: round 1's losses are 0 or 1 for both arms, round
                    # 2's 1/2; a large step so that one loss visibly moves the next arm
                    horizon=2,
                    values=(0.0, 1.0),
                    rest=0.5,
                    coordinates="all",
                    environment="bernoulli_bandit",
                    environment_options={"n_arms": 2},
                    learner_options={"eta": 3.0, "gamma": 0.2},
                    statistic=same_arm,
                    trials=60_000,
                    pilot_trials=15_000,
                    seed=4,
                ),
            ),
        ),
        options={
            "eta": "learning rate (default: Theorem 4.1)",
            "gamma": "exploration (default: Theorem 4.1)",
        },
        default_delta=0.0,
    )
)

register_learner(
    non_private_entry(
        _DP_EXP2_ENTRY,
        "exp2",
        paper="EXP2 with uniform exploration (Bubeck et al. 2012); the non-private "
        "counterpart of dp-exp2",
        test_cases=(
            LearnerTestCase(
                "stock_bandit", environment_options={"dataset": "djia"}, randomised=True
            ),
        ),
        options={"eta": "learning rate", "gamma": "exploration"},
        extra_counterpart_of=("batched-exp2",),
    )
)
