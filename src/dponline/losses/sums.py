"""Running sums sum_s l_s of :class:`~dponline.losses.smooth.SmoothLoss` terms, for the Newton
solves of CTRL (Agarwal, Kale, Singh & Thakurta 2023, Algorithms 1 and 2: a switch solves for
x*(l_{1:t}, Z) on the sum of all losses so far).

:class:`LossSum` keeps the quadratic parts and the squared link's terms as sufficient statistics
(O(d^2) memory and time), the other GLM rows in a growing buffer (gradient and Hessian at k points
cost O(k n d^2) for n rows).
"""

from __future__ import annotations

import numpy as np

from dponline.losses.links import GLMLink, SquaredLink, link_by_name
from dponline.losses.smooth import SmoothLoss

__all__ = ["LossSum"]


class LossSum:
    """sum_s l_s of :class:`SmoothLoss` terms, evaluated at many points at once (module
    docstring). ``add`` appends one loss; ``value``, ``gradient``, ``hessian`` take points of
    shape (k, d)."""

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self.count = 0
        self._a = np.zeros((self.dim, self.dim))
        self._aa = np.zeros(self.dim)  # sum A a
        self._aaa = 0.0  # sum a' A a
        self._rows: dict[GLMLink, list] = {}  # link -> [V buffer, y buffer, n]

    def add(self, loss: SmoothLoss) -> None:
        if loss.dim != self.dim:
            raise ValueError(f"loss has dimension {loss.dim}, the sum {self.dim}")
        self.count += 1
        if loss.curvature is not None:
            a = loss._a
            self._a += a
            self._aa += a @ loss.anchor
            self._aaa += float(loss.anchor @ a @ loss.anchor)
        if isinstance(loss.link, SquaredLink):
            # (<v, x> - y)^2 / 2 is the quadratic with A = v v', A a = y v, a' A a = y^2: kept
            # in the sufficient statistics, so a sum of n squared losses costs O(d^2), not O(n d^2)
            self._a += np.outer(loss.v, loss.v)
            self._aa += loss.y * loss.v
            self._aaa += loss.y * loss.y
        elif loss.link is not None:
            entry = self._rows.get(loss.link)
            if entry is None:
                entry = self._rows[loss.link] = [np.empty((16, self.dim)), np.empty(16), 0]
            v, y, n = entry
            if n == len(y):
                v = np.concatenate([v, np.empty_like(v)])
                y = np.concatenate([y, np.empty_like(y)])
            v[n], y[n] = loss.v, loss.y
            entry[:] = [v, y, n + 1]

    def _glm(self):
        for link, (v, y, n) in self._rows.items():
            if n:
                yield link, v[:n], y[:n]

    def value(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        out = 0.5 * np.einsum("ki,ij,kj->k", x, self._a, x) - x @ self._aa + 0.5 * self._aaa
        for link, v, y in self._glm():
            out = out + link.value(x @ v.T, y).sum(axis=-1)
        return out

    def gradient(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        out = x @ self._a - self._aa
        for link, v, y in self._glm():
            out = out + link.d1(x @ v.T, y) @ v
        return out

    def hessian(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        out = np.broadcast_to(self._a, (x.shape[0], self.dim, self.dim)).copy()
        for link, v, y in self._glm():
            w = link.d2(x @ v.T, y)  # (k, n)
            for i in range(len(x)):  # V' diag(w_i) V by BLAS, point by point
                out[i] += (v.T * w[i]) @ v
        return out

    def state_dict(self) -> dict:
        return {
            "count": self.count,
            "a": self._a.copy(),
            "aa": self._aa.copy(),
            "aaa": self._aaa,
            "links": [(link.name, link.options()) for link in self._rows],
            "rows": [(v[:n].copy(), y[:n].copy()) for v, y, n in self._rows.values()],
        }

    def load_state_dict(self, state: dict) -> None:
        self.count = int(state["count"])
        self._a = np.array(state["a"], dtype=float)
        self._aa = np.array(state["aa"], dtype=float)
        self._aaa = float(state["aaa"])
        self._rows = {
            link_by_name(name, **options): [
                np.array(v, dtype=float),
                np.array(y, dtype=float),
                len(y),
            ]
            for (name, options), (v, y) in zip(state["links"], state["rows"], strict=True)
        }
