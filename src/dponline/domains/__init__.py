"""Convex decision sets: the :class:`ConvexDomain` contract (linear minimisation oracle,
Euclidean diameter, affine hull, interior point and inscribed radius, membership), the catalogue
of sets that meet it, and self-concordant barriers (for SCRiBLe)."""

from dponline.domains.barriers import (
    BallBarrier,
    BoxBarrier,
    PolytopeBarrier,
    SelfConcordantBarrier,
)
from dponline.domains.base import ConvexDomain, HasBarrier, Projectable, as_directions
from dponline.domains.birkhoff import BirkhoffPolytope
from dponline.domains.box import Box
from dponline.domains.graphic_matroid import (
    GraphicMatroidBasePolytope,
    GraphicMatroidIndependencePolytope,
)
from dponline.domains.hull import VertexHull
from dponline.domains.lp_ball import LpBall
from dponline.domains.matroids import (
    PartitionMatroidBasePolytope,
    PartitionMatroidIndependencePolytope,
    UniformMatroidBasePolytope,
    UniformMatroidIndependencePolytope,
)
from dponline.domains.min_norm_point import min_norm_point
from dponline.domains.paths import PathPolytope
from dponline.domains.polytope import Polytope
from dponline.domains.simplex import CornerSimplex, Simplex
from dponline.domains.submodular import Permutahedron, SubmodularBasePolytope

__all__ = [
    "BallBarrier",
    "BirkhoffPolytope",
    "Box",
    "BoxBarrier",
    "ConvexDomain",
    "CornerSimplex",
    "GraphicMatroidBasePolytope",
    "GraphicMatroidIndependencePolytope",
    "HasBarrier",
    "LpBall",
    "PartitionMatroidBasePolytope",
    "PartitionMatroidIndependencePolytope",
    "PathPolytope",
    "Permutahedron",
    "Polytope",
    "PolytopeBarrier",
    "Projectable",
    "SelfConcordantBarrier",
    "Simplex",
    "SubmodularBasePolytope",
    "UniformMatroidBasePolytope",
    "UniformMatroidIndependencePolytope",
    "VertexHull",
    "as_directions",
    "min_norm_point",
]
