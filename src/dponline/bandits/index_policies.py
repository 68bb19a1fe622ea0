"""Non-private index policies for stochastic K-armed bandits, the references the private
learners of this package are drawn against: UCB1, KL-UCB and IMED, vectorised over replicas,
one round per commitment (:class:`~dponline.bandits.k_armed.KArmedLearner`).

Each policy first pulls every arm once (arm 0, 1, ..., K-1), then, at the start of a round
with t rounds played so far (t >= K), with N_a pulls of arm a and empirical mean reward
mu^_a = (sum of its rewards) / N_a:

* **UCB1** (Auer, Cesa-Bianchi & Fischer 2002, Figure 1): play argmax_a mu^_a + sqrt(2 log t /
  N_a);
* **KL-UCB** (Garivier & Cappé 2011, Algorithm 1 with the Bernoulli divergence): play
  argmax_a max{q in [mu^_a, 1] : N_a kl(mu^_a, q) <= log t + c log log t}, c = 0 by default
  (the paper's experiments; its regret theorem takes c = 3), the level clipped at 0 where
  log log t < 0; computed by :func:`~dponline.bandits.kl.kl_upper`;
* **IMED** (Honda & Takemura 2015): play argmin_a N_a kl(mu^_a, mu^*) + log N_a,
  mu^* = max_a mu^_a, with the Bernoulli divergence (their K_inf for Bernoulli rewards; for
  other rewards in [0, 1] the Bernoulli kl is the usual substitute).

Ties go to the lowest arm, so the policies are deterministic: replicas fed the same rewards
play the same arms. None draws noise; ``privacy`` is ``None``. Rewards are 1 - loss with losses
in [0, 1] (refused outside unless ``clip=True``), checked by the base class.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.k_armed import KArmedLearner, arms_of, horizon_for
from dponline.bandits.kl import bernoulli_kl, kl_upper
from dponline.privacy.arguments import checked_nonnegative
from dponline.protocol import FeedbackKind
from dponline.registry import LearnerEntry, LearnerTestCase, register_learner
from dponline.rng import RngLike

__all__ = ["IMED", "KLUCB", "UCB1", "IndexPolicy"]


class IndexPolicy(KArmedLearner):
    """A round-by-round index policy: every arm once, then the arm of the best index
    (:meth:`_choose`), a commitment of one round at a time."""

    anytime_capable: ClassVar[bool] = True

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        first = self._first_unpulled(rows)
        arms = first.copy()
        ready = first < 0
        if ready.any():
            arms[ready] = self._choose(rows[ready], t[ready])
        return arms, np.ones(rows.size, dtype=np.int64)

    def _means(self, rows: np.ndarray) -> np.ndarray:
        """mu^_a of the replicas ``rows``, every arm pulled at least once."""
        return self.sums[rows] / self.pulls[rows]

    @abstractmethod
    def _choose(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The arm of the best index for each replica of ``rows`` (every arm pulled)."""


class UCB1(IndexPolicy):
    """UCB1 (Auer, Cesa-Bianchi & Fischer 2002): argmax mu^_a + sqrt(2 log t / N_a), t the
    rounds played so far (module docstring)."""

    paper: ClassVar[str] = "UCB1 (Auer, Cesa-Bianchi & Fischer 2002, Figure 1)"

    def index(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The indices of the replicas ``rows`` after ``t`` rounds, shape (rows, K)."""
        n = self.pulls[rows]
        log_t = np.log(t.astype(float))[:, None]
        return self._means(rows) + np.sqrt(2.0 * log_t / n)

    def _choose(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        return np.argmax(self.index(rows, t), axis=1)


class KLUCB(IndexPolicy):
    """KL-UCB (Garivier & Cappé 2011) with the Bernoulli divergence: argmax of
    max{q >= mu^_a : N_a kl(mu^_a, q) <= log t + c log log t} (module docstring).

    ``c``: the constant of the log log t term (default 0, the paper's experiments)."""

    paper: ClassVar[str] = "KL-UCB (Garivier & Cappé 2011, Algorithm 1, Bernoulli divergence)"

    def __init__(
        self,
        n_arms: int,
        horizon: int | None,
        *,
        c: float = 0.0,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        super().__init__(n_arms, horizon, replicas=replicas, rng=rng, clip=clip)
        self.c = checked_nonnegative("c", c)

    def _extra_config(self) -> dict[str, Any]:
        return {"c": self.c}

    def index(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The indices of the replicas ``rows`` after ``t`` rounds, shape (rows, K)."""
        log_t = np.log(t.astype(float))
        level = log_t
        if self.c:
            with np.errstate(divide="ignore", invalid="ignore"):
                loglog = np.log(log_t)
            level = log_t + self.c * np.where(log_t > 0.0, loglog, -math.inf)
        level = np.maximum(level, 0.0)[:, None] / self.pulls[rows]
        return kl_upper(self._means(rows), level)

    def _choose(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        return np.argmax(self.index(rows, t), axis=1)


class IMED(IndexPolicy):
    """IMED (Honda & Takemura 2015) with the Bernoulli divergence: argmin of
    N_a kl(mu^_a, mu^*) + log N_a (module docstring)."""

    paper: ClassVar[str] = "IMED (Honda & Takemura 2015, Bernoulli divergence)"

    def index(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The IMED indices of the replicas ``rows``, shape (rows, K) (smallest is played)."""
        mu = self._means(rows)
        best = mu.max(axis=1, keepdims=True)
        n = self.pulls[rows].astype(float)
        with np.errstate(invalid="ignore"):
            divergence = n * bernoulli_kl(mu, best)  # inf where mu^* = 1 > mu^_a
        return divergence + np.log(n)

    def _choose(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        return np.argmin(self.index(rows, t), axis=1)


# --- catalogue entries (dponline.registry): dponline list, specs, the battery -------------------


def _non_private(cls: type[IndexPolicy], name: str) -> Any:
    def build(env: Any, *, budget: None = None, anytime: bool = False, **kw: Any) -> IndexPolicy:
        if budget is not None:
            raise ValueError(f"{name} is not private: its budget must be None, got {budget!r}")
        return cls(arms_of(env), horizon_for(env, anytime), **kw)

    build.__name__ = f"_{name.replace('-', '_')}"
    return build


_SETTING = "stochastic K-armed bandit (rewards 1 - loss in [0, 1])"
#: the battery's case: Bernoulli arms, one better (loss means 0.4, 0.5, 0.5). The environment
#: draws each replica's rewards independently, so the replicas of these deterministic policies
#: see different rewards and play different arms: the case is declared randomised.
_CASES = (LearnerTestCase("bernoulli_bandit", environment_options={"n_arms": 3}, randomised=True),)


def _register(
    cls: type[IndexPolicy],
    name: str,
    paper: str,
    counterpart_of: tuple[str, ...],
    options: dict[str, str] | None = None,
) -> None:
    """Register a non-private index policy, the reference of the private learners
    ``counterpart_of``."""
    register_learner(
        LearnerEntry(
            name,
            _non_private(cls, name),
            paper=paper,
            setting=_SETTING,
            guarantee="none (non-private reference)",
            calibrations=(),
            private=False,
            anytime=True,
            feedback_kind=FeedbackKind.BANDIT,
            action_space="arms",
            test_cases=_CASES,
            options=options or {},
            counterpart_of=counterpart_of,
        )
    )


_register(
    UCB1,
    "ucb1",
    "UCB1 (Auer, Cesa-Bianchi & Fischer 2002): mu^ + sqrt(2 log t / n)",
    ("adap-ucb", "adac-ucb", "dp-ucb"),
)
_register(
    KLUCB,
    "kl-ucb",
    "KL-UCB (Garivier & Cappé 2011), Bernoulli divergence, level log t + c log log t",
    ("adap-klucb", "dp-klucb"),
    options={"c": "constant of the log log t term (default 0)"},
)
_register(
    IMED,
    "imed",
    "IMED (Honda & Takemura 2015): argmin n kl(mu^, mu^*) + log n, Bernoulli form",
    ("dp-imed",),
)
