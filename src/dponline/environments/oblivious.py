"""What every environment over a fixed (oblivious) loss matrix shares: validation of the matrix,
its shape, regret against the best fixed decision in hindsight (computed once) and the
:class:`~dponline.environments.base.Environment` state of an environment without any."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dponline.domains.base import checked_domain
from dponline.environments.base import at_rounds
from dponline.privacy.bounds import InputBounds, check_finite
from dponline.protocol import LossVectorFeedback

__all__ = ["LinearFullInformation", "ObliviousLosses", "Stateless"]


class Stateless:
    """Mixin: the :class:`~dponline.environments.base.Environment` state of an environment whose
    rounds change nothing (losses fixed in advance, no context): an empty dict. ``name`` names
    the environment in errors."""

    reveals_context: ClassVar[bool] = False
    name: str

    def state_dict(self) -> dict[str, Any]:
        """Empty: rounds do not change an oblivious environment."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Accept the empty state of :meth:`state_dict` (anything else is another environment's)."""
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict, got {type(state).__name__}")
        if state:
            raise ValueError(
                f"{self.name!r} has oblivious losses and no state; expected an empty state, "
                f"got keys {sorted(map(str, state))}"
            )


class ObliviousLosses(Stateless):
    """Mixin for dataclass environments with fields ``losses`` (T, N) and ``name``.

    A subclass's ``__post_init__`` calls :meth:`_validate_losses` and then sets ``self._best``
    to the best fixed decision's cumulative loss for t = 1..T (its closed form or an LP).
    The losses are fixed in advance and reveal no context, so there is no state to save.
    """

    losses: np.ndarray
    _best: np.ndarray

    def _validate_losses(
        self, low: float | None = None, high: float | None = None, dim: int | None = None
    ) -> None:
        self.losses = check_finite(self.losses, f"losses of {self.name!r}")
        if self.losses.ndim != 2 or min(self.losses.shape) < 1:
            raise ValueError(f"losses must be a (T, N) matrix, got shape {self.losses.shape}")
        if dim is not None and self.losses.shape[1] != dim:
            raise ValueError(f"losses must have {dim} columns, got shape {self.losses.shape}")
        lo, hi = float(self.losses.min()), float(self.losses.max())
        if (low is not None and lo < low) or (high is not None and hi > high):
            raise ValueError(
                f"losses of {self.name!r} lie in [{lo}, {hi}], outside the declared [{low}, {high}]"
            )

    @property
    def horizon(self) -> int:
        return int(self.losses.shape[0])

    @property
    def dim(self) -> int:
        return int(self.losses.shape[1])

    def _linear_over(self, domain: Any, loss_bounds: InputBounds | None) -> None:
        """Linear losses <l_t, x> over ``domain``: check the domain, the matrix and the
        declared loss set, and set the best fixed point's cumulative loss, one oracle call per
        round on the cumulative loss."""
        domain = checked_domain(domain)
        self._validate_losses(dim=domain.dim)
        if loss_bounds is not None:
            loss_bounds.check(self.losses, what=f"losses of {self.name!r}")
        self._best = domain.min_linear(np.cumsum(self.losses, axis=0))

    def best_cumulative_loss(self) -> np.ndarray:
        """The best fixed decision's cumulative loss in hindsight, for t = 1..T."""
        return self._best

    def regret(self, cumulative_loss: np.ndarray, rounds: np.ndarray | None = None) -> np.ndarray:
        """Regret curves from cumulative losses (..., T), or at the 1-based ``rounds``."""
        return cumulative_loss - at_rounds(self._best, rounds)


class LinearFullInformation(ObliviousLosses):
    """Full information over a fixed loss matrix with linear losses: round t shows l_t and
    charges each replica <x, l_t>. The losses do not depend on the decisions, so a learner
    that can play a block of rounds at once (:class:`~dponline.protocol.BlockPlayer`) may be
    run a block at a time (the round loop's fast path): the environment is
    :class:`~dponline.environments.base.ObliviousLinearLosses`, :meth:`loss_vectors` hands out
    a block's losses and :meth:`block_losses` charges the block."""

    def round(self, t: int, action: np.ndarray) -> tuple[LossVectorFeedback, np.ndarray]:
        """Round t (0-indexed): the feedback and each replica's loss <x, l_t>."""
        loss = self.losses[t]
        return LossVectorFeedback(loss), np.asarray(action) @ loss

    def loss_vectors(self, start: int, stop: int) -> np.ndarray:
        """The loss vectors of rounds start..stop-1 (0-indexed), shape (stop - start, dim)."""
        return self.losses[start:stop]

    def block_losses(self, t: int, actions: np.ndarray) -> np.ndarray:
        """Each replica's loss in rounds t .. t + b - 1 (0-indexed) for ``actions`` of shape
        (b, replicas, dim): shape (b, replicas)."""
        actions = np.asarray(actions, dtype=float)
        return np.einsum("brn,bn->br", actions, self.losses[t : t + actions.shape[0]])
