"""Warnings that point at the user's code.

A warning raised deep inside a calibration (a ``paper`` calibration proving less than asked, a
first phase that fills the horizon) is only useful if Python reports the line that built the
learner: the user's script, test or notebook cell, not the factory or the registry between
them. The number of dponline frames in between depends on the road taken (a learner built
directly, through :func:`~dponline.registry.build_learner`, through a subclass), so a fixed
``stacklevel`` points at the wrong line on some of them. :func:`warn_caller` counts the frames
instead: the warning is attributed to the first frame outside the ``dponline`` package (on
Python 3.12 ``warnings.warn(..., skip_file_prefixes=...)`` does the same).
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn_caller"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _inside_package(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


def warn_caller(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the innermost caller outside dponline
    (the outermost dponline frame when every caller is inside it, as under ``dponline``'s CLI).
    A Warning instance as ``message`` keeps its own class, as with ``warnings.warn``."""
    frame = sys._getframe(1)
    level = 2  # stacklevel 2 names warn_caller's caller, the frame held in `frame`
    while frame.f_back is not None and _inside_package(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
