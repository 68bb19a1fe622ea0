"""The doubling trick: an anytime learner from any fixed-horizon one (docs/design.md, "The
learner protocol", anytime learners).

:class:`DoublingLearner` plays consecutive *epochs* of lengths n_0, n_1, n_2, ... (1, 2, 4, ...
by default; ``first * ratio^k`` in general), each a *fresh* fixed-horizon learner
``make(n_k, rng_k)`` built for its epoch's length at the full budget and fed only its own
epoch's rounds. It runs with ``horizon=None`` (:class:`~dponline.protocol.RoundDiscipline`,
``anytime=True``): no round is refused for being late. Its replicas switch epochs together
(every epoch's learner holds all of them). Epoch k's generator ``rng_k`` is drawn from one
parent generator when the epoch is built (:func:`epoch_generator`: 128 bits of the parent's
stream seed a fresh :class:`numpy.random.SeedSequence`), so a run is reproducible from its seed,
and a saved state (the epoch index, the epoch learner's state and the parent's state) resumes bit
for bit across an epoch boundary.

Privacy (the classical doubling argument, as for the doubling counters of Chan, Shi & Song
2011; written out here for learners). Let every epoch's learner, built for n rounds, be
(eps_n, delta_n)-DP over inputs that differ in one round, *for inputs chosen adaptively* (each
round's input may depend on its earlier actions: the event-level guarantees of the learners
of this library hold in that model, their noise being calibrated to the worst case of every
input). Fix t and two adaptive input streams that differ in round s only; round s lies in
exactly one epoch j. Write the actions of rounds 1..t as (O_0, ..., O_K), O_i those of epoch i.

* The epochs' generators are drawn from the parent generator alone, independently of any
  input, and epoch i's learner reads only the inputs of its own rounds. Given O_0..O_{i-1} (and
  the parent's draws), the law of O_i is that of a fixed-horizon learner facing an adaptive
  stream built from O_0..O_{i-1} and its own actions.
* For i < j those conditional laws are identical under the two streams (no input of epoch i
  differs), so O_0..O_{j-1} has one law under both.
* Given O_0..O_{j-1}, epoch j's learner faces two adaptive streams that differ in one of its
  rounds: its actions O_j obey its (eps_{n_j}, delta_{n_j}) guarantee. Given O_0..O_j, the
  later epochs' actions have one conditional law under both streams (their inputs do not
  differ): they are a randomised post-processing of O_j with a kernel that does not depend on
  which stream is played.

Hence for every set S of action sequences, conditioning on O_0..O_{j-1} and integrating,
P[(O_0..O_K) in S] <= e^{eps_{n_j}} P'[(O_0..O_K) in S] + delta_{n_j}: the actions up to every
t are (max_k eps_{n_k}, max_k delta_{n_k})-DP, the weakest epoch's guarantee (parallel
composition over disjoint rounds), whatever t is. The same argument gives zCDP with the largest
rho. It needs one round as the unit of privacy: one person's rounds may fall in several epochs,
whose guarantees then compose, so a user-level budget (``participations > 1``) is refused.

Which epochs are checked. A ``tight`` calibration meets the request for every length (a tight
calibration that proves less raises), so the first epoch's guarantee is stated; a ``paper``
calibration proves a different epsilon for each length, and the largest over the epochs that
cover the first :data:`CHECKED_ROUNDS` rounds is stated (``epoch_guarantee(n)`` computes one
epoch's guarantee without building it). Either way every epoch's learner is checked against
the stated guarantee when it is built, before it plays (an error if it proves less, which would
be a bug in the calibration that ``epoch_guarantee`` mirrors): the statement is never exceeded.
A delta that depends on the horizon (such as 1/T) has no meaning here: the budget's delta is
one fixed number, the same for every epoch, and the statement above holds for it at every t.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_generator,
    checked_nonnegative_int,
    checked_positive,
    saved_field,
)
from dponline.privacy.budget import PersonNotCovered, PrivacyBudget, group_privacy_hint
from dponline.privacy.guarantee import (
    PrivacyGuarantee,
    PrivacyNotion,
    PrivacyWarning,
    proves_less,
)
from dponline.protocol import (
    ContextFeedback,
    Feedback,
    Learner,
    NoiseHandle,
    RoundDiscipline,
    checked_config,
    checked_count,
)
from dponline.rng import RngLike, as_generator, generator_state

__all__ = ["CHECKED_ROUNDS", "DoublingLearner", "epoch_generator", "epoch_lengths"]

#: The rounds whose epochs' guarantees a ``paper`` budget checks before the first round
#: (module docstring); an epoch past them is checked when it is built.
CHECKED_ROUNDS = 2**62

#: relative slack of the check of an epoch's guarantee against the stated one (the slack of
#: :attr:`~dponline.privacy.guarantee.PrivacyGuarantee.meets_request`: rounding only)
_SLACK = 1e-9


def epoch_generator(parent: np.random.Generator) -> np.random.Generator:
    """The generator of the next epoch's learner: a fresh :class:`numpy.random.SeedSequence`
    seeded with the next 128 bits of ``parent``'s stream (so the parent's saved state says which
    generators the later epochs get, which its spawn counter would not)."""
    words = parent.bit_generator.random_raw(2)
    return np.random.default_rng(np.random.SeedSequence([int(w) for w in words]))


def epoch_lengths(ratio: float = 2.0, first: int = 1) -> Callable[[int], int]:
    """Epoch k's length: ``first * ratio^k`` (exact for an integer ratio, else rounded, at
    least 1)."""
    n0 = checked_count("first", first)
    r = checked_positive("ratio", ratio)
    if not r > 1:
        raise ValueError(f"ratio must exceed 1 (epochs must grow), got {ratio!r}")
    if float(r).is_integer():
        step = int(r)
        return lambda k: n0 * step**k
    return lambda k: max(1, round(n0 * r**k))


class DoublingLearner(NoiseHandle, RoundDiscipline):
    """The doubling trick over a fixed-horizon learner (module docstring), an anytime learner.

    Parameters
    ----------
    make:
        ``make(length, rng) -> Learner``: a fresh learner for ``length`` rounds with the
        generator ``rng``, calibrated to the full budget (the same budget for every length),
        with ``replicas`` replicas. The first epoch's learner is built at construction, each
        next one when the epoch before it ends.
    budget:
        The :class:`~dponline.privacy.budget.PrivacyBudget` the epochs' learners are
        calibrated to (``None`` when they are non-private). One round must be the unit of
        privacy (``participations > 1`` is refused).
    replicas:
        The replicas of every epoch's learner (checked); they switch epochs together.
    rng:
        The parent generator (or its seed) from which every epoch's generator is drawn
        (:func:`epoch_generator`).
    ratio, first:
        Epoch k lasts ``first * ratio^k`` rounds (:func:`epoch_lengths`; 1, 2, 4, ... by
        default).
    epoch_guarantee:
        ``epoch_guarantee(length)``: the guarantee a learner built for ``length`` rounds proves,
        computed without building it (its calibration). Required for a ``paper`` budget, whose
        guarantee depends on the length: the weakest over the epochs covering
        :data:`CHECKED_ROUNDS` rounds is stated.
    name:
        The inner algorithm's name, for the guarantee and messages (default: its class name).

    The wrapper offers the inner learner's ``feedback_kind`` (and ``unit``), ``act`` /
    ``observe`` (a contextual bandit's :class:`~dponline.protocol.ContextFeedback` goes to the
    epoch's learner before ``act``), :meth:`scale_noise` (before the first round, applied to
    every epoch's learner), ``state_dict`` / ``load_state_dict`` (a corrupt state is refused
    and changes nothing), and ``play_block`` when the inner learner has it (split at the epoch
    boundaries).
    """

    def __init__(
        self,
        make: Callable[[int, np.random.Generator], Learner],
        *,
        budget: PrivacyBudget | None,
        replicas: int = 1,
        rng: RngLike = None,
        ratio: float = 2.0,
        first: int = 1,
        epoch_guarantee: Callable[[int], PrivacyGuarantee | None] | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(make):
            raise TypeError(f"make must be callable as make(length, rng), got {make!r}")
        if budget is not None and not isinstance(budget, PrivacyBudget):
            raise TypeError(
                "budget must be a dponline.privacy.PrivacyBudget (or None for non-private "
                f"epochs), got {budget!r}"
            )
        if budget is not None and budget.is_user_level:
            raise PersonNotCovered(
                "DoublingLearner proves event-level privacy only (one round as the unit): a "
                "person's rounds may fall in several epochs, whose guarantees would then "
                "compose, so the weakest epoch's guarantee does not cover them. "
                + group_privacy_hint("the doubling trick", budget)
            )
        self._start_rounds(None, anytime=True)
        self.replicas = checked_count("replicas", replicas)
        self.budget = budget
        self._make = make
        self.ratio, self.first = float(ratio), int(first)
        self.epoch_length = epoch_lengths(ratio, first)
        self._starts = [0]  # the first round (0-indexed) of epochs 0, 1, ...
        self._rng = as_generator(rng)
        self._noise_factors: list[float] = []  # scale_noise's factors, replayed on each epoch
        self._calibrated: PrivacyGuarantee | None = None
        learner = self._built(0, epoch_generator(self._rng), check=False)
        self.name = name or type(learner).__name__
        self.feedback_kind = learner.feedback_kind
        self.unit = getattr(learner, "unit", "round")
        self.order = getattr(learner, "order", "")
        self.privacy: PrivacyGuarantee | None = None
        if budget is not None:
            self.privacy = self._calibrated = self._stated(learner, budget, epoch_guarantee)
        self._check_epoch(0, learner)
        self._learner = learner
        self._epoch = 0
        if callable(getattr(learner, "play_block", None)):
            self.play_block = self._play_block  # a BlockPlayer exactly when the inner one is

    # --- epochs ----------------------------------------------------------------------------

    def epoch_start(self, k: int) -> int:
        """The rounds before epoch k (epoch k plays rounds epoch_start(k) + 1 ..
        epoch_start(k) + epoch_length(k), 1-indexed)."""
        while len(self._starts) <= k:
            j = len(self._starts) - 1
            self._starts.append(self._starts[j] + self.epoch_length(j))
        return self._starts[k]

    def epoch_of(self, t: int) -> int:
        """The epoch that plays round t + 1 (after t rounds)."""
        k = 0
        while self.epoch_start(k + 1) <= t:
            k += 1
        return k

    @property
    def epoch(self) -> int:
        """The index of the epoch being played (0 for the first)."""
        return self._epoch

    @property
    def learner(self) -> Learner:
        """The current epoch's learner (read it; playing it directly would desynchronise the
        wrapper)."""
        return self._learner

    def _built(self, k: int, gen: np.random.Generator, *, check: bool = True) -> Any:
        """Epoch k's learner with generator ``gen``, checked (replicas, the stated guarantee)
        and with the audit's noise factors applied; nothing of ``self`` changes."""
        n = self.epoch_length(k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)  # the stated guarantee reports once
            learner = self._make(n, gen)
        for attr in ("act", "observe", "state_dict", "prepare_load"):
            if not callable(getattr(learner, attr, None)):
                raise TypeError(
                    f"make({n}, rng) must return a learner with {attr}(), got "
                    f"{type(learner).__name__}"
                )
        if getattr(learner, "horizon", None) != n:
            raise ValueError(
                f"make({n}, rng) must build a learner for {n} rounds, got horizon "
                f"{getattr(learner, 'horizon', None)!r}"
            )
        if getattr(learner, "t", None) != 0:
            raise ValueError(f"make({n}, rng) must build a fresh learner (at round 0)")
        if learner.replicas != self.replicas:
            raise ValueError(
                f"make({n}, rng) built {learner.replicas} replicas, the wrapper has {self.replicas}"
            )
        if check:
            if learner.feedback_kind is not self.feedback_kind:
                raise ValueError(
                    f"epoch {k}'s learner observes {learner.feedback_kind!r}, the first "
                    f"epoch's {self.feedback_kind!r}"
                )
            self._check_epoch(k, learner)
        for f in self._noise_factors:
            learner.scale_noise(f)
        return learner

    def _stated(
        self,
        learner: Any,
        budget: PrivacyBudget,
        epoch_guarantee: Callable[[int], PrivacyGuarantee | None] | None,
    ) -> PrivacyGuarantee:
        """The run's guarantee: the weakest of the checked epochs' (module docstring), proven
        against ``budget`` once."""
        if budget.calibration == "paper":
            if epoch_guarantee is None:
                raise ValueError(
                    "a paper calibration proves a different epsilon for each length: give "
                    "epoch_guarantee(length) so that the weakest epoch's guarantee is stated"
                )
            found = []
            k = 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                while self.epoch_start(k) < CHECKED_ROUNDS:
                    found.append(epoch_guarantee(self.epoch_length(k)))
                    k += 1
        else:
            found = [getattr(learner, "privacy", None)]
        # a person by group privacy: the epochs' one-round guarantees are combined (every round
        # in one epoch), and the whole's lifted once (budget.prove)
        found = [budget.per_input(g) for g in found]
        if any(g is None for g in found):
            raise ValueError(
                f"the epochs' learners must be private under a budget; {type(learner).__name__} "
                "states no guarantee"
            )
        notions = {g.notion for g in found} - {PrivacyNotion.EVENT_LEVEL_DP}
        if notions:  # the proof reads later epochs as post-processing of an epoch's actions
            raise ValueError(
                f"the doubling trick keeps event-level DP only; the epochs' learners state "
                f"{sorted(str(n) for n in notions)} (under joint DP a user's own action is not "
                "protected, and later epochs may adapt to it)"
            )
        relations = {g.neighbouring for g in found}
        if len(relations) != 1:
            raise ValueError(f"the epochs' guarantees are over different relations: {relations}")
        worst = max(found, key=lambda g: (g.epsilon, g.delta))
        delta = max(g.delta for g in found)
        rhos = [g.rho for g in found]
        rho = None if any(r is None for r in rhos) else max(rhos)
        a, b = self.epoch_length(0), self.epoch_length(1)
        derivation = (
            f"anytime (no horizon): epochs of lengths {a}, {b}, {self.epoch_length(2)}, ... "
            f"(the doubling trick), each a fresh {self.name} "
            "built for its epoch's length at the full budget and fed only its epoch's rounds; "
            "every round lies in exactly one epoch, so for every t the actions up to t have "
            "the weakest epoch's guarantee (parallel composition over disjoint rounds; each "
            "epoch's guarantee holds for adaptively chosen inputs; dponline/doubling.py). "
            + (
                "Each epoch's tight calibration meets the request; the first epoch's: "
                if budget.calibration != "paper"
                else f"Weakest of the epochs covering 2^{CHECKED_ROUNDS.bit_length() - 1} rounds: "
            )
            + worst.derivation
        )
        return budget.prove(
            worst.epsilon, delta, derivation, rho=rho, neighbouring=worst.neighbouring
        )

    def _check_epoch(self, k: int, learner: Any) -> None:
        """Epoch k's learner proves at least the stated guarantee (or is non-private when the
        wrapper is): checked before it plays."""
        g = getattr(learner, "privacy", None)
        stated = self._calibrated
        if stated is None:
            if g is not None:
                raise ValueError(
                    f"epoch {k}'s learner is private but the wrapper was built without a budget"
                )
            return
        one_round = g if self.budget is None else self.budget.per_input(g)
        if proves_less(g, stated, _SLACK) or (
            one_round is None or one_round.notion is not PrivacyNotion.EVENT_LEVEL_DP
        ):
            shown = "none" if g is None else f"epsilon={g.epsilon:.6g}, delta={g.delta:.3g}"
            raise ValueError(
                f"epoch {k}'s learner ({self.epoch_length(k)} rounds) proves {shown}, less than "
                f"the stated epsilon={stated.epsilon:.6g}, delta={stated.delta:.3g}: the "
                "calibration that epoch_guarantee mirrors disagrees with the learner's"
            )

    # --- the protocol ----------------------------------------------------------------------

    def _scale_noise(self, factor: float) -> None:
        self._learner.scale_noise(factor)
        self._noise_factors.append(factor)

    def scale_noise(self, factor: float) -> None:
        """Multiply the calibrated noise of every epoch's learner by ``factor`` (> 0) before
        the first round: the current one now, each later one when it is built (the audit's
        handle; a factor below 1 voids the stated guarantee)."""
        super().scale_noise(factor)

    def act(self) -> np.ndarray:
        """This round's decision: the current epoch's learner's, shape (replicas, ...)."""
        out = self._learner.act()
        self._acted = True
        return out

    def observe(self, feedback: Feedback) -> None:
        """The round's feedback to the current epoch's learner; after an epoch's last round the
        next epoch's learner takes over (built before the feedback is used, so that a refused
        feedback or a failed build leaves everything as it was)."""
        if isinstance(feedback, ContextFeedback):  # before act(): not the end of a round
            self._learner.observe(feedback)
            return
        self._check_round()
        inner = self._learner
        last = inner.t + 1 == inner.horizon
        rng_before = generator_state(self._rng) if last else None
        try:
            nxt = self._built(self._epoch + 1, epoch_generator(self._rng)) if last else None
            inner.observe(feedback)
        except BaseException:
            if rng_before is not None:
                self._rng.bit_generator.state = rng_before
            raise
        self._end_round()
        if nxt is not None:
            self._learner, self._epoch = nxt, self._epoch + 1

    def _play_block(self, losses: np.ndarray) -> np.ndarray:
        """``play_block`` of the inner learner (:class:`~dponline.protocol.BlockPlayer`), the
        block split at the epoch boundaries: the same decisions, shape (b, replicas, ...), and
        the same state as b rounds of act / observe. A block refused part-way (a bad input
        after a boundary) is undone: the learner is left as it was."""
        if self._acted:
            raise ValueError(
                f"play_block() starts at a round boundary: {type(self).__name__} has acted in "
                f"round {self.t + 1} without observing its loss"
            )
        arr = np.asarray(losses)
        if arr.ndim < 1:
            raise ValueError(f"losses must have a leading axis of rounds, got shape {arr.shape}")
        b = arr.shape[0]
        room = self._learner.horizon - self._learner.t
        if b <= room:  # within the epoch: the inner learner checks everything first
            last = b == room
            rng_before = generator_state(self._rng) if last else None
            try:
                nxt = self._built(self._epoch + 1, epoch_generator(self._rng)) if last else None
                out = self._learner.play_block(arr)
            except BaseException:
                if rng_before is not None:
                    self._rng.bit_generator.state = rng_before
                raise
            self._end_rounds(b)
            if nxt is not None:
                self._learner, self._epoch = nxt, self._epoch + 1
            return out
        saved = self.state_dict()
        parts = []
        try:
            i = 0
            while i < b:
                n = min(b - i, self._learner.horizon - self._learner.t)
                parts.append(self._play_block(arr[i : i + n]))
                i += n
        except BaseException:
            self.prepare_load(saved)()
            raise
        return np.concatenate(parts, axis=0)

    # --- state -----------------------------------------------------------------------------

    def _config(self) -> dict[str, Any]:
        return {
            "learner": self.name,
            "ratio": self.ratio,
            "first": self.first,
            "replicas": self.replicas,
            "privacy": None if self._calibrated is None else self._calibrated.to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "config": self._config(),
            "t": self.t,
            "acted": self._acted,
            "noise_multiplier": self.noise_multiplier,
            "epoch": self._epoch,
            "rng": generator_state(self._rng),
            "learner": self._learner.state_dict(),
        }

    def prepare_load(self, state: Any) -> Callable[[], None]:
        """Check the configuration (the inner algorithm, the epochs, the guarantee), the noise
        multiplier (a state saved at another one is refused: its noise was drawn at another
        scale), the round counter against the epoch, the parent generator and the epoch
        learner's whole state (a fresh learner for the saved epoch, scaled as this one, checks
        it), then return the function that installs them; a refused state changes nothing."""
        checked_config(
            saved_field(state, "config"),
            self._config(),
            type(self).__name__,
            "inner learner, epoch lengths or guarantee",
        )
        self._saved_multiplier(state)  # this learner's own, or refused
        t, acted = self._checked_rounds(state)
        k = checked_nonnegative_int("saved epoch", saved_field(state, "epoch"))
        holding = self.epoch_of(t)
        if k != holding:
            raise ArgumentError(
                f"saved epoch {k} does not hold the next round {t + 1} (epoch {holding} does)"
            )
        start = self.epoch_start(k)
        rng = checked_generator("saved rng", saved_field(state, "rng"))
        saved_inner = saved_field(state, "learner")
        inner_t = saved_field(saved_inner, "t")
        if inner_t != t - start:
            raise ArgumentError(
                f"saved learner is at round {inner_t!r} of epoch {k}, but the round counter "
                f"t={t} puts it at {t - start}: the two were saved from different runs"
            )
        if saved_inner.get("acted", acted) != acted:
            raise ArgumentError("saved acted flags of the wrapper and its epoch learner disagree")
        learner = self._built(k, np.random.default_rng(0))  # its state replaces the generator
        install_inner = learner.prepare_load(saved_inner)

        def install() -> None:
            install_inner()
            self._learner, self._epoch, self._rng = learner, k, rng
            self._set_rounds(t, acted)

        return install
