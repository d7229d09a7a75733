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
    """A short, readable rendering of ``value`` for an error message.

    A ``repr`` longer than ``limit`` keeps its start and its end around ``...`` (a long path keeps
    its file name, a long list its last items)."""
    text = repr(value)
    if len(text) > limit:
        head = (limit - 3 + 1) // 2
        text = text[:head] + "..." + text[len(text) - (limit - 3 - head):]
    return text


def bad(name: str, value: Any, rule: str, exc: type[Exception] = ValueError) -> NoReturn:
    """Raise ``exc`` with the message ``"{name}={value!r}: {rule}"``."""
    raise exc(f"{name}={show(value)}: {rule}")
