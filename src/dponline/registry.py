"""The learner catalogue: every learner dponline offers, with its paper, setting, guarantee and
calibrations (``dponline list``), what it observes and what it plays (how specs pair it with
environments), and the small test cases the learner battery and ``dponline audit`` run.

Each learner module declares its own entries, at its bottom::

    register_learner(LearnerEntry("dp-ftrl", _dp_ftrl, paper=..., feedback_kind=..., ...))

The catalogue is complete whenever it is read: :func:`learners` (and ``LEARNERS``, a live
read-only view of it) first imports every module of the learner packages
(:data:`LEARNER_PACKAGES`), so a new module there that registers an entry is picked up by
``dponline list``, experiment specs, the learner battery (``tests/test_learner_battery.py``,
:mod:`dponline.checks`) and ``dponline audit``, with no code anywhere else. This module imports
no learner at module level, so learner modules import it without a cycle.

Every factory has one keyword contract::

    factory(env, *, budget, replicas, rng, **options) -> Learner

reading the learner's dimensions, horizon and geometry from the environment ``env``. ``budget``
is the :class:`~dponline.privacy.budget.PrivacyBudget` the learner is calibrated to, or ``None``
for the non-private counterpart (always ``None`` for a non-private entry); the factory passes it
on as it is and never builds one. The budget is built once, by :func:`build_learner` (which the
runner, the battery and the audit call) through :func:`learner_budget`: the run's epsilon,
calibration and ``allow_weaker`` with the learner's ``delta`` option, or where the options give
none the entry's :attr:`LearnerEntry.default_delta` (a number, or a function of the environment
and the options such as 1/T). ``options`` are the entry's documented ones only
(:func:`check_options`: :meth:`LearnerEntry.documented_options` lists them), whatever else the
factory's constructor takes. :func:`non_private` makes a non-private entry's factory from a
private one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import numbers
import pkgutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from dponline.privacy.budget import CALIBRATIONS, PersonNotCovered, PrivacyBudget
from dponline.protocol import FeedbackKind, Learner, checked_count
from dponline.spelling import did_you_mean
from dponline.warn import warn_caller

__all__ = [
    "DEFAULT_EPSILON",
    "DESIGN_HORIZON_OPTION",
    "LEARNERS",
    "LEARNER_PACKAGES",
    "NON_PRIVATE",
    "PLUGIN_GROUP",
    "AuditCase",
    "LearnerEntry",
    "LearnerTestCase",
    "build_learner",
    "check_options",
    "learner_budget",
    "learners",
    "load_modules",
    "non_private",
    "non_private_entry",
    "one_over_horizon",
    "option_names",
    "register_learner",
    "resolved_epsilon",
    "unregister_learner",
]

#: The packages whose modules declare learner entries; every module in them is imported before
#: the catalogue is read.
LEARNER_PACKAGES = ("dponline.online", "dponline.bandits", "dponline.stochastic")
#: The entry point group through which an installed package registers its own learners: each
#: entry point names a module that calls :func:`register_learner` when imported.
PLUGIN_GROUP = "dponline.learners"

#: Read-only view of the complete catalogue, name -> entry (module attribute, see
#: :func:`__getattr__`).
LEARNERS: Mapping[str, LearnerEntry]

#: A learner's default delta (:attr:`LearnerEntry.default_delta`): a number, or a function
#: ``delta(env, options)`` of the environment and the learner's options.
DefaultDelta = float | Callable[[Any, Mapping[str, Any]], float]


#: the keys of :attr:`AuditCase.one_run_plan`
ONE_RUN_PLAN_KEYS = (
    "gap",
    "window",
    "first",
    "canaries",
    "filler",
    "arms",
    "rest",
    "coordinates",
    "horizon",
)


@dataclass(frozen=True)
class AuditCase:
    """How to audit a private learner empirically (:mod:`dponline.experiments.learner_audit`).

    The audit runs the learner, built for ``environment`` (default: its test case's, with these
    options merged over the case's; only its dimensions and geometry matter) with
    ``learner_options`` merged over the case's, on two neighbouring input streams of
    ``horizon`` rounds that differ in round ``changed_round`` only (0-indexed). Per feedback
    kind, every other round's input is ``rest`` and the changed round's is ``values[0]`` in
    stream A and ``values[1]`` in B:

    * full-information and bandit losses: the loss vector ``value * e_1``
      (``coordinates="first"``: a point moves across the loss set along e_1), ``value`` for
      every arm (``"all"``), or, with ``"opposite"``, the changed round's vector
      ``values[0] e_1 + values[1] e_2`` in A and ``values[1] e_1 + values[0] e_2`` in B (two
      coordinates moving in opposite directions, every other round ``rest * e_1``): what an
      l_inf bound on a change allows, which a noisy argmin over the coordinates feels in
      full, and one coordinate's move only half;
    * samples: x = e_1 in every round and the label y = ``value``;
    * contextual bandits: context e_1 in every round and reward ``value`` for every arm;
    * full-information loss functions: the environment's ``loss_of(e_1, value)``: the GLM loss
      f(<e_1, x>, y) of its link with the label y = ``value`` (a label flip for the logistic
      link), or the distance to the box's corner ``value`` of the way from lo to hi.

    These generalise the pairs of the per-learner audit tests: one round moved across the loss
    set, a label flip (Han et al. Appendix A.6's worst case), a user whose reward flips sign.
    ``statistic`` maps the outputs (n, T, ...) to scores; Fisher's discriminant fitted on the
    pilot runs when ``None``. ``trials`` and ``pilot_trials`` per input are the fast audit's.
    ``refute_fraction``: the fraction of the calibrated noise at which the audit must refute the
    claim (a tenth unless the learner's proof is known to be looser; the entry says why).
    ``one_run_options``: learner options merged over ``learner_options`` when the one-run audit
    (:mod:`dponline.experiments.one_run_audit`) runs the learner over thousands of rounds, where
    a parameter chosen to sharpen a short audit (a huge step) would lock the run.
    ``one_run_plan``: that audit's plan for this case, over its defaults (keys of
    :data:`ONE_RUN_PLAN_KEYS`: ``gap``, ``window``, ``first``, ``canaries``, ``filler``, and
    over the case's environment ``arms``, ``rest``, ``coordinates`` and ``horizon``; the
    library's learners' plans are in ``one_run_audit._PLANS``). ``one_run_white_box``: a
    function ``(learner, make_loss) -> WhiteBox | None`` giving the guesser that scores the
    canaries from the actions (a K-armed learner's
    :class:`~dponline.experiments.one_run_audit.ArmOrderModel` with its release schedule, say);
    ``None``: the fitted discriminant, which sees little of a learner whose decisions change
    only at its releases.
    """

    horizon: int
    values: tuple[float, float] = (0.0, 1.0)
    rest: float = 0.0
    changed_round: int = 0
    coordinates: str = "first"
    learner_options: Mapping[str, Any] = field(default_factory=dict)
    environment: str | None = None
    environment_options: Mapping[str, Any] = field(default_factory=dict)
    statistic: Callable[[np.ndarray], np.ndarray] | None = None
    trials: int = 20_000
    pilot_trials: int = 5_000
    seed: int = 0
    refute_fraction: float = 0.1
    one_run_options: Mapping[str, Any] = field(default_factory=dict)
    one_run_plan: Mapping[str, Any] = field(default_factory=dict)
    one_run_white_box: Callable[[Any, Any], Any] | None = None

    def __post_init__(self) -> None:
        checked_count("horizon", self.horizon)
        unknown = sorted(set(self.one_run_plan) - set(ONE_RUN_PLAN_KEYS))
        if unknown:
            raise ValueError(
                f"one_run_plan takes the keys {list(ONE_RUN_PLAN_KEYS)}, got {unknown}"
            )
        if self.one_run_white_box is not None and not callable(self.one_run_white_box):
            raise ValueError(
                "one_run_white_box is a function (learner, make_loss) -> a guesser, got "
                f"{self.one_run_white_box!r}"
            )
        if not 0 <= self.changed_round < self.horizon:
            raise ValueError(
                f"changed_round must lie in [0, {self.horizon}), got {self.changed_round!r}"
            )
        if self.coordinates not in ("first", "all", "opposite"):
            raise ValueError(
                f"coordinates must be 'first', 'all' or 'opposite', got {self.coordinates!r}"
            )
        if len(self.values) != 2 or self.values[0] == self.values[1]:
            raise ValueError(f"values must be two different numbers, got {self.values!r}")
        if not 0 < self.refute_fraction < 1:
            raise ValueError(f"refute_fraction must lie in (0, 1), got {self.refute_fraction!r}")
        if self.trials < 1 or self.pilot_trials < 10:
            raise ValueError(
                f"need trials >= 1 and pilot_trials >= 10, got {self.trials}, {self.pilot_trials}"
            )


@dataclass(frozen=True)
class LearnerTestCase:
    """A small, fast configuration of a learner for the battery (:mod:`dponline.checks`).

    ``environment`` (a name of :data:`~dponline.environments.catalogue.ENVIRONMENTS`) built
    with ``environment_options`` for ``horizon`` rounds, the learner built by its factory with
    ``learner_options`` at ``epsilon`` (private learners). ``randomised``: whether the learner's
    replicas draw randomness (``None``: exactly when it is private); a randomised learner's
    replicas must differ, a deterministic one's must agree. ``release(learner)``: what the
    learner releases after each round, shape (replicas, ...), when that is not the action it
    played (for example the estimators a joint-DP proof releases). ``audit``: required for a
    private learner. ``label`` tells cases of one learner apart.
    """

    environment: str
    horizon: int = 24
    environment_options: Mapping[str, Any] = field(default_factory=dict)
    learner_options: Mapping[str, Any] = field(default_factory=dict)
    epsilon: float = 1.0
    randomised: bool | None = None
    release: Callable[[Any], np.ndarray] | None = None
    audit: AuditCase | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if checked_count("horizon", self.horizon) < 4:
            raise ValueError(f"a test case's horizon must be at least 4, got {self.horizon!r}")
        if self.audit is not None and not isinstance(self.audit, AuditCase):
            raise TypeError(f"audit must be an AuditCase, got {type(self.audit).__name__}")


#: what each action space's name means, for ``dponline list`` (a learner plays in a space, an
#: environment accepts one; the names are how specs pair them)
ACTION_SPACE_WORDS: dict[str, str] = {
    "arms": "an arm, an index among K",
    "contextual arms": "an arm, given the round's context",
    "simplex": "a distribution over the experts, a point of the simplex",
    "ball": "a point of the unit Euclidean ball",
    "cube": "a point of the cube [-1, 1]^d",
    "l_p ball": "a point of an l_p ball",
    "box (1-2D)": "a point of a box in one or two dimensions",
    "oracle set": "a point of a polytope given by a linear optimisation oracle",
    "barrier set": "a point of the environment's convex set, a ball, box or polytope with a "
    "self-concordant barrier",
}


@dataclass(frozen=True)
class LearnerEntry:
    """A learner the runner can build from a name, an environment and options.

    ``feedback_kind`` and ``action_space`` (what the learner plays, or a tuple of every space
    it can play, for example ``("simplex", "ball", "cube")``) pair it with environments: an
    environment fits when both agree (:meth:`runs_in`). ``test_cases``: at least one
    :class:`LearnerTestCase`; the battery runs every one. ``options``: option -> what it means
    (a key may name several, ``"x_bound, y_bound"``); with the common ones
    :meth:`documented_options` adds, the only options :func:`build_learner` passes on.
    """

    name: str
    factory: Callable[..., Learner]
    paper: str
    setting: str
    guarantee: str
    calibrations: tuple[str, ...]
    private: bool
    feedback_kind: FeedbackKind
    action_space: str | tuple[str, ...]
    test_cases: tuple[LearnerTestCase, ...]
    options: Mapping[str, str] = field(default_factory=dict)
    #: Options the learner takes as a list of candidate values at once (a spec's ``tune``): it
    #: then plays len(values) x replicas replicas, candidate-major, and the block of candidate
    #: j equals a learner built with values[j] and the same seed (the same draws; equal numbers
    #: up to the rounding of arithmetic vectorised over the candidates). The runner tunes such an
    #: option in one pass instead of one pass per candidate.
    joint_options: tuple[str, ...] = ()
    #: The private learners whose non-private counterpart this is (reports draw them
    #: together); set by :func:`non_private_entry`.
    counterpart_of: tuple[str, ...] = ()
    #: The delta of the budget :func:`learner_budget` builds when the options give none: a
    #: number in [0, 1) (0 asks for pure DP), or ``delta(env, options)`` of the environment and
    #: the learner's options (``1 / env.horizon``; 0 for Laplace noise and 1e-6 for Gaussian).
    #: Read for private learners only.
    default_delta: DefaultDelta = 0.0
    #: Whether the learner runs without a horizon: its class takes ``horizon=None`` (and its
    #: factory the option ``anytime=True``, which ignores the environment's horizon), uses
    #: step sizes that need no horizon, and states a guarantee that holds for every t.
    anytime: bool = False
    #: Whether the learner takes a budget over a person (``participations`` k > 1 rounds at
    #: least ``min_separation`` apart: :class:`~dponline.privacy.budget.PrivacyBudget`), its
    #: calibration proving the guarantee for the person's rounds (with a horizon, or without
    #: one on ``tight`` Gaussian noise: the tapered factorisation or the BLT without a
    #: horizon). The
    #: others protect a person by group privacy (:func:`learner_budget`: one round at about
    #: epsilon / k, the guarantee stated for any k rounds).
    person_level: bool = False
    #: Whether the factory takes ``clip=True``: an input outside the declared bounds clipped to
    #: them instead of refused (the guarantee holds either way). ``dponline list`` documents
    #: the option for every learner that takes it.
    clips: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a learner's name must be a non-empty string, got {self.name!r}")
        if not callable(self.factory):
            raise TypeError(f"{self.name}: factory must be callable, got {self.factory!r}")
        if not isinstance(self.feedback_kind, FeedbackKind):
            raise TypeError(
                f"{self.name}: feedback_kind must be a FeedbackKind, got {self.feedback_kind!r}"
            )
        spaces = self.action_spaces
        if not spaces or not all(isinstance(s, str) and s for s in spaces):
            raise ValueError(
                f"{self.name}: action_space must be a non-empty string or tuple of them, got "
                f"{self.action_space!r}"
            )
        unknown = set(self.calibrations) - set(CALIBRATIONS)
        if unknown:
            raise ValueError(
                f"{self.name}: calibrations must be drawn from {CALIBRATIONS}, got "
                f"{self.calibrations!r}"
            )
        if self.private != bool(self.calibrations):
            raise ValueError(
                f"{self.name}: a private learner has calibrations and a non-private one has "
                f"none; got private={self.private!r}, calibrations={self.calibrations!r}"
            )
        if not isinstance(self.anytime, bool):
            raise TypeError(f"{self.name}: anytime must be a bool, got {self.anytime!r}")
        if not isinstance(self.person_level, bool):
            raise TypeError(f"{self.name}: person_level must be a bool, got {self.person_level!r}")
        if self.person_level and not self.private:
            raise ValueError(f"{self.name}: a non-private learner has no unit of privacy")
        d = self.default_delta
        if not callable(d) and (
            isinstance(d, bool) or not isinstance(d, numbers.Real) or not 0 <= d < 1
        ):
            raise ValueError(
                f"{self.name}: default_delta must be a number in [0, 1) or a function of "
                f"(env, options), got {d!r}"
            )
        if not self.test_cases or not all(isinstance(c, LearnerTestCase) for c in self.test_cases):
            raise TypeError(
                f"{self.name}: test_cases must be a non-empty tuple of LearnerTestCase, got "
                f"{self.test_cases!r}"
            )
        for case in self.test_cases:
            if self.private and case.audit is None:
                raise ValueError(
                    f"{self.name}: a private learner's test case needs an AuditCase "
                    f"(case {case.label!r} has none)"
                )
            if not self.private and case.audit is not None:
                raise ValueError(f"{self.name}: a non-private learner has nothing to audit")

    @property
    def action_spaces(self) -> tuple[str, ...]:
        """Every action space the learner can play."""
        a = self.action_space
        return (a,) if isinstance(a, str) else tuple(a)

    @property
    def test_case(self) -> LearnerTestCase:
        """The first (main) test case."""
        return self.test_cases[0]

    def runs_in(self, feedback_kind: FeedbackKind, action_space: str) -> bool:
        """True when an environment with this feedback and action space fits the learner."""
        return feedback_kind is self.feedback_kind and action_space in self.action_spaces

    def documented_options(self) -> dict[str, str]:
        """The factory's options with their meaning: ``options``, ``anytime`` for a learner
        that runs without a horizon, and the run's ``participations`` and ``min_separation``
        for one that takes a budget over a person."""
        out = dict(self.options)
        if self.anytime and "anytime" not in out:
            guarantee = ", with a guarantee for every t" if self.private else ""
            out["anytime"] = ANYTIME_OPTION + guarantee
        if self.person_level:
            out.setdefault("participations", PARTICIPATIONS_OPTION)
            out.setdefault("min_separation", MIN_SEPARATION_OPTION)
        elif self.private:
            out.setdefault("participations", GROUP_PARTICIPATIONS_OPTION)
            out.setdefault("min_separation", GROUP_SEPARATION_OPTION)
        if self.private:
            out.setdefault("delta", DELTA_OPTION)
        if self.clips:
            out.setdefault("clip", CLIP_OPTION)
        return out

    def describe(self, environments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What ``dponline list`` prints, with the environments of ``environments`` (the
        environment catalogue, passed in: this module must not import it, the environments
        import learner packages) that fit."""
        fitting = [
            name
            for name, env in (environments or {}).items()
            if any(self.runs_in(env.feedback_kind, s) for s in env.action_spaces)
        ]
        return {
            "name": self.name,
            "paper": self.paper,
            "setting": self.setting,
            "guarantee": self.guarantee,
            "calibrations": list(self.calibrations),
            "private": self.private,
            "feedback_kind": self.feedback_kind.value,
            "action_space": list(self.action_spaces),
            "options": self.documented_options(),
            "counterpart_of": list(self.counterpart_of),
            "anytime": self.anytime,
            "person_level": self.person_level,
            "environments": fitting,
        }


#: what the option ``anytime`` of an anytime learner's factory means (``dponline list``)
ANYTIME_OPTION = "True: run without a horizon (the environment's is ignored)"
#: the ``design_horizon`` option of a learner that can run the BLT without a horizon
DESIGN_HORIZON_OPTION = (
    "with anytime and mechanism anytime_blt: the rounds the BLT's buffers are optimised for "
    "(default 2^20; the guarantee holds at every round, the variance past it grows about "
    "linearly)"
)
#: what the run's ``participations`` and ``min_separation`` mean for a learner that takes a
#: budget over a person (``dponline list``)
PARTICIPATIONS_OPTION = (
    "k > 1: the unit of privacy is one person's at most k rounds, calibrated for that pattern "
    "(by group privacy, any k rounds, where the configuration proves one round only: a paper "
    "formula, doubling blocks without a horizon); capping each person's rounds is the "
    "caller's job; default 1"
)
MIN_SEPARATION_OPTION = "b: a person's rounds lie at least b apart (default 1)"
#: the ``delta`` option of a private learner that does not describe its own
DELTA_OPTION = (
    "the budget's delta: 0 asks for pure DP (refused where the learner's noise is Gaussian "
    "only), > 0 for (epsilon, delta)-DP (met by pure DP where its noise is Laplace only)"
)
#: the ``clip`` option of every learner that takes it (:attr:`LearnerEntry.clips`)
CLIP_OPTION = (
    "True: an input outside the declared bounds is clipped to them instead of refused (the "
    "guarantee holds either way; default False)"
)
#: the same for a private learner that proves one round's privacy only (group privacy)
GROUP_PARTICIPATIONS_OPTION = (
    "k > 1: the unit of privacy is one person's at most k rounds, by group privacy (the learner "
    "runs at about epsilon / k for one round; capping each person's rounds is the caller's "
    "job; default 1)"
)
GROUP_SEPARATION_OPTION = (
    "b: a person's rounds lie at least b apart (default 1; group privacy covers any k rounds)"
)

_CATALOGUE: dict[str, LearnerEntry] = {}
_loaded = False


def register_learner(entry: LearnerEntry) -> LearnerEntry:
    """Add ``entry`` to the catalogue (a second entry of the same name is refused)."""
    if not isinstance(entry, LearnerEntry):
        raise TypeError(f"register a LearnerEntry, got {type(entry).__name__}")
    if entry.name in _CATALOGUE:
        raise ValueError(
            f"a learner named {entry.name!r} is already registered "
            f"(factory {_CATALOGUE[entry.name].factory.__module__}); names must be unique"
        )
    _CATALOGUE[entry.name] = entry
    ordered = sorted(_CATALOGUE.values(), key=_display_order)
    _CATALOGUE.clear()  # in place: views of the catalogue stay live
    _CATALOGUE.update((e.name, e) for e in ordered)
    return entry


def _display_order(entry: LearnerEntry) -> tuple[int, str, bool]:
    """Learner packages in :data:`LEARNER_PACKAGES` order (others last), then each private
    learner just before its non-private counterpart (``dp-x``, ``x``), whatever the order in
    which modules were imported."""
    module = getattr(entry.factory, "__module__", "") or ""
    rank = next(
        (i for i, p in enumerate(LEARNER_PACKAGES) if module.startswith(f"{p}.")),
        len(LEARNER_PACKAGES),
    )
    return rank, entry.name.removeprefix("dp-"), not entry.private


def unregister_learner(name: str) -> LearnerEntry:
    """Remove the entry ``name`` from the catalogue and return it (for throwaway learners)."""
    if name not in _CATALOGUE:
        raise ValueError(f"no learner named {name!r} is registered")
    return _CATALOGUE.pop(name)


def _import_learner_modules() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True  # a learner module that reads the catalogue while loading sees it partial
    try:
        for package_name in LEARNER_PACKAGES:
            package = importlib.import_module(package_name)
            # every module of the package, subpackages too
            for info in pkgutil.walk_packages(package.__path__, f"{package_name}."):
                _registering(functools.partial(importlib.import_module, info.name))
        for plugin in importlib.metadata.entry_points(group=PLUGIN_GROUP):
            try:
                _registering(plugin.load)
            except (Exception, SystemExit) as exc:  # a plugin that exits must not stop dponline
                raise ImportError(
                    f"the learner plugin {plugin.name!r} ({plugin.value}, entry point group "
                    f"{PLUGIN_GROUP!r}) failed to import: {type(exc).__name__}: {exc}"
                ) from exc
    except BaseException:
        _loaded = False
        raise


def _registering(load: Callable[[], Any]) -> Any:
    """``load()`` (an import); if it fails, the entries it registered are forgotten: Python
    forgets a module that failed to import, so a retry runs it again, and would clash."""
    before = set(_CATALOGUE)
    try:
        return load()
    except BaseException:
        for name in set(_CATALOGUE) - before:
            del _CATALOGUE[name]
        raise


def _importing(module: str, load: Callable[[], Any]) -> None:
    """``load()``, the import of the user's ``module``: an error its code raises (a missing
    dependency, a learner registered twice) becomes an ImportError naming the module, the
    error chained."""
    try:
        _registering(load)
    except (Exception, SystemExit) as exc:  # a module that exits must not stop dponline
        raise ImportError(f"importing {module!r} raised {type(exc).__name__}: {exc}") from exc


def _imported_from(path: Path) -> bool:
    """Whether a module imported under its own name (an installed plugin's, say) is the file
    ``path``: importing it again by its path would register its learners twice."""
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.endswith(path.name):
            try:
                if Path(file).resolve() == path:
                    return True
            except OSError:
                continue
    return False


def _top_level_imports(path: Path) -> set[str]:
    """The top-level names of the modules a file imports (``import a.b`` and ``from a import
    c`` give ``a``; relative imports none), read from its source."""
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _beside(module: Any, folder: Path) -> bool:
    """Whether ``module`` is a file of ``folder`` (``x.py``, or a package's ``x/__init__.py``)."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return False
    at = Path(file).resolve()
    return at.parent == folder or (at.name == "__init__.py" and at.parent.parent == folder)


def _sibling_clash(path: Path) -> str | None:
    """A module the file imports by a name that a file beside it bears while that name is
    already bound to another file (a sibling of another module file given earlier: the import
    would silently get that one), described; ``None`` if there is none."""
    for name in sorted(_top_level_imports(path)):
        bound = sys.modules.get(name)
        sibling = [p for p in (path.parent / f"{name}.py", path.parent / name) if p.exists()]
        file = getattr(bound, "__file__", None)
        if bound is None or not sibling or not isinstance(file, str):
            continue
        here = Path(file).resolve()
        if here.parent != path.parent and here.parent.parent != path.parent:
            return (
                f"{str(path)!r} imports {name!r}, and {str(sibling[0])!r} lies beside it, but "
                f"{name!r} is already the module {file!r} (imported from another folder): "
                "rename one of them"
            )
    return None


def _own_name(path: Path) -> list[str]:
    """``[stem]`` when importing the module ``stem`` would load the file ``path`` (nothing of
    that name imported yet, and the import path finds this file first): the file is then
    registered under that name too, so a module beside it that imports it by name
    (``from my_learner import MyLearner``) gets this module instead of running the file a
    second time, which would register its learners twice."""
    stem = path.stem
    if not stem.isidentifier() or stem in sys.modules:
        return []
    try:
        found = importlib.util.find_spec(stem)
    except (ImportError, ValueError):
        return []
    if found is None or not found.origin:
        return []
    try:
        return [stem] if Path(found.origin).resolve() == path else []
    except OSError:
        return []


def load_modules(modules: Sequence[str], base: str | Path | None = None) -> list[str]:
    """Import each of ``modules`` once per process, so that the learners it registers are in
    the catalogue: the path of a ``.py`` file (relative to ``base``, default the working
    directory), or the name of an importable module (an installed package's, or one on
    ``PYTHONPATH``: the ``dponline`` command does not look in the working directory). While a
    file runs its folder leads the import path, so it imports the files beside it by name (at
    its top: not later, from a function), and it is registered under its own name too where
    that name finds it (a file beside it importing it gets it, not a second run); a name it
    imports that a file beside it bears but that is already another folder's module is
    refused; a file that fails leaves none of its folder's modules imported, so a retry runs
    them again. A file already imported under another name (an installed plugin's, or a file
    beside one listed earlier that imported it) is not imported again, which would register
    its learners twice. Returns what a worker process imports again: the
    names, and the files' absolute paths. A spec's ``modules`` field and the runner's workers
    call it; an installed package registers its learners for every command through the entry
    point group ``dponline.learners`` instead (docs/extending.md)."""
    learners()  # the built-in learners first: a module's entry may name one as counterpart
    resolved = []
    for module in modules:
        if not isinstance(module, str) or not module:
            raise ValueError(f"a module is a module name or a .py file's path, got {module!r}")
        if module.endswith(".py") or "/" in module or "\\" in module:
            path = (Path(base or ".") / module).resolve()
            if not path.is_file():
                what = "is a folder, not a .py file" if path.is_dir() else "does not exist"
                raise ValueError(f"module file {str(path)!r} {what}")
            digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
            name = f"_dponline_module_{path.stem}_{digest}"
            if name not in sys.modules and not _imported_from(path):
                clash = _sibling_clash(path)
                if clash is not None:
                    raise ImportError(clash)
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    raise ValueError(f"module file {str(path)!r} cannot be imported")
                loaded = importlib.util.module_from_spec(spec)
                # the file's folder first on the import path while it runs, as a script's:
                # it imports the files beside it (``import helpers``), not another folder's
                folder = str(path.parent)
                sys.path.insert(0, folder)
                before = set(sys.modules)
                names = [name]
                try:
                    names += _own_name(path)
                    for key in names:
                        sys.modules[key] = loaded
                    _importing(module, functools.partial(spec.loader.exec_module, loaded))
                except BaseException:
                    # forget what the failed run imported from its folder (its siblings'
                    # learners were forgotten by the catalogue: a retry must run them again)
                    for key in (set(sys.modules) - before) | set(names):
                        if key in names or _beside(sys.modules.get(key), path.parent):
                            sys.modules.pop(key, None)
                    raise
                finally:
                    sys.path.remove(folder)
            resolved.append(str(path))
        else:
            if module not in sys.modules:
                try:
                    found = importlib.util.find_spec(module)
                except (ImportError, ValueError):
                    found = None
                if found is None:
                    file = f"{module.replace('.', '/')}.py"  # the file the name may mean
                    hint = (
                        f"; the file {file!r} is there: write {file!r}"
                        if (Path(base or ".") / file).is_file()
                        else ""
                    )
                    raise ModuleNotFoundError(
                        f"no module named {module!r} (a module name must be importable: an "
                        "installed package, or on PYTHONPATH; a file of your own is given by "
                        f"its path, 'learners.py'){hint}"
                    )
                if not (found.origin and _imported_from(Path(found.origin).resolve())):
                    _importing(module, functools.partial(importlib.import_module, module))
            resolved.append(module)
    return resolved


def learners() -> Mapping[str, LearnerEntry]:
    """The complete catalogue, name -> entry (a live read-only view)."""
    _import_learner_modules()
    return MappingProxyType(_CATALOGUE)


def __getattr__(name: str) -> Any:
    if name == "LEARNERS":
        return learners()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _DefaultEpsilon:
    """The type of :data:`DEFAULT_EPSILON`."""

    def __repr__(self) -> str:
        return "1.0 for a private learner"


#: ``epsilon`` not given to :func:`build_learner`: 1.0 for a private learner (as the command
#: line's default), nothing for a non-private one. A private learner is never built without
#: noise by default, nor from ``epsilon=None`` (a setting read from a file that was not there):
#: its non-private counterpart is asked by name, :data:`NON_PRIVATE`.
DEFAULT_EPSILON = _DefaultEpsilon()


class _NonPrivate:
    """The type of :data:`NON_PRIVATE`: one object, which copies and pickles keep."""

    def __repr__(self) -> str:
        return "NON_PRIVATE"

    def __reduce__(self) -> str:
        return "NON_PRIVATE"  # pickle and copy give back the module's object


#: ``epsilon=NON_PRIVATE``: a private learner's non-private counterpart (the same algorithm
#: without noise: nothing it does is private), as a baseline
NON_PRIVATE = _NonPrivate()


def resolved_epsilon(entry: LearnerEntry, epsilon: Any) -> float | None:
    """The epsilon a learner of ``entry`` is built at, ``None`` for no noise:
    :data:`DEFAULT_EPSILON` gives 1.0 for a private learner; :data:`NON_PRIVATE` its
    non-private counterpart; ``None`` is refused for a private learner (it would run without
    noise). A non-private learner takes ``None``, :data:`NON_PRIVATE` or nothing, and refuses
    an epsilon, which it would ignore (a caller would believe it private)."""
    if isinstance(epsilon, _DefaultEpsilon):
        return 1.0 if entry.private else None
    if isinstance(epsilon, _NonPrivate):
        return None
    if epsilon is None and entry.private:
        raise ValueError(
            f"epsilon=None for the private learner {entry.name!r}: give its epsilon (1.0 when "
            "left out), or epsilon=NON_PRIVATE (dponline.registry) for its non-private "
            "counterpart, which adds no noise and protects nothing"
        )
    if epsilon is not None and not entry.private:
        private = f" (its private version: {', '.join(entry.counterpart_of)})" * bool(
            entry.counterpart_of
        )
        raise ValueError(
            f"{entry.name!r} is not private and takes no epsilon (got {epsilon!r}): leave it "
            f"out, or build a private learner{private}"
        )
    return epsilon


#: keywords every factory takes beside its options (suggested for a misspelt option)
COMMON_KEYWORDS = ("epsilon", "calibration", "allow_weaker", "replicas", "rng")


def option_names(entry: LearnerEntry) -> list[str]:
    """The options ``entry``'s learner takes, sorted: the keys of
    :meth:`LearnerEntry.documented_options` (a key may name several, ``"a, b"``)."""
    return sorted(o for key in entry.documented_options() for o in key.split(", "))


def check_options(entry: LearnerEntry, options: Mapping[str, Any], env: Any = None) -> None:
    """Refuse an option ``entry``'s learner does not document (ValueError naming it, the
    closest name and the learner's options), before anything is built. The documented options
    are the only ones :func:`build_learner` passes on: a factory hands its constructor more
    (the noise scale it calibrated, the guarantee it proved, what ``env`` declares) that a run
    must not override. ``replicas`` and ``rng`` are every learner's."""
    documented = option_names(entry)
    for bad in options:
        if bad in documented or bad in ("replicas", "rng"):
            continue
        if bad in COMMON_KEYWORDS:
            raise ValueError(
                f"{bad} is the run's, not an option of learner {entry.name!r}: give it to "
                f"build_learner as {bad}= (in a spec: its 'epsilons', 'calibrations' and "
                "'allow_weaker_paper' fields)"
            )
        if env is not None and bad in ("horizon", "dim", "n_arms", "domain", "arms"):
            raise ValueError(
                f"learner {entry.name!r} reads {bad} from the environment "
                f"({bad} = {getattr(env, bad, '?')!r} there), not from an option: build the "
                f"environment with the {bad} you want"
            )
        known = documented + [k for k in COMMON_KEYWORDS if k not in documented]
        hint = " (the seed is the run's: rng= in Python, a spec's 'seed')" if bad == "seed" else ""
        raise ValueError(
            f"learner {entry.name!r} has no option {bad!r}{hint}{did_you_mean(bad, known)}; its "
            f"options: {', '.join(documented) or 'none'}"
        )


def build_learner(
    learner: str | LearnerEntry,
    env: Any,
    *,
    epsilon: float | _DefaultEpsilon | _NonPrivate | None = DEFAULT_EPSILON,
    calibration: str = "tight",
    allow_weaker: bool = False,
    participations: int = 1,
    min_separation: int = 1,
    **options: Any,
) -> Learner:
    """Build ``learner`` (a name in the catalogue, or an entry) for ``env``: the budget built
    once from the run's privacy keywords and the learner's ``delta`` option
    (:func:`learner_budget`; ``epsilon`` 1.0 for a private learner unless given,
    ``epsilon=NON_PRIVATE`` for its non-private counterpart, ``None`` refused,
    :func:`resolved_epsilon`), then
    ``factory(env, budget=budget, **options)`` (``replicas`` and ``rng`` among the options; see
    the module docstring). The horizon and dimensions come from ``env``. An option the entry
    does not document is a ValueError naming it (:func:`check_options`). ``participations``
    k > 1 protects one person's rounds: proved for the pattern by a ``person_level`` learner
    that can, by group privacy otherwise (:func:`learner_budget`; the guarantee says which).

    >>> from dponline.environments import KArmedBandit
    >>> env = KArmedBandit([0.2, 0.5, 0.9], horizon=1000, rng=0)
    >>> build_learner("dp-imed", env, rng=0).privacy.epsilon  # private learners: epsilon 1
    1.0
    >>> build_learner("dp-imed", env, epsilon=NON_PRIVATE, rng=0).privacy is None  # no noise
    True
    """
    if isinstance(learner, LearnerEntry):
        entry = learner
    else:
        catalogue = learners()
        if learner not in catalogue:
            raise ValueError(
                f"unknown learner {learner!r}{did_you_mean(learner, catalogue)}; expected one of "
                f"{sorted(catalogue)}"
            )
        entry = catalogue[learner]
    if "budget" in options:
        raise ValueError(
            "build_learner builds the budget itself: give epsilon, calibration, allow_weaker and "
            f"the delta option, not budget={options['budget']!r}"
        )
    check_options(entry, options, env)
    epsilon = resolved_epsilon(entry, epsilon)
    if participations == 1 and min_separation != 1:
        raise ValueError(
            f"min_separation={min_separation!r} says how far apart a person's rounds lie; it "
            "needs participations > 1 (the number of rounds a person may contribute; with one "
            "round per person there is no separation)"
        )
    if (epsilon is None or not entry.private) and (participations, min_separation) != (1, 1):
        what = "is not private" if not entry.private else "is built without noise (NON_PRIVATE)"
        raise ValueError(
            f"participations and min_separation set the unit of a privacy budget, and "
            f"{entry.name!r} {what}: give an epsilon for a private learner, or drop them"
        )
    budget = learner_budget(
        entry,
        env,
        epsilon=epsilon,
        calibration=calibration,
        allow_weaker=allow_weaker,
        options=options,
        participations=participations,
        min_separation=min_separation,
    )
    if entry.private:
        options.pop("delta", None)  # it is the budget's
    try:
        return entry.factory(env, budget=budget, **options)
    except PersonNotCovered as refusal:
        # a person_level learner whose configuration proves one round only (a paper
        # formula, doubling blocks): the person by group privacy, as for the other learners,
        # said aloud (the pattern's own proof needs less noise where it applies)
        if budget is None or not budget.is_user_level:
            raise
        warn_caller(
            f"{entry.name!r} proves a person's pattern only in some configurations, and "
            f"this one proves one round ({refusal}). It runs by group privacy instead: one "
            f"round at epsilon / {budget.participations}, the guarantee stated for any "
            f"{budget.participations} rounds, with more noise than the pattern's proof",
            UserWarning,
        )
        return entry.factory(env, budget=budget.by_group_privacy(), **options)


def learner_budget(
    entry: LearnerEntry,
    env: Any,
    *,
    epsilon: float | None,
    calibration: str = "tight",
    allow_weaker: bool = False,
    options: Mapping[str, Any] | None = None,
    participations: int = 1,
    min_separation: int = 1,
) -> PrivacyBudget | None:
    """The budget ``entry``'s factory takes for ``env``: ``None`` for a non-private learner, and
    for a private one's non-private counterpart (``epsilon=None``, what :func:`build_learner`
    passes for :data:`NON_PRIVATE`); else
    ``PrivacyBudget(epsilon, delta, calibration, allow_weaker=allow_weaker, participations=k,
    min_separation=b)`` (the unit of privacy: one round, or one person's k rounds b apart) with
    delta the learner's ``delta`` option when ``options`` give one, else the entry's
    :attr:`~LearnerEntry.default_delta` (evaluated on ``env`` and ``options``). A person's budget
    for a learner that is not :attr:`~LearnerEntry.person_level` is answered by group privacy
    (:meth:`~dponline.privacy.budget.PrivacyBudget.by_group_privacy`: one round at about
    epsilon / k, the guarantee stated for the person); :func:`build_learner` does so for a
    person_level one too when its configuration covers one round only (it refuses with
    :class:`~dponline.privacy.budget.PersonNotCovered`)."""
    if not entry.private or epsilon is None:
        return None
    opts = dict(options or {})
    if "delta" in opts:
        delta = opts["delta"]
    else:
        default = entry.default_delta
        delta = default(env, opts) if callable(default) else default
    budget = PrivacyBudget(
        epsilon,
        delta,
        calibration,
        allow_weaker=bool(allow_weaker),
        participations=participations,
        min_separation=min_separation,
    )
    # a learner that proves one round's privacy only protects the person by group privacy
    return budget if entry.person_level else budget.by_group_privacy()


def one_over_horizon(env: Any, options: Mapping[str, Any]) -> float:
    """A :attr:`~LearnerEntry.default_delta`: 1/T, T the environment's horizon (Han et al.'s
    delta for streaming optimisation and contextual bandits)."""
    return 1.0 / env.horizon


def non_private_entry(
    private: LearnerEntry,
    name: str,
    *,
    paper: str,
    test_cases: tuple[LearnerTestCase, ...],
    options: Mapping[str, str] | None = None,
    extra_counterpart_of: tuple[str, ...] = (),
) -> LearnerEntry:
    """The entry of ``private``'s non-private counterpart: its factory with ``budget=None``
    (:func:`non_private`), the same setting, feedback kind and action space, no guarantee and
    no calibrations; ``paper`` says what algorithm that is."""
    return LearnerEntry(
        name,
        non_private(private.factory),
        paper=paper,
        setting=private.setting,
        guarantee="none (non-private reference)",
        calibrations=(),
        private=False,
        feedback_kind=private.feedback_kind,
        action_space=private.action_space,
        test_cases=test_cases,
        options=dict(options or {}),
        counterpart_of=(private.name, *extra_counterpart_of),
        anytime=private.anytime,
        clips=private.clips,
    )


def non_private(factory: Callable[..., Learner]) -> Callable[..., Learner]:
    """The non-private counterpart of a private learner's factory (``budget=None``)."""

    def build(env: Any, **kw: Any) -> Learner:
        return factory(env, **{**kw, "budget": None})

    build.__name__ = f"non_private_{getattr(factory, '__name__', 'factory')}"
    build.__module__ = getattr(factory, "__module__", __name__)
    return build
