"""The conditional gradient (Frank-Wolfe) method over any decision set with a linear
minimisation oracle, vectorised over a leading replicas axis.

For a smooth convex f over a compact convex set D reached only through its oracle
``lmo(c) = argmin_{v in D} <c, v>``, one Frank-Wolfe step at the iterate x is

    g_x = grad f(x),   v = lmo(g_x),   gap(x) = <g_x, x - v>,   x+ = x + gamma (v - x),

with gamma in [0, 1] (so x+ stays in D when x does). Step rules (``step=``):

* ``"open_loop"``: gamma_k = 2 / (k + 2), k the number of steps since the last (re)start;
* ``"short"``: gamma = min(1, gap / (L ||v - x||^2)), L the (Euclidean) smoothness constant of
  f, which minimises the quadratic upper bound f(x) - gamma gap + gamma^2 L ||v - x||^2 / 2;
* ``"exact_quadratic"``: exact line search for a quadratic f(x) = 1/2 x'Qx + b'x given the
  Hessian-vector product d -> Qd: gamma = clip(gap / (d'Qd), 0, 1), d = v - x (gamma = 1
  when d'Qd <= 0, where f is linear along d).

**Duality gap.** By convexity, f(x*) >= f(x) + <g_x, x* - x> >= f(x) - gap(x), so the gap is a
certificate computed by the same oracle call: f(x) - f* <= gap(x) (Jaggi 2013, Section 2). For
a 1-strongly convex f (e.g. the quadratic below) also ||x - x*||^2 <= 2 (f(x) - f*) <= 2 gap(x).
The stopping rule is gap(x) <= tolerance, per replica: a replica whose gap at its current
iterate is at most the threshold does not move (its certificate stays valid), the others take
a step. Each :meth:`~FrankWolfe.step` makes exactly ONE (vectorised) oracle call for all
replicas, whether or not any of them still moves.

**Primal rate** (Jaggi 2013, Theorem 1). With C_f the curvature constant of f over D,
C_f <= L diam(D)^2 for an L-smooth f, from any start x_0 in D, for every k >= 1:

    f(x_k) - f* <= 2 C_f / (k + 2)          (open_loop and exact line search),
    f(x_k) - f* <= 2 L diam(D)^2 / (k + 2)  (short; the same bound since C_f <= L diam^2).

The short and exact line-search rules never increase f.

**Duality-gap rate and the LMO budget** (Jaggi 2013, Theorem 2). Run for K >= 2 steps, some
iterate x_k, 1 <= k <= K, has gap(x_k) <= 2 beta C / (K + 2), beta = 27/8 (C = C_f for
open_loop and exact line search, C = L diam^2 for short; the proof only uses
f(x_{k+1}) <= f(x_k) - gamma gap(x_k) + gamma^2 C / 2 for gamma = 2/(k+2), which the line-search
rules also satisfy). The gap of x_k is measured by the oracle call of step k + 1, so a replica
reaches gap <= tolerance = eps > 0 within

    N(C, eps) = max(3, ceil(27 C / (4 eps)) - 1)      LMO calls      (:func:`lmo_budget`),

and, since it then stops moving, stays there. This is the budget :func:`frank_wolfe` and the
stepwise objects respect (in exact arithmetic; a tolerance near the rounding level of the gap
may not be reached). For the projection quadratic q(x) = 1/2 ||x||^2 - <v, x>, C_q = diam(D)^2
exactly, whatever v.

**Stepwise use in an online learner.** Ene, Nguyen & Vladu (2021), Algorithm 1 line 14, solve
argmin_{x in D} 1/2 ||x||^2 - <v, x> (the Euclidean projection of v onto D) by the conditional
gradient method "in parallel" with the rounds of a batch: one oracle call per round, one v per
replica, warm-started from the previous batch's answer. :class:`QuadraticFrankWolfe` is that
solver (exact line search); :meth:`QuadraticFrankWolfe.reset` installs a new v and keeps the
iterate. The general :class:`FrankWolfe` takes a gradient callable and a step rule;
:func:`frank_wolfe` and :func:`frank_wolfe_projection` are one-shot solves built on them.

References: M. Frank & P. Wolfe (1956); M. Jaggi, "Revisiting Frank-Wolfe: projection-free
sparse convex optimization", ICML 2013; A. Ene, H. Nguyen & A. Vladu, "Projection-free bandit
optimization with privacy guarantees", AAAI 2021.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_count,
    checked_nonnegative_int,
    checked_positive,
    checked_real_array,
    saved_field,
)

if TYPE_CHECKING:
    from dponline.domains.base import ConvexDomain

__all__ = [
    "STEP_RULES",
    "FrankWolfe",
    "FrankWolfeResult",
    "QuadraticFrankWolfe",
    "frank_wolfe",
    "frank_wolfe_projection",
    "lmo_budget",
]

#: the step rules of :class:`FrankWolfe` (module docstring)
STEP_RULES = ("open_loop", "short", "exact_quadratic")

#: Jaggi (2013), Theorem 2: beta = 27/8
_BETA = 27.0 / 8.0

ArrayFn = Callable[[np.ndarray], np.ndarray]


# --- argument checks ---------------------------------------------------------------------------


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _tolerance(name: str, value: Any, *, positive: bool = False) -> float:
    t = _real(name, value)
    if not math.isfinite(t) or t < 0 or (positive and t == 0):
        need = "finite and > 0" if positive else "finite and >= 0"
        raise ValueError(f"{name} must be {need}, got {value!r}")
    return t


def _checked_output(what: str, out: Any, shape: tuple[int, int]) -> np.ndarray:
    """The answer of a user callable (gradient, Hessian-vector product, oracle) as a float array
    of ``shape`` with finite entries."""
    a = np.asarray(out, dtype=float)
    if a.shape != shape:
        raise ValueError(f"{what} must return an array of shape {shape}, got shape {a.shape}")
    if not np.isfinite(a).all():
        bad = int(np.flatnonzero(~np.isfinite(a).all(axis=1))[0])
        raise ValueError(f"{what} returned non-finite values (NaN or infinity), row {bad}")
    return a


def _broadcast_finite(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` broadcast to ``shape`` as a new float array, finite, else a ValueError."""
    try:
        a = np.array(np.broadcast_to(np.asarray(value, dtype=float), shape))
    except ValueError as err:
        raise ValueError(
            f"{name} must have shape {shape} (or broadcast to it), got shape {np.shape(value)}"
        ) from err
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return a


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise inner products (a plain row reduction, so that a row gives the same bits alone
    or among other replicas)."""
    return (a * b).sum(axis=-1)


def lmo_budget(curvature: float, tolerance: float) -> int:
    """N(C, eps) = max(3, ceil(27 C / (4 eps)) - 1): the number of LMO calls within which the
    Frank-Wolfe method (any of the three step rules) reaches duality gap <= eps from any start
    in D (Jaggi 2013, Theorem 2, with beta = 27/8; module docstring).

    ``curvature`` is C: the curvature constant C_f (open_loop, exact line search) or
    L diam(D)^2 (short step, and an upper bound on C_f for an L-smooth f); for the projection
    quadratic 1/2 ||x||^2 - <v, x> it is diam(D)^2.
    """
    c = _tolerance("curvature", curvature)
    eps = checked_positive("tolerance", tolerance)
    return max(3, math.ceil(2.0 * _BETA * c / eps) - 1)


# --- the stepwise solver ---------------------------------------------------------------------


class _ConditionalGradient(ABC):
    """The machinery shared by :class:`FrankWolfe` and :class:`QuadraticFrankWolfe`: the
    iterate of every replica, the gaps of the last oracle call, the counters and the state."""

    step_rule: str
    smoothness: float | None

    def __init__(self, domain: ConvexDomain, start: Any) -> None:
        if not callable(getattr(domain, "lmo", None)):
            raise TypeError(f"domain must have a linear minimisation oracle lmo(), got {domain!r}")
        self.dim = checked_count("domain.dim", getattr(domain, "dim", None))
        self.domain = domain
        x = np.array(start, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.dim or x.shape[0] < 1:
            raise ValueError(
                f"start must have shape (replicas, {self.dim}) with replicas >= 1, "
                f"got shape {x.shape}"
            )
        if not np.isfinite(x).all():
            raise ValueError("start must be finite (no NaN or infinity)")
        self.replicas = int(x.shape[0])
        #: calls to the domain's oracle over the object's lifetime (resets do not clear it)
        self.lmo_calls = 0
        self._x = x
        self._restart()

    # --- iterate and certificates ----------------------------------------------------------

    def _restart(self) -> None:
        shape = (self.replicas,)
        self.steps = 0  # steps since the last (re)start: k of the open-loop rule
        self._gaps = np.full(shape, np.inf)
        self._bounds = np.full(shape, np.inf)
        self._moved = np.zeros(shape, dtype=bool)

    def _new_start(self, start: Any) -> None:
        self._x = _broadcast_finite("start", start, self._x.shape)

    @property
    def x(self) -> np.ndarray:
        """The current iterate of every replica, shape (replicas, dim) (a copy)."""
        return self._x.copy()

    @property
    def gaps(self) -> np.ndarray:
        """Duality gaps <grad f(x), x - lmo(grad f(x))> measured by the last oracle call, at the
        iterate that call saw, shape (replicas,); +inf before the first step after a
        (re)start. For a replica that did not move in that step (see :attr:`moved`) this is the
        gap of its current iterate. Always an upper bound on f - f* at the iterate measured."""
        return self._gaps.copy()

    @property
    def moved(self) -> np.ndarray:
        """Whether each replica moved in the last step (False: its gap was <= the threshold)."""
        return self._moved.copy()

    @property
    def bounds(self) -> np.ndarray:
        """A certified upper bound on f(x) - f* at the *current* iterate, shape (replicas,):
        the gap for replicas that did not move and for the monotone rules (short, exact line
        search: f(x+) <= f(x) <= f* + gap); for open_loop, (1 - gamma) gap + gamma^2 L ||d||^2 / 2
        when ``smoothness`` L is known (descent lemma), else +inf for the replicas that
        moved."""
        return self._bounds.copy()

    def converged(self, tolerance: float) -> np.ndarray:
        """Per replica: the duality gap of the *current* iterate is known and <= tolerance
        (the replica did not move in the last step and its gap was <= tolerance)."""
        tol = _tolerance("tolerance", tolerance)
        return (self._gaps <= tol) & ~self._moved

    # --- the objective (supplied by subclasses) --------------------------------------------

    @abstractmethod
    def _grad(self, x: np.ndarray) -> np.ndarray:
        """grad f(x) row by row."""

    @abstractmethod
    def _curvature_along(self, d: np.ndarray) -> np.ndarray:
        """d'Qd row by row (exact line search only)."""

    # --- one step ------------------------------------------------------------------------------

    def step(self, threshold: float = 0.0) -> np.ndarray:
        """One Frank-Wolfe step for every replica with exactly ONE call to ``domain.lmo``.

        The oracle is called on the gradients at the current iterates; a replica whose duality
        gap is <= ``threshold`` keeps its iterate (bit for bit), the others move by the step
        rule. Returns the gaps measured (:attr:`gaps`). On an error (a non-finite gradient,
        a malformed oracle answer) the solver is left unchanged.
        """
        thr = _tolerance("threshold", threshold)
        shape = self._x.shape
        x = self._x
        g = _checked_output("grad", self._grad(x.copy()), shape)
        v = _checked_output("domain.lmo", self.domain.lmo(g), shape)
        d = v - x
        gap = -_dot(g, d)  # <g, x - v> >= 0 up to rounding
        active = gap > thr
        rule = self.step_rule
        need_dd = rule == "short" or (rule == "open_loop" and self.smoothness is not None)
        dd = _dot(d, d) if need_dd else None
        if rule == "open_loop":
            gamma = np.full(self.replicas, 2.0 / (self.steps + 2.0))
        else:
            if rule == "short":
                assert self.smoothness is not None and dd is not None
                denom = self.smoothness * dd
            else:  # exact_quadratic: d'Qd; f is linear along d where it is <= 0
                denom = self._curvature_along(d)
            # gap / denom where denom > 0, else 1 (then d = 0 and gap = 0 for the short step)
            gamma = np.divide(gap, denom, out=np.ones_like(gap), where=denom > 0)
            np.minimum(gamma, 1.0, out=gamma)
        gamma = np.where(active, np.maximum(gamma, 0.0), 0.0)
        new_x = np.where(active[:, None], x + gamma[:, None] * d, x)
        if rule == "open_loop":
            if self.smoothness is None or dd is None:
                moved_bound = np.full(self.replicas, np.inf)
            else:
                moved_bound = (1.0 - gamma) * gap + 0.5 * gamma**2 * self.smoothness * dd
            bounds = np.where(active, moved_bound, gap)
        else:
            bounds = gap
        # commit (nothing above mutated the solver)
        self.lmo_calls += 1
        self.steps += 1
        self._x = new_x
        self._gaps = gap
        self._moved = active
        self._bounds = np.maximum(bounds, 0.0)  # f - f* >= 0; the gap may round below 0
        return gap.copy()

    def run(self, tolerance: float, max_lmo_calls: int) -> int:
        """Step with threshold ``tolerance`` until every replica has converged (gap of its
        current iterate <= tolerance) or ``max_lmo_calls`` oracle calls have been made in this
        call. Returns the number of calls made."""
        tol = _tolerance("tolerance", tolerance)
        budget = checked_count("max_lmo_calls", max_lmo_calls)
        made = 0
        while made < budget:
            self.step(tol)
            made += 1
            if self.converged(tol).all():
                break
        return made

    # --- state ---------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume bit-exactly: numpy arrays and ints only. The objective
        callables and the step rule are configuration: load into an identically built solver."""
        return {
            "x": self._x.copy(),
            "gaps": self._gaps.copy(),
            "bounds": self._bounds.copy(),
            "moved": self._moved.copy(),
            "steps": int(self.steps),
            "lmo_calls": int(self.lmo_calls),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` of an identically built solver; a
        corrupt state raises and leaves the solver as it was (:meth:`prepare_load`)."""
        self.prepare_load(state)()

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole of ``state`` (the iterates, finite, of this solver's shape; the
        gaps and bounds, real or +inf (before the first step after a restart), never NaN; the
        moved flags; the counters, non-negative integers) and return the function that
        installs it, which cannot fail."""
        shape = (self.replicas,)
        x = np.array(checked_real_array("saved x", saved_field(state, "x"), self._x.shape))
        arrays = {}
        for key in ("gaps", "bounds"):
            a = np.array(
                checked_real_array(f"saved {key}", saved_field(state, key), shape, finite=False)
            )
            if np.isnan(a).any():
                raise ArgumentError(f"saved {key} must not be NaN, got {a.tolist()!r}")
            arrays[key] = a
        moved = np.asarray(saved_field(state, "moved"))
        if moved.dtype != bool or moved.shape != shape:
            raise ArgumentError(
                f"saved moved must be booleans of shape {shape}, got {moved.dtype} values of "
                f"shape {moved.shape}"
            )
        moved = moved.copy()
        steps = checked_nonnegative_int("saved steps", saved_field(state, "steps"))
        calls = checked_nonnegative_int("saved lmo_calls", saved_field(state, "lmo_calls"))

        def install() -> None:
            self._x = x
            self._gaps, self._bounds, self._moved = arrays["gaps"], arrays["bounds"], moved
            self.steps, self.lmo_calls = steps, calls

        return install


class FrankWolfe(_ConditionalGradient):
    """The stepwise Frank-Wolfe method for a smooth convex f over ``domain``, one iterate per
    replica (module docstring for the rules and guarantees).

    Args:
        domain: anything with ``lmo(direction)`` (vectorised over a leading axis) and ``dim``;
            a :class:`~dponline.domains.base.ConvexDomain`.
        grad: ``grad(x)``, x of shape (replicas, dim), returns the gradients, same shape. May
            differ per replica (the replicas are independent problems).
        start: the starting iterates, shape (replicas, dim); each must lie in D (not checked:
            membership can cost more than the solve). Copied.
        step: ``"open_loop"``, ``"short"`` (needs ``smoothness``) or ``"exact_quadratic"``
            (needs ``hessian_vector``).
        smoothness: L, a Lipschitz constant of grad f in the Euclidean norm (for every
            replica). Required by the short step; with open_loop it makes :attr:`bounds`
            finite.
        hessian_vector: ``hessian_vector(d)`` = Q d row by row for f = 1/2 x'Qx + b'x.
        value: optional ``value(x)`` = f(x) row by row, shape (replicas,) (for reporting).

    :meth:`step` makes exactly one oracle call; :attr:`lmo_calls` counts them over the
    object's lifetime; :meth:`reset` installs a new objective and (optionally) a new start.
    Each replica reaches duality gap <= eps within :func:`lmo_budget` (C, eps) calls of
    ``step(eps)`` after a (re)start (C = C_f, or L diam^2 for the short step).
    """

    def __init__(
        self,
        domain: ConvexDomain,
        grad: ArrayFn,
        start: Any,
        *,
        step: str = "open_loop",
        smoothness: float | None = None,
        hessian_vector: ArrayFn | None = None,
        value: ArrayFn | None = None,
    ) -> None:
        if step not in STEP_RULES:
            raise ValueError(f"step must be one of {STEP_RULES}, got {step!r}")
        self.step_rule = step
        self.smoothness = None if smoothness is None else checked_positive("smoothness", smoothness)
        if step == "short" and self.smoothness is None:
            raise ValueError(
                "the short step gamma = min(1, gap / (L ||v - x||^2)) needs the smoothness "
                "constant L: pass smoothness="
            )
        super().__init__(domain, start)
        self._set_objective(grad, hessian_vector, value)

    def _set_objective(
        self, grad: ArrayFn, hessian_vector: ArrayFn | None, value: ArrayFn | None
    ) -> None:
        if not callable(grad):
            raise TypeError(f"grad must be callable, got {grad!r}")
        if hessian_vector is not None and not callable(hessian_vector):
            raise TypeError(f"hessian_vector must be callable, got {hessian_vector!r}")
        if value is not None and not callable(value):
            raise TypeError(f"value must be callable, got {value!r}")
        if self.step_rule == "exact_quadratic" and hessian_vector is None:
            raise ValueError(
                "the exact_quadratic step needs the Hessian-vector product d -> Qd: pass "
                "hessian_vector="
            )
        self.grad, self.hessian_vector, self.value = grad, hessian_vector, value

    def reset(
        self,
        grad: ArrayFn,
        *,
        hessian_vector: ArrayFn | None = None,
        value: ArrayFn | None = None,
        start: Any = None,
    ) -> None:
        """A new objective (same step rule and smoothness); the iterate is kept (warm start)
        unless ``start`` is given (shape (replicas, dim), or broadcast to it). The step count
        of the open-loop rule and the gaps restart; :attr:`lmo_calls` does not. (The open-loop
        rule restarts at gamma_0 = 1, which jumps to a vertex: warm starts pay off with the
        line-search rules.)"""
        self._set_objective(grad, hessian_vector, value)
        if start is not None:
            self._new_start(start)
        self._restart()

    def _grad(self, x: np.ndarray) -> np.ndarray:
        return self.grad(x)

    def _curvature_along(self, d: np.ndarray) -> np.ndarray:
        assert self.hessian_vector is not None
        qd = _checked_output("hessian_vector", self.hessian_vector(d.copy()), d.shape)
        return _dot(d, qd)

    def values(self) -> np.ndarray:
        """f at the current iterates, shape (replicas,) (needs ``value``)."""
        if self.value is None:
            raise ValueError("no value callable was given")
        return np.asarray(self.value(self._x.copy()), dtype=float)


class QuadraticFrankWolfe(_ConditionalGradient):
    """Stepwise Frank-Wolfe for q_i(x) = 1/2 ||x||^2 - <v_i, x>, one v_i per replica, with exact
    line search: the Euclidean projection of v_i onto D, as in Ene, Nguyen & Vladu (2021),
    Algorithm 1 line 14 (module docstring).

    grad q(x) = x - v, the Hessian is the identity, so the step is
    gamma = clip(gap / ||lmo(x - v) - x||^2, 0, 1). q is 1-smooth and 1-strongly convex with
    curvature constant diam(D)^2, hence:

    * q(x_k) - q* <= 2 diam(D)^2 / (k + 2) for k >= 1 after any (re)start, and q never
      increases;
    * gap <= eps within :meth:`budget` (eps) = :func:`lmo_budget` (diam(D)^2, eps) calls of
      ``step(eps)``;
    * ||x - Pi_D(v)|| <= sqrt(2 gap) for a replica with gap measured at its current iterate
      (:meth:`converged`), and <= sqrt(2 bound) in general (:attr:`bounds`).

    Args:
        domain: anything with ``lmo`` and ``dim`` (``diameter`` is needed only by
            :meth:`budget`).
        start: the starting iterates, shape (replicas, dim), in D.
        linear: the v of every replica, shape (replicas, dim) (or broadcast to it); zeros by
            default. Install a new one with :meth:`reset`, which keeps the iterate.
    """

    step_rule = "exact_quadratic"
    smoothness = 1.0

    def __init__(self, domain: ConvexDomain, start: Any, linear: Any = None) -> None:
        super().__init__(domain, start)
        self._v = self._checked_linear(0.0 if linear is None else linear)

    def _checked_linear(self, linear: Any) -> np.ndarray:
        return _broadcast_finite("linear", linear, self._x.shape)

    @property
    def linear(self) -> np.ndarray:
        """The v of every replica, shape (replicas, dim) (a copy)."""
        return self._v.copy()

    def reset(self, linear: Any, *, start: Any = None) -> None:
        """Solve for a new v (shape (replicas, dim), or broadcast to it), warm-started from the
        current iterate unless ``start`` is given. The gaps restart; :attr:`lmo_calls` does
        not."""
        v = self._checked_linear(linear)
        if start is not None:
            self._new_start(start)
        self._v = v
        self._restart()

    def _grad(self, x: np.ndarray) -> np.ndarray:
        return x - self._v

    def _curvature_along(self, d: np.ndarray) -> np.ndarray:
        return _dot(d, d)

    def values(self, x: Any = None) -> np.ndarray:
        """q(x) = 1/2 ||x||^2 - <v, x> row by row, at the current iterates by default."""
        y = self._x if x is None else np.asarray(x, dtype=float)
        return 0.5 * _dot(y, y) - _dot(self._v, y)

    def budget(self, tolerance: float) -> int:
        """:func:`lmo_budget` (diam(D)^2, tolerance): the oracle calls within which every
        replica reaches gap <= tolerance after a (re)start."""
        return lmo_budget(float(self.domain.diameter) ** 2, tolerance)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["linear"] = self._v.copy()
        return state

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """The base solver's checks (:meth:`_ConditionalGradient.prepare_load`) and the saved
        v, finite, of this solver's shape; returns the function that installs both."""
        v = np.array(
            checked_real_array("saved linear", saved_field(state, "linear"), self._x.shape)
        )
        install_base = super().prepare_load(state)

        def install() -> None:
            install_base()
            self._v = v

        return install


# --- one-shot solves ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FrankWolfeResult:
    """The answer of :func:`frank_wolfe` / :func:`frank_wolfe_projection`.

    * ``x``: final iterates, (replicas, dim);
    * ``gap``: the last duality gaps measured, (replicas,) -- at ``x`` itself where
      ``converged``;
    * ``bound``: certified upper bound on f(x) - f* at ``x``, (replicas,) (``gap`` where
      converged; see :attr:`FrankWolfe.bounds`);
    * ``converged``: gap of ``x`` known and <= tolerance, (replicas,);
    * ``lmo_calls``: oracle calls made (one per step, shared by all replicas);
    * ``value``: f(x) when the objective's value is known, else None.
    """

    x: np.ndarray
    gap: np.ndarray
    bound: np.ndarray
    converged: np.ndarray
    lmo_calls: int
    value: np.ndarray | None = None

    @property
    def all_converged(self) -> bool:
        return bool(self.converged.all())


def _freeze(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


def _solved(
    solver: FrankWolfe | QuadraticFrankWolfe, tol: float, budget: int, *, values: bool
) -> FrankWolfeResult:
    """Run ``solver`` to gap ``tol`` within ``budget`` oracle calls; its frozen result."""
    solver.run(tol, budget)
    return FrankWolfeResult(
        x=_freeze(solver.x),
        gap=_freeze(solver.gaps),
        bound=_freeze(solver.bounds),
        converged=_freeze(solver.converged(tol)),
        lmo_calls=solver.lmo_calls,
        value=_freeze(solver.values()) if values else None,
    )


def frank_wolfe(
    domain: ConvexDomain,
    grad: ArrayFn,
    start: Any,
    *,
    tolerance: float,
    max_lmo_calls: int | None = None,
    step: str = "open_loop",
    smoothness: float | None = None,
    hessian_vector: ArrayFn | None = None,
    value: ArrayFn | None = None,
) -> FrankWolfeResult:
    """Minimise a smooth convex f over ``domain`` to duality gap <= ``tolerance`` per replica.

    Runs :class:`FrankWolfe` (same arguments) with ``step(tolerance)`` until every replica's
    current iterate has gap <= tolerance, or ``max_lmo_calls`` oracle calls. With
    ``max_lmo_calls=None`` the budget is :func:`lmo_budget` (smoothness * diam(D)^2,
    tolerance), within which every replica converges (Jaggi 2013, Theorem 2; module docstring)
    -- that needs ``smoothness`` and ``domain.diameter``.

    Raises ValueError for a tolerance that is negative or not finite (or 0 without an explicit
    budget), a start not of shape (replicas, dim), an unknown step rule, the short step without
    ``smoothness``, exact_quadratic without ``hessian_vector``, and non-finite gradients.
    """
    tol = _tolerance("tolerance", tolerance)
    solver = FrankWolfe(
        domain,
        grad,
        start,
        step=step,
        smoothness=smoothness,
        hessian_vector=hessian_vector,
        value=value,
    )
    if max_lmo_calls is None:
        if solver.smoothness is None:
            raise ValueError(
                "max_lmo_calls=None takes the budget lmo_budget(smoothness * diameter^2, "
                "tolerance): pass smoothness= or an explicit max_lmo_calls"
            )
        if tol == 0:
            raise ValueError("tolerance must be > 0 when max_lmo_calls is derived from it")
        budget = lmo_budget(solver.smoothness * float(domain.diameter) ** 2, tol)
    else:
        budget = checked_count("max_lmo_calls", max_lmo_calls)
    return _solved(solver, tol, budget, values=value is not None)


def frank_wolfe_projection(
    domain: ConvexDomain,
    points: Any,
    *,
    tolerance: float,
    max_lmo_calls: int | None = None,
    start: Any = None,
) -> FrankWolfeResult:
    """The Euclidean projections of the rows of ``points`` (shape (replicas, dim)) onto
    ``domain`` by :class:`QuadraticFrankWolfe` (q = 1/2 ||x||^2 - <point, x>, exact line
    search), to duality gap <= ``tolerance``: where converged, ||x - Pi_D(point)|| <=
    sqrt(2 tolerance). ``start`` defaults to ``domain.interior_point()`` for every row;
    ``max_lmo_calls`` to :func:`lmo_budget` (diam(D)^2, tolerance)."""
    tol = _tolerance("tolerance", tolerance)
    p = np.asarray(points, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"points must have shape (replicas, dim), got shape {p.shape}")
    if start is None:
        start = np.broadcast_to(np.asarray(domain.interior_point(), dtype=float), p.shape)
    solver = QuadraticFrankWolfe(domain, start, p)
    if max_lmo_calls is None:
        if tol == 0:
            raise ValueError("tolerance must be > 0 when max_lmo_calls is derived from it")
        budget = solver.budget(tol)
    else:
        budget = checked_count("max_lmo_calls", max_lmo_calls)
    return _solved(solver, tol, budget, values=True)
