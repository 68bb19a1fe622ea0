"""Convex decision sets with self-concordant barriers (for SCRiBLe) and linear oracles."""

from dponline.domains.barriers import (
    BallBarrier,
    BoxBarrier,
    PolytopeBarrier,
    SelfConcordantBarrier,
)

__all__ = ["BallBarrier", "BoxBarrier", "PolytopeBarrier", "SelfConcordantBarrier"]
