"""Narrow wrong backends for the explore and long-context tests.

``CachedTableBackend``: a float32 engine that precomputes its cos/sin table for
``max_positions`` positions (as engines that size a ``cos_sin_cache`` by the model's
``max_position_embeddings`` do) and takes only a per-row offset (contiguous positions, forward
and backward). A position past the table reads its last row (an index clamp), so the bug
shows only past ``max_positions`` (2^17 by default): a 131072-token sequence is right, a
1,048,576-token one is not. The table is built lazily per (spec, pair) and only the rows a
call needs are computed, so the test never holds a 2^17-row table per head.

``OffsetOnlyBf16Positions``: an offset-only float32 engine whose positions are built in the
input dtype (``arange(T, dtype=x.dtype) + offset``: rotary-embedding-torch's bug), to check
that explore finds it through a narrow interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from conformance.backends.base import BaseBackend, Capabilities
from conformance.backends.emulated import Float32Emulation, float32_inv_freq

F32 = np.float32
_OFFSET_ONLY = frozenset()  # no per-row positions, no sparse/negative positions, no varlen, full window


def _offset(positions: np.ndarray) -> int:
    pos = np.asarray(positions, dtype=np.int64)
    p0 = int(pos.reshape(-1)[0])
    if not np.array_equal(pos, np.broadcast_to(p0 + np.arange(pos.shape[-1]), pos.shape)):
        raise ValueError("this engine takes one offset: positions must be offset + arange(T) in every row")
    return p0


@dataclass
class CachedTableBackend(Float32Emulation):
    """Float32 RoPE from a cos/sin table of ``max_positions`` rows; positions past it are clamped."""

    name: str = "cached-table-2^17"
    max_positions: int = 2**17
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(
        stages=frozenset({"forward", "backward"}), pairings=frozenset({"half", "adjacent"}),
        dtypes=frozenset({"float32", "bfloat16"}), scaling_types=frozenset({"default"}), features=_OFFSET_ONLY,
        angle_dtype="float32", table_dtype="float32", notes="cos/sin cache of 2^17 rows, index clamped"))

    def _tables_for(self, spec, positions, grid):
        p0 = _offset(positions)
        rows = np.minimum(p0 + np.arange(grid[-1], dtype=np.int64), self.max_positions - 1)  # the clamp
        w, s = float32_inv_freq(spec, self.max_positions)
        phi = (rows.astype(F32)[:, None] * w).astype(F32).astype(np.float64)
        cos = (np.cos(phi).astype(F32) * s).astype(F32)
        sin = (np.sin(phi).astype(F32) * s).astype(F32)
        return np.broadcast_to(cos, (*grid, cos.shape[-1])), np.broadcast_to(sin, (*grid, sin.shape[-1]))

    def forward(self, x, positions, spec, cu_seqlens=None):
        x = np.asarray(x)
        cos, sin = self._tables_for(spec, positions, x.shape[:-2])
        return self._rotate(x, cos, sin, spec, False)

    def backward(self, grad, positions, spec, cu_seqlens=None):
        grad = np.asarray(grad)
        cos, sin = self._tables_for(spec, positions, grad.shape[:-2])
        return self._rotate(grad, cos, sin, spec, True)


@dataclass
class OffsetOnlyBf16Positions(Float32Emulation):
    """An offset-only float32 engine that builds its positions in the input dtype."""

    name: str = "offset-only-input-dtype-positions"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(
        stages=frozenset({"forward"}), pairings=frozenset({"adjacent"}), dtypes=frozenset({"bfloat16", "float32"}),
        scaling_types=frozenset({"default", "linear"}), features=_OFFSET_ONLY, angle_dtype="float32",
        table_dtype="float32", notes="positions = arange(T, dtype=x.dtype) + offset"))

    def forward(self, x, positions, spec, cu_seqlens=None):
        x = np.asarray(x)
        p0 = _offset(positions)
        t = (np.arange(x.shape[1]).astype(x.dtype) + np.asarray(p0).astype(x.dtype)).astype(np.float64)  # the bug
        rows = np.broadcast_to(t, x.shape[:2])[None]
        cos, sin = self._tables(spec, rows)
        return self._rotate(x, cos, sin, spec, False)


@dataclass
class CorrectOffsetOnly(BaseBackend):
    """roperef.fast behind an offset-only interface (a correct narrow backend)."""

    name: str = "offset-only-correct"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(
        stages=frozenset({"forward", "backward"}), features=_OFFSET_ONLY, angle_dtype="float64", table_dtype="float64"))

    def forward(self, x, positions, spec, cu_seqlens=None):
        from roperef import fast

        _offset(positions)
        return fast.forward(x, positions, spec)

    def backward(self, grad, positions, spec, cu_seqlens=None):
        from roperef import fast

        _offset(positions)
        return fast.backward(grad, positions, spec)


__all__ = ["CachedTableBackend", "OffsetOnlyBf16Positions", "CorrectOffsetOnly"]
