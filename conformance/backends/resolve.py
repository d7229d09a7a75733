"""Turn a backend selector into a backend object, with one clear error for every way it can go wrong.

A selector is, in order of precedence:

1. an object (already a backend): used as is;
2. a short name from :data:`conformance.backends.names.BUILTIN_BACKENDS` (``numpy``, ``numba``, ...);
3. ``path/to/file.py:Name`` or ``module:Name`` (``Name`` may be ``Outer.inner``) naming user
   code: a class (instantiated with no arguments), a factory function (called with no
   arguments) or an instance. A module in the current directory imports without ``PYTHONPATH``
   (:mod:`conformance.backends.load_file`);
4. nothing: the environment variable ``ROPEREF_BACKEND``, else ``default``.

Objects without ``capabilities`` or ``supports`` are wrapped by :class:`Adapted`, which
assumes the stages the object implements and float64 angles and tables unless the object has
``angle_dtype``/``table_dtype`` attributes (:func:`conformance.backends.base.assumed_capabilities`);
reports announce the assumption (:func:`conformance.backends.base.declaration_notes`). An
object with no stage at all is an error.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..cases.case import GoldenCase
from ..vocabulary import STAGES
from .base import BaseBackend, Capabilities, assumed_capabilities, backend_stages
from .load_file import LoadError, file_candidates, load_target
from .names import BUILTIN_BACKENDS
from .supports_verdict import supports_verdict

__all__ = ["BackendError", "resolve_backend", "describe_selector", "ENV_VAR", "Adapted"]

ENV_VAR = "ROPEREF_BACKEND"


class BackendError(ValueError):
    """The backend selector cannot be turned into a usable backend (a usage error, exit 2)."""


@dataclass
class Adapted(BaseBackend):
    """Wraps a plain object that has stage methods but no ``capabilities``/``supports``."""

    inner: Any = None

    def __getattr__(self, item: str) -> Any:  # stages delegate to the wrapped object
        if item in STAGES and self.inner is not None:
            return getattr(self.inner, item)
        raise AttributeError(item)

    def supports(self, case: GoldenCase) -> bool | str:
        own = getattr(self.inner, "supports", None)
        if callable(own):
            verdict = supports_verdict(own(case))  # numpy.True_ is a yes, not a refusal
            if verdict is not True:
                return verdict
        return BaseBackend.supports(self, case)


def _import(selector: str) -> Any:
    try:
        return load_target(selector)
    except LoadError as exc:
        raise BackendError(str(exc)) from None


def _instantiate(obj: Any, selector: str, options: Mapping[str, Any]) -> Any:
    if inspect.isclass(obj) or (callable(obj) and inspect.isfunction(obj)):
        try:
            return obj(**options)
        except Exception as exc:
            kind = "class" if inspect.isclass(obj) else "factory"
            raise BackendError(f"backend {selector!r}: calling the {kind} raised {type(exc).__name__}: {exc}") from None
    return obj


def _adapt(obj: Any, selector: str) -> Any:
    stages = backend_stages(obj)
    if not stages:
        raise BackendError(
            f"backend {selector!r} ({type(obj).__name__}) implements none of the stages {', '.join(STAGES)}"
        )
    if isinstance(getattr(obj, "capabilities", None), Capabilities) and callable(getattr(obj, "supports", None)):
        if not getattr(obj, "name", None):
            try:
                obj.name = selector
            except AttributeError:
                pass
        return obj
    caps = getattr(obj, "capabilities", None)
    if caps is not None and not isinstance(caps, Capabilities):
        raise BackendError(
            f"backend {selector!r}: its capabilities={caps!r} is not a conformance.backends.base.Capabilities"
        )
    name = str(getattr(obj, "name", "") or selector)
    adapted = Adapted(name=name, capabilities=caps or assumed_capabilities(obj), inner=obj)
    adapted.capabilities_assumed = caps is None
    return adapted


def describe_selector(selector: Any) -> str:
    """The string a report shows for a selector (and the repro command reuses)."""
    return selector if isinstance(selector, str) else getattr(selector, "name", type(selector).__name__)


def resolve_backend(selector: Any = None, *, default: str = "numba", options: Mapping[str, Any] | None = None) -> Any:
    """A backend object from ``selector`` (see module docstring); raises :class:`BackendError`."""
    if selector is None or selector == "":
        selector = os.environ.get(ENV_VAR) or default
    options = dict(options or {})
    if not isinstance(selector, str):
        return _adapt(_instantiate(selector, type(selector).__name__, options), getattr(selector, "__name__", "backend"))
    if selector in BUILTIN_BACKENDS:
        target = BUILTIN_BACKENDS[selector]
    elif ":" in selector:
        target = selector
    elif selector.endswith(".py"):
        try:
            found = file_candidates(selector)
        except LoadError as exc:
            raise BackendError(str(exc)) from None
        names = ", ".join(found) or "none (no class, function or instance with a stage method)"
        raise BackendError(f"backend {selector!r}: name the backend in the file as {selector}:Name; candidates in it: {names}")
    else:
        raise BackendError(
            f"unknown backend {selector!r}: expected one of {', '.join(sorted(BUILTIN_BACKENDS))}, "
            "path/to/file.py:Name or module:Name"
        )
    obj = _instantiate(_import(target), selector, options)
    return _adapt(obj, selector)
