"""Expert and bandit problems from real data shipped with dponline (no network)."""

from __future__ import annotations

import numpy as np

from dponline.data import load_price_relatives

__all__ = ["stock_losses"]


def stock_losses(dataset: str = "nyse_o", scale: float = 0.1) -> np.ndarray:
    """Losses in [0, 1] of holding each stock for a day: 1/2 - (relative - 1) / (2 scale),
    clipped, so a +``scale`` return costs 0, no change 1/2 and a -``scale`` return 1.

    NYSE (O): 5,651 days x 36 stocks; DJIA: 507 days x 30 stocks (see ``dponline/data``).
    """
    rel, _ = load_price_relatives(dataset)
    return np.clip(0.5 - (rel - 1.0) / (2.0 * scale), 0.0, 1.0)
