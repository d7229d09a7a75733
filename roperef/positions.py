"""Position-id helpers: contiguous, per-batch offsets, packed varlen, mRoPE rows, 2-D grids.

All return int64 arrays. Positions may be any integer in ``[-2^31, 2^31)``
(:data:`POSITION_MIN`, :data:`POSITION_MAX`); :func:`check_positions` enforces it.

Shapes (docs/spec.md section 1): plain ``[batch, seq]`` (or ``[tokens]`` packed);
mRoPE ``[3, batch, seq]`` or ``[3, tokens]`` (rows t, h, w); vision ``[tokens, 2]``
(columns h, w).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import bad

__all__ = [
    "POSITION_MIN",
    "POSITION_MAX",
    "check_positions",
    "check_cu_seqlens",
    "contiguous",
    "varlen",
    "mrope_ids",
    "grid_2d",
]

POSITION_MIN = -(2**31)
POSITION_MAX = 2**31 - 1

Segment = int | tuple[int, int, int]


def check_positions(positions: object, name: str = "positions") -> np.ndarray:
    """``positions`` as an int64 array; TypeError for non-integer dtypes, ValueError out of range."""
    arr = np.asarray(positions)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        bad(f"{name}.dtype", str(arr.dtype), "positions must be an integer array (int64)", TypeError)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < POSITION_MIN or hi > POSITION_MAX:
            worst = lo if lo < POSITION_MIN else hi
            bad(name, worst, f"positions must lie in [-2^31, 2^31) = [{POSITION_MIN}, {POSITION_MAX}]")
    return arr.astype(np.int64, copy=False)


def check_cu_seqlens(cu_seqlens: object, n_tokens: int, name: str = "cu_seqlens") -> np.ndarray:
    """Validated int64 cumulative lengths: starts at 0, strictly increasing, ends at ``n_tokens``."""
    cu = np.asarray(cu_seqlens)
    if cu.dtype == np.bool_ or cu.dtype.kind not in "iu":
        bad(f"{name}.dtype", str(cu.dtype), "must be an integer array", TypeError)
    if cu.ndim != 1 or cu.shape[0] < 2:
        bad(f"{name}.shape", cu.shape, "must be 1-D with at least 2 entries [0, len0, len0+len1, ...]")
    cu = cu.astype(np.int64)
    if cu[0] != 0:
        bad(f"{name}[0]", int(cu[0]), "must be 0")
    steps = np.diff(cu)
    if (steps <= 0).any():
        i = int(np.argmax(steps <= 0))
        bad(name, cu.tolist(), f"must be strictly increasing (entry {i + 1} = {int(cu[i + 1])} <= {int(cu[i])})")
    if int(cu[-1]) != n_tokens:
        bad(f"{name}[-1]", int(cu[-1]), f"must equal the token count {n_tokens}")
    return cu


def contiguous(batch: int, seq_len: int, offsets: int | Sequence[int] | np.ndarray = 0) -> np.ndarray:
    """``[batch, seq_len]`` positions ``offsets[b] + t`` (offsets scalar or per batch row; may be negative)."""
    if batch < 1 or seq_len < 1:
        bad("batch, seq_len", (batch, seq_len), "must both be >= 1")
    off = check_positions(np.broadcast_to(np.asarray(offsets), (batch,)) if np.ndim(offsets) == 0 else offsets, "offsets")
    if off.shape != (batch,):
        bad("offsets.shape", off.shape, f"must be a scalar or have shape ({batch},)")
    return check_positions(off[:, None] + np.arange(seq_len, dtype=np.int64)[None, :])


def varlen(cu_seqlens: object, offsets: int | Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Packed positions ``[tokens]`` restarting at each sequence start (plus optional per-sequence offsets)."""
    cu = np.asarray(cu_seqlens)
    total = int(cu[-1]) if cu.ndim == 1 and cu.size and cu.dtype.kind in "iu" else -1  # else reported below
    cu = check_cu_seqlens(cu, total)
    lengths = np.diff(cu)
    starts = np.repeat(cu[:-1], lengths)
    pos = np.arange(total, dtype=np.int64) - starts
    if offsets is not None:
        off = check_positions(offsets, "offsets")
        if off.ndim == 0:
            off = np.full(lengths.shape, int(off), dtype=np.int64)
        if off.shape != lengths.shape:
            bad("offsets.shape", off.shape, f"must be a scalar or have one entry per sequence ({lengths.shape[0]})")
        pos = pos + np.repeat(off, lengths)
    return check_positions(pos)


def mrope_ids(segments: Sequence[Segment], t_stride: int = 1) -> np.ndarray:
    """Qwen2-VL style 3-row position ids ``[3, tokens]`` for a mix of text runs and image/video grids.

    ``segments``: an int ``L`` is a text run (all three rows ``start + arange(L)``);
    a tuple ``(t, h, w)`` is a vision grid (already spatially merged), rows
    ``start + t_idx*t_stride``, ``start + h_idx``, ``start + w_idx`` in (t, h, w) raster order.
    Each segment starts at ``max(previous ids) + 1`` (0 for the first).
    """
    rows: list[np.ndarray] = []
    start = 0
    for k, seg in enumerate(segments):
        if isinstance(seg, (int, np.integer)):
            if seg < 1:
                bad(f"segments[{k}]", seg, "a text run needs length >= 1")
            block = np.broadcast_to(start + np.arange(int(seg), dtype=np.int64), (3, int(seg)))
        else:
            if (
                not isinstance(seg, (tuple, list))
                or len(seg) != 3
                or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in seg)
            ):
                bad(f"segments[{k}]", seg, "a vision grid is (t, h, w) with each >= 1")
            t, h, w = (int(v) for v in seg)
            tt, hh, ww = np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij")
            block = np.stack([tt.ravel() * t_stride, hh.ravel(), ww.ravel()]).astype(np.int64) + start
        rows.append(np.array(block))
        start = int(block.max()) + 1
    if not rows:
        bad("segments", list(segments), "must hold at least one segment")
    return check_positions(np.concatenate(rows, axis=1))


def grid_2d(height: int, width: int) -> np.ndarray:
    """2-D vision positions ``[height*width, 2]``: (row, column) of each patch in raster order."""
    if height < 1 or width < 1:
        bad("height, width", (height, width), "must both be >= 1")
    hh, ww = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    return np.stack([hh.ravel(), ww.ravel()], axis=1).astype(np.int64)
