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
example with an HMAC, when they leave your control).
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
    "with_current_generators",
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


def _is_generator_state(value: Any) -> bool:
    return (
        isinstance(value, dict) and isinstance(value.get("bit_generator"), str) and "state" in value
    )


def _jumped_state(state: dict[str, Any]) -> dict[str, Any]:
    """A state whose draws the saved one's stream never reaches: its ``jumped()`` (2^127 or
    more steps ahead for numpy's bit generators that have one), else fresh entropy."""
    bit_gen = generator_from_state(state).bit_generator
    jumped = getattr(bit_gen, "jumped", None)
    return copy.deepcopy((jumped() if jumped is not None else type(bit_gen)()).state)


def with_current_generators(saved: Any, current: Any) -> Any:
    """``saved`` (a ``state_dict()``) with every generator state in it replaced by the one at the
    same place in ``current`` (a later ``state_dict()`` of the same object).

    For undoing a call that failed after its noise was used: an environment that has seen
    decisions made with the call's noise must never meet that noise again, so the object goes
    back to its statistics before the call and keeps its generators where the call left them
    (a plain restore would draw the same values for the retry). A generator state with no
    counterpart in ``current`` is jumped ahead instead (:func:`_jumped_state`).
    """
    if _is_generator_state(saved):
        return copy.deepcopy(current) if _is_generator_state(current) else _jumped_state(saved)
    if isinstance(saved, dict):
        later = current if isinstance(current, dict) else {}
        return {k: with_current_generators(v, later.get(k)) for k, v in saved.items()}
    if isinstance(saved, list | tuple):
        later = list(current) if isinstance(current, list | tuple) else []
        merged = [
            with_current_generators(v, later[i] if i < len(later) else None)
            for i, v in enumerate(saved)
        ]
        return merged if isinstance(saved, list) else tuple(merged)
    return saved
