"""Numba twin of :mod:`roperef.sincos`: the same operations, one for one, on scalars.

Every line below mirrors a line of :func:`roperef.sincos.two_product`, ``_add``,
``_reduce``, ``_horner``, ``_kernel`` and :func:`roperef.sincos.sincos`, in the same
order, with the same constants (imported from there). No ``fastmath``: Numba then emits
plain IEEE ``fadd``/``fsub``/``fmul`` that LLVM neither reassociates nor contracts into
FMAs, so the results are bit-identical to the NumPy version (tested for every path).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..sincos import COS_COEFFS, PIO2_CHUNKS, ROUND_MAGIC, SIN_COEFFS, SPLITTER, TWO_OVER_PI

__all__ = ["two_product", "sincos"]

_C1, _C2, _C3, _C4, _C5, _C6 = PIO2_CHUNKS
_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7 = SIN_COEFFS
_K0, _K1, _K2, _K3, _K4, _K5, _K6, _K7 = COS_COEFFS


@njit(cache=True, inline="always")
def two_product(a: float, b: float) -> tuple[float, float]:
    """Same operation order as :func:`roperef.sincos.two_product`."""
    hi = a * b
    ca = SPLITTER * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = SPLITTER * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi, lo


@njit(cache=True, inline="always")
def _add(a: float, b: float, y: float) -> tuple[float, float]:
    s = a + y
    v = s - a
    e = (a - (s - v)) + (y - v)
    t = b + e
    hi = s + t
    return hi, t - (hi - s)


@njit(cache=True, inline="always")
def sincos(hi: float, lo: float) -> tuple[float, float]:
    """``(cos(hi + lo), sin(hi + lo))``, bit-identical to :func:`roperef.sincos.sincos`."""
    k = (hi * TWO_OVER_PI + ROUND_MAGIC) - ROUND_MAGIC
    a = hi - k * _C1
    b = 0.0
    a, b = _add(a, b, -(k * _C2))
    a, b = _add(a, b, -(k * _C3))
    a, b = _add(a, b, lo)
    a, b = _add(a, b, -(k * _C4))
    a, b = _add(a, b, -(k * _C5))
    a, b = _add(a, b, -(k * _C6))
    z = a * a
    ps = ((((((_S7 * z + _S6) * z + _S5) * z + _S4) * z + _S3) * z + _S2) * z + _S1) * z + _S0
    s = a + (a * z * ps + b * (1.0 - 0.5 * z))
    zh, zl = two_product(a, a)
    h = 0.5 * zh
    w = 1.0 - h
    pc = ((((((_K7 * z + _K6) * z + _K5) * z + _K4) * z + _K3) * z + _K2) * z + _K1) * z + _K0
    c = w + ((((1.0 - w) - h) - 0.5 * zl) + (z * z * pc - a * b))
    # quadrant k mod 4 without branches (selects and exact negations), so LLVM can vectorise the
    # loops that call this: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c) for q = 0, 1, 2, 3
    q = np.int64(k) & 3
    swap = (q & 1) == 1
    cc = s if swap else c
    ss = c if swap else s
    cos = -cc if (q == 1 or q == 2) else cc
    sin = -ss if q >= 2 else ss
    return cos, sin
