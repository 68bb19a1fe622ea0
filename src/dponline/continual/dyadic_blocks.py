"""Blocks of tree releases computed by levels (the vectorised path of
:meth:`~dponline.continual.base.ContinualCounter.step_block` for the binary tree and Honaker's
estimator).

Both trees release S_t + E_t, where the noise E_t = sum over the set bits h of t of the error
e_{h, t >> h} of the node with index t >> h at level h (node k of level h covers rounds
(k - 1) 2^h + 1 .. k 2^h and closes at round k 2^h). The errors never depend on the data.

Take a block of b = 2^m rounds after a round t0 that is a multiple of b. For a local round
s = 1 .. b - 1, the bits of t0 + s at levels >= m are those of t0 and the bits below m are those
of s, so

    E_{t0 + s} = E_{t0} + F_s,     F_s = sum_{h < m, bit h of s} e_{h, s >> h}   (local nodes),

and every node in F closes inside the block. F is built level by level: the nodes of level h
with odd local index j cover exactly the local rounds s with s >> h = j, so one broadcast add of
the level's errors over a (b / 2^{h+1}, 2, 2^h) view of F places them. The block's last round
t0 + b carries into the levels >= m; it is left to the counter's own step, after the state it
reads (the last closed node of every level below m, exact and noisy) has been set from the
block. :func:`dyadic_spans` cuts any run of rounds into such aligned blocks and single steps.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator

import numpy as np

__all__ = ["MIN_BLOCK", "AlignedBlocks", "dyadic_spans", "longest_block", "place_level"]

#: blocks shorter than this go step by step (the per-level calls would cost more than they save)
MIN_BLOCK = 8
#: largest block, in floats of a (b, replicas, dim) array: 2 MiB, so a block stays in cache
_BLOCK_FLOATS = 2**18


def longest_block(replicas: int, dim: int) -> int:
    """The longest block (a power of two >= MIN_BLOCK) whose (b, replicas, dim) noise fits
    the cache-sized work buffer."""
    b = MIN_BLOCK
    while 2 * b * replicas * dim <= _BLOCK_FLOATS:
        b *= 2
    return b


def dyadic_spans(t0: int, count: int, longest: int) -> Iterator[tuple[int, int]]:
    """Cut rounds t0 + 1 .. t0 + count into (offset, length) spans: each is either an aligned
    block (length 2^m >= :data:`MIN_BLOCK`, at most ``longest``, starting after a multiple of
    2^m) or a single step (length 1)."""
    pos = 0
    while pos < count:
        t = t0 + pos
        size = longest
        while size >= MIN_BLOCK and (t % size or size > count - pos):
            size //= 2
        size = size if size >= MIN_BLOCK else 1
        yield pos, size
        pos += size


def place_level(noise: np.ndarray, errors_of_odd_nodes: np.ndarray, level: int) -> None:
    """Add level ``level``'s node errors to the block noise ``noise`` (b, replicas, dim), row s
    for local round s (row 0 unused): node j = 2q + 1 (``errors_of_odd_nodes[q]``) covers the
    rows s with s >> level = j."""
    b = noise.shape[0]
    width = 1 << level
    view = noise.reshape(b // (2 * width), 2, width, *noise.shape[1:])
    view[:, 1] += errors_of_odd_nodes[:, None]


def last_node_sums(prefix: np.ndarray, levels: int) -> list[np.ndarray]:
    """Exact sums of the last node closed before the block's last round, for every level h
    below ``levels``: local rounds b - 2^{h+1} + 1 .. b - 2^h, from ``prefix`` (the block's
    running sums, row s = x_1 + ... + x_s, row 0 = 0)."""
    b = prefix.shape[0]
    return [prefix[b - (1 << h)] - prefix[b - (2 << h)] for h in range(levels)]


class AlignedBlocks:
    """Mixin of the tree counters: ``_step_block`` by aligned blocks (module docstring).
    A counter provides ``_step``, ``_release`` (the last release) and ``_block_levels``."""

    t: int
    replicas: int
    dim: int
    _release: np.ndarray

    @abstractmethod
    def _step(self, x: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _block_levels(self, noise: np.ndarray, exact: list[np.ndarray]) -> None:
        """Add the errors of the nodes closing in local rounds 1..b-1 to ``noise``
        (:func:`place_level`, level by level) and set the counter's state of every level
        h < m to the last of them, whose exact sum is ``exact[h]``."""

    def _pad_block(self, releases: np.ndarray) -> None:
        """Add what the counter's ``_step`` adds to the tree's releases of local rounds
        1..b-1 (``self.t`` is still t0); nothing by default."""

    def _step_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        for pos, size in dyadic_spans(self.t, xs.shape[0], longest_block(self.replicas, self.dim)):
            if size == 1:
                self.t += 1
                out[pos] = self._step(np.broadcast_to(xs[pos], (self.replicas, self.dim)))
            else:
                self._aligned_block(xs[pos : pos + size], out[pos : pos + size])

    def _aligned_block(self, xs: np.ndarray, out: np.ndarray) -> None:
        """Rounds t0 + 1 .. t0 + b - 1 by levels, then round t0 + b by ``_step``."""
        b = xs.shape[0]
        rows = xs if xs.ndim == 3 else xs[:, None, :]  # (b, replicas or 1, dim)
        prefix = np.zeros((b, *rows.shape[1:]))
        np.cumsum(rows[: b - 1], axis=0, out=prefix[1:])
        noise = np.zeros((b, self.replicas, self.dim))
        self._block_levels(noise, last_node_sums(prefix, b.bit_length() - 1))
        np.add(noise[1:], prefix[1:], out=out[: b - 1])
        out[: b - 1] += self._release
        self._release = out[b - 2].copy()  # the tree's own release, before any padding
        self._pad_block(out[: b - 1])
        self.t += b
        out[b - 1] = self._step(np.broadcast_to(xs[b - 1], (self.replicas, self.dim)))
