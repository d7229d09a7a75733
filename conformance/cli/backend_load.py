"""Load the backend a command line names, so that nothing the backend does at import escapes as a crash.

- In process (:func:`load_in_process`, from :mod:`conformance.calls.load`, shared with the pytest
  plugin): ``SystemExit`` and a ``KeyboardInterrupt`` raised by the backend's own code become a
  :class:`~conformance.backends.resolve.BackendError`, while the user's Ctrl-C still stops the command.
- Isolated (:func:`load_isolated_backend`): the backend is imported only in a worker process
  (:mod:`conformance.calls.isolate`); a crash, an exit or a hang at import becomes a BackendError
  naming the signal or exit code.
"""

from __future__ import annotations

from typing import Any

from ..backends.resolve import BackendError
from ..calls.isolate import WorkerStartError, load_isolated
from ..calls.load import load_in_process
from ..calls.stage_call import Interrupted
from ..interrupt import StopFlag, sigint_sets

__all__ = ["load_in_process", "load_isolated_backend"]


def load_isolated_backend(selector: str, timeout: float | None, stop: StopFlag) -> Any:
    """An :class:`~conformance.calls.isolate.IsolatedBackend` loaded in a worker process; BackendError if it cannot be."""
    try:
        with sigint_sets(stop):
            return load_isolated(selector, timeout, stop)
    except WorkerStartError as exc:
        raise BackendError(f"backend {selector!r} (--isolate): {exc}") from None
    except Interrupted:
        raise KeyboardInterrupt from None
