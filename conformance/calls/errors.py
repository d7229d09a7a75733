"""What a call into backend code can end in, besides its value: the records every caller shares.

- :class:`StageError`: the backend raised, hung, crashed or returned something that is not the
  stage's outputs; the case's ERROR, with this message (:class:`TimedOut` when the time limit
  passed);
- :class:`Interrupted`: the user stopped the run (Ctrl-C, SIGTERM) while the call was in flight;
- :func:`describe_exception`: the words for an exception raised by backend code. It reads the
  exception's own text (``__str__`` is backend code), so it runs where backend code may run (a
  call thread, a worker process), and it survives a ``__str__`` that raises; the text is clipped
  (:mod:`conformance.untrusted_text`).
"""

from __future__ import annotations

from ..untrusted_text import safe_str

__all__ = ["StageError", "TimedOut", "Interrupted", "describe_exception", "TIMED_OUT"]

#: the start of every time-out message (the runner counts consecutive time-outs by it)
TIMED_OUT = "timed out after"


class StageError(Exception):
    """The backend raised, hung or crashed: the case's ERROR, with this message."""


class TimedOut(StageError):
    """The call passed its time limit (the message starts with :data:`TIMED_OUT`)."""


class Interrupted(Exception):
    """The user stopped the run (Ctrl-C or SIGTERM) while a backend call was in flight."""


def describe_exception(what: str, exc: BaseException) -> str:
    """``"forward raised SystemExit(0) (...)"``-style text; names the BaseExceptions a backend must not raise.

    Calls the exception's ``__str__``/``__repr__`` (backend code): run it in a call thread or a worker."""
    name = type(exc).__name__
    if isinstance(exc, SystemExit):
        try:
            code = repr(exc.code) if exc.code is None or isinstance(exc.code, (int, str)) else safe_str(exc.code, 200)
        except BaseException:
            code = "?"
        return f"{what} raised SystemExit({code[:200]}) (a backend must not exit the process)"
    if isinstance(exc, KeyboardInterrupt):
        return f"{what} raised KeyboardInterrupt (raised by the backend, not a Ctrl-C of the user)"
    text = safe_str(exc)
    return f"{what} raised {name}: {text}" if text else f"{what} raised {name}"
