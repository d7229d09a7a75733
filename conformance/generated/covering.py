"""A deterministic pairwise covering array: rows in which every pair of dimension values appears.

Given dimensions ``dims[0..k-1]`` (each a sequence of values, *cheapest and most compatible first*)
and a predicate ``allowed(row)`` on complete rows, :func:`covering_array` returns rows (tuples of
value indices) such that for every two dimensions ``i < j`` and values ``a`` of ``i``, ``b`` of ``j``
whose pair is *feasible*, some row has ``row[i] = a`` and ``row[j] = b``. A pair is feasible when
the row holding it and index 0 everywhere else is allowed; that is the contract on the caller's
ordering: index 0 of every dimension is compatible with everything the predicate accepts.

The construction is greedy, one row at a time (the AETG strategy without randomness):

1. the row starts from the first uncovered pair in a fixed order (dimension pairs ``(i, j)``
   lexicographic, then values);
2. every other dimension, in decreasing order of its number of values (ties: by position), takes
   the value that covers the most still-uncovered pairs with the dimensions set so far, among the
   values that keep the row allowed (the unset dimensions counted at index 0); ties go to the
   lowest index, the cheapest (in a *balanced* dimension: to the value used in the fewest rows so
   far, then the lowest index);
3. the row's pairs are marked covered.

Each row covers at least its seed pair, so the loop ends; the same input gives the same rows on
every machine and Python version (no hashing of values, no randomness). The size is typically
within a small factor of ``max |dims[i]| * |dims[j]|``, the lower bound.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from itertools import combinations
from typing import Any

__all__ = ["covering_array", "uncovered_pairs", "feasible_pairs"]

Row = tuple[int, ...]


def _row_with(sizes: Sequence[int], fixed: dict[int, int]) -> Row:
    return tuple(fixed.get(i, 0) for i in range(len(sizes)))


def feasible_pairs(sizes: Sequence[int], allowed: Callable[[Row], bool]) -> set[tuple[int, int, int, int]]:
    """Every ``(i, a, j, b)`` (``i < j``) whose pair is feasible (see the module docstring)."""
    out = set()
    for i, j in combinations(range(len(sizes)), 2):
        for a in range(sizes[i]):
            for b in range(sizes[j]):
                if allowed(_row_with(sizes, {i: a, j: b})):
                    out.add((i, a, j, b))
    return out


def uncovered_pairs(rows: Sequence[Row], sizes: Sequence[int], allowed: Callable[[Row], bool]) -> set[tuple[int, int, int, int]]:
    """The feasible pairs no row holds (empty for a covering array)."""
    need = feasible_pairs(sizes, allowed)
    for row in rows:
        for i, j in combinations(range(len(sizes)), 2):
            need.discard((i, row[i], j, row[j]))
    return need


def covering_array(dims: Sequence[Sequence[Any]], allowed: Callable[[Row], bool] | None = None,
                   balanced: Collection[int] = ()) -> list[Row]:
    """Rows of value indices covering every feasible pair of ``dims`` (see the module docstring).

    ``balanced``: dimensions whose ties go to the value used in the fewest rows so far (then the
    lowest index) instead of the lowest index: categories (interfaces, dtypes) rather than sizes."""
    sizes = [len(d) for d in dims]
    if any(s == 0 for s in sizes):
        raise ValueError(f"dims={sizes}: every dimension needs at least one value")
    ok = allowed or (lambda row: True)
    if not ok(_row_with(sizes, {})):
        raise ValueError("allowed(row of index 0 everywhere) is False: index 0 of every dimension must be compatible")
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
            best, best_key = 0, (-1, 0)
            for v in range(sizes[d]):
                if not ok(_row_with(sizes, {**fixed, d: v})):
                    continue
                gain = sum(((min(d, e), v if d < e else w, max(d, e), w if d < e else v) in uncovered)
                           for e, w in fixed.items())
                key = (gain, -used[d][v] if d in balanced else 0)
                if key > best_key:
                    best, best_key = v, key
            fixed[d] = best
        row = _row_with(sizes, fixed)
        rows.append(row)
        for d in range(k):
            used[d][row[d]] += 1
        for p, q in combinations(range(k), 2):
            uncovered.discard((p, row[p], q, row[q]))
    return rows
