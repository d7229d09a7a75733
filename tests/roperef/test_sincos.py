"""roperef.sincos: cos/sin of an exact two-term angle from IEEE + - * only.

Accuracy against 50-digit mpmath over the whole domain (positions in [-2^31, 2^31),
frequencies up to pi, angles next to multiples of pi/2), the constants re-derived here,
and the Numba twin (roperef.fast.sincos) equal to the NumPy version bit for bit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roperef.sincos import COS_COEFFS, PIO2_CHUNKS, SIN_COEFFS, TWO_OVER_PI, sincos, two_product
from roperef.ulp import error_in_ulps

ULP_BOUND = 0.7  # ulp (error over spacing); measured worst: 0.69 (see the docstring of roperef.sincos)


def _exact(hi: float, lo: float) -> tuple[float, float]:
    with mpmath.workdps(50):
        x = mpmath.mpf(hi) + mpmath.mpf(lo)
        return mpmath.cos(x), mpmath.sin(x)


def _ulp_error(got: float, exact) -> float:
    """The error of ``got`` in ulp (error over spacing) of the exact value, the error computed in mpmath."""
    with mpmath.workdps(50):
        err = abs(mpmath.mpf(got) - exact)
    return float(error_in_ulps(float(err), float(exact)))


def _check(p: np.ndarray, w: np.ndarray) -> float:
    hi, lo = two_product(p.astype(np.float64), w.astype(np.float64))
    cos, sin = sincos(hi, lo)
    worst = 0.0
    for k in range(hi.size):
        c, s = _exact(float(hi.flat[k]), float(lo.flat[k]))
        worst = max(worst, _ulp_error(float(cos.flat[k]), c), _ulp_error(float(sin.flat[k]), s))
    return worst


def test_constants_are_what_they_claim():
    with mpmath.workdps(80):
        pio2 = mpmath.pi / 2
        total = sum((Fraction(c) for c in PIO2_CHUNKS), Fraction(0))
        assert abs(mpmath.mpf(total.numerator) / total.denominator - pio2) < mpmath.mpf(2) ** -150
        assert TWO_OVER_PI == float(2 / mpmath.pi)
    for c in PIO2_CHUNKS[:5]:  # 21 significant bits: k*c is exact for |k| <= 2^32
        m, _ = math.frexp(c)
        assert (m * 2**21).is_integer()
    for m, c in enumerate(SIN_COEFFS):
        assert c == (-1) ** (m + 1) * float(Fraction(1, math.factorial(2 * m + 3)))
    for m, c in enumerate(COS_COEFFS):
        assert c == (-1) ** m * float(Fraction(1, math.factorial(2 * m + 4)))


@settings(deadline=None, max_examples=200)
@given(
    p=st.integers(-(2**31), 2**31 - 1),
    w=st.floats(2.0**-30, math.pi, allow_nan=False, allow_infinity=False),
)
def test_within_0_7_ulp_of_the_exact_values(p, w):
    worst = _check(np.array([p]), np.array([w]))
    assert worst <= ULP_BOUND, (p, w, worst)


def test_random_and_boundary_angles():
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.integers(-(2**31), 2**31, 3000), rng.integers(-50, 50, 1000),
                        np.array([0, 1, -1, 2**31 - 1, -(2**31)])])
    w = np.concatenate([rng.uniform(0, math.pi, 3000), 10.0 ** rng.uniform(-9, 0, 1000),
                        np.array([1.0, math.pi, math.pi, 1.0, 1.0])])
    worst = _check(p, w)
    print(f"worst {worst:.3f} ulp over {p.size} angles")
    assert worst <= ULP_BOUND


def test_angles_next_to_multiples_of_half_pi():
    """p*w within a few ulp (error over spacing) of k*pi/2 (the reduction's cancellation), up to k ~ 2^32."""
    ks = np.array([1, 2, 3, 4, 7, 1000, 123457, 2**20 + 1, 2**31 - 1, 2**32 - 5], dtype=np.float64)
    with mpmath.workdps(60):
        w = np.array([float(k * mpmath.pi / 2 / (2**31 - 1)) for k in ks])
    p = np.full_like(w, 2**31 - 1)
    assert _check(p, w) <= ULP_BOUND
    # and the exact multiples of pi/2 as float64 angles at position 1
    with mpmath.workdps(60):
        w1 = np.array([float(k * mpmath.pi / 2) for k in range(1, 3)])
    assert _check(np.ones(2), w1) <= ULP_BOUND


@pytest.mark.parametrize("shape", [(7,), (3, 5)])
def test_numba_twin_is_bit_identical(shape):
    from numba import njit

    from roperef.fast.sincos import sincos as sincos_nb

    @njit
    def run(hi, lo, cos, sin):
        for k in range(hi.size):
            cos[k], sin[k] = sincos_nb(hi[k], lo[k])

    rng = np.random.default_rng(11)
    p = rng.integers(-(2**31), 2**31, 2000).astype(np.float64)
    w = np.concatenate([rng.uniform(0, math.pi, 1000), 10.0 ** rng.uniform(-9, 0, 1000)])
    hi, lo = two_product(p, w)
    c_np, s_np = sincos(hi, lo)
    c_nb, s_nb = np.empty_like(hi), np.empty_like(hi)
    run(hi, lo, c_nb, s_nb)
    np.testing.assert_array_equal(c_np.view(np.int64), c_nb.view(np.int64))
    np.testing.assert_array_equal(s_np.view(np.int64), s_nb.view(np.int64))
    cs = sincos(hi[: math.prod(shape)].reshape(shape), lo[: math.prod(shape)].reshape(shape))
    assert cs[0].shape == shape
