"""Properties of the float64 reference that follow from the maths (docs/spec.md sections 2-5).

Hypothesis draws random specs (every scaling type, pairing, window, mRoPE layout,
vision form), shapes and positions (small, odd large, the ends of [-2^31, 2^31)).
Tolerances are error bounds scaled by the pair magnitude ``M = s (|x_a| + |x_b|)``:
each rotated output is within ``4u M`` of exact arithmetic (u = 2^-53; measured
against mpmath in test_frequencies_mpmath.py), and the bounds below add up those
errors for the compositions each property needs.

The pair maps are written out here from the spec text, not taken from roperef.layout.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roperef import RopeSpec, Scaling
from roperef.frequencies import inv_freq
from roperef.reference import apply, backward, cos_sin, forward
from strategies import float_arrays, grids, positions_for, rope_cases, rope_specs

U = 2.0**-53


def pairs(spec: RopeSpec) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(read, write) channel pairs of each frequency, from docs/spec.md section 2."""
    n, start = spec.n_pairs, spec.rotary_start
    half = [(start + j, start + n + j) for j in range(n)]
    adjacent = [(start + 2 * j, start + 2 * j + 1) for j in range(n)]
    if spec.pairing == "half":
        return half, half
    if spec.pairing == "adjacent":
        return adjacent, adjacent
    return adjacent, half


def pair_magnitude(spec: RopeSpec, x: np.ndarray, s: float, src: str = "read", dst: str = "write") -> np.ndarray:
    """Per channel: ``s (|x_a| + |x_b|)`` of pair j's ``src`` channels, placed at its ``dst`` channels.

    forward reads ``read`` pairs and writes ``write`` channels (the defaults); backward reads
    ``write`` pairs and writes ``read`` channels. Pass-through channels get ``|x|``.
    """
    read, write = pairs(spec)
    src_pairs, dst_pairs = (read if src == "read" else write), (read if dst == "read" else write)
    mag = np.abs(x).astype(np.float64)
    for (ra, rb), (wa, wb) in zip(src_pairs, dst_pairs):
        m = s * (np.abs(x[..., ra]) + np.abs(x[..., rb]))
        mag[..., wa] = m
        mag[..., wb] = m
    return mag


def rotary_mask(spec: RopeSpec) -> np.ndarray:
    mask = np.zeros(spec.head_dim, dtype=bool)
    mask[spec.rotary_start : spec.rotary_start + spec.rotary_dim] = True
    return mask


def shift(spec: RopeSpec, positions: np.ndarray, delta: int) -> np.ndarray:
    """Every position row shifted by ``delta`` (t, h, w rows of mRoPE; h, w columns of vision)."""
    return positions + np.int64(delta)


# ---------------------------------------------------------------------------------------------
# The two checks of the RoFormer derivation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pairing, pair0, pair1", [("adjacent", (0, 1), (2, 3)), ("half", (0, 2), (1, 3))])
def test_roformer_manual_rotation_at_m3(pairing, pair0, pair1):
    """RoFormer eq. (13)-(14): at m = 3 pair i rotates by 3*theta_i, theta_i = 10000^(-2i/d), d = 4.

    The 2x2 rotation [[cos, -sin], [sin, cos]] is written out with math.cos/math.sin;
    theta_0 = 1 and theta_1 = 10000^(-1/2) = 0.01.
    """
    spec = RopeSpec(head_dim=4, pairing=pairing)
    x = np.array([0.3, -1.7, 2.5, 0.9])
    y = forward(x.reshape(1, 1, 1, 4), np.array([[3]]), spec).reshape(4)
    for (a, b), angle in ((pair0, 3.0 * 1.0), (pair1, 3.0 * 0.01)):
        c, s = math.cos(angle), math.sin(angle)
        want_a = c * x[a] - s * x[b]
        want_b = s * x[a] + c * x[b]
        tol = 4 * U * (abs(x[a]) + abs(x[b]))
        assert abs(y[a] - want_a) <= tol, (a, y[a], want_a)
        assert abs(y[b] - want_b) <= tol, (b, y[b], want_b)


@given(st.sampled_from(["half", "adjacent", "adjacent_in_half_out"]), st.integers(0, 2**32 - 1))
def test_roformer_equal_dot_products(pairing, seed):
    """<f(q,0), f(k,1)> == <f(q,5), f(k,6)>, and differs from <f(q,0), f(k,2)>."""
    spec = RopeSpec(head_dim=8, pairing=pairing)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 1, 1, 1, 8))

    def dot(m: int, n: int) -> float:
        return float(np.sum(forward(q, np.array([[m]]), spec) * forward(k, np.array([[n]]), spec)))

    scale = float(np.sum(np.abs(q)) * np.sum(np.abs(k)))
    assert abs(dot(0, 1) - dot(5, 6)) <= 32 * U * scale


def test_roformer_dot_product_depends_on_offset():
    """Guard for the previous test: the logit does change with m - n (q = k = ones)."""
    spec = RopeSpec(head_dim=8)
    ones = np.ones((1, 1, 1, 8))

    def dot(m: int, n: int) -> float:
        return float(np.sum(forward(ones, np.array([[m]]), spec) * forward(ones, np.array([[n]]), spec)))

    # <R(m) 1, R(n) 1> = 2 sum_i cos((m - n) w_i), w = 1, 0.1, 0.01, 0.001
    for delta in (1, 2, 5):
        want = 2 * sum(math.cos(delta * w) for w in (1.0, 0.1, 0.01, 0.001))
        assert abs(dot(0, delta) - want) <= 64 * U
    assert abs(dot(0, 1) - dot(0, 2)) > 0.5


# ---------------------------------------------------------------------------------------------
# Relative-position invariance, norm, backward
# ---------------------------------------------------------------------------------------------


@given(st.data())
def test_relative_position_invariance(data):
    """<f(q, m + D), f(k, n + D)> == <f(q, m), f(k, n)> for any shift D, including shifts near 2^31."""
    spec = data.draw(rope_specs())
    t = data.draw(st.integers(1, 4))
    h = data.draw(st.integers(1, 2))
    q = data.draw(float_arrays((1, t, h, spec.head_dim)))
    k = data.draw(float_arrays((1, t, h, spec.head_dim)))
    pq = data.draw(positions_for(spec, (1, t), -1000, 1000))
    pk = data.draw(positions_for(spec, (1, t), -1000, 1000))
    delta = data.draw(st.one_of(st.integers(-5000, 5000), st.integers(-(2**31) + 1000, 2**31 - 1001)))
    seq_len = data.draw(st.integers(1, 1 << 20))  # explicit: dynamic/longrope must not see the shift

    def dots(d: int) -> np.ndarray:
        fq = forward(q, shift(spec, pq, d), spec, seq_len=seq_len)
        fk = forward(k, shift(spec, pk, d), spec, seq_len=seq_len)
        return np.sum(fq * fk, axis=-1)

    _, s = inv_freq(spec, seq_len)
    mag = np.sum(pair_magnitude(spec, q, s) * pair_magnitude(spec, k, s), axis=-1)
    tol = 2 * (8 + spec.head_dim) * U * mag
    diff = np.abs(dots(delta) - dots(0))
    assert np.all(diff <= tol), (delta, float(np.max(diff / np.maximum(mag, 1e-300))) / U)


@given(rope_cases())
def test_norm_preserved_times_attention_factor(case):
    """Per pair: y_a^2 + y_b^2 == s^2 (x_a^2 + x_b^2); pass-through channels unchanged."""
    spec, x = case.spec, case.x
    y = forward(x, case.positions, spec, seq_len=case.seq_len)
    _, s = inv_freq(spec, case.seq_len)
    read, write = pairs(spec)
    for (ra, rb), (wa, wb) in zip(read, write):
        m = s * (np.abs(x[..., ra]) + np.abs(x[..., rb]))
        got = y[..., wa] ** 2 + y[..., wb] ** 2
        want = s * s * (x[..., ra] ** 2 + x[..., rb] ** 2)
        assert np.all(np.abs(got - want) <= 24 * U * m * m)
    total_want = s * s * np.sum(x[..., rotary_mask(spec)] ** 2) + np.sum(x[..., ~rotary_mask(spec)] ** 2)
    assert abs(np.sum(y**2) - total_want) <= 32 * U * (s * s + 1) * np.sum(pair_magnitude(spec, x, 1.0) ** 2)


@given(rope_cases())
def test_backward_is_inverse_rotation(case):
    """backward(forward(x)) == s^2 x and forward(backward(x)) == s^2 x on rotary channels; x elsewhere, exactly."""
    spec, x = case.spec, case.x
    _, s = inv_freq(spec, case.seq_len)
    mask = rotary_mask(spec)
    kw = {"seq_len": case.seq_len}
    # forward reads the "read" pairs of x; backward reads the "write" pairs (they differ for adjacent_in_half_out);
    # either way each pair comes back to the channels it was read from
    for first, second, where in ((forward, backward, "read"), (backward, forward, "write")):
        z = second(first(x, case.positions, spec, **kw), case.positions, spec, **kw)
        tol = 16 * U * s * pair_magnitude(spec, x, s, src=where, dst=where)
        assert np.all(np.abs(z[..., mask] - s * s * x[..., mask]) <= tol[..., mask])
        np.testing.assert_array_equal(z[..., ~mask], x[..., ~mask])


@given(st.data())
def test_backward_equals_finite_difference_vjp(data):
    """backward(g) == grad_x <g, forward(x)> by central differences in float64 (every input element)."""
    spec = data.draw(rope_specs(max_head_dim=12))
    t = data.draw(st.integers(1, 3))
    h = data.draw(st.integers(1, 2))
    x = data.draw(float_arrays((1, t, h, spec.head_dim), scale=1.0))
    g = data.draw(float_arrays((1, t, h, spec.head_dim), scale=1.0))
    pos = data.draw(positions_for(spec, (1, t)))
    seq_len = data.draw(st.integers(1, 1 << 20))
    step = 2.0**-12
    eye = np.eye(x.size).reshape(x.size, t, h, spec.head_dim)
    plus = forward(x + step * eye, pos, spec, seq_len=seq_len)  # every perturbation in one batched call
    minus = forward(x - step * eye, pos, spec, seq_len=seq_len)
    fd = (np.sum(g * plus, axis=(1, 2, 3)) - np.sum(g * minus, axis=(1, 2, 3))) / (2 * step)
    vjp = backward(g, pos, spec, seq_len=seq_len).reshape(-1)
    _, s = inv_freq(spec, seq_len)
    y_abs = np.sum(np.abs(g) * pair_magnitude(spec, np.abs(x) + step, s))
    tol = 2 * x.size * U * y_abs / step + 16 * U * s * pair_magnitude(spec, g, s, src="write", dst="read").reshape(-1)
    assert np.all(np.abs(fd - vjp) <= tol), float(np.max(np.abs(fd - vjp) - tol))


# ---------------------------------------------------------------------------------------------
# Composition, pairing permutations, window
# ---------------------------------------------------------------------------------------------


@given(st.data())
def test_rotation_composition(data):
    """apply(apply(x, tables(a)), tables(b)) == s * forward(x, a + b) (s R(a) then s R(b) is s^2 R(a+b)).

    Not for ``adjacent_in_half_out``: its output layout differs from its input layout, so it is not
    a rotation of one vector (it is half pairing after a fixed permutation, tested below).
    """
    spec = data.draw(rope_specs(pairings=("half", "adjacent")))
    b, t = data.draw(grids())
    x = data.draw(float_arrays((b, t, 2, spec.head_dim)))
    pa = data.draw(positions_for(spec, (b, t), -(2**30), 2**30 - 1))
    pb = data.draw(positions_for(spec, (b, t), -(2**30), 2**30 - 1))
    seq_len = data.draw(st.integers(1, 1 << 20))
    ca, sa = cos_sin(spec, pa, seq_len)
    cb, sb = cos_sin(spec, pb, seq_len)
    assert ca.shape == (b, t, spec.n_pairs)
    twice = apply(apply(x, ca, sa, spec), cb, sb, spec)
    _, s = inv_freq(spec, seq_len)
    once = forward(x, pa + pb, spec, seq_len=seq_len)
    mask = rotary_mask(spec)
    tol = 16 * U * s * pair_magnitude(spec, x, s)
    assert np.all(np.abs(twice - s * once)[..., mask] <= tol[..., mask])
    np.testing.assert_array_equal(twice[..., ~mask], x[..., ~mask])
    # apply with the tables of the same positions is forward itself
    np.testing.assert_array_equal(apply(x, ca, sa, spec), forward(x, pa, spec, seq_len=seq_len))


def adjacent_to_half(spec: RopeSpec) -> np.ndarray:
    """Channel permutation p with ``x_half = x_adj[..., p]``: window [x0, x2, ..., x1, x3, ...]."""
    perm = np.arange(spec.head_dim)
    n, start = spec.n_pairs, spec.rotary_start
    for j in range(n):
        perm[start + j] = start + 2 * j
        perm[start + n + j] = start + 2 * j + 1
    return perm


@given(rope_cases(specs=rope_specs(kinds=("plain", "mrope"))))
def test_half_adjacent_equivalence(case):
    """forward_adjacent(x)[p] == forward_half(x[p]); adjacent_in_half_out(x) == forward_half(x[p]) (exactly)."""
    spec = case.spec
    half, adj, aiho = (spec.replace(pairing=p) for p in ("half", "adjacent", "adjacent_in_half_out"))
    perm = adjacent_to_half(spec)
    kw = {"seq_len": case.seq_len}
    x = case.x
    y_half = forward(x[..., perm], case.positions, half, **kw)
    np.testing.assert_array_equal(forward(x, case.positions, adj, **kw)[..., perm], y_half)
    np.testing.assert_array_equal(forward(x, case.positions, aiho, **kw), y_half)
    # and for the backward pass: the VJP of adjacent_in_half_out reads half-split, writes adjacent
    g = x[..., ::-1].copy()
    b_half = backward(g, case.positions, half, **kw)
    b_aiho = backward(g, case.positions, aiho, **kw)
    np.testing.assert_array_equal(b_aiho[..., perm], b_half)
    # logits are equal under the permutation
    k = np.roll(x, 1, axis=-2)
    l_adj = np.sum(forward(x, case.positions, adj, **kw) * forward(k, case.positions, adj, **kw), axis=-1)
    l_half = np.sum(y_half * forward(k[..., perm], case.positions, half, **kw), axis=-1)
    assert np.all(np.abs(l_adj - l_half) <= 4 * spec.head_dim * U * np.sum(np.abs(x) * np.abs(k), axis=-1) * 4)


@given(rope_cases(specs=rope_specs(kinds=("plain", "mrope"))))
def test_window_equals_sub_head(case):
    """The window [start, start+r) rotates exactly as a head of width r would; the rest is copied (window-last too)."""
    spec, x = case.spec, case.x
    start, r = spec.rotary_start, spec.rotary_dim
    sub = spec.replace(head_dim=r, rotary_dim=r, rotary_start=0, freq_dim=spec.freq_dim)
    y = forward(x, case.positions, spec, seq_len=case.seq_len)
    y_sub = forward(x[..., start : start + r], case.positions, sub, seq_len=case.seq_len)
    np.testing.assert_array_equal(y[..., start : start + r], y_sub)
    last = spec.replace(rotary_start=spec.head_dim - r)  # window-last (DeepSeek V4, vLLM rope_dim_offset)
    y_last = forward(x, case.positions, last, seq_len=case.seq_len)
    np.testing.assert_array_equal(y_last[..., spec.head_dim - r :], forward(x[..., spec.head_dim - r :],
                                                                            case.positions, sub, seq_len=case.seq_len))
    np.testing.assert_array_equal(y_last[..., : spec.head_dim - r], x[..., : spec.head_dim - r])


# ---------------------------------------------------------------------------------------------
# Scaling types that reduce to default
# ---------------------------------------------------------------------------------------------


def factor_one_variants(n: int, seq_len: int) -> list[tuple[Scaling, bool]]:
    """(scaling, exact) pairs equal to default by the maths; ``exact``: same float64 operations."""
    m = seq_len + 7  # dynamic: L = max(seq_len, M) = M  ->  theta' = theta * 1^(d/(d-2))
    ones = tuple([1.0] * n)
    return [
        (Scaling("linear", factor=1.0), True),
        (Scaling("dynamic", factor=1.0, max_position_embeddings=m), True),
        (Scaling("dynamic", factor=3.5, max_position_embeddings=m), False),
        (Scaling("ntk", alpha=1.0), True),
        (Scaling("yarn", factor=1.0, original_max_position_embeddings=4096), False),
        (Scaling("yarn", factor=1.0, original_max_position_embeddings=64, truncate=False, mscale=0.7,
                 mscale_all_dim=0.3), False),
        (Scaling("llama3", factor=1.0, low_freq_factor=1.0, high_freq_factor=4.0,
                 original_max_position_embeddings=8192), False),
        (Scaling("longrope", short_factor=ones, long_factor=ones, original_max_position_embeddings=16,
                 attention_factor=1.0, factor=8.0), True),
        (Scaling("longrope", short_factor=ones, long_factor=ones, original_max_position_embeddings=16,
                 max_position_embeddings=16), True),
        (Scaling("proportional", partial_rotary_factor=1.0, factor=1.0), True),
        (Scaling("proportional"), True),
    ]


@given(rope_cases(specs=rope_specs(kinds=("plain", "mrope"), scaling_types=("default",))))
def test_scaling_types_reduce_to_default(case):
    spec = case.spec
    if spec.freq_dim != spec.rotary_dim:  # proportional takes k = (rho d)//2 pairs; d must be the width here
        spec = spec.replace(freq_dim=spec.rotary_dim)
    w_def, _ = inv_freq(spec, case.seq_len)
    y_def = forward(case.x, case.positions, spec, seq_len=case.seq_len)
    max_p = float(np.max(np.abs(case.positions))) if case.positions.size else 0.0
    for scaling, exact in factor_one_variants(spec.n_pairs, case.seq_len):
        if scaling.type in ("dynamic", "ntk") and spec.freq_dim <= 2:
            continue
        other = spec.replace(scaling=scaling)
        w, s = inv_freq(other, case.seq_len)
        assert s == 1.0, scaling
        y = forward(case.x, case.positions, other, seq_len=case.seq_len)
        if exact:
            np.testing.assert_array_equal(w, w_def, err_msg=str(scaling))
            np.testing.assert_array_equal(y, y_def, err_msg=str(scaling))
        else:
            assert np.all(np.abs(w - w_def) <= 8 * U * w_def), scaling
            # angle error |p| * |dw| on top of two forward errors
            tol = pair_magnitude(spec, case.x, 1.0) * (8 * U + max_p * float(np.max(np.abs(w - w_def))))
            assert np.all(np.abs(y - y_def) <= tol), scaling


def test_dynamic_above_m_is_not_default():
    """Sanity check of the previous test's premise: dynamic with L > M really changes the frequencies."""
    spec = RopeSpec(head_dim=16, scaling=Scaling("dynamic", factor=1.0, max_position_embeddings=32))
    assert not np.array_equal(inv_freq(spec, 33)[0], inv_freq(spec.replace(scaling=Scaling()))[0])


@given(rope_cases(specs=rope_specs(kinds=("mrope",))))
def test_text_only_mrope_equals_plain(case):
    """All three rows equal: mRoPE (chunked or interleaved, any pairing/scaling) is plain RoPE, exactly."""
    spec = case.spec
    plain = spec.replace(mrope_section=None, mrope_layout="chunked")
    pos = case.positions[0]
    rows = np.stack([pos, pos, pos])
    kw = {"seq_len": case.seq_len}
    np.testing.assert_array_equal(forward(case.x, rows, spec, **kw), forward(case.x, pos, plain, **kw))
    np.testing.assert_array_equal(backward(case.x, rows, spec, **kw), backward(case.x, pos, plain, **kw))
    for a, b in zip(cos_sin(spec, rows, **kw), cos_sin(plain, pos, **kw)):
        np.testing.assert_array_equal(a, b)


def test_mrope_rows_really_differ():
    """Guard for the previous test: with distinct rows, each pair follows its own row."""
    spec = RopeSpec(head_dim=12, mrope_section=(2, 2, 2))
    rows = np.array([[5], [7], [11]])
    c, _ = cos_sin(spec, rows)
    w, _ = inv_freq(spec)
    want = [math.cos(p * w[j]) for j, p in enumerate([5, 5, 7, 7, 11, 11])]
    assert np.allclose(c[0], want, rtol=0, atol=4 * U)
    inter = spec.replace(mrope_layout="interleaved")  # j%3: t, h, w, t, h, w
    c, _ = cos_sin(inter, rows)
    want = [math.cos(p * w[j]) for j, p in enumerate([5, 7, 11, 5, 7, 11])]
    assert np.allclose(c[0], want, rtol=0, atol=4 * U)


# ---------------------------------------------------------------------------------------------
# Exact copies, no mutation, position dtypes
# ---------------------------------------------------------------------------------------------

SPECIALS = np.array([-0.0, 5e-324, -5e-324, np.nan, np.inf, -np.inf, 1e308, -2.2250738585072014e-308])


@given(rope_cases(specs=rope_specs(kinds=("plain", "mrope"))), st.booleans())
def test_pass_through_bit_exact(case, as_float32):
    spec = case.spec
    mask = rotary_mask(spec)
    x = case.x.copy()
    n_pass = int((~mask).sum())
    if n_pass:
        x[..., ~mask] = np.resize(SPECIALS, x[..., ~mask].shape)
    if as_float32:
        with np.errstate(over="ignore"):
            x = x.astype(np.float32)
    for fn in (forward, backward):
        y = fn(x, case.positions, spec, seq_len=case.seq_len)
        assert y.dtype == np.float64
        want = x[..., ~mask].astype(np.float64)
        np.testing.assert_array_equal(y[..., ~mask].view(np.uint64), want.view(np.uint64))
        assert np.all(np.isfinite(y[..., mask]))  # specials in pass-through never leak into the window


@given(rope_cases())
def test_inputs_not_modified_and_read_only_ok(case):
    spec = case.spec
    x, pos = case.x.copy(), case.positions.copy()
    x.flags.writeable = False
    pos.flags.writeable = False
    y = forward(x, pos, spec, seq_len=case.seq_len)
    g = backward(x, pos, spec, seq_len=case.seq_len)
    c, s = cos_sin(spec, pos, case.seq_len)
    c.flags.writeable = s.flags.writeable = False
    z = apply(x, c, s, spec)
    np.testing.assert_array_equal(x, case.x)
    np.testing.assert_array_equal(pos, case.positions)
    for out in (y, g, z):
        assert not np.shares_memory(out, x)
    # float64 in, float64 out: the result is a new array even when nothing rotates in some channels
    assert y is not x


@given(rope_cases(lo=-(2**31), hi=2**31 - 1))
def test_position_dtypes(case):
    """int32 (and int16/uint32/Python lists where the values fit) give the same result as int64."""
    spec, pos = case.spec, case.positions
    want = forward(case.x, pos, spec, seq_len=case.seq_len)
    candidates = [pos.astype(np.int32), pos.tolist()]
    if pos.size and pos.min() >= 0 and pos.max() < 2**32:
        candidates.append(pos.astype(np.uint32))
    if pos.size and pos.min() >= -(2**15) and pos.max() < 2**15:
        candidates.append(pos.astype(np.int16))
    for p in candidates:
        np.testing.assert_array_equal(forward(case.x, p, spec, seq_len=case.seq_len), want)


def test_seq_len_default_is_max_position_plus_one():
    """dynamic/longrope: seq_len=None means max(position) + 1 (the stateless rule)."""
    sc = Scaling("longrope", short_factor=(1.0, 1.0), long_factor=(4.0, 4.0), original_max_position_embeddings=10,
                 factor=2.0)
    spec = RopeSpec(head_dim=4, scaling=sc)
    x = np.ones((1, 2, 1, 4))
    # max position 9 -> seq_len 10 = L0: short; max 10 -> 11 > L0: long
    np.testing.assert_array_equal(forward(x, [[0, 9]], spec), forward(x, [[0, 9]], spec, seq_len=10))
    np.testing.assert_array_equal(forward(x, [[0, 10]], spec), forward(x, [[0, 10]], spec, seq_len=11))
    assert not np.array_equal(forward(x, [[0, 10]], spec, seq_len=10), forward(x, [[0, 10]], spec, seq_len=11))


def test_out_dtype_float32_rounds_once():
    spec = RopeSpec(head_dim=8)
    x = np.random.default_rng(1).standard_normal((1, 3, 1, 8))
    y64 = forward(x, [[1, 2**31 - 1, -5]], spec)
    y32 = forward(x, [[1, 2**31 - 1, -5]], spec, out_dtype=np.float32)
    assert y32.dtype == np.float32
    np.testing.assert_array_equal(y32, y64.astype(np.float32))
