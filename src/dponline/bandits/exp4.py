"""Bandits with expert advice: EXP4 and two private versions (Asi, Raman & Talwar 2025,
Section on bandits with expert advice).

**The setting.** Each round t, each of N experts gives a distribution xi_t^j over the K arms
(its *advice*); the learner plays an arm I_t and sees its loss l_t(I_t) in [0, 1]. Regret is
against the best expert in hindsight: sum_t l_t(I_t) - min_j sum_t <xi_t^j, l_t>.

**How advice reaches the learner.** The advice is an array (T, N, K) fixed before the first
round, as the losses of an oblivious adversary are, and public: the privacy guarantees are over
the losses only (neighbouring sequences differ in one round's losses; the advice is the same).
The learner is built with it (from the environment's ``advice`` when it has one,
:mod:`dponline.environments.expert_advice`, or from its ``experts`` option), keeps its own
checked read-only copy (:func:`checked_advice`: later changes to the caller's array do not
reach it) and reads row t in round t only (round t is its own round counter; ``act()`` after
the horizon rereads the last row). The round loop, the feedback (``BanditFeedback``) and the
action space ("arms") are those of every multi-armed bandit: a bandit environment without
advice can be played with the ``experts="arms"`` experts (expert j always advises arm j; EXP4
is then EXP3) or ``experts="random"`` (N Dirichlet(1) advice vectors per round, drawn up front
from ``advice_seed``, independent of the losses).

**EXP4** (Auer, Cesa-Bianchi, Freund & Schapire 2002; Lattimore & Szepesvari 2020, Algorithm 11
and Theorem 18.1): weights q_t over the experts, proportional to exp(-eta Y~_{t-1}(j));
p_t = sum_j q_t(j) xi_t^j; play I_t ~ p_t; observe y_t; the experts' estimated losses are
y~_t(j) = xi_t^j(I_t) y_t / p_t(I_t). For losses in [0, 1] and eta = sqrt(2 log N / (n K)) the
regret is at most sqrt(2 n K log N) (:func:`exp4_parameters`, :func:`exp4_regret_bound`).

**Robust EXP4** (``threshold`` c): y_t is skipped when |y_t| > c p_t(I_t) / eta, as in robust
EXP3 (:mod:`dponline.bandits.exp3`). *Theorem (ours).* For values y_t = S_t + Z_t with S_t in
[0, 1] of conditional mean l_t(I_t) (oblivious losses and advice), Z_t symmetric and
independent, E[y_t^2 | past, I_t] <= sigma^2:

    E[regret] <= log N / eta + n eta K sigma^2 h(c),   h(c) = (e^c - 1) / c^2,

2 sqrt(n K sigma^2 h(c) log N) at eta = sqrt(log N / (n K sigma^2 h(c))). *Proof (ours).* As
for robust EXP3 with the experts in place of the arms: every |eta y~_t(j)| <= eta |y_t| /
p_t(I_t) <= c (xi <= 1), so the exponential-weights step costs eta kappa sum_j q_t(j)
y~_t(j)^2 with kappa = (e^c - 1 - c) / c^2, whose conditional mean is at most
E[y_t^2 / p_t(I_t)^2 sum_j q_t(j) xi_t^j(I_t)] = E[y_t^2 / p_t(I_t)] <= K sigma^2 (xi^2 <= xi);
the per-arm estimate l^_t(i) = 1{I_t = i} y_t 1{kept} / p_t(i) has mean l_t(i) - beta_t(i) with
0 <= beta_t(i) <= sigma^2 eta / (c p_t(i)), so the learner's term sum_i p_t(i) beta_t(i) is at
most K sigma^2 eta / c and the comparator's -<xi_t^j, beta_t> is at most 0. []

**Private EXP4** (:class:`PrivateEXP4`, "private-exp4"): every observed loss is forwarded to
robust EXP4 with Laplace(1 / epsilon) noise (Agarwal & Singh's Algorithm 4,
:mod:`dponline.bandits.private_reduction`: each loss used once, the exact sensitivity 1 of a
loss in [0, 1]), epsilon-DP; sigma^2 = 1 + 2 / epsilon^2, so the bound above is
O(sqrt(K T log N) / epsilon). The paper's second algorithm is a private EXP4 with regret
O(sqrt(K T log N) log(KT) / epsilon) (its abstract); its exact noise and step sizes could not
be checked against its text: this is our reading (Laplace on each loss), with our bound.

**Batched EXP4** (:class:`BatchedEXP4`, "batched-exp4"): the batched conversion
(:mod:`dponline.bandits.batched`) around an N-armed bandit algorithm over the experts: each
batch the base picks an expert J_b, each round of the batch plays I_t ~ xi_t^{J_b}, and the base
receives (sum of the batch's losses) / tau + Laplace(1 / (epsilon tau)). Given J_b, the batch
value's mean is the expert's batch loss, so the base faces an N-armed bandit with those losses.
Two bases: robust EXP3 (``base="exp3"``, the default), regret O(sqrt(N T log N / epsilon)) at
tau = ceil(1 / epsilon) (our bound), and HTINF (``base="htinf"``,
:mod:`dponline.bandits.htinf`), the heavy-tailed base of the paper's first expert algorithm,
whose rate is O(sqrt(N T / epsilon)) (the paper's; no bound with HTINF's constants is proven
here, so both calibrations take tau = ceil(1 / epsilon), as ``batched-htinf`` does). The arms
I_t are drawn from public advice with the learner's own randomness: post-processing, the
privacy derivation of the conversion holds unchanged, whatever the base.

The paper's third algorithm for expert advice (a batched EXP4 that adds Laplace noise to the
importance-weighted estimates of every expert's loss, regret
O(N^(1/6) K^(1/2) T^(2/3) / epsilon^(1/3) + N^(1/2) / epsilon), for many experts and small
epsilon) is not implemented: only secondary accounts of it could be read, and they disagree on
how its noise scales with N. Compared by the rates alone (constants and logarithms dropped,
its additive N^(1/2) / epsilon kept), it is below both learners' rates here and below T only
in narrow windows at epsilon <= 0.01 with few arms (K = 2, N = 100, epsilon = 0.01:
5,300 < T < 103,000), and in none at epsilon = 0.1 for K in {2, 10} and N from 16 to 1e6.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.batched import (
    MODERATE_EXP3_OPTIONS,
    SHARP_EXP3_OPTIONS,
    BatchedPrivateBandit,
    batched_exp3_regret_bound,
)
from dponline.bandits.exp3 import (
    DEFAULT_THRESHOLD,
    EXP3,
    SampledArms,
    exp3_parameters,
    laplace_second_moment,
    robust_exp3_parameters,
    sample_rows,
    skip_constant,
)
from dponline.bandits.htinf import HTINF, SKIP_CONSTANT
from dponline.bandits.private_reduction import PrivateBanditReduction
from dponline.environments.expert_advice import arm_experts, checked_advice, random_advice
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.protocol import FeedbackKind, checked_count
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike, generator_state
from dponline.warn import warn_caller

__all__ = [
    "ADVICE_ASSUMES",
    "EXP4",
    "BatchedEXP4",
    "PrivateEXP4",
    "advice_digest",
    "arm_experts",
    "checked_advice",
    "exp4_parameters",
    "exp4_regret_bound",
    "random_advice",
    "robust_exp4_parameters",
    "robust_exp4_regret_bound",
]


def advice_digest(advice: np.ndarray, rows: int = 4096) -> str:
    """SHA-256 of the advice's shape and values (float64, row-major), read a few thousand
    rounds at a time (a broadcast view such as :func:`arm_experts` is never copied whole): a
    saved state records it, so that it resumes only with the same advice."""
    digest = hashlib.sha256(repr(advice.shape).encode())
    for start in range(0, advice.shape[0], rows):
        digest.update(np.ascontiguousarray(advice[start : start + rows], dtype=float).tobytes())
    return digest.hexdigest()


def exp4_parameters(n_experts: int, n_arms: int, horizon: int) -> float:
    """eta = sqrt(2 log N / (n K)) (Lattimore & Szepesvari 2020, Theorem 18.1); for a single
    expert any rate does (there is nothing to learn): 1 / sqrt(n K)."""
    n_exp, k = checked_count("n_experts", n_experts), checked_count("n_arms", n_arms)
    n = checked_count("horizon", horizon)
    return math.sqrt(max(2.0 * math.log(n_exp), 1.0) / (n * k))


def exp4_regret_bound(n_experts: int, n_arms: int, horizon: int) -> float:
    """sqrt(2 n K log N): EXP4's regret bound at :func:`exp4_parameters` (Theorem 18.1)."""
    return math.sqrt(2.0 * horizon * n_arms * math.log(n_experts))


def robust_exp4_parameters(
    n_experts: int,
    n_arms: int,
    horizon: int,
    second_moment: float,
    threshold: float = DEFAULT_THRESHOLD,
) -> float:
    """eta = sqrt(log N / (n K sigma^2 h(c))), the minimiser of
    :func:`robust_exp4_regret_bound` (ours; module docstring); 1 / sqrt(n K sigma^2 h(c)) for
    a single expert (log 1 = 0: nothing to learn)."""
    n_exp, k = checked_count("n_experts", n_experts), checked_count("n_arms", n_arms)
    n = checked_count("horizon", horizon)
    s2 = checked_positive("second_moment", second_moment)
    log_n = math.log(n_exp) if n_exp >= 2 else 1.0
    return math.sqrt(log_n / (n * k * s2 * skip_constant(threshold)))


def robust_exp4_regret_bound(
    n_experts: int,
    n_arms: int,
    horizon: int,
    second_moment: float,
    threshold: float = DEFAULT_THRESHOLD,
    eta: float | None = None,
) -> float:
    """log N / eta + n eta K sigma^2 h(c): robust EXP4's regret bound (ours; module
    docstring)."""
    if eta is None:
        eta = robust_exp4_parameters(n_experts, n_arms, horizon, second_moment, threshold)
    eta = checked_positive("eta", eta)
    s2 = checked_positive("second_moment", second_moment)
    return math.log(n_experts) / eta + horizon * eta * n_arms * s2 * skip_constant(threshold)


class EXP4(SampledArms):
    """EXP4 over the experts of ``advice`` (T, N, K), vectorised over ``replicas``, with the
    optional skipping rule of robust EXP4 (module docstring). A bandit algorithm for the
    wrappers (:class:`~dponline.bandits.private_reduction.BanditAlgorithm`): it plays arms
    (drawn as :class:`~dponline.bandits.exp3.SampledArms` draws them), reading advice row s in
    its own round s (``step``, advanced by ``learn``)."""

    def __init__(
        self,
        advice: np.ndarray,
        *,
        eta: float,
        replicas: int,
        rng: np.random.Generator,
        threshold: float | None = None,
    ) -> None:
        self.advice = checked_advice(advice)
        self.horizon, self.n_experts, k = self.advice.shape
        self._start_arms(k, replicas, rng)
        self.eta = checked_positive("eta", eta)
        self.threshold = None if threshold is None else checked_positive("threshold", threshold)
        self.step = 0
        self._log_q = np.zeros((self.replicas, self.n_experts))

    def weights(self) -> np.ndarray:
        """q_t over the experts, shape (replicas, N)."""
        z = np.exp(self._log_q - self._log_q.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def _row(self) -> np.ndarray:
        return self.advice[min(self.step, self.horizon - 1)]

    def probabilities(self) -> np.ndarray:
        """p_t = sum_j q_t(j) xi_t^j over the arms, shape (replicas, K)."""
        return self.weights() @ self._row()

    def learn(self, values: np.ndarray) -> None:
        """y~_t(j) = xi_t^j(I_t) y_t / p_t(I_t) (0 where skipped) added to every expert."""
        values = np.asarray(values, dtype=float)
        xi = self._row()
        p = self.probabilities()[self._rows, self._chosen]
        coef = values / p
        if self.threshold is not None:
            coef = np.where(np.abs(values) * self.eta <= self.threshold * p, coef, 0.0)
        self._log_q -= self.eta * coef[:, None] * xi[:, self._chosen].T
        self._log_q -= self._log_q.max(axis=1, keepdims=True)
        self.step += 1

    @cached_property
    def _advice_digest(self) -> str:
        return advice_digest(self.advice)

    def _config(self) -> dict[str, Any]:
        return {
            "shape": [self.horizon, self.n_experts, self.n_arms],
            "advice": self._advice_digest,
            "eta": self.eta,
            "threshold": self.threshold,
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "step": self.step,
            "log_q": self._log_q.copy(),
            "chosen": self._chosen.copy(),
            "rng": generator_state(self.rng),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, round, weights, arms, RNG) and return the
        function that installs it."""
        if saved_field(state, "config") != self._config():
            raise ArgumentError("state was saved from an EXP4 with other advice or step sizes")
        step = saved_field(state, "step")
        if isinstance(step, bool) or not isinstance(step, int | np.integer):
            raise ArgumentError(f"saved step must be an integer, got {step!r}")
        if not 0 <= step <= self.horizon:
            raise ArgumentError(f"saved step must lie in [0, {self.horizon}], got {step!r}")
        shape = (self.replicas, self.n_experts)
        log_q = np.array(checked_real_array("saved log_q", saved_field(state, "log_q"), shape))
        chosen = checked_int_array(
            "saved chosen", saved_field(state, "chosen"), (self.replicas,), 0, self.n_arms
        )
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self.step, self._log_q, self._chosen, self.rng = int(step), log_q, chosen, rng

        return install

    def learned_rounds(self, state: dict[str, Any]) -> int:
        """The values a saved state (one :meth:`prepare_load` accepted) has learned from: its
        step (``learn`` advances it), for a wrapper to check against its own round counter."""
        return int(saved_field(state, "step"))


#: what the private expert-advice learners' guarantees assume about the advice
ADVICE_ASSUMES = (
    "the experts' advice is fixed before the first round and public: the guarantee covers the "
    "losses only, so advice computed from the protected data is not protected"
)


def _with_advice_assumed(privacy: PrivacyGuarantee | None) -> PrivacyGuarantee | None:
    """``privacy`` with :data:`ADVICE_ASSUMES` among what it assumes (``None`` stays)."""
    if privacy is None:
        return None
    assumes = "; ".join(a for a in (privacy.assumes, ADVICE_ASSUMES) if a)
    return dataclasses.replace(privacy, assumes=assumes)


class PrivateEXP4(PrivateBanditReduction):
    """Private EXP4: Laplace(1 / epsilon) on every observed loss, forwarded to robust EXP4
    (module docstring; Agarwal & Singh's Algorithm 4 around EXP4, bound ours).

    Parameters
    ----------
    advice:
        (T, N, K) distributions over the arms, one per round and expert (T is the horizon).
    budget:
        Pure-DP budget; ``None`` runs EXP4 (eta = sqrt(2 log N / (T K)), no skipping).
    eta, threshold:
        Override the learning rate (default :func:`robust_exp4_parameters` at
        sigma^2 = 1 + 2 lambda^2) and the skipping threshold (default 1.6).
    """

    paper: ClassVar[str] = "Asi, Raman & Talwar (2025), private EXP4 (Laplace on each loss)"

    def __init__(
        self,
        advice: np.ndarray,
        *,
        budget: PrivacyBudget | None,
        eta: float | None = None,
        threshold: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        advice = checked_advice(advice)
        horizon, n_exp, k = advice.shape
        self.n_arms, self.n_experts = k, n_exp
        c = DEFAULT_THRESHOLD if threshold is None else float(threshold)

        def make(lam: float, gen: np.random.Generator) -> EXP4:
            if lam == 0.0:
                rate = exp4_parameters(n_exp, k, horizon) if eta is None else eta
                return EXP4(advice, eta=rate, replicas=replicas, rng=gen, threshold=threshold)
            s2 = laplace_second_moment(lam)
            rate = robust_exp4_parameters(n_exp, k, horizon, s2, c) if eta is None else eta
            return EXP4(advice, eta=rate, replicas=replicas, rng=gen, threshold=c)

        super().__init__(
            make,
            horizon,
            budget=budget,
            loss_bounds=Box(0.0, 1.0, dim=k),
            sensitivity=1.0,
            paper_numerator=1.0,
            paper_source="Asi, Raman & Talwar (2025), private EXP4 (Laplace(1 / epsilon))",
            replicas=replicas,
            rng=rng,
            clip=clip,
        )
        self.privacy = _with_advice_assumed(self.privacy)

    def weights(self) -> np.ndarray:
        """EXP4's weights over the experts, shape (replicas, N)."""
        return self.algorithm.weights()  # type: ignore[attr-defined, no-any-return]

    def probabilities(self) -> np.ndarray:
        """EXP4's distribution over the arms this round, shape (replicas, K)."""
        return self.algorithm.probabilities()  # type: ignore[attr-defined, no-any-return]


class BatchedEXP4(BatchedPrivateBandit):
    """The batched conversion around an N-armed bandit algorithm over the experts of ``advice``
    (module docstring): one expert per batch, each round's arm drawn from that expert's advice.

    Parameters
    ----------
    advice:
        (T, N, K) distributions over the arms (T is the horizon); N >= 2 experts.
    budget, batch:
        As :class:`~dponline.bandits.batched.BatchedEXP3`, with the experts as its arms.
    base:
        ``"exp3"`` (robust EXP3, default) or ``"htinf"`` (HTINF, the paper's base; tau =
        ceil(1 / epsilon) in both calibrations).
    eta, threshold:
        EXP3's learning rate and skipping threshold c (as
        :class:`~dponline.bandits.batched.BatchedEXP3`).
    sigma, theta:
        HTINF's sigma (default sqrt(1 + 2 b^2)) and skipping constant (default
        1 - 2^(-1/3); ``None``: no skipping), as :class:`~dponline.bandits.batched.BatchedHTINF`.
    """

    paper: ClassVar[str] = "Asi, Raman & Talwar (2025), batched conversion over the experts"

    #: the base algorithms over the experts
    BASES: ClassVar[tuple[str, ...]] = ("exp3", "htinf")

    def __init__(
        self,
        advice: np.ndarray,
        *,
        budget: PrivacyBudget | None,
        batch: int | None = None,
        base: str = "exp3",
        eta: float | None = None,
        threshold: float | None = None,
        sigma: float | None = None,
        theta: float | str | None = "default",
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self.advice = checked_advice(advice)
        horizon, n_exp, k = self.advice.shape
        if n_exp < 2:
            raise ValueError(f"the batched conversion needs at least 2 experts, got {n_exp}")
        if base not in self.BASES:
            raise ValueError(f"base must be one of {self.BASES}, got {base!r}")
        other = (
            {"eta": eta is not None, "threshold": threshold is not None}
            if base == "htinf"
            else {"sigma": sigma is not None, "theta": theta != "default"}
        )
        for name, given in other.items():
            if given:
                raise ValueError(f"{name} is an option of the other base, not of {base!r}")
        skip = SKIP_CONSTANT if theta == "default" else theta
        self.base = base
        self.n_arms, self.n_experts, self.dim = k, n_exp, k
        c = DEFAULT_THRESHOLD if threshold is None else float(threshold)

        def bound(tau: int, b: float) -> float:  # at the rate the run will use
            return batched_exp3_regret_bound(n_exp, horizon, tau, b, c, eta=eta)

        def make(b: float, n: int, gen: np.random.Generator) -> EXP3 | HTINF:
            if base == "htinf":
                s = math.sqrt(laplace_second_moment(b)) if sigma is None else sigma
                return HTINF(n_exp, sigma=s, replicas=replicas, rng=gen, theta=skip)
            if b == 0.0:
                rate = exp3_parameters(n_exp, n) if eta is None else eta
                return EXP3(n_exp, eta=rate, replicas=replicas, rng=gen, threshold=threshold)
            s2 = laplace_second_moment(b)
            rate = robust_exp3_parameters(n_exp, n, s2, c) if eta is None else eta
            return EXP3(n_exp, eta=rate, replicas=replicas, rng=gen, threshold=c)

        super().__init__(
            make,
            horizon,
            budget=budget,
            width=1.0,
            bound=bound if base == "exp3" else None,
            batch=batch,
            replicas=replicas,
            rng=rng,
            clip=clip,
        )
        self.privacy = _with_advice_assumed(self.privacy)

    def weights(self) -> np.ndarray:
        """The base's distribution over the experts, shape (replicas, N)."""
        return self.algorithm.probabilities()  # type: ignore[attr-defined, no-any-return]

    def probabilities(self) -> np.ndarray:
        """The distribution this round's arm is drawn from, shape (replicas, K): the advice of
        the batch's expert once it is drawn (from the batch's first ``act()`` on), before that
        the advice mixed by the base's weights, sum_j w(j) xi_t^j."""
        row = self.advice[min(self.t, self.horizon - 1)]
        if self._choice is not None:
            return np.asarray(row[self._choice], dtype=float)
        return self.weights() @ row

    @cached_property
    def _advice_digest(self) -> str:
        return advice_digest(self.advice)

    def _config(self) -> dict[str, Any]:
        return {**super()._config(), "base": self.base, "advice": self._advice_digest}

    def _play(self, choice: np.ndarray, t: int) -> np.ndarray:
        """I_t ~ xi_t^{J_b} per replica, J_b the batch's expert."""
        rows = self.advice[min(t, self.horizon - 1)][choice]
        return sample_rows(rows, self._rng.random(self.replicas))

    def _checked_choice(self, value: Any) -> np.ndarray | None:
        if value is None:
            return None
        return checked_int_array("saved choice", value, (self.replicas,), 0, self.n_experts)

    def _checked_arm(self, arm: np.ndarray, choice: np.ndarray) -> None:
        """Any arm: the round's arm is drawn from the batch expert's advice (:meth:`_play`),
        not the expert itself (its range is checked)."""

    def _choice_bounds(self, choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[0, 1]: every arm's loss lies in it, whichever arms the batch's expert drew."""
        return np.zeros(self.replicas), np.ones(self.replicas)


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _advice_of(env: Any, experts: str | None, n_experts: int | None, advice_seed: int) -> Any:
    """The advice a factory builds its learner with: the environment's when it has one and
    ``experts`` is not given, else ``experts="arms"`` (one expert per arm) or ``"random"``
    (``n_experts`` Dirichlet experts, default 2K, from ``advice_seed``). An environment
    without advice and no ``experts`` runs the arm experts with a warning; ``experts`` beside an
    environment's own advice is refused (its regret is against the environment's experts)."""
    advice = getattr(env, "advice", None)
    if experts is None:
        if advice is not None:
            return advice
        warn_caller(
            f"the environment {getattr(env, 'name', type(env).__name__)!r} gives no experts' "
            "advice: the learner runs with one expert per arm (EXP4 is then EXP3); pass "
            "experts='arms' to say so, or experts='random', or play an environment with advice"
        )
        experts = "arms"
    elif advice is not None:
        raise ArgumentError(
            f"the environment gives {advice.shape[1]} experts' advice and its regret is against "
            f"them: experts={experts!r} would replace that advice for the learner alone; drop the "
            "experts option"
        )
    if experts == "arms":
        return arm_experts(env.horizon, env.dim)
    if experts == "random":
        n = 2 * env.dim if n_experts is None else n_experts
        return random_advice(env.horizon, n, env.dim, advice_seed)
    raise ValueError(f"experts must be 'arms' or 'random', got {experts!r}")


def _private_exp4(
    env: Any,
    *,
    budget: PrivacyBudget | None,
    experts: str | None = None,
    n_experts: int | None = None,
    advice_seed: int = 0,
    **kw: Any,
) -> PrivateEXP4:
    """Private EXP4 over ``env``'s arms and horizon with its advice (or the ``experts``)."""
    return PrivateEXP4(_advice_of(env, experts, n_experts, advice_seed), budget=budget, **kw)


def _batched_exp4(
    env: Any,
    *,
    budget: PrivacyBudget | None,
    experts: str | None = None,
    n_experts: int | None = None,
    advice_seed: int = 0,
    **kw: Any,
) -> BatchedEXP4:
    """The batched conversion over ``env``'s experts (or the ``experts``)."""
    return BatchedEXP4(_advice_of(env, experts, n_experts, advice_seed), budget=budget, **kw)


def _same_arm(outputs: np.ndarray) -> np.ndarray:
    """1 where round 2 repeats round 1's arm, outputs (n, 2)."""
    return (outputs[:, 0] == outputs[:, 1]).astype(float)


_SETTING = "bandit with expert advice (advice fixed in advance, public)"
_ADVICE_OPTIONS = {
    "experts": "'arms' | 'random' (default: the environment's advice, else 'arms')",
    "n_experts": "experts for 'random' (default 2K)",
    "advice_seed": "seed of the 'random' advice",
}
_RANDOM = {"experts": "random", "n_experts": 4}
# the audit's two rounds on two arms with the arm experts (EXP4 is then EXP3): round 1's loss is
# 0 or 1 for both arms, round 2's 1/2; batched EXP3's audit options (a step so large that the
# next arm is all but a threshold on the noisy value, no skipping): half the noise is refuted
_AUDIT = {
    "horizon": 2,
    "values": (0.0, 1.0),
    "rest": 0.5,
    "coordinates": "all",
    "environment": "bernoulli_bandit",
    "environment_options": {"n_arms": 2},
    "statistic": _same_arm,
    "trials": 40_000,
    "pilot_trials": 10_000,
}

_PRIVATE_EXP4_ENTRY = register_learner(
    LearnerEntry(
        "private-exp4",
        _private_exp4,
        paper="private EXP4 for bandits with expert advice after Asi, Raman & Talwar (2025), "
        "our reading: Algorithm 4 of Agarwal & Singh (Laplace(1 / epsilon) on each observed "
        "loss) around EXP4 with a skipping rule (noise placement and bound ours)",
        setting=_SETTING,
        guarantee="event-level epsilon-DP over loss sequences differing in one round (losses "
        "in [0, 1]): Laplace(1 / epsilon) on each observed loss, used once (Lemma 4.2 of "
        "Agarwal & Singh 2017)",
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                learner_options=_RANDOM,
                audit=AuditCase(
                    **_AUDIT,
                    learner_options={
                        "experts": "arms",
                        "eta": SHARP_EXP3_OPTIONS["eta"],
                        "threshold": SHARP_EXP3_OPTIONS["threshold"],
                    },
                    one_run_options=MODERATE_EXP3_OPTIONS,
                    seed=7,
                ),
            ),
        ),
        options={
            **_ADVICE_OPTIONS,
            "eta": "learning rate (default: robust EXP4's, ours)",
            "threshold": "skipping threshold c (default 1.6)",
        },
        default_delta=0.0,
    )
)

register_learner(
    LearnerEntry(
        "batched-exp4",
        _batched_exp4,
        paper="Asi, Raman & Talwar (2025), the batched conversion over the experts (one expert "
        "per batch, arms drawn from its advice) around EXP3 with a skipping rule (bound ours) "
        "or, with base='htinf', around HTINF (the paper's first expert algorithm)",
        setting=_SETTING,
        guarantee="event-level epsilon-DP over loss sequences differing in one round (losses "
        "in [0, 1]): Laplace(1 / (epsilon tau)) on each batch's loss sum / tau, each round in "
        "one batch",
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                learner_options=_RANDOM,
                audit=AuditCase(
                    **_AUDIT,
                    learner_options={"experts": "arms", **SHARP_EXP3_OPTIONS},
                    one_run_options=MODERATE_EXP3_OPTIONS,
                    seed=8,
                ),
            ),
            # the HTINF base, audited with batched-htinf's small sigma and no skipping
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                learner_options={**_RANDOM, "base": "htinf"},
                audit=AuditCase(
                    **_AUDIT,
                    learner_options={
                        "experts": "arms",
                        "batch": 1,
                        "base": "htinf",
                        "sigma": 0.25,
                        "theta": None,
                    },
                    seed=9,
                ),
                label="htinf",
            ),
        ),
        options={
            **_ADVICE_OPTIONS,
            "batch": "batch length tau (default: paper ceil(1 / epsilon), tight the bound's "
            "minimiser)",
            "base": "'exp3' (robust EXP3 over the experts, default) or 'htinf' (HTINF, the "
            "paper's base; tau = ceil(1 / epsilon) in both calibrations)",
            "eta": "EXP3's learning rate (default: robust EXP3's over the experts, ours)",
            "threshold": "EXP3's skipping threshold c (default 1.6)",
            "sigma": "HTINF's sigma (default sqrt(1 + 2 b^2))",
            "theta": "HTINF's skipping constant (default 1 - 2^(-1/3); None: no skipping)",
        },
        default_delta=0.0,
    )
)

register_learner(
    non_private_entry(
        _PRIVATE_EXP4_ENTRY,
        "exp4",
        paper="EXP4 (Auer et al. 2002; Lattimore & Szepesvari 2020, Theorem 18.1); the "
        "non-private counterpart of private-exp4 and batched-exp4",
        test_cases=(
            LearnerTestCase(
                "stock_bandit",
                environment_options={"dataset": "djia"},
                learner_options={"experts": "random", "n_experts": 8},
                randomised=True,
            ),
        ),
        options={**_ADVICE_OPTIONS, "eta": "learning rate (default: Theorem 18.1's)"},
        extra_counterpart_of=("batched-exp4",),
    )
)
