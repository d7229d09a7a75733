"""Read through the wrappers transformers puts around an apply function, to the code that runs.

transformers 5.25 with the ``kernels`` package installed replaces ``apply_rotary_pos_emb`` by an
instance of a generated ``nn.Module`` (``kernels``' ``_create_func_module``: ``forward(self, *args,
**kwargs)`` calls the original function when no hub kernel is active, which is always the case on a
model that was not ``kernelize``-d). Its signature says nothing, so a probe reading the signature would
skip the family. :func:`unwrap_callable` follows, in turn:

- ``functools.partial`` -> ``.func`` (the bound arguments are reported, the probe calls the original);
- a decorated function (``__wrapped__``, :func:`inspect.unwrap`);
- an ``nn.Module`` instance (or any callable object) whose class ``forward`` / ``__call__`` is a closure
  over exactly one plain function -> that function.

Anything else is returned as not unwrappable, with the reason, so a caller can say what it did not read.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Unwrapped", "unwrap_callable"]

_MAX_DEPTH = 8


@dataclass(frozen=True)
class Unwrapped:
    """``function``: the plain function that runs (None: none found); ``how``: the wrappers passed, in order,
    or why it could not be unwrapped."""

    function: Callable[..., Any] | None
    how: tuple[str, ...] = ()


def _closure_function(method: Any) -> Callable[..., Any] | None:
    cells = getattr(method, "__closure__", None) or ()
    found = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if inspect.isfunction(value):
            found.append(value)
    return found[0] if len(found) == 1 else None


def unwrap_callable(obj: Any) -> Unwrapped:
    """The plain Python function ``obj`` runs, following partials, ``__wrapped__`` and module wrappers."""
    how: list[str] = []
    for _ in range(_MAX_DEPTH):
        if isinstance(obj, functools.partial):
            how.append(f"functools.partial (bound {len(obj.args)} positional, {sorted(obj.keywords)} keyword)")
            obj = obj.func
            continue
        if inspect.isfunction(obj):
            if hasattr(obj, "__wrapped__"):
                how.append(f"decorated {obj.__qualname__}")
                obj = inspect.unwrap(obj)
                continue
            return Unwrapped(obj, tuple(how))
        if inspect.ismethod(obj):
            return Unwrapped(obj.__func__, tuple(how + [f"bound method of {type(obj.__self__).__name__}"]))
        cls = type(obj)
        for name in ("forward", "__call__"):
            method = inspect.getattr_static(cls, name, None)
            if inspect.isfunction(method) and method.__qualname__.startswith(cls.__qualname__):
                inner = _closure_function(method)
                if inner is not None:
                    how.append(f"{cls.__qualname__}.{name} (a {cls.__module__} wrapper) calls {inner.__qualname__}")
                    obj = inner
                    break
        else:
            return Unwrapped(None, tuple(how + [f"a {cls.__module__}.{cls.__qualname__} whose forward/__call__ "
                                                "does not close over one plain function"]))
    else:
        return Unwrapped(None, tuple(how + [f"more than {_MAX_DEPTH} wrappers"]))
    return Unwrapped(None, tuple(how))  # pragma: no cover - the loop returns or breaks into the next round
