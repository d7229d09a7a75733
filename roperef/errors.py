"""One way to report bad input: name the key or argument, the value, and the rule.

Every validation in roperef raises through :func:`bad` so that messages have one
shape::

    rope_scaling.factor=0.5: must be a finite number >= 1

The exception types are the standard ``ValueError`` (a value breaks a rule) and
``TypeError`` (a value has the wrong type); callers can catch them as usual.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["bad", "show"]


def show(value: Any, limit: int = 80) -> str:
    """A short, readable rendering of ``value`` for an error message."""
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def bad(name: str, value: Any, rule: str, exc: type[Exception] = ValueError) -> NoReturn:
    """Raise ``exc`` with the message ``"{name}={value!r}: {rule}"``."""
    raise exc(f"{name}={show(value)}: {rule}")
