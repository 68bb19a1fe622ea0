"""Stochastic K-armed bandits: the base class of every learner that plays one of K arms and
sees the loss of the arm it played (:class:`KArmedLearner`), and the fast path that plays a
stochastic environment a whole commitment at a time (:class:`StochasticArmsPlayer`).

**The learner's view.** Each round every replica plays an arm (``act()`` returns int arms of
shape (replicas,)) and then observes ``BanditFeedback(loss)``, the loss of the arm it played,
shape (replicas,). Losses lie in [0, 1] and the learner works with rewards r = 1 - loss.
A loss outside [0, 1] is refused (``ValueError`` naming it) unless the learner was built with
``clip=True``, which clips it into [0, 1]; NaN, infinity, complex values and strings are always
refused in one line (:func:`dponline.protocol.checked_bandit_loss`). A refused feedback leaves
the learner exactly as it was.

**Commitments.** Every learner here decides in *commitments*: at the start of a round, each
replica without a running commitment chooses an arm and a number of rounds L >= 1 to play it;
a round-by-round index policy (UCB1) always commits for one round, an episode learner
(AdaP-UCB, DP-SE epochs, phases) for a whole episode. The base class keeps, per replica:

* ``pulls`` (replicas, K), int: N_a, the pulls of every arm so far;
* ``sums`` (replicas, K), float: the sum of every reward of every arm so far (the non-private
  statistic: a private learner must not let it reach a decision except through its mechanism);
* the running commitment: its arm ``arm`` (replicas,), the rounds ``left`` in it, and the
  reward sum and pull count of the rounds played in it so far (``episode_sum``,
  ``episode_count``).

**How a subclass plugs in.** It calls ``super().__init__(n_arms, horizon, replicas=...,
rng=..., clip=...)`` and implements two hooks, both vectorised over the replicas ``rows``
(a sorted int array) they are called for:

* ``_commit(rows, t) -> (arms, lengths)``: the arm each of these replicas plays next and for
  how many rounds (ints >= 1; a commitment running past the horizon is cut there). ``t`` holds,
  per row, the number of rounds that replica has played (the decision is for its round t + 1,
  1-based). Decide from ``t`` and the per-replica state only, never from ``self.t``: the fast
  path calls the hook for replicas at different rounds.
* ``_conclude(rows, t, arms, sums, counts)``: the commitments of these replicas are complete
  (``counts`` pulls of ``arms`` with reward sum ``sums``; ``t`` is the number of rounds each
  has played now). Release private statistics here (the noise is drawn here, once per
  commitment). The default does nothing: ``pulls`` and ``sums`` are already updated.

Noise comes from :meth:`_noise` (Laplace or Gaussian, times ``noise_multiplier``) or, for other
draws, from ``self._generators[r]``: each replica has its own ``numpy.random.Generator``,
spawned from the learner's ``rng``, so a replica's draws happen in its own order whatever the
grouping of rounds into calls (round by round or :meth:`play_stochastic`) and whatever the
number of replicas (replica j draws the same numbers in a learner of 3 or of 100 replicas).
(DP-UCB's ``tight`` calibration is the exception: its one continual counter draws for all
replicas at once, in the same order on both paths, so the paths still agree.)
A subclass with more state implements ``_extra_config()`` (what its state depends on: the
noise it was calibrated to, its parameters), ``_extra_state()`` (arrays, copied) and
``_prepare_extra(state) -> install`` (checks everything, then installs; must not fail once
checked). The registry entry is the subclass module's (:func:`dponline.registry.
register_learner`); a private subclass sets ``self.privacy`` and leaves the noise handle
(:meth:`NoiseHandle.scale_noise`) to the base: every draw through :meth:`_noise` is scaled.

**The fast path.** :meth:`KArmedLearner.play_stochastic` advances every replica by exactly
``rounds`` rounds against a stochastic environment (:class:`StochasticArms`: ``means``, the
mean rewards, and ``reward_sums(arms, counts)``, the sums of fresh rewards) by whole
commitments: each vectorised iteration plays min(rest of the commitment, rounds left) pulls of
each replica's arm and asks the environment for their reward sum. It leaves the learner in the
state ``rounds`` single rounds leave it (the same distribution; the same numbers when rewards
are deterministic, since the learner's noise draws are per replica) and returns each replica's
exact pseudo-regret over those rounds, sum of mu* - mu_a over its pulls, with the pulls. The
round loop asks for it through the protocol :class:`~dponline.protocol.StochasticArmsPlayer`
(the protocols :class:`~dponline.protocol.StochasticArms`, ``StochasticArmsPlayer`` and the
result :class:`~dponline.protocol.StochasticRounds` live in :mod:`dponline.protocol`, below the
environments and the round loop, and are re-exported here).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_flag,
    checked_generators,
    checked_int_array,
    checked_nonnegative_int,
    checked_real_array,
    saved_field,
)
from dponline.privacy.floating_point import snapped
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RoundDiscipline,
    StochasticArms,
    StochasticArmsPlayer,
    StochasticRounds,
    checked_bandit_loss,
    checked_config,
    checked_count,
    past_horizon_error,
)
from dponline.rng import RngLike, generator_state, replica_generators

__all__ = [
    "PRIVATE_K_ARMED",
    "KArmedLearner",
    "StochasticArms",
    "StochasticArmsPlayer",
    "StochasticRounds",
    "arms_of",
    "horizon_for",
    "replica_generators",
]

#: the registry names of the private stochastic K-armed learners (each a :class:`KArmedLearner`;
#: tests/test_registry.py checks the list against the registry), in the order of the tables
PRIVATE_K_ARMED = (
    "adap-ucb",
    "adap-klucb",
    "adac-ucb",
    "dp-klucb",
    "dp-imed",
    "lazy-dp-ts",
    "dp-se",
    "dp-ucb",
)


def arms_of(env: Any) -> int:
    """The number of arms of a K-armed environment (``n_arms``, else its dimension)."""
    return int(getattr(env, "n_arms", env.dim))


def horizon_for(env: Any, anytime: Any) -> int | None:
    """The horizon a registry factory builds a K-armed learner for: the environment's, or
    ``None`` (the anytime learner) when the option ``anytime`` is true."""
    return None if checked_flag("anytime", anytime) else env.horizon


class KArmedLearner(RoundDiscipline, NoiseHandle, ABC):
    """The base of stochastic K-armed bandit learners (the module docstring says how a
    subclass plugs in).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds (round T+1 is refused: a guarantee covers T rounds), or
        ``horizon=None`` for a learner whose decisions and noise need no horizon
        (``anytime_capable``): it then plays on for ever, its guarantee holding at every t.
    replicas:
        Independent copies along the leading axis.
    rng:
        Seed of the per-replica generators (:func:`dponline.rng.replica_generators`).
    clip:
        Clip losses into [0, 1] instead of refusing them.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.BANDIT
    #: the paper's algorithm the subclass implements (for messages and reports)
    paper: ClassVar[str] = ""
    privacy = None
    #: whether the learner's decisions and noise need no horizon, so that it accepts
    #: ``horizon=None`` (an index of log t, not log T; episodes, phases or epochs that end by
    #: their own rule; each reward in one release)
    anytime_capable: ClassVar[bool] = False

    def __init__(
        self,
        n_arms: int,
        horizon: int | None,
        *,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        k = checked_count("n_arms", n_arms)
        if k < 2:
            raise ArgumentError(f"n_arms must be at least 2, got {n_arms!r}")
        self.n_arms = k
        self._start_rounds(horizon, anytime=self.anytime_capable)
        self.replicas = r = checked_count("replicas", replicas)
        self.clip = bool(clip)
        self._generators = replica_generators(rng, r)
        self.pulls = np.zeros((r, k), dtype=np.int64)
        self.sums = np.zeros((r, k))
        self.arm = np.zeros(r, dtype=np.int64)
        self.left = np.zeros(r, dtype=np.int64)
        self.episode_sum = np.zeros(r)
        self.episode_count = np.zeros(r, dtype=np.int64)
        #: why the learner refuses to go on (a fast-path call failed after using its noise)
        self._spent: str | None = None

    # --- the hooks (module docstring) -----------------------------------------------------------

    @abstractmethod
    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The arm each replica of ``rows`` plays next and for how many rounds (module
        docstring)."""

    def _conclude(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        arms: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """A commitment is complete (default: nothing to release)."""

    def released_means(self) -> np.ndarray:
        """Each arm's mean reward as the learner last released it under its guarantee, shape
        (replicas, K), NaN for an arm with nothing released yet: the private statistics its
        decisions are computed from, so publishing them (a trial's final estimates, say) costs
        nothing beyond the guarantee. Raw: a noisy mean may lie outside [0, 1]. A non-private
        learner's are its exact means (it has no guarantee to keep). A private learner that
        keeps no per-arm means refuses, saying why (:meth:`_released_means`). A private
        learner's are rounded to multiples of 2^-16, so that their last bits carry nothing of
        the data (:mod:`dponline.privacy.floating_point`)."""
        if self.privacy is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(self.pulls > 0, self.sums / self.pulls, np.nan)
        return snapped(self._released_means())

    def _released_means(self) -> np.ndarray:
        """A private learner's released means (:meth:`released_means`)."""
        raise ArgumentError(
            f"{type(self).__name__} keeps no released per-arm means: its decisions use private "
            "statistics it does not store, and publishing its exact sums would void its "
            "guarantee; a final estimate costs budget of its own"
        )

    def _extra_config(self) -> dict[str, Any]:
        return {}

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _prepare_extra(self, state: dict[str, Any]) -> Callable[[], None]:
        return lambda: None

    def _scale_noise(self, factor: float) -> None:
        """Nothing to rescale: :meth:`_noise` multiplies every draw by ``noise_multiplier``,
        which :meth:`NoiseHandle.scale_noise` updates."""

    # --- helpers for subclasses -----------------------------------------------------------------

    @staticmethod
    def _saved_schedule(state: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """From a saved state whose own fields :meth:`prepare_load` has checked (it calls
        ``_prepare_extra`` after them): each arm's pulls in concluded commitments (pulls minus
        the running commitment's on its arm), shape (replicas, K); the replicas with a running
        commitment; and its whole length (rounds played plus left) for those replicas. A
        subclass checks them against its schedule, so that a state the learner could not have
        reached is refused."""
        pulls = np.array(saved_field(state, "pulls"), dtype=np.int64)
        arm = np.asarray(saved_field(state, "arm"), dtype=np.int64)
        left = np.asarray(saved_field(state, "left"), dtype=np.int64)
        count = np.asarray(saved_field(state, "episode_count"), dtype=np.int64)
        rows = np.arange(pulls.shape[0])
        pulls[rows, arm] -= count  # 0 where no commitment runs (checked)
        running = np.flatnonzero(left > 0)
        return pulls, running, (left + count)[running]

    def _noise(self, rows: np.ndarray, scale: Any, kind: str = "laplace") -> np.ndarray:
        """One draw per replica of ``rows``, each from that replica's own generator, in
        ``rows`` order: Laplace(0, b) (``kind="laplace"``) or N(0, sigma^2) (``"gaussian"``)
        with b or sigma = ``scale`` (a number or one per row) times ``noise_multiplier``."""
        gens = self._generators
        if kind == "laplace":
            unit = [gens[r].laplace() for r in rows.tolist()]
        elif kind == "gaussian":
            unit = [gens[r].standard_normal() for r in rows.tolist()]
        else:
            raise ValueError(f"kind must be 'laplace' or 'gaussian', got {kind!r}")
        return np.asarray(unit, dtype=float) * (
            np.asarray(scale, dtype=float) * self.noise_multiplier
        )

    def _first_unpulled(self, rows: np.ndarray) -> np.ndarray:
        """For each replica of ``rows``, its lowest arm never pulled, or -1 when it has pulled
        every arm (the initial round robin of index policies)."""
        zero = self.pulls[rows] == 0
        return np.where(zero.any(axis=1), np.argmax(zero, axis=1), -1)

    # --- the protocol ---------------------------------------------------------------------------

    def _check_not_spent(self) -> None:
        if self._spent is not None:
            raise RuntimeError(self._spent)

    def act(self) -> np.ndarray:
        """Each replica's arm this round, int array of shape (replicas,): the arm of its
        running commitment, or of a new one (``_commit``) where none runs."""
        self._check_not_spent()
        if not self._acted:
            rows = np.flatnonzero(self.left == 0)
            if rows.size:
                self._start_commitments(rows, np.full(rows.size, self.t, dtype=np.int64))
            self._acted = True
        return self.arm.copy()

    def _start_commitments(self, rows: np.ndarray, t: np.ndarray) -> None:
        """New commitments for the replicas ``rows`` (``t``: the rounds each has played)."""
        arms, lengths = self._commit(rows, t)
        arms = np.asarray(arms, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if arms.shape != rows.shape or lengths.shape != rows.shape:
            raise RuntimeError(f"{type(self).__name__}._commit returned the wrong shapes")
        if np.any((arms < 0) | (arms >= self.n_arms)) or np.any(lengths < 1):
            raise RuntimeError(f"{type(self).__name__}._commit returned invalid arms or lengths")
        self.arm[rows] = arms
        self.left[rows] = lengths

    def _rewards(self, loss: np.ndarray) -> np.ndarray:
        """Rewards 1 - loss of checked finite losses, after the bounds check (or clipping)."""
        if self.clip:
            return 1.0 - np.clip(loss, 0.0, 1.0)
        bad = (loss < 0.0) | (loss > 1.0)
        if bad.any():
            raise ValueError(
                f"bandit loss must lie in [0, 1] (rewards 1 - loss in [0, 1]; the guarantee "
                f"holds only there), got {float(loss[bad][0])!r}; build the learner with "
                "clip=True to clip instead"
            )
        return 1.0 - loss

    def observe(self, feedback: Feedback) -> None:
        """The loss of the arm each replica played, shape (replicas,), in [0, 1]."""
        self._check_not_spent()
        loss = checked_bandit_loss(self, feedback, acted=self._acted)
        reward = self._rewards(loss)
        rows = np.arange(self.replicas)
        self.pulls[rows, self.arm] += 1
        self.sums[rows, self.arm] += reward
        self.episode_sum += reward
        self.episode_count += 1
        self.left -= 1
        self._end_round()
        done = np.flatnonzero(self.left == 0)
        if done.size:
            self._close(done, np.full(done.size, self.t, dtype=np.int64))

    def _close(self, rows: np.ndarray, t: np.ndarray) -> None:
        """Conclude the commitments of ``rows``, which have no rounds left (``t``: the rounds
        each has played)."""
        arms, sums = self.arm[rows], self.episode_sum[rows]
        counts = self.episode_count[rows]
        self.episode_sum[rows] = 0.0
        self.episode_count[rows] = 0
        self._conclude(rows, t, arms, sums, counts)

    # --- the fast path --------------------------------------------------------------------------

    def _stochastic_call(self, env: StochasticArms, rounds: Any) -> tuple[int, np.ndarray]:
        """The checks of a :meth:`play_stochastic` call (a stochastic K-armed environment,
        means in [0, 1], rounds within the learner's horizon and the environment's): the
        number of rounds and each arm's gap mu* - mu_a."""
        self._check_not_spent()
        if not isinstance(env, StochasticArms):
            raise TypeError(
                "play_stochastic needs a stochastic K-armed environment (means, "
                "reward_sums(arms, counts) and rewards_in_unit_interval), got "
                f"{type(env).__name__}"
            )
        if env.rewards_in_unit_interval is not True:
            raise ValueError(
                f"play_stochastic sees only sums of rewards, so {type(env).__name__} must "
                "promise every reward in [0, 1] (rewards_in_unit_interval = True); play it "
                "round by round, where each reward is checked"
            )
        n = checked_nonnegative_int("rounds", rounds)
        means = checked_real_array("environment means", env.means, (self.n_arms,))
        if np.any((means < 0.0) | (means > 1.0)):
            raise ValueError(f"environment means must lie in [0, 1], got {means.tolist()}")
        if self.horizon is not None and self.t + n > self.horizon:
            raise past_horizon_error(type(self).__name__, self.horizon, self.horizon)
        env_horizon = getattr(env, "horizon", None)
        if isinstance(env_horizon, int | np.integer) and self.t + n > env_horizon:
            raise ValueError(
                f"the environment has {env_horizon} rounds and this call would play rounds "
                f"{self.t + 1}..{self.t + n} (the learner has played {self.t}): build it with "
                "a horizon that covers them"
            )
        return n, means.max() - means

    def play_stochastic(self, env: StochasticArms, rounds: int) -> StochasticRounds:
        """Play ``rounds`` rounds of the stochastic environment ``env`` with every replica,
        a commitment (or what is left of it) per vectorised iteration (module docstring).

        Returns each replica's pseudo-regret over these rounds and its pulls of each arm in
        them. The rounds must lie within the horizon; the call may start after ``act()`` (the
        decision already made is the one played). Only a commitment's reward sum is seen
        here, so the bound every single reward must meet (in [0, 1]) rests on the
        environment's promise (``StochasticArms``). Reward sums outside [0, count] are refused
        (``ValueError``). After that, or any other error of the call (an interrupt), the
        learner is left where the error stopped it, part of the way through the call, and
        refuses to go on (``RuntimeError`` from every call but :meth:`load_state_dict`): the
        replicas stopped at different rounds, and going back to the state before the call
        would meet again the noise behind the arms the environment has already seen (the
        generators', and noise drawn ahead: a counter's, a block of Beta draws). Build a new
        learner, or load a state (:mod:`dponline.rng` says when that is safe)."""
        n, gap = self._stochastic_call(env, rounds)
        r, k = self.replicas, self.n_arms
        regret = np.zeros(r)
        pulls = np.zeros((r, k), dtype=np.int64)
        if n == 0:
            return StochasticRounds(regret, pulls)
        start = self.t
        played = np.zeros(r, dtype=np.int64)
        counts = np.zeros(r, dtype=np.int64)
        rows_all = np.arange(r)
        try:
            while True:
                active = played < n
                if not active.any():
                    break
                starting = np.flatnonzero(active & (self.left == 0))
                if starting.size:
                    self._start_commitments(starting, start + played[starting])
                counts[:] = 0
                counts[active] = np.minimum(self.left[active], n - played[active])
                sums = checked_real_array(
                    "environment reward sums", env.reward_sums(self.arm.copy(), counts.copy()), (r,)
                )
                if np.any((sums < 0.0) | (sums > counts)):
                    bad = int(np.flatnonzero((sums < 0.0) | (sums > counts))[0])
                    raise ValueError(
                        f"environment reward sum {sums[bad]!r} of {counts[bad]} pulls lies "
                        "outside [0, count]: rewards must lie in [0, 1]"
                    )
                arm = self.arm
                pulls[rows_all, arm] += counts
                self.pulls[rows_all, arm] += counts
                self.sums[rows_all, arm] += sums
                regret += counts * gap[arm]
                self.episode_sum += sums
                self.episode_count += counts
                self.left -= counts
                played += counts
                ending = np.flatnonzero(active & (self.left == 0))
                if ending.size:
                    self._close(ending, start + played[ending])
        except BaseException as exc:
            self._refuse_to_go_on(exc)
            raise
        self._end_rounds(n)
        return StochasticRounds(regret, pulls)

    def _refuse_to_go_on(self, exc: BaseException) -> None:
        """After a fast-path call failed part of the way: every later call refused until a
        state is loaded (:meth:`play_stochastic`). Nothing is restored (a restore would arm
        the noise behind the arms the environment saw again, and could itself fail)."""
        self._spent = (
            f"{type(self).__name__}: a play_stochastic call failed part of the way ({exc!r}), "
            "after the environment had seen arms of that call; the learner stopped mid-call "
            "(its replicas at different rounds), and the state before the call would meet "
            "again the noise behind those arms. Build a new learner, or load a saved state "
            "(dponline.rng says when that is safe)"
        )

    # --- state ----------------------------------------------------------------------------------

    def _config(self) -> dict[str, Any]:
        # the noise multiplier belongs to what the guarantee depends on: a state saved after
        # scale_noise (an audit's) must not load into a calibrated learner, whose privacy
        # would then claim the calibrated epsilon with a fraction of its noise
        return {
            "learner": type(self).__name__,  # learners of one shape (DP-IMED, DP-KLUCB) differ
            "n_arms": self.n_arms,
            "horizon": self.horizon,
            "replicas": self.replicas,
            "noise_multiplier": self.noise_multiplier,
            # the unit the noise is calibrated for (a person's budget may reach the same noise
            # as another unit's: the saved state names whom it protects)
            "participations": 1 if self.privacy is None else self.privacy.participations,
            "min_separation": 1 if self.privacy is None else self.privacy.min_separation,
            **self._extra_config(),
        }

    def state_dict(self) -> dict[str, Any]:
        self._check_not_spent()
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "generators": [generator_state(g) for g in self._generators],
            "pulls": self.pulls.copy(),
            "sums": self.sums.copy(),
            "arm": self.arm.copy(),
            "left": self.left.copy(),
            "episode_sum": self.episode_sum.copy(),
            "episode_count": self.episode_count.copy(),
            **self._extra_state(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (configuration, round counter, noise multiplier, every
        replica's generator, pulls and sums, the running commitments, then the subclass's
        part) and return the function that installs it."""
        who = type(self).__name__
        checked_config(
            saved_field(state, "config"),
            self._config(),
            who,
            "learner, number of arms, horizon, replicas, calibration or noise multiplier",
        )
        t, acted = self._checked_rounds(state)
        multiplier = self._saved_multiplier(state)
        r, k = self.replicas, self.n_arms
        gens = checked_generators("saved generators", saved_field(state, "generators"), r)
        pulls = checked_int_array("saved pulls", saved_field(state, "pulls"), (r, k), 0)
        sums = np.array(checked_real_array("saved sums", saved_field(state, "sums"), (r, k)))
        if not np.all(pulls.sum(axis=1) == t):
            raise ArgumentError(f"saved pulls must add up to the round counter t = {t}")
        if np.any(sums < 0.0) or np.any(sums > pulls):
            raise ArgumentError("saved sums must lie in [0, pulls] (rewards in [0, 1])")
        arm = checked_int_array("saved arm", saved_field(state, "arm"), (r,), 0, k)
        left = checked_int_array("saved left", saved_field(state, "left"), (r,), 0)
        ep_sum = np.array(
            checked_real_array("saved episode_sum", saved_field(state, "episode_sum"), (r,))
        )
        ep_count = checked_int_array(
            "saved episode_count", saved_field(state, "episode_count"), (r,), 0
        )
        if np.any(ep_sum < 0.0) or np.any(ep_sum > ep_count):
            raise ArgumentError("saved episode_sum must lie in [0, episode_count]")
        if np.any((left == 0) & (ep_count > 0)):
            raise ArgumentError("saved state has a finished commitment that was not concluded")
        if np.any(ep_count > pulls[np.arange(r), arm]):
            raise ArgumentError("saved episode_count exceeds the pulls of the committed arm")
        if acted and np.any(left == 0):
            raise ArgumentError("saved state acted without a commitment for every replica")
        install_extra = self._prepare_extra(state)

        def install() -> None:
            self._set_rounds(t, acted)
            self._spent = None
            self.noise_multiplier = multiplier
            self._generators = gens
            self.pulls, self.sums, self.arm, self.left = pulls, sums, arm, left
            self.episode_sum, self.episode_count = ep_sum, ep_count
            install_extra()

        return install
