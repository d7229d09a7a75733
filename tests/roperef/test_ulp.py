"""roperef.ulp: the two ulp metrics, representable steps and error over spacing, on values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from roperef.ulp import error_in_ulps, max_ulp_error, max_ulp_steps, ulp_error, ulp_steps

ONE = np.float64(1.0)
EPS = 2.0**-52  # the spacing at 1.0


def test_ulp_steps_counts_representable_floats():
    assert ulp_steps(ONE, np.nextafter(ONE, 2.0)) == 1
    assert ulp_steps(ONE, np.nextafter(np.nextafter(ONE, 0.0), 0.0)) == 2
    assert ulp_steps(np.float64(0.0), np.float64(-0.0)) == 0
    tiny = np.float64(5e-324)
    assert ulp_steps(-tiny, tiny) == 2  # crosses zero: -tiny -> 0 -> +tiny
    assert ulp_steps(np.float64(np.nan), np.float64(np.nan)) == 0
    assert ulp_steps(np.float64(np.nan), ONE) == np.iinfo(np.uint64).max
    assert ulp_steps(np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(2.0))) == 1
    assert ulp_steps(np.float64(2.0), ONE) == 2**52  # one binade of float64
    assert ulp_steps(np.float64(np.finfo(np.float64).max), np.float64(np.inf)) == 1
    assert max_ulp_steps(np.array([1.0, 2.0]), np.array([1.0, np.nextafter(2.0, 0.0)])) == 1
    assert max_ulp_steps(np.array([]), np.array([])) == 0


def test_ulp_steps_refuses_mixed_dtypes_and_shapes():
    with pytest.raises(TypeError, match="ulp_steps dtypes=.*one float dtype"):
        ulp_steps(np.float32(1.0), np.float64(1.0))
    with pytest.raises(TypeError, match="ulp_steps dtypes"):
        ulp_steps(np.array([1], dtype=np.int64), np.array([1], dtype=np.int64))
    with pytest.raises(ValueError, match="ulp_steps shapes=.*must be equal"):
        ulp_steps(np.zeros(2), np.zeros(3))


def test_ulp_error_is_the_error_over_the_spacing_at_expected():
    assert ulp_error(ONE + 3 * EPS, ONE) == pytest.approx(3.0)
    assert ulp_error(ONE + EPS, ONE) == 1.0
    # below 1.0 the spacing halves: one step down from 1.0 is half a spacing of 1.0 ...
    assert ulp_error(np.nextafter(ONE, 0.0), ONE) == 0.5
    # ... and one spacing of the value below: the two metrics differ across a power of two
    below = np.nextafter(ONE, 0.0)
    assert ulp_error(ONE, below) == 1.0 and ulp_steps(ONE, below) == 1
    assert ulp_error(np.float64(2.0), ONE) == 2.0**52  # |2 - 1| / 2^-52
    assert ulp_error(np.float32(1.0), ONE) == 0.0  # widened to float64 first


def test_ulp_error_zero_nan_and_infinity():
    a = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, np.nan, 1.0, np.inf])
    e = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, np.nan, 1.0, np.inf, 1.0])
    assert ulp_error(a, e).tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, np.inf, np.inf, np.inf, np.inf]
    assert ulp_error(np.float64(5e-324), np.float64(0.0)) == 1.0  # the spacing at 0 is the smallest subnormal
    assert max_ulp_error(np.array([]), np.array([])) == 0.0
    assert max_ulp_error(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 4 * EPS])) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="ulp_error shapes=.*must be equal"):
        ulp_error(np.zeros(2), np.zeros(3))


def test_error_in_ulps_takes_an_error_computed_elsewhere():
    assert error_in_ulps(0.0, 1.0) == 0.0
    assert error_in_ulps(0.25 * EPS, 1.0) == 0.25  # a sub-ulp error, as an mpmath audit measures it
    assert error_in_ulps(EPS, np.inf) == np.inf
    assert error_in_ulps(np.array([EPS, 2 * EPS]), np.array([1.0, 1.0])).tolist() == [1.0, 2.0]
