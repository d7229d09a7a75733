"""RopeSpec and Scaling: every validation rule, exact to_dict/from_dict round-trip, frozen and hashable.

Each rejected value must raise ValueError/TypeError whose message has the shape
``"{key}={value!r}: {rule}"`` (roperef.errors.bad): the key and the value first,
then the rule.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roperef import RopeSpec, Scaling
from strategies import rope_specs, scalings

NAN, INF = float("nan"), float("inf")

YARN = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
LLAMA3 = {
    "type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


def longrope(n: int, **extra: object) -> dict:
    return {
        "type": "longrope",
        "short_factor": [1.0] * n,
        "long_factor": [2.0] * n,
        "original_max_position_embeddings": 4096,
        "factor": 32.0,
        **extra,
    }


def expect(exc: type[Exception], key: str, value: str, rule: str):
    """Context manager: raises ``exc`` with message ``"{key}={value}: ...{rule}..."``."""

    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(exc)
            self.info = self.ctx.__enter__()
            return self

        def __exit__(self, *args):
            suppressed = self.ctx.__exit__(*args)
            msg = str(self.info.value)
            assert type(self.info.value) is exc, (type(self.info.value), msg)
            assert msg.startswith(f"{key}={value}: "), msg
            assert rule in msg.split(": ", 1)[1], msg
            return suppressed

    return _Check()


# (constructor kwargs of Scaling, exception, key, value as shown, rule fragment)
SCALING_CASES = [
    ({"type": "foo"}, ValueError, "rope_type", "'foo'", "unknown scaling type"),
    ({"type": "linear"}, ValueError, "rope_scaling.factor", "None", "is required for rope_type 'linear'"),
    ({"type": "dynamic", "factor": 2.0}, ValueError, "rope_scaling.max_position_embeddings", "None", "is required"),
    ({"type": "ntk"}, ValueError, "rope_scaling.alpha", "None", "is required"),
    ({"type": "yarn", "factor": 2.0}, ValueError, "rope_scaling.original_max_position_embeddings", "None", "required"),
    ({"type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, ValueError,
     "rope_scaling.low_freq_factor", "None", "is required"),
    ({"type": "longrope", "long_factor": [1.0], "original_max_position_embeddings": 8}, ValueError,
     "rope_scaling.short_factor", "None", "is required"),
    ({"type": "default", "factor": 2.0}, ValueError, "rope_scaling.factor", "2.0", "is not a parameter of rope_type"),
    ({"type": "linear", "factor": 2.0, "alpha": 2.0}, ValueError, "rope_scaling.alpha", "2.0", "is not a parameter"),
    ({**YARN, "low_freq_factor": 1.0}, ValueError, "rope_scaling.low_freq_factor", "1.0", "is not a parameter"),
    # integers
    ({**YARN, "original_max_position_embeddings": "4096"}, TypeError, "rope_scaling.original_max_position_embeddings",
     "'4096'", "must be an integer"),
    ({**YARN, "original_max_position_embeddings": 4096.5}, TypeError, "rope_scaling.original_max_position_embeddings",
     "4096.5", "must be an integer"),
    ({**YARN, "original_max_position_embeddings": True}, TypeError, "rope_scaling.original_max_position_embeddings",
     "True", "must be an integer"),
    ({**YARN, "original_max_position_embeddings": 2**60}, ValueError, "rope_scaling.original_max_position_embeddings",
     "1152921504606846976", "<= 9007199254740992"),
    ({**YARN, "factor": 2.0**40}, ValueError, "rope_scaling.factor", "1099511627776.0", "<= 2^32"),
    ({**YARN, "mscale": -20.0, "mscale_all_dim": 1.0}, ValueError, "rope_scaling.mscale", "-20.0", "<= 0"),
    ({**YARN, "original_max_position_embeddings": 0}, ValueError, "rope_scaling.original_max_position_embeddings",
     "0", ">= 1"),
    ({"type": "dynamic", "factor": 2.0, "max_position_embeddings": -5}, ValueError,
     "rope_scaling.max_position_embeddings", "-5", ">= 1"),
    # booleans
    ({**YARN, "truncate": 1}, TypeError, "rope_scaling.truncate", "1", "must be true or false"),
    ({**YARN, "truncate": "yes"}, TypeError, "rope_scaling.truncate", "'yes'", "must be true or false"),
    # factor lists
    (longrope(2, short_factor=1.0), TypeError, "rope_scaling.short_factor", "1.0", "must be a list of numbers"),
    (longrope(2, long_factor="12"), TypeError, "rope_scaling.long_factor", "'12'", "must be a list of numbers"),
    (longrope(2, short_factor=[1.0, NAN]), ValueError, "rope_scaling.short_factor[1]", "nan", "finite"),
    (longrope(2, long_factor=[1.0, INF]), ValueError, "rope_scaling.long_factor[1]", "inf", "finite"),
    (longrope(2, long_factor=[0.0, 1.0]), ValueError, "rope_scaling.long_factor[0]", "0.0", "must be in [1/pi, 2^32]"),
    (longrope(2, long_factor=[0.25, 1.0]), ValueError, "rope_scaling.long_factor[0]", "0.25", "<= pi rad/token"),
    (longrope(2, short_factor=[1.0, -2.0]), ValueError, "rope_scaling.short_factor[1]", "-2.0", "must be in [1/pi, 2^32]"),
    (longrope(2, short_factor=[1.0, "2"]), TypeError, "rope_scaling.short_factor[1]", "'2'", "finite number"),
    # numbers
    ({"type": "linear", "factor": NAN}, ValueError, "rope_scaling.factor", "nan", "finite"),
    ({"type": "linear", "factor": INF}, ValueError, "rope_scaling.factor", "inf", "finite"),
    ({"type": "linear", "factor": -INF}, ValueError, "rope_scaling.factor", "-inf", "finite"),
    ({"type": "linear", "factor": "2"}, TypeError, "rope_scaling.factor", "'2'", "finite number"),
    ({"type": "linear", "factor": True}, TypeError, "rope_scaling.factor", "True", "finite number"),
    ({"type": "linear", "factor": None, "alpha": None}, ValueError, "rope_scaling.factor", "None", "is required"),
    ({"type": "linear", "factor": 0.5}, ValueError, "rope_scaling.factor", "0.5", ">= 1"),
    ({**YARN, "factor": 0.999}, ValueError, "rope_scaling.factor", "0.999", ">= 1"),
    ({**LLAMA3, "factor": 0.0}, ValueError, "rope_scaling.factor", "0.0", ">= 1"),
    ({"type": "dynamic", "factor": 0.9, "max_position_embeddings": 8}, ValueError, "rope_scaling.factor", "0.9",
     ">= 1"),
    (longrope(2, factor=0.0), ValueError, "rope_scaling.factor", "0.0", "> 0"),
    ({"type": "proportional", "factor": -1.0}, ValueError, "rope_scaling.factor", "-1.0", "> 0"),
    ({"type": "ntk", "alpha": 0.0}, ValueError, "rope_scaling.alpha", "0.0", "> 0"),
    ({"type": "ntk", "alpha": NAN}, ValueError, "rope_scaling.alpha", "nan", "finite"),
    ({**YARN, "beta_fast": -1.0}, ValueError, "rope_scaling.beta_fast", "-1.0", "> 0"),
    ({**YARN, "beta_slow": 0.0}, ValueError, "rope_scaling.beta_slow", "0.0", "> 0"),
    ({**YARN, "attention_factor": -0.5}, ValueError, "rope_scaling.attention_factor", "-0.5", "> 0"),
    ({**YARN, "mscale": NAN}, ValueError, "rope_scaling.mscale", "nan", "finite"),
    ({**YARN, "mscale_all_dim": INF}, ValueError, "rope_scaling.mscale_all_dim", "inf", "finite"),
    ({**LLAMA3, "low_freq_factor": 0.0}, ValueError, "rope_scaling.low_freq_factor", "0.0", "> 0"),
    ({**LLAMA3, "high_freq_factor": -4.0}, ValueError, "rope_scaling.high_freq_factor", "-4.0", "> 0"),
    ({"type": "proportional", "partial_rotary_factor": 0.0}, ValueError, "rope_scaling.partial_rotary_factor", "0.0",
     "(0, 1]"),
    ({"type": "proportional", "partial_rotary_factor": 1.5}, ValueError, "rope_scaling.partial_rotary_factor", "1.5",
     "(0, 1]"),
    # relations
    ({**YARN, "beta_fast": 0.5}, ValueError, "rope_scaling.beta_fast", "0.5", ">= beta_slow=1.0"),
    ({**YARN, "beta_fast": 2.0, "beta_slow": 3.0}, ValueError, "rope_scaling.beta_fast", "2.0", ">= beta_slow=3.0"),
    ({**YARN, "beta_slow": 33.0}, ValueError, "rope_scaling.beta_fast", "32.0", ">= beta_slow=33.0"),
    ({**LLAMA3, "high_freq_factor": 0.5}, ValueError, "rope_scaling.high_freq_factor", "0.5",
     ">= low_freq_factor=1.0"),
    ({**LLAMA3, "low_freq_factor": 4.0, "high_freq_factor": 2.0}, ValueError, "rope_scaling.high_freq_factor", "2.0",
     ">= low_freq_factor=4.0"),
    ({k: v for k, v in longrope(2).items() if k != "factor"}, ValueError, "rope_scaling.factor", "None",
     "factor or max_position_embeddings"),
    (longrope(2, original_max_position_embeddings=1), ValueError, "rope_scaling.original_max_position_embeddings",
     "1", "ln 1 = 0"),
    ({**longrope(2, original_max_position_embeddings=1), "factor": None, "max_position_embeddings": 8}, ValueError,
     "rope_scaling.original_max_position_embeddings", "1", "must be >= 2"),
]


@pytest.mark.parametrize("kwargs, exc, key, value, rule", SCALING_CASES)
def test_scaling_rejects(kwargs, exc, key, value, rule):
    with expect(exc, key, value, rule):
        Scaling(**kwargs)
    # the same dict through from_dict and through RopeSpec(scaling=dict) gives the same error
    with expect(exc, key, value, rule):
        Scaling.from_dict(kwargs)
    with expect(exc, key, value, rule):
        RopeSpec(head_dim=4, scaling=kwargs)


def test_scaling_from_dict_unknown_key():
    with expect(ValueError, "rope_scaling.rope_theta", "10000.0", "unknown key"):
        Scaling.from_dict({"type": "default", "rope_theta": 10000.0})


def test_scaling_accepts_limits_and_normalises():
    assert Scaling("linear", factor=1).factor == 1.0 and isinstance(Scaling("linear", factor=1).factor, float)
    y = Scaling(**{**YARN, "original_max_position_embeddings": 4096.0, "beta_fast": 1.0, "beta_slow": 1.0})
    assert y.original_max_position_embeddings == 4096 and type(y.original_max_position_embeddings) is int
    assert Scaling(**{**YARN, "mscale": 0.0, "mscale_all_dim": -1.5}).mscale_all_dim == -1.5
    assert Scaling("proportional", partial_rotary_factor=1.0).partial_rotary_factor == 1.0
    lr = Scaling(**longrope(2, factor=0.5, short_factor=[1, 2]))
    assert lr.short_factor == (1.0, 2.0) and type(lr.short_factor) is tuple
    assert all(type(v) is float for v in lr.short_factor)
    no_factor = {k: v for k, v in longrope(2).items() if k != "factor"}
    assert Scaling(**no_factor, max_position_embeddings=131072).factor is None
    # L0 = 1 is fine for longrope when the attention factor does not divide by ln L0
    assert Scaling(**longrope(2, original_max_position_embeddings=1, attention_factor=1.2)).attention_factor == 1.2
    assert Scaling(**longrope(2, original_max_position_embeddings=1, factor=1.0)).factor == 1.0


# (RopeSpec kwargs, exception, key, value as shown, rule fragment)
SPEC_CASES = [
    ({"head_dim": 1}, ValueError, "head_dim", "1", ">= 2"),
    ({"head_dim": "64"}, TypeError, "head_dim", "'64'", "must be an integer"),
    ({"head_dim": 64.5}, TypeError, "head_dim", "64.5", "must be an integer"),
    ({"head_dim": True}, TypeError, "head_dim", "True", "must be an integer"),
    ({"head_dim": 8, "rotary_dim": 5}, ValueError, "rotary_dim", "5", "must be even"),
    ({"head_dim": 7}, ValueError, "rotary_dim", "7", "must be even"),
    ({"head_dim": 8, "rotary_dim": 10}, ValueError, "rotary_dim", "10", "<= head_dim=8"),
    ({"head_dim": 8, "rotary_dim": 0}, ValueError, "rotary_dim", "0", ">= 2"),
    ({"head_dim": 8, "rotary_start": -1}, ValueError, "rotary_start", "-1", ">= 0"),
    ({"head_dim": 8, "rotary_dim": 4, "rotary_start": 5}, ValueError, "rotary_start", "5", "must fit in head_dim=8"),
    ({"head_dim": 8, "freq_dim": 1}, ValueError, "freq_dim", "1", ">= 2"),
    ({"head_dim": 8, "freq_dim": 3.5}, TypeError, "freq_dim", "3.5", "must be an integer"),
    ({"head_dim": 8, "pairing": "neox"}, ValueError, "pairing", "'neox'", "expected one of half, adjacent"),
    ({"head_dim": 8, "theta": 0.0}, ValueError, "theta", "0.0", "> 1"),
    ({"head_dim": 8, "theta": -10000.0}, ValueError, "theta", "-10000.0", "> 1"),
    ({"head_dim": 8, "theta": 1.0}, ValueError, "theta", "1.0", "> 1"),
    ({"head_dim": 8, "theta": 1e-300}, ValueError, "theta", "1e-300", "> 1"),
    ({"head_dim": 8, "theta": 2.0**65}, ValueError, "theta", "3.6893488147419103e+19", "<= 2^64"),
    ({"head_dim": 2**20}, ValueError, "head_dim", "1048576", "<= 65536"),
    ({"head_dim": 8, "theta": NAN}, ValueError, "theta", "nan", "finite"),
    ({"head_dim": 8, "theta": INF}, ValueError, "theta", "inf", "finite"),
    ({"head_dim": 8, "theta": "1e4"}, TypeError, "theta", "'1e4'", "finite number"),
    ({"head_dim": 8, "scaling": "linear"}, TypeError, "scaling", "'linear'", "must be a Scaling or a dict"),
    ({"head_dim": 8, "scaling": longrope(3)}, ValueError, "rope_scaling.short_factor", "'<3 entries>'",
     "rotary_dim//2 = 4 entries"),
    ({"head_dim": 8, "scaling": {**longrope(4), "long_factor": [1.0] * 5}}, ValueError,
     "rope_scaling.long_factor", "'<5 entries>'", "rotary_dim//2 = 4 entries"),
    ({"head_dim": 2, "scaling": {"type": "dynamic", "factor": 2.0, "max_position_embeddings": 8}}, ValueError,
     "freq_dim", "2", "dynamic NTK needs freq_dim > 2"),
    ({"head_dim": 8, "freq_dim": 2, "scaling": {"type": "ntk", "alpha": 2.0}}, ValueError, "freq_dim", "2",
     "fixed NTK needs freq_dim > 2"),
    ({"head_dim": 8, "mrope_section": "123"}, TypeError, "mrope_section", "'123'", "list of 3 integers"),
    ({"head_dim": 8, "mrope_section": 4}, TypeError, "mrope_section", "4", "list of 3 integers"),
    ({"head_dim": 8, "mrope_section": [2, 2]}, ValueError, "mrope_section", "[2, 2]", "3 entries"),
    ({"head_dim": 8, "mrope_section": [1, 1, 1, 1]}, ValueError, "mrope_section", "[1, 1, 1, 1]", "3 entries"),
    ({"head_dim": 8, "mrope_section": [2, 1, 2]}, ValueError, "mrope_section", "[2, 1, 2]",
     "sum to rotary_dim/2 = 4 pairs (sum is 5)"),
    ({"head_dim": 16, "rotary_dim": 8, "mrope_section": [2, 2, 2]}, ValueError, "mrope_section", "[2, 2, 2]",
     "sum to rotary_dim/2 = 4"),
    ({"head_dim": 8, "mrope_section": [5, -1, 0]}, ValueError, "mrope_section[1]", "-1", ">= 0"),
    ({"head_dim": 8, "mrope_section": [2, 1.5, 0]}, TypeError, "mrope_section[1]", "1.5", "must be an integer"),
    ({"head_dim": 8, "mrope_section": [2, 1, 1], "mrope_layout": "zigzag"}, ValueError, "mrope_layout", "'zigzag'",
     "chunked, interleaved"),
    ({"head_dim": 8, "mrope_section": [2, 1, 1], "vision": "qwen_vl"}, ValueError, "vision", "'qwen_vl'",
     "cannot be combined with mrope_section"),
    ({"head_dim": 8, "vision": "siglip"}, ValueError, "vision", "'siglip'", "qwen_vl, pixtral"),
    ({"head_dim": 10, "vision": "qwen_vl"}, ValueError, "head_dim", "10", "divisible by 4"),
    ({"head_dim": 8, "rotary_dim": 4, "vision": "pixtral"}, ValueError, "rotary_dim", "4", "whole head"),
    ({"head_dim": 8, "freq_dim": 6, "vision": "pixtral"}, ValueError, "rotary_dim", "8", "whole head"),
    ({"head_dim": 8, "pairing": "adjacent", "vision": "qwen_vl"}, ValueError, "pairing", "'adjacent'", "half pairing"),
    ({"head_dim": 8, "vision": "qwen_vl", "scaling": {"type": "linear", "factor": 2.0}}, ValueError, "rope_type",
     "'linear'", "no scaling"),
]


@pytest.mark.parametrize("kwargs, exc, key, value, rule", SPEC_CASES)
def test_spec_rejects(kwargs, exc, key, value, rule):
    with expect(exc, key, value, rule):
        RopeSpec(**kwargs)
    with expect(exc, key, value, rule):
        RopeSpec.from_dict(kwargs)


def test_spec_from_dict_rejects_shape_of_input():
    with expect(TypeError, "spec", "[('head_dim', 8)]", "must be a dict"):
        RopeSpec.from_dict([("head_dim", 8)])
    with expect(ValueError, "spec.rope_theta", "10000.0", "unknown key"):
        RopeSpec.from_dict({"head_dim": 8, "rope_theta": 10000.0})
    with expect(ValueError, "spec.head_dim", "None", "is required"):
        RopeSpec.from_dict({"theta": 10000.0})


def test_spec_defaults_and_normalisation():
    s = RopeSpec(head_dim=64.0)
    assert (s.head_dim, s.rotary_dim, s.rotary_start, s.freq_dim, s.n_pairs, s.n_axes) == (64, 64, 0, 64, 32, 1)
    assert type(s.head_dim) is int and s.pairing == "half" and s.theta == 10000.0 and s.scaling == Scaling()
    partial = RopeSpec(head_dim=80, rotary_dim=20, freq_dim=19, rotary_start=60)  # window-last, odd exponent
    assert (partial.n_pairs, partial.freq_dim, partial.rotary_start) == (10, 19, 60)
    m = RopeSpec(head_dim=16, mrope_section=[2, 3, 3])
    assert m.mrope_section == (2, 3, 3) and type(m.mrope_section) is tuple and m.n_axes == 3
    assert RopeSpec(head_dim=16, vision="pixtral").n_axes == 2
    assert RopeSpec(head_dim=8, scaling={"type": "linear", "factor": 2}).scaling == Scaling("linear", factor=2.0)
    # rotary_dim > 0 of an odd head_dim is allowed (pass-through channel)
    assert RopeSpec(head_dim=9, rotary_dim=8).n_pairs == 4


def test_replace_revalidates_and_follows_rotary_dim():
    s = RopeSpec(head_dim=64)
    r = s.replace(rotary_dim=32)
    assert (r.rotary_dim, r.freq_dim) == (32, 32)  # freq_dim followed the width (it was the default)
    odd = RopeSpec(head_dim=64, rotary_dim=26, freq_dim=25)
    assert odd.replace(rotary_dim=32).freq_dim == 25  # an explicit freq_dim is kept
    with expect(ValueError, "rotary_dim", "33", "must be even"):
        s.replace(rotary_dim=33)
    assert s == RopeSpec(head_dim=64)  # the original is untouched


@given(rope_specs())
def test_round_trip_exact(spec):
    d = spec.to_dict()
    back = RopeSpec.from_dict(d)
    assert back == spec and hash(back) == hash(spec)
    assert back.to_dict() == d
    # JSON-ready, and exact through JSON text (floats repr round-trip; tuples come back as tuples)
    text = json.dumps(d, allow_nan=False)
    again = RopeSpec.from_dict(json.loads(text))
    assert again == spec
    for f in dataclasses.fields(Scaling):
        a, b = getattr(again.scaling, f.name), getattr(spec.scaling, f.name)
        assert type(a) is type(b), f.name
        if isinstance(a, float):
            assert a.hex() == b.hex(), f.name
    assert type(again.mrope_section) is type(spec.mrope_section)
    assert again.theta.hex() == spec.theta.hex()


@given(st.integers(1, 8).flatmap(lambda n: scalings(n)))
def test_scaling_round_trip(sc):
    d = sc.to_dict()
    assert set(d) >= {"type"} and all(v is not None for v in d.values())
    assert Scaling.from_dict(d) == sc
    assert Scaling.from_dict(json.loads(json.dumps(d))) == sc


def test_to_dict_content():
    s = RopeSpec(head_dim=8, scaling=longrope(4), mrope_section=(1, 1, 2), pairing="adjacent")
    d = s.to_dict()
    assert d["scaling"] == {
        "type": "longrope",
        "short_factor": [1.0] * 4,
        "long_factor": [2.0] * 4,
        "original_max_position_embeddings": 4096,
        "factor": 32.0,
    }
    assert d["mrope_section"] == [1, 1, 2] and d["head_dim"] == 8 and d["vision"] is None
    assert set(d) == {f.name for f in dataclasses.fields(RopeSpec)}


@given(rope_specs())
def test_frozen_and_hashable(spec):
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.theta = 1.0  # type: ignore[misc]  # assigning to the frozen dataclass is what is under test
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.scaling.factor = 2.0  # type: ignore[misc]  # assigning to the frozen dataclass is what is under test
    assert len({spec, RopeSpec.from_dict(spec.to_dict())}) == 1
    assert {spec: 1}[RopeSpec.from_dict(spec.to_dict())] == 1


def test_unequal_specs_differ():
    base = RopeSpec(head_dim=8)
    others = [
        base.replace(theta=math.nextafter(10000.0, 1e9)),
        base.replace(pairing="adjacent"),
        base.replace(rotary_dim=6),
        base.replace(scaling=Scaling("linear", factor=1.0)),
        base.replace(mrope_section=(4, 0, 0)),
    ]
    assert len({base, *others}) == 1 + len(others)


def test_ntk_alpha_that_shrinks_the_base_below_one_is_refused():
    """A tiny NTK alpha used to give NaN outputs; the base theta*alpha^(d/(d-2)) must stay > 1."""
    with expect(ValueError, "rope_scaling.alpha", "1e-06", "<= 1"):
        RopeSpec(head_dim=64, scaling={"type": "ntk", "alpha": 1e-6})
    RopeSpec(head_dim=64, scaling={"type": "ntk", "alpha": 0.5})  # base 10000 * 0.5^(64/62) > 1: fine


def test_llama3_equal_band_factors_are_accepted():
    """Llama 4 sets high_freq_factor == low_freq_factor: the middle band is empty (Meta's code and HF accept it)."""
    RopeSpec(head_dim=64, scaling={**LLAMA3, "low_freq_factor": 1.0, "high_freq_factor": 1.0})


def test_show_keeps_both_ends_of_a_long_value():
    """A long path in an error message keeps its file name (the end), not only its directories."""
    from roperef.errors import show

    path = "/tmp/" + "d" * 200 + "/config.json"
    text = show(path)
    assert len(text) == 80 and text.startswith("'/tmp/ddd") and text.endswith("/config.json'") and "..." in text
    assert show("short") == "'short'"
