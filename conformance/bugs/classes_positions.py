"""Bug classes of positions and batching (docs/spec.md sections 1 and 6)."""

from __future__ import annotations

from typing import SupportsInt

import numpy as np

from roperef.positions import varlen

from ..cases.case import GoldenCase
from .decoy import Decoy
from .facts import CaseFacts
from .model import BugClass, Family, Hints, Probe
from .rounding import round_to

__all__ = ["POSITION_CLASSES"]

POS = frozenset({"cos_sin", "forward", "backward"})
TENSOR = frozenset({"forward", "backward"})


def _plain(spec) -> bool:
    return spec.n_axes == 1


def _packed(case: GoldenCase) -> bool:
    return "cu_seqlens" in case.arrays


def _cu(case: GoldenCase) -> np.ndarray:
    return np.asarray(case.arrays["cu_seqlens"], dtype=np.int64)


def _zero(case: GoldenCase, _: object) -> Decoy:
    return Decoy("positions:zero", "every token at position 0 (positions ignored)", rows=lambda r: np.zeros_like(r))


def _shift_candidates(case: GoldenCase, hints: Hints) -> list[int]:
    out = [1, -1, 2, -2, 3, -3, 4, -4]
    k = hints.get("shift")
    if isinstance(k, (int, np.integer)) and k != 0 and abs(int(k)) < 2**32:
        out.insert(0, int(k))
    return list(dict.fromkeys(out))


def _shift(case: GoldenCase, param: SupportsInt) -> Decoy | None:
    k = int(param)
    if k == 0:
        return None
    words = f"positions off by one (p{k:+d})" if abs(k) == 1 else f"positions off by {k:+d} (p{k:+d} used for p)"
    return Decoy("positions:shifted", words, param=k, rows=lambda r: r + k)


def _rounded(dtype: str, limit: int):
    """Positions rounded to ``dtype``: directly (param None), or built in that dtype's arithmetic as
    ``arange(T, dtype) + offset`` (param "offset+index": the row's first position and the index
    are each rounded, then their sum; PyTorch converts the scalar offset to the tensor dtype first)."""
    short = {"bfloat16": "bf16", "float16": "fp16"}[dtype]

    def make(case: GoldenCase, how: object) -> Decoy:
        extra = "; float16 positions above 65504 overflow to inf" if dtype == "float16" else ""
        if how is None:
            return Decoy(f"positions:{short}", f"positions rounded to {dtype} (exact only up to {limit}{extra})", round_positions=dtype)
        starts = _row_starts(case)
        return Decoy(f"positions:{short}", f"positions built in {dtype} arithmetic: offset and index rounded to {dtype}, then "
                     f"their sum (arange(T, dtype={dtype}) + offset; exact only up to {limit}{extra})", param=how,
                     rows=lambda r: _offset_plus_index(r, starts(r), dtype))

    return make


def _row_starts(case: GoldenCase):
    """``rows -> starts`` (same shape): each token's row start (bshd) or packed-sequence start."""
    if _packed(case):
        cu = _cu(case)
        idx = np.repeat(cu[:-1], np.diff(cu))
        return lambda r: r[..., idx]
    return lambda r: np.broadcast_to(r[..., :1], r.shape)


def _offset_plus_index(r: np.ndarray, start: np.ndarray, dtype: str) -> np.ndarray:
    return round_to(dtype, round_to(dtype, r - start) + round_to(dtype, start))


def _offsets_ignored(case: GoldenCase, _: object) -> Decoy | None:
    if _packed(case):
        restart = varlen(_cu(case))
        return Decoy("positions:offsets-ignored", "per-sequence offsets ignored (every packed sequence starts at 0)",
                     rows=lambda r: np.broadcast_to(restart, r.shape).copy())
    if case.arrays["positions"].ndim < 2:
        return None
    return Decoy("positions:offsets-ignored", "position offsets ignored (every row starts at 0: positions = arange(T))",
                 rows=lambda r: np.broadcast_to(np.arange(r.shape[-1]), r.shape).copy())


def _row0(case: GoldenCase, _: object) -> Decoy | None:
    pos = case.arrays["positions"]
    if _packed(case) or pos.ndim - (case.spec.n_axes == 3) < 2 or pos.shape[-2] < 2:
        return None
    return Decoy("positions:row0-everywhere", "batch row 0's positions used for every row",
                 rows=lambda r: np.broadcast_to(r[:, :1], r.shape).copy())


def _cu_ignored(case: GoldenCase, _: object) -> Decoy | None:
    if not _packed(case):
        return None
    glob = np.arange(int(_cu(case)[-1]), dtype=np.int64)
    return Decoy("positions:cu-seqlens-ignored", "cu_seqlens ignored (positions 0..N-1 run on across the packed sequences)",
                 rows=lambda r: np.broadcast_to(glob, r.shape).copy())


def _no_restart(case: GoldenCase, _: object) -> Decoy | None:
    if not _packed(case):
        return None
    cu = _cu(case)
    start = np.repeat(cu[:-1], np.diff(cu))
    return Decoy("positions:no-restart", "packed sequences keep their offsets but the token index runs on "
                 "(p = offset + global token index instead of offset + index within the sequence)",
                 rows=lambda r: r + start)


def _only_first(case: GoldenCase, _: object) -> Decoy:
    what = "the first packed sequence" if _packed(case) else "batch row 0"
    return Decoy("batch:only-first", f"only {what} rotated (the others passed through)", only_first=True)


def _pos(f: CaseFacts) -> bool:
    return f.has_positions and f.tight(f.min_abs_nonzero)


POSITION_CLASSES: tuple[BugClass, ...] = (
    BugClass(
        "positions:zero", 6, "positions ignored: every token rotated as position 0", POS,
        "cos_sin, forward, backward; every spec", "positions replaced by 0", "any non-zero position",
        Family(_zero), lambda f: _pos(f) and f.any_nonzero,
        probes=(Probe("default", "near4096"),),
    ),
    BugClass(
        "positions:shifted", 6, "positions off by a constant k (p+1, p-1, ...)", POS,
        "cos_sin, forward, backward; every spec", "positions p+k, k fitted (seeded by the effective positions)",
        "any position (the angle moves by k*w)", Family(_shift, _shift_candidates, "int"), _pos,
        probes=(Probe("default", "near4096"),), parameter="k",
    ),
    BugClass(
        "positions:bf16", 6, "positions rounded to bfloat16 (wrong past 256)", POS,
        "cos_sin, forward, backward; every spec", "positions rounded to bfloat16",
        "odd positions past 256 (not bfloat16 numbers) with a tight angle bound",
        Family(_rounded("bfloat16", 256), lambda c, h: (None, "offset+index")), lambda f: f.has_positions and f.tight(f.min_bf16_inexact),
        probes=(Probe("default", "near4096"), Probe("default", "rows")),
    ),
    BugClass(
        "positions:fp16", 6, "positions rounded to float16 (wrong past 2048, inf past 65504)", POS,
        "cos_sin, forward, backward; every spec", "positions rounded to float16 (overflow to inf included)",
        "odd positions past 2048 (not float16 numbers); past 65504 the outputs become NaN",
        Family(_rounded("float16", 2048), lambda c, h: (None, "offset+index")), lambda f: f.has_positions and f.tight(f.min_fp16_inexact),
        probes=(Probe("default", "near4096"), Probe("default", "near65536")),
    ),
    BugClass(
        "positions:offsets-ignored", 1, "per-row (or per-sequence) position offsets ignored: every row from 0", POS,
        "cos_sin, forward, backward; plain RoPE, bshd rows or packed sequences", "positions arange(T) per row (packed: restart at 0)",
        "a row (or packed sequence) not starting at 0",
        Family(_offsets_ignored), lambda f: _pos(f) and f.rows_not_arange and (f.packed_offsets or not f.packed),
        applies=_plain, probes=(Probe("default", "near4096"), Probe("default", "rows"), Probe("default", "packed")),
    ),
    BugClass(
        "positions:row0-everywhere", 1, "batch row 0's positions used for every row", POS,
        "cos_sin, forward, backward; bshd with B > 1 (plain and mRoPE)", "every row gets row 0's positions",
        "batch rows with different positions (per-row offsets, decode B > 1)",
        Family(_row0), lambda f: _pos(f) and f.rows_differ and not f.packed and f.tight(f.row0_max_abs),
        applies=lambda s: s.vision is None, probes=(Probe("default", "rows"), Probe("default", "step"), Probe("mrope-chunked", "mrope-image")),
    ),
    BugClass(
        "positions:cu-seqlens-ignored", 1, "cu_seqlens ignored: positions run on across packed sequences", TENSOR,
        "forward, backward; packed (varlen) input", "positions arange(N) over the packed tokens",
        "packed sequences whose positions are not 0..N-1", Family(_cu_ignored), lambda f: _pos(f) and f.packed_not_global,
        applies=_plain, probes=(Probe("default", "packed"),),
    ),
    BugClass(
        "positions:no-restart", 1, "packed sequences keep their offsets but the token index does not restart", TENSOR,
        "forward, backward; packed (varlen) input", "p = offset + global token index",
        "two or more packed sequences", Family(_no_restart), lambda f: _pos(f) and f.packed and f.rows > 1,
        applies=_plain, probes=(Probe("default", "packed"),),
    ),
    BugClass(
        "batch:only-first", 1, "only batch row 0 (or the first packed sequence) rotated", TENSOR,
        "forward, backward; B > 1 or several packed sequences", "rows after the first passed through unrotated",
        "a later row with a non-zero position", Family(_only_first), lambda f: _pos(f) and f.later_rows_rotate,
        probes=(Probe("default", "near4096"), Probe("default", "packed")),
    ),
)
