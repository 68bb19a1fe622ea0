"""dponline: differentially private online learning.

Learners that decide every round from a stream of sensitive data and whose whole sequence of
decisions is differentially private, on top of continual counting mechanisms with exact variances
and tight, checked privacy accounting.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dponline")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
