"""Explore draws from the shape space of the generated cases and shrinks a failure to its smallest
shape: a tiled kernel's boundary bug shrinks to the first count past the boundary."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.backends.numba_backend import NumbaBackend
from conformance.error_model.tolerance import default_profile_name, get_profile
from conformance.explore.draw import MAX_ELEMENTS, Draw, build_case, draw_case
from conformance.explore.shrink import shrink
from conformance.explore.specs import Interface
from conformance.generated.shapes import HEAD_COUNTS, PAIR_COUNTS, TOKENS
from conformance.judge.runner import RunOptions, open_caller, run_one
from roperef.spec import RopeSpec
from tiled_bug_engines import TiledEngine


def test_draws_come_from_the_shape_space():
    iface = Interface.of(NumbaBackend())
    draws = [draw_case(np.random.default_rng(s), iface, s) for s in range(300)]
    tensors = [d for d in draws if d.tensor is not None]
    heads = {d.tensor.shape[-2] for d in tensors}
    assert {1, 3, 5, 7, 9} <= heads <= {0, *HEAD_COUNTS}
    plain = [d for d in tensors if d.cu_seqlens is None and d.spec.n_axes == 1 and d.tensor.ndim == 4]
    tokens = {d.tensor.shape[1] for d in plain}
    assert len(tokens & set(TOKENS)) >= 10 and max(tokens) > 256
    assert {d.spec.n_pairs for d in draws if d.spec.n_axes == 1} & set(PAIR_COUNTS) >= {1, 3, 17, 33, 65}
    assert all(d.tensor.size <= MAX_ELEMENTS for d in tensors)
    empty = [d for d in draws if d.regime.startswith("empty-")]
    assert empty and all(np.size(d.tensor if d.tensor is not None else d.positions) == 0 for d in empty)
    assert all(np.size(build_case(d).expected()[("y", "grad_x")[d.stage == "backward"]]) == 0 for d in empty if d.tensor is not None)


def _shrunk(engine, batch: int, tokens: int, heads: int, head_dim: int = 64):
    """Shrink a forward draw of that shape (float32, odd positions from 4093) on ``engine``."""
    rng = np.random.default_rng(7)
    pos = (4093 + np.arange(tokens, dtype=np.int64))[None].repeat(batch, 0)
    x = rng.standard_normal((batch, tokens, heads, head_dim)).astype(np.float32).astype(np.float64)
    draw = Draw(7, "forward", RopeSpec(head_dim), "float32", "contiguous", positions=pos, tensor=x)
    options = RunOptions()
    profile = get_profile(None, (), default=default_profile_name(engine.capabilities))
    call, close = open_caller(engine, options)

    def judge(d):
        case = build_case(d)
        return case, run_one(case, engine, call, profile, options)

    try:
        case, result = judge(draw)
        assert result.status == "FAIL", result.message
        return shrink(draw, case, result, judge, ("half",), ("default",), max_calls=300)
    finally:
        close()


@pytest.mark.parametrize("bug, shape, smallest", [
    ("head-tile4-tail", (3, 17, 7), (1, 1, 1)),  # heads 4-6 dropped: one head is all tail
    ("prefill-64", (1, 129, 2), (1, 64, 1)),  # the prefill path starts at 64 tokens
    ("rows-4096", (1, 4099, 1), (1, 4097, 1)),  # one launch of 4096 rows: the 4097th row is the first wrong
])
def test_a_boundary_bug_shrinks_to_the_first_shape_past_the_boundary(bug, shape, smallest):
    found = _shrunk(TiledEngine(bug=bug), *shape, head_dim=8 if bug == "rows-4096" else 64)
    assert found.result.status == "FAIL" and not found.exhausted
    assert found.draw.tensor.shape[:3] == smallest, (found.draw.tensor.shape, found.steps, found.calls)
