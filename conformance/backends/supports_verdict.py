"""What a backend's ``supports(case)`` answered, read one way everywhere.

The protocol: ``True`` (the case runs) or a reason string (NOT_SUPPORTED, with that reason).
Read here:

- ``True`` and ``numpy.True_`` (an answer computed with NumPy) are ``True``;
- a string is the reason (an empty one, ``False``, ``numpy.False_`` and ``None`` read
  ``"not supported"``); a :class:`~conformance.backends.base.Declined` (a reason given through
  ``library_reason``/``case_reason``) stays one;
- anything else (a number, a list, an object) is not an answer: :class:`SupportsAnswerError`
  names its type, and the case is an ERROR rather than a guess either way.

It converts a string subclass to a plain ``str`` without calling its methods twice; still, it
touches the backend's object, so it runs where backend code runs (a call thread, a worker).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .base import Declined

__all__ = ["SupportsAnswerError", "supports_verdict", "NOT_SUPPORTED"]

#: the reason given for a plain refusal (False, None, an empty string)
NOT_SUPPORTED = "not supported"


class SupportsAnswerError(ValueError):
    """``supports()`` returned something that is neither True nor a reason string."""


def supports_verdict(value: Any) -> Literal[True] | str:
    """``True`` or the reason (see the module docstring); :class:`SupportsAnswerError` otherwise."""
    if value is True or (isinstance(value, np.bool_) and bool(value)):
        return True
    if value is None or value is False or isinstance(value, np.bool_):
        return NOT_SUPPORTED
    if isinstance(value, str):
        text = str.__str__(value)
        if not text:
            return NOT_SUPPORTED
        return Declined(text) if isinstance(value, Declined) else text
    raise SupportsAnswerError(f"supports() returned {type(value).__name__}, neither True nor a reason string")
