"""DP-FTRL for online convex optimisation through linearised losses.

Agarwal & Singh's DP-FTRL (:class:`~dponline.online.ftrl.DPFTRL`) learns from linear losses.
The classical reduction (Zinkevich 2003; Hazan 2016, Section 3.1) turns it into a learner for
any convex losses: play the linear learner's x_t, then feed it g_t = grad l_t(x_t). By convexity
l_t(x_t) - l_t(x) <= <g_t, x_t - x> for every x, so the regret on the losses is at most the
linear learner's regret on the gradients, and Theorem 3.1 / A.1 of Agarwal & Singh (2017)
bounds it with the gradients' norms.

Privacy. Two loss sequences that differ in round t give, for the same decisions x_1..x_t, inputs
g that differ in round t only, by at most 2G in l2 norm for losses that are G-Lipschitz over the
decision set. Later inputs g_s = grad l_s(x_s), s > t, depend on the changed round only through
the released decisions, so the counter runs on adaptively chosen inputs. Each of its noisy
releases is a Gaussian (or Laplace) mechanism on sums of the inputs, and adaptive composition
gives them the same guarantee as for inputs fixed in advance (Smith & Thakurta 2013 for the
tree; Denisov et al. 2022, Theorem 2.1, for Gaussian matrix mechanisms such as Honaker's
estimator and the square-root factorisation). So the learner has the counter's guarantee, with
the counter's input bound the l2 ball of radius G, checked every round. This is the DP-FTRL
that 003 (Agarwal, Kale, Singh & Thakurta) compares CTRL with, at the (epsilon, delta) of its
Theorem 8.

Anytime (``horizon=None``): the inner DP-FTRL is the anytime one (:mod:`dponline.online.ftrl`:
the anytime counter, whose guarantee holds for the releases up to every t, under adaptively
chosen inputs as above, and the rate eta_t = sqrt(D_R / t) / G); its regret bound on the
gradients bounds the regret on the losses at every T, by the same convexity step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dponline.continual.base import ContinualCounter
from dponline.domains.base import ConvexDomain, HasBarrier
from dponline.losses import SmoothLoss
from dponline.online.ftrl import (
    ANYTIME_OPTION,
    DPFTRL,
    horizon_of,
    make_regulariser,
    noise_default_delta,
)
from dponline.privacy.arguments import (
    checked_positive,
    checked_real_array,
    saved_field,
)
from dponline.privacy.bounds import NormBall
from dponline.privacy.budget import PrivacyBudget
from dponline.protocol import (
    Feedback,
    FeedbackKind,
    LossFunctionFeedback,
    LossVectorFeedback,
    NoiseHandle,
    RoundDiscipline,
    checked_count,
)
from dponline.registry import (
    AuditCase,
    LearnerEntry,
    LearnerTestCase,
    non_private_entry,
    register_learner,
)
from dponline.rng import RngLike

__all__ = ["LinearisedFTRL"]


class LinearisedFTRL(NoiseHandle, RoundDiscipline):
    """DP-FTRL (Agarwal & Singh 2017, Algorithm 1, Euclidean regulariser) on the gradients
    g_t = grad l_t(x_t) of convex losses (see the module docstring).

    Parameters
    ----------
    domain:
        The decision set, a domain with a Euclidean projection (ball, box, polytope).
    horizon:
        T, the number of rounds; ``None`` for the anytime learner (module docstring).
    lipschitz:
        G: every loss's gradient over the decision set has l2 norm at most G; a larger gradient
        raises (or is clipped onto the ball with ``clip=True``) before it reaches the counter.
    budget:
        The (epsilon, delta) budget (``None``: the non-private FTRL on linearised losses).
    noise, mechanism:
        As for :class:`~dponline.online.ftrl.DPFTRL` (by default the budget's noise:
        Laplace for delta = 0, Gaussian for delta > 0).
    eta:
        The learning rate of R(x) = ||x||^2; default sqrt(D_R / T) / G, the minimiser of
        Theorem 3.1's explicit bound D_R / eta + 2 eta sum_t ||g_t||^2_* with the local dual
        norm ||g||^2_* = ||g||^2 / 2 of R (the noise term does not depend on eta). Without a
        horizon, eta is a rate fixed for every round; by default the anytime rate
        eta_t = c / sqrt(t).
    eta_constant:
        c of the anytime rate c / sqrt(t) (``horizon=None`` and no ``eta`` only; default
        sqrt(D_R) / G).
    """

    feedback_kind: ClassVar[FeedbackKind] = FeedbackKind.LOSS_FUNCTION
    paper: ClassVar[str] = "Agarwal & Singh (2017), Algorithm 1, on linearised convex losses"

    def __init__(
        self,
        domain: ConvexDomain,
        horizon: int | None,
        *,
        lipschitz: float,
        budget: PrivacyBudget | None,
        noise: str | None = None,
        mechanism: str | None = None,
        eta: float | None = None,
        eta_constant: float | None = None,
        replicas: int = 1,
        rng: RngLike = None,
        clip: bool = False,
    ) -> None:
        self.lipschitz = g = checked_positive("lipschitz", lipschitz)
        d_r = max(make_regulariser("euclidean", domain).range_of_regulariser(domain), 1e-12)
        if eta is None and horizon is not None:
            eta = math.sqrt(d_r / checked_count("horizon", horizon)) / g
        if eta_constant is None and eta is None:  # the anytime rate's c (DPFTRL refuses c and T)
            eta_constant = math.sqrt(d_r) / g
        inner = DPFTRL(
            domain.dim,
            horizon,
            budget=budget,
            noise=noise,
            mechanism=mechanism,
            domain=domain,
            regulariser="euclidean",
            loss_bounds=NormBall(g, 2, domain.dim),
            eta=eta,
            eta_constant=eta_constant,
            replicas=replicas,
            rng=rng,
            clip=clip,
        )
        self.inner = inner
        self.domain, self.horizon, self.replicas = domain, inner.horizon, inner.replicas
        self.privacy = inner.privacy
        # a ball around 0 holding the set, for the losses' declared constants
        if isinstance(domain, HasBarrier):
            self.radius = float(domain.barrier.max_norm())
        else:
            centre = np.asarray(domain.interior_point(), dtype=float)
            self.radius = float(np.linalg.norm(centre)) + float(domain.diameter)
        self._x: np.ndarray | None = None

    @property
    def t(self) -> int:  # type: ignore[override]
        """The round counter, the inner DP-FTRL's (which keeps the rounds of both)."""
        return self.inner.t

    @property
    def _acted(self) -> bool:  # type: ignore[override]
        return self._x is not None

    @property
    def eta(self) -> float:
        return self.inner.eta

    @property
    def counter(self) -> ContinualCounter:
        """The inner DP-FTRL's continual counter."""
        return self.inner.counter

    def act(self) -> np.ndarray:
        """x_t = argmin eta <x, G~_{t-1}> + ||x||^2 over the domain, shape (replicas, d)."""
        self._x = self.inner.act()
        return self._x.copy()

    def observe(self, feedback: Feedback) -> None:
        """Feed g_t = grad l_t(x_t) of every replica's own x_t to DP-FTRL's counter."""
        if not isinstance(feedback, LossFunctionFeedback):
            raise TypeError(
                f"LinearisedFTRL observes LossFunctionFeedback, got {type(feedback).__name__}"
            )
        self._check_round()
        self._check_declared(feedback.loss)
        if not callable(feedback.gradient):
            raise TypeError(
                f"LinearisedFTRL needs the loss's gradient, a function of the points; got "
                f"gradient={feedback.gradient!r:.80}"
            )
        d = self.domain.dim
        grad = checked_real_array("gradient", feedback.gradient(self._x), (d,), (self.replicas, d))
        grad = np.broadcast_to(grad, (self.replicas, d))
        self.inner.observe(LossVectorFeedback(grad))
        self._x = None

    def _check_declared(self, loss: Any) -> None:
        """Refuse a structured loss of another dimension or whose Lipschitz constant over the
        set, from its parameters, exceeds G (the gradients themselves are checked again by
        the counter, with the value that broke the bound)."""
        if loss is None:
            return
        dim = getattr(loss, "dim", self.domain.dim)
        if dim != self.domain.dim:
            raise ValueError(
                f"a loss on points of shape ({dim},), the learner plays ({self.domain.dim},)"
            )
        if isinstance(loss, SmoothLoss):
            g = loss.constants(self.radius)[0]
            sizes = [f"||v|| = {np.linalg.norm(loss.v):.6g}"] if loss.link is not None else []
            if loss.curvature is not None:
                sizes.append(f"||a|| = {np.linalg.norm(loss.anchor):.6g}")
            detail = f" ({', '.join(sizes)})"
        elif isinstance(getattr(loss, "lipschitz", None), (int, float)):
            g, detail = float(loss.lipschitz), ""  # a loss known by its values (LipschitzLoss)
        else:
            return
        if g > self.lipschitz * (1.0 + 1e-9):
            raise ValueError(
                f"round {self.t + 1}: the loss's Lipschitz constant over the set {g:.6g} exceeds "
                f"the declared bound {self.lipschitz:.6g}{detail}"
            )

    def _scale_noise(self, factor: float) -> None:
        self.inner.scale_noise(factor)

    def scale_noise(self, factor: float) -> None:
        """Multiply the counter's calibrated noise by ``factor`` before the first round."""
        super().scale_noise(factor)
        self.privacy = self.inner.privacy

    def state_dict(self) -> dict[str, Any]:
        return {
            "inner": self.inner.state_dict(),
            "x": None if self._x is None else self._x.copy(),
            "noise_multiplier": self.noise_multiplier,
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check the whole state (the inner DP-FTRL's, which holds the round counter, the
        point played this round and the noise multiplier), then return its installer."""
        install_inner = self.inner.prepare_load(saved_field(state, "inner"))
        x = saved_field(state, "x")
        if x is not None:
            x = np.array(checked_real_array("saved x", x, (self.replicas, self.domain.dim)))
        multiplier = self._saved_multiplier(state)

        def install() -> None:
            install_inner()
            self._x = x
            self.noise_multiplier = multiplier
            self.privacy = self.inner.privacy

        return install


# --- catalogue entries (dponline.registry): dponline list, specs, the battery, dponline audit ---


def _dp_ftrl_oco(
    env: Any, *, budget: PrivacyBudget | None, anytime: bool = False, **kw: Any
) -> LinearisedFTRL:
    """DP-FTRL on ``env``'s decision set with its declared Lipschitz constant (Gaussian noise,
    delta 1e-6, by default; Laplace noise takes delta = 0); ``anytime=True`` builds it
    without a horizon."""
    horizon = horizon_of(env, anytime)
    return LinearisedFTRL(env.domain, horizon, lipschitz=env.lipschitz, budget=budget, **kw)


_OPTIONS = {
    "noise": "gaussian (default, delta 1e-6) or laplace (pure DP)",
    "mechanism": "the continual counter (default padded_tree for paper; for tight the "
    "lowest-variance one whose noise fits 64 MiB)",
    "eta": "learning rate (default sqrt(D_R / T) / G; with anytime, fixed for every round "
    "instead of c / sqrt(t))",
    "eta_constant": "c of the anytime rate c / sqrt(t) (anytime only; default sqrt(D_R) / G)",
    "delta": "the budget's delta (default 1e-6 for Gaussian noise)",
    "anytime": ANYTIME_OPTION,
}

_DP_FTRL_OCO = register_learner(
    LearnerEntry(
        "dp-ftrl-oco",
        _dp_ftrl_oco,
        paper="Agarwal & Singh (2017), Algorithm 1, on the linearised losses "
        "g_t = grad l_t(x_t) (the DP-FTRL baseline of Agarwal, Kale, Singh & Thakurta 2023)",
        setting="online convex optimisation with Lipschitz convex losses (full information)",
        guarantee="event-level DP over loss sequences differing in one round, for losses whose "
        "gradients over the decision set lie in the l2 ball of the declared Lipschitz constant "
        "(the counter's guarantee under adaptively chosen inputs)",
        calibrations=("paper", "tight"),
        private=True,
        feedback_kind=FeedbackKind.LOSS_FUNCTION,
        action_space="barrier set",
        test_cases=(
            LearnerTestCase(
                "smooth_convex",
                environment_options={"dim": 2, "losses": "huber"},
                audit=AuditCase(
                    horizon=6,
                    values=(-1.0, 1.0),
                    rest=1.0,
                    environment_options={"dim": 1, "losses": "logistic"},
                    learner_options={"eta": 1.0},
                    seed=7,
                ),
            ),
        ),
        options=_OPTIONS,
        default_delta=noise_default_delta("gaussian"),
        anytime=True,
        person_level=True,
    )
)

register_learner(
    non_private_entry(
        _DP_FTRL_OCO,
        "ftrl-oco",
        paper="FTRL with R(x) = ||x||^2 on the linearised losses (online gradient descent in its "
        "lazy form; Hazan 2016, Section 5.3)",
        test_cases=(
            LearnerTestCase("smooth_convex", environment_options={"dim": 2, "losses": "huber"}),
        ),
        options={k: _OPTIONS[k] for k in ("eta", "eta_constant", "anytime")},
    )
)
