"""Inverse diagnosis: bugs no decoy anticipates are described from the output itself.

Each wrong output below is built from the reference with a defect that is *not* a class of the
catalogue (a position quantization, a frequency band off by a factor, a partial reversal, a
pass-through channel touched); the inverse diagnosis must say what happened in words.
"""

from __future__ import annotations

import numpy as np

from conformance.backends.base import Capabilities
from conformance.diagnose.inverse import inverse_diagnosis
from conformance.diagnose.likely_bug import diagnose
from conformance.error_model.tolerance import get_profile, resolve
from conformance.vocabulary import STAGES
from judge_cases import forward_case
from roperef import reference
from roperef.frequencies import inv_freq
from roperef.layout import pair_map
from roperef.reference import two_product
from roperef.spec import RopeSpec, Scaling

CAPS = Capabilities(stages=frozenset(STAGES), angle_dtype="float32", table_dtype="float32")
POS = np.stack([np.arange(4089, 4105), np.arange(249, 265)])


def _r(case):
    return resolve(get_profile("backend"), CAPS, case, np.dtype("float32"))


def _rotate(x, spec, p, w, s=1.0):
    """y = s R(p*w) x with explicit per-token positions p [B, T] and per-pair frequencies w [n]."""
    hi, _ = two_product(p.astype(np.float64)[..., None], w)
    c, sn = (np.cos(hi) * s)[..., None, :], (np.sin(hi) * s)[..., None, :]
    pm = pair_map(spec)
    y = x.copy()
    y[..., pm.out_a] = x[..., pm.in_a] * c - x[..., pm.in_b] * sn
    y[..., pm.out_b] = x[..., pm.in_b] * c + x[..., pm.in_a] * sn
    return y


def _words(case, y):
    return inverse_diagnosis(case, {"y": y}, _r(case))["words"]


def test_positions_quantized_past_a_threshold_are_described():
    spec = RopeSpec(64)
    case = forward_case(spec, POS, "float32")
    p = np.where(POS >= 256, (POS // 16) * 16, POS)
    w, _ = inv_freq(spec, 4105)
    words = _words(case, _rotate(case.arrays["x"], spec, p, w))
    assert any("multiple of 16" in x for x in words), words


def test_a_band_of_pairs_with_frequencies_8x_too_small_is_described():
    spec = RopeSpec(64)
    case = forward_case(spec, POS, "float32")
    w, _ = inv_freq(spec, 4105)
    w2 = w.copy()
    w2[16:] /= 8
    words = _words(case, _rotate(case.arrays["x"], spec, POS, w2))
    assert any(x.startswith("pairs 16-31 use frequencies 8x too small") for x in words), words


def test_rotation_reversed_on_some_pairs_and_a_gain_are_described():
    spec = RopeSpec(64, scaling=Scaling("yarn", factor=4.0, original_max_position_embeddings=2048))
    case = forward_case(spec, POS, "float32")
    w, s = inv_freq(spec, 4105)
    w2 = w.copy()
    w2[:8] = -w2[:8]
    words = _words(case, _rotate(case.arrays["x"], spec, POS, w2, s))
    assert any(x.startswith("pairs 0-7 use rotation reversed") for x in words), words
    words = _words(case, _rotate(case.arrays["x"], spec, POS, w, 1.0))
    assert any(x.startswith("gain 1 instead of s=") and "attention factor missing" in x for x in words), words


def test_pass_through_channels_touched_are_described_and_no_decoy_claims_it():
    spec = RopeSpec(64, rotary_dim=32)
    case = forward_case(spec, POS, "float32")
    y = case.arrays["y"].copy()
    y[..., 40:44] *= 1.5
    d = diagnose(case, {"y": y}, _r(case))
    assert d["match"] is None
    assert any(x.startswith("channels outside the rotary window changed: 40-43") for x in d["inverse"]["words"])
    assert "channels outside the rotary window changed" in d["summary"]


def test_a_wrong_pairing_is_seen_as_a_rotation_under_the_other_pairing():
    spec = RopeSpec(64, pairing="half")
    case = forward_case(spec, POS, "float32")
    y = reference.forward(case.arrays["x"], POS, spec.replace(pairing="adjacent"))
    words = _words(case, y)
    assert any("rotation under pairing 'adjacent'" in x for x in words), words
