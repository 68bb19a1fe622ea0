"""Continual counting: private prefix sums over a stream (one protocol, several mechanisms).

* :class:`BinaryTreeCounter`: the binary tree (Dwork et al. 2010; Jain et al. 2012).
* :class:`PaddedTreeCounter`: the tree with identically distributed noise
  (Agarwal & Singh 2017, Algorithm 2), used by Agarwal & Singh and Ene et al.
* :class:`HonakerCounter`: Honaker's online variance-weighted estimator on the tree.
* :class:`SqrtFactorizationCounter`: the square-root factorisation of the prefix-sum matrix.
* :class:`BLTCounter`: a buffered linear Toeplitz factorisation, nearly the square root's
  error in O(buffers x d) memory.
* :class:`DoublingCounter`: any of them over an unknown horizon.

:func:`build_counter` chooses and builds the counter of a run (exact sums for ``budget=None``),
:func:`make_counter` one calibrated to a privacy budget for a declared input set
(:mod:`dponline.continual.calibration`: the counters' paper and tight calibrations), and
:func:`choose_mechanism` says which mechanism a calibration takes.
"""

from dponline.continual.base import ContinualCounter, HorizonExceededError
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.continual.blt import BLTCounter
from dponline.continual.calibration import CounterCalibrator, calibrate_counter
from dponline.continual.factory import build_counter, make_counter
from dponline.continual.honaker import HonakerCounter
from dponline.continual.matrix_factorization import SqrtFactorizationCounter
from dponline.continual.padded_tree import PaddedTreeCounter
from dponline.continual.registry import MECHANISMS, get_mechanism
from dponline.continual.selection import best_mechanism, choose_mechanism
from dponline.continual.unknown_horizon import DoublingCounter

__all__ = [
    "MECHANISMS",
    "BLTCounter",
    "BinaryTreeCounter",
    "ContinualCounter",
    "CounterCalibrator",
    "DoublingCounter",
    "HonakerCounter",
    "HorizonExceededError",
    "PaddedTreeCounter",
    "SqrtFactorizationCounter",
    "best_mechanism",
    "build_counter",
    "calibrate_counter",
    "choose_mechanism",
    "get_mechanism",
    "make_counter",
]
