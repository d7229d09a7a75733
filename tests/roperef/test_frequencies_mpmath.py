"""Worked values against mpmath (50 digits) at the boundaries that matter.

The expected values are computed here, independently, from docs/spec.md section 3
in mpmath; roperef is only called for the value under test. Inputs that are
float64 numbers (theta, factors, lengths) are taken as exact.

Bounds (u = 2^-53):

- inv_freq: relative error <= 4e-16 where the exponent ``2i/d`` is exact in binary
  (d a power of two: every worked case below). For other ``d`` the float64 exponent
  ``fl(2i/d)`` is part of the definition (roperef.frequencies docstring); against the
  real-number exponent the error grows to ``(3 + |2i/d * ln theta|) u``
  (:func:`test_non_power_of_two_exponent`).
- cos/sin at integer positions up to 2^31 vs mpmath cos/sin of the exact product
  ``p*w`` (``w`` the float64 inv_freq): absolute error <= 2u (times ``s``, plus one
  rounding of the product by ``s``, when the attention factor is not 1).
- forward/backward outputs: ``|y - y_exact| <= 4u * s * (|x_a| + |x_b|)``.

Each test prints the largest error it measured (``pytest -rP`` shows them).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from conformance.golden import exact_model
from roperef import RopeSpec, Scaling
from roperef.frequencies import inv_freq
from roperef.layout import pair_axes
from roperef.reference import backward, cos_sin, forward

U = 2.0**-53
REL_TOL = 4e-16
DPS = 50
mpf = mpmath.mpf


# ---------------------------------------------------------------------------------------------
# The mpmath model of docs/spec.md section 3 (conformance/golden/exact_model.py: each formula there
# quotes the spec text it implements, tests/conformance/golden/test_exact_model_spec.py holds it to the page), in 50 digits.
# ---------------------------------------------------------------------------------------------


def mp_base(theta: float, d: int, n: int) -> list:
    """theta^(-2i/d), i < n, with the real exponent 2i/d (the spec's base line)."""
    return exact_model.base(mpmath.mp, theta, d, n)


def mp_get_mscale(x, m=1):
    return exact_model.get_mscale(mpmath.mp, x, m)


def mp_yarn(theta, d, n, f, l0, fast=32.0, slow=1.0, truncate=True):
    """(omega list, low, high): the spec's yarn bullet."""
    spec = RopeSpec(head_dim=d, theta=theta, scaling=Scaling("yarn", factor=f, original_max_position_embeddings=l0,
                                                             beta_fast=fast, beta_slow=slow, truncate=truncate))
    assert spec.n_pairs == n
    low, high = exact_model.yarn_range(mpmath.mp, d, theta, l0, fast, slow, truncate)
    return exact_model.FORMULAS["yarn"](mpmath.mp, spec, None)[0], low, high


def mp_llama3(theta, d, n, f, a, b, l0):
    """The spec's llama3 bullet."""
    spec = RopeSpec(head_dim=d, theta=theta, scaling=Scaling("llama3", factor=f, low_freq_factor=a, high_freq_factor=b,
                                                             original_max_position_embeddings=l0))
    assert spec.n_pairs == n
    return exact_model.FORMULAS["llama3"](mpmath.mp, spec, None)[0]


def rel_errors(got: np.ndarray, want: list) -> list:
    assert got.dtype == np.float64 and got.shape == (len(want),)
    return [abs((mpf(float(g)) - w) / w) if w != 0 else abs(mpf(float(g))) for g, w in zip(got, want)]


def check_rel(got: np.ndarray, want: list, tol: float | np.ndarray = REL_TOL, label: str = "") -> float:
    """Assert ``rel err_i <= tol_i`` (tol a number or per-element array); print and return the max."""
    errs = [float(e) for e in rel_errors(got, want)]
    tols = np.broadcast_to(np.asarray(tol, dtype=np.float64), (len(errs),))
    worst = max(errs)
    print(f"{label}: max rel err {worst:.3e} ({worst / U:.2f} u) over {len(errs)} frequencies")
    for i, (e, t) in enumerate(zip(errs, tols)):
        assert e <= t, f"{label}: pair {i}: got {got[i]!r}, want {mpmath.nstr(want[i], 20)}, rel {e:.3e} > {t:.3e}"
    return worst


def scaled_base_tol(d: int, n: int, base_rel_u: float) -> np.ndarray:
    """Tolerance for w_i = theta'^(-2i/d) when theta' itself carries a relative error of ``base_rel_u`` u.

    A relative error e in theta' becomes (2i/d) e in w_i; REL_TOL covers the power and the division.
    """
    return REL_TOL + (2.0 * np.arange(n) / d) * base_rel_u * U


def power_rel_u(base: float, exponent: float, base_rel_u: float) -> float:
    """Relative error (in u) of fl(base^fl(exponent)) for a base carrying ``base_rel_u`` u.

    Rounding the exponent by u changes the power by |exponent ln base| u; the base error is
    multiplied by the exponent; the power itself adds one rounding.
    """
    return abs(exponent * math.log(base)) + exponent * base_rel_u + 1.0


@pytest.fixture(autouse=True)
def _dps():
    with mpmath.workdps(DPS):
        yield


# ---------------------------------------------------------------------------------------------
# default, linear, ntk, dynamic
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("theta, d", [(10000.0, 128), (500000.0, 128), (1000000.0, 64), (10000.0, 2), (150000.0, 256)])
def test_default(theta, d):
    w, s = inv_freq(RopeSpec(head_dim=d, theta=theta))
    assert s == 1.0
    assert w[0] == 1.0  # theta^0 exactly
    check_rel(w, mp_base(theta, d, d // 2), label=f"default theta={theta} d={d}")


@pytest.mark.parametrize("factor", [1.0, 2.0, 3.0, 8.0, 40.0])
def test_linear(factor):
    w, s = inv_freq(RopeSpec(head_dim=128, scaling=Scaling("linear", factor=factor)))
    assert s == 1.0
    check_rel(w, [v / factor for v in mp_base(10000.0, 128, 64)], label=f"linear f={factor}")


@pytest.mark.parametrize("alpha", [1.0, 2.0, 1000.0])
def test_fixed_ntk(alpha):
    d = 128
    w, s = inv_freq(RopeSpec(head_dim=d, theta=10000.0, scaling=Scaling("ntk", alpha=alpha)))
    base = mpf(10000.0) * mpf(alpha) ** (mpf(d) / (d - 2))
    assert s == 1.0
    # theta' = fl(theta * fl(alpha^fl(d/(d-2)))): its relative error is power_rel_u + 1 rounding
    kappa = power_rel_u(alpha, d / (d - 2), 0.0) + 1.0
    check_rel(w, mp_base(base, d, d // 2), tol=scaled_base_tol(d, d // 2, kappa), label=f"ntk alpha={alpha}")


@pytest.mark.parametrize(
    "seq_len, length",
    [(None, 4096), (1, 4096), (4095, 4096), (4096, 4096), (4097, 4097), (8192, 8192), (12289, 12289)],
)
@pytest.mark.parametrize("factor", [1.0, 2.0, 8.0])
def test_dynamic(seq_len, length, factor):
    """L = max(seq_len, M); at L = M the base is theta exactly; at L = 2M it is theta*(f+1)^(d/(d-2))."""
    d, m, theta = 64, 4096, 10000.0
    spec = RopeSpec(head_dim=d, theta=theta, scaling=Scaling("dynamic", factor=factor, max_position_embeddings=m))
    w, s = inv_freq(spec, seq_len)
    assert s == 1.0
    base = mpf(theta) * (mpf(factor) * length / m - (mpf(factor) - 1)) ** (mpf(d) / (d - 2))
    if length == m:
        assert base == theta
    if length == 2 * m:
        assert base == mpf(theta) * (mpf(factor) + 1) ** (mpf(d) / (d - 2))
    # q = f*L/M - (f-1): three roundings of terms up to f*L/M, relative to q
    q = factor * length / m - (factor - 1.0)
    q_rel_u = (2 * factor * length / m + (factor - 1.0)) / q + 1.0
    kappa = power_rel_u(q, d / (d - 2), q_rel_u) + 1.0
    tol = scaled_base_tol(d, d // 2, kappa)
    check_rel(w, mp_base(base, d, d // 2), tol=tol, label=f"dynamic f={factor} L={length}")
    if length > m:
        # the frequencies really changed (a dropped seq_len would not show otherwise)
        w_default, _ = inv_freq(spec.replace(scaling=Scaling()))
        assert np.all(w[1:] < w_default[1:])


def test_dynamic_factor_one_is_default_only_up_to_m():
    """f = 1: theta' = theta * (L/M)^(d/(d-2)), so default for L <= M but not beyond."""
    d, m = 32, 1024
    spec = RopeSpec(head_dim=d, scaling=Scaling("dynamic", factor=1.0, max_position_embeddings=m))
    w_default, _ = inv_freq(RopeSpec(head_dim=d))
    for seq_len in (None, 1, m):
        np.testing.assert_array_equal(inv_freq(spec, seq_len)[0], w_default)
    w, _ = inv_freq(spec, 3 * m)
    kappa = power_rel_u(3.0, d / (d - 2), 1.0) + 1.0
    want = mp_base(mpf(10000.0) * mpf(3) ** (mpf(d) / (d - 2)), d, d // 2)
    check_rel(w, want, tol=scaled_base_tol(d, d // 2, kappa), label="dynamic f=1 L=3M")


# ---------------------------------------------------------------------------------------------
# YaRN: ramp ends (truncate on/off), clamps, low == high, attention factor
# ---------------------------------------------------------------------------------------------

# (theta, d, f, L0, beta_fast, beta_slow, truncate, expected (low, high) after truncation/clamp, by hand)
YARN_CASES = [
    # Llama-like: corr(32) = 20.94, corr(1) = 45.03
    (10000.0, 128, 4.0, 4096, 32.0, 1.0, True, (20, 46)),
    (10000.0, 128, 4.0, 4096, 32.0, 1.0, False, None),
    (10000.0, 128, 4.0, 4096, 32.0, 1.0, None, (20, 46)),  # truncate unset = True
    # gpt-oss-like: theta 150000, d 64, L0 4096, f 32, truncate off
    (150000.0, 64, 32.0, 4096, 32.0, 1.0, False, None),
    (150000.0, 64, 32.0, 4096, 32.0, 1.0, True, (8, 18)),
    # DeepSeek-V3-like: d 64, theta 10000, L0 4096, f 40
    (10000.0, 64, 40.0, 4096, 32.0, 1.0, True, (10, 23)),
    # low < 0 clamps to 0 (tiny L0)
    (10000.0, 64, 8.0, 64, 32.0, 1.0, True, (0, 9)),  # corr(32) = -3.98, corr(1) = 8.06
    (10000.0, 64, 8.0, 64, 32.0, 1.0, False, None),
    # high > d-1 clamps to d-1 (small theta, long L0, beta_slow small)
    (100.0, 16, 4.0, 1 << 20, 32.0, 0.5, True, (14, 15)),  # corr(0.5) = 22.09 -> ceil 23 -> clamp 15
    # corr(32) = 16.07 > d-1: low = 16 > high = 15; the spec formula then gives r = 1 for every pair (as HF)
    (100.0, 16, 4.0, 1 << 21, 32.0, 0.5, True, (16, 15)),
    (100.0, 16, 4.0, 1 << 17, 64.0, 1.0, False, None),
    # beta_fast == beta_slow, truncate off: low == high -> high += 0.001 (a step inside one pair)
    (10000.0, 64, 4.0, 4096, 4.0, 4.0, False, None),
    # beta_fast == beta_slow, truncate on: floor != ceil, a one-pair ramp
    (10000.0, 64, 4.0, 4096, 4.0, 4.0, True, (17, 18)),  # corr(4) = 17.70
    # factor 1: no change at all
    (10000.0, 64, 1.0, 4096, 32.0, 1.0, False, None),
]


def yarn_tol(theta, d, f, l0, fast, slow, truncate, low, high) -> np.ndarray:
    """Per-pair relative tolerance of the YaRN frequencies (error analysis, in u).

    ``w_j (1 - r_j (1 - 1/f))``: the float64 blend adds up to 6u (base w, w/f, two products,
    1 - r, the sum). An absolute error dr in the ramp changes the result relatively by at most
    ``dr (f - 1)``. Without truncation low/high carry the error of ``d ln(L0/(2 pi beta)) / (2 ln theta)``:
    3 roundings inside the log (pi, product, quotient) become 3u / |ln x| relative, plus ~3u
    for log, products and quotient. With truncation low/high are exact integers.
    """
    low, high = float(low), float(high)
    n = d // 2

    def corr_err(beta: float) -> float:
        x = l0 / (2 * math.pi * beta)
        c = d * math.log(x) / (2 * math.log(theta))
        return abs(c) * (3.0 / max(abs(math.log(x)), 1e-300) + 4.0) * U

    d_low = 0.0 if truncate else corr_err(fast)
    d_high = 0.0 if truncate else corr_err(slow)
    if not truncate and low == 0.0:
        d_low = 0.0  # clamped: exact
    if high == d - 1 or high - low <= 0.0011:
        d_high = d_low  # clamped, or high = low + 0.001 moves with low
    j = np.arange(n, dtype=np.float64)
    r = np.clip((j - low) / (high - low), 0.0, 1.0)
    width = high - low
    dr = (np.abs(j - low) * U + d_low + r * (d_high + d_low + width * U)) / width + 2 * U * r
    dr = np.where((j <= low - d_low) | (j >= high + d_high), 0.0, dr)  # clipped to exactly 0 or 1
    return 6 * U + (f - 1.0) * dr


@pytest.mark.parametrize("theta, d, f, l0, fast, slow, truncate, expected", YARN_CASES)
def test_yarn_ramp(theta, d, f, l0, fast, slow, truncate, expected):
    sc = Scaling(
        "yarn", factor=f, original_max_position_embeddings=l0, beta_fast=fast, beta_slow=slow, truncate=truncate
    )
    w, s = inv_freq(RopeSpec(head_dim=d, theta=theta, scaling=sc))
    want, low, high = mp_yarn(theta, d, d // 2, f, l0, fast, slow, truncate is not False)
    if expected is not None:
        assert (low, high) == (mpf(expected[0]), mpf(expected[1])) or abs(high - expected[1]) < 1e-12, (low, high)
    # the float64 floor/ceil cannot land on the other side: corr values are far from integers here
    if truncate is not False:
        for beta in (fast, slow):
            c = d * mpmath.log(mpf(l0) / (2 * mpmath.pi * beta)) / (2 * mpmath.log(mpf(theta)))
            assert abs(c - mpmath.nint(c)) > 1e-6
    tol = yarn_tol(theta, d, f, l0, fast, slow, truncate is not False, low, high)
    label = f"yarn theta={theta} d={d} f={f} L0={l0} beta=({fast},{slow}) truncate={truncate}"
    check_rel(w, want, tol=tol, label=label)
    # ramp ends, by hand: pairs j <= low keep w_j exactly, pairs j >= high are w_j / f (within roundoff)
    w_default, _ = inv_freq(RopeSpec(head_dim=d, theta=theta))
    for j in range(d // 2):
        if low > high:  # every pair divided by f
            assert abs(w[j] - w_default[j] / f) <= 2 * U * w_default[j] / f, j
        elif j <= low:
            assert abs(w[j] - w_default[j]) <= 2 * U * w_default[j], j
        if j >= high:
            assert abs(w[j] - w_default[j] / f) <= 2 * U * w_default[j] / f, j
    assert s == pytest.approx(float(mp_get_mscale(mpf(f))), rel=2 * U, abs=0)


def test_yarn_ramp_interior_values_by_hand():
    """Truncated Llama-like case: r_j = (j - 20) / 26, w_j = r_j w_j / 4 + (1 - r_j) w_j, checked at j = 21, 33, 45."""
    sc = Scaling("yarn", factor=4.0, original_max_position_embeddings=4096)
    w, _ = inv_freq(RopeSpec(head_dim=128, scaling=sc))
    for j in (21, 33, 45):
        base = mpf(10000) ** (-mpf(2 * j) / 128)
        r = mpf(j - 20) / 26
        want = r * base / 4 + (1 - r) * base
        assert abs(mpf(float(w[j])) - want) / want <= REL_TOL, j


@pytest.mark.parametrize(
    "extra, want",
    [
        ({}, lambda f: mp_get_mscale(f)),
        ({"mscale": 1.0, "mscale_all_dim": 1.0}, lambda f: mpf(1)),
        ({"mscale": 0.707, "mscale_all_dim": 0.707}, lambda f: mpf(1)),  # DeepSeek V3: ratio 1
        ({"mscale": 1.0, "mscale_all_dim": 0.5}, lambda f: mp_get_mscale(f, 1) / mp_get_mscale(f, mpf(0.5))),
        ({"mscale": 0.5, "mscale_all_dim": 0.0}, lambda f: mp_get_mscale(f)),  # one is zero: plain get_mscale(f)
        ({"mscale": 0.0, "mscale_all_dim": 2.0}, lambda f: mp_get_mscale(f)),
        ({"attention_factor": 1.25}, lambda f: mpf(1.25)),
        ({"attention_factor": 0.5, "mscale": 1.0, "mscale_all_dim": 0.5}, lambda f: mpf(0.5)),
    ],
)
@pytest.mark.parametrize("factor", [1.0, 4.0, 40.0])
def test_yarn_attention_factor(extra, want, factor):
    sc = Scaling("yarn", factor=factor, original_max_position_embeddings=4096, **extra)
    _, s = inv_freq(RopeSpec(head_dim=64, scaling=sc))
    exact = want(mpf(factor))
    assert abs(mpf(s) - exact) <= 4 * U * exact, (s, exact)
    if factor == 1.0 and "attention_factor" not in extra:
        assert s == 1.0


# ---------------------------------------------------------------------------------------------
# LongRoPE: strict seq_len > L0, attention factor
# ---------------------------------------------------------------------------------------------

SHORT = (1.0, 1.5, 2.0, 4.0, 1.25, 1.0, 1.0625, 1.1)
LONG = (3.0, 5.0, 7.0, 11.0, 13.0, 17.5, 19.0, 23.1)


@pytest.mark.parametrize(
    "seq_len, use_long", [(None, False), (1, False), (4095, False), (4096, False), (4097, True), (131072, True)]
)
def test_longrope_switch(seq_len, use_long):
    d, l0, theta = 16, 4096, 10000.0
    sc = Scaling("longrope", short_factor=SHORT, long_factor=LONG, original_max_position_embeddings=l0, factor=32.0)
    w, s = inv_freq(RopeSpec(head_dim=d, theta=theta, scaling=sc), seq_len)
    ext = LONG if use_long else SHORT
    want = [1 / (mpf(e) * mpf(theta) ** (mpf(2 * i) / d)) for i, e in enumerate(ext)]
    check_rel(w, want, label=f"longrope seq_len={seq_len}")
    exact_s = mpmath.sqrt(1 + mpmath.log(32) / mpmath.log(l0))
    assert abs(mpf(s) - exact_s) <= 2 * U * exact_s


@pytest.mark.parametrize(
    "extra, want",
    [
        ({"factor": 32.0}, lambda: mpmath.sqrt(1 + mpmath.log(32) / mpmath.log(4096))),
        ({"max_position_embeddings": 131072}, lambda: mpmath.sqrt(1 + mpmath.log(32) / mpmath.log(4096))),
        ({"max_position_embeddings": 12288}, lambda: mpmath.sqrt(1 + mpmath.log(3) / mpmath.log(4096))),
        ({"factor": 1.0}, lambda: mpf(1)),
        ({"factor": 0.75}, lambda: mpf(1)),
        ({"max_position_embeddings": 4096}, lambda: mpf(1)),
        ({"factor": 32.0, "attention_factor": 1.19}, lambda: mpf(1.19)),
        ({"factor": 32.0, "max_position_embeddings": 8192}, lambda: mpmath.sqrt(1 + mpmath.log(32) / mpmath.log(4096))),
    ],
)
def test_longrope_attention_factor(extra, want):
    sc = Scaling("longrope", short_factor=SHORT, long_factor=LONG, original_max_position_embeddings=4096, **extra)
    spec = RopeSpec(head_dim=16, scaling=sc)
    exact = want()
    for seq_len in (None, 4096, 4097):  # the same s for short and long factors
        _, s = inv_freq(spec, seq_len)
        assert abs(mpf(s) - exact) <= 2 * U * exact, (extra, seq_len, s)


# ---------------------------------------------------------------------------------------------
# Llama 3: bands and their edges
# ---------------------------------------------------------------------------------------------


def test_llama3_31_worked():
    """Llama 3.1: theta 500000, d 128, f 8, a 1, b 4, L0 8192."""
    args = (500000.0, 128, 64, 8.0, 1.0, 4.0, 8192)
    sc = Scaling("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)
    w, s = inv_freq(RopeSpec(head_dim=128, theta=500000.0, scaling=sc))
    assert s == 1.0
    want = mp_llama3(*args)
    check_rel(w, want, tol=REL_TOL + U, label="llama3.1")
    # all three bands are present in this case
    lam = [2 * mpmath.pi / v for v in mp_base(500000.0, 128, 64)]
    assert any(x < 2048 for x in lam) and any(x > 8192 for x in lam) and any(2048 <= x <= 8192 for x in lam)


def edge_ratio(lam: float, l0_start: int) -> tuple[int, float]:
    """An integer L0 near ``l0_start`` and a float64 r with ``L0 / r == lam`` exactly in float64."""
    for l0 in range(l0_start, l0_start + 64):
        ratio = l0 / lam
        for step in range(-3, 4):
            r = ratio
            for _ in range(abs(step)):
                r = math.nextafter(r, math.inf if step > 0 else 0.0)
            if l0 / r == lam:
                return l0, r
    raise AssertionError("no exact edge found")


@pytest.mark.parametrize("edge", ["low", "high"])
@pytest.mark.parametrize("j", [3, 10, 17])
def test_llama3_band_edges(edge, j):
    """A wavelength exactly on L0/a (low edge) or L0/b (high edge), in float64: boundaries are inclusive.

    The rule is continuous there (sigma = 0 gives w/f, sigma = 1 gives w), so the value must match
    the mpmath model to roundoff whichever side mpmath's exact wavelength falls on. The float64
    set-up is built so that ``2*pi/w_j == L0/a`` (or ``L0/b``) holds exactly in float64.
    """
    d, theta, f = 64, 10000.0, 8.0
    w_default, _ = inv_freq(RopeSpec(head_dim=d, theta=theta))
    lam = 2 * math.pi / w_default[j]
    l0, ratio = edge_ratio(lam, 8192)
    if edge == "low":
        a, b = ratio, ratio * 3.0
    else:
        a, b = ratio / 3.0, ratio
    assert l0 / (a if edge == "low" else b) == lam, "set-up: the float64 wavelength sits exactly on the edge"
    sc = Scaling("llama3", factor=f, low_freq_factor=a, high_freq_factor=b, original_max_position_embeddings=l0)
    w, _ = inv_freq(RopeSpec(head_dim=d, theta=theta, scaling=sc))
    want = mp_llama3(theta, d, d // 2, f, a, b, l0)
    check_rel(w, want, tol=REL_TOL + 2 * U, label=f"llama3 {edge} edge j={j}")
    expected_at_edge = w_default[j] / f if edge == "low" else w_default[j]
    assert abs(w[j] - expected_at_edge) <= 4 * U * expected_at_edge
    # neighbours are in the outer bands: j-1 (shorter wavelength) and j+1 (longer)
    if edge == "high":
        assert w[j - 1] == w_default[j - 1]
    else:
        assert abs(w[j + 1] - w_default[j + 1] / f) <= U * w_default[j + 1] / f


# ---------------------------------------------------------------------------------------------
# proportional (Gemma 4): zero frequencies, denominator d of the rotated vector
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head, width, start, rho, factor, k",
    [(512, 512, 0, 0.25, None, 64), (512, 512, 0, 0.25, 8.0, 64), (64, 64, 0, 0.3, None, 9), (64, 64, 0, 1.0, None, 32),
     (64, 64, 0, 0.015625, 2.0, 0), (256, 256, 0, None, None, 128),
     # a window narrower than the head: the formula on the window's d = r (docs/spec.md section 3), never on D
     (128, 64, 0, 0.25, None, 8), (128, 32, 96, 0.5, 2.0, 8), (96, 64, 16, None, None, 32)],
)
def test_proportional(head, width, start, rho, factor, k):
    sc = Scaling("proportional", partial_rotary_factor=rho, factor=factor)
    w, s = inv_freq(RopeSpec(head_dim=head, rotary_dim=width, rotary_start=start, theta=1000000.0, scaling=sc))
    # k = int((rho*d)//2) with the float64 rho taken exactly, d = the rotary width here
    rho_exact = Fraction(1) if rho is None else Fraction(rho)
    assert k == int((rho_exact * width) // 2)
    assert w.shape == (width // 2,) and s == 1.0  # n frequencies: one per pair of the window
    assert np.all(w[k:] == 0.0)  # exactly zero: identity pairs
    assert np.all(w[:k] > 0.0)
    f = 1 if factor is None else factor
    want = [v / f for v in mp_base(1000000.0, width, k)]
    if k:
        check_rel(w[:k], want, label=f"proportional D={head} r={width} rho={rho} f={factor}")


def test_proportional_zero_frequency_is_identity_at_any_position():
    spec = RopeSpec(head_dim=16, scaling=Scaling("proportional", partial_rotary_factor=0.25))
    c, s = cos_sin(spec, np.array([0, 7, 2**31 - 1, -(2**31)]))
    assert np.all(c[:, 2:] == 1.0) and np.all(s[:, 2:] == 0.0)


def test_non_power_of_two_exponent():
    """d = 96 and odd d = 25: against the real exponent the error is at most (3 + |2i/d ln theta|) u."""
    worst = 0.0
    for theta, d, width in ((10000.0, 96, 96), (10000.0, 25, 26), (1e6, 80, 80)):
        w, _ = inv_freq(RopeSpec(head_dim=width, rotary_dim=width, freq_dim=d, theta=theta))
        for i, (g, e) in enumerate(zip(w, mp_base(theta, d, width // 2))):
            err = abs(mpf(float(g)) - e) / e
            bound = (3 + abs(2 * i / d * math.log(theta))) * U
            assert err <= bound, (theta, d, i, float(err), bound)
            worst = max(worst, float(err))
    print(f"non-power-of-two d: max rel err vs real exponent {worst:.3e}")


# ---------------------------------------------------------------------------------------------
# cos/sin and forward/backward at large positions
# ---------------------------------------------------------------------------------------------

LARGE_POSITIONS = np.array(
    [2**31 - 1, -(2**31), 2**31 - 3, -(2**31) + 1, 1234567891, -987654321, 2**30 + 1, 16777217, 131071, 4095, 3, 1, 0,
     -1],
    dtype=np.int64,
)

TABLE_SPECS = {
    "default": RopeSpec(head_dim=128),
    "theta1e6_d64": RopeSpec(head_dim=64, theta=1000000.0),
    "llama3": RopeSpec(
        head_dim=128,
        theta=500000.0,
        scaling=Scaling("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                        original_max_position_embeddings=8192),
    ),
    "yarn_s": RopeSpec(head_dim=64, scaling=Scaling("yarn", factor=40.0, original_max_position_embeddings=4096)),
    "odd_d": RopeSpec(head_dim=26, rotary_dim=26, freq_dim=25),
}


@pytest.mark.parametrize("name", sorted(TABLE_SPECS))
def test_cos_sin_near_2_31(name):
    """cos_sin vs mpmath cos/sin of the exact product p*w: abs error <= 2u (s = 1)."""
    spec = TABLE_SPECS[name]
    w, s = inv_freq(spec, 8192)  # seq_len only matters for dynamic/longrope (not used here)
    c, sn = cos_sin(spec, LARGE_POSITIONS)
    assert c.shape == sn.shape == (len(LARGE_POSITIONS), spec.n_pairs)
    bound = 2 * U * s + (U * s if s != 1.0 else 0.0)  # one more rounding for the product by s
    worst = mpf(0)
    for a, p in enumerate(LARGE_POSITIONS):
        for j in range(spec.n_pairs):
            phi = mpf(int(p)) * mpf(float(w[j]))  # exact product of two float64 numbers
            ec = abs(mpf(float(c[a, j])) - s * mpmath.cos(phi))
            es = abs(mpf(float(sn[a, j])) - s * mpmath.sin(phi))
            worst = max(worst, ec, es)
            assert ec <= bound and es <= bound, (int(p), j, float(ec), float(es))
    print(f"cos_sin {name}: max abs err {float(worst):.3e} ({float(worst) / U:.2f} u), s={s}")


def test_cos_sin_mrope_and_vision_rows_near_2_31():
    """Multi-row positions: each pair uses its own row's position (exact product, error <= 2u)."""
    rng = np.random.default_rng(0)
    for spec, pos in (
        (RopeSpec(head_dim=32, mrope_section=(6, 5, 5), mrope_layout="interleaved"),
         rng.integers(-(2**31), 2**31, size=(3, 5))),
        (RopeSpec(head_dim=32, mrope_section=(8, 4, 4)), rng.integers(-(2**31), 2**31, size=(3, 5))),
        (RopeSpec(head_dim=32, vision="pixtral"), rng.integers(-(2**31), 2**31, size=(5, 2))),
        (RopeSpec(head_dim=32, vision="qwen_vl"), rng.integers(-(2**31), 2**31, size=(5, 2))),
    ):
        w, _ = inv_freq(spec)
        c, sn = cos_sin(spec, pos)
        rows = pos if spec.mrope_section is not None else pos.T
        axes = pair_axes(spec)
        for t in range(5):
            for j in range(spec.n_pairs):
                phi = mpf(int(rows[axes[j], t])) * mpf(float(w[j]))
                assert abs(mpf(float(c[t, j])) - mpmath.cos(phi)) <= 2 * U
                assert abs(mpf(float(sn[t, j])) - mpmath.sin(phi)) <= 2 * U


FORWARD_SPECS = [
    RopeSpec(head_dim=16),
    RopeSpec(head_dim=16, pairing="adjacent", theta=500000.0),
    RopeSpec(head_dim=16, pairing="adjacent_in_half_out"),
    RopeSpec(head_dim=21, rotary_dim=10, rotary_start=11, freq_dim=9),
    RopeSpec(head_dim=16, scaling=Scaling("yarn", factor=40.0, original_max_position_embeddings=64, mscale=1.0,
                                          mscale_all_dim=0.5)),
    RopeSpec(head_dim=16, scaling=Scaling("longrope", short_factor=SHORT, long_factor=LONG,
                                          original_max_position_embeddings=64, factor=8.0)),
]


def _mp_rotate(spec, x, pos, s, w, sign):
    """mpmath y (float64 array of exact values rounded once) and the pair magnitude bound array."""
    n, start = spec.n_pairs, spec.rotary_start
    if spec.pairing == "half":
        read = [(start + j, start + n + j) for j in range(n)]
        write = read
    elif spec.pairing == "adjacent":
        read = [(start + 2 * j, start + 2 * j + 1) for j in range(n)]
        write = read
    else:
        read = [(start + 2 * j, start + 2 * j + 1) for j in range(n)]
        write = [(start + j, start + n + j) for j in range(n)]
    if sign < 0:  # backward: read where forward writes and vice versa
        read, write = write, read
    exact = {}
    mags = np.zeros(x.shape)
    for idx in np.ndindex(x.shape[:-1]):
        p = int(pos[idx[:-1]])
        for j, ((ra, rb), (wa, wb)) in enumerate(zip(read, write)):
            phi = sign * mpf(p) * mpf(float(w[j]))
            c, sn = mpmath.cos(phi), mpmath.sin(phi)
            xa, xb = mpf(float(x[idx + (ra,)])), mpf(float(x[idx + (rb,)]))
            exact[idx + (wa,)] = s * (xa * c - xb * sn)
            exact[idx + (wb,)] = s * (xb * c + xa * sn)
            mags[idx + (wa,)] = mags[idx + (wb,)] = s * (abs(float(xa)) + abs(float(xb)))
    return exact, mags


@pytest.mark.parametrize("k", range(len(FORWARD_SPECS)))
def test_forward_backward_large_positions_vs_mpmath(k):
    """|y - y_exact| <= 4u s (|x_a| + |x_b|) at positions up to 2^31; pass-through channels exact."""
    spec = FORWARD_SPECS[k]
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 4, 2, spec.head_dim))
    x[0, 0, 0, :] *= 1e-300  # tiny magnitudes: the bound is relative to the pair, not to the tensor
    x[1, 1, 1, :] *= 1e200
    pos = rng.integers(-(2**31), 2**31, size=(2, 4))
    pos[0, :2] = (2**31 - 1, -(2**31))
    seq_len = 2**31  # long factors for longrope, explicit so the mpmath model uses the same w
    w, s = inv_freq(spec, seq_len)
    worst = 0.0
    for fn, sign in ((forward, 1), (backward, -1)):
        y = fn(x, pos, spec, seq_len=seq_len)
        exact, mags = _mp_rotate(spec, x, pos, mpf(s), w, sign)
        for idx in np.ndindex(x.shape):
            if idx in exact:
                err = abs(mpf(float(y[idx])) - exact[idx])
                assert err <= 4 * U * mags[idx], (fn.__name__, idx, float(err), mags[idx])
                worst = max(worst, float(err / mags[idx]) if mags[idx] else 0.0)
            else:
                assert y[idx] == x[idx]
    print(f"forward/backward {k}: max |y - y_exact| / (s(|x_a|+|x_b|)) = {worst:.3e} ({worst / U:.2f} u)")
