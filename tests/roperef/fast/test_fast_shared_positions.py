"""Tokens at the same position share one cos/sin row in ``roperef.fast`` (``shared_positions``).

When at most half the tokens have distinct positions (a batch of prefills, packed
sequences that all start at 0) and the tables stay small next to the output, ``forward``
and ``backward`` compute cos/sin once per distinct position and then stream ``x`` through
them. These tests check when that path is chosen and that it writes exactly what the
per-token pipeline writes (bit for bit), within 2 ulp (representable steps) of the reference. Hypothesis cases
are small, so they run with the sharing limits lifted (``SHARED``) and sharing off
(``PER_TOKEN``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import given
from hypothesis import settings as examples

from fast_paths import assert_same_and_close, settings, two_paths
from roperef import RopeSpec, fast, reference
from roperef.ulp import max_ulp_steps
from strategies import rope_cases, rope_specs

SAFE_SCALINGS = ("default", "linear", "dynamic", "ntk", "yarn", "llama3", "proportional")


# Both on the parallel kernels (small calls otherwise take the serial ones).
SHARED = {"SHARE_MAX_DISTINCT": 1.0, "SHARE_MAX_TABLE": float("inf"), "SERIAL_MAX_ELEMENTS": -1}  # any repeated position shares
PER_TOKEN = {"SHARE_MAX_DISTINCT": 0.0, "SHARE_MAX_TABLE": 0.0, "SERIAL_MAX_ELEMENTS": -1}  # never


def both_paths(call: Callable[[], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``call()`` with shared cos/sin rows, then with the per-token pipeline."""
    return two_paths(call, SHARED, PER_TOKEN)


def test_when_rows_are_shared():
    prefill = np.arange(2048, dtype=np.int64)[None].repeat(8, 0).reshape(1, -1)  # [A=1, N=8*2048]
    distinct, index = fast.shared_positions(prefill, 8 * 64, 32)
    assert distinct.shape == (1, 2048)
    assert np.array_equal(distinct[0, index], prefill[0])  # every token finds its own position
    shifted = (np.arange(2048)[None] + 7 * np.arange(8)[:, None]).reshape(1, -1)  # the benchmark's offsets
    assert fast.shared_positions(shifted, 8 * 64, 32)[0].shape == (1, 2048 + 49)
    assert fast.shared_positions(np.arange(4096)[None], 32 * 128, 64) is None  # B = 1: nothing to share
    assert fast.shared_positions(prefill, 64, 32) is not None  # H=1, D=64, B=8: tables 1/8 of the output
    assert fast.shared_positions(prefill[:, : 4 * 2048], 64, 32) is None  # B=4: they would be 1/4
    three_axes = np.stack([prefill[0], prefill[0] // 2, prefill[0] % 3])  # mRoPE rows [3, N]
    distinct, index = fast.shared_positions(three_axes, 8 * 64, 32)
    assert np.array_equal(distinct[:, index], three_axes)


def test_prefill_batch_takes_the_shared_path_and_is_exact():
    spec = RopeSpec(head_dim=64, theta=500000.0)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((8, 256, 8, 64))
    pos = np.arange(256)[None].repeat(8, 0) + 4000
    assert fast.shared_positions(pos.reshape(1, -1), 8 * 64, spec.n_pairs) is not None
    got = fast.forward(x, pos, spec)
    with settings(PER_TOKEN):
        per_token = fast.forward(x, pos, spec)
    assert_same_and_close(got, per_token, reference.forward(x, pos, spec), "prefill batch")
    back = fast.backward(got, pos, spec, out_dtype=np.float32)
    assert max_ulp_steps(back, reference.backward(got, pos, spec, out_dtype=np.float32)) <= 2


@examples(max_examples=40)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=3))
def test_forward_backward_shared_equal_per_token(case):
    """Every pairing, window, mRoPE layout and vision form; repeated positions come from the batch."""
    spec, pos = case.spec, case.positions
    x = np.concatenate([case.x, case.x[:1]], axis=0)  # one more batch row at the first row's positions
    batch_axis = 1 if spec.mrope_section is not None else 0  # positions [3, B, T], [B, T] or [B, T, 2]
    pos = np.concatenate([pos, np.take(pos, [0], axis=batch_axis)], axis=batch_axis)
    for fn in ("forward", "backward"):
        want = getattr(reference, fn)(x, pos, spec)
        shared, per_token = both_paths(lambda fn=fn: getattr(fast, fn)(x, pos, spec))
        assert_same_and_close(shared, per_token, want, fn)
    x32 = x.astype(np.float32)
    want = reference.forward(x32, pos, spec, out_dtype=np.float32)
    shared, per_token = both_paths(lambda: fast.forward(x32, pos, spec, out_dtype=np.float32))
    assert_same_and_close(shared, per_token, want, "float32")


def test_packed_sequences_from_zero_share_rows():
    spec = RopeSpec(head_dim=32, pairing="adjacent", rotary_dim=16, rotary_start=16)
    cu = np.array([0, 5, 6, 11, 16], dtype=np.int64)  # lengths 5, 1, 5, 5: positions restart at 0
    x = np.random.default_rng(2).standard_normal((16, 4, 32))
    want = reference.forward(x, None, spec, cu_seqlens=cu)
    shared, per_token = both_paths(lambda: fast.forward(x, None, spec, cu_seqlens=cu))
    assert_same_and_close(shared, per_token, want, "varlen")
