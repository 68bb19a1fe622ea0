"""Larger audits (marked slow; `make test-all`): longer streams, more trials, milder under-noising.

Non-refutation assertions fail by chance with probability at most alpha = 1e-3 each (2 alpha
where the claim states rho too: an epsilon test and a rho test); the seeds are fixed.
"""

from __future__ import annotations

import numpy as np
import pytest

from dponline.continual import make_counter
from dponline.privacy.audit import audit, counter_sampler
from dponline.privacy.bounds import Box
from tests.helpers import maybe_budget

pytestmark = pytest.mark.slow

T = 64
A = np.zeros((T, 1))
B = A.copy()
B[T // 2, 0] = 1.0  # the differing round is in the middle of the stream


def _run(mech, noise, epsilon, fraction):
    delta = 0.0 if noise == "laplace" else 1e-5
    ref = make_counter(
        mech, horizon=T, bounds=Box(0, 1, dim=1), budget=maybe_budget(epsilon, delta), noise=noise
    )
    cls, scaled = type(ref), ref.noise.scaled(fraction)
    return audit(
        counter_sampler(lambda r, g: cls(T, 1, scaled, replicas=r, rng=g), batch=20_000),
        A,
        B,
        claim=ref.privacy,
        trials=200_000,
        pilot_trials=40_000,
        alpha=1e-3,
        rng=11,
    )


CASES = [
    (m, n)
    for m in ("binary_tree", "padded_tree", "honaker", "sqrt_factorization", "blt")
    for n in ("gaussian", "laplace")
    if not (m in ("sqrt_factorization", "blt") and n == "laplace")
]


@pytest.mark.parametrize(("mech", "noise"), CASES)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_large_audit_does_not_refute(mech, noise, epsilon):
    res = _run(mech, noise, epsilon, 1.0)
    assert not res.any_refuted, str(res)


# The padded tree is left out here: its releases carry padding draws on top of the tree's nodes,
# so the released stream is more private than the tree's guarantee says, and a third of the
# noise is not visible in the releases (a tenth is, see test_audit.py).
@pytest.mark.parametrize(("mech", "noise"), [c for c in CASES if c[0] != "padded_tree"])
def test_a_third_of_the_noise_is_refuted(mech, noise):
    res = _run(mech, noise, 1.0, 1 / 3)
    assert res.refuted, str(res)
