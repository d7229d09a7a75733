"""Every frequency and attention factor is the correctly rounded exact value, bit for bit.

docs/spec.md section 3: each float64 ``w_i`` and ``s`` is the exact real formula (float64
parameters exact, 0.1 / 0.001 / 2*pi the real numbers, pow/ln/sqrt exact) rounded once to
nearest. The model is evaluated at 60 digits and rounded by mpmath's own ``float()``
(round to nearest). 60 digits
leave ~140 bits beyond float64, so a rounding boundary in the way of one of these random
values is out of reach; roperef's own evaluation (Ziv's strategy from 160 bits) must land
on the same double for every value.

The model (:func:`conformance.golden.exact_model.mp_inv_freq`, shared with the golden audit) is
plain mpmath written from the spec text, not roperef's evaluation.

The second half shows that nothing platform-dependent feeds the reference: NumPy's and
the math module's ``power``/``exp``/``log``/``cos``/``sin`` perturbed by one ulp (one representable step, ``nextafter``) change
neither the reference's outputs nor the golden verification.
"""

from __future__ import annotations

import math

import ml_dtypes  # noqa: F401  # imported before the ufuncs are patched (it registers loops on np.power)
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.golden.exact_model import mp_inv_freq
from conformance.golden.store import default_golden_dir, verify_golden
from roperef import RopeSpec, fast, reference
from roperef.frequencies import inv_freq
from strategies import rope_specs

mpf = mpmath.mpf


def model(spec: RopeSpec, seq_len: int | None) -> tuple[list, object]:
    return mp_inv_freq(mpmath.mp, spec, seq_len)


def rounded(values) -> np.ndarray:
    return np.array([float(v) for v in values], dtype=np.float64)


@settings(deadline=None)
@given(spec=rope_specs(max_head_dim=64), seq_len=st.none() | st.integers(1, 1 << 20))
def test_frequencies_and_attention_factor_are_the_exact_values_bit_for_bit(spec, seq_len):
    with mpmath.workdps(60):
        want_w, want_s = model(spec, seq_len)
        want = rounded(want_w)
        want_s = float(want_s)
    got, s = inv_freq(spec, seq_len)
    assert got.dtype == np.float64 and got.shape == want.shape
    diff = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert diff.size == 0, f"pairs {diff.tolist()}: got {got[diff].tolist()}, want {want[diff].tolist()} ({spec})"
    assert s == want_s, (s, want_s, spec)


@pytest.mark.parametrize(
    "spec",
    [
        RopeSpec(head_dim=128, theta=500000.0, scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
        RopeSpec(head_dim=64, theta=150000.0, scaling={"type": "yarn", "factor": 32.0, "truncate": False,
                                                        "original_max_position_embeddings": 4096}),
        RopeSpec(head_dim=96, rotary_dim=64, freq_dim=63),
        RopeSpec(head_dim=128, rotary_dim=64, rotary_start=64, theta=1e6,
                 scaling={"type": "proportional", "partial_rotary_factor": 0.25, "factor": 2.0}),
    ],
    ids=["llama3", "yarn-no-truncate", "odd-denominator", "proportional-window-narrower-than-head"],
)
def test_worked_specs_bit_for_bit(spec):
    """Fixed real-model-like specs (the hypothesis test above covers random ones)."""
    with mpmath.workdps(80):
        w, s = model(spec, None)
        want, want_s = rounded(w), float(s)
    got, got_s = inv_freq(spec)
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
    assert got_s == want_s


def test_llama3_with_equal_band_factors_has_no_middle_band():
    """Llama 4 (high_freq_factor == low_freq_factor): every pair is either w/f or w."""
    spec = RopeSpec(head_dim=128, theta=500000.0, scaling={"type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                                           "high_freq_factor": 1.0, "original_max_position_embeddings": 8192})
    w, _ = inv_freq(spec)
    plain, _ = inv_freq(RopeSpec(head_dim=128, theta=500000.0))
    scaled = np.isclose(w, plain / 16.0, rtol=1e-15, atol=0)
    kept = w == plain
    assert np.all(scaled | kept) and scaled.any() and kept.any()
    # the band edge: wavelength 2*pi/w_i > L0 (8192) is scaled
    assert np.array_equal(scaled, 2 * math.pi / plain > 8192)


# --------------------------------------------------------------------------- nothing platform-dependent is used


def _one_ulp_up(fn):
    def perturbed(*args, **kwargs):
        out = fn(*args, **kwargs)
        return np.nextafter(out, np.inf)

    return perturbed


PERTURBED_NUMPY = ("power", "exp", "log", "cos", "sin", "sqrt", "log2", "exp2", "float_power")
PERTURBED_MATH = ("pow", "exp", "log", "cos", "sin", "sqrt", "log2")


def _outputs(specs, x, pos):
    out = []
    for spec in specs:
        out.append(reference.forward(x, pos, spec))
        out.append(reference.backward(x, pos, spec))
        out.extend(reference.cos_sin(spec, pos))
        out.append(fast.forward(x, pos, spec))
    return out


def test_libm_and_numpy_transcendentals_perturbed_by_one_ulp_change_nothing(monkeypatch):
    from roperef import frequencies

    specs = [
        RopeSpec(head_dim=64, theta=10000.0),
        RopeSpec(head_dim=64, theta=500000.0, scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
        RopeSpec(head_dim=64, scaling={"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                       "mscale": 1.0, "mscale_all_dim": 0.707}, pairing="adjacent"),
        RopeSpec(head_dim=64, scaling={"type": "dynamic", "factor": 4.0, "max_position_embeddings": 2048}),
    ]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 8, 2, 64))
    pos = np.array([[0, 1, 3, 255, 4097, 65537, 1048575, 2**31 - 1], [-5, 7, 2**20 + 1, 3, 9, 2**24 + 1, 11, 13]])
    before = _outputs(specs, x, pos)
    for name in PERTURBED_NUMPY:
        monkeypatch.setattr(np, name, _one_ulp_up(getattr(np, name)))
    for name in PERTURBED_MATH:
        monkeypatch.setattr(math, name, _one_ulp_up(getattr(math, name)))
    frequencies.exact_values.cache_clear()  # recompute the frequencies under the perturbation
    after = _outputs(specs, x, pos)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    # the checked-in goldens still verify bit for bit (every stored output recomputed)
    assert verify_golden(default_golden_dir()) == []


@settings(deadline=None, max_examples=60)
@given(spec=rope_specs(max_head_dim=64), seq_len=st.none() | st.integers(1, 1 << 20))
def test_the_float64_estimate_is_within_a_few_ulp_of_the_exact_values(spec, seq_len):
    """``estimate_inv_freq`` (the same formulas in float64, for conformance's decoy fits) stays within
    64 ulp (error over spacing at the exact value) of the correctly rounded frequencies, away from
    the branch boundaries a float64 evaluation may decide the other way (llama3 band edges, YaRN
    floor/ceil): those pairs may take the other branch and are skipped when the exact value moved."""
    from roperef.frequencies import estimate_inv_freq

    want, want_s = inv_freq(spec, seq_len)
    got, s = estimate_inv_freq(spec, seq_len)
    assert got.shape == want.shape and got.dtype == np.float64
    assert abs(s - want_s) <= 64 * np.spacing(abs(want_s)), (s, want_s, spec)
    nz = want != 0
    assert np.array_equal(got == 0, ~nz)
    err = np.abs(got[nz] - want[nz]) / np.spacing(np.abs(want[nz]))
    if spec.scaling.type in ("llama3", "yarn"):
        err = err[err < 2**20]  # a pair on the other side of a band edge or ramp end: a different branch
    assert err.size == 0 or err.max() <= 64, (err.max(), spec, seq_len)


def test_the_reference_never_uses_the_estimate():
    """Only conformance's decoy fits may call the float64 estimate: no roperef module but its definers."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "roperef"
    users = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                   if "estimate" in p.read_text() and p.relative_to(root).as_posix() not in ("exact.py", "frequencies.py"))
    assert users == [], users
