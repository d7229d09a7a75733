"""Named position regimes of the generated cases (docs/spec.md section 6: what positions expose bugs).

Each regime fixes the token grid and the positions; its *tag* (the last part of a case id)
says what the positions are, so the id alone rebuilds the case:

===============  =========================================================================
regime           positions (plain RoPE; B = 2, T = 16 unless said)
===============  =========================================================================
``at0``          every row 0..15 (tag ``from0``)
``near256``      every row 249..264: crosses 256, past which bfloat16 skips integers
``near2048``     every row 2041..2056: crosses 2048 (float16)
``near4096``     every row 4089..4104 (4093, 4095, 4097: odd positions around 4096)
``near65536``    every row 65529..65544: past 65504 float16 overflows
``near2p20``     every row 2^20 - 7 ..
``top2p31``      every row 2^31 - 16 .. 2^31 - 1
``rows``         per-row offsets: row 0 from 4093, row 1 from 251 (tag ``rows4093-251``)
``sparse``       sorted odd positions, different per row (256 .. 2^24 + 1)
``step``         decode: B = 4, T = 1, positions 4095, 7, 1048573, 257
``packed``       32 packed tokens, sequences of 1, 8, 2, 9, 12 tokens from 0, 4091, 0, 257, 1048571
``below-L0``     every row 4064..4079: seq_len 4080 < L0 = 4096 (longrope short factors)
``at-L0``        every row 4080..4095: seq_len 4096 = L0
``past-L0``      every row 4081..4096: seq_len 4097 > L0 (long factors)
``at-M``         every row 2032..2047: seq_len 2048 = M (dynamic NTK unscaled)
``past-M``       every row 4089..4104: seq_len 4105 > M = 2048
``mrope-image``  mRoPE text + 3x4 image + text ids, rows from 0 and 4091 (positions [3, 2, 16])
``vision-grid``  2-D (h, w): a 3x4 grid plus odd coordinates around 4095 (positions [1, 16, 2])
===============  =========================================================================

An ``inv_freq`` case takes ``seq_len = max(position) + 1`` of its regime (tag ``seq<N>``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roperef.positions import grid_2d, mrope_ids

__all__ = ["Regime", "REGIMES", "regime"]

T = 16


@dataclass(frozen=True)
class Regime:
    """A position regime: ``kind`` (shared, rows, sparse, step, packed, mrope, vision), its tag and positions."""

    name: str
    kind: str
    tag: str
    positions: np.ndarray  # plain [B, T] or packed [N]; mRoPE [3, B, T]; vision [1, N, 2]
    cu_seqlens: np.ndarray | None = None

    @property
    def seq_len(self) -> int:
        return int(np.max(self.positions)) + 1

    def grid(self) -> tuple[int, ...]:
        """The token grid: ``(B, T)``, or ``(N,)`` packed."""
        p = self.positions
        if self.kind == "mrope":
            return tuple(p.shape[1:])
        if self.kind == "vision":
            return tuple(p.shape[:2])
        return tuple(p.shape)


def _shared(name: str, start: int, batch: int = 2) -> Regime:
    rows = np.broadcast_to(start + np.arange(T, dtype=np.int64), (batch, T)).copy()
    return Regime(name, "shared", f"from{start}", rows)


def _packed() -> Regime:
    lengths, offsets = [1, 8, 2, 9, 12], [0, 4091, 0, 257, 1048571]
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    pos = np.concatenate([off + np.arange(n) for off, n in zip(offsets, lengths)]).astype(np.int64)
    return Regime("packed", "packed", "packed", pos, cu)


def _sparse() -> Regime:
    row0 = [1, 255, 257, 2047, 2049, 4093, 4095, 4097, 65503, 65505, 65537, 1048573, 1048577, 4194305, 16777213, 16777217]
    row1 = [3, 253, 259, 1023, 2051, 4091, 4099, 8191, 32769, 65501, 131073, 524287, 1048579, 8388607, 16777215, 16777219]
    return Regime("sparse", "sparse", "sparse", np.array([row0, row1], dtype=np.int64))


def _mrope() -> Regime:
    ids = mrope_ids([3, (1, 3, 4), 1])  # [3, 16]: text, a 3x4 image, text
    pos = np.stack([ids, ids + 4091], axis=1).astype(np.int64)
    return Regime("mrope-image", "mrope", "image0-4091", pos)


def _vision() -> Regime:
    grid = grid_2d(3, 4)
    extra = np.array([[4093, 4094], [4094, 4095], [4095, 4096], [4097, 257]], dtype=np.int64)
    return Regime("vision-grid", "vision", "grid3x4-4095", np.concatenate([grid, extra])[None].astype(np.int64))


def _all() -> dict[str, Regime]:
    out = [
        _shared("at0", 0), _shared("near256", 249), _shared("near2048", 2041), _shared("near4096", 4089),
        _shared("near65536", 65529), _shared("near2p20", 2**20 - 7), _shared("top2p31", 2**31 - T),
        Regime("rows", "rows", "rows4093-251", np.stack([4093 + np.arange(T), 251 + np.arange(T)]).astype(np.int64)),
        _sparse(),
        Regime("step", "step", "step", np.array([[4095], [7], [1048573], [257]], dtype=np.int64)),
        _packed(),
        _shared("below-L0", 4064), _shared("at-L0", 4080), _shared("past-L0", 4081),
        _shared("at-M", 2032), _shared("past-M", 4089),
        _mrope(), _vision(),
    ]
    return {r.name: r for r in out}


REGIMES: dict[str, Regime] = _all()

#: The plain regimes every backend's interface is judged in (contiguous from 0 up to 2^31, per-row
#: offsets, sparse, decode, packed); scaling-specific ones (L0, M) come with the probes.
COVERAGE_REGIMES = ("at0", "near256", "near2048", "near4096", "near65536", "near2p20", "top2p31", "rows", "sparse", "step", "packed")


def regime(name: str) -> Regime:
    return REGIMES[name]
