"""Names of the continual-counting mechanisms."""

from __future__ import annotations

from dponline.continual.base import ContinualCounter
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.continual.blt import BLTCounter
from dponline.continual.honaker import HonakerCounter
from dponline.continual.kary_tree import KaryTreeCounter
from dponline.continual.matrix_factorization import SqrtFactorizationCounter
from dponline.continual.padded_tree import PaddedTreeCounter
from dponline.continual.scaled_sqrt import ScaledSqrtCounter
from dponline.continual.smooth_binary import SmoothBinaryCounter

__all__ = ["MECHANISMS", "get_mechanism"]

MECHANISMS: dict[str, type[ContinualCounter]] = {
    cls.name: cls
    for cls in (
        BinaryTreeCounter,
        PaddedTreeCounter,
        HonakerCounter,
        SqrtFactorizationCounter,
        BLTCounter,
        KaryTreeCounter,
        ScaledSqrtCounter,
        SmoothBinaryCounter,
    )
}


def get_mechanism(name: str) -> type[ContinualCounter]:
    """The counter class registered under ``name``."""
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ValueError(
            f"unknown mechanism {name!r}; expected one of {sorted(MECHANISMS)}"
        ) from None
