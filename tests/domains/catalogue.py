"""Small instances of every decision set, each with its vertices listed by brute force (and,
where it has a short one, an explicit H-representation for scipy's linprog): the ground truth
the contract tests in test_contract.py compare against."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dponline.domains import (
    BirkhoffPolytope,
    Box,
    ConvexDomain,
    CornerSimplex,
    GraphicMatroidBasePolytope,
    GraphicMatroidIndependencePolytope,
    LpBall,
    PartitionMatroidBasePolytope,
    PartitionMatroidIndependencePolytope,
    PathPolytope,
    Permutahedron,
    Polytope,
    Simplex,
    SubmodularBasePolytope,
    UniformMatroidBasePolytope,
    UniformMatroidIndependencePolytope,
    VertexHull,
)
from dponline.domains.graphs import UnionFind


@dataclass
class HRep:
    """{x : a_ub x <= b_ub, a_eq x = b_eq} for linprog."""

    a_ub: np.ndarray | None = None
    b_ub: np.ndarray | None = None
    a_eq: np.ndarray | None = None
    b_eq: np.ndarray | None = None
    bounds: tuple[float | None, float | None] | list = (None, None)


@dataclass
class Case:
    name: str
    make: Callable[[], ConvexDomain]
    vertices: Callable[[], np.ndarray]
    hrep: Callable[[], HRep] | None = None
    #: False for the l_p balls, whose oracle answers the midpoint of an optimal face (0 on the
    #: coordinates where the direction is 0), not a vertex
    vertex_answers: bool = True


def subsets_indicators(n: int, sizes: Callable[[int], bool]) -> np.ndarray:
    rows = [
        [1.0 if i in s else 0.0 for i in range(n)]
        for k in range(n + 1)
        if sizes(k)
        for s in itertools.combinations(range(n), k)
    ]
    return np.array(rows)


def partition_vertices(blocks, caps, bases: bool) -> np.ndarray:
    n = sum(len(b) for b in blocks)
    per_block = []
    for b, k in zip(blocks, caps, strict=True):
        sizes = [k] if bases else range(min(k, len(b)) + 1)
        per_block.append([s for m in sizes for s in itertools.combinations(b, m)])
    out = []
    for choice in itertools.product(*per_block):
        x = np.zeros(n)
        for s in choice:
            x[list(s)] = 1.0
        out.append(x)
    return np.array(out)


def partition_hrep(blocks, caps, bases: bool) -> HRep:
    n = sum(len(b) for b in blocks)
    rows = np.zeros((len(blocks), n))
    for j, b in enumerate(blocks):
        rows[j, list(b)] = 1.0
    caps = np.array(caps, dtype=float)
    if bases:
        return HRep(a_eq=rows, b_eq=caps, bounds=(0, 1))
    return HRep(a_ub=rows, b_ub=caps, bounds=(0, 1))


def forests(edges, bases: bool) -> np.ndarray:
    nodes = sorted({v for e in edges for v in e})
    idx = {v: i for i, v in enumerate(nodes)}
    m = len(edges)
    out = []
    for mask in range(1 << m):
        uf = UnionFind(len(nodes))
        if all(uf.union(idx[edges[e][0]], idx[edges[e][1]]) for e in range(m) if mask >> e & 1):
            out.append([float(mask >> e & 1) for e in range(m)])
    v = np.array(out)
    if bases:
        size = v.sum(axis=1)
        v = v[size == size.max()]
    return v


def dag_paths(edges, s, t) -> np.ndarray:
    out: dict = {}
    for i, (a, b) in enumerate(edges):
        out.setdefault(a, []).append((b, i))
    found = []

    def walk(v, acc):
        if v == t:
            found.append(list(acc))
            return
        for w, i in out.get(v, []):
            walk(w, [*acc, i])

    walk(s, [])
    x = np.zeros((len(found), len(edges)))
    for r, p in enumerate(found):
        x[r, p] = 1.0
    return x


def flow_hrep(edges, s, t) -> HRep:
    nodes = sorted({v for e in edges for v in e}, key=str)
    a_eq = np.zeros((len(nodes), len(edges)))
    for i, (a, b) in enumerate(edges):
        a_eq[nodes.index(a), i] -= 1.0
        a_eq[nodes.index(b), i] += 1.0
    b_eq = np.zeros(len(nodes))
    b_eq[nodes.index(s)] = -1.0
    b_eq[nodes.index(t)] = 1.0
    return HRep(a_eq=a_eq, b_eq=b_eq, bounds=(0, None))


def greedy_vertices(domain: ConvexDomain) -> np.ndarray:
    """All greedy vertices of a base polytope: one per order of the ground set."""
    n = domain.dim
    perms = np.array(list(itertools.permutations(range(n))), dtype=float)
    return np.unique(domain.lmo(perms), axis=0)


def perm_matrices(n: int) -> np.ndarray:
    return np.array([np.eye(n)[list(p)].ravel() for p in itertools.permutations(range(n))])


def box_corners(lo, hi) -> np.ndarray:
    return np.array(list(itertools.product(*zip(lo, hi, strict=True))), dtype=float)


K4 = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
#: two triangles joined by a bridge, with a parallel edge and a self-loop
BOWTIE = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "f"), ("f", "d")]
BOWTIE += [("f", "f"), ("a", "b")]
#: a 3 x 3 grid DAG plus a chord, a dead end, an edge into s and one out of t (unusable)
DAG = [
    ((i, j), (i + di, j + dj))
    for i in range(3)
    for j in range(3)
    for di, dj in ((1, 0), (0, 1))
    if i + di < 3 and j + dj < 3
]
DAG += [((0, 0), (1, 1)), ((1, 0), "dead"), ("pre", (0, 0)), ((2, 2), "post"), ((0, 1), (1, 2))]


def cut_function(n: int, edges) -> Callable[[frozenset[int]], float]:
    """Weighted graph cut plus a modular term: submodular with f(empty) = 0."""

    def f(s: frozenset[int]) -> float:
        cut = sum(w for a, b, w in edges if (a in s) != (b in s))
        return float(cut + 0.5 * sum(s) - 0.25 * len(s))

    return f


def concave_card(n: int) -> Callable[[frozenset[int]], float]:
    return lambda s: float(math.sqrt(len(s)) * 3.0 + sum(0.1 * i for i in s))


#: a separable function with components {0, 1}, {2}, {3}: f = g({0,1}) + modular
def separable(s: frozenset[int]) -> float:
    a = len(s & {0, 1})
    return float(min(a, 1) * 2.0 + (1.5 if 2 in s else 0.0) - (0.5 if 3 in s else 0.0))


PRISM_A = np.array(
    [
        [-1.0, 0.0, 0.0],
        [0.0, -1.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
        [2.0, 2.0, 0.0],  # redundant
    ]
)
PRISM_B = np.array([0.0, 0.0, 1.0, 2.0, 0.0, 3.0])
#: the same prism cut to the face z = 1 by two inequalities (an implicit equality) and the
#: equality x - y = 0 (a segment)
FLAT_A = np.vstack([PRISM_A, [[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]])
FLAT_B = np.concatenate([PRISM_B, [1.0, -1.0]])

RNG_POINTS = np.random.default_rng(7).normal(size=(9, 3))
PLANAR = np.random.default_rng(8).normal(size=(7, 2)) @ np.array(
    [[1.0, 0.0, 2.0, -1.0], [0.0, 1.0, 1.0, 3.0]]
) + np.array([1.0, -2.0, 0.5, 0.0])


CASES = [
    Case(
        "simplex",
        lambda: Simplex(4),
        lambda: np.eye(4),
        lambda: HRep(None, None, np.ones((1, 4)), np.ones(1), (0, None)),
    ),
    Case("simplex-1", lambda: Simplex(1), lambda: np.eye(1)),
    Case(
        "corner-simplex",
        lambda: CornerSimplex(3),
        lambda: np.vstack([np.zeros(3), np.eye(3)]),
        lambda: HRep(np.ones((1, 3)), np.ones(1), None, None, (0, None)),
    ),
    Case(
        "box",
        lambda: Box(3, [-1.0, 0.0, 2.0], [1.0, 0.5, 3.0]),
        lambda: box_corners([-1, 0, 2], [1, 0.5, 3]),
        lambda: HRep(bounds=[(-1, 1), (0, 0.5), (2, 3)]),
    ),
    Case(
        "l1-ball",
        lambda: LpBall(3, 1.0, 2.0),
        lambda: np.vstack([2 * np.eye(3), -2 * np.eye(3)]),
        vertex_answers=False,
    ),
    Case(
        "linf-ball",
        lambda: LpBall(3, math.inf, 1.5),
        lambda: box_corners([-1.5] * 3, [1.5] * 3),
        lambda: HRep(bounds=(-1.5, 1.5)),
        vertex_answers=False,
    ),
    Case(
        "uniform-bases",
        lambda: UniformMatroidBasePolytope(5, 2),
        lambda: subsets_indicators(5, lambda k: k == 2),
        lambda: partition_hrep([range(5)], [2], True),
    ),
    Case("uniform-bases-full", lambda: UniformMatroidBasePolytope(3, 3), lambda: np.ones((1, 3))),
    Case(
        "uniform-independent",
        lambda: UniformMatroidIndependencePolytope(4, 2),
        lambda: subsets_indicators(4, lambda k: k <= 2),
        lambda: partition_hrep([range(4)], [2], False),
    ),
    Case(
        "partition-bases",
        lambda: PartitionMatroidBasePolytope([[0, 3], [1, 2, 4], [5]], [1, 2, 1]),
        lambda: partition_vertices([[0, 3], [1, 2, 4], [5]], [1, 2, 1], True),
        lambda: partition_hrep([[0, 3], [1, 2, 4], [5]], [1, 2, 1], True),
    ),
    Case(
        "partition-independent",
        lambda: PartitionMatroidIndependencePolytope([[0, 1, 2], [3, 4], [5]], [2, 1, 0]),
        lambda: partition_vertices([[0, 1, 2], [3, 4], [5]], [2, 1, 0], False),
        lambda: partition_hrep([[0, 1, 2], [3, 4], [5]], [2, 1, 0], False),
    ),
    Case("spanning-trees-K4", lambda: GraphicMatroidBasePolytope(K4), lambda: forests(K4, True)),
    Case("forests-K4", lambda: GraphicMatroidIndependencePolytope(K4), lambda: forests(K4, False)),
    Case(
        "spanning-trees-bowtie",
        lambda: GraphicMatroidBasePolytope(BOWTIE),
        lambda: forests(BOWTIE, True),
    ),
    Case(
        "forests-bowtie",
        lambda: GraphicMatroidIndependencePolytope(BOWTIE),
        lambda: forests(BOWTIE, False),
    ),
    Case(
        "dag-paths",
        lambda: PathPolytope(DAG, (0, 0), (2, 2)),
        lambda: dag_paths(DAG, (0, 0), (2, 2)),
        lambda: flow_hrep(DAG, (0, 0), (2, 2)),
    ),
    Case(
        "submodular-cut",
        lambda: SubmodularBasePolytope(
            4, cut_function(4, [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 0.5), (0, 3, 1.0)])
        ),
        lambda: greedy_vertices(
            SubmodularBasePolytope(
                4, cut_function(4, [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 0.5), (0, 3, 1.0)])
            )
        ),
    ),
    Case(
        "submodular-concave",
        lambda: SubmodularBasePolytope(4, concave_card(4)),
        lambda: greedy_vertices(SubmodularBasePolytope(4, concave_card(4))),
    ),
    Case(
        "submodular-separable",
        lambda: SubmodularBasePolytope(4, separable),
        lambda: greedy_vertices(SubmodularBasePolytope(4, separable)),
    ),
    Case(
        "permutahedron",
        lambda: Permutahedron(4),
        lambda: np.array(list(itertools.permutations([1.0, 2.0, 3.0, 4.0]))),
    ),
    Case(
        "permutahedron-repeated",
        lambda: Permutahedron(4, [0.0, 0.0, 1.0, 3.0]),
        lambda: np.unique(np.array(list(itertools.permutations([0.0, 0.0, 1.0, 3.0]))), axis=0),
    ),
    Case(
        "birkhoff",
        lambda: BirkhoffPolytope(3),
        lambda: perm_matrices(3),
        lambda: HRep(
            a_eq=np.vstack([np.kron(np.eye(3), np.ones(3)), np.kron(np.ones(3), np.eye(3))]),
            b_eq=np.ones(6),
            bounds=(0, None),
        ),
    ),
    Case("hull-3d", lambda: VertexHull(RNG_POINTS), lambda: RNG_POINTS),
    Case("hull-planar-in-4d", lambda: VertexHull(PLANAR), lambda: PLANAR),
    Case(
        "hull-segment",
        lambda: VertexHull([[0.0, 1.0, 2.0], [1.0, 1.0, 0.0], [0.5, 1.0, 1.0]]),
        lambda: np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 0.0]]),
    ),
    Case(
        "polytope-prism",
        lambda: Polytope(PRISM_A, PRISM_B),
        lambda: np.array(
            [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 2], [1, 0, 2], [0, 1, 2]], dtype=float
        ),
        lambda: HRep(PRISM_A, PRISM_B),
    ),
    Case(
        "polytope-flat",
        lambda: Polytope(FLAT_A, FLAT_B, [[1.0, -1.0, 0.0]], [0.0]),
        lambda: np.array([[0.0, 0.0, 1.0], [0.5, 0.5, 1.0]]),
        lambda: HRep(FLAT_A, FLAT_B, np.array([[1.0, -1.0, 0.0]]), np.zeros(1)),
    ),
]
