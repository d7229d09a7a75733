"""Turn a backend selector into a backend object, with one clear error for every way it can go wrong.

A selector is, in order of precedence:

1. an object (already a backend): used as is;
2. a short name from :data:`conformance.backends.names.BUILTIN_BACKENDS` (``numpy``, ``numba``, ...);
3. ``module:attr`` (or ``module.attr``-free ``module:attr.sub``) naming user code: a class
   (instantiated with no arguments), a factory function (called with no arguments) or an
   instance;
4. nothing: the environment variable ``ROPEREF_BACKEND``, else ``default``.

Objects without ``capabilities`` or ``supports`` are wrapped by :class:`Adapted`, which
declares the stages the object implements (float64 angles unless the object has
``angle_dtype``/``table_dtype`` attributes). An object with no stage at all is an error.
"""

from __future__ import annotations

import importlib
import inspect
import os
from dataclasses import dataclass
from typing import Any, Mapping

from ..case import STAGES, GoldenCase
from .base import BaseBackend, Capabilities, backend_stages
from .names import BUILTIN_BACKENDS

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

    def supports(self, case: GoldenCase) -> "bool | str":
        own = getattr(self.inner, "supports", None)
        if callable(own):
            verdict = own(case)
            if verdict is not True:
                return verdict
        return BaseBackend.supports(self, case)


def _import(selector: str) -> Any:
    module_name, _, attr = selector.partition(":")
    if not module_name or not attr:
        raise BackendError(f"backend {selector!r}: expected a short name ({', '.join(BUILTIN_BACKENDS)}) or module:attr")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendError(f"backend {selector!r}: cannot import module {module_name!r} ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - user code failing at import is reported, not raised
        raise BackendError(f"backend {selector!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise BackendError(f"backend {selector!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _instantiate(obj: Any, selector: str, options: Mapping[str, Any]) -> Any:
    if inspect.isclass(obj) or (callable(obj) and inspect.isfunction(obj)):
        try:
            return obj(**options)
        except Exception as exc:  # noqa: BLE001
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
    if not isinstance(caps, Capabilities):
        caps = Capabilities(
            stages=stages,
            angle_dtype=str(getattr(obj, "angle_dtype", "float64")),
            table_dtype=str(getattr(obj, "table_dtype", "float64")),
            applies_attention_factor=bool(getattr(obj, "applies_attention_factor", True)),
        )
    name = str(getattr(obj, "name", "") or selector)
    return Adapted(name=name, capabilities=caps, inner=obj)


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
    else:
        raise BackendError(
            f"unknown backend {selector!r}: expected one of {', '.join(sorted(BUILTIN_BACKENDS))} or module:attr"
        )
    obj = _instantiate(_import(target), selector, options)
    return _adapt(obj, selector)
