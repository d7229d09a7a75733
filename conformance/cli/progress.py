"""Progress of a run where the user looks: a bar on a terminal, plain lines elsewhere (stderr only).

On a terminal (stderr a TTY) one line is redrawn after every case (``\\r``). Where stderr is not a
terminal (a CI log, a pipe, a notebook) a plain line is written every ``interval`` seconds
(30 by default) on a run that lasts longer than that::

    roperef check: progress 120/542 cases (22%), family forward, 31 s elapsed, about 110 s left, 0 FAIL or ERROR so far

and, once the first ``interval / 10`` seconds are over, one estimate line when the run will
outlast ``interval``: ``roperef check: 542 cases, about 2.3 min at the rate of the first 12
(a progress line every 30 s)``. The remaining time is ``elapsed / done * (total - done)``: the
rate so far, nothing more. ``quiet`` (``-q``) silences both; nothing here is ever written to a
report file. ``clock`` is injectable so tests need no real waiting.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Progress", "DEFAULT_INTERVAL_S"]

#: seconds between two plain progress lines when stderr is not a terminal
DEFAULT_INTERVAL_S = 30.0
_BAD = ("FAIL", "ERROR")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


class Progress:
    """Called with each judged case's result; :meth:`close` when the run ends."""

    def __init__(self, total: int, stream: Any = None, *, quiet: bool = False, interval: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if not (interval > 0):
            raise ValueError(f"interval={interval!r}: must be > 0 seconds")
        self.total, self.done, self.failed = total, 0, 0
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.tty and not quiet  # the bar
        self.lines = not self.tty and not quiet  # the plain lines
        self.interval, self.clock = float(interval), clock
        self.t0 = clock()
        self.next_line = self.t0 + self.interval
        self.estimated = False
        self.family = ""

    def __call__(self, result: Any) -> None:
        self.done += 1
        self.failed += getattr(result, "status", None) in _BAD
        self.family = str(getattr(result, "family", "") or self.family)
        if self.enabled:
            width = 30
            fill = int(width * self.done / max(self.total, 1))
            self._write(f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} {self.failed} failing "
                        f"{self.clock() - self.t0:5.1f}s")
        elif self.lines:
            self._plain()

    def _left(self, elapsed: float) -> float:
        return elapsed / self.done * max(self.total - self.done, 0)

    def _plain(self) -> None:
        now = self.clock()
        elapsed = now - self.t0
        if not self.estimated and elapsed >= self.interval / 10 and self.done < self.total:
            self.estimated = True
            if elapsed + self._left(elapsed) > self.interval:
                self._write(f"roperef check: {self.total} cases, about {_duration(elapsed + self._left(elapsed))} at the "
                            f"rate of the first {self.done} (a progress line every {_duration(self.interval)})\n")
        if now >= self.next_line and self.done < self.total:
            self.next_line = now + self.interval
            self._write(f"roperef check: progress {self.done}/{self.total} cases ({100 * self.done // max(self.total, 1)}%), "
                        f"family {self.family or '?'}, {_duration(elapsed)} elapsed, about {_duration(self._left(elapsed))} "
                        f"left, {self.failed} FAIL or ERROR so far\n")

    def _write(self, text: str) -> None:
        """The bar's own ``\\r`` must reach the terminal (a guarded stream escapes other writers')."""
        getattr(self.stream, "write_raw", self.stream.write)(text)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._write("\r" + " " * 79 + "\r")
