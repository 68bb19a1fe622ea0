"""The batch-learner adapter: a batch algorithm, which sees a whole dataset and returns one
output, as a learner of the one protocol (docs/design.md, "The learner protocol"), so that the batch
baselines of Han et al. Appendix C (NoisySFW, Bassily, Guzmán & Nandi 2021, Algorithm 3; noisy
SGD, Bassily et al. 2020; LocalMD, Asi et al. 2021, Algorithm 6) run on the one runner, in the
learner battery and in ``dponline audit`` beside the streaming Algorithm 1.

Over n = horizon samples, :class:`BatchLearner` plays (``act``) the algorithm's data-independent
start point until it has observed the n-th sample, and from then on the algorithm's output on all
n samples: one fit (:meth:`~dponline.stochastic.baseline_fit.BatchPlan.fit`), computed when the
n-th sample is observed. Each sample is validated on arrival (``||x||_q <= X``, ``|y| <= Y``;
ValueError naming the value and the bound, or clipping with ``clip=True``; NaN and infinity
always refused) and buffered.

Privacy (continual release, Han et al. Section 2.2). The actions released before sample n are one
constant, independent of the data, so the whole sequence of released actions is post-processing
of the batch algorithm's one output: it is exactly as private as that output, (epsilon, delta)
over datasets that differ in one sample. The baselines' calibrations depend on n, d, the bounds
and the budget only, so the guarantee is known at construction, before any data: the learner
states its plan's (:class:`~dponline.stochastic.baseline_fit.BatchPlan`), the very guarantee the
batch function (``noisy_sfw``, ...) returns, since both build and fit the same plan.

Replicas are the batch function's runs: the learner spawns one generator per replica from
``rng`` at construction (:func:`~dponline.stochastic.baseline_fit.run_generators`), so replica k
plays run k of ``fn(x, y, runs=replicas, rng=rng, step_scales=(step_scale,))`` bit for bit, and
its state (buffered samples, round, the replicas' generator states) resumes bit-exactly.

:func:`cached_plan` memoises the plans the catalogue's factories build (a plan is a pure,
read-only function of its arguments; the calibrations' accounting can take a second, and audits
build thousands of learners for one plan), and :func:`batch_learner` is the factories' common
body.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from dponline.domains.lp_ball import dual_exponent
from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_real_array,
    saved_field,
)
from dponline.privacy.budget import PrivacyBudget
from dponline.privacy.guarantee import PrivacyGuarantee
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    NoiseHandle,
    RoundDiscipline,
    checked_count,
)
from dponline.registry import AuditCase, LearnerEntry, LearnerTestCase, one_over_horizon
from dponline.rng import RngLike, generator_state
from dponline.stochastic.baseline_fit import BatchPlan, checked_dataset, run_generators
from dponline.stochastic.samples import checked_sample, sample_geometry
from dponline.warn import warn_caller

__all__ = [
    "BATCH_GUARANTEE",
    "BATCH_OPTIONS",
    "BatchLearner",
    "batch_factory",
    "batch_learner",
    "batch_learner_entry",
    "cached_plan",
]


class BatchLearner(NoiseHandle, RoundDiscipline):
    """A batch algorithm over n = ``plan.samples`` samples as a streaming learner (module
    docstring): plays ``plan.start()`` until the n-th sample, then the plan's output on all n.

    Parameters
    ----------
    plan:
        The batch algorithm with its calibrated noise (:class:`~dponline.stochastic.
        baseline_fit.BatchPlan`, one step scale), for example
        :class:`~dponline.stochastic.noisy_sfw.NoisySFWPlan`.
    replicas:
        Independent runs of the algorithm (the batch function's ``runs``).
    rng:
        Seed or generator; one generator per replica is spawned from it at construction.
    clip:
        Map out-of-bound samples into the bounds instead of refusing them.

    Attributes
    ----------
    privacy:
        The guarantee of the whole sequence of released actions: the plan's, over datasets that
        differ in one sample (voided by :meth:`scale_noise` below 1).
    output:
        What the learner releases now, shape (replicas, d) (a copy): the audit's ``release``.
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.SAMPLE
    unit: ClassVar[str] = "sample"

    def __init__(
        self,
        plan: BatchPlan,
        *,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        scales = np.asarray(plan.step_scales, dtype=float)
        if scales.ndim != 1 or scales.size < 1:
            raise ValueError(f"the plan needs step scales, got {plan.step_scales!r}")
        self.plan = plan
        self.paper: str = plan.paper
        self._start_rounds(plan.samples, "horizon (the plan's samples)")
        self.dim = checked_count("dim", plan.dim)
        self.q = float(plan.q)
        self.x_bound, self.y_bound = float(plan.x_bound), float(plan.y_bound)
        self.budget: PrivacyBudget | None = plan.budget
        #: The learning-rate scale factors, played as candidate-major blocks of ``runs``
        #: replicas each (several: a spec's ``tune`` in one pass, ``joint_options``).
        self.step_scales = tuple(float(v) for v in scales)
        self.step_scale = self.step_scales[0] if scales.size == 1 else None
        self.runs = checked_count("replicas", replicas)
        self.replicas = self.runs * scales.size
        self.clip = bool(clip)
        self._calibrated = _released_guarantee(plan)
        self.privacy: PrivacyGuarantee | None = self._calibrated
        start = np.asarray(plan.start(), dtype=float)
        if start.shape != (self.dim,):
            raise ValueError(f"the plan's start point has shape {start.shape}, not ({self.dim},)")
        self._gens = run_generators(rng, self.runs)
        self._x = np.zeros((self.horizon, self.dim))
        self._y = np.zeros(self.horizon)
        self._output = np.tile(start, (self.replicas, 1))  # the same for every replica

    @property
    def output(self) -> np.ndarray:
        """What the learner releases now, shape (replicas, d): the start point before the n-th
        sample, the batch output after it (a copy)."""
        return self._output.copy()

    def _scale_noise(self, factor: float) -> None:
        """Nothing to change now: the one fit (at the n-th sample) multiplies every calibrated
        noise scale by :attr:`noise_multiplier`, which :meth:`scale_noise` updates."""

    def act(self) -> np.ndarray:
        """This round's action, shape (replicas, d): the start point until the n-th sample has
        been observed, then the batch output (also after the last round)."""
        self._acted = True
        return self._output.copy()

    def observe(self, feedback: Feedback) -> None:
        """Validate and buffer one shared sample (after ``act``); the n-th runs the fit."""
        self._check_round()
        x, y = checked_sample(feedback, self.dim, self.q, self.x_bound, self.y_bound, self.clip)
        self._x[self.t] = x
        self._y[self.t] = y
        if self.t + 1 == self.horizon:
            theta = self.plan.fit(self._x, self._y, self._gens, self.noise_multiplier)
            # (runs, scales, d) -> scale-major blocks of runs: replica j * runs + k is run k at
            # step_scales[j], the same numbers as a learner built with that one scale
            self._output = np.ascontiguousarray(theta.transpose(1, 0, 2)).reshape(
                self.replicas, self.dim
            )
        self._end_round()

    def state_dict(self) -> dict[str, Any]:
        """Round, acted flag, noise multiplier, the buffered samples, the current output and
        every replica's generator state (numpy arrays and JSON-like values only)."""
        return {
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "x": self._x[: self.t].copy(),
            "y": self._y[: self.t].copy(),
            "output": self._output.copy(),
            "rng": [generator_state(g) for g in self._gens],
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole of a state saved by :meth:`state_dict` (of a learner built with the
        same plan and replicas) and return the function that installs it."""
        t, acted = self._checked_rounds(state)
        x = checked_real_array("saved x", saved_field(state, "x"))
        y = checked_real_array("saved y", saved_field(state, "y"))
        if t == 0 and x.size == 0 and y.size == 0:  # nothing buffered, whatever the layout
            x, y = x.reshape(0, self.dim), y.reshape(0)
        if x.shape != (t, self.dim) or y.shape != (t,):
            raise ArgumentError(
                f"saved samples must have shapes ({t}, {self.dim}) and ({t},) at round {t}, got "
                f"{x.shape} and {y.shape}"
            )
        if t:  # a saved sample outside the bounds would void the guarantee
            checked_dataset(x, y, q=self.q, x_bound=self.x_bound, y_bound=self.y_bound, clip=False)
        output = np.array(
            checked_real_array(
                "saved output", saved_field(state, "output"), (self.replicas, self.dim)
            )
        )
        rng = saved_field(state, "rng")
        if not isinstance(rng, list | tuple) or len(rng) != self.runs:
            raise ArgumentError(
                f"saved RNG state must be a list of {self.runs} generator states (one per "
                f"replica), got {rng!r:.200}"
            )
        gens = [checked_generator(f"saved rng[{k}]", s) for k, s in enumerate(rng)]
        multiplier = self._saved_multiplier(state)
        if multiplier != 1.0 and self._calibrated is None:
            raise ArgumentError(
                f"saved noise_multiplier {multiplier!r} for a non-private learner (no noise)"
            )

        def install() -> None:
            self.noise_multiplier, self.privacy, self.t = 1.0, self._calibrated, 0
            if multiplier != 1.0:
                NoiseHandle.scale_noise(self, multiplier)  # states the guarantee as it was
            self._x[:t], self._y[:t] = x, y
            self._output = output
            self._gens = gens
            self._set_rounds(t, acted)

        return install


def _released_guarantee(plan: BatchPlan) -> PrivacyGuarantee | None:
    """The plan's guarantee, its derivation saying why it covers every released action."""
    g = plan.privacy
    if g is None:
        return None
    return dataclasses.replace(
        g,
        derivation=(
            f"{g.derivation}; released by the batch-learner adapter: the data-independent start "
            f"point before sample {plan.samples}, then this one output (continual release as "
            "post-processing of the batch output)"
        ),
    )


@functools.lru_cache(maxsize=128)
def _plan_and_warnings(
    plan_class: type, samples: int, dim: int, options: tuple[tuple[str, Any], ...]
) -> tuple[BatchPlan, tuple[Warning, ...]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = plan_class(samples, dim, **dict(options))
    return plan, tuple(w.message for w in caught if isinstance(w.message, Warning))


def cached_plan(plan_class: type, samples: int, dim: int, **options: Any) -> BatchPlan:
    """``plan_class(samples, dim, **options)``, memoised on its arguments (when they are all
    hashable). Plans are read-only and data-independent, so learners of one configuration share
    one; the warnings the construction gave (a ``paper`` calibration proving less than asked,
    :class:`~dponline.privacy.guarantee.PrivacyWarning`) are given again at every call."""
    key = tuple(sorted(options.items()))
    try:
        hash(key)
    except TypeError:  # an unhashable option (a list, an array): build it afresh
        return plan_class(samples, dim, **options)
    plan, given = _plan_and_warnings(plan_class, samples, dim, key)
    for message in given:
        warn_caller(message)
    return plan


def batch_learner(
    env: Any,
    plan_class: type,
    *,
    geometry: float,
    budget: PrivacyBudget | None,
    replicas: int = 1,
    rng: RngLike = None,
    step_scale: float | Sequence[float] = 1.0,
    radius: float = 1.0,
    clip: bool = False,
    x_bound: float | None = None,
    y_bound: float | None = None,
    **plan_options: Any,
) -> BatchLearner:
    """The catalogue factories' common body: a :class:`BatchLearner` of ``plan_class`` for
    the sample environment ``env`` (n = ``env.horizon``, d = ``env.dim``), one learning-rate
    ``step_scale`` (the factor on the algorithm's default step), the l_p ball of ``radius`` for
    ``geometry`` = p (a list of scales plays them all, as blocks of ``replicas`` replicas: the
    runner's joint tuning), the input bounds of the stream (``env.x_bound(q)`` and ``env.y_bound``)
    unless ``x_bound`` or ``y_bound`` is given; ``plan_options`` go to the plan."""
    q = dual_exponent(float(geometry))
    plan = cached_plan(
        plan_class,
        env.horizon,
        env.dim,
        radius=float(radius),
        x_bound=float(env.x_bound(q) if x_bound is None else x_bound),
        y_bound=float(env.y_bound if y_bound is None else y_bound),
        budget=budget,
        step_scales=tuple(float(v) for v in np.atleast_1d(np.asarray(step_scale, dtype=float))),
        **plan_options,
    )
    return BatchLearner(plan, replicas=replicas, rng=rng, clip=clip)


def batch_factory(
    plan_class: type, name: str, *, default_p: float, fixed_p_reason: str | None = None
) -> Any:
    """The catalogue factory of the batch baseline ``name``: :func:`batch_learner` of
    ``plan_class`` over the l_p ball of the environment's geometry
    (:func:`~dponline.stochastic.samples.sample_geometry`, default ``default_p``), with the
    stream's input bounds unless ``x_bound`` or ``y_bound`` is given, and the budget the
    registry built (the entries' default delta is 1/T). With ``fixed_p_reason`` the algorithm
    runs over the ``default_p`` ball only (its plan takes no p): any other p is refused, saying
    why."""

    def factory(
        env: Any, *, budget: PrivacyBudget | None, p: float | None = None, **kw: Any
    ) -> BatchLearner:
        p = sample_geometry(env, p, default_p, name)
        if fixed_p_reason is not None and p != default_p:
            raise ValueError(
                f"{name} runs over {fixed_p_reason}, so p must be {default_p:g}, got p = {p:g}"
            )
        if fixed_p_reason is None:
            kw["p"] = p
        return batch_learner(env, plan_class, geometry=p, budget=budget, **kw)

    factory.__name__ = factory.__qualname__ = "_" + name.replace("-", "_")
    factory.__module__ = plan_class.__module__  # the registry orders entries by module
    factory.__doc__ = f"{name} behind the batch-learner adapter ({batch_factory.__name__})."
    return factory


#: What every batch baseline promises, whatever its accounting (added by ``guarantee_extra``).
BATCH_GUARANTEE = (
    "(epsilon, delta)-DP (default delta = 1/T) over datasets differing in one sample, for every "
    "released action: a batch algorithm, it releases nothing data-dependent before sample T (the "
    "start point 0, then its one output)"
)

#: The options every batch baseline takes through :func:`batch_learner`.
BATCH_OPTIONS = {
    "step_scale": "factor on the default step eta (default 1)",
    "radius": "of the l_p ball (default 1)",
    "clip": "clip out-of-bound samples instead of refusing them (default false)",
    "x_bound, y_bound": "input bounds (default: the environment's)",
    "delta": "1/T",
}


def batch_learner_entry(
    name: str,
    factory: Any,
    *,
    paper: str,
    setting: str,
    audit: AuditCase,
    options: dict[str, str],
    guarantee_extra: str = "",
) -> LearnerEntry:
    """The registry entry of a batch baseline behind :class:`BatchLearner`: private, paper and
    tight calibrations, samples in, an l_p-ball point out, the common guarantee and options
    (``options`` first, in its order, overriding the common ones, which follow), ``step_scale``
    tuned jointly, and the battery's
    test case on a small regression stream, whose release is the learner's ``output``."""
    return LearnerEntry(
        name,
        factory,
        paper=paper + "; a batch algorithm behind the batch-learner adapter",
        setting=setting,
        guarantee=BATCH_GUARANTEE + guarantee_extra,
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.SAMPLE,
        action_space="l_p ball",
        test_cases=(
            LearnerTestCase(
                "regression_stream",
                horizon=8,
                environment_options={"dim": 3},
                release=lambda learner: learner.output,
                audit=audit,
            ),
        ),
        options={**options, **{k: v for k, v in BATCH_OPTIONS.items() if k not in options}},
        joint_options=("step_scale",),
        default_delta=one_over_horizon,
    )
