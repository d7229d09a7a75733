"""Run ``roperef.fast`` down two internal paths that must write the same bytes, and compare.

``fast`` chooses a path per call from module constants (``STREAM_MIN_BYTES``,
``SHARE_MAX_DISTINCT``, ...). ``settings(**values)`` sets them for a block; ``two_paths``
calls the same function under two settings; ``assert_same_and_close`` requires the two
results to be identical bit for bit (the paths differ in how memory is moved or how often
cos/sin are computed, never in arithmetic) and within 2 ulp (representable steps) of the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import numpy as np
import pytest

from roperef import fast
from roperef.ulp import max_ulp_steps


@contextmanager
def settings(values: Mapping[str, float]) -> Iterator[None]:
    """Set ``fast``'s path constants to ``values`` inside the block."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in values.items():
            assert hasattr(fast, name), name
            mp.setattr(fast, name, value)
        yield


def two_paths(
    call: Callable[[], np.ndarray], first: Mapping[str, float], second: Mapping[str, float]
) -> tuple[np.ndarray, np.ndarray]:
    """``call()`` under the ``first`` settings, then under the ``second``."""
    with settings(first):
        a = call()
    with settings(second):
        b = call()
    return a, b


def assert_same_and_close(a: np.ndarray, b: np.ndarray, want: np.ndarray, what: str) -> None:
    """``a`` and ``b`` identical (NaN where NaN), and ``a`` within 2 ulp (representable steps) of the reference ``want``."""
    assert a.dtype == b.dtype == want.dtype
    assert np.array_equal(a, b, equal_nan=True), f"{what}: the two paths wrote different values"
    worst = max_ulp_steps(a, want)
    assert worst <= 2, f"{what}: {worst} ulp (representable steps) from the reference"
