"""Import the object a ``--backend`` selector names: ``path/to/file.py:Name`` or ``module:Name``.

- ``path/to/file.py:Name`` (anything ending in ``.py`` or containing a path separator): the file
  is executed as a module (registered in ``sys.modules`` under its stem, or under
  ``roperef_backend_file_<stem>_<n>`` when that name is taken by another module); its directory is
  appended to ``sys.path`` so it can import its sibling files. Relative paths are relative to the
  current directory.
- ``module:Name`` (dotted module names allowed, ``Name`` may be ``Outer.inner``): imported
  normally; when the module is not importable and the current directory holds ``module.py`` (or
  a package ``module/``), the current directory is appended to ``sys.path`` and the import is
  retried, so ``roperef check --backend my_rope:MyRope`` works without ``PYTHONPATH``.

Every failure raises :class:`LoadError` naming the selector, the file or module, and the
attribute, with the backend-like names the file does define (classes, factory functions and
instances with a stage method) when the attribute is missing.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ..vocabulary import STAGES

__all__ = ["LoadError", "load_target", "is_file_selector", "backend_candidates", "file_candidates"]

_FILE_PREFIX = "roperef_backend_file_"


class LoadError(ValueError):
    """The selector's file, module or attribute cannot be loaded (a usage error)."""


def is_file_selector(target: str) -> bool:
    """Whether the part before ``:`` names a file rather than a module."""
    path = target.rpartition(":")[0]
    return path.endswith(".py") or "/" in path or os.sep in path


def _split(selector: str) -> tuple[str, str]:
    where, sep, attr = selector.rpartition(":")
    if not sep or not where or not attr:
        raise LoadError(f"backend {selector!r}: expected path/to/file.py:Name or module:Name")
    return where, attr


def _has_stage(obj: Any) -> bool:
    return any(callable(getattr(obj, s, None)) for s in STAGES)


def backend_candidates(module: ModuleType) -> list[str]:
    """Names in ``module`` that could be a backend: classes or instances with a stage method, and
    functions (factories) defined in the module itself."""
    out = []
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        if inspect.isclass(obj):
            if obj.__module__ == module.__name__ and _has_stage(obj):
                out.append(f"{name} (class)")
        elif inspect.isfunction(obj):
            if obj.__module__ == module.__name__ and name not in STAGES:
                out.append(f"{name} (function)")
        elif not inspect.ismodule(obj) and _has_stage(obj):
            out.append(f"{name} ({type(obj).__name__} instance)")
    return out


def _attribute(module: ModuleType, attr: str, selector: str, where: str) -> Any:
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            found = backend_candidates(module)
            close = difflib.get_close_matches(attr, [c.split(" ")[0] for c in found], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            listing = (f" Backend candidates in it: {', '.join(found)}." if found
                       else " It defines no class, function or instance with a stage method.")
            raise LoadError(f"backend {selector!r}: {where} has no attribute {attr!r}{hint}{listing}")
        obj = getattr(obj, part)
    return obj


def _module_names(stem: str) -> Any:
    """Module names to try for a file: its stem, then ``roperef_backend_file_<stem>_<n>``."""
    clean = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in stem)
    if stem.isidentifier():
        yield stem
    n = 0
    while True:
        yield f"{_FILE_PREFIX}{clean}_{n}"
        n += 1


def _exec_file(path: Path, selector: str, shown: str | None = None) -> ModuleType:
    shown = shown or str(path)
    if not path.is_file():
        raise LoadError(f"backend {selector!r}: file {shown} not found (current directory {Path.cwd()})")
    resolved = path.resolve()
    for name in _module_names(resolved.stem):
        existing = sys.modules.get(name)
        if existing is None:
            break
        if Path(getattr(existing, "__file__", "") or "").resolve() == resolved:
            return existing
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise LoadError(f"backend {selector!r}: {shown} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.append(folder)  # appended, not prepended: its files never shadow installed modules
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise LoadError(f"backend {selector!r}: executing {shown} raised {type(exc).__name__}: {exc}") from None
    return module


def _in_cwd(module_name: str) -> Path | None:
    """``module.py`` or ``module/__init__.py`` (dotted names as folders) in the current directory."""
    rel = Path(*module_name.split("."))
    for candidate in (rel.with_suffix(".py"), rel / "__init__.py"):
        if (Path.cwd() / candidate).is_file():
            return Path.cwd() / candidate
    return None


def _import_module(module_name: str, selector: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        if exc.name not in (top, module_name) and not module_name.startswith(f"{exc.name}."):
            raise LoadError(
                f"backend {selector!r}: importing module {module_name!r} failed: {exc} (a module it imports is missing)"
            ) from None
        local = _in_cwd(module_name)
        cwd = str(Path.cwd())
        if local is None:
            raise LoadError(
                f"backend {selector!r}: cannot import module {module_name!r} ({exc}); the current directory "
                f"{cwd} has no {Path(*module_name.split('.'))}.py either (a file elsewhere: --backend path/to/file.py:Name)"
            ) from None
        if cwd not in sys.path:
            sys.path.append(cwd)
        importlib.invalidate_caches()
        try:
            return importlib.import_module(module_name)
        except Exception as exc2:
            raise LoadError(f"backend {selector!r}: importing {local} raised {type(exc2).__name__}: {exc2}") from None
    except Exception as exc:
        raise LoadError(f"backend {selector!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from None


def load_target(selector: str) -> Any:
    """The object ``selector`` names (see the module docstring); raises :class:`LoadError`."""
    where, attr = _split(selector)
    if is_file_selector(selector):
        module = _exec_file(Path(where), selector, where)
        return _attribute(module, attr, selector, f"file {where}")
    module = _import_module(where, selector)
    origin = getattr(module, "__file__", None)
    label = f"module {where!r}" + (f" ({origin})" if origin else "")
    return _attribute(module, attr, selector, label)


def file_candidates(path: str) -> list[str]:
    """The backend candidates (:func:`backend_candidates`) of the Python file ``path``."""
    return backend_candidates(_exec_file(Path(path), path, path))
