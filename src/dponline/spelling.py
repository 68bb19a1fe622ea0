"""The "did you mean" hint of an error message that names an unknown choice: the closest known
name, shared by the learner registry (:mod:`dponline.registry`), the environment catalogue
(:mod:`dponline.environments.catalogue`) and the experiment specs. Imports nothing from the
package, so any layer may use it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """ " (did you mean 'x'?)" for the closest of ``choices`` to ``word``, or ""."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
