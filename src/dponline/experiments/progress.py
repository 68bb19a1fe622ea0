"""Progress of long commands (demo, run, audit, reproduce) and how they stop on Ctrl-C.

:class:`Progress` is the one progress facility: a tqdm bar on stderr when stderr is a terminal,
and otherwise (a file, a pipe, a CI log) a plain line every ``every`` seconds and one at the
end, so that a log shows the run is alive without carriage-return clutter.

:class:`Interrupted` is what a sweep raises when the user presses Ctrl-C: the finished tasks
and their checkpoints are kept, and the command line prints one line saying how to resume.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

__all__ = ["Interrupted", "Progress"]


class Interrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C after ``done`` of ``total`` tasks (finished ones are kept).
    A :class:`KeyboardInterrupt`, so that code which stops on Ctrl-C still stops."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} tasks")
        self.done, self.total = done, total


class Progress:
    """Count finished units of work (``update``) and show it; ``close`` when done.

    ``enabled=False`` shows nothing. ``stream`` defaults to stderr; ``every`` is the interval
    of the plain lines written when the stream is not a terminal.
    """

    def __init__(
        self,
        total: int,
        *,
        unit: str = "tasks",
        enabled: bool = True,
        stream: IO[str] | None = None,
        every: float = 15.0,
    ) -> None:
        self.total, self.done, self.unit = int(total), 0, unit
        self.stream = sys.stderr if stream is None else stream
        self.enabled = bool(enabled) and self.total > 0
        self.every = float(every)
        self.start = self._last = time.perf_counter()
        self._bar: Any = None
        isatty = getattr(self.stream, "isatty", None)
        if self.enabled and isatty is not None and isatty():
            from tqdm import tqdm

            self._bar = tqdm(
                total=self.total,
                unit=unit.rstrip("s") or unit,
                file=self.stream,
                desc="dponline",
                leave=True,
                dynamic_ncols=True,
            )

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last >= self.every or self.done >= self.total:
            self._last = now
            self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self.start
        left = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        tail = "" if self.done >= self.total else f", about {left:.0f} s left"
        print(
            f"[dponline] {self.done}/{self.total} {self.unit} done, {elapsed:.0f} s{tail}",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
