"""Case selection by id: the one rule behind ``--filter``/``-k``, ``--rope-filter`` and the catalogue's filters.

A case id is also its filter (:mod:`conformance.cases.case`). A pattern is a comma-separated list of
alternatives; an alternative with a glob character (``*?[``) is an fnmatch pattern on the whole
id, otherwise a substring of the id. This module is a leaf: it works on anything with an ``id``
(recipes, golden cases, report rows).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

__all__ = ["exact_pattern", "select", "select_cases"]


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


class _Typed(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def dtype(self) -> str: ...


T = TypeVar("T", bound=_Identified)
U = TypeVar("U", bound=_Typed)


def exact_pattern(case_id: str) -> str:
    """A pattern that :func:`select` matches against ``case_id`` alone (the "repro" line's ``--filter``).

    A plain id is a *substring* alternative, so ``--filter a/b/short`` also selects
    ``a/b/short-odd``. Here every glob character is escaped (``*`` -> ``[*]``, ``?`` -> ``[?]``,
    ``[`` -> ``[[]``) and, when the id has none, its first character is bracketed (``a`` -> ``[a]``):
    the pattern is then an fnmatch pattern on the whole id, which matches that id and no other.
    ValueError for an id empty or holding a comma (a comma separates alternatives).
    """
    if not case_id or "," in case_id or case_id != case_id.strip():
        raise ValueError(f"case_id={case_id!r}: an exact filter needs a non-empty id without a comma or "
                         "surrounding blanks (the pattern syntax splits at commas and strips blanks)")
    escaped = "".join(f"[{ch}]" if ch in "*?[" else ch for ch in case_id)
    return escaped if escaped != case_id else f"[{case_id[0]}]{case_id[1:]}"


def select(cases: Iterable[T], pattern: str | None) -> list[T]:
    """Cases (recipes or GoldenCases) whose id matches ``pattern``.

    ``pattern``: comma-separated alternatives; an alternative with a glob character
    (``*?[``) is an fnmatch pattern on the whole id, otherwise a substring of the id.
    ``None`` or ``""`` selects everything.
    """
    items = list(cases)
    if not pattern:
        return items
    alternatives = [p.strip() for p in pattern.split(",") if p.strip()]

    def hit(case_id: str) -> bool:
        for alt in alternatives:
            if any(ch in alt for ch in "*?["):
                if fnmatch.fnmatchcase(case_id, alt):
                    return True
            elif alt in case_id:
                return True
        return False

    return [c for c in items if hit(c.id)]


def select_cases(cases: Iterable[U], filters: Sequence[str] = (), dtypes: Sequence[str] = ()) -> list[U]:
    """The cases matching any of ``filters`` (each a :func:`select` pattern; none: all) whose dtype is one
    of ``dtypes`` (none: all)."""
    out = list(cases)
    if filters:
        out = select(out, ",".join(filters))
    if dtypes:
        out = [c for c in out if c.dtype in dtypes]
    return out
