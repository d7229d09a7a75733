"""The streaming path of ``roperef.fast``: non-temporal stores change how, never what, is written.

Outputs of at least ``fast.STREAM_MIN_BYTES`` (16-byte aligned, whole 16-byte stores per
token) are rotated into a per-block scratch and written with non-temporal stores
(:mod:`roperef.fast.llvm`). These tests check when that path is chosen, and that it
writes exactly the bytes the ordinary path writes (bit for bit, every layout and
dtype), which are within 2 ulp (representable steps) of the reference. Hypothesis cases are small, so they
run with every aligned output streamed (``STREAMED``); one test uses a real 16 MiB
output at the real threshold.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from fast_paths import assert_same_and_close, settings, two_paths
from roperef import RopeSpec, fast, reference
from roperef.ulp import max_ulp_steps
from strategies import rope_cases, rope_specs

SAFE_SCALINGS = ("default", "linear", "dynamic", "ntk", "yarn", "llama3", "proportional")
BIG = (1, 1024, 16, 128)  # float64: exactly 16 MiB


# Both on the parallel kernels (small calls otherwise take the serial ones, which never stream).
STREAMED = {"STREAM_MIN_BYTES": 0, "STREAM_MIN_ELEMENTS_PER_PAIR": 0, "SERIAL_MAX_ELEMENTS": -1}  # every aligned output
ORDINARY = {"STREAM_MIN_BYTES": 1 << 62, "SERIAL_MAX_ELEMENTS": -1}  # none


def both_paths(call: Callable[[], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``call()`` with every output streamed and with none streamed."""
    return two_paths(call, STREAMED, ORDINARY)


# ---------------------------------------------------------------------------------------------
# When the path is taken
# ---------------------------------------------------------------------------------------------


def test_streams_only_large_aligned_whole_store_outputs():
    y = np.empty(BIG)
    assert y.ctypes.data % 16 == 0  # NumPy's allocator aligns to at least 16 bytes
    assert fast.streams(y)
    assert not fast.streams(np.empty((1, 1023, 16, 128)))  # 16 KiB under the threshold
    misaligned = np.empty(y.size + 1)[1:].reshape(BIG)  # address 8 mod 16
    assert misaligned.ctypes.data % 16 == 8
    assert not fast.streams(misaligned)
    odd_token = np.empty((2**22 + 1, 1, 6), dtype=np.float32)  # 24 bytes per token: not whole 16-byte stores
    assert odd_token.nbytes >= fast.STREAM_MIN_BYTES
    assert not fast.streams(odd_token)


def test_streams_only_when_memory_bound():
    """The forward computes ``n`` cos/sin pairs per token: streaming needs ``H*D >= 32 n`` elements."""
    y = np.empty((16384, 8, 64))  # 64 MiB, 512 elements per token
    assert fast.STREAM_MIN_ELEMENTS_PER_PAIR == 32
    assert fast.streams(y)  # apply: no cos/sin computed
    assert fast.streams(y, pairs_per_token=16)  # 32 elements per pair
    assert not fast.streams(y, pairs_per_token=32)  # 16 elements per pair: libm-bound


# ---------------------------------------------------------------------------------------------
# A real 16 MiB output at the real threshold
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pairing", ["half", "adjacent"])
def test_large_output_is_streamed_and_exact(pairing):
    spec = RopeSpec(head_dim=128, theta=500000.0, pairing=pairing)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(BIG)
    pos = np.arange(BIG[1], dtype=np.int64)[None] + 70000
    want = reference.forward(x, pos, spec)
    out = np.full(BIG, np.nan)
    assert fast.streams(out, spec.n_pairs)
    assert fast.forward(x, pos, spec, out=out) is out
    with settings(ORDINARY):
        ordinary = fast.forward(x, pos, spec)
    assert_same_and_close(out, ordinary, want, "forward")
    # The same call into a misaligned out= (ordinary stores) writes the same values.
    misaligned = np.empty(x.size + 1)[1:].reshape(BIG)
    assert not fast.streams(misaligned, spec.n_pairs)
    fast.forward(x, pos, spec, out=misaligned)
    assert np.array_equal(misaligned, out)
    back = fast.backward(out, pos, spec)
    assert max_ulp_steps(back, reference.backward(out, pos, spec)) <= 2


# ---------------------------------------------------------------------------------------------
# Every layout and dtype, forced through the streaming path
# ---------------------------------------------------------------------------------------------


@examples(max_examples=40)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=3))
def test_forward_backward_streamed_equal_ordinary(case):
    """Every pairing, window, mRoPE layout and vision form (``rope_specs`` draws them all)."""
    spec, x, pos = case.spec, case.x, case.positions
    for fn in ("forward", "backward"):
        want = getattr(reference, fn)(x, pos, spec)
        streamed, ordinary = both_paths(lambda fn=fn: getattr(fast, fn)(x, pos, spec))
        assert_same_and_close(streamed, ordinary, want, fn)


@examples(max_examples=25)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=2), st.sampled_from(["float32", "float64"]))
def test_float32_streamed_equal_ordinary(case, out_dtype):
    spec, pos = case.spec, case.positions
    x32 = case.x.astype(np.float32)
    want = reference.forward(x32, pos, spec, out_dtype=out_dtype)
    streamed, ordinary = both_paths(lambda: fast.forward(x32, pos, spec, out_dtype=out_dtype))
    assert_same_and_close(streamed, ordinary, want, f"float32 in, {out_dtype} out")


@examples(max_examples=25)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=3))
def test_apply_streamed_equal_ordinary(case):
    spec, x, pos = case.spec, case.x, case.positions
    cos, sin = reference.cos_sin(spec, pos)
    want = reference.apply(x, cos, sin, spec)
    streamed, ordinary = both_paths(lambda: fast.apply(x, cos, sin, spec))
    assert_same_and_close(streamed, ordinary, want, "apply")


def test_varlen_streamed_equal_ordinary():
    spec = RopeSpec(head_dim=64, rotary_dim=32, rotary_start=16, pairing="adjacent")
    cu = np.array([0, 1, 4, 5, 12], dtype=np.int64)
    x = np.random.default_rng(5).standard_normal((12, 3, 64))
    want = reference.forward(x, None, spec, cu_seqlens=cu)
    streamed, ordinary = both_paths(lambda: fast.forward(x, None, spec, cu_seqlens=cu))
    with settings(STREAMED):
        assert fast.streams(streamed)  # 3 heads x 64 float64 = 96 whole 16-byte stores per token
    assert_same_and_close(streamed, ordinary, want, "varlen")
