"""The serial kernels of ``roperef.fast`` (small calls) write exactly what the parallel kernels write.

Calls whose output has at most ``fast.SERIAL_MAX_ELEMENTS`` elements run
:mod:`roperef.fast.serial` (plain loops: a machine's first ``roperef check`` compiles them in a
fraction of the parallel kernels' time). These tests check which calls take which kernels,
and that both write the same bytes for every pairing, window, mRoPE layout, vision form, dtype
pair, the apply stage and packed sequences, within 2 ulp (representable steps) of the
reference (``tests/roperef/fast/test_fast_agreement.py`` holds the small, serial path to 0 ulp of the
reference; the streaming and shared-position tests cover the parallel kernels' own paths).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

import roperef.fast.kernels as parallel_kernels
import roperef.fast.serial as serial_kernels
from fast_paths import assert_same_and_close, two_paths
from roperef import RopeSpec, fast, reference
from strategies import rope_cases, rope_specs

SAFE_SCALINGS = ("default", "linear", "dynamic", "ntk", "yarn", "llama3", "proportional")
SERIAL = {"SERIAL_MAX_ELEMENTS": 1 << 62}  # every call
PARALLEL = {"SERIAL_MAX_ELEMENTS": -1}  # none


def both_paths(call: Callable[[], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``call()`` on the serial kernels, then on the parallel ones."""
    return two_paths(call, SERIAL, PARALLEL)


@pytest.fixture
def kernels_called(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the kernels ``roperef.fast`` calls (each still runs)."""
    called: list[str] = []
    for module, names in ((serial_kernels, ("tables_serial", "rotate_serial")),
                          (parallel_kernels, ("tables_kernel", "rope_kernel", "apply_kernel"))):
        for name in names:
            kernel = getattr(module, name)
            monkeypatch.setattr(module, name, lambda *a, _k=kernel, _n=name: (called.append(_n), _k(*a))[1])
    yield called


def test_small_calls_run_serial_kernels_large_ones_parallel(kernels_called):
    spec = RopeSpec(head_dim=64, rotary_dim=48, rotary_start=8, pairing="adjacent")
    rng = np.random.default_rng(1)
    small = rng.standard_normal((2, 16, 2, 64))  # 4096 elements: a golden case's shape
    pos = np.arange(32).reshape(2, 16) + 4090
    fast.forward(small, pos, spec)
    fast.backward(small.astype(np.float32), pos, spec)
    cos, sin = fast.cos_sin(spec, pos)
    fast.apply(small, cos, sin, spec)
    assert set(kernels_called) == {"tables_serial", "rotate_serial"}
    kernels_called.clear()
    n = fast.SERIAL_MAX_ELEMENTS
    at_limit = rng.standard_normal((1, n // 64, 1, 64))  # exactly the limit: serial
    fast.forward(at_limit, np.arange(n // 64)[None], spec)
    assert set(kernels_called) == {"tables_serial", "rotate_serial"}
    kernels_called.clear()
    past = rng.standard_normal((1, n // 64 + 1, 1, 64))  # one token more: the pipelined parallel kernel
    fast.forward(past, np.arange(n // 64 + 1)[None], spec)
    assert kernels_called == ["rope_kernel"]


@examples(max_examples=40)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=3))
def test_forward_backward_serial_equal_parallel(case):
    """Every pairing, window, mRoPE layout and vision form (``rope_specs`` draws them all)."""
    spec, x, pos = case.spec, case.x, case.positions
    for fn in ("forward", "backward"):
        want = getattr(reference, fn)(x, pos, spec)
        serial, parallel = both_paths(lambda fn=fn: getattr(fast, fn)(x, pos, spec))
        assert_same_and_close(serial, parallel, want, fn)


@examples(max_examples=25)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=2), st.sampled_from(["float32", "float64"]))
def test_float32_in_serial_equal_parallel(case, out_dtype):
    spec, pos = case.spec, case.positions
    x32 = case.x.astype(np.float32)
    want = reference.forward(x32, pos, spec, out_dtype=out_dtype)
    serial, parallel = both_paths(lambda: fast.forward(x32, pos, spec, out_dtype=out_dtype))
    assert_same_and_close(serial, parallel, want, f"float32 in, {out_dtype} out")


@examples(max_examples=25)
@given(rope_cases(specs=rope_specs(scaling_types=SAFE_SCALINGS), max_heads=3))
def test_apply_and_tables_serial_equal_parallel(case):
    spec, x, pos = case.spec, case.x, case.positions
    cos, sin = reference.cos_sin(spec, pos)
    serial, parallel = both_paths(lambda: fast.apply(x, cos, sin, spec))
    assert_same_and_close(serial, parallel, reference.apply(x, cos, sin, spec), "apply")
    for k, part in enumerate(("cos", "sin")):
        serial, parallel = both_paths(lambda k=k: fast.cos_sin(spec, pos)[k])
        assert_same_and_close(serial, parallel, reference.cos_sin(spec, pos)[k], part)


def test_packed_and_read_only_inputs_serial_equal_parallel():
    spec = RopeSpec(head_dim=64, rotary_dim=32, rotary_start=16, pairing="adjacent_in_half_out")
    cu = np.array([0, 1, 4, 5, 12], dtype=np.int64)
    x = np.random.default_rng(5).standard_normal((12, 3, 64))
    x.flags.writeable = False  # read in place, never copied or written
    want = reference.forward(x, None, spec, cu_seqlens=cu)
    serial, parallel = both_paths(lambda: fast.forward(x, None, spec, cu_seqlens=cu))
    assert_same_and_close(serial, parallel, want, "varlen")
