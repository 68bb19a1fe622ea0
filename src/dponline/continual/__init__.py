"""Continual counting: private prefix sums over a stream (one protocol, several mechanisms).

* :class:`BinaryTreeCounter`: the binary tree (Dwork et al. 2010; Jain et al. 2012).
* :class:`PaddedTreeCounter`: the tree with identically distributed noise
  (Agarwal & Singh 2017, Algorithm 2), used by Agarwal & Singh and Ene et al.
* :class:`HonakerCounter`: Honaker's online variance-weighted estimator on the tree.
* :class:`SqrtFactorizationCounter`: the square-root factorisation of the prefix-sum matrix.
* :class:`BLTCounter`: a buffered linear Toeplitz factorisation, nearly the square root's
  error in O(buffers x d) memory.
* :class:`ScaledSqrtCounter`: the square root rescaled by a diagonal (after Henzinger, Kalinin &
  Upadhyay 2025), 0.89x the square root's largest variance at T = 1024.
* :class:`KaryTreeCounter`: the k-ary tree with negative digits (Andersson, Pagh, Steiner &
  Torkamani 2025), for pure DP 0.23x Honaker's largest variance at T = 1024.
* :class:`SmoothBinaryCounter`: the smooth binary mechanism (Andersson & Pagh 2023), the same
  variance at every step.
* :class:`AnytimeFactorizationCounter`: counters without a horizon: the tapered square root
  (ours) and Jacobsen & Fawaz's factorisation (2025); :class:`AnytimeBLTCounter`: one BLT run
  without a horizon in O(buffers x d) memory (ours, :func:`make_anytime_blt`);
  :class:`DoublingCounter`: any fixed-horizon counter over doubling blocks.

:func:`build_counter` chooses and builds the counter of a run (exact sums for ``budget=None``;
``horizon=None`` for the anytime one),
:func:`make_counter` one calibrated to a privacy budget for a declared input set
(:mod:`dponline.continual.calibration`: the counters' paper and tight calibrations), and
:func:`choose_mechanism` says which mechanism a calibration takes.
"""

from dponline.continual.anytime_blt import AnytimeBLTCounter, make_anytime_blt
from dponline.continual.anytime_factorization import (
    AnytimeFactorizationCounter,
    make_anytime_counter,
    make_anytime_factorization,
)
from dponline.continual.base import ContinualCounter, HorizonExceededError
from dponline.continual.binary_tree import BinaryTreeCounter
from dponline.continual.blt import BLTCounter
from dponline.continual.calibration import CounterCalibrator, calibrate_counter
from dponline.continual.factory import build_counter, make_counter
from dponline.continual.honaker import HonakerCounter
from dponline.continual.kary_tree import KaryTreeCounter
from dponline.continual.matrix_factorization import SqrtFactorizationCounter
from dponline.continual.padded_tree import PaddedTreeCounter
from dponline.continual.registry import MECHANISMS, get_mechanism
from dponline.continual.scaled_sqrt import ScaledSqrtCounter
from dponline.continual.selection import best_mechanism, choose_mechanism
from dponline.continual.smooth_binary import SmoothBinaryCounter
from dponline.continual.unknown_horizon import DoublingCounter

__all__ = [
    "MECHANISMS",
    "AnytimeBLTCounter",
    "AnytimeFactorizationCounter",
    "BLTCounter",
    "BinaryTreeCounter",
    "ContinualCounter",
    "CounterCalibrator",
    "DoublingCounter",
    "HonakerCounter",
    "HorizonExceededError",
    "KaryTreeCounter",
    "PaddedTreeCounter",
    "ScaledSqrtCounter",
    "SmoothBinaryCounter",
    "SqrtFactorizationCounter",
    "best_mechanism",
    "build_counter",
    "calibrate_counter",
    "choose_mechanism",
    "get_mechanism",
    "make_anytime_blt",
    "make_anytime_counter",
    "make_anytime_factorization",
    "make_counter",
]
