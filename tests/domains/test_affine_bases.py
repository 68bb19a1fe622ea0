"""Canonical bases of affine hulls: :func:`~dponline.domains.affine.canonical_basis` depends on
the subspace alone, so a LAPACK build that returns another basis of a null space or a span
(any rotation where singular values repeat) changes neither a domain's hull basis nor its
interior point, nor anything a learner computes from them under a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ortho_group

from dponline.domains import Polytope, VertexHull
from dponline.domains import affine as affine_module
from dponline.domains.affine import canonical_basis, orthonormal_null_space, orthonormal_span


def _rotated(basis: np.ndarray, seed: int) -> np.ndarray:
    """Another orthonormal basis of the same subspace: a random rotation and reflection."""
    k = basis.shape[1]
    if k < 2:
        return -basis
    return basis @ ortho_group.rvs(k, random_state=seed)


def _check_canonical(basis: np.ndarray, seed: int) -> np.ndarray:
    got = canonical_basis(basis)
    n, k = basis.shape
    assert got.shape == (n, k)
    np.testing.assert_allclose(got.T @ got, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(got @ got.T, basis @ basis.T, atol=1e-12)  # the same subspace
    np.testing.assert_allclose(canonical_basis(_rotated(basis, seed)), got, atol=1e-11)
    return got


def test_hand_cases() -> None:
    # the line spanned by (1, 1) / sqrt 2: its own coordinate (the first) positive
    line = np.array([[-1.0], [-1.0]]) / np.sqrt(2.0)
    np.testing.assert_allclose(canonical_basis(line), -line)
    # the plane x_3 = 0 in R^3: e_1, e_2 whatever basis of it is given
    plane = np.array([[np.cos(0.4), -np.sin(0.4)], [np.sin(0.4), np.cos(0.4)], [0.0, 0.0]])
    np.testing.assert_allclose(canonical_basis(plane), np.eye(3)[:, :2], atol=1e-15)
    # the sum-zero plane of R^3: P e_1 = (2, -1, -1) / 3 first, then the rest of P e_2
    # (its mass 1/2 is above 1/e of the largest), (0, 1, -1) / sqrt 2
    helmert = np.array([[1.0, 1.0], [-1.0, 1.0], [0.0, -2.0]]) / np.array([np.sqrt(2), np.sqrt(6)])
    want = np.column_stack([[2.0, -1.0, -1.0] / np.sqrt(6.0), [0.0, 1.0, -1.0] / np.sqrt(2.0)])
    np.testing.assert_allclose(_check_canonical(helmert, 0), want, atol=1e-15)
    # the whole space is the identity, the zero space stays empty
    np.testing.assert_array_equal(canonical_basis(ortho_group.rvs(4, random_state=1)), np.eye(4))
    assert canonical_basis(np.zeros((5, 0))).shape == (5, 0)


def test_a_coordinate_outside_the_subspace_is_passed_over() -> None:
    # span(e_2, e_3) in R^4: P e_1 = 0 must not be taken (its mass is 0, not 1/e of 1)
    basis = _rotated(np.eye(4)[:, 1:3], seed=3)
    np.testing.assert_allclose(canonical_basis(basis), np.eye(4)[:, 1:3], atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 9),
    data=st.data(),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_subspaces(n: int, data: st.DataObject, seed: int) -> None:
    k = data.draw(st.integers(1, n - 1))
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(n, k)))[0]
    _check_canonical(basis, seed)


def test_symmetric_subspaces_whose_singular_values_repeat() -> None:
    """The cases where a LAPACK build chooses: every null space of dimension 2 or more, and the
    spans of symmetric point sets (the cube's centred vertices have one singular value)."""
    cube = np.array(np.meshgrid(*[[0.0, 1.0]] * 3)).reshape(3, -1).T
    for seed in range(5):
        _check_canonical(orthonormal_span(cube - cube.mean(0), 3), seed)
        _check_canonical(orthonormal_null_space(np.ones((1, 5)), 5), seed)
        blocks = np.array([[1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]])
        _check_canonical(orthonormal_null_space(blocks, 6), seed)


def _rotate_every_decomposition(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Make the decompositions behave as another LAPACK build may: every null space and every
    row-space basis rotated (and reflected) within its subspace."""
    calls = {"n": 0}
    null_space, row_space = affine_module.null_space, affine_module._row_space

    def rotated(decompose):
        def other(*args, **kwargs):
            calls["n"] += 1
            return _rotated(decompose(*args, **kwargs), seed=calls["n"])

        return other

    monkeypatch.setattr(affine_module, "null_space", rotated(null_space))
    monkeypatch.setattr(affine_module, "_row_space", rotated(row_space))
    return calls


def _domains():
    # a rectangle (sides 1 and 2) in a plane of R^4 given by two equalities: its Chebyshev
    # centre is a segment, and the LP's choice of a point on it depends on the coordinates
    a = np.vstack([np.eye(4), -np.eye(4)])
    b = np.array([1.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    c = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 0.0, 0.0]])
    yield "polytope", lambda: Polytope(a, b, c=c, e=np.array([2.0, 0.0]))
    rect = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 1.0], [2.0, 1.0, 1.0]])
    yield "rectangle", lambda: VertexHull(rect)
    cube = np.array(np.meshgrid(*[[0.0, 1.0]] * 3)).reshape(3, -1).T
    yield "cube", lambda: VertexHull(np.hstack([cube, cube[:, :1]]))


@pytest.mark.parametrize(("name", "build"), list(_domains()), ids=[n for n, _ in _domains()])
def test_a_lapack_returning_other_bases_changes_no_geometry(
    name: str, build, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain = build()
    basis, centre, radius = domain.hull_basis(), domain.interior_point(), domain.inscribed_radius
    calls = _rotate_every_decomposition(monkeypatch)
    other = build()
    assert calls["n"] > 0, name  # the rotated decompositions were used
    np.testing.assert_allclose(other.hull_basis(), basis, atol=1e-12)
    np.testing.assert_allclose(other.interior_point(), centre, atol=1e-9)
    assert other.inscribed_radius == pytest.approx(radius, rel=1e-9)
