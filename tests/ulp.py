"""ULP distance between float arrays, via the integer representation (a test helper).

For IEEE-754 binary floats of one format, the bit pattern read as an unsigned
integer orders the magnitudes: ``|a| < |b|`` iff ``mag(a) < mag(b)`` where ``mag`` is
the pattern without its sign bit, and adjacent floats differ by 1. So the number of
representable steps between ``a`` and ``b`` is::

    |mag(a) - mag(b)|     if a and b have the same sign
    mag(a) + mag(b)       otherwise (the path crosses zero)

``+0`` and ``-0`` both have ``mag = 0``, so they are at distance 0. Two NaNs at the
same index count as equal (distance 0); a NaN against a number is the maximum
distance. Infinity is one step past the largest finite value.

Import from test files as ``from ulp import ulp_distance, max_ulp`` (``tests/`` is on
``sys.path``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ulp_distance", "max_ulp"]

_FORMATS = {
    np.dtype(np.float64): (np.uint64, np.uint64(0x7FFF_FFFF_FFFF_FFFF), np.uint64(1 << 63)),
    np.dtype(np.float32): (np.uint32, np.uint32(0x7FFF_FFFF), np.uint32(1 << 31)),
}


def ulp_distance(a: object, b: object) -> np.ndarray:
    """Elementwise ULP distance (uint64) between ``a`` and ``b`` of one dtype, float32 or float64, same shape."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype != b.dtype or a.dtype not in _FORMATS:
        raise TypeError(f"ulp_distance needs two float32 or two float64 arrays, got {a.dtype} and {b.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"ulp_distance needs equal shapes, got {a.shape} and {b.shape}")
    uint, mag_mask, sign_mask = _FORMATS[a.dtype]
    ia = np.ascontiguousarray(a).view(uint)
    ib = np.ascontiguousarray(b).view(uint)
    ma = (ia & mag_mask).astype(np.uint64)
    mb = (ib & mag_mask).astype(np.uint64)
    same_sign = (ia & sign_mask) == (ib & sign_mask)
    dist = np.where(same_sign, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    dist = np.where(nan_a & nan_b, np.uint64(0), dist)
    return np.where(nan_a ^ nan_b, np.iinfo(np.uint64).max, dist).astype(np.uint64)


def max_ulp(a: object, b: object) -> int:
    """The largest elementwise ULP distance (0 for empty arrays)."""
    d = ulp_distance(a, b)
    return int(d.max()) if d.size else 0
