"""The GLM links (dponline.losses.links): one logistic function, accurate in both tails, shared by
CTRL's logistic loss and the GLM bandit's mean; each canonical link's loss, derivatives and mean
against the exponential-family form f(z, y) = b(z) - r z + c(r) by hand."""

from __future__ import annotations

import warnings
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from dponline.losses import (
    GLM_LINKS,
    LINKS,
    CanonicalLink,
    GLMLoss,
    HuberLink,
    LogisticLink,
    SquaredLink,
    link_by_name,
)

LOGISTIC = LogisticLink()


def _exact_logistic(z: float) -> float:
    """1 / (1 + e^-z) in 40-digit decimal arithmetic, rounded once to a float."""
    with localcontext() as ctx:
        ctx.prec = 40
        return float(1 / (1 + (-Decimal(z)).exp()))


def _tanh_form(z: np.ndarray) -> np.ndarray:
    """The form the GLM bandit's link used before the move: 0.5 (1 + tanh(z / 2))."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=float)))


def test_the_logistic_function_is_accurate_in_both_tails_and_agrees_with_the_tanh_form():
    z = np.concatenate([np.linspace(-700.0, 700.0, 14001), np.linspace(-40.0, 40.0, 8001)])
    exact = np.array([_exact_logistic(v) for v in z])
    got = LOGISTIC(z)
    assert np.max(np.abs(got - exact) / exact) <= 2.4e-16  # the module docstring's bound
    assert np.max(np.abs(got - _tanh_form(z))) <= 2.3e-16  # same values in absolute terms
    # the left tail: the tanh form cancels to 0, the logistic function keeps its digits
    assert _tanh_form(-40.0) == 0.0
    assert LOGISTIC(-40.0) == pytest.approx(4.248354255291589e-18, rel=1e-15)
    assert LOGISTIC(0.0) == 0.5 and LOGISTIC(1.0) == _tanh_form(1.0) == 0.7310585786300049
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning at extreme arguments
        ends = LOGISTIC(np.array([-np.inf, -1e300, -1000.0, 1000.0, 1e300, np.inf]))
    np.testing.assert_array_equal(ends, [0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    assert np.isnan(LOGISTIC(np.nan))


def test_one_logistic_link_serves_ctrl_and_the_glm_bandit():
    assert type(link_by_name("logistic")) is LogisticLink is type(LINKS["logistic"])
    assert link_by_name("logistic") == LINKS["logistic"]
    assert GLMLoss.named("logistic", (0.0, 1.0)).link == LOGISTIC
    # CTRL's loss derivative and the bandit's mean come from the same function
    z = np.linspace(-50.0, 50.0, 1001)
    np.testing.assert_array_equal(LOGISTIC.d1(z, -1.0), expit(z))
    np.testing.assert_array_equal(LOGISTIC(z), expit(z))


@settings(max_examples=200, deadline=None)
@given(z=st.floats(-30.0, 30.0), label=st.sampled_from([-1.0, 1.0]))
def test_logistic_loss_is_the_bernoulli_negative_log_likelihood(z, label):
    """f(z, y) = log(1 + e^-yz) = b(z) - r z with b(z) = log(1 + e^z), r = (1 + y) / 2, so
    f' = zeta(z) - r and f'' = zeta'(z) = zeta(z) (1 - zeta(z))."""
    r = (1.0 + label) / 2.0
    zeta = _exact_logistic(z)
    assert LOGISTIC.value(z, label) == pytest.approx(np.logaddexp(0.0, z) - r * z, abs=1e-13)
    assert LOGISTIC.d1(z, label) == pytest.approx(zeta - r, rel=0.0, abs=2.3e-16)
    # f'' = s (1 - s), s = zeta(y z): accurate in absolute terms (it cancels in relative terms
    # where s is near 1, as it did before the move; CTRL's numbers rest on it unchanged)
    assert LOGISTIC.d2(z, label) == pytest.approx(zeta * (1.0 - zeta), rel=0.0, abs=2.3e-16)
    assert abs(LOGISTIC.d1(z, label)) <= LOGISTIC.max_d1(abs(z), label)
    assert LOGISTIC.d2(z, label) <= LOGISTIC.max_d2(label)


@settings(max_examples=200, deadline=None)
@given(z=st.floats(-1e3, 1e3), y=st.floats(-1e3, 1e3))
def test_squared_loss_is_the_gaussian_negative_log_likelihood(z, y):
    """f(z, y) = (z - y)^2 / 2 = b(z) - y z + y^2 / 2 with b(z) = z^2 / 2: zeta(z) = z,
    f' = zeta(z) - y, f'' = 1."""
    link = SquaredLink()
    assert link.value(z, y) == pytest.approx(z * z / 2 - y * z + y * y / 2, abs=1e-9)
    assert link(z) == z and link.d1(z, y) == link(z) - y and link.d2(z, y) == 1.0


@pytest.mark.parametrize("c", [0.25, 1.0, 3.0, 40.0])
def test_derivative_range_is_the_range_of_zeta_prime(c):
    """(mu, beta) = (min, max) of zeta' on [-c, c] (Assumption 4.5): mu = zeta'(c) to full
    relative accuracy (4.2e-18 at c = 40, not 0), the grid's extremes, beta = zeta'(0) = 1/4."""
    z = np.linspace(-c, c, 4001)  # contains 0 and +-c
    slope = LOGISTIC.d2(z, 1.0)
    mu, beta = LOGISTIC.derivative_range(c)
    exact = _exact_logistic(c) * _exact_logistic(-c)
    assert mu == pytest.approx(exact, rel=1e-15, abs=0.0) and mu > 0.0
    assert mu == pytest.approx(slope.min(), rel=0.0, abs=2.3e-16) and beta == slope.max() == 0.25
    assert SquaredLink().derivative_range(c) == (1.0, 1.0)


def test_derivative_range_is_unchanged_where_the_glm_bandit_uses_it():
    """The contextual environment's h_sub takes mu at c = 1: the same bits as s (1 - s)."""
    s = expit(1.0)
    assert LOGISTIC.derivative_range(1.0) == (s * (1.0 - s), 0.25) == (0.19661193324148185, 0.25)


def test_links_by_name():
    assert {name: type(link) for name, link in LINKS.items()} == {
        "linear": SquaredLink,
        "logistic": LogisticLink,
    }
    assert all(link.model == name for name, link in LINKS.items())
    assert sorted(GLM_LINKS) == ["huber", "logistic", "squared"]
    assert link_by_name("huber", kappa=2.0) == HuberLink(2.0) != HuberLink(1.0)
    assert not isinstance(HuberLink(), CanonicalLink)  # Huber's loss has no mean function
    with pytest.raises(ValueError, match=r"link must be one of .* got 'probit'"):
        link_by_name("probit")
    # the streaming GLM loss keeps its model names in its record
    assert GLMLoss.named("linear", (-1.0, 1.0)).to_dict()["link"] == "linear"
    assert GLMLoss.named("logistic", (0.0, 1.0)).to_dict()["link"] == "logistic"
