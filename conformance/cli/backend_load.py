"""Load the backend a command line names, so that nothing the backend does at import escapes as a crash.

- In process (:func:`load_in_process`): :func:`conformance.backends.resolve.resolve_backend`
  already turns an exception at import into a :class:`~conformance.backends.resolve.BackendError`;
  here ``SystemExit`` and a ``KeyboardInterrupt`` raised by the backend's own code become one too,
  while the user's Ctrl-C (told apart by the SIGINT handler of :mod:`conformance.interrupt`)
  still stops the command.
- Isolated (:func:`load_isolated_backend`): the backend is imported only in a worker process
  (:mod:`conformance.calls.isolate`); a crash, an exit or a hang at import becomes a BackendError
  naming the signal or exit code.
"""

from __future__ import annotations

from typing import Any

from ..backends.resolve import BackendError, resolve_backend
from ..calls.isolate import WorkerStartError, load_isolated
from ..calls.stage_call import Interrupted
from ..interrupt import StopFlag, sigint_sets

__all__ = ["load_in_process", "load_isolated_backend"]


def load_in_process(selector: str, stop: StopFlag) -> Any:
    """``resolve_backend(selector)``; BackendError for anything the backend raises while loading."""
    try:
        with sigint_sets(stop, also_raise=True):
            return resolve_backend(selector)
    except KeyboardInterrupt:
        if stop.is_set():
            raise  # the user's Ctrl-C
        raise BackendError(f"backend {selector!r}: loading it raised KeyboardInterrupt (raised by the backend's code)") from None
    except SystemExit as exc:
        raise BackendError(f"backend {selector!r}: loading it raised SystemExit({exc.code!r}) "
                           "(a backend must not exit the process)") from None


def load_isolated_backend(selector: str, timeout: float | None, stop: StopFlag) -> Any:
    """An :class:`~conformance.calls.isolate.IsolatedBackend` loaded in a worker process; BackendError if it cannot be."""
    try:
        with sigint_sets(stop):
            return load_isolated(selector, timeout, stop)
    except WorkerStartError as exc:
        raise BackendError(f"backend {selector!r} (--isolate): {exc}") from None
    except Interrupted:
        raise KeyboardInterrupt from None
