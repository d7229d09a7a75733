"""Coverage of the shape space: which token, head, pair and batch boundaries a run judged.

Beside the bug classes (:mod:`conformance.judge.coverage`), a run says which shapes it judged, so
that a PASS can be read as "no tile or layout bug *at these shapes*". For every judged case (PASS,
FAIL, XFAIL, XPASS) its shape is read from its arrays (:func:`case_shape`): tokens per row (each
packed sequence's length; 1 for decode), heads (q's; k's of a q+k call too), batch rows (packed
sequences), pairs, head dim and rotary window, token rows in all, emptiness, memory layout and call
form. The section counts judged and failing cases per value:

- per dimension of the shape space (:mod:`conformance.generated.shapes`): every value judged, with
  its counts, and the values of the space that were not judged; for tokens per row, whether both
  sides of every power of two up to 1024 were judged;
- head counts, pair counts and head dims that no tile of 2, 4, 8, 16 (32 for pairs) divides;
- more than 4096 token rows, empty inputs, each layout, call form and q+k shape.

A failing count that follows a boundary (every head count but 4 and 8 failing; tokens 17, 33 and 65
failing, 16 and 32 passing) points at a tile; the console prints the values with failures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cases.case import GoldenCase, is_empty
from ..cases.form import CONTIGUOUS, qk_shape
from ..error_model.tolerance import position_rows
from ..generated.shapes import BATCH_ROWS, HEAD_COUNTS, PAIR_COUNTS, TOKENS
from ..vocabulary import QK_ARRAYS

__all__ = ["CaseShape", "case_shape", "shape_coverage"]

JUDGED = frozenset({"PASS", "FAIL", "IMPRECISE", "XFAIL", "XPASS"})
FAILED = frozenset({"FAIL", "XFAIL"})


@dataclass(frozen=True)
class CaseShape:
    """The shape of one case (see the module docstring); ``heads`` empty for tables."""

    tokens: tuple[int, ...]
    heads: tuple[int, ...]
    batch: int
    pairs: int
    head_dim: int
    window: str
    rows: int
    empty: bool
    layout: str
    call_form: str
    qk_shape: str | None


def case_shape(case: GoldenCase) -> CaseShape | None:
    """The shape of ``case`` (None for inv_freq, which has no tokens)."""
    a, spec = case.arrays, case.spec
    if case.stage == "inv_freq" or "positions" not in a and "x" not in a:
        return None
    if case.stage == "cos_sin":
        grid = tuple(position_rows(spec, a["positions"]).shape[1:])
        heads: tuple[int, ...] = ()
    else:
        x = a["grad" if case.stage == "backward" else "x"]
        grid, heads = tuple(np.shape(x)[:-2]), (int(np.shape(x)[-2]),)
        if case.form is not None and case.form.qk:
            heads += (int(np.shape(a[QK_ARRAYS[case.stage][0]])[-2]),)
    if "cu_seqlens" in a:
        lengths = np.diff(np.asarray(a["cu_seqlens"], dtype=np.int64))
        tokens, batch = tuple(int(n) for n in lengths), int(lengths.size)
    elif len(grid) >= 2:
        tokens, batch = (int(np.prod(grid[1:], dtype=np.int64)),), int(grid[0])
    else:
        tokens, batch = (int(grid[0]) if grid else 0,), 1
    window = "last" if spec.rotary_start > 0 else "partial" if spec.resolved_rotary_dim < spec.head_dim else "full"
    form = case.form
    return CaseShape(tokens, heads, batch, spec.n_pairs, spec.head_dim, window, int(np.prod(grid, dtype=np.int64)),
                     is_empty(case), form.layout if form is not None else CONTIGUOUS,
                     (form.word if form is not None else None) or "plain", qk_shape(form, case.stage, a))


class _Tally:
    """Judged and failing cases per value."""

    def __init__(self) -> None:
        self.cases: dict[Any, int] = defaultdict(int)
        self.failing: dict[Any, int] = defaultdict(int)

    def add(self, values: Iterable[Any], failed: bool) -> None:
        for v in set(values):
            self.cases[v] += 1
            self.failing[v] += failed

    def rows(self, order: Iterable[Any] = ()) -> list[dict[str, Any]]:
        known = list(order)
        others = sorted((v for v in self.cases if v not in known), key=lambda v: (not isinstance(v, int), v if isinstance(v, int) else 0, str(v)))
        keys = [v for v in known if v in self.cases] + others
        return [{"value": v, "cases": self.cases[v], "failing": self.failing[v]} for v in keys]


def _not_divisible(values: Mapping[Any, int], failing: Mapping[Any, int], tiles: Iterable[int]) -> list[dict[str, Any]]:
    out = []
    for t in tiles:
        hits = [v for v in values if isinstance(v, int) and v > 0 and v % t]
        out.append({"tile": t, "cases": sum(values[v] for v in hits), "failing": sum(failing[v] for v in hits)})
    return out


def shape_coverage(results: Iterable[Any], cases: Iterable[GoldenCase]) -> dict[str, Any]:
    """The ``shapes`` part of the coverage section (JSON-ready; docs/report-schema.md)."""
    by_id = {c.id: c for c in cases}
    tallies = {k: _Tally() for k in ("tokens", "heads", "batch", "pairs", "head_dim", "window", "layout", "call_form",
                                     "qk_shape")}
    rows_over, empty, judged = _Tally(), _Tally(), 0
    max_rows = 0
    for r in results:
        case = by_id.get(r.id)
        if case is None or r.status not in JUDGED:
            continue
        shape = case_shape(case)
        if shape is None:
            continue
        judged += 1
        failed = r.status in FAILED
        tallies["tokens"].add(shape.tokens, failed)
        tallies["heads"].add(shape.heads, failed)
        tallies["batch"].add([shape.batch], failed)
        tallies["pairs"].add([shape.pairs], failed)
        tallies["head_dim"].add([shape.head_dim], failed)
        tallies["window"].add([shape.window], failed)
        tallies["layout"].add([shape.layout], failed)
        tallies["call_form"].add([shape.call_form], failed)
        if shape.qk_shape is not None:
            tallies["qk_shape"].add([shape.qk_shape], failed)
        if shape.rows > 4096:
            rows_over.add(["yes"], failed)
        if shape.empty:
            empty.add(["yes"], failed)
        max_rows = max(max_rows, shape.rows)
    tok = tallies["tokens"]
    powers = []
    for k in range(1, 11):
        p = 2 ** k
        powers.append({"power": p, "below": tok.cases.get(p - 1, 0), "above": tok.cases.get(p + 1, 0)})
    space = {"tokens": TOKENS, "heads": HEAD_COUNTS, "batch": BATCH_ROWS, "pairs": PAIR_COUNTS}
    dims = []
    for key, label in (("tokens", "tokens per row"), ("heads", "heads"), ("batch", "batch rows"), ("pairs", "pairs"),
                       ("head_dim", "head dim"), ("window", "rotary window")):
        t = tallies[key]
        row: dict[str, Any] = {"dimension": label, "values": t.rows(space.get(key, ()))}
        if key in space:
            row["not_judged"] = [v for v in space[key] if v not in t.cases]
        dims.append(row)
    return {
        "judged_cases": judged,
        "dimensions": dims,
        "powers_of_two": powers,
        "both_sides_of_powers_of_two": all(p["below"] and p["above"] for p in powers),
        "not_multiple_of": {
            "heads": _not_divisible(tallies["heads"].cases, tallies["heads"].failing, (2, 4, 8)),
            "pairs": _not_divisible(tallies["pairs"].cases, tallies["pairs"].failing, (2, 4, 8, 16, 32)),
            "head_dim": _not_divisible(tallies["head_dim"].cases, tallies["head_dim"].failing, (16,)),
        },
        "over_4096_rows": {"cases": rows_over.cases.get("yes", 0), "failing": rows_over.failing.get("yes", 0),
                           "max_rows": max_rows},
        "zero_size": {"cases": empty.cases.get("yes", 0), "failing": empty.failing.get("yes", 0)},
        "layouts": tallies["layout"].rows((CONTIGUOUS, "qkv", "bhtd", "fortran", "offset")),
        "call_forms": tallies["call_form"].rows(("plain", "inplace", "qk", "qk_inplace")),
        "qk_shapes": tallies["qk_shape"].rows(("gqa", "mqa", "head_dims")),
    }
