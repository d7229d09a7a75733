"""Float32 constants of the test engines, correctly rounded: the same bits on every machine.

``np.power`` / ``np.exp`` / ``np.log`` on float32 or float64 arrays dispatch to SIMD kernels whose
last bit depends on the CPU (NumPy's AVX-512 SVML kernels differ from its baseline ones); a test whose
expected outcome rests on such a bit passes on one machine and fails on another. The engines of
tests/ take their frequency constants from here instead:

* ``power(theta, k, d)`` is ``theta^(k/d)`` rounded once to float64 by :func:`roperef.exact.correctly_rounded`
  (mpmath, certified), then to float32 by IEEE conversion; a float64 value lying exactly on a float32
  rounding midpoint (where that second rounding could differ from rounding the real value once) is
  refused, so the float32 result is the correctly rounded one.
* ``inv_freqs(theta, d, n)`` is ``1 / theta^(2i/d)`` for ``i = offset .. offset + n - 1`` the same way.

Values are cached per argument tuple (a few hundred microseconds per value at the first call).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from roperef.exact import correctly_rounded

__all__ = ["power64", "power32", "inv_freqs"]


@lru_cache(maxsize=512)
def power64(theta: float, num: int, den: float) -> float:
    """``theta ** (num / den)`` correctly rounded to float64 (the exponent taken as the exact fraction;
    ``den`` an integer or a float, entered exactly)."""
    if not theta > 0:
        raise ValueError(f"theta={theta!r}: must be > 0 (a power of a positive base)")
    x = Fraction(num) / Fraction(den)
    return correctly_rounded(lambda e: [e.exp(e.num(x) * e.ln(e.num(theta)))])[0]


def _to_f32(v: float) -> np.float32:
    """``v`` rounded to float32, refusing a float32 midpoint (double rounding could differ there)."""
    f = np.float32(v)
    if float(f) != v:
        other = np.nextafter(f, np.float32(np.inf if float(f) < v else -np.inf))
        if Fraction(v) * 2 == Fraction(float(f)) + Fraction(float(other)):
            raise ArithmeticError(f"{v!r} lies on a float32 rounding midpoint: its float32 rounding is not certified")
    return f


def power32(theta: float, num: int, den: float) -> np.float32:
    """``theta ** (num / den)`` correctly rounded to float32."""
    return _to_f32(power64(theta, num, den))


@lru_cache(maxsize=512)
def _inv_freqs(theta: float, d: float, n: int, two: int, offset: int, f32: bool) -> tuple[float, ...]:
    vals = [power64(theta, -two * (i + offset), d) for i in range(n)]
    return tuple(float(_to_f32(v)) for v in vals) if f32 else tuple(vals)


def inv_freqs(theta: float, d: float, n: int, dtype: type, two: int = 2, offset: int = 0) -> np.ndarray:
    """``1 / theta^(two*(i+offset)/d)`` for ``i < n``, correctly rounded to ``dtype`` (float32 or float64);
    float16/bfloat16 engines get the float32 values."""
    f32 = np.dtype(dtype) != np.float64
    return np.asarray(_inv_freqs(float(theta), d, int(n), int(two), int(offset), f32), dtype=np.float64).astype(dtype)
