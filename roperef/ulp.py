"""Two ulp metrics, side by side: representable steps and error over spacing.

"N ulp" means two different things, and numpy.testing keeps both, as a pair:
``assert_array_max_ulp(a, b, maxulp)`` counts the representable floats between ``a`` and
``b``, while ``assert_array_almost_equal_nulp(x, y, nulp)`` bounds ``|x - y|`` by ``nulp``
spacings. roperef has the same pair, and every "N ulp" in its documents and tests names which
one it is:

:func:`ulp_steps` ``(a, b)`` -- **representable steps**, an integer. For IEEE-754 binary floats
of one format, the bit pattern read as an unsigned integer orders the magnitudes
(``|a| < |b|`` iff ``mag(a) < mag(b)``, ``mag`` the pattern without its sign bit) and adjacent
floats differ by 1, so the number of steps from ``a`` to ``b`` is::

    |mag(a) - mag(b)|     if a and b have the same sign
    mag(a) + mag(b)       otherwise (the path crosses zero)

``+0`` and ``-0`` are 0 steps apart; two NaNs at the same index are 0 steps apart, a NaN and a
number the largest uint64; infinity is one step past the largest finite value. Symmetric, and
blind to which argument is right: "the fast twin is within 2 ulp (representable steps) of the
reference". Like ``assert_array_max_ulp``.

:func:`ulp_error` ``(actual, expected)`` -- **error over spacing**, a real number::

    |actual - expected| / spacing(|expected|)      (spacing(v) = numpy.spacing(v): the gap from
                                                    |v| to the next float away from zero)

the error of ``actual`` in units of the last place of the value it should have been:
"correctly rounded" is at most 0.5 ulp (error over spacing), "within 0.7 ulp (error over
spacing) of mpmath". ``expected`` is the reference, so the spacing is taken at it; numpy's
``assert_array_almost_equal_nulp``, which has no reference side, takes it at
``max(|x|, |y|)`` instead (the two differ only when the values straddle a power of two).
Equal values (also equal infinities and ``+0``/``-0``) and two NaNs at the same index give 0;
one NaN, or a finite value against an infinite one, gives ``inf``. When ``|actual - expected|``
was computed exactly elsewhere (in mpmath, where the exact value is not a float),
:func:`error_in_ulps` divides that error by the spacing at ``expected`` rounded to float64.

The two agree within a factor of two away from powers of two: one step is one spacing, except
that the spacing doubles at each binade boundary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import bad

__all__ = ["ulp_steps", "max_ulp_steps", "ulp_error", "max_ulp_error", "error_in_ulps"]

#: per float format: the unsigned view, the magnitude mask, the sign bit
_FORMATS = {
    np.dtype(np.float64): (np.uint64, np.uint64(0x7FFF_FFFF_FFFF_FFFF), np.uint64(1 << 63)),
    np.dtype(np.float32): (np.uint32, np.uint32(0x7FFF_FFFF), np.uint32(1 << 31)),
}


def ulp_steps(a: Any, b: Any) -> np.ndarray:
    """Elementwise representable steps (uint64) between ``a`` and ``b``: same float dtype
    (float32 or float64), same shape. See the module docstring."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype not in _FORMATS:
        bad("ulp_steps dtypes", (str(a.dtype), str(b.dtype)),
            "must be one float dtype, float32 or float64, for both arrays", TypeError)
    if a.shape != b.shape:
        bad("ulp_steps shapes", (a.shape, b.shape), "must be equal")
    uint, mag_mask, sign_mask = _FORMATS[a.dtype]
    ia = np.ascontiguousarray(a).view(uint)
    ib = np.ascontiguousarray(b).view(uint)
    ma = (ia & mag_mask).astype(np.uint64)
    mb = (ib & mag_mask).astype(np.uint64)
    same_sign = (ia & sign_mask) == (ib & sign_mask)
    steps = np.where(same_sign, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    steps = np.where(nan_a & nan_b, np.uint64(0), steps)
    return np.where(nan_a ^ nan_b, np.iinfo(np.uint64).max, steps).astype(np.uint64)


def max_ulp_steps(a: Any, b: Any) -> int:
    """The largest elementwise :func:`ulp_steps` (0 for empty arrays)."""
    steps = ulp_steps(a, b)
    return int(steps.max()) if steps.size else 0


def error_in_ulps(error: Any, expected: Any) -> np.ndarray:
    """``error / spacing(|expected|)`` elementwise (float64): an error ``|actual - expected|``
    computed exactly elsewhere, in units of the last place of ``expected`` (0 where ``error`` is 0)."""
    err = np.asarray(error, dtype=np.float64)
    ref = np.abs(np.asarray(expected, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = np.where(err == 0.0, 0.0, err / np.spacing(ref))
    return np.where(np.isnan(out) & ~np.isnan(err), np.inf, out)


def ulp_error(actual: Any, expected: Any) -> np.ndarray:
    """Elementwise error over spacing (float64): ``|actual - expected| / spacing(|expected|)``,
    both widened to float64, same shape. See the module docstring for NaN and infinities."""
    act = np.asarray(actual, dtype=np.float64)
    ref = np.asarray(expected, dtype=np.float64)
    if act.shape != ref.shape:
        bad("ulp_error shapes", (act.shape, ref.shape), "must be equal")
    with np.errstate(invalid="ignore", over="ignore"):
        out = error_in_ulps(np.abs(act - ref), ref)
    nan_a, nan_r = np.isnan(act), np.isnan(ref)
    out = np.where((act == ref) | (nan_a & nan_r), 0.0, out)
    return np.where(nan_a ^ nan_r, np.inf, out)


def max_ulp_error(actual: Any, expected: Any) -> float:
    """The largest elementwise :func:`ulp_error` (0.0 for empty arrays)."""
    err = ulp_error(actual, expected)
    return float(err.max()) if err.size else 0.0
