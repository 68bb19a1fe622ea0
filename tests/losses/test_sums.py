"""LossSum: the running sum of smooth losses that CTRL's Newton solves evaluate."""

from __future__ import annotations

import numpy as np

from dponline.losses import LossSum, SmoothLoss, link_by_name

SQUARED, LOGISTIC = link_by_name("squared"), link_by_name("logistic")


def test_loss_sum_equals_the_sum_of_its_losses():
    """LossSum keeps squared losses and quadratics as sufficient statistics and the other GLM
    rows as rows: value, gradient and Hessian equal the term-by-term sums."""
    rng = np.random.default_rng(4)
    dim = 3
    terms = []
    for i in range(40):
        v = rng.normal(size=dim)
        if i % 4 == 0:
            terms.append(SmoothLoss.glm(SQUARED, v, float(rng.normal())))
        elif i % 4 == 1:
            terms.append(SmoothLoss.glm(LOGISTIC, v, float(rng.choice([-1.0, 1.0]))))
        elif i % 4 == 2:
            terms.append(SmoothLoss.glm(link_by_name("huber"), v, float(rng.normal())))
        else:
            terms.append(SmoothLoss(dim, SQUARED, v, 0.3, 0.5, rng.normal(size=dim)))
    total = LossSum(dim)
    for term in terms:
        total.add(term)
    x = rng.normal(size=(5, dim))
    np.testing.assert_allclose(total.value(x), sum(t.value(x) for t in terms), rtol=1e-12)
    np.testing.assert_allclose(total.gradient(x), sum(t.gradient(x) for t in terms), rtol=1e-11)
    np.testing.assert_allclose(total.hessian(x), sum(t.hessian(x) for t in terms), rtol=1e-11)
    again = LossSum(dim)
    again.load_state_dict(total.state_dict())
    np.testing.assert_allclose(again.gradient(x), total.gradient(x), rtol=0, atol=0)
