"""Channel layout of a spec: which channels form each pair, and which position row drives it.

Pair ``j`` (``0 <= j < n``) reads channels ``(in_a[j], in_b[j])`` and writes its
results ``y_a, y_b`` to ``(out_a[j], out_b[j])`` (absolute channel indices, the
rotary window offset included):

=========================  =================  ==================
pairing                    read (a, b)        write (a, b)
=========================  =================  ==================
``half``                   (j, j+n)           (j, j+n)
``adjacent``               (2j, 2j+1)         (2j, 2j+1)
``adjacent_in_half_out``   (2j, 2j+1)         (j, j+n)
=========================  =================  ==================

The backward pass swaps read and write maps (the transpose of the permutation).

``pair_axes`` gives the position row of each pair: 0 for plain RoPE; mRoPE rows
t=0, h=1, w=2 (chunked: the first ``s_t`` pairs t, next ``s_h`` h, rest w;
interleaved: ``j % 3 == 1 and j < 3*s_h`` -> h, ``j % 3 == 2 and j < 3*s_w`` -> w,
else t); vision rows h=0, w=1 (first ``D/4`` pairs h, the rest w).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spec import RopeSpec

__all__ = ["PairMap", "pair_map", "pair_axes"]


@dataclass(frozen=True)
class PairMap:
    """Absolute channel indices, each int64[n]."""

    in_a: np.ndarray
    in_b: np.ndarray
    out_a: np.ndarray
    out_b: np.ndarray

    def transposed(self) -> PairMap:
        """The map of the backward pass (read where forward writes, write where it reads)."""
        return PairMap(self.out_a, self.out_b, self.in_a, self.in_b)


def pair_map(spec: RopeSpec) -> PairMap:
    n, start = spec.n_pairs, spec.rotary_start
    j = np.arange(n, dtype=np.int64)
    half = (start + j, start + n + j)
    adjacent = (start + 2 * j, start + 2 * j + 1)
    read = half if spec.pairing == "half" else adjacent
    write = adjacent if spec.pairing == "adjacent" else half
    return PairMap(read[0], read[1], write[0], write[1])


def pair_axes(spec: RopeSpec) -> np.ndarray:
    """int64[n]: the position row that drives each pair."""
    n = spec.n_pairs
    j = np.arange(n, dtype=np.int64)
    if spec.mrope_section is not None:
        s_t, s_h, s_w = spec.mrope_section
        if spec.mrope_layout == "chunked":
            return np.where(j < s_t, 0, np.where(j < s_t + s_h, 1, 2)).astype(np.int64)
        axes = np.zeros(n, dtype=np.int64)
        axes[(j % 3 == 1) & (j < 3 * s_h)] = 1
        axes[(j % 3 == 2) & (j < 3 * s_w)] = 2
        return axes
    if spec.vision is not None:
        return (j >= spec.head_dim // 4).astype(np.int64)
    return np.zeros(n, dtype=np.int64)
