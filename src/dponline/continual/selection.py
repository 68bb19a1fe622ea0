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
"""

from __future__ import annotations

import math

from dponline.continual.blt import DEFAULT_BUFFERS
from dponline.continual.kary_tree import kary_layout

__all__ = ["MEMORY_BUDGET", "PAPER_MECHANISM", "best_mechanism", "choose_mechanism", "state_bytes"]

#: default bytes of noise state the counter of one run (one replica) may hold
MEMORY_BUDGET = 64 * 2**20

#: the counter of ``paper`` calibrations: Agarwal & Singh's Algorithm 2 (TreeBasedAgg), the tree
#: with identically distributed noise that the papers' formulas and regret bounds are stated for
PAPER_MECHANISM = "padded_tree"

_RANKING = {
    "gaussian": ("scaled_sqrt", "sqrt_factorization", "blt", "honaker", "binary_tree"),
    "laplace": ("kary_tree", "honaker", "binary_tree"),
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
    levels = math.ceil(math.log2(int(horizon) + 1))
    return (levels + 2) * per


def best_mechanism(
    horizon: int, dim: int, noise: str, *, memory_budget: int = MEMORY_BUDGET
) -> str:
    """The lowest-variance mechanism for ``noise`` ("gaussian" or "laplace") whose state for one
    run over ``horizon`` rounds in ``dim`` coordinates fits ``memory_budget`` bytes (module
    docstring); the binary tree if none does."""
    if noise not in _RANKING:
        raise ValueError(f"noise must be 'gaussian' or 'laplace', got {noise!r}")
    for name in _RANKING[noise]:
        if state_bytes(name, horizon, dim) <= memory_budget:
            return name
    return "binary_tree"


def choose_mechanism(calibration: str, horizon: int, dim: int, noise: str) -> str:
    """The counter a learner runs unless it names one: :data:`PAPER_MECHANISM` for the
    ``paper`` calibration, :func:`best_mechanism` for ``tight``; a function of the run only."""
    if calibration == "paper":
        return PAPER_MECHANISM
    if calibration != "tight":
        raise ValueError(f"calibration must be 'tight' or 'paper', got {calibration!r}")
    return best_mechanism(horizon, dim, noise)
