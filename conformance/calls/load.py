"""Load a backend in this process so that nothing its import does escapes as a crash.

:func:`conformance.backends.resolve.resolve_backend` already turns an exception at import into a
:class:`~conformance.backends.resolve.BackendError`; here ``SystemExit`` and a
``KeyboardInterrupt`` raised by the backend's own code become one too, while the user's Ctrl-C
(told apart by the SIGINT handler of :mod:`conformance.interrupt`) still stops the command. Used
by ``roperef check`` and by the pytest plugin.
"""

from __future__ import annotations

from typing import Any

from ..backends.resolve import BackendError, resolve_backend
from ..interrupt import StopFlag, sigint_sets
from .errors import describe_exception

__all__ = ["load_in_process"]


def load_in_process(selector: Any, stop: StopFlag | None = None) -> Any:
    """``resolve_backend(selector)``; BackendError for anything the backend raises while loading."""
    stop = stop or StopFlag()
    try:
        with sigint_sets(stop, also_raise=True):
            return resolve_backend(selector)
    except KeyboardInterrupt:
        if stop.is_set():
            raise  # the user's Ctrl-C (or SIGTERM)
        raise BackendError(f"backend {selector!r}: loading it raised KeyboardInterrupt (raised by the backend's code)") from None
    except SystemExit as exc:
        raise BackendError(f"backend {selector!r}: loading it raised SystemExit({exc.code!r}) "
                           "(a backend must not exit the process)") from None
    except BackendError:
        raise
    except Exception as exc:  # resolve_backend names what it knows; anything else is the backend's too
        raise BackendError(f"backend {selector!r}: {describe_exception('loading it', exc)}") from None
