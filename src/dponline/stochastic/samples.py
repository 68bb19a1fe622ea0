"""The input contract of the streaming squared-loss learners: a sample (x, y) with
||x||_q <= X and |y| <= Y, which is what their Lipschitz and smoothness constants (and so their
privacy) rest on; and the rule that fixes their l_p geometry from the environment
(:func:`sample_geometry`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dponline.domains.lp_ball import LpBall
from dponline.privacy.arguments import checked_real_array
from dponline.protocol import Feedback, SampleFeedback

__all__ = ["checked_sample", "sample_geometry"]


def checked_sample(
    feedback: Feedback, dim: int, q: float, x_bound: float, y_bound: float, clip: bool
) -> tuple[np.ndarray, float]:
    """Validate a shared sample: x of shape (dim,), scalar y, finite, within the bounds.

    Out-of-bounds samples raise ValueError naming the values and bounds, or with ``clip`` are
    mapped into the bounds (x rescaled radially in l_q, y clipped).
    """
    if not isinstance(feedback, SampleFeedback):
        raise TypeError(f"observes SampleFeedback, got {type(feedback).__name__}")
    # one x of shape (dim,) and a scalar y, shared by all replicas, real and finite
    x = checked_real_array("sample x", feedback.x, (dim,))
    y = float(checked_real_array("sample y", feedback.y, ()))
    nx = float(LpBall(dim, q).norm(x))
    if nx > x_bound or abs(y) > y_bound:
        if not clip:
            raise ValueError(
                f"sample outside the declared bounds: ||x||_{q:g} = {nx!r} (bound {x_bound}), "
                f"|y| = {abs(y)!r} (bound {y_bound})"
            )
        if nx > x_bound:
            x = x * (x_bound * (1 - 1e-12) / nx)
        y = float(np.clip(y, -y_bound, y_bound))
    return x, y


def sample_geometry(env: Any, p: Any, default: float, learner: str) -> float:
    """The p of a sample learner over an l_p ball built for the environment ``env``.

    The environment's ``p`` (the geometry its experiment is set in) when it sets one: an
    explicit option ``p`` that disagrees raises ValueError naming both; when ``env.p`` is
    ``None`` (or absent), the option ``p``, else the learner's ``default``.
    """
    chosen = None if p is None else _checked_p(p, f"{learner}: option p")
    env_p = getattr(env, "p", None)
    if env_p is None:
        return default if chosen is None else chosen
    env_p = _checked_p(env_p, f"{learner}: the environment's p")
    if chosen is not None and chosen != env_p:
        raise ValueError(
            f"{learner}: the option p = {chosen:g} disagrees with the environment's p = "
            f"{env_p:g} (the environment sets the geometry; omit p or pass p = {env_p:g})"
        )
    return env_p


def _checked_p(p: Any, what: str) -> float:
    if isinstance(p, bool):
        raise TypeError(f"{what} must be a number >= 1 (or inf), got {p!r}")
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number >= 1 (or inf), got {p!r}") from None
    if not value >= 1:  # NaN too
        raise ValueError(f"{what} must be a number >= 1 (or inf), got {p!r}")
    return value
