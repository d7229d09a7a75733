"""Reusable hypothesis strategies: random valid RopeSpecs, shapes, positions and inputs.

Import from test files as ``from strategies import ...`` (pytest puts ``tests/`` on
``sys.path``: it has a ``conftest.py`` and no ``__init__.py``).

- :func:`scalings` -- a valid :class:`roperef.Scaling` of any type for ``n`` pairs.
- :func:`rope_specs` -- a valid :class:`roperef.RopeSpec`: plain (any window, start,
  odd ``freq_dim``, pairing, theta, scaling), mRoPE (both layouts) or 2-D vision.
- :func:`positions_for` -- an int64 position array of the right form for a spec
  (plain ``[*grid]``, mRoPE ``[3, *grid]``, vision ``[*grid, 2]``).
- :func:`float_arrays` -- float64 normal inputs of a shape, from a drawn seed.
- :func:`rope_cases` -- a whole ``RopeCase(spec, x, positions, seq_len)`` (bshd).

Positions mix small values, odd large values and the ends of ``[-2^31, 2^31)``
(docs/spec.md section 6: position 0 and round positions hide bugs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from roperef.spec import PAIRINGS, SCALING_TYPES, RopeSpec, Scaling

__all__ = [
    "POS_MIN",
    "POS_MAX",
    "RopeCase",
    "thetas",
    "scalings",
    "rope_specs",
    "position_values",
    "positions_for",
    "grids",
    "float_arrays",
    "rope_cases",
]

POS_MIN = -(2**31)
POS_MAX = 2**31 - 1

# Shift-free values that matter: the range ends, odd large values, powers of two +- 1.
_SPECIAL_POSITIONS = (0, 1, 3, 4095, 4097, 2**24 + 1, 2**31 - 1, 2**31 - 3, -(2**31), -(2**31) + 1, -1, 123456789)


def thetas() -> st.SearchStrategy[float]:
    """Common bases plus any float in [2, 1e7]."""
    return st.one_of(
        st.sampled_from([10000.0, 500000.0, 1000000.0, 100.0]),
        st.floats(2.0, 1e7, allow_nan=False, allow_infinity=False),
    )


def _positive(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


@st.composite
def scalings(draw: st.DrawFn, n_pairs: int, types: Sequence[str] = SCALING_TYPES) -> Scaling:
    """A valid Scaling of one of ``types`` for a spec with ``n_pairs`` pairs (all optional keys exercised)."""
    kind = draw(st.sampled_from(list(types)))
    opt = lambda strategy: draw(st.none() | strategy)  # noqa: E731  # a one-line "optional field" strategy local to this draw
    if kind == "default":
        return Scaling()
    if kind == "linear":
        return Scaling("linear", factor=draw(_positive(1.0, 64.0)))
    if kind == "dynamic":
        return Scaling(
            "dynamic", factor=draw(_positive(1.0, 16.0)), max_position_embeddings=draw(st.integers(1, 1 << 17))
        )
    if kind == "ntk":
        return Scaling("ntk", alpha=draw(_positive(1.0, 64.0)))  # alpha < 1 could push theta*alpha^(d/(d-2)) <= 1
    if kind == "yarn":
        slow = opt(_positive(0.01, 32.0))
        fast = opt(_positive(1.0 if slow is None else slow, 64.0))  # beta_fast >= beta_slow (defaults 32, 1)
        return Scaling(
            "yarn",
            factor=draw(_positive(1.0, 64.0)),
            original_max_position_embeddings=draw(st.integers(1, 1 << 17)),
            beta_fast=fast,
            beta_slow=slow,
            mscale=opt(_positive(-2.0, 2.0)),
            mscale_all_dim=opt(_positive(-2.0, 2.0)),
            attention_factor=opt(_positive(0.1, 4.0)),
            truncate=opt(st.booleans()),
        )
    if kind == "longrope":
        factors = st.lists(_positive(0.5, 64.0), min_size=n_pairs, max_size=n_pairs).map(tuple)
        l0 = draw(st.integers(2, 1 << 17))  # L0 = 1 is rejected when s = sqrt(1 + ln f / ln L0) is derived
        factor = opt(_positive(0.5, 64.0))
        m = draw(st.integers(1, 1 << 18)) if factor is None else opt(st.integers(1, 1 << 18))
        return Scaling(
            "longrope",
            short_factor=draw(factors),
            long_factor=draw(factors),
            original_max_position_embeddings=l0,
            factor=factor,
            max_position_embeddings=m,
            attention_factor=opt(_positive(0.1, 4.0)),
        )
    if kind == "llama3":
        low = draw(_positive(0.1, 8.0))
        return Scaling(
            "llama3",
            factor=draw(_positive(1.0, 64.0)),
            low_freq_factor=low,
            high_freq_factor=low + draw(_positive(0.01, 8.0)),
            original_max_position_embeddings=draw(st.integers(1, 1 << 17)),
        )
    assert kind == "proportional", kind
    return Scaling(
        "proportional",
        factor=opt(_positive(0.5, 16.0)),  # w_0 = 1/factor must stay <= pi
        partial_rotary_factor=opt(_positive(1e-3, 1.0)),
    )


@st.composite
def rope_specs(
    draw: st.DrawFn,
    kinds: Sequence[str] = ("plain", "mrope", "vision"),
    scaling_types: Sequence[str] = SCALING_TYPES,
    pairings: Sequence[str] = PAIRINGS,
    max_head_dim: int = 40,
    partial: bool = True,
) -> RopeSpec:
    """A valid RopeSpec.

    ``kinds``: ``plain`` (window anywhere in the head when ``partial``, odd ``freq_dim``
    sometimes), ``mrope`` (sections summing to n, chunked or interleaved), ``vision``
    (``qwen_vl`` or ``pixtral``; always default scaling and half pairing, as the spec requires).
    """
    kind = draw(st.sampled_from(list(kinds)))
    theta = draw(thetas())
    if kind == "vision":
        head = 4 * draw(st.integers(1, max(1, max_head_dim // 4)))
        return RopeSpec(head_dim=head, theta=theta, vision=draw(st.sampled_from(["qwen_vl", "pixtral"])))
    scaling_type = draw(st.sampled_from(list(scaling_types)))
    min_width = 4 if scaling_type in ("dynamic", "ntk") else 2  # these need freq_dim > 2
    if partial:
        head = draw(st.integers(min_width, max_head_dim))
        width = 2 * draw(st.integers(min_width // 2, head // 2))
        start = draw(st.integers(0, head - width))
        freq_dim = draw(st.sampled_from([None, width - 1, head]))
        if freq_dim is not None and freq_dim <= 2:
            freq_dim = None
    else:
        head = 2 * draw(st.integers(min_width // 2, max_head_dim // 2))
        width, start, freq_dim = head, 0, None
    n = width // 2
    scaling = draw(scalings(n, (scaling_type,)))
    pairing = draw(st.sampled_from(list(pairings)))
    section, layout = None, "chunked"
    if kind == "mrope":
        s_t = draw(st.integers(0, n))
        s_h = draw(st.integers(0, n - s_t))
        section = (s_t, s_h, n - s_t - s_h)
        layout = draw(st.sampled_from(["chunked", "interleaved"]))
    return RopeSpec(
        head_dim=head,
        rotary_dim=width,
        rotary_start=start,
        freq_dim=freq_dim,
        pairing=pairing,
        theta=theta,
        scaling=scaling,
        mrope_section=section,
        mrope_layout=layout,
    )


def position_values(lo: int = POS_MIN, hi: int = POS_MAX) -> st.SearchStrategy[int]:
    """Integers in ``[lo, hi]``: small, odd large, and the special values that fit."""
    special = [p for p in _SPECIAL_POSITIONS if lo <= p <= hi]
    options = [st.integers(lo, hi), st.integers(max(lo, -64), min(hi, 5000))]
    if special:
        options.append(st.sampled_from(special))
    return st.one_of(*options)


@st.composite
def positions_for(
    draw: st.DrawFn, spec: RopeSpec, grid: tuple[int, ...], lo: int = POS_MIN, hi: int = POS_MAX
) -> np.ndarray:
    """int64 positions for ``spec`` over token grid ``grid``: ``[*grid]``, ``[3, *grid]`` or ``[*grid, 2]``."""
    axes = spec.n_axes
    shape = (3, *grid) if spec.mrope_section is not None else ((*grid, 2) if axes == 2 else grid)
    size = int(np.prod(shape)) if shape else 1
    values = draw(st.lists(position_values(lo, hi), min_size=size, max_size=size))
    return np.array(values, dtype=np.int64).reshape(shape)


def grids(max_batch: int = 3, max_seq: int = 5) -> st.SearchStrategy[tuple[int, int]]:
    """A bshd token grid ``(B, T)``."""
    return st.tuples(st.integers(1, max_batch), st.integers(1, max_seq))


@st.composite
def float_arrays(draw: st.DrawFn, shape: tuple[int, ...], scale: float | None = None) -> np.ndarray:
    """float64 normal values of ``shape`` from a drawn seed, times a drawn scale (1 unless given)."""
    seed = draw(st.integers(0, 2**32 - 1))
    if scale is None:
        scale = draw(st.sampled_from([1.0, 1.0, 1e-3, 1e3]))
    return np.random.default_rng(seed).standard_normal(shape) * scale


@dataclass(frozen=True)
class RopeCase:
    """One forward call: ``x [B, T, H, D]``, positions for the spec, explicit ``seq_len``."""

    spec: RopeSpec
    x: np.ndarray
    positions: np.ndarray
    seq_len: int


@st.composite
def rope_cases(
    draw: st.DrawFn,
    specs: st.SearchStrategy[RopeSpec] | None = None,
    max_heads: int = 3,
    lo: int = POS_MIN,
    hi: int = POS_MAX,
) -> RopeCase:
    """A spec (default: :func:`rope_specs`), bshd input, positions and an explicit ``seq_len``."""
    spec = draw(rope_specs() if specs is None else specs)
    b, t = draw(grids())
    h = draw(st.integers(1, max_heads))
    x = draw(float_arrays((b, t, h, spec.head_dim)))
    positions = draw(positions_for(spec, (b, t), lo, hi))
    seq_len = draw(st.integers(1, 1 << 20))
    return RopeCase(spec, x, positions, seq_len)
