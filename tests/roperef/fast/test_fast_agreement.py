"""``roperef.fast`` agrees with ``roperef.reference`` bit for bit (the product promises 2 ulp, error over spacing), and fails the same way.

The contract: the Numba twin does the reference's float64 arithmetic operation for
operation (no libm, no FMA; docs/spec.md section 5a), so every output element equals the
reference's; the product promises 2 ulp (error over spacing: the golden writer's check), these
tests hold the twin to 0 ulp (representable steps, :func:`roperef.ulp.ulp_steps`). Hypothesis draws specs
(every scaling type incl. longrope/dynamic, all pairings, odd ``freq_dim``, windows
anywhere incl. window-last, mRoPE both layouts, vision both forms), shapes
(non-power-of-two head dims, B > 1 with T = 1 and different offsets, packed varlen
with 1-token sequences) and positions (small, odd large, -2^31 and 2^31 - 1).

Also checked: the ``out=`` path, float32 in/out, inputs never modified (also
read-only, non-contiguous, float16/bfloat16), pass-through channels bit-exact, the
backward pass, and identical error types and messages for bad input.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roperef import RopeSpec, Scaling, fast, reference
from roperef.ulp import max_ulp_steps, ulp_steps
from strategies import POS_MAX, POS_MIN, float_arrays, position_values, positions_for, rope_cases, rope_specs

MAX_ULP = 0  # representable steps, i.e. bit for bit: both run the same IEEE operations in the same order (docs/spec.md 5a)
# For tests that call the reference directly: scaling types whose every drawn spec is computable
# (longrope with original_max_position_embeddings=1 divides by ln(1); agree() covers it).
SAFE_SCALINGS = ("default", "linear", "dynamic", "ntk", "yarn", "llama3", "proportional")


def assert_close_ulp(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    d = ulp_steps(got, want)
    worst = max_ulp_steps(got, want)
    if worst > MAX_ULP:
        i = np.unravel_index(int(np.argmax(d)), d.shape)
        raise AssertionError(f"{what}: {worst} ulp at {i}: fast={got[i]!r} reference={want[i]!r} (allowed {MAX_ULP})")


def agree(fn: str, *args: object, **kwargs: object) -> None:
    """``fast.fn`` and ``reference.fn`` on the same arguments: both raise the same error, or agree within
    ``MAX_ULP`` representable steps."""
    try:
        want = getattr(reference, fn)(*args, **kwargs)
    except Exception as exc:  # an input the reference rejects (or cannot handle): fast must fail the same way
        with pytest.raises(type(exc)) as got:
            getattr(fast, fn)(*args, **kwargs)
        assert str(got.value) == str(exc)
        return
    got = getattr(fast, fn)(*args, **kwargs)
    if isinstance(want, tuple):
        for g, w, part in zip(got, want, ("cos", "sin")):
            assert_close_ulp(g, w, f"{fn} {part}")
    else:
        assert_close_ulp(got, want, fn)


def window_mask(spec: RopeSpec) -> np.ndarray:
    """True on the rotated channels ``[rotary_start, rotary_start + rotary_dim)`` (from the spec text)."""
    mask = np.zeros(spec.head_dim, dtype=bool)
    mask[spec.rotary_start : spec.rotary_start + spec.rotary_dim] = True
    return mask


# ---------------------------------------------------------------------------------------------
# Agreement, forward and backward, bshd
# ---------------------------------------------------------------------------------------------


@given(rope_cases(max_heads=3))
def test_forward_backward_agree_bshd(case):
    spec, x, pos, seq_len = case.spec, case.x, case.positions, case.seq_len
    for kw in ({"seq_len": seq_len}, {}):
        agree("forward", x, pos, spec, **kw)
        agree("backward", x, pos, spec, **kw)


@given(
    rope_specs(kinds=("plain",), scaling_types=SAFE_SCALINGS, max_head_dim=160),
    st.integers(2, 5),
    st.lists(position_values(), min_size=5, max_size=5),
    st.integers(0, 2**32 - 1),
)
def test_decode_step_batch_with_different_offsets(spec, batch, offsets, seed):
    """B > 1, T = 1: every row at its own position (a per-row-offset bug shows here)."""
    x = np.random.default_rng(seed).standard_normal((batch, 1, 2, spec.head_dim))
    pos = np.array(offsets[:batch], dtype=np.int64)[:, None]
    agree("forward", x, pos, spec)
    agree("backward", x, pos, spec)


@pytest.mark.parametrize("head_dim, rotary_dim, start", [(80, 80, 0), (96, 64, 32), (112, 56, 0), (136, 136, 0), (72, 24, 48)])
@pytest.mark.parametrize("pairing", ["half", "adjacent", "adjacent_in_half_out"])
def test_non_power_of_two_head_dims_at_extreme_positions(head_dim, rotary_dim, start, pairing):
    spec = RopeSpec(head_dim=head_dim, rotary_dim=rotary_dim, rotary_start=start, pairing=pairing)
    rng = np.random.default_rng(head_dim + rotary_dim)
    pos = np.array([[POS_MIN, POS_MIN + 1, -1, 0, 1], [4097, 2**24 + 1, 123456789, POS_MAX - 2, POS_MAX]])
    x = rng.standard_normal((2, 5, 3, head_dim))
    assert_close_ulp(fast.forward(x, pos, spec), reference.forward(x, pos, spec), "forward")
    assert_close_ulp(fast.backward(x, pos, spec), reference.backward(x, pos, spec), "backward")


# ---------------------------------------------------------------------------------------------
# Packed varlen (thd + cu_seqlens)
# ---------------------------------------------------------------------------------------------


@st.composite
def varlen_cases(draw):
    spec = draw(rope_specs())
    lengths = draw(st.lists(st.sampled_from([1, 1, 2, 3, 5]), min_size=1, max_size=5))
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tok = int(cu[-1])
    x = draw(float_arrays((n_tok, draw(st.integers(1, 3)), spec.head_dim)))
    explicit = spec.n_axes != 1 or draw(st.booleans())
    pos = draw(positions_for(spec, (n_tok,))) if explicit else None
    return spec, x, pos, cu


@given(varlen_cases())
def test_varlen_agrees_including_one_token_sequences(case):
    spec, x, pos, cu = case
    agree("forward", x, pos, spec, cu_seqlens=cu)
    agree("backward", x, pos, spec, cu_seqlens=cu)


# ---------------------------------------------------------------------------------------------
# cos/sin tables and apply
# ---------------------------------------------------------------------------------------------


@given(rope_specs(), st.sampled_from([(), (1,), (4,), (2, 3)]), st.data())
def test_cos_sin_agree(spec, grid, data):
    pos = data.draw(positions_for(spec, grid))
    seq_len = data.draw(st.none() | st.integers(1, 1 << 20))
    agree("cos_sin", spec, pos, seq_len)


@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=3), st.booleans())
def test_apply_agrees_with_broadcast_tables(case, shared_over_batch):
    spec, x, pos = case.spec, case.x, case.positions
    if shared_over_batch:  # tables [T, n] broadcast over the batch
        pos = pos[:1] if spec.mrope_section is None else pos[:, :1]
        tables = reference.cos_sin(spec, pos[0] if spec.mrope_section is None else pos[:, 0])
    else:
        tables = reference.cos_sin(spec, pos)
    agree("apply", x, *tables, spec)


# ---------------------------------------------------------------------------------------------
# dtypes, out=, inputs untouched, pass-through
# ---------------------------------------------------------------------------------------------


@settings(max_examples=15)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=2))
def test_float32_in_and_out(case):
    spec, pos = case.spec, case.positions
    x32 = case.x.astype(np.float32)
    want64 = reference.forward(x32, pos, spec)
    assert_close_ulp(fast.forward(x32, pos, spec), want64, "f32 in, f64 out")
    want32 = reference.forward(x32, pos, spec, out_dtype=np.float32)
    assert_close_ulp(fast.forward(x32, pos, spec, out_dtype=np.float32), want32, "f32 in, f32 out")
    buf = np.empty(x32.shape, dtype=np.float32)
    assert fast.forward(x32, pos, spec, out=buf) is buf
    assert_close_ulp(buf, want32, "f32 out= buffer")
    assert_close_ulp(fast.forward(case.x, pos, spec, out_dtype="float32"), reference.forward(case.x, pos, spec, out_dtype="float32"),
                     "f64 in, f32 out")


@settings(max_examples=15)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=2))
def test_out_buffer_and_input_untouched(case):
    spec, x, pos = case.spec, case.x, case.positions
    before = x.copy()
    buf = np.full(x.shape, np.nan)
    got = fast.forward(x, pos, spec, out=buf)
    assert got is buf
    assert_close_ulp(buf, reference.forward(x, pos, spec), "out=")
    got = fast.backward(x, pos, spec, out=buf)
    assert got is buf
    assert_close_ulp(buf, reference.backward(x, pos, spec), "backward out=")
    assert np.array_equal(x, before)


@settings(max_examples=20)
@given(rope_cases(specs=rope_specs(kinds=("plain",), scaling_types=SAFE_SCALINGS, max_head_dim=40), max_heads=2),
       st.sampled_from([np.float64, np.float32]))
def test_pass_through_channels_bit_exact(case, dtype):
    spec, pos = case.spec, case.positions
    x = case.x.astype(dtype)
    keep = ~window_mask(spec)
    for fn in (fast.forward, fast.backward):
        y = fn(x, pos, spec, out_dtype=dtype)
        got, want = np.ascontiguousarray(y[..., keep]), np.ascontiguousarray(x[..., keep])
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))  # bit patterns, -0 and all


def test_awkward_inputs_are_copied_not_misread():
    """Non-contiguous, read-only, float16, bfloat16 and byte-swapped inputs: same result, input untouched."""
    import ml_dtypes

    spec = RopeSpec(head_dim=24, rotary_dim=16, rotary_start=8, pairing="adjacent", scaling=Scaling("linear", factor=4.0))
    rng = np.random.default_rng(7)
    base = rng.standard_normal((3, 10, 4, 24))
    pos = rng.integers(-(2**31), 2**31 - 1, size=(3, 5))
    variants = {
        "strided": base[:, ::2],
        "transposed": np.swapaxes(rng.standard_normal((3, 4, 5, 24)), 1, 2),
        "read-only": np.array(base[:, :5]),
        "float16": base[:, :5].astype(np.float16),
        "bfloat16": base[:, :5].astype(ml_dtypes.bfloat16),
        "big-endian": base[:, :5].astype(">f8"),
        "float32 strided": base[:, 1::2].astype(np.float32)[:, :, ::-1],
    }
    variants["read-only"].setflags(write=False)
    for name, x in variants.items():
        before = np.array(x, copy=True)
        for fn_f, fn_r in ((fast.forward, reference.forward), (fast.backward, reference.backward)):
            assert_close_ulp(fn_f(x, pos, spec), fn_r(x, pos, spec), name)
        assert np.array_equal(np.ascontiguousarray(x).view(np.uint8), before.view(np.uint8)), name


def test_empty_inputs():
    spec = RopeSpec(head_dim=8)
    for shape, pos in (((0, 3, 8), np.zeros((0,), np.int64)), ((2, 0, 1, 8), np.zeros((2, 0), np.int64)), ((1, 2, 0, 8), np.ones((1, 2), np.int64))):
        x = np.ones(shape)
        assert fast.forward(x, pos, spec).shape == shape
        assert np.array_equal(fast.forward(x, pos, spec), reference.forward(x, pos, spec))


# ---------------------------------------------------------------------------------------------
# Bad input: the same exception and message as the reference
# ---------------------------------------------------------------------------------------------

_SPEC = RopeSpec(head_dim=8)
_MROPE = RopeSpec(head_dim=8, mrope_section=(2, 1, 1))
_VISION = RopeSpec(head_dim=8, vision="qwen_vl")
_X = np.ones((2, 3, 1, 8))
_POS = np.zeros((2, 3), np.int64)
_TABLES = reference.cos_sin(_SPEC, np.arange(3))

BAD_CALLS = {
    "spec not a RopeSpec": ("forward", (_X, _POS, {"head_dim": 8}), {}),
    "x int dtype": ("forward", (np.ones((2, 3, 1, 8), np.int32), _POS, _SPEC), {}),
    "x 1-D": ("forward", (np.ones(8), _POS, _SPEC), {}),
    "x wrong head_dim": ("forward", (np.ones((2, 3, 1, 6)), _POS, _SPEC), {}),
    "positions float": ("forward", (_X, _POS.astype(float), _SPEC), {}),
    "positions out of range": ("forward", (_X, _POS + 2**31, _SPEC), {}),
    "positions wrong shape": ("forward", (_X, np.zeros((3, 2), np.int64), _SPEC), {}),
    "positions missing": ("forward", (_X, None, _SPEC), {}),
    "mrope positions not [3,...]": ("forward", (_X, _POS, _MROPE), {}),
    "vision positions not [...,2]": ("forward", (_X, _POS, _VISION), {}),
    "cu_seqlens with bshd": ("forward", (_X, None, _SPEC), {"cu_seqlens": [0, 2]}),
    "cu_seqlens not increasing": ("forward", (np.ones((3, 1, 8)), None, _SPEC), {"cu_seqlens": [0, 2, 2, 3]}),
    "cu_seqlens wrong total": ("forward", (np.ones((3, 1, 8)), None, _SPEC), {"cu_seqlens": [0, 2]}),
    "cu_seqlens mrope without positions": ("forward", (np.ones((3, 1, 8)), None, _MROPE), {"cu_seqlens": [0, 3]}),
    "seq_len zero": ("forward", (_X, _POS, _SPEC), {"seq_len": 0}),
    "seq_len bool": ("backward", (_X, _POS, _SPEC), {"seq_len": True}),
    "out_dtype int": ("forward", (_X, _POS, _SPEC), {"out_dtype": np.int32}),
    "out_dtype nonsense": ("backward", (_X, _POS, _SPEC), {"out_dtype": 3.5}),
    "grad wrong head_dim": ("backward", (np.ones((2, 3, 1, 4)), _POS, _SPEC), {}),
    "apply table width": ("apply", (_X, _TABLES[0][:, :2], _TABLES[1][:, :2], _SPEC), {}),
    "apply tables differ": ("apply", (_X, _TABLES[0], _TABLES[1][:2], _SPEC), {}),
    "apply tables too many dims": ("apply", (_X, np.ones((5, 2, 3, 4)), np.ones((5, 2, 3, 4)), _SPEC), {}),
    "apply table int": ("apply", (_X, np.ones((3, 4), int), _TABLES[1], _SPEC), {}),
    "cos_sin positions float": ("cos_sin", (_SPEC, np.ones(3)), {}),
    "cos_sin mrope shape": ("cos_sin", (_MROPE, np.ones((2, 3), np.int64)), {}),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_input_same_error_as_reference(name):
    fn, args, kwargs = BAD_CALLS[name]
    with pytest.raises((TypeError, ValueError)) as want:
        getattr(reference, fn)(*args, **kwargs)
    with pytest.raises(want.type) as got:
        getattr(fast, fn)(*args, **kwargs)
    assert str(got.value) == str(want.value)


def test_bad_out_buffers_are_rejected_with_a_reason():
    x = np.ones((2, 3, 1, 8))
    readonly = np.empty_like(x)
    readonly.setflags(write=False)
    cases = {
        "out.shape": np.empty((2, 3, 1, 4)),
        "out.dtype": np.empty(x.shape, np.int64),
        "C-contiguous": np.empty((2, 3, 1, 16))[..., ::2],
        "writeable": readonly,
        "must not alias": x,
    }
    for rule, out in cases.items():
        with pytest.raises((TypeError, ValueError), match=rule):
            fast.forward(x, _POS, _SPEC, out=out)
    with pytest.raises(ValueError, match="out_dtype"):
        fast.forward(x, _POS, _SPEC, out=np.empty(x.shape, np.float32), out_dtype=np.float64)
    with pytest.raises(TypeError, match="out"):
        fast.backward(x, _POS, _SPEC, out=[0.0] * 48)
    assert np.array_equal(x, np.ones_like(x))
