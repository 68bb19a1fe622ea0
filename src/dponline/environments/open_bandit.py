"""Real logged bandit data: the Open Bandit Dataset's small sample (Saito, Aihara, Matsutani &
Narita, "Open Bandit Dataset and Pipeline: Towards Realistic and Reproducible Off-Policy
Evaluation", NeurIPS 2021 Datasets and Benchmarks).

ZOZOTOWN, a fashion e-commerce site, showed items at three positions of a recommendation
widget; in the "random" log of the campaign "all" each impression's item was drawn uniformly
from the 80 items (propensity score 1/80 for every row). The sample holds 10,000 impressions
(rows, in time order) with the item, its position (1-3), whether it was clicked and four
anonymised categorical user features; 38 of them were clicked. Shipped as
``dponline/data/open_bandit_random_all.csv.gz`` (provenance, checksums and what was dropped in
that folder's README; ``scripts/derive_open_bandit_sample.py`` derives it).

Two uses:

* :func:`open_bandit_click_rates` and :func:`open_bandit_arms`: the items' measured click rates
  as the means of a stochastic K-armed Bernoulli bandit (a simulator: rewards are drawn afresh,
  the log only sets the means);
* :func:`open_bandit_log`: the log itself, with contexts (the one-hot user features) and arms
  (items), for the replay evaluation of contextual learners
  (:mod:`dponline.experiments.replay`, Li, Chu, Langford & Wang 2011).
"""

from __future__ import annotations

import functools
import gzip
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from dponline.environments.k_armed import KArmedBandit

__all__ = [
    "OPEN_BANDIT_FILE",
    "OpenBanditLog",
    "OpenBanditSample",
    "expected_kept_rounds",
    "load_open_bandit_sample",
    "open_bandit_arms",
    "open_bandit_click_rates",
    "open_bandit_log",
]

#: the derived sample inside the package ``dponline.data``
OPEN_BANDIT_FILE = "open_bandit_random_all.csv.gz"
_COLUMNS = [
    "round",
    "item_id",
    "position",
    "click",
    "propensity_score",
    *(f"user_feature_{i}" for i in range(4)),
]
_ROUNDS, _ITEMS, _POSITIONS = 10_000, 80, 3
#: the number of distinct values of each user feature in the sample
_FEATURE_LEVELS = (3, 5, 8, 8)


@dataclass(frozen=True)
class OpenBanditSample:
    """The shipped sample, one entry per logged impression (10,000), arrays read-only:
    ``item_id`` (0-79), ``position`` (1-3), ``click`` (0/1), ``propensity`` (the logging
    policy's probability of the item, 1/80 throughout) and ``user_features`` (10,000 x 4 integer
    codes of the anonymised features)."""

    item_id: np.ndarray
    position: np.ndarray
    click: np.ndarray
    propensity: np.ndarray
    user_features: np.ndarray

    @property
    def n_rounds(self) -> int:
        return int(self.item_id.size)

    @property
    def n_items(self) -> int:
        return _ITEMS

    @property
    def n_positions(self) -> int:
        return _POSITIONS


@functools.cache
def load_open_bandit_sample() -> OpenBanditSample:
    """Read (once) and check the shipped sample: 10,000 rounds in order, 80 items, positions
    1-3, clicks 0/1, uniform propensities 1/80, feature codes within their levels."""
    path = resources.files("dponline.data").joinpath(OPEN_BANDIT_FILE)
    with path.open("rb") as raw, gzip.open(raw, "rt") as fh:
        header = fh.readline().strip().split(",")
        values = np.loadtxt(fh, delimiter=",", ndmin=2)
    if header != _COLUMNS or values.shape != (_ROUNDS, len(_COLUMNS)):
        raise ValueError(f"the Open Bandit data file is corrupt: {header}, shape {values.shape}")
    ints = values[:, [0, 1, 2, 3, 5, 6, 7, 8]].astype(np.int64)
    if not np.array_equal(ints, values[:, [0, 1, 2, 3, 5, 6, 7, 8]]):
        raise ValueError("the Open Bandit data file is corrupt: a non-integer code")
    features = ints[:, 4:]
    ok = (
        np.array_equal(ints[:, 0], np.arange(_ROUNDS))
        and np.array_equal(np.unique(ints[:, 1]), np.arange(_ITEMS))
        and np.array_equal(np.unique(ints[:, 2]), np.arange(1, _POSITIONS + 1))
        and set(np.unique(ints[:, 3])) <= {0, 1}
        and np.allclose(values[:, 4], 1.0 / _ITEMS)
        and features.min() >= 0
        and np.all(features.max(axis=0) == np.array(_FEATURE_LEVELS) - 1)
    )
    if not ok:
        raise ValueError("the Open Bandit data file is corrupt: a value outside its range")
    arrays = [ints[:, 1], ints[:, 2], ints[:, 3], values[:, 4].copy(), features.copy()]
    for a in arrays:
        a.setflags(write=False)
    return OpenBanditSample(*arrays)


def _checked_position(position: Any) -> int | None:
    if position is None:
        return None
    if (
        not isinstance(position, int | np.integer)
        or isinstance(position, bool)
        or (position not in range(1, _POSITIONS + 1))
    ):
        raise ValueError(f"position must be None (all pooled) or 1, 2 or 3, got {position!r}")
    return int(position)


def open_bandit_click_rates(position: int | None = None) -> np.ndarray:
    """Each item's measured click rate, clicks / impressions, shape (80,), indexed by item id:
    all three positions pooled (``position=None``, 96 to 160 impressions per item) or at one
    position (1, 2 or 3; 24 to 59 impressions per item).

    Pooled: the best item (id 49) was clicked 3 times in 114 impressions (0.026), the median
    rate is 0 and 51 of the 80 items were never clicked; 38 clicks in 10,000 impressions."""
    pos = _checked_position(position)
    data = load_open_bandit_sample()
    rows = np.ones(data.n_rounds, bool) if pos is None else data.position == pos
    shown = np.bincount(data.item_id[rows], minlength=_ITEMS)
    clicks = np.bincount(data.item_id[rows], weights=data.click[rows], minlength=_ITEMS)
    return clicks / shown


def _checked_items(items: int | Sequence[int] | None) -> np.ndarray:
    """Item ids: all 80 (None), the first k ids (an int k >= 2), or the given distinct ids."""
    if items is None:
        return np.arange(_ITEMS)
    if isinstance(items, int | np.integer) and not isinstance(items, bool):
        if not 2 <= items <= _ITEMS:
            raise ValueError(f"items must name 2 to {_ITEMS} items, got {items!r}")
        return np.arange(int(items))
    ids = np.asarray(items)
    if (
        ids.ndim != 1
        or ids.size < 2
        or not np.issubdtype(ids.dtype, np.integer)
        or ids.min() < 0
        or ids.max() >= _ITEMS
        or np.unique(ids).size != ids.size
    ):
        raise ValueError(
            f"items must be None, a count or at least 2 distinct item ids in [0, {_ITEMS}), "
            f"got {items!r}"
        )
    return ids.astype(np.int64)


def open_bandit_arms(
    horizon: int,
    rng: np.random.Generator | int | None = 0,
    *,
    position: int | None = None,
    items: int | Sequence[int] | None = None,
) -> KArmedBandit:
    """A stochastic K-armed Bernoulli bandit (:class:`~dponline.environments.k_armed.
    KArmedBandit`) whose arms are Open Bandit items, each clicked with its measured rate
    (:func:`open_bandit_click_rates`, positions pooled unless ``position`` names one);
    ``items``: all 80 (None), the first k ids or a list of ids.

    Its ``means`` are the click rates (mean rewards); the learner sees the loss 1 - click of
    the arm it played, and the regret is the pseudo-regret sum_s (mu* - mu_{a_s}): the
    expected clicks lost against the best item (pooled: mu* = 3/114 = 0.026, item 49). The
    gaps are small (a uniformly random item loses 0.022 clicks a round) and 51 items tie at 0,
    so learners need many rounds to tell the best items apart."""
    ids = _checked_items(items)
    rates = open_bandit_click_rates(position)[ids]
    where = "" if position is None else f", position {position}"
    return KArmedBandit(
        rates,
        horizon,
        family="bernoulli",
        rng=rng,
        name=f"open bandit items ({ids.size} arms{where})",
    )


@dataclass(frozen=True)
class OpenBanditLog:
    """The logged rounds a replay walks: round i showed arm ``actions[i]`` (an index into
    ``items``, the item ids) to a user with context ``contexts[i]`` and got reward
    ``rewards[i]`` (a click); the logging policy drew the arm uniformly from the arms
    (``propensity[i]`` = 1/arms given the round's item is one of them). ``rows`` are the rows
    of the shipped sample, in time order."""

    contexts: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    propensity: np.ndarray
    items: np.ndarray
    rows: np.ndarray
    feature_names: tuple[str, ...]

    def __post_init__(self) -> None:
        n = self.actions.shape[0]
        if (
            self.contexts.ndim != 2
            or self.contexts.shape[0] != n
            or self.rewards.shape != (n,)
            or self.propensity.shape != (n,)
            or self.rows.shape != (n,)
            or len(self.feature_names) != self.contexts.shape[1]
        ):
            raise ValueError(
                f"a log's arrays must agree on its {n} rounds: contexts {self.contexts.shape}, "
                f"rewards {self.rewards.shape}, propensity {self.propensity.shape}, rows "
                f"{self.rows.shape}, {len(self.feature_names)} feature names"
            )
        if n and (self.actions.min() < 0 or self.actions.max() >= self.items.size):
            raise ValueError(f"actions must index the {self.items.size} arms")

    @property
    def n_rounds(self) -> int:
        return int(self.actions.size)

    @property
    def dim(self) -> int:
        return int(self.contexts.shape[1])

    @property
    def arms(self) -> int:
        return int(self.items.size)

    @property
    def click_rate(self) -> float:
        """The logged (uniform) policy's click rate: the mean reward over the log."""
        return float(self.rewards.mean())

    @property
    def reward_range(self) -> tuple[float, float]:
        return (0.0, 1.0)


def open_bandit_log(
    items: int | Sequence[int] | None = None,
    *,
    position: int | None = None,
    intercept: bool = True,
) -> OpenBanditLog:
    """The sample as a log for replay: arms = ``items`` (all 80 for None, the first k ids for
    an int k, or a list of ids), the rows restricted to those items (and to ``position`` if it
    names one); given that a row's item is among the arms it was drawn uniformly from them, so
    the restricted log is again uniformly logged. Choose the arms without looking at the
    clicks: a choice by outcome would bias the evaluation.

    Context: 1 (``intercept``) then the one-hot codes of the four user features (3 + 5 + 8 + 8
    levels), 25 coordinates in {0, 1}: ||x||_inf = 1, the bound the GLM bandits take. Reward:
    the click (0 or 1)."""
    ids = _checked_items(items)
    pos = _checked_position(position)
    data = load_open_bandit_sample()
    arm_of = np.full(_ITEMS, -1)
    arm_of[ids] = np.arange(ids.size)
    keep = arm_of[data.item_id] >= 0
    if pos is not None:
        keep &= data.position == pos
    rows = np.flatnonzero(keep)
    blocks = [np.ones((rows.size, 1))] if intercept else []
    names = ["intercept"] if intercept else []
    for j, levels in enumerate(_FEATURE_LEVELS):
        blocks.append(np.eye(levels)[data.user_features[rows, j]])
        names += [f"user_feature_{j}={v}" for v in range(levels)]
    return OpenBanditLog(
        contexts=np.hstack(blocks),
        actions=arm_of[data.item_id[rows]],
        rewards=data.click[rows].astype(float),
        propensity=np.full(rows.size, 1.0 / ids.size),
        items=ids,
        rows=rows,
        feature_names=tuple(names),
    )


def expected_kept_rounds(n_rounds: int, arms: int) -> tuple[float, float]:
    """Mean and standard deviation of the number of rounds replay keeps from ``n_rounds``
    uniformly logged over ``arms`` arms: Binomial(n, 1/K), whatever the policy (each logged
    arm matches the policy's choice with probability 1/K, independently of the choice)."""
    p = 1.0 / arms
    return n_rounds * p, math.sqrt(n_rounds * p * (1.0 - p))
