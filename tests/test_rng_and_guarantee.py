"""Explicit RNGs and the PrivacyGuarantee value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dponline.experiments.checkpoints import load_state, save_state
from dponline.privacy.guarantee import Neighbouring, PrivacyGuarantee
from dponline.rng import as_generator, generator_from_state, generator_state


def test_generator_state_round_trip_continues_the_stream():
    g = as_generator(42)
    g.normal(size=5)
    state = json.loads(json.dumps(generator_state(g)))  # JSON-serialisable
    expected = g.normal(size=10)
    np.testing.assert_array_equal(generator_from_state(state).normal(size=10), expected)


@pytest.mark.parametrize("name", ["PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"])
def test_every_numpy_bit_generator_round_trips_through_a_checkpoint(name, tmp_path):
    g = np.random.Generator(getattr(np.random, name)(5))
    g.random(3)
    save_state(tmp_path / "rng.ckpt.npz", generator_state(g), task="t")  # arrays for MT19937
    state = load_state(tmp_path / "rng.ckpt.npz", task="t")
    expected = g.random(4)
    restored = generator_from_state(state)
    assert type(restored.bit_generator).__name__ == name
    np.testing.assert_array_equal(restored.random(4), expected)


@pytest.mark.parametrize(
    "name", ["RandomState", "Generator", "SeedSequence", "BitGenerator", "default_rng", "x", 3]
)
def test_generator_from_state_builds_numpy_bit_generators_only(name):
    """A state read from a file names the class to build: only BitGenerator subclasses."""
    state = {"bit_generator": name, "state": {"state": 1, "inc": 1}}
    with pytest.raises(ValueError, match=r"unknown bit generator .*BitGenerator subclass"):
        generator_from_state(state)
    with pytest.raises(TypeError, match="must be a dict"):
        generator_from_state([("bit_generator", "PCG64")])  # type: ignore[arg-type]


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
