"""The shape space, and the shape sweep of the generated cases: where tiled kernels break.

Kernel bugs live at tile boundaries and in memory layouts: a head tile of 4 with the tail dropped,
a token tile of 16 whose last partial tile is skipped, pair groups of 4, a 16-channel vector loop
without its remainder, a separate path for long prefills, a grid limit of 4096 rows, a strided q
read as if it were contiguous, an in-place kernel that writes past its view. The golden cases have
2 heads, 16 tokens per row and head dims that are multiples of 16, so they rarely cross one. The
shape space (the values every dimension takes; :mod:`conformance.explore` draws from it too):

===============  ==============================================================================
dimension        values
===============  ==============================================================================
tokens per row   :data:`TOKENS`: both sides of every power of two up to 1024 (2^k - 1, 2^k + 1),
                 and 4097 (more than 4096 rows in one row)
heads            :data:`HEAD_COUNTS`: 1 to 9 (odd counts, counts that no tile of 2, 4 or 8 divides)
batch rows       :data:`BATCH_ROWS`: 1, 3, 5 (packed: that many sequences; decode: that many rows)
pairs            :data:`PAIR_COUNTS`: 1, 3, 5, ..., 65 (not multiples of 2, 4, 8, 16 or 32)
window           ``full`` (head dim 2n), ``partial`` (window first, an odd number of pass-through
                 channels after it), ``last`` (window at an odd offset, ending at the head's end):
                 head dims that no 16-channel vector divides
===============  ==============================================================================

plus, per backend, what its declaration offers: the interface (forward, backward, apply on
``[B, T, H, D]``; cos_sin tables; packed ``[N, H, D]`` with ``cu_seqlens``; decode ``T = 1``), the
dtype, the pairing, the positions (one odd offset for every row, an odd offset per row, from 0),
the memory layout of x (:data:`~conformance.vocabulary.LAYOUTS`), the call form (in place, q with
k) and how k differs from q (GQA, MQA, MLA's head dims).

:func:`sweep_cases` combines these dimensions with a pairwise covering design
(:mod:`conformance.generated.covering`): every pair of values of two dimensions appears in at least
one case, values a declaration excludes or that cannot meet (a decode row has one token; a table has
no heads, window or layout; GQA needs a head count with a proper divisor; MLA's head dims need the
window last) aside. A dimension not being swept in a row sits at its cheapest value, and a row holds
at most :data:`MAX_ELEMENTS` elements, so the sweep stays cheap. Added to it: one empty input per
interface axis (no batch row, no token, no head) where the declaration has ``zero_size``, and two
cases of more than 4096 token rows per interface (:data:`BIG_ROWS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from roperef.spec import PAIRINGS, RopeSpec

from ..calls.declared import Interface
from ..cases.case import case_family, shape_tag
from ..cases.form import CONTIGUOUS, FORM_STAGES, CallForm, form_method, form_tag
from ..vocabulary import CALL_FORMS, LAYOUTS, QK_SHAPES
from .covering import covering_array
from .gencase import GenCase, light_case
from .positions import Regime

__all__ = [
    "TOKENS", "HEAD_COUNTS", "BATCH_ROWS", "PAIR_COUNTS", "WINDOWS", "WINDOW_OFFSETS", "MAX_ELEMENTS", "ROW_STARTS", "BIG_ROWS", "NA",
    "ShapeRow", "sweep_rows", "sweep_cases", "shape_case", "window_spec", "token_regime", "packed_lengths", "Kind", "kinds_of",
]

TOKENS = (1, 3, 5, 7, 9, 15, 17, 31, 33, 63, 65, 127, 129, 255, 257, 511, 513, 1023, 1025, 4097)
HEAD_COUNTS = (1, 2, 3, 4, 5, 6, 7, 8, 9)
BATCH_ROWS = (1, 3, 5)
PAIR_COUNTS = (1, 3, 5, 7, 9, 15, 17, 31, 33, 63, 65)
WINDOWS = ("full", "partial", "last")
#: pass-through tails (``partial``) and window offsets (``last``), chosen by the pair count's index
WINDOW_OFFSETS = (1, 3, 5, 7, 9, 15, 17)
#: the largest case of the sweep, in elements of x (plus k)
MAX_ELEMENTS = 1 << 17
#: the first position of each row (sequence) under per-row offsets: odd, small and large
ROW_STARTS = (4093, 251, 65531, 7, 1048573)
#: the first position of every row under one shared offset
SHARED_START = 4093
POSITIONS = ("odd", "rows", "zero")
#: a dimension's value where it does not apply (a table's heads, window, layout and call form; the shape
#: of k outside a q+k call)
NA = "n/a"


@dataclass(frozen=True)
class Kind:
    """An interface of the sweep: a stage on a token grid (``bshd``, ``packed``, ``decode``, ``table``)."""

    stage: str
    grid: str

    @property
    def name(self) -> str:
        return self.stage if self.grid in ("bshd", "table") else f"{self.stage}-{self.grid}"


def kinds_of(iface: Interface) -> list[Kind]:
    """The interfaces a declaration offers, forward on ``[B, T, H, D]`` first when it has it."""
    out = [Kind(s, "bshd") for s in ("forward", "backward", "apply") if s in iface.stages]
    if "cos_sin" in iface.stages:
        out.append(Kind("cos_sin", "table"))
    if "varlen" in iface.features:
        out += [Kind(s, "packed") for s in ("forward", "backward") if s in iface.stages]
    if "forward" in iface.stages:
        out.append(Kind("forward", "decode"))
    return out


@cache
def window_spec(n: int, window: str, pairing: str) -> RopeSpec:
    """The spec of ``n`` pairs in ``window`` (theta 10000): head dim 2n, 2n + an odd tail, or an odd
    offset + 2n (the window last)."""
    extra = _extra(n)
    if window == "full":
        return RopeSpec(2 * n, pairing=pairing, theta=10000.0)
    if window == "partial":
        return RopeSpec(2 * n + extra, rotary_dim=2 * n, pairing=pairing, theta=10000.0)
    return RopeSpec(2 * n + extra, rotary_dim=2 * n, rotary_start=extra, pairing=pairing, theta=10000.0)


def packed_lengths(tokens: int, sequences: int) -> list[int]:
    """The sequence lengths of a packed case: the first ``tokens`` long, then 1, about half, 3, about a quarter."""
    pattern = [tokens, 1, max(1, tokens // 2) | 1, 3, max(1, tokens // 4) | 1]
    return pattern[:sequences] if sequences <= len(pattern) else pattern + [1] * (sequences - len(pattern))


def _starts(mode: str, rows: int) -> list[int]:
    if mode == "zero":
        return [0] * rows
    if mode == "odd":
        return [SHARED_START] * rows
    return [ROW_STARTS[i % len(ROW_STARTS)] for i in range(rows)]


def token_regime(grid: str, batch: int, tokens: int, mode: str) -> Regime:
    """The positions of a sweep case: ``[batch, tokens]`` rows from their starts (``table``, ``bshd``,
    ``decode``), or ``batch`` packed sequences restarting at their offsets."""
    starts = _starts(mode, batch)
    if grid == "packed":
        lengths = packed_lengths(tokens, batch)
        cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        pos = np.concatenate([s + np.arange(n, dtype=np.int64) for s, n in zip(starts, lengths)]).astype(np.int64)
        tag = f"packed{'-'.join(map(str, lengths))}-{'from0' if mode == 'zero' else 'odd' if mode == 'odd' else 'rows'}"
        return Regime(f"sweep-{tag}", "packed", tag, pos, cu)
    pos = (np.asarray(starts, dtype=np.int64)[:, None] + np.arange(tokens, dtype=np.int64)).reshape(batch, tokens)
    if mode == "rows" and batch > 1:
        tag, kind = "rows" + "-".join(map(str, starts)), "rows"
    else:
        tag, kind = f"from{starts[0] if starts else 0}", "shared"
    if grid == "decode":
        tag = "decode-" + tag
    return Regime(f"sweep-{tag}", kind, tag, pos)


def _divisor(h: int) -> int | None:
    """The largest proper divisor > 1 of ``h`` (k heads of a GQA case), or None."""
    return next((d for d in range(h // 2, 1, -1) if h % d == 0), None)


@dataclass(frozen=True)
class ShapeRow:
    """One row of the covering design, in values."""

    kind: Kind
    tokens: int
    heads: int | str  # NA for a table
    batch: int
    pairs: int
    window: str  # NA for a table
    dtype: str
    pairing: str
    positions: str
    layout: str  # NA for a table
    form: str | None  # a CALL_FORMS word, None (stage(x) -> y), NA for a table
    k_shape: str | None  # a QK_SHAPES word, None (k shaped like q), NA when not a q+k call

    @property
    def qk(self) -> bool:
        return isinstance(self.form, str) and self.form.startswith("qk")

    @property
    def call_form(self) -> str | None:
        """The CALL_FORMS word (None: ``stage(x) -> y``; tables have none)."""
        return None if self.form == NA else self.form

    @property
    def memory_layout(self) -> str:
        return CONTIGUOUS if self.layout == NA else self.layout

    @property
    def head_count(self) -> int:
        """Heads of x (q); 1 for a table (which has none)."""
        return 1 if self.heads == NA else int(self.heads)

    @property
    def k_heads(self) -> int | None:
        """k's heads in a q+k call: q's, q's largest proper divisor (GQA), 1 (MQA, MLA's rope part)."""
        if not self.qk:
            return None
        if self.k_shape == "gqa":
            return _divisor(self.head_count)
        return 1 if self.k_shape in ("mqa", "head_dims") else self.head_count

    @property
    def spec(self) -> RopeSpec:
        return window_spec(self.pairs, "full" if self.window == NA else self.window, self.pairing)

    @property
    def k_spec(self) -> RopeSpec | None:
        return RopeSpec(2 * self.pairs, pairing=self.pairing, theta=10000.0) if self.k_shape == "head_dims" else None

    @property
    def token_rows(self) -> int:
        if self.kind.grid == "packed":
            return sum(packed_lengths(self.tokens, self.batch))
        return self.batch * self.tokens

    def elements(self) -> int:
        """Elements of x (plus k): the case's size."""
        return _elements(self.kind.grid, self.tokens, self.head_count, self.batch, self.pairs,
                         "full" if self.window == NA else self.window, self.k_heads, self.k_shape == "head_dims")


def _extra(n: int) -> int:
    return WINDOW_OFFSETS[PAIR_COUNTS.index(n) % len(WINDOW_OFFSETS)] if n in PAIR_COUNTS else 1


def _elements(grid: str, tokens: int, heads: int, batch: int, pairs: int, window: str, k_heads: int | None,
              k_rope_only: bool) -> int:
    """Elements of x (plus k) of a row: token rows x (heads x head dim + k heads x k's head dim)."""
    rows = sum(packed_lengths(tokens, batch)) if grid == "packed" else batch * tokens
    if grid == "table":
        return rows * pairs
    dim = 2 * pairs + (0 if window == "full" else _extra(pairs))
    k_dim = 2 * pairs if k_rope_only else dim
    return rows * (heads * dim + (k_heads or 0) * k_dim)


def _finest(iface: Interface) -> list[str]:
    return [d for d in ("float64", "float32", "float16", "bfloat16") if d in iface.dtypes]


def _dims(iface: Interface) -> list[Sequence[Any]]:
    """The dimensions of the design, each cheapest (and most compatible) value first. A value that does
    not apply is :data:`NA` (a table has no heads, window, layout or call form; k's shape applies to
    q+k calls only), so that a pair is covered only by a case where both values mean something."""
    kinds = kinds_of(iface)
    na = [NA] if any(k.grid == "table" for k in kinds) else []
    windows = ["full"] + [w for w, f in (("partial", "partial"), ("last", "window_last")) if f in iface.features] + na
    positions = [m for m in POSITIONS if m != "rows" or "per_batch_positions" in iface.features]
    layouts = [CONTIGUOUS] + [lay for lay in LAYOUTS if lay in iface.layouts] + na
    forms: list[str | None] = [None, *(w for w in CALL_FORMS if w in iface.call_forms), *na]
    k_shapes: list[str | None] = [NA]
    if any(w is not None and w.startswith("qk") for w in forms):
        k_shapes += [None] + [s for s in QK_SHAPES if s in iface.qk_shapes]
    pairings = [p for p in PAIRINGS if p in iface.pairings]
    return [kinds, TOKENS, [*HEAD_COUNTS, *na], BATCH_ROWS, PAIR_COUNTS, windows, _finest(iface), pairings, positions,
            layouts, forms, k_shapes]


def _row(dims: list[Sequence[Any]], idx: Sequence[int]) -> ShapeRow:
    return ShapeRow(*(d[i] for d, i in zip(dims, idx)))


_UNSET = object()


def _conflict(v: list[Any], iface: Interface, table_dtype: str) -> bool:
    """Whether the values set so far (``_UNSET`` elsewhere) break a rule of the sweep."""
    kind, tokens, heads, _batch, _pairs, window, dtype, _pairing, positions, layout, form, k_shape = v
    grid = kind.grid if kind is not _UNSET else None
    stage = kind.stage if kind is not _UNSET else None
    if grid == "decode" and tokens not in (_UNSET, 1):
        return True
    not_applicable = {x == NA for x in (heads, window, layout, form) if x is not _UNSET}
    if len(not_applicable) > 1 or (grid is not None and not_applicable and not_applicable != {grid == "table"}):
        return True  # a table has none of them, every other interface has all of them
    if grid == "table" and dtype not in (_UNSET, table_dtype):
        return True
    if grid == "packed" and positions == "rows":
        return True  # packed sequences always have their own offsets ("odd" gives each its own)
    if layout not in (_UNSET, CONTIGUOUS, NA) and stage is not None and stage not in FORM_STAGES:
        return True
    if form not in (_UNSET, None, NA) and stage is not None and (stage not in FORM_STAGES or form_method(stage, form) not in iface.methods):
        return True
    if k_shape is not _UNSET and form is not _UNSET and (k_shape == NA) != (not (isinstance(form, str) and form.startswith("qk"))):
        return True  # k's shape applies exactly to q+k calls
    if k_shape not in (_UNSET, None, NA):
        if heads == NA or (k_shape == "gqa" and heads is not _UNSET and _divisor(heads) is None):
            return True
        if k_shape == "mqa" and heads == 1:
            return True
        if k_shape == "head_dims" and window not in (_UNSET, "last"):
            return True
    return False


def _allowed(dims: list[Sequence[Any]], idx: Sequence[int | None], iface: Interface, table_dtype: str) -> bool:
    """The sweep's rules on a partial row (``None``: not set) and its size: the cheapest values in the
    unset dimensions (index 0: 1 token, 1 head, 1 row, 1 pair, a full window, no k) keep the row
    within :data:`MAX_ELEMENTS`."""
    v: list[Any] = [d[i] if i is not None else _UNSET for d, i in zip(dims, idx)]
    if _conflict(v, iface, table_dtype):
        return False
    cheapest: list[Any] = [d[0] if x is _UNSET else x for d, x in zip(dims, v)]
    _, tokens, heads, batch, pairs, window, _, _, _, _, form, k_shape = cheapest
    heads = 1 if heads == NA else heads
    window = "full" if window == NA else window
    if v[10] is _UNSET and k_shape != NA:
        form = "qk"  # k's shape is set: the row is a q+k call
    if k_shape == "gqa" and _divisor(heads) is None:
        heads = 4
    k_heads = None
    if isinstance(form, str) and form.startswith("qk") and k_shape != NA:
        k_heads = _divisor(heads) if k_shape == "gqa" else 1 if k_shape in ("mqa", "head_dims") else heads
    kinds = [v[0]] if v[0] is not _UNSET else [kd for kd in dims[0] if not _conflict([kd, *v[1:]], iface, table_dtype)]
    grids = {kd.grid for kd in kinds}
    return any(_elements(g, tokens, heads, batch, pairs, window, k_heads, k_shape == "head_dims") <= MAX_ELEMENTS for g in grids)


#: the dimensions of :func:`_dims` that are categories (spread evenly), not sizes (cheapest first)
_BALANCED = (0, 5, 6, 7, 8, 9, 10, 11)


def sweep_rows(iface: Interface) -> list[ShapeRow]:
    """The rows of the pairwise covering design for ``iface`` (empty when it has no interface to sweep)."""
    dims = _dims(iface)
    if not dims[0] or not dims[6] or not dims[7]:
        return []
    table_dtype = dims[6][0]
    rows = covering_array(dims, lambda idx: _allowed(dims, idx, iface, table_dtype), balanced=_BALANCED)
    return [_row(dims, idx) for idx in rows]


#: (batch rows, tokens per row) of the cases of more than 4096 token rows, per token grid
BIG_ROWS = {"bshd": ((1, 4099), (5, 1025)), "table": ((1, 4099), (5, 1025)), "decode": ((4099, 1), (5003, 1)),
            "packed": ((1, 4097), (3, 4097))}


def _extra_rows(iface: Interface) -> list[tuple[ShapeRow, str | None]]:
    """Two cases of more than 4096 token rows and one empty input per axis (where the declaration has
    ``zero_size``), per interface."""
    dtypes, pairings = _finest(iface), [p for p in PAIRINGS if p in iface.pairings]
    if not dtypes or not pairings:
        return []
    out: list[tuple[ShapeRow, str | None]] = []
    for k, kind in enumerate(kinds_of(iface)):
        table = kind.grid == "table"
        for i, (batch, tokens) in enumerate(BIG_ROWS[kind.grid]):
            dt = dtypes[0] if table else dtypes[(k + i) % len(dtypes)]
            heads = 1 if table else 3
            out.append((ShapeRow(kind, tokens, heads, batch, (5, 3)[i], "full", dt, pairings[(k + i) % len(pairings)],
                                 "odd", CONTIGUOUS, None, NA), None))
        if "zero_size" in iface.features and kind.grid != "packed":
            for axis in ("batch", "tokens", "heads"):
                if (axis == "heads" and table) or (axis == "tokens" and kind.grid == "decode"):
                    continue
                row = ShapeRow(kind, 5, 1 if table else 3, 3, 3, "full", dtypes[0] if table else dtypes[k % len(dtypes)],
                               pairings[k % len(pairings)], "odd", CONTIGUOUS, None, NA)
                out.append((row, axis))
    return out


def _variant(row: ShapeRow) -> str:
    spec = row.spec
    if row.window in ("full", NA):
        return f"sweep-n{row.pairs}"
    if row.window == "partial":
        return f"sweep-n{row.pairs}-tail{spec.head_dim - spec.resolved_rotary_dim}"
    return f"sweep-n{row.pairs}-last{spec.rotary_start}"


def shape_case(row: ShapeRow, empty: str | None = None) -> GenCase:
    """The generated case of one sweep row (``empty``: the axis left empty, for a zero-size case)."""
    kind, spec = row.kind, row.spec
    batch, tokens, heads = row.batch, row.tokens, row.head_count
    if empty == "batch":
        batch = 0
    elif empty == "tokens":
        tokens = 0
    elif empty == "heads":
        heads = 0
    reg = token_regime(kind.grid, batch, tokens, row.positions)
    if empty is not None:
        reg = Regime(f"sweep-empty-{empty}", reg.kind, f"empty-{empty}", reg.positions, reg.cu_seqlens)
    form = None
    word = row.call_form
    if row.memory_layout != CONTIGUOUS or word is not None:
        form = CallForm(row.memory_layout, inplace=bool(word and word.endswith("inplace")), qk=row.qk, k_spec=row.k_spec)
    k_heads = row.k_heads
    if empty == "heads" and k_heads is not None:
        k_heads = 0
    grid = reg.grid()
    if kind.stage == "cos_sin":
        shape: tuple[int, ...] = grid if len(grid) == 2 else (1, grid[0])
    else:
        shape = (*grid, heads, spec.head_dim)
    tag = reg.tag + form_tag(form, k_heads, row.k_spec.head_dim if row.k_spec is not None else None)
    case_id = f"{case_family(kind.stage, spec)}/{_variant(row)}/{spec.pairing}/{row.dtype}/{shape_tag(shape, kind.stage, spec.head_dim)}/{tag}"
    flags = ["generated", "shape-sweep"]
    if empty is not None:
        flags.append("zero-size")
    if reg.grid() and int(np.prod(reg.grid())) > 4096:
        flags.append("rows>4096")
    if form is not None and form.layout != CONTIGUOUS:
        flags.append("strided")
    if form is not None and form.inplace:
        flags.append("in-place")
    if form is not None and form.qk:
        flags.append("q-k")
    light = light_case(case_id, kind.stage, spec, row.dtype, reg, heads, form, k_heads, tuple(flags))
    return GenCase(case_id, kind.stage, _variant(row), spec, row.dtype, reg, light, heads, form, k_heads, tuple(flags))


def sweep_cases(iface: Interface) -> list[GenCase]:
    """The shape sweep of ``iface``: the covering design's cases, then the empty and > 4096-row ones
    (unique ids; the caller keeps those the declaration and the backend accept)."""
    out: dict[str, GenCase] = {}
    for row in sweep_rows(iface):
        g = shape_case(row)
        out.setdefault(g.id, g)
    for row, empty in _extra_rows(iface):
        g = shape_case(row, empty)
        out.setdefault(g.id, g)
    return list(out.values())

