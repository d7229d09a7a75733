"""Telling the user's Ctrl-C apart from a backend that raises ``KeyboardInterrupt``.

A real Ctrl-C arrives as SIGINT, whose Python handler runs in the main thread. While a run
is in progress :func:`sigint_sets` replaces the default handler (which raises
``KeyboardInterrupt`` wherever the main thread happens to be) with one that sets a
:class:`StopFlag`: the runner checks the flag between cases and while it waits for a backend
call (every :data:`POLL_S` seconds), abandons or kills what is in flight, and returns the
partial report marked ``interrupted``. Backend code runs in other threads or processes, so a
``KeyboardInterrupt`` or ``SystemExit`` *raised by the backend* never reaches the main thread:
it is that case's ERROR, and the flag stays clear.

A second Ctrl-C while the first is being honoured raises ``KeyboardInterrupt`` in the main
thread (the impatient way out; the CLI still exits 130 without a traceback).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["StopFlag", "sigint_sets", "POLL_S"]

#: how often a waiting runner looks at the stop flag (seconds)
POLL_S = 0.05


class StopFlag:
    """Set when the user asked the run to stop (Ctrl-C); counts the SIGINTs received."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signals = 0

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


@contextlib.contextmanager
def sigint_sets(flag: StopFlag, *, also_raise: bool = False) -> Iterator[StopFlag]:
    """Within the block, SIGINT sets ``flag`` (and, with ``also_raise``, raises ``KeyboardInterrupt``
    in the main thread as usual); a second SIGINT always raises. The previous handler is restored
    at the end. Outside the main thread (where handlers cannot be set) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def handler(signum: int, frame: Any) -> None:
        flag.signals += 1
        flag.set()
        if also_raise or flag.signals > 1:
            raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except (ValueError, OSError):
        yield flag
        return
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
