"""Explicit RNGs and the PrivacyGuarantee value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee
from dponline.rng import as_generator, generator_from_state, generator_state


def test_generator_state_round_trip_continues_the_stream():
    g = as_generator(42)
    g.normal(size=5)
    state = json.loads(json.dumps(generator_state(g)))  # JSON-serialisable
    expected = g.normal(size=10)
    np.testing.assert_array_equal(generator_from_state(state).normal(size=10), expected)


def test_as_generator_accepts_seeds_and_generators_only():
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    assert isinstance(as_generator(np.random.SeedSequence(3)), np.random.Generator)
    with pytest.raises(ValueError, match="non-negative"):
        as_generator(-1)
    with pytest.raises(TypeError, match="rng must be"):
        as_generator(1.5)  # type: ignore[arg-type]


def test_guarantee_validation_and_serialisation():
    g = PrivacyGuarantee(1.0, 1e-6, derivation="test", rho=0.03, requested_epsilon=1.0)
    d = g.to_dict()
    assert d["neighbouring"] == Neighbouring.ONE_ROUND.value
    json.dumps(d)
    assert g.meets_request and not g.is_pure
    assert "(1, 1e-06)-DP" in str(g)
    assert not PrivacyGuarantee(1.2, 0.0, requested_epsilon=1.0).meets_request
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyGuarantee(-1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        PrivacyGuarantee(1.0, 1.0)
