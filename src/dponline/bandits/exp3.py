"""EXP3 on K arms, and the same algorithm made robust to noisy, signed, heavy-tailed losses by a
two-sided skipping rule: the base algorithm of the batched private conversion
(:mod:`dponline.bandits.batched`, Asi, Raman & Talwar 2025).

**EXP3** (Auer, Cesa-Bianchi, Freund & Schapire 2002; the loss-based form of Lattimore &
Szepesvari 2020, Algorithm 9 / Theorem 11.2). Each round, for every replica: x_t(i) is
proportional to exp(-eta L~_{t-1}(i)); play I_t ~ x_t; observe a value y_t of the arm played;
the estimate l~_t(i) = 1{I_t = i} y_t / x_t(i) is added to L~. For losses in [0, 1] and
eta = sqrt(2 log K / (n K)) the expected regret over n rounds is at most sqrt(2 n K log K)
(:func:`exp3_parameters`, :func:`exp3_regret_bound`; Theorem 11.2 of Lattimore & Szepesvari).

**Robust EXP3** (``threshold`` c given). The private conversion hands its base algorithm
y_t = S_t + Z_t: S_t in [0, 1] (a batch's scaled loss, whose conditional mean given the arm is
the arm's oblivious loss a_t(i)) plus symmetric Laplace noise Z_t independent of the rest, so
y_t is signed and only its second moment is bounded: E[y_t^2 | past, I_t = i] <= sigma^2
(sigma^2 = 1 + 2 b^2 for Laplace(b): :func:`laplace_second_moment`). EXP3 on such values can
blow up (a large negative y_t / x_t(i) multiplies a weight by an unbounded factor), so a value
is *skipped* (its estimate set to 0) when |y_t| > c x_t(I_t) / eta, the two-sided skipping rule
of heavy-tailed bandits (Huang, Dai & Huang 2022, who use it inside Tsallis-INF). The paper
instantiates the conversion with that heavy-tailed algorithm (HTINF); its exact constants could
not be checked against the paper's text, so dponline runs EXP3 with the skipping rule instead,
with the bound below, which is ours.

**Theorem (ours).** Let every S_t lie in [0, 1], Z_t be symmetric and independent of S_t and
the past, E[y_t^2 | past, I_t = i] <= sigma^2, and the arms' mean losses a_t(i) = E[S_t | past,
I_t = i] be fixed in advance (oblivious). Robust EXP3 with threshold c > 0 and learning rate eta
has, against every arm j,

    E sum_t (a_t(I_t) - a_t(j)) <= log K / eta + n eta K sigma^2 h(c),
    h(c) = (e^c - 1 - c) / c^2 + 1 / c = (e^c - 1) / c^2,

minimised by eta = sqrt(log K / (n K sigma^2 h(c))) at 2 sqrt(n K sigma^2 h(c) log K)
(:func:`robust_exp3_parameters`, :func:`robust_exp3_regret_bound`; h is least, 1.544, at
c = 2 (1 - e^{-c}), c = 1.594, about :data:`DEFAULT_THRESHOLD`).

*Proof (ours).* Write r_t(i) = c x_t(i) / eta and l~_t(i) = 1{I_t = i} y_t 1{|y_t| <= r_t(i)} /
x_t(i), so every w = eta l~_t(i) lies in [-c, c]. (1) Exponential weights: with
W_t = sum_i exp(-eta L~_t(i)), log(W_n / W_0) >= -eta L~_n(j) - log K, and since
e^{-w} <= 1 - w + kappa w^2 on [-c, c] with kappa = (e^c - 1 - c) / c^2 (the function
(e^{-w} - 1 + w) / w^2 decreases in w), log(W_t / W_{t-1}) <= -eta <x_t, l~_t> + eta^2 kappa
sum_i x_t(i) l~_t(i)^2. Hence sum_t <x_t, l~_t> - L~_n(j) <= log K / eta + eta kappa sum_t
sum_i x_t(i) l~_t(i)^2, whose last sum has conditional mean sum_i E[y^2 1{kept} | I = i] <=
K sigma^2 per round. (2) Bias: E[l~_t(i) | past] = a_t(i) - beta_t(i) with
beta_t(i) = E[y_t 1{|y_t| > r_t(i)} | past, I_t = i]. Given S_t = s >= 0, pair the noise
values z >= 0 and -z (equally likely): (s + z) 1{s + z > r} + (s - z) 1{|s - z| > r} is 2s
when both indicators hold, s + z >= 0 when only the first does, 0 when neither, and the second
cannot hold alone (|s - z| <= s + z). So beta_t(i) >= 0 for symmetric Z and S >= 0; and
beta_t(i) <= E[y^2] / r_t(i) <= sigma^2 eta / (c x_t(i)), as |y| 1{|y| > r} <= y^2 / r.
(3) The regret is sum_t (<x_t, E l~_t> - E l~_t(j)) + sum_t (<x_t, beta_t> - beta_t(j)): the
first sum is bounded by (1); in the second -beta_t(j) <= 0 and <x_t, beta_t> <=
sum_i x_t(i) sigma^2 eta / (c x_t(i)) = K sigma^2 eta / c. Adding up gives the bound. []

Without noise (y_t = S_t in [0, 1]) no value needs skipping: ``threshold=None`` runs plain EXP3.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.protocol import checked_count
from dponline.rng import generator_state

__all__ = [
    "DEFAULT_THRESHOLD",
    "EXP3",
    "SampledArms",
    "exp3_parameters",
    "exp3_regret_bound",
    "laplace_second_moment",
    "robust_exp3_parameters",
    "robust_exp3_regret_bound",
    "sample_rows",
    "skip_constant",
]

#: The skipping threshold c: h(c) = (e^c - 1) / c^2 is least (1.544) at c = 1.594.
DEFAULT_THRESHOLD = 1.6


def exp3_parameters(n_arms: int, horizon: int) -> float:
    """eta = sqrt(2 log K / (n K)): EXP3's learning rate for losses in [0, 1] over n rounds
    (Lattimore & Szepesvari 2020, Theorem 11.2)."""
    k, n = checked_count("n_arms", n_arms), checked_count("horizon", horizon)
    return math.sqrt(2.0 * math.log(k) / (n * k))


def exp3_regret_bound(n_arms: int, horizon: int) -> float:
    """sqrt(2 n K log K): EXP3's expected regret bound at :func:`exp3_parameters`
    (Lattimore & Szepesvari 2020, Theorem 11.2)."""
    k, n = checked_count("n_arms", n_arms), checked_count("horizon", horizon)
    return math.sqrt(2.0 * n * k * math.log(k))


def skip_constant(threshold: float) -> float:
    """h(c) = (e^c - 1 - c) / c^2 + 1 / c = (e^c - 1) / c^2: the stability (first term) and the
    skipping bias (second) per unit of eta n K sigma^2 in the robust EXP3 bound (module
    docstring)."""
    c = checked_positive("threshold", threshold)
    return math.expm1(c) / c**2


def laplace_second_moment(scale: float, loss_bound: float = 1.0) -> float:
    """sigma^2 = M^2 + 2 b^2: the largest E[(S + Z)^2] for S in [0, M] and Z ~ Laplace(b)
    independent of S (E[Z] = 0, E[Z^2] = 2 b^2); inf when b^2 overflows (epsilon ~ 1e-300)."""
    m, b = float(loss_bound), float(scale)
    return m * m + 2.0 * b * b  # products, not **, which raises OverflowError


def robust_exp3_parameters(
    n_arms: int, horizon: int, second_moment: float, threshold: float = DEFAULT_THRESHOLD
) -> float:
    """eta = sqrt(log K / (n K sigma^2 h(c))), which minimises :func:`robust_exp3_regret_bound`
    (ours; module docstring)."""
    k, n = checked_count("n_arms", n_arms), checked_count("horizon", horizon)
    s2 = checked_positive("second_moment", second_moment)
    return math.sqrt(math.log(k) / (n * k * s2 * skip_constant(threshold)))


def robust_exp3_regret_bound(
    n_arms: int,
    horizon: int,
    second_moment: float,
    threshold: float = DEFAULT_THRESHOLD,
    eta: float | None = None,
) -> float:
    """log K / eta + n eta K sigma^2 h(c): robust EXP3's expected regret bound over n rounds
    against an oblivious sequence, for values whose second moment is at most sigma^2 (ours;
    the theorem of the module docstring). ``eta`` defaults to :func:`robust_exp3_parameters`."""
    k, n = checked_count("n_arms", n_arms), checked_count("horizon", horizon)
    s2 = checked_positive("second_moment", second_moment)
    if eta is None:
        eta = robust_exp3_parameters(k, n, s2, threshold)
    eta = checked_positive("eta", eta)
    return math.log(k) / eta + n * eta * k * s2 * skip_constant(threshold)


def sample_rows(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One index per row of the probability rows ``p`` (R, K) by inversion with the uniforms
    ``u`` (R,) in [0, 1): the least i with u S < p_0 + ... + p_i, S the row's total (so that
    rounding never picks an index of probability 0)."""
    cdf = np.cumsum(p, axis=1)
    picks = ((u * cdf[:, -1])[:, None] >= cdf).sum(axis=1)
    return np.minimum(picks, p.shape[1] - 1).astype(np.int64)


class SampledArms(ABC):
    """What an arm-drawing base algorithm shares (EXP3, :class:`~dponline.bandits.htinf.HTINF`):
    ``act()`` draws each replica's arm from its ``probabilities()`` with one uniform of ``rng``
    per replica (:func:`sample_rows`); ``played_arms()``, ``played()`` report it;
    ``load_state_dict`` installs a checked state (``prepare_load``)."""

    one_hot: ClassVar[bool] = True
    n_arms: int
    dim: int
    replicas: int
    rng: np.random.Generator
    _chosen: np.ndarray
    _rows: np.ndarray

    @abstractmethod
    def probabilities(self) -> np.ndarray:
        """x_t, the distribution of each replica's arm, shape (replicas, K)."""

    @abstractmethod
    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check a saved state and return the function that installs it."""

    def _start_arms(self, n_arms: int, replicas: int, rng: np.random.Generator) -> None:
        """The checked arms (K >= 2, also ``dim``), replicas and generator, no arm drawn yet."""
        self.n_arms = checked_count("n_arms", n_arms)
        if self.n_arms < 2:
            raise ValueError(f"n_arms must be at least 2, got {n_arms!r}")
        self.dim = self.n_arms
        self.replicas = checked_count("replicas", replicas)
        self.rng = rng
        self._chosen = np.zeros(self.replicas, dtype=np.int64)
        self._rows = np.arange(self.replicas)

    def act(self) -> np.ndarray:
        """Draw I_t ~ x_t per replica; returns the arms, shape (replicas,)."""
        u = self.rng.random(self.replicas)
        self._chosen = sample_rows(self.probabilities(), u)
        return self._chosen.copy()

    def played_arms(self) -> np.ndarray:
        """I_t, the arm each replica played, shape (replicas,)."""
        return self._chosen

    def played(self) -> np.ndarray:
        """The standard basis vector of each replica's arm, shape (replicas, K)."""
        return np.eye(self.n_arms)[self._chosen]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`; a corrupt state raises and changes nothing."""
        self.prepare_load(state)()


class EXP3(SampledArms):
    """EXP3 on ``n_arms`` arms, vectorised over ``replicas``, with the optional two-sided
    skipping rule of robust EXP3 (module docstring).

    It offers what a wrapper needs of a bandit algorithm
    (:class:`~dponline.bandits.private_reduction.BanditAlgorithm`): ``act()`` draws each
    replica's arm, ``learn(values)`` updates on the (possibly noisy) value of the arm each
    replica played, ``played()`` / ``played_arms()`` report that arm; ``state_dict()`` and
    ``prepare_load()`` save and check the whole state, RNG included.

    Parameters
    ----------
    n_arms:
        K >= 2.
    eta:
        The learning rate (:func:`exp3_parameters` for losses in [0, 1],
        :func:`robust_exp3_parameters` for noisy values).
    threshold:
        c: a value y of the arm i played is skipped when |y| > c x_t(i) / eta. ``None`` never
        skips (plain EXP3, for values in [0, 1]).
    """

    def __init__(
        self,
        n_arms: int,
        *,
        eta: float,
        replicas: int,
        rng: np.random.Generator,
        threshold: float | None = None,
    ) -> None:
        self._start_arms(n_arms, replicas, rng)
        self.eta = checked_positive("eta", eta)
        self.threshold = None if threshold is None else checked_positive("threshold", threshold)
        self._log_w = np.zeros((self.replicas, self.n_arms))

    def probabilities(self) -> np.ndarray:
        """x_t, shape (replicas, K): the softmax of the negative scaled cumulative estimates."""
        z = np.exp(self._log_w - self._log_w.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def estimates(self, values: np.ndarray) -> np.ndarray:
        """y / x_t(I_t) at the arm played (0 where skipped), per replica, shape (replicas,)."""
        values = np.asarray(values, dtype=float)
        p = self.probabilities()[self._rows, self._chosen]
        est = values / p
        if self.threshold is not None:
            est = np.where(np.abs(values) * self.eta <= self.threshold * p, est, 0.0)
        return est

    def learn(self, values: np.ndarray) -> None:
        """Add the estimate of each replica's value (module docstring) to the arm it played."""
        est = self.estimates(values)
        self._log_w[self._rows, self._chosen] -= self.eta * est
        self._log_w -= self._log_w.max(axis=1, keepdims=True)  # same x_t, no drift

    def _config(self) -> dict[str, Any]:
        return {"n_arms": self.n_arms, "eta": self.eta, "threshold": self.threshold}

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "log_w": self._log_w.copy(),
            "chosen": self._chosen.copy(),
            "rng": generator_state(self.rng),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, log-weights, arms, RNG) and return the
        function that installs it."""
        if saved_field(state, "config") != self._config():
            raise ArgumentError("state was saved from an EXP3 with other arms or step sizes")
        shape = (self.replicas, self.n_arms)
        log_w = np.array(checked_real_array("saved log_w", saved_field(state, "log_w"), shape))
        chosen = checked_int_array(
            "saved chosen", saved_field(state, "chosen"), (self.replicas,), 0, self.n_arms
        )
        rng = checked_generator("saved rng", saved_field(state, "rng"))

        def install() -> None:
            self._log_w, self._chosen, self.rng = log_w, chosen, rng

        return install
