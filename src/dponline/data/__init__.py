"""Real data sets shipped inside the package (see ``README.md`` in this folder for provenance)."""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

__all__ = ["DATASETS", "PRICE_DATASETS", "load_digits", "load_price_relatives", "load_prices"]

#: name -> (file, description)
DATASETS: dict[str, tuple[str, str]] = {
    "nyse_o": ("nyse_o.csv.gz", "daily price relatives of 36 NYSE stocks, 1962-1984 (5,651 days)"),
    "djia": ("djia.csv.gz", "daily price relatives of 30 Dow Jones stocks, 2001-2003 (507 days)"),
    "digits": (
        "digits.csv.gz",
        "8x8 images of handwritten digits, pixels 0-16, 10 classes (1,797)",
    ),
}

#: the data sets of daily prices (the others are not prices)
PRICE_DATASETS: tuple[str, ...] = ("nyse_o", "djia")


def load_price_relatives(name: str = "nyse_o") -> tuple[np.ndarray, list[str]]:
    """Daily price relatives close_t / close_{t-1}: an array (days, stocks) and column names.

    The files hold prices normalised by the price before the first day (p_t / p_0, as the
    universal-portfolios package distributes them), so day 1's relative is its first row.
    """
    prices, header = load_prices(name)
    previous = np.vstack([np.ones((1, prices.shape[1])), prices[:-1]])
    return prices / previous, header


def load_prices(name: str = "nyse_o") -> tuple[np.ndarray, list[str]]:
    """Normalised daily prices p_t / p_0, an array (days, stocks), and the column names."""
    if name not in PRICE_DATASETS:
        raise ValueError(f"unknown price data set {name!r}; expected one of {list(PRICE_DATASETS)}")
    path = resources.files(__name__).joinpath(DATASETS[name][0])
    with path.open("rb") as raw, gzip.open(raw, "rt") as fh:
        header = fh.readline().strip().split(",")
        values = np.loadtxt(fh, delimiter=",", ndmin=2)
    if values.shape[1] != len(header) or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"data file for {name!r} is corrupt: shape {values.shape}")
    return values, header


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The UCI optical handwritten digits test set: pixels (1797, 64) in 0..16 and labels 0..9."""
    path = resources.files(__name__).joinpath(DATASETS["digits"][0])
    with path.open("rb") as raw, gzip.open(raw, "rt") as fh:
        values = np.loadtxt(fh, delimiter=",", ndmin=2)
    pixels, labels = values[:, :64], values[:, 64]
    if (
        values.shape != (1797, 65)
        or pixels.min() < 0
        or pixels.max() > 16
        or set(np.unique(labels)) != set(range(10))
    ):
        raise ValueError(f"the digits data file is corrupt: shape {values.shape}")
    return pixels, labels.astype(int)
