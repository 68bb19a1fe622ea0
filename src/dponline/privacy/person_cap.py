"""Which rounds may carry a person's data: :class:`ParticipationCap`.

A guarantee over one person (``participations`` k, ``min_separation`` b: at most k rounds, any
two at least b apart; :mod:`dponline.privacy.guarantee`) protects a person only if the stream
really holds at most k of their rounds, b apart. A learner cannot know who contributed a round,
so the deployment enforces it: before a round's input reaches the learner, ask the cap whether
the round may carry that person's data; if not, feed an input that does not depend on the
person (a fixed loss or reward inside the declared bounds) in its place. The guarantee then
covers every person, whatever their number of visits: the inputs that depend on a person are
at most k rounds at least b apart, as the proof assumes.

What is protected and what is not: the guarantee is over the contents of a person's rounds;
the schedule (which rounds a person arrives in, and so which of them the cap admits) is taken
as public, as the neighbouring relation fixes it. A deployment that drops rounds instead of
neutralising them must drop them by a rule that does not depend on who takes part.

The cap records, per person, how many rounds it admitted and the last one: memory grows with
the number of people seen, and the record (who came when) is as sensitive as the stream's
schedule; :meth:`ParticipationCap.state_dict` saves it beside the learner's checkpoint.

>>> cap = ParticipationCap(participations=2, min_separation=3)
>>> [cap.admit("ann", t) for t in (0, 1, 3, 9)]   # 1 is too soon; 9 is past the cap
[True, False, True, False]
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from dponline.privacy.arguments import ArgumentError
from dponline.privacy.guarantee import PrivacyGuarantee, check_participation

__all__ = ["ParticipationCap"]


class ParticipationCap:
    """Admit at most ``participations`` rounds of each person, any two at least
    ``min_separation`` apart (|i - j| >= b; b = 1 allows consecutive rounds), the unit of a
    user-level guarantee (module docstring).

    ``admit(person, t)`` for round ``t`` (the learner's round index, non-decreasing across
    calls): True when the round may carry the person's data (it is then counted), False when
    the round must carry an input that does not depend on the person. A round refused does not
    count, so a person arriving again after ``min_separation`` rounds is admitted. A call for
    a person's round already admitted is refused (a round index that does not advance, a
    timestamp or a batch number, must not let a person's later rounds in), except a service's
    retry said so: ``retry=True`` repeating the last call admitted (no other call between)
    gets True again, the round counted once.

    A person is their id as given, compared by equality: ``7`` and ``"7"`` are two people (give
    one type of id); a numpy integer is taken as the Python integer it holds.
    """

    def __init__(self, participations: int, min_separation: int = 1) -> None:
        # one round per person: the separation means nothing (check_participation gives 1)
        self.participations, self.min_separation = check_participation(
            participations, min_separation
        )
        self._count: dict[Hashable, int] = {}
        self._last: dict[Hashable, int] = {}
        self._round = -1
        self._previous: tuple[Hashable, int] | None = None  # the last call admitted

    @classmethod
    def for_guarantee(cls, guarantee: PrivacyGuarantee) -> ParticipationCap:
        """The cap a learner's guarantee needs: its ``participations`` and ``min_separation``
        (one round per person for an event-level guarantee; any k rounds for a person protected
        by group privacy, whose guarantee says ``min_separation`` 1)."""
        if not isinstance(guarantee, PrivacyGuarantee):
            raise TypeError(
                f"guarantee must be a PrivacyGuarantee (a private learner's privacy), got "
                f"{guarantee!r}"
            )
        return cls(guarantee.participations, guarantee.min_separation)

    def admit(self, person: Hashable, t: int, *, retry: bool = False) -> bool:
        """Whether round ``t`` may carry ``person``'s data (counted if so). ``retry=True`` says
        this call repeats the last one, whose answer was lost: pass it only then, never as a
        default (with a round index that does not advance, a blanket ``retry=True`` admits
        every consecutive visit of one person as the same round)."""
        if not isinstance(retry, bool):
            raise ArgumentError(f"retry must be True or False, got {retry!r}")
        if isinstance(t, bool | np.bool_) or not isinstance(t, int | np.integer) or t < 0:
            raise ArgumentError(f"t must be a round index, an integer >= 0, got {t!r}")
        t = int(t)  # a numpy integer too (a learner's round counter)
        if t < self._round:
            raise ArgumentError(
                f"rounds come in order: round {t} after round {self._round} (a person's "
                "separation is measured between the rounds given)"
            )
        if isinstance(person, np.generic):  # a numpy id: its Python value (JSON-serialisable)
            person = person.item()
        try:
            count = self._count.get(person, 0)
        except TypeError:
            raise ArgumentError(f"person must be hashable (an id), got {person!r}") from None
        last = self._last.get(person)
        if retry and self._previous == (person, t):  # the call just admitted, asked again
            return True
        self._round = t
        self._previous = None
        if count >= self.participations or (last is not None and t - last < self.min_separation):
            return False  # (a round admitted, asked again unless as a retry: t - last = 0)
        self._count[person] = count + 1
        self._last[person] = t
        self._previous = (person, t)
        return True

    def admitted(self, person: Hashable) -> int:
        """How many of ``person``'s rounds were admitted so far."""
        return self._count.get(person, 0)

    @property
    def people(self) -> int:
        """How many people have had a round admitted."""
        return len(self._count)

    def state_dict(self) -> dict[str, Any]:
        """The record, for a checkpoint beside the learner's (restored with
        :meth:`load_state_dict`): the cap, the last round given, per person its admitted count
        and last admitted round, as lists, and the last call if it was admitted (so a retry
        after a restart gets its answer again; person ids as given: a JSON checkpoint needs
        strings or integers)."""
        people = list(self._count)
        return {
            "participations": self.participations,
            "min_separation": self.min_separation,
            "round": self._round,
            "people": people,
            "counts": [self._count[p] for p in people],
            "last": [self._last[p] for p in people],
            "previous": None if self._previous is None else list(self._previous),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s record; one saved under another cap is refused (its
        counts would not bound this cap's rounds)."""
        unit = (state.get("participations"), state.get("min_separation"))
        if unit != (self.participations, self.min_separation):
            raise ValueError(
                f"the state is of a cap of {unit[0]} rounds {unit[1]} apart; this cap admits "
                f"{self.participations} rounds {self.min_separation} apart"
            )
        people, counts, last = state["people"], state["counts"], state["last"]
        if not len(people) == len(counts) == len(last):
            raise ValueError("the state's people, counts and last rounds differ in length")
        round_ = state.get("round")
        if isinstance(round_, bool) or not isinstance(round_, int) or round_ < -1:
            raise ValueError(f"the state's round must be an integer >= -1, got {round_!r}")
        try:
            distinct = len(set(people)) == len(people)
        except TypeError:
            raise ValueError("the state's people must be hashable ids") from None
        if not distinct:  # a later entry would replace an earlier count: a person let in again
            raise ValueError("the state names a person twice")
        for p, c, t in zip(people, counts, last, strict=True):
            if not (isinstance(c, int) and 1 <= c <= self.participations):
                raise ValueError(f"person {p!r}: count {c!r} outside 1..{self.participations}")
            if not (isinstance(t, int) and 0 <= t <= round_):
                raise ValueError(f"person {p!r}: last round {t!r} outside 0..{round_}")
        last_of = dict(zip(people, last, strict=True))
        previous = state.get("previous")  # absent from states saved before it was recorded
        if previous is not None:  # the call admitted last: a person admitted at the last round
            pair = isinstance(previous, list | tuple) and len(previous) == 2
            person, t = previous if pair else (None, None)
            try:
                admitted_at = last_of.get(person) if pair else None
            except TypeError:  # an id that is not hashable
                admitted_at = None
            if admitted_at is None or isinstance(t, bool) or admitted_at != t or t != round_:
                raise ValueError(
                    f"the state's last call {previous!r} is not the round admitted last"
                )
            previous = (person, t)
        # everything checked: now install (a refused state leaves the cap as it was)
        self._count = {p: int(c) for p, c in zip(people, counts, strict=True)}
        self._last = {p: int(t) for p, t in last_of.items()}
        self._round = int(round_)
        self._previous = previous

    def __repr__(self) -> str:
        return (
            f"ParticipationCap(participations={self.participations}, "
            f"min_separation={self.min_separation}; {self.people} people)"
        )
