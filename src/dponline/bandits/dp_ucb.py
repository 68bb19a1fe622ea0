"""DP-UCB: UCB1 on private running reward sums (Mishra & Thakurta, UAI 2015, "Private UCB";
Tossou & Dimitrakakis, AAAI 2016), in two calibrations that are two algorithms:

* ``paper``: Mishra & Thakurta's private UCB as its public implementation runs it (below);
* ``tight``: UCB1 on one continual counter of dimension K, chosen and calibrated by
  :func:`~dponline.continual.factory.build_counter` ("on our best counter"), with a confidence
  widening from the counter's exact release variance.

Both pull every arm once (arm 0, 1, ..., K-1); then, with t rounds played, N_a pulls of arm a and
mu~_a its private mean, play argmax_a mu~_a + sqrt(2 log t / N_a) + w_a (ties to the lowest arm),
one round at a time. ``budget=None`` runs UCB1 (exact sums, w_a = 0).

**paper.** One binary-tree counter per arm over that arm's own rewards, indexed by its pull
count (the n-th reward of arm a is step n of a's tree). A tree over T steps has
L = ceil(log2(T + 1)) levels (step T needs bit floor(log2 T); ceil(log2 T) levels, as in the
public implementation, miss step T when T is a power of two). Each step's value lies in one
node per level and each node, when complete, gets a fresh Lap(L / eps); arm a's private sum
after n pulls adds the noisy nodes of the 1-bits of n, and mu~_a = (private sum) / N_a. The
widening is w_a = v / N_a with v = K (log T)^2 log(K T log T / gamma) / eps, gamma = T^-4 by
default (the public implementation's experiments; Azize & Basu 2022 ran gamma = 0.1).

**tight.** One continual counter of dimension K fed x_t = r_t e_{a_t} every round (indexed by
time), released after every round: S~_t = S_t + Z_t, mu~_a = S~_{t,a} / N_a. The counter is
:func:`~dponline.continual.selection.choose_mechanism`'s for (T, K, noise) (the k-ary tree for
Laplace noise, Honaker's estimator where memory rules the tree out; the rescaled square root,
or a BLT factorisation for large T K, for Gaussian), calibrated for l1 and
l2 sensitivity 1 (below). Every coordinate of Z_t has the counter's exact variance sigma_t^2
(:meth:`~dponline.continual.base.ContinualCounter.variance`), and the widening is
w_a = u_t / N_a with

* Gaussian noise: u_t = sigma_t sqrt(2 alpha log t), since P(Z >= sigma sqrt(2 L)) <= e^-L;
* Laplace noise: u_t = sigma_t (alpha log t + log 2) (ours, just below),

so that P(Z_{t,a} <= -u_t) <= t^-alpha for each arm and round: the noise pushes an arm's index
below its mean with probability at most t^-alpha, the Hoeffding term's t^-4 at the default
alpha = 4.

**Without a horizon** (``horizon=None``, ``tight`` only: the ``paper`` trees and v read T) the
counter is an anytime one, calibrated for the same sensitivity and valid for the releases up to
every t: the tapered square-root factorisation for Gaussian noise on at most 10 arms (its noise
state grows as t K; the BLT without a horizon on more arms, and for a person whose pattern it
serves with less noise), doubling blocks of the ``tight`` counter of each block's length
otherwise;
u_t reads its exact variance at t as above (ours).

*The Laplace tail (ours).* Z = sum_j c_j Y_j with Y_j i.i.d. Laplace(b) (every tree- or
Honaker-type release is such a sum), Var Z = sigma^2 = 2 b^2 sum_j c_j^2, and |c_j| b <=
sigma / sqrt 2 for every j. The moment generating function of Laplace(beta) is
1 / (1 - lambda^2 beta^2) for |lambda| beta < 1, and -log(1 - x) <= 2 log(2) x for x in
[0, 1/2] (-log(1 - x) / x increases). At lambda = 1 / sigma every x_j = lambda^2 c_j^2 b^2 is at
most 1/2, so log E e^(lambda Z) <= 2 log(2) sum_j x_j = log 2, and by Chernoff
P(Z >= u) <= exp(-u / sigma + log 2); u = sigma (L + log 2) gives e^-L.

**Privacy.** Neighbours: reward (loss) sequences that differ in one round j, the whole loss
vector of that round included (the learner reads only the reward of the arm it pulled).

* paper: round j's reward is the n-th value of arm a's tree (a and n fixed by the actions
  before j) and lies in L of its nodes; every other node holds the same rewards in both
  sequences. The nodes are released adaptively, each a Laplace mechanism of scale L / eps whose
  value moves by at most 1 (a reward in [0, 1]), so by adaptive composition the privacy loss of
  all releases is at most L x eps / L = eps. Mishra & Thakurta's and the public implementation's
  argument; with ceil(log2(T + 1)) levels it holds for every T.
* tight: x_j moves by (r_j - r'_j) e_{a_j}, at most 1 in l1 and in l2 (the arm a_j is the same
  in both sequences given the past releases), and the counter's noise is calibrated for that
  sensitivity (:class:`~dponline.continual.calibration.CounterCalibrator` on a one-dimensional
  [0, 1], whose diameters are 1: the counter's own guarantee, exact Laplace or analytic
  Gaussian accounting). The inputs after round j depend on round j only through the released
  sums (adaptively chosen inputs), and adaptive composition gives the counter the same guarantee
  as for inputs fixed in advance (Smith & Thakurta 2013 for the tree; Denisov et al. 2022,
  Theorem 2.1, for Gaussian matrix mechanisms). The counts N_a are functions of the actions.

Either way the indices and actions are post-processing of the releases.

**What was checked against what.** The bodies of both papers could not be reached (their
abstracts were read; Tossou & Dimitrakakis claim (eps, delta)-DP variants with regret
O(eps^-1 + log T) through an interval-based mechanism, which is not implemented here). The
``paper`` index, the widening v, gamma = T^-4 and the count-indexed trees at full eps were read in
a public implementation of Mishra & Thakurta's index (keirp/private-bandits,
solvers/private/private_ucb.py and privacy/mechanisms/binary.py, commit 9777d4e); the levels
ceil(log2(T + 1)) are our correction. The ``tight`` learner (the counter, the widening, both
tails) is ours. Azize & Basu (2022, Table 1) give DP-UCB's regret as
O(log(T)^2.5 / eps + sum_a log(T) / Delta_a).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dponline.bandits.k_armed import KArmedLearner, arms_of, horizon_for
from dponline.continual.anytime_blt import AnytimeBLTCounter, calibrate_anytime_blt
from dponline.continual.anytime_choice import anytime_choice
from dponline.continual.anytime_factorization import (
    AnytimeFactorizationCounter,
    TaperedSqrt,
    calibrate_anytime,
)
from dponline.continual.base import ContinualCounter
from dponline.continual.calibration import CounterCalibrator
from dponline.continual.factory import (
    ANYTIME_MECHANISMS,
    anytime_counter,
    build_counter,
    design_horizon_options,
    design_horizon_refusal,
    factorisation_misfit,
    person_blocks_refusal,
)
from dponline.continual.registry import get_mechanism
from dponline.continual.selection import choose_mechanism
from dponline.privacy.arguments import (
    ArgumentError,
    checked_positive,
    checked_probability,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import Box
from dponline.privacy.budget import PrivacyBudget, noise_for
from dponline.privacy.calibration import Calibration, calibrate
from dponline.privacy.noise import LaplaceNoise
from dponline.protocol import FeedbackKind, checked_budget
from dponline.registry import (
    DESIGN_HORIZON_OPTION,
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    register_learner,
)
from dponline.rng import RngLike, as_generator

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DPUCB",
    "TreeCalibrator",
    "laplace_sum_tail",
    "mishra_thakurta_v",
    "tree_levels",
]

#: alpha of the ``tight`` widening: each arm's noise is below -u_t with probability t^-alpha
DEFAULT_CONFIDENCE = 4.0


def tree_levels(horizon: int) -> int:
    """L = ceil(log2(T + 1)): the levels of a binary tree over steps 1..T (the bit length of
    T)."""
    return int(horizon).bit_length()


def mishra_thakurta_v(n_arms: int, horizon: int, epsilon: float, gamma: float) -> float:
    """The widening numerator v = K (log T)^2 log(K T log T / gamma) / eps of the public
    implementation of Mishra & Thakurta's private UCB (natural logarithms)."""
    log_t = math.log(horizon)
    return n_arms * log_t**2 * math.log(n_arms * horizon * log_t / gamma) / epsilon


def laplace_sum_tail(sigma: Any, level: Any) -> np.ndarray:
    """u with P(Z >= u) <= e^-level for every weighted sum Z of i.i.d. Laplace variables of
    standard deviation ``sigma``: sigma (level + log 2) (ours, module docstring)."""
    return np.asarray(sigma, dtype=float) * (np.asarray(level, dtype=float) + math.log(2.0))


@dataclass(frozen=True)
class TreeCalibrator:
    """The ``paper`` noise of DP-UCB: Lap(L / eps) per node of each arm's count-indexed tree,
    L = ceil(log2(T + 1)) (module docstring). Defined for the ``paper`` calibration only: the
    ``tight`` learner runs a counter of dimension K instead."""

    horizon: int

    def paper(self, budget: PrivacyBudget) -> Calibration:
        levels = tree_levels(self.horizon)
        how = (
            f"Mishra & Thakurta (2015), private UCB: one binary tree per arm over its own "
            f"pulls, L = ceil(log2(T + 1)) = {levels} levels, Lap(L / eps) per node; a reward "
            f"lies in L nodes of one tree (l1 sensitivity L), the nodes are released "
            "adaptively (adaptive composition: L x eps / L), the trees hold disjoint rewards; "
            "indices and actions are post-processing"
        )
        g = budget.prove(budget.epsilon, 0.0, how)
        return Calibration(LaplaceNoise(levels / budget.epsilon), g, "paper", "per-arm trees")

    def tight(self, budget: PrivacyBudget) -> Calibration:
        raise ValueError("the tight DP-UCB runs one counter of dimension K, not per-arm trees")


class DPUCB(KArmedLearner):
    """DP-UCB: UCB1 on private running sums (module docstring); ``budget.calibration`` picks
    the algorithm: Mishra & Thakurta's per-arm trees (``paper``) or one counter of dimension K
    (``tight``).

    Parameters
    ----------
    n_arms, horizon:
        K >= 2 arms and T rounds.
    budget:
        A :class:`~dponline.privacy.budget.PrivacyBudget`; ``None`` runs UCB1.
    noise:
        ``tight`` only: "laplace" (pure DP) or "gaussian" (delta > 0); by default the
        budget's: Laplace for delta = 0, Gaussian for delta > 0. The ``paper`` trees always
        add Laplace noise (pure DP meets a request with delta > 0).
    mechanism:
        ``tight`` only: the continual counter by name (:data:`~dponline.continual.registry.
        MECHANISMS`); by default the lowest-variance one whose noise state fits the memory
        budget, and without a horizon the tapered factorisation (Gaussian noise, at most 10
        arms), the BLT without a horizon (Gaussian noise, more arms, or a person it serves
        with less noise: :mod:`dponline.continual.anytime_choice`) or doubling blocks
        (Laplace noise). ``"blt"`` keeps O(K) numbers of noise state at any horizon (Gaussian noise;
        without a horizon in doubling blocks, one round as the unit); without a horizon
        ``"anytime_blt"`` runs one BLT for as long as the stream lasts, O(K) state, for one
        round or one person (:mod:`dponline.continual.anytime_blt`), and
        ``"anytime_factorization"`` the tapered factorisation at any K (O(t K) state).
    design_horizon:
        With that BLT (no horizon, Gaussian noise): the rounds it is optimised for (default
        2^20; the guarantee holds at every round, the variance past it grows about linearly).
        Refused with another counter.
    gamma:
        ``paper`` only: the gamma of v (default T^-4).
    alpha:
        ``tight`` only: the confidence exponent of the widening (default 4).
    replicas, rng, clip:
        As for :class:`~dponline.bandits.k_armed.KArmedLearner`.
    """

    paper: ClassVar[str] = "DP-UCB (Mishra & Thakurta 2015; Tossou & Dimitrakakis 2016)"
    #: ``tight`` and UCB1 run with ``horizon=None`` (the ``paper`` trees and v need T)
    anytime_capable: ClassVar[bool] = True

    def __init__(
        self,
        n_arms: int,
        horizon: int | None,
        *,
        budget: PrivacyBudget | None,
        noise: str | None = None,
        mechanism: str | None = None,
        gamma: float | None = None,
        alpha: float = DEFAULT_CONFIDENCE,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
        design_horizon: int | None = None,
    ) -> None:
        gen = as_generator(rng)
        if horizon is None and budget is not None and budget.calibration == "paper":
            raise ArgumentError(
                "the paper's DP-UCB needs a horizon (its trees have ceil(log2(T + 1)) levels and "
                "its widening v reads log T); horizon=None runs the tight calibration"
            )
        super().__init__(n_arms, horizon, replicas=replicas, rng=gen, clip=clip)
        paper = budget is not None and budget.calibration == "paper"
        noise = noise_for(None if paper else budget, noise, "laplace")
        if noise not in ("laplace", "gaussian"):
            raise ArgumentError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
        self.noise = noise
        if mechanism is not None and mechanism not in ANYTIME_MECHANISMS:
            mechanism = get_mechanism(mechanism).name  # a misspelt name is refused here
        if mechanism is not None and paper:
            raise ArgumentError(
                f"mechanism={mechanism!r} is for the tight calibration: the paper's DP-UCB "
                "runs its own per-arm trees"
            )
        if design_horizon is not None and budget is not None and (horizon is not None or paper):
            raise design_horizon_refusal(
                "the paper's per-arm trees"
                if paper
                else f"built for a horizon of {horizon} rounds",
                with_horizon=not paper,
            )
        if mechanism in ANYTIME_MECHANISMS and horizon is not None:
            raise ArgumentError(
                f"mechanism={mechanism!r} runs without a horizon: give horizon=None, or "
                f"mechanism={ANYTIME_MECHANISMS[mechanism]!r} for a fixed horizon"
            )
        self.alpha = checked_positive("alpha", alpha)
        t_big, k, r = self.horizon, self.n_arms, self.replicas
        if gamma is None:
            gamma = float(t_big) ** -4 if t_big is not None and t_big > 1 else 0.5
        self.gamma = checked_probability("gamma", gamma)
        self.levels = 0 if t_big is None else tree_levels(t_big)
        budget = checked_budget(budget)
        self.counter: ContinualCounter | None = None
        self.node_scale, self.v = 0.0, 0.0
        if budget is None:
            self.privacy, self.calibration_name, self.epsilon = None, "none", math.inf
            self.mechanism = "none"
        elif budget.calibration == "paper":
            # the paper's trees add Laplace noise whatever ``noise`` says: pure eps-DP, which
            # meets a request with any delta
            cal = calibrate(TreeCalibrator(t_big), budget)
            self.privacy, self.calibration_name = cal.guarantee, "paper"
            self.epsilon, self.mechanism = budget.epsilon, "per-arm trees"
            self.node_scale = float(cal.noise.scale)
            # v enters no decision before round K + 1 > 2, so T < 2 needs none
            self.v = mishra_thakurta_v(k, t_big, budget.epsilon, self.gamma) if t_big > 1 else 0.0
        else:
            if t_big is None:
                self.counter = _anytime_counter(budget, k, noise, r, gen, mechanism, design_horizon)
                name = self.counter.name
            else:
                name = mechanism or choose_mechanism(
                    "tight",
                    t_big,
                    k,
                    noise,
                    participations=budget.participations,
                    min_separation=budget.min_separation,
                )
                calibrator = CounterCalibrator(
                    get_mechanism(name), t_big, Box(0.0, 1.0, dim=1), noise
                )
                self.counter = build_counter(
                    budget,
                    horizon=t_big,
                    bounds=Box(0.0, 1.0, dim=k),
                    calibrator=calibrator,
                    replicas=r,
                    rng=gen,
                )
            counted = self.counter.privacy
            assert counted is not None
            # the counter's guarantee, proven once by its calibration, with what it means here
            self.privacy = dataclasses.replace(
                counted,
                derivation=(
                    f"one {name} counter of dimension K = {k} fed r_t e_(a_t) every round: a "
                    "round moves it by at most 1 in l1 and l2 (the arm is fixed by the past "
                    "releases), the counter calibrated for that sensitivity, adaptively chosen "
                    "inputs (Smith & Thakurta 2013; Denisov et al. 2022, Theorem 2.1); indices "
                    f"and actions are post-processing. Counter: {counted.derivation}"
                ),
            )
            self.calibration_name, self.epsilon, self.mechanism = "tight", budget.epsilon, name
        #: paper: each arm's tree, exact partial sums and noisy nodes per level
        self.tree_exact = np.zeros((r, k, self.levels))
        self.tree_noisy = np.zeros((r, k, self.levels))
        #: the private running sums S~ of every arm (the last release)
        self.private_sum = np.zeros((r, k))

    # --- the algorithm --------------------------------------------------------------------------

    def widening(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The numerator of w_a = (.) / N_a after ``t`` rounds, shape (rows, 1): v (paper),
        u_t (tight) or 0 (UCB1)."""
        if self.calibration_name == "paper":
            return np.full((rows.size, 1), self.v)
        if self.counter is None:
            return np.zeros((rows.size, 1))
        sigma = math.sqrt(self.counter.variance(int(t[0])))
        level = self.alpha * np.log(t.astype(float))
        if self.noise == "gaussian":
            u = sigma * np.sqrt(2.0 * level)
        else:
            u = laplace_sum_tail(sigma, level)
        return np.asarray(u, dtype=float)[:, None]

    def _released_means(self) -> np.ndarray:
        """Each arm's private running sum (the counter's or its tree's last release) over its
        pulls (public: the decisions')."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.pulls > 0, self.private_sum / self.pulls, np.nan)

    def index(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The indices of the replicas ``rows`` after ``t`` rounds (all at the same round),
        shape (rows, K); every arm pulled at least once."""
        n = self.pulls[rows].astype(float)
        sums = self.sums[rows] if self.privacy is None else self.private_sum[rows]
        log_t = np.log(t.astype(float))[:, None]
        return sums / n + np.sqrt(2.0 * log_t / n) + self.widening(rows, t) / n

    def _commit(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        arms = self._first_unpulled(rows)
        ready = arms < 0
        if ready.any():
            arms[ready] = np.argmax(self.index(rows[ready], t[ready]), axis=1)
        return arms, np.ones(rows.size, dtype=np.int64)

    def _conclude(
        self,
        rows: np.ndarray,
        t: np.ndarray,
        arms: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """A round was played: feed the private sums."""
        if self.counter is not None:
            if rows.size != self.replicas:
                raise RuntimeError("the tight DP-UCB steps every replica's counter together")
            x = np.zeros((self.replicas, self.n_arms))
            x[rows, arms] = sums
            self.private_sum = np.array(self.counter.step(x))
        elif self.calibration_name == "paper":
            self._tree_step(rows, arms, sums)

    def _tree_step(self, rows: np.ndarray, arms: np.ndarray, values: np.ndarray) -> None:
        """Step n = N_a of arm a's tree with ``values`` (the rows' rewards of their arms): the
        node of level ctz(n) completes (the lower levels fold into it) and gets fresh noise;
        the private sum adds the noisy nodes of the 1-bits of n."""
        n = self.pulls[rows, arms]
        level = np.log2(n & -n).astype(np.int64)  # exact for powers of two
        below = np.arange(self.levels)[None, :] < level[:, None]
        exact = self.tree_exact[rows, arms]
        noisy = self.tree_noisy[rows, arms]
        node = np.where(below, exact, 0.0).sum(axis=1) + values
        exact[below] = 0.0
        noisy[below] = 0.0
        at = np.arange(rows.size)
        exact[at, level] = node
        noisy[at, level] = node + self._noise(rows, self.node_scale)
        self.tree_exact[rows, arms] = exact
        self.tree_noisy[rows, arms] = noisy
        bits = (n[:, None] >> np.arange(self.levels)[None, :]) & 1
        self.private_sum[rows, arms] = (noisy * bits).sum(axis=1)

    def _scale_noise(self, factor: float) -> None:
        """The counter's noise (``tight``); the trees' draws go through the multiplier."""
        if self.counter is not None:
            self.counter.scale_noise(factor)

    # --- state ----------------------------------------------------------------------------------

    def _extra_config(self) -> dict[str, Any]:
        return {
            "calibration": self.calibration_name,
            "epsilon": self.epsilon,
            "mechanism": self.mechanism,
            "noise": self.noise,
            "gamma": self.gamma,
            "alpha": self.alpha,
            "node_scale": self.node_scale,
        }

    def _extra_state(self) -> dict[str, Any]:
        out: dict[str, Any] = {"private_sum": self.private_sum.copy()}
        if self.calibration_name == "paper":
            out["tree_exact"] = self.tree_exact.copy()
            out["tree_noisy"] = self.tree_noisy.copy()
        if self.counter is not None:
            out["counter"] = self.counter.state_dict()
        return out

    def _prepare_extra(self, state: dict[str, Any]) -> Callable[[], None]:
        r, k = self.replicas, self.n_arms
        private = np.array(
            checked_real_array("saved private_sum", saved_field(state, "private_sum"), (r, k))
        )
        trees: tuple[np.ndarray, np.ndarray] | None = None
        if self.calibration_name == "paper":
            shape = (r, k, self.levels)
            trees = (
                np.array(
                    checked_real_array("saved tree_exact", saved_field(state, "tree_exact"), shape)
                ),
                np.array(
                    checked_real_array("saved tree_noisy", saved_field(state, "tree_noisy"), shape)
                ),
            )
        install_counter: Callable[[], None] = lambda: None  # noqa: E731
        if self.counter is not None:
            saved = saved_field(state, "counter")
            install_counter = self.counter.prepare_load(saved)
            if saved_field(saved, "t") != saved_field(state, "t"):
                raise ArgumentError("saved counter is not at the learner's round")

        def install() -> None:
            self.private_sum = private
            if trees is not None:
                self.tree_exact, self.tree_noisy = trees
            install_counter()

        return install


def _anytime_counter(
    budget: PrivacyBudget,
    k: int,
    noise: str,
    replicas: int,
    gen: np.random.Generator,
    mechanism: str | None = None,
    design_horizon: int | None = None,
) -> Any:
    """The tight DP-UCB's counter without a horizon, for inputs r_t e_(a_t) of sensitivity 1
    in l1 and l2 (so calibrated on [0, 1], dimension K): the tapered square-root factorisation
    for Gaussian noise on at most 10 arms (its guarantee holds for the releases up to every
    t), else doubling blocks of the ``tight`` counter of each block's length (Laplace noise,
    more arms; event-level only: the blocks refuse a person, whose rounds may fall in several
    of them). A person's rounds
    r_i e_(a_i) differ by at most 1 in l2 each, with non-negative inner products between
    columns of R, so the factorisation's person-level factor applies as for a counter on
    [0, 1]. Like every learner on :func:`~dponline.continual.factory.anytime_counter`, DP-UCB
    takes the factorisation only where its noise state over 2^18 rounds fits the memory budget
    (:func:`~dponline.continual.factory.factorisation_misfit`: at most 10 arms; it grows as
    t K), and not for a person whose pattern the BLT without a horizon serves with less noise
    (:func:`~dponline.continual.anytime_choice.anytime_choice`, as every learner's counter).
    Past that, tight Gaussian noise takes one BLT without a horizon instead
    (:mod:`dponline.continual.anytime_blt`: O(K) state, nonnegative columns too, so the same
    argument for a person), as ``mechanism="anytime_blt"`` does at any K; Laplace noise and
    another named ``mechanism`` run in doubling blocks, which refuse a person, saying why."""
    unit, arms = Box(0.0, 1.0, dim=1), Box(0.0, 1.0, dim=k)
    named_factorisation = mechanism == AnytimeFactorizationCounter.name
    if named_factorisation and noise != "gaussian":
        raise ArgumentError(
            "mechanism='anytime_factorization' draws Gaussian noise: give delta > 0"
        )
    misfit = None if named_factorisation else factorisation_misfit(budget, k, noise, mechanism)
    too_many_arms = mechanism is None and misfit is not None
    # the person's pattern, or one round up to a design horizon given, is served with less
    # noise by the BLT
    blt_for_person = (
        misfit is None
        and not named_factorisation
        and (budget.is_user_level or design_horizon is not None)
        and anytime_choice(
            budget.participations, budget.min_separation, **design_horizon_options(design_horizon)
        )
        == AnytimeBLTCounter.name
    )
    if (
        mechanism == AnytimeBLTCounter.name
        or blt_for_person
        or (too_many_arms and noise == "gaussian" and budget.calibration == "tight")
    ):
        # one BLT for as long as the stream lasts: O(K) state, a guarantee for one round or one
        # person at every t (calibrated on the unit interval: sensitivity 1, as above)
        if noise != "gaussian":
            raise ArgumentError("mechanism='anytime_blt' draws Gaussian noise: give delta > 0")
        cal, params = calibrate_anytime_blt(unit, budget, **design_horizon_options(design_horizon))
        return AnytimeBLTCounter(
            k,
            cal.noise,
            parameters=params,
            replicas=replicas,
            rng=gen,
            bounds=arms,
            privacy=cal.guarantee,
        )
    if design_horizon is not None:
        raise design_horizon_refusal(
            "the tapered square-root factorisation" if misfit is None else "doubling blocks",
            factorisation_less_noise=misfit is None and not named_factorisation,
        )
    if misfit is None:
        cal = calibrate_anytime(TaperedSqrt(), unit, budget)
        return AnytimeFactorizationCounter(
            k, cal.noise, replicas=replicas, rng=gen, bounds=arms, privacy=cal.guarantee
        )
    if budget.is_user_level:
        raise person_blocks_refusal(budget, misfit)

    def calibrator(length: int) -> CounterCalibrator:
        name = mechanism or choose_mechanism("tight", length, k, noise)
        return CounterCalibrator(get_mechanism(name), length, unit, noise)

    return anytime_counter(
        budget,
        dim=k,
        bounds=arms,
        noise=noise,
        mechanism=mechanism,  # names the blocks; the calibrator builds them
        calibrator=calibrator,
        replicas=replicas,
        rng=gen,
    )


# --- catalogue entry (dponline.registry): dponline list, specs, the battery, dponline audit -----


def _default_delta(env: Any, options: Mapping[str, Any]) -> float:
    """0 (pure DP) for Laplace noise, the default; 1e-6 for Gaussian noise."""
    return 0.0 if options.get("noise", "laplace") == "laplace" else 1e-6


def _dp_ucb(env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any) -> DPUCB:
    return DPUCB(arms_of(env), horizon_for(env, anytime), budget=budget, **kw)


def last_round_plays_arm_0(outputs: np.ndarray) -> np.ndarray:
    """1 where the last round played arm 0, outputs (n, T)."""
    return (np.asarray(outputs)[:, -1] == 0).astype(float)


def _audit(seed: int, **options: Any) -> AuditCase:
    """Two arms, three rounds: each arm once, then the argmax of the indices, which differ only
    by the arms' private sums (the same N_a, t and widening). Round 1's loss (arm 0's reward) is
    0 or 1, the others 1/2."""
    return AuditCase(
        horizon=3,
        values=(0.0, 1.0),
        rest=0.5,
        coordinates="all",
        environment="bernoulli_bandit",
        environment_options={"n_arms": 2},
        learner_options=options,
        statistic=last_round_plays_arm_0,
        seed=seed,
    )


register_learner(
    LearnerEntry(
        "dp-ucb",
        _dp_ucb,
        paper="Mishra & Thakurta (2015), private UCB (paper: per-arm count-indexed trees, "
        "the public implementation's index); tight: UCB1 on one counter of dimension K with a "
        "widening from its exact variance (ours)",
        setting="stochastic K-armed bandit (rewards 1 - loss in [0, 1])",
        guarantee=(
            "event-level epsilon-DP (paper: Lap(L/eps) per node of each arm's tree, "
            "L = ceil(log2(T+1)); tight: the counter's guarantee for l1/l2 sensitivity 1, "
            "Laplace or, with noise='gaussian', (epsilon, delta)) over reward sequences "
            "differing in one round, rewards 1 - loss in [0, 1]"
        ),
        calibrations=("paper", "tight"),
        private=True,
        anytime=True,
        person_level=True,
        feedback_kind=FeedbackKind.BANDIT,
        action_space="arms",
        test_cases=(
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                # named: with delta > 0 given (an audit's --option) the default is Gaussian
                learner_options={"noise": "laplace"},
                label="laplace",
                audit=_audit(41, noise="laplace"),
            ),
            LearnerTestCase(
                "bernoulli_bandit",
                environment_options={"n_arms": 3},
                learner_options={"noise": "gaussian"},
                label="gaussian",
                audit=_audit(42, noise="gaussian"),
            ),
        ),
        options={
            "noise": "tight: 'laplace' (pure DP; the default unless delta > 0) or 'gaussian' "
            "(delta > 0, default 1e-6)",
            "mechanism": "tight: the counter by name (default: the best that fits 64 MiB; "
            "'blt' keeps O(K) noise state at any horizon, Gaussian noise; without a horizon "
            "'anytime_blt' runs one BLT and 'anytime_factorization' the tapered "
            "factorisation, for one round or one person)",
            "gamma": "paper: gamma of the widening v (default T^-4)",
            "alpha": "tight: confidence exponent of the widening (default 4)",
            "design_horizon": DESIGN_HORIZON_OPTION,
        },
        default_delta=_default_delta,
    )
)
