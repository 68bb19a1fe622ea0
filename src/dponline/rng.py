"""Explicit random number generators.

dponline never touches a global RNG. Every object that draws noise takes ``rng=`` (``None``, an
integer seed, a :class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`) and
keeps its own :class:`numpy.random.Generator`. Its state is part of ``state_dict()``, so a
restored object continues exactly the stream of noise an uninterrupted one would have drawn.

Every privacy guarantee assumes the noise is secret. An integer seed makes a run reproducible,
and a seed that an adversary knows or guesses voids the guarantee; deployments pass ``None``
(the operating system's entropy). A saved state holds the generator's state and the learner's
exact statistics, so it is as sensitive as the data; and since no check can tell a generator
state or noise already drawn from edited ones, load only states you wrote (authenticated, for
example with an HMAC, when they leave your control). Continue a state once: two runs from one
state draw the same noise, so what the first released and what the second releases on other
data differ by the data alone. (A K-armed learner whose fast path failed midway refuses to go
on for that reason: its last state is one the environment already ran on.)
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

RngLike = None | int | np.random.SeedSequence | np.random.Generator

__all__ = [
    "RngLike",
    "as_generator",
    "generator_from_state",
    "generator_state",
    "replica_generators",
]


def as_generator(rng: RngLike) -> np.random.Generator:
    """Return a Generator for ``rng`` (a Generator is used as is, not copied)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        if isinstance(rng, (int, np.integer)) and rng < 0:
            raise ValueError(f"rng seed must be a non-negative integer, got {rng}")
        return np.random.default_rng(rng)
    raise TypeError(
        "rng must be None, a non-negative int, a numpy SeedSequence or a numpy Generator, "
        f"got {type(rng).__name__}"
    )


def generator_state(gen: np.random.Generator) -> dict[str, Any]:
    """A deep copy of the generator's bit-generator state (JSON-like dict)."""
    return copy.deepcopy(gen.bit_generator.state)


def generator_from_state(state: dict[str, Any]) -> np.random.Generator:
    """Rebuild a Generator whose next draws are exactly those of the saved one.

    ``state["bit_generator"]`` must name a :class:`numpy.random.BitGenerator` subclass in
    :mod:`numpy.random` (``PCG64``, ``MT19937``, ...): saved states are read from files, so
    nothing else named there is ever called.
    """
    if not isinstance(state, dict):
        raise TypeError(f"an RNG state must be a dict, got {type(state).__name__}")
    name = state.get("bit_generator")
    bit_gen_cls = getattr(np.random, name, None) if isinstance(name, str) else None
    if not (
        isinstance(bit_gen_cls, type)
        and issubclass(bit_gen_cls, np.random.BitGenerator)
        and bit_gen_cls is not np.random.BitGenerator  # the abstract base
    ):
        raise ValueError(
            f"unknown bit generator {name!r} in saved RNG state; expected the name of a "
            "numpy.random.BitGenerator subclass such as 'PCG64'"
        )
    bit_gen = bit_gen_cls()
    bit_gen.state = copy.deepcopy(state)
    return np.random.Generator(bit_gen)


def replica_generators(rng: RngLike, replicas: int) -> list[np.random.Generator]:
    """One ``numpy.random.Generator`` (PCG64) per replica, spawned from ``rng`` (``None``, a
    seed, a SeedSequence or a Generator, which gives up 256 bits of its stream): the children
    0..replicas-1 of one SeedSequence, so that replica j's generator does not depend on how
    many replicas there are."""
    base = as_generator(rng)
    root = np.random.SeedSequence(base.bit_generator.random_raw(4).tolist())
    return [np.random.Generator(np.random.PCG64(child)) for child in root.spawn(replicas)]
