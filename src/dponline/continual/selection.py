"""Which counter a learner runs: the padded tree for ``paper`` calibrations, and for ``tight`` ones
the lowest-variance mechanism whose noise state for one run fits a memory budget.

At equal privacy the mechanisms rank, by their largest release variance (``dponline
mechanisms``; Gaussian noise at rho = 1/2 and unit l2 sensitivity, T = 1024: binary tree 110,
Honaker 63.8, k-ary tree 54.0, BLT 10.71, square root 10.71, rescaled square root 9.50), as

    rescaled square root <= square root <= BLT (within 1.1x, tests/continual/test_blt.py)
        < Honaker < binary tree,

and with Laplace noise, offered by the trees only (epsilon = 1, unit l1 sensitivity, T = 1024:
binary tree 2,420, Honaker 1,404, k-ary tree 324; :func:`~dponline.experiments.mechanism_table.
laplace_table`), as

    k-ary tree <= Honaker < binary tree

(at every horizon we measured, 1 to 10^5, tests/continual/test_selection.py; equal at T = 1).
The rescaled square root is never worse than the square root (it keeps D = I when it is not
beaten, :mod:`dponline.continual.scaled_sqrt`). The square roots hold their T noise vectors
(O(T d) per replica), the BLT O(buffers x d), the binary trees O(d log T), the k-ary tree
((h - 1) k + 2) d numbers (28 at T = 1024: k = 13, h = 3). :func:`best_mechanism` returns the
first of that ranking that supports the noise and whose state for one run (one replica) fits
``memory_budget`` bytes. The choice depends on the run (horizon, dimension,
noise), never on how many replicas simulate it: a simulation with more seeds runs the same
mechanism as one with fewer (its memory grows with the replicas instead).
:func:`choose_mechanism` adds the ``paper`` calibrations' tree.

For one person's rounds (a budget with ``participations`` k > 1 at least ``min_separation`` b
apart) the ranking is recomputed (:func:`person_ranking`): the candidates that fit are scored
by their largest release variance when calibrated for the person, the smooth binary
mechanism among the Laplace counters (never first for one round, but it beats the k-ary tree
for a person of many rounds at short horizons: 49,928 against 65,536 for 32 rounds of 32,
every round; 64 against 90 for 3 rounds 2 apart at T = 5. Of the patterns with T <= 64,
every k and b in {1, 2, 3, T // k} it won 337, all at T <= 34; of k in {T/4, T/2, 3T/4, T},
b = 1, up to T = 512, none past T = 34). It differs: at T = 1024
the BLT optimised for the pattern beats the rescaled square root for 4 rounds 256 apart and 16
rounds 1 apart. The rescaled square root's sensitivity to a person is an upper bound at
every horizon (:func:`~dponline.continual.participation.weighted_toeplitz_participation_sq`,
within 0.5% of a pattern's value in the cases measured): at T = 16,384, 4 rounds 2,048 apart,
the BLT's 99.84 beats its 105.3; at T = 4,097, 2 rounds 2,049 apart, it is chosen at 28.81
against the BLT's 30.67; at T = 10^6, 4 rounds 10^5 apart, the BLT's 167.88 beats its 172.85,
and at T = 2^18 + 1, 64 rounds 1 apart, 57,472 its 67,746 (the BLT's person sensitivity and
largest variance have closed forms, :mod:`~dponline.continual.blt`: the whole ranking takes
about 3 s there). Past :data:`PERSON_TREE_HORIZON` rounds only the factorisations are scored
(the trees' exact variances cost O(T)), and Laplace noise takes the k-ary tree.
"""

from __future__ import annotations

import functools
from typing import Any

from dponline.continual.binary_tree import levels as tree_levels
from dponline.continual.blt import DEFAULT_BUFFERS
from dponline.continual.kary_tree import kary_layout
from dponline.continual.participation import check_pattern, effective_participations
from dponline.continual.smooth_binary import smooth_binary_depth

__all__ = [
    "MEMORY_BUDGET",
    "PAPER_MECHANISM",
    "PERSON_TREE_HORIZON",
    "best_mechanism",
    "choose_mechanism",
    "person_ranking",
    "state_bytes",
]

#: default bytes of noise state the counter of one run (one replica) may hold
MEMORY_BUDGET = 64 * 2**20

#: above this horizon the choice for a person scores the factorisations only (for Laplace
#: noise it takes the k-ary tree): the trees' exact variances cost O(T) memory, and for every
#: person measured the best factorisation had 5.9x to 12x less variance than the best tree
#: (Honaker's 348.2 against the BLT's 58.92 at T = 1,024, 4 rounds 256 apart; 4.68e7 against
#: 3.92e6 at T = 16,385, 1,000 rounds 1 apart), as the k-ary tree beat the other Laplace trees
PERSON_TREE_HORIZON = 2**22

#: the counter of ``paper`` calibrations: Agarwal & Singh's Algorithm 2 (TreeBasedAgg), the tree
#: with identically distributed noise that the papers' formulas and regret bounds are stated for
PAPER_MECHANISM = "padded_tree"

_RANKING = {
    "gaussian": ("scaled_sqrt", "sqrt_factorization", "blt", "honaker", "binary_tree"),
    # the smooth binary mechanism is never first for one round (tests/continual/test_selection.py)
    # and is ranked for a person only
    "laplace": ("kary_tree", "honaker", "binary_tree", "smooth_binary"),
}


def state_bytes(mechanism: str, horizon: int, dim: int, replicas: int = 1) -> int:
    """Bytes of float64 state a counter keeps (its noise and running sums), all replicas."""
    per = int(dim) * int(replicas) * 8
    if mechanism in ("sqrt_factorization", "scaled_sqrt"):
        return (int(horizon) + 1) * per
    if mechanism == "kary_tree":
        arity, levels = kary_layout(int(horizon))
        return ((levels - 1) * arity + 2) * per
    if mechanism == "blt":
        return (DEFAULT_BUFFERS + 2) * per
    if mechanism in ("binary_tree", "honaker"):  # per level an exact and a noisy node, a release
        return (2 * tree_levels(int(horizon)) + 1) * per
    if mechanism == "smooth_binary":  # a noise per bit of the current leaf, the running sum
        return (smooth_binary_depth(int(horizon)) + 1) * per
    if mechanism == "anytime_factorization":  # after t rounds, 2^m <= t < 2^(m+1): the draws
        chunk = 1 << (max(int(horizon), 1).bit_length() - 1)  # z_1..z_(2^(m+1)-1), the current
        return 3 * chunk * per  # chunk's 2^m correlated terms and the running sum
    raise ValueError(f"no memory model for mechanism {mechanism!r}")


def best_mechanism(
    horizon: int,
    dim: int,
    noise: str,
    *,
    memory_budget: int = MEMORY_BUDGET,
    participations: int = 1,
    min_separation: int = 1,
) -> str:
    """The lowest-variance mechanism for ``noise`` ("gaussian" or "laplace") whose state for one
    run over ``horizon`` rounds in ``dim`` coordinates fits ``memory_budget`` bytes (module
    docstring); the binary tree if none does. For one person's rounds (``participations`` k,
    at least 2 of which fit, ``min_separation`` b), the one of those mechanisms whose largest
    release variance is least when calibrated for the person (:func:`person_ranking`): the
    one-round ranking does not carry over."""
    if noise not in _RANKING:
        raise ValueError(f"noise must be 'gaussian' or 'laplace', got {noise!r}")
    t, k, b = check_pattern(horizon, participations, min_separation)
    fits = tuple(
        name for name in _RANKING[noise] if state_bytes(name, horizon, dim) <= memory_budget
    )
    if not fits:
        return "binary_tree"
    if len(fits) > 1 and effective_participations(t, k, b) > 1:
        if t > PERSON_TREE_HORIZON:
            # the trees' exact variances cost O(T) (gigabytes past 10^8 rounds) and they lost
            # to the first of the ranking by 5.9x to 12x for every person measured: not scored
            factorisations = ("scaled_sqrt", "sqrt_factorization", "blt")
            fits = tuple(name for name in fits if name in factorisations) or fits[:1]
            if len(fits) == 1:
                return fits[0]
        return person_ranking(t, k, b, noise, fits)[0][0]
    return fits[0]


@functools.lru_cache(maxsize=32)
def person_ranking(
    horizon: int,
    participations: int,
    min_separation: int,
    noise: str,
    candidates: tuple[str, ...],
) -> tuple[tuple[str, float], ...]:
    """``candidates`` with their largest release variance when calibrated for one person, least
    first: noise of scale the person's sensitivity factor under the pattern (l2 for Gaussian
    noise, l1 for Laplace; every candidate then has the same privacy for the person, as
    :func:`~dponline.continual.calibration.calibrate_counter` scales it). Ties keep the
    candidates' order. The BLT is scored with its parameters optimised for the pattern, as it
    is then built. A candidate whose one-round largest variance is already at least the best
    found is left out (it cannot win: the person's sensitivity is at least one round's, and a
    structure optimised for the person has at least the one-round optimum's variance)."""
    from dponline.continual.registry import get_mechanism
    from dponline.privacy.noise import GaussianNoise, LaplaceNoise

    def scaled(factors: tuple[float, float]) -> Any:
        return GaussianNoise(factors[1]) if noise == "gaussian" else LaplaceNoise(factors[0])

    scored: list[tuple[float, int, str]] = []
    for order, name in enumerate(candidates):
        cls = get_mechanism(name)
        if scored and name != "blt":
            # a person's rounds include one round, so a candidate whose one-round largest
            # variance is already above the best person's cannot win: skip its (costlier)
            # person-level sensitivity (the BLT's one-round optimum is as costly: scored)
            single = cls.release_variances(horizon, scaled(cls.sensitivity_factors(horizon)), 1)
            if float(single.max()) >= min(scored)[0]:
                continue
        pattern = cls.participation_sensitivity_factors(horizon, participations, min_separation)
        largest = cls.participation_max_variance(
            horizon, scaled(pattern.factors), 1, participations, min_separation
        )
        scored.append((largest, order, name))
    return tuple((name, value) for value, _, name in sorted(scored))


def choose_mechanism(
    calibration: str,
    horizon: int,
    dim: int,
    noise: str,
    *,
    participations: int = 1,
    min_separation: int = 1,
) -> str:
    """The counter a learner runs unless it names one: :data:`PAPER_MECHANISM` for the
    ``paper`` calibration, :func:`best_mechanism` for ``tight`` (for the budget's unit: one
    round, or one person's ``participations`` rounds ``min_separation`` apart); a function of
    the run only."""
    if calibration == "paper":
        return PAPER_MECHANISM
    if calibration != "tight":
        raise ValueError(f"calibration must be 'tight' or 'paper', got {calibration!r}")
    return best_mechanism(
        horizon, dim, noise, participations=participations, min_separation=min_separation
    )
