"""Links of generalised linear model (GLM) losses f(<v, x>, y), with the derivative bounds the
learners' constants are built from.

A :class:`GLMLink` is a convex function f(z, y) of the linear prediction z = <v, x> and the
label y, with its first two derivatives in z and their sups (the per-term constants of
Agarwal, Kale, Singh & Thakurta 2023, Section 3.2: CTRL's GLM losses, and of the streaming
Frank-Wolfe learners' smooth losses).

A :class:`CanonicalLink` is the negative log-likelihood of an exponential family in canonical
form, f(z, y) = b(z) - r z + c(r), whose mean is zeta(z) = b'(z) = E[r | z]; calling the link on
z gives zeta(z). Han et al.'s GLM bandit (Section 4, Assumption 4.5) uses zeta and the range of
zeta' (:meth:`CanonicalLink.derivative_range`); its loss is :class:`dponline.losses.glm.GLMLoss`.

* :class:`LogisticLink`: b(z) = log(1 + e^z), zeta = the logistic function (``expit``), labels
  y in {-1, +1} with r = (1 + y) / 2 in {0, 1}: f(z, y) = log(1 + exp(-y z));
* :class:`SquaredLink`: b(z) = z^2 / 2, zeta(z) = z (the linear model), r = y:
  f(z, y) = (z - y)^2 / 2;
* :class:`HuberLink`: Huber's loss of the residual z - y (not canonical: no mean function).

The logistic function is computed in one place, by :func:`scipy.special.expit`: its relative
error is below 2.4e-16 on [-700, 700], where 0.5 (1 + tanh(z / 2)) loses all relative accuracy
in the left tail (0 instead of 4.2e-18 at z = -40); the two differ by at most 2.3e-16 in
absolute value (``tests/losses/test_links.py``).

:data:`GLM_LINKS` names the links as losses (``logistic``, ``squared``, ``huber``: CTRL's and
the streaming Frank-Wolfe learner's ``loss``/``link`` options), :data:`LINKS` names the
canonical links by their model (``linear``, ``logistic``: the GLM bandit's ``link`` option).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
from scipy.special import expit

__all__ = [
    "GLM_LINKS",
    "LINKS",
    "CanonicalLink",
    "GLMLink",
    "HuberLink",
    "LogisticLink",
    "SquaredLink",
    "link_by_name",
]


class GLMLink(ABC):
    """A convex link f(z, y) of a GLM loss f(<v, x>, y), with its first two derivatives in z."""

    name: ClassVar[str]

    @abstractmethod
    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def max_d1(self, zmax: float, y: float) -> float:
        """sup |f'(z, y)| over |z| <= zmax."""

    @abstractmethod
    def max_d2(self, y: float) -> float:
        """sup f''(z, y) over all z."""

    def options(self) -> dict[str, float]:
        """The link's options (``link_by_name(link.name, **link.options())`` rebuilds it)."""
        return dict(vars(self))

    def check_label(self, y: float) -> None:  # noqa: B027 - most links take any label
        """Raise ValueError for a label the link does not take."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class CanonicalLink(GLMLink):
    """A canonical exponential-family link (module docstring): ``link(z)`` is the mean
    zeta(z) = b'(z), an increasing function of z, and ``model`` names the GLM (:data:`LINKS`)."""

    model: ClassVar[str]

    @abstractmethod
    def __call__(self, z: np.ndarray) -> np.ndarray:
        """zeta(z) = b'(z) = E[r | z]."""

    @abstractmethod
    def derivative_range(self, c: float) -> tuple[float, float]:
        """(mu, beta) of Han et al.'s Assumption 4.5: min and max of zeta' on [-c, c]."""


class LogisticLink(CanonicalLink):
    """f(z, y) = log(1 + exp(-y z)) for labels y in {-1, +1}: |f'| <= 1, f'' <= 1/4; the mean is
    the logistic function zeta(z) = 1 / (1 + e^-z) = P(y = +1 | z), and f''(z, y) = zeta'(z)."""

    name = "logistic"
    model = "logistic"

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return expit(np.asarray(z, dtype=float))

    def derivative_range(self, c: float) -> tuple[float, float]:
        # zeta' = zeta(z) zeta(-z), least at |z| = c, 1/4 at 0; the product keeps its relative
        # accuracy where s (1 - s) cancels (large |c|); at c = 1, where the contextual bandit
        # environment takes it, the two agree bit for bit
        return float(expit(c) * expit(-c)), 0.25

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, -y * z)

    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return -y * expit(-y * z)

    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        s = expit(y * z)
        return s * (1.0 - s)

    def max_d1(self, zmax: float, y: float) -> float:
        return float(expit(abs(zmax)))  # |f'| = sigma(-y z) <= sigma(|z|)

    def max_d2(self, y: float) -> float:
        return 0.25

    def check_label(self, y: float) -> None:
        if y not in (-1.0, 1.0):
            raise ValueError(f"logistic labels must be -1 or +1, got {y!r}")


class SquaredLink(CanonicalLink):
    """f(z, y) = (z - y)^2 / 2: |f'| <= |z| + |y|, f'' = 1; the mean is zeta(z) = z (the
    linear model)."""

    name = "squared"
    model = "linear"

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(z, dtype=float)

    def derivative_range(self, c: float) -> tuple[float, float]:
        return 1.0, 1.0

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return 0.5 * (z - y) ** 2

    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return z - y

    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.ones_like(z * y)

    def max_d1(self, zmax: float, y: float) -> float:
        return float(abs(zmax) + abs(y))

    def max_d2(self, y: float) -> float:
        return 1.0


class HuberLink(GLMLink):
    """Huber's loss of the residual r = z - y with threshold kappa: r^2 / 2 for |r| <= kappa,
    kappa (|r| - kappa / 2) beyond; |f'| <= kappa, f'' in {0, 1}. f' is Lipschitz but f'' jumps
    at |r| = kappa: the density of CTRL's Lemma 2 (Agarwal et al. 2023) then holds almost
    everywhere (the change of variables for the Lipschitz map x -> -grad J(x)), which is all the
    rejection step uses."""

    name = "huber"

    def __init__(self, kappa: float = 1.0) -> None:
        if not (math.isfinite(kappa) and kappa > 0):
            raise ValueError(f"Huber's kappa must be finite and positive, got {kappa!r}")
        self.kappa = float(kappa)

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = np.abs(z - y)
        k = self.kappa
        return np.where(r <= k, 0.5 * r**2, k * (r - 0.5 * k))

    def d1(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.clip(z - y, -self.kappa, self.kappa)

    def d2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (np.abs(z - y) <= self.kappa).astype(float)

    def max_d1(self, zmax: float, y: float) -> float:
        return min(self.kappa, float(abs(zmax) + abs(y)))

    def max_d2(self, y: float) -> float:
        return 1.0


#: the links as losses, by name (``link_by_name``)
GLM_LINKS: dict[str, type[GLMLink]] = {
    "logistic": LogisticLink,
    "squared": SquaredLink,
    "huber": HuberLink,
}

#: the canonical links by the name of their model (``linear``, ``logistic``)
LINKS: dict[str, CanonicalLink] = {link.model: link for link in (SquaredLink(), LogisticLink())}


def link_by_name(name: str, **options: float) -> GLMLink:
    """``logistic``, ``squared`` or ``huber`` (option ``kappa``)."""
    if name not in GLM_LINKS:
        raise ValueError(f"link must be one of {sorted(GLM_LINKS)}, got {name!r}")
    return GLM_LINKS[name](**options)
