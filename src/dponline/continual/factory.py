"""Build a continual counter in one call.

* :func:`build_counter`: the counter of a learner: the mechanism chosen for the run
  (:func:`~dponline.continual.selection.choose_mechanism`: the padded tree for ``paper``, the
  lowest-variance counter whose state for one run fits 64 MiB for ``tight``; never a function of
  the number of replicas) and calibrated to the budget, or, for ``budget=None`` (a private
  learner's non-private counterpart), exact prefix sums with the same input contract.
* :func:`make_counter`: a named mechanism (or the run's choice) calibrated to a budget, over a
  known horizon or an unknown one.
* ``build_counter(budget, horizon=None, ...)``: the *anytime* counter of a learner built without
  a horizon: it never refuses a step and its guarantee holds for the releases up to every t.
  Which horizon-free mechanism that is is decided in one place, :func:`anytime_counter`
  (for ``tight`` Gaussian noise the tapered square-root factorisation, or the BLT without a
  horizon past the memory budget or for a person it serves with less noise; else
  :func:`doubling_counter`, Chan, Shi & Song's doubling blocks, each block the counter
  :func:`build_counter` chooses for that block's length).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dponline.continual.anytime_blt import AnytimeBLTCounter, make_anytime_blt
from dponline.continual.anytime_choice import anytime_choice
from dponline.continual.anytime_factorization import (
    AnytimeFactorizationCounter,
    make_anytime_counter,
)
from dponline.continual.base import ContinualCounter
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.continual.calibration import CounterCalibrator
from dponline.continual.registry import get_mechanism
from dponline.continual.selection import MEMORY_BUDGET, choose_mechanism, state_bytes
from dponline.continual.unknown_horizon import BlockCalibration, DoublingCounter
from dponline.privacy.arguments import ArgumentError, checked_count
from dponline.privacy.bounds import InputBounds
from dponline.privacy.budget import (
    PersonNotCovered,
    PrivacyBudget,
    group_privacy_hint,
    noise_for,
)
from dponline.privacy.calibration import Calibrator, calibrate
from dponline.privacy.guarantee import PrivacyWarning
from dponline.privacy.noise import GaussianNoise
from dponline.rng import RngLike

__all__ = [
    "anytime_counter",
    "build_counter",
    "doubling_counter",
    "factorisation_misfit",
    "make_counter",
    "person_blocks_refusal",
]


def _calibrated_class(calibrator: Any, name: str) -> type[ContinualCounter]:
    """The counter class a calibration was made for: the calibrator's own class when it holds
    one of that name (a k-ary tree with a fixed layout shares the name ``kary_tree`` with the
    default layout, whose column norms, and so noise, differ), else the registered class."""
    own = getattr(calibrator, "mechanism", None)
    if isinstance(own, type) and getattr(own, "name", None) == name:
        return own
    return get_mechanism(name)


def _check_bounds_type(bounds: Any) -> None:
    """TypeError unless ``bounds`` is None or an input set (a Box, a NormBall)."""
    if bounds is not None and not isinstance(bounds, InputBounds):
        raise TypeError(
            "bounds must be an input set of dponline.privacy.bounds, such as "
            f"Box(low, high, dim=d) or NormBall(radius, dim=d), got {bounds!r}"
        )


def _check_someone_checks_inputs(
    budget: PrivacyBudget | None, calibrator: Any, bounds: InputBounds | None, promised: bool
) -> None:
    """A private counter from a caller's calibrator checks its inputs against ``bounds``; with
    none, the caller must promise to check them itself (:func:`build_counter`)."""
    if budget is not None and calibrator is not None and bounds is None and not promised:
        raise ValueError(
            "a private counter from a calibrator needs bounds to check its inputs against, or "
            "caller_checks_inputs=True from a learner that checks them itself: the guarantee "
            "holds only for inputs within the calibrator's sensitivity"
        )


def build_counter(
    budget: PrivacyBudget | None,
    *,
    horizon: int | None = None,
    dim: int | None = None,
    bounds: InputBounds | None = None,
    noise: str | None = None,
    mechanism: str | None = None,
    regular_norm: float | None = None,
    calibrator: Calibrator | Callable[[int], Calibrator] | None = None,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
    caller_checks_inputs: bool = False,
    design_horizon: int | None = None,
) -> ContinualCounter | DoublingCounter | AnytimeFactorizationCounter | AnytimeBLTCounter:
    """The continual counter of a learner that sums ``horizon`` inputs in ``bounds`` (``dim``
    coordinates: the bounds', when given).

    * ``budget=None``: exact prefix sums (the non-private counterpart of a private learner): a
      binary tree that draws no noise (every release is the sum of the inputs so far), checking
      inputs against ``bounds`` (or clipping them) as the private counter does. ``mechanism``,
      ``noise`` and ``calibrator`` are not used.
    * otherwise: ``calibrate(calibrator, budget)``, by default the counter calibration
      (:class:`~dponline.continual.calibration.CounterCalibrator`) of ``mechanism`` for inputs in
      ``bounds`` with ``noise`` ("gaussian" or "laplace"; by default the budget's: Laplace for
      delta = 0, Gaussian for delta > 0); ``mechanism`` defaults to
      :func:`~dponline.continual.selection.choose_mechanism` (the padded tree for ``paper``,
      :func:`~dponline.continual.selection.best_mechanism` of the horizon, dimension and noise
      for ``tight``: the same mechanism whatever the number of replicas). A learner with its own
      calibration passes ``calibrator``, whose answer names the mechanism. The counter is the
      mechanism the calibration names, with its noise; its ``privacy`` is the calibration's
      guarantee, proven once.
    * ``horizon=None``: the anytime counter (:func:`anytime_counter`, the one place that
      chooses it): it never refuses a step, and its guarantee holds for the releases up to every
      t; without a budget, exact prefix sums that never refuse a step. ``calibrator`` is then a
      function of a block length returning a calibrator (for learners whose noise depends on
      the length, such as DP-FTPL's).
    * A private counter checks every input against ``bounds``. A learner whose calibrator
      bounds something the counter cannot see (a gradient's sensitivity, a batch's noisy loss)
      gives no bounds and ``caller_checks_inputs=True``: it then checks its own inputs before
      they reach the counter, and a calibrator without bounds or that promise is refused.
    * ``design_horizon``: for the BLT without a horizon, the rounds its buffers are optimised
      for (:func:`anytime_counter`); refused with a horizon.

    Examples
    --------
    >>> from dponline.privacy.bounds import Box
    >>> c = build_counter(None, horizon=4, bounds=Box(0, 1, dim=2), rng=0)
    >>> [c.step([1.0, 0.5]).ravel().tolist() for _ in range(3)]
    [[1.0, 0.5], [2.0, 1.0], [3.0, 1.5]]
    >>> from dponline.continual.selection import best_mechanism
    >>> c = build_counter(PrivacyBudget(1.0, 1e-6), horizon=64, bounds=Box(0, 1, dim=64))
    >>> c.name == best_mechanism(64, 64, "gaussian")
    True
    >>> import numpy as np
    >>> c = build_counter(None, bounds=Box(0, 1, dim=1))   # anytime, exact
    >>> float(c.step_block(np.ones((5, 1)))[-1, 0, 0]), c.horizon
    (5.0, None)
    """
    noise = noise_for(budget, noise, "gaussian")
    _check_bounds_type(bounds)
    if bounds is not None:
        if dim is not None and dim != bounds.dim:
            raise ValueError(f"dim is {dim!r} but bounds has dimension {bounds.dim}")
        dim = bounds.dim
    if dim is None:
        raise ValueError("build_counter needs dim or bounds (the inputs' dimension)")
    if horizon is None:
        if budget is not None and not isinstance(budget, PrivacyBudget):
            raise TypeError(f"budget must be a PrivacyBudget or None, got {type(budget).__name__}")
        if calibrator is not None and mechanism is not None:
            raise ValueError(
                f"give mechanism or calibrator, not both: the calibrator names its mechanism (got "
                f"mechanism={mechanism!r})"
            )
        if calibrator is not None and not callable(calibrator):
            raise TypeError(
                "with horizon=None, calibrator must be a function of a block length returning a "
                f"calibrator, got {type(calibrator).__name__}"
            )
        return anytime_counter(
            budget,
            dim=dim,
            bounds=bounds,
            noise=noise,
            mechanism=mechanism,
            regular_norm=regular_norm,
            calibrator=calibrator,  # type: ignore[arg-type]
            replicas=replicas,
            rng=rng,
            clip=clip,
            caller_checks_inputs=caller_checks_inputs,
            design_horizon=design_horizon,
        )
    if mechanism in ANYTIME_MECHANISMS:
        raise ValueError(
            f"mechanism={mechanism!r} runs without a horizon: give horizon=None, or "
            f"mechanism={ANYTIME_MECHANISMS[mechanism]!r} for a fixed horizon"
        )
    if design_horizon is not None and budget is not None:
        raise design_horizon_refusal(f"built for a horizon of {horizon} rounds", with_horizon=True)
    if budget is None:
        if mechanism is not None:  # unused without noise, but a misspelt name is still refused
            get_mechanism(mechanism)
        return BinaryTreeCounter(
            horizon, dim, GaussianNoise(0.0), replicas=replicas, rng=rng, bounds=bounds, clip=clip
        )
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a PrivacyBudget or None, got {type(budget).__name__}")
    if calibrator is None:
        if bounds is None:
            raise ValueError(
                "a private counter's noise is calibrated to its input set: give bounds (or a "
                "calibrator)"
            )
        name = mechanism or choose_mechanism(
            budget.calibration,
            horizon,
            dim,
            noise,
            participations=budget.participations,
            min_separation=budget.min_separation,
        )
        calibrator = CounterCalibrator(get_mechanism(name), horizon, bounds, noise, regular_norm)
    elif mechanism is not None:
        raise ValueError(
            f"give mechanism or calibrator, not both: the calibrator names its mechanism (got "
            f"mechanism={mechanism!r})"
        )
    else:
        _check_someone_checks_inputs(budget, calibrator, bounds, caller_checks_inputs)
    cal = calibrate(calibrator, budget)
    return _calibrated_class(calibrator, cal.mechanism)(
        horizon,
        dim,
        cal.noise,
        replicas=replicas,
        rng=rng,
        bounds=bounds,
        clip=clip,
        privacy=cal.guarantee,
    )


def make_counter(
    mechanism: str | None = None,
    *,
    horizon: int | None,
    bounds: InputBounds,
    budget: PrivacyBudget,
    noise: str | None = None,
    regular_norm: float | None = None,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
    design_horizon: int | None = None,
) -> ContinualCounter | DoublingCounter | AnytimeFactorizationCounter | AnytimeBLTCounter:
    """A continual counter for inputs in ``bounds``, calibrated to ``budget``
    (:mod:`dponline.continual.calibration`): ``mechanism`` by name, or, with ``None``, the one
    a learner would run (:func:`~dponline.continual.selection.choose_mechanism`), with ``noise``
    ("gaussian" or "laplace"; by default the budget's: Laplace for delta = 0, Gaussian for
    delta > 0).

    The counter's ``privacy`` states the guarantee (over streams that differ in one round, or in
    one person's rounds for a user-level budget), and every input is checked against ``bounds``
    (or clipped with ``clip=True``). With ``horizon=None`` the counter never refuses a step and
    its guarantee holds for the releases up to every t (:func:`anytime_counter`): ``mechanism``
    over doubling blocks, each calibrated for its own length at the full budget, or, without a
    mechanism, the best anytime counter (for ``tight`` Gaussian noise the tapered square root
    or the BLT without a horizon, :func:`anytime_counter`).
    ``design_horizon``: with ``mechanism="anytime_blt"``, the rounds its buffers are optimised
    for (:func:`anytime_counter`).

    >>> from dponline.privacy.bounds import Box
    >>> from dponline.privacy.budget import PrivacyBudget
    >>> c = make_counter("binary_tree", horizon=8, bounds=Box(0, 1, dim=2),
    ...                  budget=PrivacyBudget(1.0), noise="laplace", rng=0)
    >>> c.privacy.epsilon, c.noise.b   # 4 levels x l1 diameter 2 / epsilon
    (1.0, 8.0)
    >>> make_counter(horizon=None, bounds=Box(0, 1, dim=2), budget=PrivacyBudget(1.0, 1e-6)).name
    'anytime_factorization'
    """
    if mechanism in ANYTIME_MECHANISMS:
        if horizon is not None:
            raise ValueError(
                f"mechanism={mechanism!r} runs without a horizon: give horizon=None, or "
                f"mechanism={ANYTIME_MECHANISMS[mechanism]!r} for a fixed horizon"
            )
        name: str | None = mechanism
    else:
        name = None if mechanism is None else get_mechanism(mechanism).name
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a PrivacyBudget, got {type(budget).__name__}")
    noise = noise_for(budget, noise, "gaussian")
    _check_bounds_type(bounds)
    if budget.delta == 0 and noise == "gaussian":
        raise ValueError(
            "a pure-DP budget (delta = 0) needs Laplace noise (Gaussian noise gives "
            "(epsilon, delta)-DP with delta > 0): pass delta > 0, or leave noise to the budget"
        )
    if horizon is None:
        return anytime_counter(
            budget,
            dim=bounds.dim,
            bounds=bounds,
            noise=noise,
            mechanism=name,
            regular_norm=regular_norm,
            replicas=replicas,
            rng=rng,
            clip=clip,
            design_horizon=design_horizon,
        )
    if design_horizon is not None:
        raise design_horizon_refusal(f"built for a horizon of {horizon} rounds", with_horizon=True)
    return build_counter(
        budget,
        horizon=horizon,
        bounds=bounds,
        noise=noise,
        mechanism=name,
        regular_norm=regular_norm,
        replicas=replicas,
        rng=rng,
        clip=clip,
    )


# --- anytime counters: learners built with horizon=None ------------------------------------


def anytime_counter(
    budget: PrivacyBudget | None,
    *,
    dim: int,
    bounds: InputBounds | None,
    noise: str | None = None,
    mechanism: str | None = None,
    regular_norm: float | None = None,
    calibrator: Callable[[int], Calibrator] | None = None,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
    caller_checks_inputs: bool = False,
    design_horizon: int | None = None,
) -> DoublingCounter | AnytimeFactorizationCounter | AnytimeBLTCounter:
    """The horizon-free counter of every learner built with ``horizon=None``: the one place
    where that mechanism is chosen (``build_counter(budget, horizon=None, ...)`` calls it).

    The tapered square-root factorisation (:func:`factorisation_misfit` says when: ``tight``
    Gaussian noise for one round or one person, state within the memory budget), but for a
    person whose pattern the BLT without a horizon serves with less noise
    (:func:`~dponline.continual.anytime_choice.anytime_choice`: 50 rounds 10 apart, say), that
    BLT; past the memory budget with ``tight`` Gaussian noise and no mechanism named, the BLT
    without a horizon (:mod:`~dponline.continual.anytime_blt`, ours: O(d) state, for one round
    or one person; ``mechanism="anytime_blt"`` names it at any dimension, as
    ``mechanism="anytime_factorization"`` names the factorisation for any dimension and
    pattern); else doubling blocks (:func:`doubling_counter`) whose block of length n is what
    :func:`build_counter` would build for a horizon of n: ``mechanism``, else
    :func:`~dponline.continual.selection.choose_mechanism` of n (so a block's noise state fits
    the memory budget however long the stream runs), calibrated for n at the full budget, or
    ``calibrator(n)`` where given; without a budget, noiseless trees (exact prefix sums).
    ``caller_checks_inputs``: as for :func:`build_counter`. ``design_horizon``: the rounds the
    BLT without a horizon is optimised for (default
    :data:`~dponline.continual.anytime_blt.DESIGN_HORIZON`, 2^20; its guarantee holds at every
    round whatever it is, its variance past it grows about linearly); refused for another
    counter (ignored without a budget: no noise).
    """
    noise = noise_for(budget, noise, "gaussian")
    _check_bounds_type(bounds)
    _check_someone_checks_inputs(budget, calibrator, bounds, caller_checks_inputs)
    blt_options = design_horizon_options(design_horizon)
    if mechanism in ANYTIME_MECHANISMS and calibrator is not None:
        raise ValueError(f"give mechanism or calibrator, not both (got mechanism={mechanism!r})")
    if mechanism in ANYTIME_MECHANISMS and budget is not None:
        what = _ANYTIME_WORDS[mechanism]
        if bounds is None:
            raise ValueError(f"{what} is calibrated to its input set: give bounds")
        if noise != "gaussian":
            raise ValueError(
                f"{what} draws Gaussian noise, not {noise}: give the budget a delta > 0"
            )
        if mechanism == AnytimeBLTCounter.name:
            return make_anytime_blt(
                bounds, budget, replicas=replicas, rng=rng, clip=clip, **blt_options
            )
        if blt_options:
            raise design_horizon_refusal("the tapered square-root factorisation")
        # named: taken at any dimension and for any pattern (its state grows as t d; the
        # counter says once when it passes the memory budget)
        return make_anytime_counter(bounds, budget, replicas=replicas, rng=rng, clip=clip)
    misfit = None if budget is None else factorisation_misfit(budget, dim, noise, mechanism)
    if (
        budget is not None
        and misfit is not None
        and mechanism is None
        and calibrator is None
        and bounds is not None
        and noise == "gaussian"
        and budget.calibration == "tight"
    ):
        # the tapered factorisation's state would pass the memory budget: the BLT without a
        # horizon, O(d) state (within 1.72x of a square root built for t from 2^10 to 2^20
        # rounds, where doubling blocks are 4.6x to 7.9x; and blocks would add up a person's
        # rounds)
        return make_anytime_blt(
            bounds, budget, replicas=replicas, rng=rng, clip=clip, **blt_options
        )
    if (
        budget is not None
        and misfit is None
        and (budget.is_user_level or blt_options)
        and calibrator is None
        and bounds is not None
        and anytime_choice(budget.participations, budget.min_separation, **blt_options)
        == AnytimeBLTCounter.name
    ):
        # for this person's pattern, or for one round up to a design horizon given, the BLT
        # without a horizon (optimised for that horizon) has the smaller worst variance over a
        # square root's (dponline.continual.anytime_choice): tight takes the counter of least
        # variance, as with a horizon
        return make_anytime_blt(
            bounds, budget, replicas=replicas, rng=rng, clip=clip, **blt_options
        )
    if budget is not None and blt_options:
        raise design_horizon_refusal(
            "the tapered square-root factorisation" if misfit is None else "doubling blocks",
            factorisation_less_noise=misfit is None and calibrator is None and bounds is not None,
        )
    if budget is not None and budget.is_user_level and (calibrator is not None or misfit):
        raise person_blocks_refusal(budget, misfit or "a calibrator of blocks was given")
    if budget is None:

        def exact(length: int) -> BlockCalibration:
            return BlockCalibration(BinaryTreeCounter, GaussianNoise(0.0), None)

        return doubling_counter(
            exact, dim=dim, bounds=bounds, replicas=replicas, rng=rng, clip=clip, name="exact"
        )
    if calibrator is None:
        if bounds is None:
            raise ValueError(
                "a private counter's noise is calibrated to its input set: give bounds (or a "
                "calibrator)"
            )
        if misfit is None:
            return make_anytime_counter(bounds, budget, replicas=replicas, rng=rng, clip=clip)
        fixed = bounds

        def calibrator(length: int) -> Calibrator:
            name = mechanism or choose_mechanism(budget.calibration, length, dim, noise)
            return CounterCalibrator(get_mechanism(name), length, fixed, noise, regular_norm)

    make = calibrator
    # each block calibrated leniently; the stream's guarantee is checked once (doubling_counter)
    lenient = replace(budget, allow_weaker=True)

    def private(length: int) -> BlockCalibration:
        block = make(length)
        cal = calibrate(block, lenient)
        return BlockCalibration(_calibrated_class(block, cal.mechanism), cal.noise, cal.guarantee)

    return doubling_counter(
        private,
        dim=dim,
        bounds=bounds,
        replicas=replicas,
        rng=rng,
        clip=clip,
        budget=budget,
        name=mechanism or "per-block choice",
        caller_checks_inputs=caller_checks_inputs,
    )


#: the counters without a horizon that a name asks for, and the fixed-horizon counter each
#: corresponds to (suggested when a horizon is given)
ANYTIME_MECHANISMS = {
    AnytimeBLTCounter.name: "blt",
    AnytimeFactorizationCounter.name: "sqrt_factorization",
}
_ANYTIME_WORDS = {
    AnytimeBLTCounter.name: "the BLT without a horizon",
    AnytimeFactorizationCounter.name: "the tapered factorisation",
}


#: the stream length for which the anytime factorisation's noise state (O(t d): after t rounds,
#: 2^m <= t < 2^(m+1), the draws of two chunks and the current chunk's correlated terms, about
#: 3 x 2^m numbers a coordinate) must fit the memory budget of one run for ``tight`` to take it
ANYTIME_MEMORY_ROUNDS = 2**18


#: the most coordinates whose anytime factorisation fits the memory budget (10 for 64 MiB)
ANYTIME_MAX_DIM = MEMORY_BUDGET // state_bytes("anytime_factorization", ANYTIME_MEMORY_ROUNDS, 1)


def factorisation_misfit(
    budget: PrivacyBudget, dim: int, noise: str, mechanism: str | None = None
) -> str | None:
    """None when the anytime counter is the tapered square-root factorisation
    (:class:`~dponline.continual.anytime_factorization.TaperedSqrt`): ``tight`` Gaussian
    noise (one round or one person as the unit), no mechanism named, and its noise state over
    :data:`ANYTIME_MEMORY_ROUNDS` rounds within the memory budget; else why not, in words (the
    first reason that holds). Its largest variance up to t is within 1.4x of a square root
    built for t = 2^10 .. 2^20 (``dponline mechanisms --anytime``), against 4.6x to 7.9x for
    doubling blocks of the square root and 1.04x to 1.72x for the BLT without a horizon, which
    :func:`anytime_counter` takes past the memory budget (large dimensions); doubling blocks
    remain the choice otherwise (``paper`` formulas, Laplace noise, a named mechanism)."""
    if mechanism is not None:
        return f"a mechanism was named ({mechanism!r})"
    if noise != "gaussian":
        return f"the noise is {noise}"
    if budget.calibration != "tight":
        return f"the calibration is {budget.calibration!r}"
    need = state_bytes("anytime_factorization", ANYTIME_MEMORY_ROUNDS, dim)
    if need <= MEMORY_BUDGET:
        return None
    return (
        f"its noise over {ANYTIME_MEMORY_ROUNDS:,} rounds in {dim:,} coordinates would hold "
        f"{need:,} bytes, over the memory budget of {MEMORY_BUDGET:,} ({MEMORY_BUDGET / 2**20:g} "
        "MiB)"
    )


def design_horizon_options(design_horizon: int | None) -> dict[str, int]:
    """``{"design_horizon": n}`` checked, or nothing for ``None`` (the default horizon)."""
    if design_horizon is None:
        return {}
    return {"design_horizon": checked_count("design_horizon", design_horizon)}


def design_horizon_refusal(
    counter: str, *, with_horizon: bool = False, factorisation_less_noise: bool = False
) -> ArgumentError:
    """The error for ``design_horizon`` given where ``counter`` runs instead of the BLT without
    a horizon (``with_horizon``: because a horizon was given; ``factorisation_less_noise``:
    because the factorisation has the smaller worst variance up to that design horizon)."""
    if factorisation_less_noise:
        counter += (
            ", whose largest variance over a square root's is smaller than that BLT's "
            "(dponline.continual.anytime_choice)"
        )
    fix = (
        "the BLT without a horizon runs with horizon=None (anytime=True for build_learner, "
        "anytime = true in a spec)"
        if with_horizon
        else "name mechanism='anytime_blt' (tight Gaussian noise, no horizon) to run the BLT"
    )
    return ArgumentError(
        "design_horizon sets the rounds the BLT without a horizon is optimised for, but this "
        f"counter is {counter}: {fix}, or drop design_horizon"
    )


def person_blocks_refusal(budget: PrivacyBudget, why: str) -> PersonNotCovered:
    """The error for a person's budget on a counter without a horizon that is not the tapered
    factorisation (doubling blocks), saying ``why`` the factorisation was not taken."""
    return PersonNotCovered(
        group_privacy_hint(
            "a counter without a horizon in doubling blocks (a person's rounds may fall in "
            "several blocks, whose guarantees would compose)",
            budget,
            f"the factorisation is not taken here because {why}: give a horizon, or use "
            "tight Gaussian noise with no mechanism named (the tapered square-root "
            f"factorisation in at most {ANYTIME_MAX_DIM} coordinates, else the BLT without a "
            "horizon, mechanism='anytime_blt': both prove a person-level guarantee at every "
            "prefix length)",
        )
    )


def doubling_counter(
    block: Callable[[int], BlockCalibration],
    *,
    dim: int,
    bounds: InputBounds | None,
    replicas: int = 1,
    rng: RngLike = None,
    clip: bool = False,
    budget: PrivacyBudget | None = None,
    name: str = "doubling",
    caller_checks_inputs: bool = False,
) -> DoublingCounter:
    """Doubling blocks of lengths 1, 2, 4, ... (Chan, Shi & Song 2011; :class:`~dponline.
    continual.unknown_horizon.DoublingCounter`), block n being ``block(n)``'s mechanism with its
    noise, and the stream's guarantee (``budget`` given) the weakest block's, checked against
    ``budget`` once (``block`` may prove less than asked for some lengths: a ``paper``
    formula calibrated with ``allow_weaker``).

    Why the guarantee holds at every t: each round lies in exactly one block and each block is
    a mechanism calibrated for its own length at the full budget, so the releases up to any t
    have the weakest block's guarantee (parallel composition over disjoint rounds; later inputs
    may depend on earlier releases, which each block's guarantee allows). ``tight`` blocks each
    meet the request, so the first block's guarantee is the stream's; ``paper`` blocks prove
    different epsilons per length, and the largest over the lengths 2^0 .. 2^62 is taken.
    A private one (``budget`` given) checks its inputs against ``bounds``, or the caller
    promises to (``caller_checks_inputs``, as for :func:`build_counter`).
    """
    _check_someone_checks_inputs(budget, block, bounds, caller_checks_inputs)
    cache: dict[int, BlockCalibration] = {}

    def calibrated(length: int) -> BlockCalibration:
        if length not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)  # reported once, below
                cache[length] = block(length)
        return cache[length]

    privacy = None
    if budget is not None:
        lengths = range(63) if budget.calibration == "paper" else range(1)
        # one round's guarantees, combined and then proven once (a person by group privacy:
        # lifted once, PrivacyBudget.per_input)
        found = [budget.per_input(calibrated(2**k).guarantee) for k in lengths]
        stated = [g for g in found if g is not None]
        worst = max(stated, key=lambda g: g.epsilon)
        # the weakest block's rho, taken on its own (every block states one, or none is stated)
        rhos = [g.rho for g in stated]
        rho = None if any(r is None for r in rhos) else max(rhos)  # type: ignore[type-var]
        derivation = (
            "anytime (no horizon): doubling blocks of lengths 1, 2, 4, ... (Chan, Shi & Song "
            "2011), each calibrated for its own length at the full budget; every round lies in "
            "one block, so for every t the releases up to t have the weakest block's guarantee "
            f"(parallel composition over disjoint rounds). Weakest block: {worst.derivation}"
        )
        privacy = budget.prove(
            worst.epsilon,
            worst.delta,
            derivation,
            rho=rho,
            neighbouring=worst.neighbouring,
        )
    return DoublingCounter(
        calibrated,
        dim,
        bounds=bounds,
        replicas=replicas,
        rng=rng,
        clip=clip,
        privacy=privacy,
        name=name,
    )
