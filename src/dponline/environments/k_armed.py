"""Stochastic K-armed bandits with Bernoulli, Beta or clipped-Gaussian rewards.

Each round every replica plays an arm a and draws a fresh reward X ~ P_a in [0, 1],
independent of everything before. The learner sees the loss 1 - X of the arm it played
(:class:`~dponline.protocol.BanditFeedback` carries losses; K-armed learners turn it back into
a reward), and the round's loss charged for regret is the *expected* loss of the arm played,
1 - mu_a, so that the regret curve is the pseudo-regret sum_s (mu* - mu_{a_s}), exactly,
without the noise of the rewards (as :class:`~dponline.environments.bandits.StochasticBandit`).

Reward families (``family``):

* ``"bernoulli"``: X ~ Bernoulli(m_a), mean m_a;
* ``"beta"``: X ~ Beta(m_a c, (1 - m_a) c) with concentration c (``concentration``, default 2,
  the uniform law at m_a = 1/2), mean m_a; an arm with m_a in {0, 1} gives that value always;
* ``"gaussian"``: X = clip(N(m_a, sigma^2), 0, 1) with ``sigma`` (default 0.1). Clipping moves
  the mean: E[X] = m (Phi(b) - Phi(a)) + sigma (phi(a) - phi(b)) + (1 - Phi(b)) with
  a = -m / sigma, b = (1 - m) / sigma (phi, Phi the standard normal density and distribution).
  The environment's ``means`` are these exact means of the clipped law, computed in closed form
  with scipy.stats, so pseudo-regret stays exact; the given m_a are kept as ``location``.

For the other two families ``means`` are the given m_a and ``location`` equals them.

The environment follows the protocol of :mod:`dponline.environments.base` and the fast path
:class:`~dponline.protocol.StochasticArms` used by K-armed learners to jump over a commitment:
``reward_sums(arms, counts)`` draws, for every replica r, the sum of ``counts[r]`` fresh
rewards of arm ``arms[r]`` in one call (one binomial draw for Bernoulli arms; draws summed in
chunks of at most 2^18 numbers for the others, so memory stays bounded for counts of 1e6 and
more), from the environment's own generator.

Instance families (mean vectors), for specs and tests:

* :func:`two_level_means`: one best arm and K - 1 equal ones (default 0.9 / 0.8): the classic
  hard instance, all suboptimal arms equally hard, where the lower bounds are a multiple of
  (K - 1);
* :func:`unequal_gap_means`: means spaced linearly from ``worst`` (arm 0) up to ``best`` (the
  last arm; default 0.5 to 0.9), so the gaps spread from (best - worst) / (K - 1) to
  best - worst: shows how an algorithm pays for near arms versus far ones;
* :func:`azize_basu_means`: (0.75, 0.625, 0.5, 0.375, 0.25), the instance of Azize & Basu's
  experiments (NeurIPS 2022, arXiv 2209.02570) and of Azize et al. (arXiv 2505.05613), on which
  :mod:`dponline.bandits.lower_bounds` pins its worked numbers.

:func:`build_k_armed` builds any of them by name (the catalogue entry ``k_armed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_generator,
    checked_int_array,
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.protocol import BanditFeedback, FeedbackKind
from dponline.rng import RngLike, as_generator, generator_state

__all__ = [
    "FAMILIES",
    "INSTANCES",
    "KArmedBandit",
    "azize_basu_means",
    "build_k_armed",
    "clipped_normal_mean",
    "two_level_means",
    "unequal_gap_means",
]

#: The reward families.
FAMILIES = ("bernoulli", "beta", "gaussian")
#: At most this many rewards are drawn at once by :meth:`KArmedBandit.reward_sums`.
_CHUNK = 1 << 18


def clipped_normal_mean(location: Any, sigma: float) -> np.ndarray:
    """E[clip(N(m, sigma^2), 0, 1)] for each m of ``location``, in closed form:
    m (Phi(b) - Phi(a)) + sigma (phi(a) - phi(b)) + Phi(-b), a = -m / sigma, b = (1 - m) / sigma.
    (E[X; 0 < X < 1] = m (Phi(b) - Phi(a)) + sigma (phi(a) - phi(b)), plus 1 times P(X > 1).)"""
    m = np.asarray(location, dtype=float)
    a = -m / sigma
    b = (1.0 - m) / sigma
    inside = stats.norm.cdf(b) - stats.norm.cdf(a)
    out = m * inside + sigma * (stats.norm.pdf(a) - stats.norm.pdf(b)) + stats.norm.sf(b)
    return np.clip(out, 0.0, 1.0)


@dataclass
class KArmedBandit:
    """Stochastic K-armed bandit (module docstring): rewards of arm a from the family
    ``family`` with parameter ``means[a]``; the feedback is the loss 1 - reward of the arm
    played, the loss charged is 1 - (exact mean reward of that arm)."""

    reveals_context: ClassVar[bool] = False
    #: Bernoulli, Beta and clipped Gaussian rewards lie in [0, 1] (StochasticArms' promise)
    rewards_in_unit_interval: ClassVar[bool] = True
    means: np.ndarray
    horizon: int
    family: str = "bernoulli"
    concentration: float = 2.0
    sigma: float = 0.1
    rng: RngLike = 0
    name: str = "k-armed bandit"
    feedback_kind: FeedbackKind = field(default=FeedbackKind.BANDIT, init=False)
    setting: str = field(default="bandit", init=False)

    def __post_init__(self) -> None:
        given = checked_real_array("means", self.means)
        if given.ndim != 1 or given.size < 2:
            raise ArgumentError(f"means must be a 1-d array of >= 2 arms, got shape {given.shape}")
        if np.any((given < 0.0) | (given > 1.0)):
            raise ArgumentError(f"means must lie in [0, 1], got {given.tolist()}")
        if self.family not in FAMILIES:
            raise ArgumentError(f"family must be one of {list(FAMILIES)}, got {self.family!r}")
        self.horizon = checked_count("horizon", self.horizon)
        self.concentration = checked_positive("concentration", self.concentration)
        self.sigma = checked_positive("sigma", self.sigma)
        #: the given parameters: mean rewards, or the normal's means before clipping
        self.location = given.copy()
        self.means = (
            clipped_normal_mean(given, self.sigma) if self.family == "gaussian" else given.copy()
        )
        self._gen = as_generator(self.rng)

    # --- what the learners and the reports read -------------------------------------------------

    @property
    def dim(self) -> int:
        """The number of arms K."""
        return int(self.means.size)

    @property
    def mean_rewards(self) -> np.ndarray:
        """The exact mean reward of each arm (a copy of ``means``)."""
        return self.means.copy()

    @property
    def gaps(self) -> np.ndarray:
        """Delta_a = mu* - mu_a for each arm (0 for the best)."""
        return self.means.max() - self.means

    # --- rounds -----------------------------------------------------------------------------

    def _arms(self, action: Any) -> np.ndarray:
        a = np.asarray(action)
        if a.ndim != 1 or a.dtype.kind not in "iu" or a.size == 0:
            raise ArgumentError(
                f"actions must be a 1-d integer array of arm indices (one per replica), got "
                f"{a.dtype} values of shape {a.shape}"
            )
        if a.min() < 0 or a.max() >= self.dim:
            raise ArgumentError(f"actions must be arm indices in [0, {self.dim}), got {a!r}")
        return a.astype(np.int64)

    def _draw(self, arms: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        """One reward for each entry of ``arms``."""
        if self.family == "bernoulli":
            return (gen.random(arms.shape) < self.means[arms]).astype(float)
        if self.family == "beta":
            m = self.location[arms]
            inner = (m > 0.0) & (m < 1.0)
            safe = np.where(inner, m, 0.5)
            x = gen.beta(safe * self.concentration, (1.0 - safe) * self.concentration)
            return np.where(inner, x, m)
        return np.clip(gen.normal(self.location[arms], self.sigma), 0.0, 1.0)

    def round(self, t: int, action: np.ndarray) -> tuple[BanditFeedback, np.ndarray]:
        """Round ``t``: each replica's fresh loss 1 - X as feedback, and its expected loss
        1 - mu_a as the loss charged (pseudo-regret)."""
        if not 0 <= int(t) < self.horizon:
            raise ArgumentError(f"round t must lie in [0, {self.horizon}), got {t!r}")
        arms = self._arms(action)
        reward = self._draw(arms, self._gen)
        return BanditFeedback(1.0 - reward), 1.0 - self.means[arms]

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        """Pseudo-regret from the cumulative expected losses: L_t - t (1 - mu*)."""
        t = np.arange(1, cumulative_loss.shape[-1] + 1) if rounds is None else np.asarray(rounds)
        return cumulative_loss - t * (1.0 - self.means.max())

    # --- the fast path (StochasticArms) -----------------------------------------------------

    def reward_sums(
        self, arms: Any, counts: Any, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """For each replica r, the sum of ``counts[r]`` fresh rewards of arm ``arms[r]``
        (0 for a count of 0), shape (R,), drawn from ``rng`` or the environment's own
        generator: one binomial draw per replica for Bernoulli arms; for the other families
        the rewards are drawn and summed, at most 2^18 at a time."""
        arms = self._arms(arms)
        counts = checked_int_array("counts", counts, arms.shape, low=0)
        gen = self._gen if rng is None else rng
        if self.family == "bernoulli":
            return gen.binomial(counts, self.means[arms]).astype(float)
        out = np.zeros(arms.size)
        # split every count into pieces of at most _CHUNK draws, then draw the pieces in
        # batches of at most _CHUNK numbers in all
        pieces = -(-counts // _CHUNK)
        owner = np.repeat(np.arange(arms.size), pieces)
        sizes = np.full(owner.size, _CHUNK, dtype=np.int64)
        last = np.cumsum(pieces)[pieces > 0] - 1
        sizes[last] = counts[counts > 0] - (pieces[counts > 0] - 1) * _CHUNK
        start = 0
        while start < owner.size:
            stop = start + 1
            total = int(sizes[start])
            while stop < owner.size and total + sizes[stop] <= _CHUNK:
                total += int(sizes[stop])
                stop += 1
            who, size = owner[start:stop], sizes[start:stop]
            x = self._draw(np.repeat(arms[who], size), gen)
            offsets = np.concatenate(([0], np.cumsum(size)[:-1]))
            np.add.at(out, who, np.add.reduceat(x, offsets))
            start = stop
        return np.minimum(out, counts)  # rounding of a sum of numbers <= 1 stays <= count

    # --- state ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"rng": generator_state(self._gen)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._gen = checked_generator("rng", saved_field(state, "rng"))


# --- instance families --------------------------------------------------------------------------


def two_level_means(arms: int = 10, best: float = 0.9, other: float = 0.8) -> np.ndarray:
    """(other, ..., other, best), K = ``arms``: one best arm, K - 1 equally hard others. The
    best arm comes last: the library's index learners break ties towards the lowest arm (and
    a private index clipped to 1 ties everywhere), so an order with the best arm first would
    credit a learner that has learned nothing."""
    k = checked_count("arms", arms)
    if k < 2 or not 0.0 <= other < best <= 1.0:
        raise ArgumentError(
            f"two_level_means needs arms >= 2 and 0 <= other < best <= 1, got arms={arms}, "
            f"best={best}, other={other}"
        )
    return np.r_[np.full(k - 1, other), best]


def unequal_gap_means(arms: int = 10, best: float = 0.9, worst: float = 0.5) -> np.ndarray:
    """K = ``arms`` means spaced linearly from ``worst`` up to ``best`` (the best arm last, as
    in :func:`two_level_means`): gaps from (best - worst) / (K - 1) to best - worst."""
    k = checked_count("arms", arms)
    if k < 2 or not 0.0 <= worst < best <= 1.0:
        raise ArgumentError(
            f"unequal_gap_means needs arms >= 2 and 0 <= worst < best <= 1, got arms={arms}, "
            f"best={best}, worst={worst}"
        )
    return np.linspace(worst, best, k)


def azize_basu_means() -> np.ndarray:
    """(0.75, 0.625, 0.5, 0.375, 0.25): the five arms of Azize & Basu's experiments."""
    return np.array([0.75, 0.625, 0.5, 0.375, 0.25])


#: Instance names for :func:`build_k_armed`.
INSTANCES = ("two_level", "unequal_gaps", "azize_basu")


def build_k_armed(
    horizon: int,
    rng: RngLike,
    family: str = "bernoulli",
    means: Any = None,
    instance: str | None = None,
    arms: int | None = None,
    concentration: float = 2.0,
    sigma: float = 0.1,
) -> KArmedBandit:
    """A :class:`KArmedBandit` for the catalogue: ``means`` if given (for ``gaussian``, the
    normal's means before clipping; ``arms``, if given too, must be their number), else the
    instance ``instance`` (default ``two_level``: 0.9 and 0.8; ``unequal_gaps``: 0.9 down to
    0.5; both with ``arms`` arms, default 10; ``azize_basu``: its five arms). Options that
    contradict each other (means and an instance, or another number of arms) are refused."""
    if means is not None:
        if instance is not None:
            raise ArgumentError("give means or an instance, not both")
        label = "custom"
        count = np.asarray(means).size
        if arms is not None and arms != count:
            raise ArgumentError(f"arms = {arms!r} but {count} means are given")
    else:
        label = instance = "two_level" if instance is None else instance
        if instance == "two_level":
            means = two_level_means(10 if arms is None else arms)
        elif instance == "unequal_gaps":
            means = unequal_gap_means(10 if arms is None else arms)
        elif instance == "azize_basu":
            means = azize_basu_means()
            if arms is not None and arms != means.size:
                raise ArgumentError(f"the azize_basu instance has {means.size} arms, not {arms!r}")
        else:
            raise ArgumentError(f"instance must be one of {list(INSTANCES)}, got {instance!r}")
    return KArmedBandit(
        means,
        horizon,
        family=family,
        concentration=concentration,
        sigma=sigma,
        rng=rng,
        name=f"k_armed:{family}:{label}",
    )
