"""Tiled RoPE engines with one boundary or layout bug each (meta-tests of the shape sweep).

:class:`TiledEngine` rotates the way a GPU kernel is organised: the token rows of each batch row
(each packed sequence) in tiles of ``token_tile`` tokens, the heads in tiles of ``head_tile``, the
pairs in groups of ``pair_group``, the channels loaded and stored in vectors of 16, at most 4096
token rows per launch (further launches for the rest), and a separate prefill path for rows of 64
tokens or more. Its cos/sin tables come from :class:`bug_engines.BugEngine` (float32 or float64,
frequencies written from the spec, not roperef's). It offers every call form (in place, q with k,
GQA/MQA/MLA shapes) and accepts every memory layout: it reads and writes its views through their
strides.

``bug`` switches one defect on (:data:`TILE_BUGS`); the correct engine (``bug=""``) must PASS every
case of the default run, each buggy one must FAIL on many.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bug_engines import BugEngine
from conformance.backends.base import BaseBackend, Capabilities
from conformance.vocabulary import CALL_FORMS, FEATURES, LAYOUTS, QK_SHAPES, STAGES

__all__ = ["TiledEngine", "TILE_BUGS"]

#: bug -> what it does
TILE_BUGS: dict[str, str] = {
    "head-tile4-tail": "heads in tiles of 4; the heads after the last full tile are not rotated",
    "odd-heads": "heads two at a time; the last head of an odd count is not rotated",
    "rows-4096": "one launch of at most 4096 token rows; the rows after it are not rotated",
    "prefill-64": "the prefill path (64 tokens or more in a row) rotates by the angle of the next position",
    "token-tail-8": "tokens in tiles of 8; the tokens after the last full tile are not rotated",
    "token-tail-16": "tokens in tiles of 16; the tail is not rotated",
    "token-tail-32": "tokens in tiles of 32; the tail is not rotated",
    "token-tail-64": "tokens in tiles of 64; the tail is not rotated",
    "token-tail-128": "tokens in tiles of 128; the tail is not rotated",
    "pair-group-4": "pairs in groups of 4; the pairs after the last full group are not rotated",
    "pair-group-16": "pairs in groups of 16; the pairs after the last full group are not rotated",
    "vector16-remainder": "channels loaded and stored in vectors of 16; the remainder reads 0 and is not stored",
    "strides-ignored": "reads x (q, k) as if it were C-contiguous from its first element",
    "writes-outside": "in place: stores the result C-contiguously from the view's first element",
}


def tile_expectations() -> dict[str, Any]:
    """bug -> :class:`unlisted_bug_engines.Expect`: what a correct diagnosis of each tile bug says (the meta table of
    docs/meta-tests.md). Unstored tokens and channels come back as 0 (the output buffer starts zeroed); heads and pairs
    outside the last full tile come back unrotated (loaded and stored unchanged)."""
    from unlisted_bug_engines import Expect

    unrotated = Expect(("head", "angle", "position", "pair_map", "frequency"), ("identity", "zero"), (), "")
    zeroed = Expect(("token", "gain", "pair_map"), ("zero", "tokens", "uniform", "pairs"), (), "", gain=0.0)
    out: dict[str, Any] = {}
    for bug, words in TILE_BUGS.items():
        if bug in ("head-tile4-tail", "odd-heads"):
            e = unrotated
        elif bug.startswith("pair-group"):  # under a pairing that reads and writes other channels: output channels unwritten
            e = Expect(("head", "angle", "position", "pair_map", "frequency", "channel"), ("identity", "zero", "unwritten"), (), "")
        elif bug == "rows-4096" or bug.startswith("token-tail"):
            e = zeroed
        elif bug == "prefill-64":  # every row of 64 tokens or more at p+1: on a case of such rows, positions:shifted is true
            e = Expect(("position", "row", "token"), ("shift", "per-row"), (), "", may_name=("positions:shifted",))
        elif bug == "vector16-remainder":
            e = Expect(("channel", "gain", "pair_map", "token"), ("passthrough", "zero", "pairs", "tokens", "uniform"), (), "")
        else:  # strides-ignored, writes-outside: elements read or written at other places; the call form's own check says
            # "wrote outside the view" in the FAIL's message before any diagnosis
            e = Expect(("channel", "dependence", "token", "head", "row", "pair_map", "linearity"), (), (), "",
                       message=("wrote outside the view", "outside the view"))
        out[bug] = Expect(e.axes, e.patterns, (), words, e.may_name, e.gain, e.message)
    return out


def _pair_map(head_dim: int, width: int, start: int, pairing: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(read a, read b, write a, write b) channels of each pair (docs/spec.md section 2, written again)."""
    n = width // 2
    j = np.arange(n)
    half = (start + j, start + n + j)
    adjacent = (start + 2 * j, start + 2 * j + 1)
    read = half if pairing == "half" else adjacent
    write = adjacent if pairing == "adjacent" else half
    return read[0], read[1], write[0], write[1]


def _c_view(a: np.ndarray) -> np.ndarray:
    """``a``'s memory read as if ``a`` were C-contiguous from its first element (the strides-ignored bug)."""
    strides = tuple(int(np.prod(a.shape[i + 1:], dtype=np.int64)) * a.itemsize for i in range(a.ndim))
    return np.lib.stride_tricks.as_strided(a, shape=a.shape, strides=strides, writeable=a.flags.writeable)


@dataclass
class TiledEngine(BaseBackend):
    """A tiled RoPE engine in ``precision`` with one ``bug`` of :data:`TILE_BUGS` (or none)."""

    bug: str = ""
    precision: str = "float32"
    capabilities: Capabilities = field(default=None)  # type: ignore[assignment]  # filled in __post_init__

    def __post_init__(self) -> None:
        if self.bug and self.bug not in TILE_BUGS:
            raise ValueError(f"bug={self.bug!r}: unknown")
        self.name = f"tiled-{self.precision}-{self.bug or 'correct'}"
        if self.capabilities is None:
            self.capabilities = Capabilities(
                stages=frozenset(STAGES), features=frozenset(FEATURES), angle_dtype=self.precision,
                table_dtype=self.precision, layouts=frozenset(LAYOUTS), call_forms=frozenset(CALL_FORMS),
                qk_shapes=frozenset(QK_SHAPES))
        super().__post_init__()
        self.tables = BugEngine(precision=self.precision)
        self.token_tile = {"token-tail-8": 8, "token-tail-16": 16, "token-tail-32": 32, "token-tail-64": 64}.get(self.bug, 128)
        self.head_tile = {"head-tile4-tail": 4, "odd-heads": 2}.get(self.bug, 8)
        self.pair_group = {"pair-group-4": 4, "pair-group-16": 16}.get(self.bug, 8)

    # --- the kernel
    def _segments(self, grid: tuple[int, ...], cu: np.ndarray | None) -> list[tuple[int, int]]:
        """(first flattened row, tokens) of each batch row or packed sequence."""
        if cu is not None:
            c = np.asarray(cu, dtype=np.int64)
            return [(int(a), int(b - a)) for a, b in zip(c[:-1], c[1:])]
        if len(grid) == 1:
            return [(0, grid[0])]
        rows, tokens = grid[0], int(np.prod(grid[1:], dtype=np.int64))
        return [(b * tokens, tokens) for b in range(rows)]

    def _load(self, block: np.ndarray) -> np.ndarray:
        """A block ``[r, h, D]`` loaded in 16-channel vectors (in its own dtype)."""
        out = np.zeros(block.shape, dtype=block.dtype)
        D = block.shape[-1]
        stop = D - D % 16 if self.bug == "vector16-remainder" else D
        for c0 in range(0, stop, 16):
            out[..., c0:c0 + 16] = block[..., c0:c0 + 16]
        return out

    def _store(self, out: np.ndarray, rows: slice, h0: int, h1: int, res: np.ndarray) -> None:
        D = res.shape[-1]
        stop = D - D % 16 if self.bug == "vector16-remainder" else D
        for c0 in range(0, stop, 16):
            out[rows, h0:h1, c0:c0 + 16] = res[..., c0:c0 + 16]

    def _kernel(self, x: np.ndarray, tables: tuple[np.ndarray, ...], spec: Any, backward: bool, cu: Any) -> np.ndarray:
        """Rotate ``x [*grid, H, D]`` with tables ``(cos, sin, cos_next, sin_next)`` ``[*grid, n]``."""
        src = _c_view(x) if self.bug == "strides-ignored" else x
        grid, (H, D) = tuple(x.shape[:-2]), x.shape[-2:]
        n = spec.rotary_dim // 2
        R = int(np.prod(grid, dtype=np.int64))
        X = np.asarray(src).reshape(R, H, D)
        C, S, Cn, Sn = (np.broadcast_to(t, (*grid, n)).reshape(R, n) for t in tables)
        out = np.zeros(X.shape, dtype=x.dtype)
        ra, rb, wa, wb = _pair_map(D, spec.rotary_dim, spec.rotary_start, spec.pairing)
        if backward:
            ra, rb, wa, wb = wa, wb, ra, rb
        sign = -1.0 if backward else 1.0
        F = self.tables.F
        launch = 4096 if self.bug == "rows-4096" else R
        tt, ht, pg = self.token_tile, self.head_tile, self.pair_group
        tail = self.bug.startswith("token-tail")
        for r0, length in self._segments(grid, cu):
            prefill = self.bug == "prefill-64" and length >= 64
            stop = length - length % tt if tail else length
            for t0 in range(0, stop, tt):
                lo, hi = r0 + t0, min(r0 + t0 + tt, r0 + length, launch)
                if lo >= hi:
                    continue
                rows = slice(lo, hi)
                c, s = (Cn[rows], Sn[rows]) if prefill else (C[rows], S[rows])
                h_stop = H - H % ht if self.bug in ("head-tile4-tail", "odd-heads") else H
                for h0 in range(0, H, ht):
                    h1 = min(h0 + ht, H)
                    loaded = self._load(X[rows, h0:h1])
                    res = loaded.copy()  # pass-through channels keep their bits
                    if h0 < h_stop:
                        work = loaded.astype(F)
                        p_stop = n - n % pg if self.bug.startswith("pair-group") else n
                        for j0 in range(0, p_stop, pg):
                            j = slice(j0, min(j0 + pg, p_stop))
                            cj = c[:, None, j].astype(F)
                            sj = (F(sign) * s[:, None, j].astype(F)).astype(F)
                            a, b = work[..., ra[j]], work[..., rb[j]]
                            res[..., wa[j]] = (a * cj - b * sj).astype(F)
                            res[..., wb[j]] = (b * cj + a * sj).astype(F)
                    self._store(out, rows, h0, h1, res)
        return out.reshape(x.shape)

    # --- tables
    def _tables(self, spec: Any, positions: np.ndarray, cu: Any, grid: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        pos = np.asarray(positions, dtype=np.int64)
        cos, sin = self.tables.tables_for(spec, pos, cu, grid)
        if self.bug == "prefill-64":
            cn, sn = self.tables.tables_for(spec, pos + 1, cu, grid)
            return cos, sin, cn, sn
        return cos, sin, cos, sin

    # --- stages
    def inv_freq(self, spec: Any, seq_len: int) -> tuple[np.ndarray, float]:
        return self.tables.inv_freq(spec, seq_len)

    def cos_sin(self, spec: Any, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.tables.cos_sin(spec, positions)

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: Any) -> np.ndarray:
        c, s = np.asarray(cos, dtype=np.float64), np.asarray(sin, dtype=np.float64)
        return self._kernel(x, (c, s, c, s), spec, False, None)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None) -> np.ndarray:
        return self._kernel(x, self._tables(spec, positions, cu_seqlens, x.shape[:-2]), spec, False, cu_seqlens)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None) -> np.ndarray:
        return self._kernel(grad, self._tables(spec, positions, cu_seqlens, grad.shape[:-2]), spec, True, cu_seqlens)

    # --- call forms: in place, q with k
    def _put(self, x: np.ndarray, y: np.ndarray) -> None:
        target = _c_view(x) if self.bug == "writes-outside" else x
        target[...] = y

    def apply_(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: Any) -> None:
        self._put(x, self.apply(x, cos, sin, spec))

    def forward_(self, x: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None) -> None:
        self._put(x, self.forward(x, positions, spec, cu_seqlens))

    def backward_(self, grad: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None) -> None:
        self._put(grad, self.backward(grad, positions, spec, cu_seqlens))

    def apply_qk(self, q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: Any,
                 k_spec: Any = None) -> tuple[np.ndarray, np.ndarray]:
        return self.apply(q, cos, sin, spec), self.apply(k, cos, sin, k_spec or spec)

    def forward_qk(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None,
                   k_spec: Any = None) -> tuple[np.ndarray, np.ndarray]:
        return self.forward(q, positions, spec, cu_seqlens), self.forward(k, positions, k_spec or spec, cu_seqlens)

    def backward_qk(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None,
                    k_spec: Any = None) -> tuple[np.ndarray, np.ndarray]:
        return self.backward(q, positions, spec, cu_seqlens), self.backward(k, positions, k_spec or spec, cu_seqlens)

    def apply_qk_(self, q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: Any, k_spec: Any = None) -> None:
        qy, ky = self.apply_qk(q, k, cos, sin, spec, k_spec)
        self._put(q, qy)
        self._put(k, ky)

    def forward_qk_(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None,
                    k_spec: Any = None) -> None:
        qy, ky = self.forward_qk(q, k, positions, spec, cu_seqlens, k_spec)
        self._put(q, qy)
        self._put(k, ky)

    def backward_qk_(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None,
                     k_spec: Any = None) -> None:
        qy, ky = self.backward_qk(q, k, positions, spec, cu_seqlens, k_spec)
        self._put(q, qy)
        self._put(k, ky)


def correct() -> TiledEngine:
    """The correct tiled engine (float32), for ``roperef check --backend tests/support/engines/tiled_bug_engines.py:correct``."""
    return TiledEngine()


def head_tile4() -> TiledEngine:
    """Heads in tiles of 4 with the tail dropped (float32)."""
    return TiledEngine(bug="head-tile4-tail")
