"""A deterministic pairwise covering array: rows in which every pair of dimension values appears.

Given dimensions ``dims[0..k-1]`` (each a sequence of values, cheapest first) and a predicate
``allowed(row)`` on *partial* rows (a tuple of value indices with ``None`` for a dimension not yet
set), :func:`covering_array` returns complete rows such that for every two dimensions ``i < j`` and
values ``a`` of ``i``, ``b`` of ``j`` whose pair is *feasible*, some row has ``row[i] = a`` and
``row[j] = b``. A pair is feasible when some complete row holding it is allowed; the predicate says
False for a partial row only when the values already set conflict (a constraint between them, or a
cost that the cheapest values of the unset dimensions would still exceed), and it is exact on
complete rows. A completion is index 0 in every free dimension when that row is allowed, else
the first one a depth-first search finds (dimensions with the fewest values first, values in
order, a branch cut as soon as the predicate says False).

The construction is greedy, one row at a time (the AETG strategy without randomness):

1. the row starts from the first uncovered pair in a fixed order (dimension pairs ``(i, j)``
   lexicographic, then values);
2. every other dimension, in decreasing order of its number of values (ties: by position), takes
   the value that covers the most still-uncovered pairs with the dimensions set so far, among the
   values the row can still be completed with; ties go to the lowest index, the cheapest (in a
   *balanced* dimension: to the value used in the fewest rows so far, then the lowest index);
3. the row's pairs are marked covered.

Each row covers at least its seed pair, so the loop ends; the same input gives the same rows on
every machine and Python version (no hashing of values, no randomness). The size is typically
within a small factor of ``max |dims[i]| * |dims[j]|``, the lower bound.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from itertools import combinations
from typing import Any

__all__ = ["covering_array", "uncovered_pairs", "feasible_pairs", "complete_row", "SEARCH_LIMIT"]

Row = tuple[int, ...]
Partial = tuple[int | None, ...]
#: nodes a completion search may visit before the pair is taken as infeasible
SEARCH_LIMIT = 20_000


def complete_row(sizes: Sequence[int], fixed: dict[int, int], allowed: Callable[[Partial], bool]) -> Row | None:
    """The first allowed complete row holding ``fixed`` (dimension -> value index), or None."""
    partial: list[int | None] = [fixed.get(d) for d in range(len(sizes))]
    if not allowed(tuple(partial)):
        return None
    cheapest = tuple(fixed.get(d, 0) for d in range(len(sizes)))
    if allowed(cheapest):  # the usual case: index 0 wherever nothing is fixed
        return cheapest
    free = sorted((d for d in range(len(sizes)) if d not in fixed), key=lambda d: (sizes[d], d))
    visited = 0

    def search(i: int) -> bool:
        nonlocal visited
        if i == len(free):
            return True
        d = free[i]
        for v in range(sizes[d]):
            visited += 1
            if visited > SEARCH_LIMIT:
                return False
            partial[d] = v
            if allowed(tuple(partial)) and search(i + 1):
                return True
        partial[d] = None
        return False

    return tuple(int(v) for v in partial if v is not None) if search(0) else None


def feasible_pairs(sizes: Sequence[int], allowed: Callable[[Partial], bool]) -> set[tuple[int, int, int, int]]:
    """Every ``(i, a, j, b)`` (``i < j``) whose pair is feasible (see the module docstring)."""
    out = set()
    for i, j in combinations(range(len(sizes)), 2):
        for a in range(sizes[i]):
            for b in range(sizes[j]):
                if complete_row(sizes, {i: a, j: b}, allowed) is not None:
                    out.add((i, a, j, b))
    return out


def uncovered_pairs(rows: Sequence[Row], sizes: Sequence[int], allowed: Callable[[Partial], bool]) -> set[tuple[int, int, int, int]]:
    """The feasible pairs no row holds (empty for a covering array)."""
    need = feasible_pairs(sizes, allowed)
    for row in rows:
        for i, j in combinations(range(len(sizes)), 2):
            need.discard((i, row[i], j, row[j]))
    return need


def _key(d: int, v: int, e: int, w: int) -> tuple[int, int, int, int]:
    return (d, v, e, w) if d < e else (e, w, d, v)


def covering_array(dims: Sequence[Sequence[Any]], allowed: Callable[[Partial], bool] | None = None,
                   balanced: Collection[int] = ()) -> list[Row]:
    """Rows of value indices covering every feasible pair of ``dims`` (see the module docstring).

    ``balanced``: dimensions whose ties go to the value used in the fewest rows so far (then the
    lowest index) instead of the lowest index: categories (interfaces, dtypes) rather than sizes."""
    sizes = [len(d) for d in dims]
    if any(s == 0 for s in sizes):
        raise ValueError(f"dims={sizes}: every dimension needs at least one value")
    ok: Callable[[Partial], bool] = allowed or (lambda row: True)
    k = len(sizes)
    if k == 1:
        return [(a,) for a in range(sizes[0]) if ok((a,))]
    uncovered = feasible_pairs(sizes, ok)
    order = sorted(range(k), key=lambda i: (-sizes[i], i))
    rows: list[Row] = []
    used = [[0] * n for n in sizes]
    while uncovered:
        i, a, j, b = min(uncovered)
        fixed = {i: a, j: b}
        for d in order:
            if d in fixed:
                continue
            scored = []
            for v in range(sizes[d]):
                trial = {**fixed, d: v}
                if not ok(tuple(trial.get(x) for x in range(k))):
                    continue
                gain = sum(_key(d, v, e, w) in uncovered for e, w in fixed.items())
                scored.append(((-gain, used[d][v] if d in balanced else 0, v), v))
            for _, v in sorted(scored):
                if complete_row(sizes, {**fixed, d: v}, ok) is not None:
                    fixed[d] = v
                    break
            else:  # not reached: the seed pair is feasible, so some value completes the row
                raise RuntimeError(f"covering_array: no value of dimension {d} completes the row {fixed}")
        row = tuple(fixed[d] for d in range(k))
        rows.append(row)
        for d in range(k):
            used[d][row[d]] += 1
        for p, q in combinations(range(k), 2):
            uncovered.discard((p, row[p], q, row[q]))
    return rows
