"""The positions a context sweep samples: every octave ``[2^k, 2^(k+1))`` up to a limit.

For each ``k = 0..30`` the sweep takes ``2^k - 1``, ``2^k``, ``2^k + 1`` (the octave's ends and their
neighbours: off-by-one and table-size boundaries sit there) and ``per_octave`` positions drawn
uniformly from ``[2^k, 2^(k+1))`` with a seeded generator, plus 0 and the limit itself; everything
above the limit (``2^31 - 1``, or a backend's declared ``max_position``) is dropped. The result is
evidence over these positions, not a proof: a failure between two sampled positions is seen at the
next sampled one (:func:`resolution`).
"""

from __future__ import annotations

import numpy as np

from roperef.errors import bad
from roperef.positions import POSITION_MAX

__all__ = ["MAX_OCTAVE", "sample_positions", "octave", "resolution"]

#: the last octave sampled: [2^30, 2^31)
MAX_OCTAVE = 30


def sample_positions(limit: int = POSITION_MAX, per_octave: int = 4, seed: int = 0) -> np.ndarray:
    """Sorted distinct int64 positions in ``[0, limit]`` (module docstring)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= POSITION_MAX:
        bad("limit", limit, f"must be an integer in [0, {POSITION_MAX}] (the largest position sampled)")
    if isinstance(per_octave, bool) or not isinstance(per_octave, int) or not 0 <= per_octave <= 64:
        bad("per_octave", per_octave, "must be an integer in [0, 64] (random positions per octave)")
    rng = np.random.default_rng(seed)
    picked: set[int] = {0, limit}
    for k in range(MAX_OCTAVE + 1):
        lo = 2**k
        picked.update((lo - 1, lo, lo + 1))
        if per_octave:
            picked.update(int(v) for v in rng.integers(lo, 2 * lo, size=per_octave))
    return np.array(sorted(p for p in picked if 0 <= p <= limit), dtype=np.int64)


def octave(position: int) -> int:
    """``k`` with ``position`` in ``[2^k, 2^(k+1))``; -1 for position 0."""
    return int(position).bit_length() - 1


def resolution(positions: np.ndarray, first_bad: int | None) -> tuple[int, int] | None:
    """``(last good, first bad)``: the sampled positions the true boundary lies between (None: no bad one)."""
    if first_bad is None:
        return None
    before = positions[positions < first_bad]
    return (int(before[-1]) if before.size else -1, int(first_bad))
