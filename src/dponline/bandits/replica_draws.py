"""Gamma and Beta draws for many replicas at once, each replica's numbers from its own generator.

Thompson sampling draws K Beta variables per replica per round. numpy draws them fast for one
generator and arrays of parameters, but each replica of a K-armed learner owns a generator (so
that replica j's run does not depend on how many replicas there are,
:func:`~dponline.rng.replica_generators`), and one call per replica per round
costs more than the rest of the round. :class:`ReplicaDraws` keeps, per replica, a block of
standard normal and uniform numbers drawn from that replica's generator, refilled when it runs
low, and turns them into Gamma variables for every replica at once by the method of Marsaglia &
Tsang (2000, "A simple method for generating gamma variables", ACM TOMS 26(3)) for a shape
a >= 1:

    d = a - 1/3, c = 1 / sqrt(9 d); take x ~ N(0, 1), u ~ U(0, 1), v = (1 + c x)^3;
    accept d v when v > 0 and log u < x^2 / 2 + d - d v + d log v, else take the next pair.

Each attempt of each variable consumes one (x, u) pair of its replica's block, in the order of
the variables (row-major), the rejected ones retried in later passes; the acceptance rate is
above 0.95 for every a >= 1. A Beta(a, b) variable is X / (X + Y) for independent
X ~ Gamma(a), Y ~ Gamma(b). A replica's numbers therefore depend only on its generator and the
parameters it was asked for, as with one numpy call per replica (the numbers differ from
numpy's own Beta sampler, which uses another method). The blocks and their read positions are
part of a learner's saved state, so that a resumed run draws what the uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dponline.privacy.arguments import (
    ArgumentError,
    checked_int_array,
    checked_real_array,
    saved_field,
)

__all__ = ["ReplicaDraws"]

#: the smallest block of numbers kept per replica
MIN_BLOCK = 1024
#: the largest Gamma shape drawn (above it the acceptance test's rounding error reaches 1)
MAX_SHAPE = 1e15


class ReplicaDraws:
    """Per-replica blocks of N(0, 1) and U(0, 1) numbers and the Gamma and Beta variables made
    from them (module docstring). ``width``: the most variables one replica asks for in one
    call (2 K for K Beta variables); the block holds at least four times as many numbers."""

    def __init__(self, replicas: int, width: int) -> None:
        self.block = max(MIN_BLOCK, 4 * int(width))
        self.normal = np.zeros((replicas, self.block))
        self.uniform = np.zeros((replicas, self.block))
        #: how many numbers of each replica's block were used (all of them: refill first)
        self.used = np.full(replicas, self.block, dtype=np.int64)

    def _reserve(
        self, generators: Sequence[np.random.Generator], rows: np.ndarray, need: np.ndarray
    ) -> None:
        """Make sure replica rows[i] has need[i] unused numbers: a replica that has fewer keeps
        its unused ones, moved to the front, and draws the rest of a block from its generator
        (normals first, then uniforms)."""
        over = self.used[rows] + need > self.block
        if not over.any():
            return
        for i in np.flatnonzero(over).tolist():
            r = int(rows[i])
            if need[i] > self.block:
                raise ValueError(f"{int(need[i])} numbers asked of a block of {self.block}")
            start = int(self.used[r])
            left = self.block - start
            self.normal[r, :left] = self.normal[r, start:]
            self.uniform[r, :left] = self.uniform[r, start:]
            gen = generators[r]
            self.normal[r, left:] = gen.standard_normal(self.block - left)
            self.uniform[r, left:] = gen.random(self.block - left)
            self.used[r] = 0

    def gamma(
        self, generators: Sequence[np.random.Generator], rows: np.ndarray, shape: np.ndarray
    ) -> np.ndarray:
        """Gamma(shape, 1) variables, shape (len(rows), m) with every shape in [1, 1e15]; row i
        from replica rows[i]'s numbers (Marsaglia & Tsang, module docstring), rows distinct.
        Above 1e15 the acceptance test d - d v + d log v loses its precision to cancellation
        (its rounding error is about d times the machine epsilon), so larger shapes are
        refused; the learners' shapes are counts of rounds."""
        rows = np.asarray(rows, dtype=np.int64)
        a = np.asarray(shape, dtype=float)
        if a.ndim != 2 or a.shape[0] != rows.size:
            raise ValueError(f"shape must be (rows, m) = ({rows.size}, m), got {a.shape}")
        if not np.all((a >= 1.0) & (a <= MAX_SHAPE)):
            raise ValueError(f"Gamma shapes must lie in [1, {MAX_SHAPE:g}] (finite)")
        if np.unique(rows).size != rows.size:
            raise ValueError("rows must be distinct (each replica draws its own numbers once)")
        d = a - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * d)
        n, m = d.shape
        # first attempt of every variable: m consecutive numbers of each replica's block
        self._reserve(generators, rows, np.full(n, m))
        at = (rows * self.block + self.used[rows])[:, None] + np.arange(m)[None, :]
        out, accept = _attempt(d, c, np.take(self.normal, at), np.take(self.uniform, at))
        self.used[rows] += m
        pending = ~accept
        while pending.any():  # retries, about 1 in 20 variables, in row-major order
            i, j = np.nonzero(pending)
            counts = np.bincount(i, minlength=n)
            self._reserve(generators, rows, counts)
            first = np.cumsum(counts) - counts
            r = rows[i]
            at_r = r * self.block + self.used[r] + np.arange(i.size) - first[i]
            self.used[rows] += counts
            x, u = np.take(self.normal, at_r), np.take(self.uniform, at_r)
            value, ok = _attempt(d[i, j], c[i, j], x, u)
            out[i[ok], j[ok]] = value[ok]
            pending[i[ok], j[ok]] = False
        return out

    def beta(
        self,
        generators: Sequence[np.random.Generator],
        rows: np.ndarray,
        a: np.ndarray,
        b: np.ndarray,
    ) -> np.ndarray:
        """Beta(a, b) variables (a, b >= 1, shape (len(rows), K)): X / (X + Y) with
        X ~ Gamma(a) and Y ~ Gamma(b) drawn together, X's first."""
        a = np.asarray(a, dtype=float)
        g = self.gamma(generators, rows, np.concatenate([a, np.asarray(b, dtype=float)], axis=1))
        k = a.shape[1]
        return g[:, :k] / (g[:, :k] + g[:, k:])

    # --- state ----------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "draw_normal": self.normal.copy(),
            "draw_uniform": self.uniform.copy(),
            "draw_used": self.used.copy(),
        }

    def prepare_load(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check saved blocks (the same shape, finite numbers, uniforms in [0, 1), positions
        within the block) and return the function that installs them."""
        shape = self.normal.shape
        normal = np.array(
            checked_real_array("saved draw_normal", saved_field(state, "draw_normal"), shape)
        )
        uniform = np.array(
            checked_real_array("saved draw_uniform", saved_field(state, "draw_uniform"), shape)
        )
        used = checked_int_array(
            "saved draw_used", saved_field(state, "draw_used"), (shape[0],), 0, self.block + 1
        )
        if np.any(uniform < 0.0) or np.any(uniform >= 1.0):
            raise ArgumentError("saved draw_uniform must lie in [0, 1)")

        def install() -> None:
            self.normal, self.uniform, self.used = normal, uniform, used

        return install


def _attempt(
    d: np.ndarray, c: np.ndarray, x: np.ndarray, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One attempt of Marsaglia & Tsang's method: (d v, accepted) for each (d, c, x, u)."""
    t = 1.0 + c * x
    v = t * t * t
    positive = v > 0.0
    log_v = np.log(np.where(positive, v, 1.0))
    with np.errstate(divide="ignore"):
        accept = positive & (np.log(u) < 0.5 * x * x + d - d * v + d * log_v)
    return d * v, accept
