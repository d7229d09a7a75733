"""Telling the user's Ctrl-C (and a SIGTERM) apart from a backend that raises ``KeyboardInterrupt``.

A real Ctrl-C arrives as SIGINT, and a CI cancel, ``timeout`` or ``docker stop`` as SIGTERM;
their Python handlers run in the main thread. While a run is in progress :func:`sigint_sets`
replaces the handlers of both (the default SIGINT one raises ``KeyboardInterrupt`` wherever the
main thread happens to be; the default SIGTERM action kills the process, report unwritten) with
one that sets a :class:`StopFlag` and records which signal arrived: the runner checks the flag
between cases and while it waits for a backend call (every :data:`POLL_S` seconds), abandons or
kills what is in flight, and returns the partial report marked ``interrupted``. Backend code runs
in other threads or processes, so a ``KeyboardInterrupt`` or ``SystemExit`` *raised by the
backend* never reaches the main thread: it is that case's ERROR, and the flag stays clear.

A second signal while the first is being honoured raises in the main thread (the impatient way
out): ``KeyboardInterrupt`` for SIGINT, :class:`Terminated` (a ``KeyboardInterrupt``) for
SIGTERM; the CLI still exits 130 or 143 without a traceback. Outside a run,
:func:`sigterm_raises` makes SIGTERM raise :class:`Terminated` where SIGINT raises
``KeyboardInterrupt``, so every command stops on SIGTERM the way it stops on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["StopFlag", "sigint_sets", "sigterm_raises", "Terminated", "POLL_S", "STOP_SIGNALS"]

#: how often a waiting runner looks at the stop flag (seconds)
POLL_S = 0.05
#: the signals that stop a run (the user's Ctrl-C; a CI cancel, ``timeout``, ``docker stop``)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop as for Ctrl-C (every handler of ``KeyboardInterrupt`` applies), exit 143."""


class StopFlag:
    """Set when the user (or the system) asked the run to stop; counts the signals received and
    remembers the first one (``"SIGINT"`` or ``"SIGTERM"``)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signals = 0
        self.signal_name: str | None = None

    def set(self, signal_name: str | None = None) -> None:
        if signal_name and self.signal_name is None:
            self.signal_name = signal_name
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    @property
    def terminated(self) -> bool:
        """The run was stopped by SIGTERM (exit 143) rather than Ctrl-C (exit 130)."""
        return self.signal_name == "SIGTERM"


def _raise_for(signum: int) -> None:
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


@contextlib.contextmanager
def sigint_sets(flag: StopFlag, *, also_raise: bool = False) -> Iterator[StopFlag]:
    """Within the block, SIGINT or SIGTERM sets ``flag`` (and, with ``also_raise``, raises
    ``KeyboardInterrupt`` / :class:`Terminated` in the main thread at once); a second signal always
    raises. The previous handlers are restored at the end. Outside the main thread (where handlers
    cannot be set) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def handler(signum: int, frame: Any) -> None:
        flag.signals += 1
        flag.set(signal.Signals(signum).name)
        if also_raise or flag.signals > 1:
            _raise_for(signum)

    previous: dict[int, Any] = {}
    try:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, handler)
    except (ValueError, OSError):
        for signum, old in previous.items():
            signal.signal(signum, old)
        yield flag
        return
    try:
        yield flag
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`Terminated` in the main thread, as SIGINT raises
    ``KeyboardInterrupt`` (main thread only; elsewhere, or where it cannot be set, a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
