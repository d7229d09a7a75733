"""``roperef check`` says on stderr what Numba compiles (a machine's first run), once per kernel, and nothing on a cache hit."""

from __future__ import annotations

import io

import numpy as np
from numba import njit

from conformance.cli.compile_notice import PREFIX, compile_notice


def test_one_line_per_outermost_compilation_none_when_compiled():
    @njit
    def inner(a):
        return a * 2.0

    @njit
    def outer(a):
        return inner(a).sum()

    stream = io.StringIO()
    with compile_notice(stream):
        outer(np.ones(3))  # compiles outer and, inside it, inner: one line
        outer(np.ones(3))  # compiled: nothing
        outer(np.ones(3, dtype=np.float32))  # a new signature: one more line
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{PREFIX} outer (float64 input)") and lines[0].endswith(" s"), lines
    assert lines[1].startswith(f"{PREFIX} outer (float32 input)"), lines
    outer(np.ones(3, dtype=np.int64))  # outside the block: the listener is gone
    assert len(stream.getvalue().splitlines()) == 2
