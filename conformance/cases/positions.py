"""Position recipes of the case catalogue (docs/spec.md section 6: what positions expose bugs).

Rules every recipe follows:

- position 0 hides every layout and scaling bug, and round positions (powers of two,
  multiples of 1000) hide low-precision position bugs, so every regime holds odd
  positions >= 1;
- every forward-like regime holds odd positions around 4095 (4093 and 4095 at least):
  a position or inv_freq rounded to bfloat16 is off by O(1) radians there, and every
  regime holds positions > 256 (past which bfloat16 cannot hold every integer);
- the ``short`` regime ends at 4095, so ``seq_len = max(position) + 1 = 4096``: the
  longrope/dynamic boundary ``seq_len = L0`` of the common L0 = 4096.

Regimes (``x`` shape ``[B, T, H, D]`` unless said):

============  =======================================================================
``short``     row 0 contiguous from 0; the last row contiguous ending at 4095; rows in
              between start at 257 + 2b (B = 1: first half from 0, second half to 4095)
``long-odd``  sorted distinct odd positions in [1, 2^20), row 0 forced to hold
              4093, 4095, 4097 and 2^20 - 1
``near-2p31`` row 0 the odd positions 2^31 - 1 - 2k; other rows contiguous from 4091
              (B = 1: first half the odd positions 4093, 4095, ...)
``offsets``   contiguous rows with per-row offsets -(T + 21), 4089, 257, 1, ...
``decode``    T = 1, B > 1, offsets 4095, 7, 1048573, 4093, 257, 2147483645, ...
``varlen``    packed ``[N, H, D]`` + ``cu_seqlens``; >= 5 ragged sequences (one of length
              1), each restarting at its own offset (0, 4091, 0, 257, 1048571, ...)
============  =======================================================================

mRoPE (positions ``[3, B, T]``): ``text-image`` (3 text tokens, an image grid, text;
Qwen2-VL ids, row b shifted by the regime's offset), ``text-only`` (three equal rows of
``short``), ``long-odd`` (text-image shifted by large odd offsets). 2-D vision (positions
``[1, N, 2]``): ``grid`` (a raster grid plus a few tokens at odd coordinates around 4095),
``long-odd`` (the same, the grid shifted by large odd offsets).
"""

from __future__ import annotations

import numpy as np

from roperef.errors import bad
from roperef.positions import check_positions, grid_2d, mrope_ids

__all__ = ["PLAIN_REGIMES", "MROPE_REGIMES", "VISION_REGIMES", "REGIME_FLAGS", "build_positions", "varlen_lengths"]

PLAIN_REGIMES = ("short", "long-odd", "near-2p31", "offsets", "decode", "varlen")
MROPE_REGIMES = ("text-image", "text-only", "long-odd")
VISION_REGIMES = ("grid", "long-odd")

#: flags each regime adds to a case (the vocabulary: conformance.vocabulary.FLAGS)
REGIME_FLAGS: dict[str, tuple[str, ...]] = {
    "short": ("odd-position", "offset", "boundary"),
    "long-odd": ("odd-position", "long-position"),
    "near-2p31": ("odd-position", "long-position", "boundary"),
    "offsets": ("odd-position", "offset", "negative-offset"),
    "decode": ("odd-position", "offset", "decode-b>1-t1"),
    "varlen": ("odd-position", "offset", "varlen"),
    "text-image": ("odd-position", "offset", "text-image"),
    "text-only": ("odd-position", "offset", "text-only"),
    "grid": ("odd-position",),
}

_AROUND_4095 = np.array([4093, 4095, 4097], dtype=np.int64)
_TOP_2P20 = 2**20 - 1
_TOP_2P31 = 2**31 - 1


def _short_rows(batch: int, seq: int) -> np.ndarray:
    if batch == 1:
        first = seq // 2
        return np.concatenate([np.arange(first), 4096 - (seq - first) + np.arange(seq - first)])[None].astype(np.int64)
    starts = [0] + [257 + 2 * b for b in range(1, batch - 1)] + [4096 - seq]
    return (np.asarray(starts, dtype=np.int64)[:, None] + np.arange(seq, dtype=np.int64)[None, :]).astype(np.int64)


def _long_odd_rows(batch: int, seq: int, rng: np.random.Generator, top: int = _TOP_2P20) -> np.ndarray:
    rows = []
    for b in range(batch):
        forced = np.concatenate([_AROUND_4095, [top]]) if b == 0 else np.array([top - 2 * b - 2], dtype=np.int64)
        forced = forced[:seq]
        pool = rng.choice(top // 2, size=seq + 8, replace=False) * 2 + 1  # odd values in [1, top]
        pool = np.setdiff1d(pool, forced)[: seq - forced.size]
        rows.append(np.sort(np.concatenate([forced, pool]).astype(np.int64)))
    return np.stack(rows)


def _near_2p31_rows(batch: int, seq: int) -> np.ndarray:
    top = _TOP_2P31 - 2 * np.arange(seq, dtype=np.int64)[::-1]
    if batch == 1:
        half = seq // 2
        return np.concatenate([4093 + 2 * np.arange(half), top[half:]])[None].astype(np.int64)
    rest = [4091 + 2 * (b - 1) + np.arange(seq, dtype=np.int64) for b in range(1, batch)]
    return np.stack([top, *rest]).astype(np.int64)


def _offset_rows(batch: int, seq: int) -> np.ndarray:
    offsets = [-(seq + 21), 4089, 257, 1, 65533, -3][:batch]
    offsets += [131 + 2 * b for b in range(batch - len(offsets))]
    return np.asarray(offsets, dtype=np.int64)[:, None] + np.arange(seq, dtype=np.int64)[None, :]


def _decode_rows(batch: int, seq: int) -> np.ndarray:
    if seq != 1 or batch < 2:
        bad("decode shape", (batch, seq), "the decode regime needs T = 1 and B > 1")
    offsets = [4095, 7, 1048573, 4093, 257, 2147483645, -5][:batch]
    offsets += [1001 + 2 * b for b in range(batch - len(offsets))]
    return np.asarray(offsets, dtype=np.int64)[:, None]


def varlen_lengths(tokens: int) -> list[int]:
    """Ragged lengths summing to ``tokens`` (>= 5 sequences, the first of length 1)."""
    if tokens < 15:
        bad("varlen tokens", tokens, "the varlen regime needs >= 15 tokens (>= 5 ragged sequences)")
    base = [1, 3, 2, 5, 4]
    rest = tokens - sum(base)
    return [1, 3 + rest // 2, 2, 5 + rest - rest // 2 - rest // 3, 4 + rest // 3] if rest else base


def _varlen(tokens: int) -> tuple[np.ndarray, np.ndarray]:
    lengths = varlen_lengths(tokens)
    offsets = [0, 4091, 0, 257, 1048571, 4093, 0, 33][: len(lengths)]
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    pos = np.concatenate([off + np.arange(n) for off, n in zip(offsets, lengths)]).astype(np.int64)
    return pos, cu


def _mrope(batch: int, seq: int, offsets: list[int]) -> np.ndarray:
    grid_tokens = seq - 3 - max(seq // 4, 1)
    h = max(int(np.sqrt(grid_tokens)), 1)
    while grid_tokens % h:
        h -= 1
    ids = mrope_ids([3, (1, h, grid_tokens // h), seq - 3 - grid_tokens])  # [3, T]
    offs = offsets[-batch:] if batch < len(offsets) else (offsets * batch)[:batch]
    return np.stack([ids + off for off in offs], axis=1).astype(np.int64)  # [3, B, T]


def _vision(tokens: int, shift: tuple[int, int]) -> np.ndarray:
    extra = np.array([[4093, 4094], [4094, 4095], [4095, 4096], [4096, 4097], [4097, 257], [1, 4095]], dtype=np.int64)
    k = min(len(extra), max(tokens // 4, 2))
    grid_tokens = tokens - k
    h = max(int(np.sqrt(grid_tokens)), 1)
    while grid_tokens % h:
        h -= 1
    grid = grid_2d(h, grid_tokens // h) + np.asarray(shift, dtype=np.int64)
    return np.concatenate([grid, extra[:k]])[None].astype(np.int64)  # [1, N, 2]


def build_positions(
    regime: str, n_axes: int, grid: tuple[int, ...], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(positions int64, cu_seqlens int64 or None)`` for a regime on the token grid ``grid``.

    ``grid`` is ``(B, T)`` (bshd) or ``(N,)`` (packed thd, ``varlen`` only); ``n_axes`` is
    the spec's position rows (1 plain, 3 mRoPE, 2 vision).
    """
    if n_axes == 1:
        if regime == "varlen":
            if len(grid) != 1:
                bad("varlen grid", grid, "the varlen regime needs packed x [N, H, D]")
            pos, cu = _varlen(grid[0])
            return check_positions(pos), cu
        if len(grid) != 2:
            bad(f"{regime} grid", grid, "needs bshd x [B, T, H, D]")
        b, t = grid
        makers = {
            "short": lambda: _short_rows(b, t),
            "long-odd": lambda: _long_odd_rows(b, t, rng),
            "near-2p31": lambda: _near_2p31_rows(b, t),
            "offsets": lambda: _offset_rows(b, t),
            "decode": lambda: _decode_rows(b, t),
        }
        if regime not in makers:
            bad("positions regime", regime, f"expected one of {', '.join(PLAIN_REGIMES)} for plain RoPE")
        return check_positions(makers[regime]()), None
    if n_axes == 3:
        b, t = grid
        if regime == "text-image":
            return check_positions(_mrope(b, t, [0, 4091])), None
        if regime == "long-odd":
            return check_positions(_mrope(b, t, [4091, 1048001])), None
        if regime == "text-only":
            return check_positions(np.broadcast_to(_short_rows(b, t), (3, b, t)).copy()), None
        bad("positions regime", regime, f"expected one of {', '.join(MROPE_REGIMES)} for mRoPE")
    if n_axes == 2:
        if len(grid) != 2 or grid[0] != 1:
            bad("vision grid", grid, "2-D vision cases use x [1, N, H, D]")
        if regime == "grid":
            return check_positions(_vision(grid[1], (0, 0))), None
        if regime == "long-odd":
            return check_positions(_vision(grid[1], (524287, 1048001))), None
        bad("positions regime", regime, f"expected one of {', '.join(VISION_REGIMES)} for 2-D vision")
    bad("n_axes", n_axes, "must be 1, 2 or 3")
