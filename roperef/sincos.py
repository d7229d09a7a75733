"""cos and sin of an exact two-term angle, from IEEE basic operations only.

The reference never calls ``np.cos``/``np.sin``/``math.cos``: their last bit depends on
the C library and on the SIMD code NumPy dispatches (glibc, macOS libm, SVML-style
AVX-512 kernels differ). This module computes ``cos(hi + lo)`` and ``sin(hi + lo)`` for
an angle given exactly as ``hi + lo`` (Dekker's TwoProduct of an integer position and a
float64 frequency, ``|lo| <= ulp(hi)/2``) with ``+ - *`` and round-to-nearest alone,
in a fixed order, so the bits are the same on every IEEE-754 machine (no FMA: neither
NumPy's ufuncs nor Numba without ``fastmath`` contract ``a*b + c``). The Numba kernels
(:mod:`roperef.fast.kernels`) repeat these operations one for one.

Domain: ``|hi| <= 2^32`` (positions in ``[-2^31, 2^31)`` times frequencies ``<= pi``;
:mod:`roperef.frequencies` keeps frequencies in range).

**Reduction** (Cody and Waite with an exact first step). ``k = nearest(hi * 2/pi)`` by the
round-to-nearest trick ``(x + 1.5*2^52) - 1.5*2^52`` (``|k| <= 2^32``). ``pi/2`` is split
as ``C1 + C2 + C3 + C4 + C5 + C6``: ``C1..C5`` hold 21 significant bits each (so every
``k*Ci`` is exact: 32 + 21 bits), ``C6`` is the float64 nearest to the rest (the split
is exact to ``2^-157``). Then

    r = (hi - k*C1) - k*C2 - k*C3 + lo - k*C4 - k*C5 - k*C6

where ``hi - k*C1`` is exact (Sterbenz: ``k*C1`` is within a factor 2 of ``hi``) and the
remaining terms are accumulated as a double-double ``(a, b)`` (TwoSum, then a fast
renormalisation). ``|r| <= pi/4 + 2^-20`` and its absolute error is below ``2^-80``.

**Kernel** (Taylor series, truncated where the next term is below ``2^-63``; the
coefficients ``1/n!`` are the correctly rounded doubles). With ``z = a*a``::

    sin(a + b) = a + (a*z*S(z) + b*(1 - z/2))          S(z) = -1/3! + z/5! - ... - z^7/17!
    cos(a + b) = w + ((((1 - w) - h) - zl/2) + (z*z*C(z) - a*b))
                 h = zh/2, w = 1 - h,  (zh, zl) = TwoProduct(a, a),
                 C(z) = 1/4! - z/6! + ... - z^7/18!

(the leading ``1 - a^2/2`` of cos is carried exactly). Measured against 50-digit mpmath
(``tests/roperef/test_sincos.py``), both are within 0.7 ulp (error over spacing) of the exact value (0.69 the worst
seen); they are not guaranteed correctly rounded, but they are the same everywhere.

**Quadrant**: ``q = k mod 4``; ``(sin, cos)`` of the angle are ``(s, c)``, ``(c, -s)``,
``(-s, -c)``, ``(-c, s)`` for ``q = 0, 1, 2, 3``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = [
    "sincos",
    "two_product",
    "TWO_OVER_PI",
    "ROUND_MAGIC",
    "PIO2_CHUNKS",
    "SIN_COEFFS",
    "COS_COEFFS",
    "SPLITTER",
    "MAX_ABS_ANGLE",
]

SPLITTER = 134217729.0
"""2^27 + 1, Veltkamp's constant for splitting a float64 into two 26-bit halves."""
TWO_OVER_PI = float.fromhex("0x1.45f306dc9c883p-1")
"""2/pi, the nearest float64."""
ROUND_MAGIC = 6755399441055744.0
"""1.5 * 2^52: ``(x + M) - M`` is ``x`` rounded to the nearest integer (ties to even) for ``|x| < 2^51``."""
PIO2_CHUNKS = (
    float.fromhex("0x1.921fb00000000p+0"),
    float.fromhex("0x1.5110a00000000p-22"),
    float.fromhex("0x1.4611a00000000p-42"),
    float.fromhex("0x1.898cc00000000p-64"),
    float.fromhex("0x1.45c0400000000p-86"),
    float.fromhex("0x1.707344a409382p-105"),
)
"""pi/2 = C1 + ... + C6 to 2^-157; C1..C5 have 21 significant bits each."""
MAX_ABS_ANGLE = 2.0**32
"""Largest ``|hi|`` the reduction is exact for (``|k| <= 2^32`` times 21-bit chunks)."""


def _inverse_factorial(n: int) -> float:
    """``1/n!`` correctly rounded (Python's int division is)."""
    return float(Fraction(1, math.factorial(n)))


SIN_COEFFS = tuple((-1.0) ** (m + 1) * _inverse_factorial(2 * m + 3) for m in range(8))
"""S(z) = sum_m SIN_COEFFS[m] z^m: -1/3!, 1/5!, ..., -1/17!."""
COS_COEFFS = tuple((-1.0) ** m * _inverse_factorial(2 * m + 4) for m in range(8))
"""C(z) = sum_m COS_COEFFS[m] z^m: 1/4!, -1/6!, ..., -1/18!."""


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProduct: ``hi = fl(a*b)`` and ``lo`` with ``hi + lo == a*b`` exactly (no over/underflow)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    hi = a * b
    ca = SPLITTER * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = SPLITTER * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi, lo


def _add(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Double-double ``(a, b) + y``: TwoSum of ``a`` and ``y``, tail added, renormalised."""
    s = a + y
    v = s - a
    e = (a - (s - v)) + (y - v)
    t = b + e
    hi = s + t
    return hi, t - (hi - s)


def _reduce(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, k)`` with ``hi + lo = k*pi/2 + a + b`` (see the module docstring)."""
    k = (hi * TWO_OVER_PI + ROUND_MAGIC) - ROUND_MAGIC
    c1, c2, c3, c4, c5, c6 = PIO2_CHUNKS
    a = hi - k * c1
    b = np.zeros_like(a)
    a, b = _add(a, b, -(k * c2))
    a, b = _add(a, b, -(k * c3))
    a, b = _add(a, b, lo)
    a, b = _add(a, b, -(k * c4))
    a, b = _add(a, b, -(k * c5))
    a, b = _add(a, b, -(k * c6))
    return a, b, k


def _horner(z: np.ndarray, coeffs: tuple[float, ...]) -> np.ndarray:
    acc = np.full_like(z, coeffs[-1])
    for c in coeffs[-2::-1]:
        acc = acc * z + c
    return acc


def _kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sin(a + b), cos(a + b))`` for ``|a| <= pi/4 + 2^-20``, ``|b| <= ulp(a)``."""
    z = a * a
    sin = a + (a * z * _horner(z, SIN_COEFFS) + b * (1.0 - 0.5 * z))
    zh, zl = two_product(a, a)
    h = 0.5 * zh
    w = 1.0 - h
    cos = w + ((((1.0 - w) - h) - 0.5 * zl) + (z * z * _horner(z, COS_COEFFS) - a * b))
    return sin, cos


def sincos(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cos(hi + lo), sin(hi + lo))``, float64, the same bits on every IEEE-754 machine.

    ``hi`` and ``lo`` are float64 arrays of one shape with ``|hi| <= 2^32`` and
    ``|lo| <= ulp(hi)`` (e.g. :func:`two_product` of a position and a frequency).
    """
    hi = np.asarray(hi, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    a, b, k = _reduce(hi, lo)
    s, c = _kernel(a, b)
    q = k.astype(np.int64) & 3
    sin = np.where(q == 0, s, np.where(q == 1, c, np.where(q == 2, -s, -c)))
    cos = np.where(q == 0, c, np.where(q == 1, -s, np.where(q == 2, -c, s)))
    return cos, sin
