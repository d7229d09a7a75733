"""A generated case before and after materialization: :class:`GenCase` (a light GoldenCase with zero
inputs and its recipe) and :func:`materialize_generated` (inputs from the id's own seeded generator,
expected values by the NumPy reference :mod:`roperef.reference`: bit-identical to :mod:`roperef.fast`,
as fast on cases this small, and nothing is compiled).

A generated case has ``heads`` heads (2 unless the shape sweep says otherwise), the token grid of
its position regime and, for the shape sweep, a call form (:class:`~conformance.cases.form.CallForm`:
a memory layout, in place, q with k); a q+k case also draws k (``k_heads`` heads, the head dim of
``form.k_spec`` or of the spec) and its expected output from roperef.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from roperef import reference
from roperef.frequencies import inv_freq
from roperef.spec import RopeSpec

from ..cases.case import GoldenCase, case_family, numpy_dtype
from ..cases.form import CallForm
from ..error_model.tolerance import position_rows
from ..vocabulary import QK_ARRAYS, STAGE_OUTPUTS
from .positions import Regime

__all__ = ["GenCase", "HEADS", "light_case", "materialize_generated", "materialize_all", "tensor_shape"]

#: heads of every generated case outside the shape sweep
HEADS = 2


@dataclass(frozen=True)
class GenCase:
    """A generated case before materialization: a light GoldenCase (inputs zero) and its recipe.

    ``heads``: heads of x (q); ``form``: the call form (None: ``stage(x) -> y``); ``k_heads``: heads of
    k in a q+k case; ``flags``: the case's flags (``generated`` first)."""

    id: str
    stage: str
    variant: str
    spec: RopeSpec
    dtype: str
    regime: Regime
    light: GoldenCase
    heads: int = HEADS
    form: CallForm | None = None
    k_heads: int | None = None
    flags: tuple[str, ...] = ("generated",)


def tensor_shape(stage: str, spec: RopeSpec, regime: Regime, heads: int = HEADS) -> tuple[int, ...]:
    """The shape of x (grad) of a case: ``[*grid, heads, D]``; cos_sin: the token grid (``(1, N)``
    for a flat one); inv_freq: ``()``."""
    if stage == "inv_freq":
        return ()
    grid = regime.grid()
    if stage == "cos_sin":
        return grid if len(grid) == 2 else (1, grid[0])
    return (*grid, heads, spec.head_dim)


def _k_shape(spec: RopeSpec, regime: Regime, form: CallForm | None, k_heads: int | None) -> tuple[int, ...] | None:
    if form is None or not form.qk:
        return None
    k_spec = form.k_spec or spec
    return (*regime.grid(), int(k_heads or HEADS), k_spec.head_dim)


def light_case(case_id: str, stage: str, spec: RopeSpec, dtype: str, regime: Regime, heads: int = HEADS,
               form: CallForm | None = None, k_heads: int | None = None,
               flags: tuple[str, ...] = ("generated",)) -> GoldenCase:
    """A GoldenCase with the right positions and shapes, zero inputs and placeholder outputs (an apply
    case's placeholder tables differ between batch rows where its positions do)."""
    arrays: dict[str, np.ndarray] = {}
    shape = tensor_shape(stage, spec, regime, heads)
    if stage == "inv_freq":
        arrays["seq_len"] = np.asarray(regime.seq_len, dtype=np.int64)
        arrays["inv_freq"] = np.zeros(spec.n_pairs)
        arrays["attention_factor"] = np.asarray(1.0)
    elif stage == "cos_sin":
        arrays["positions"] = regime.positions
        arrays["cos"] = arrays["sin"] = np.zeros((*position_rows(spec, regime.positions).shape[1:], spec.n_pairs))
    else:
        x = np.zeros(shape)
        if stage == "apply":
            # placeholder tables equal between batch rows exactly where the positions are (shared_tables)
            table = np.broadcast_to(np.asarray(regime.positions, dtype=np.float64)[..., None], (*shape[:-2], spec.n_pairs))
            arrays.update(x=x, cos=table.copy(), sin=table.copy(), y=x)
        else:
            arrays.update({"x" if stage == "forward" else "grad": x, "positions": regime.positions,
                           "y" if stage == "forward" else "grad_x": x})
            if regime.cu_seqlens is not None:
                arrays["cu_seqlens"] = regime.cu_seqlens
        k_shape = _k_shape(spec, regime, form, k_heads)
        if k_shape is not None:
            k = np.zeros(k_shape)
            arrays.update(dict.fromkeys(QK_ARRAYS[stage], k))
    return GoldenCase(case_id, case_family(stage, spec), stage, spec, dtype, "smoke", flags, arrays, form)


def _draw(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return rng.standard_normal(shape).astype(numpy_dtype(dtype)).astype(np.float64)


def _rotate(stage: str, x: np.ndarray, spec: RopeSpec, reg: Regime, cos: np.ndarray | None, sin: np.ndarray | None) -> np.ndarray:
    """roperef.reference's output for input ``x`` of a forward, backward or apply case."""
    if stage == "apply":
        assert cos is not None and sin is not None
        return np.asarray(reference.apply(x, cos, sin, spec), dtype=np.float64)
    return np.asarray(getattr(reference, stage)(x, reg.positions, spec, cu_seqlens=reg.cu_seqlens), dtype=np.float64)


def materialize_generated(g: GenCase) -> GoldenCase:
    """The full case: inputs from the id's own seeded generator, expected values by :mod:`roperef.reference`."""
    rng = np.random.default_rng(zlib.crc32(g.id.encode("utf-8")))
    spec, stage, reg = g.spec, g.stage, g.regime
    arrays: dict[str, np.ndarray] = {}
    if stage == "inv_freq":
        w, s = inv_freq(spec, reg.seq_len)
        arrays.update(seq_len=np.asarray(reg.seq_len, dtype=np.int64), inv_freq=np.ascontiguousarray(w), attention_factor=np.asarray(s))
    elif stage == "cos_sin":
        pos = reg.positions
        c, s_ = reference.cos_sin(spec, pos)
        arrays.update(positions=pos, cos=np.asarray(c, dtype=np.float64), sin=np.asarray(s_, dtype=np.float64))
    else:
        x = _draw(rng, tensor_shape(stage, spec, reg, g.heads), g.dtype)
        cos: np.ndarray | None = None
        sin: np.ndarray | None = None
        if stage == "apply":
            c, s_ = reference.cos_sin(spec, reg.positions)
            cos = c.astype(numpy_dtype(g.dtype)).astype(np.float64)
            sin = s_.astype(numpy_dtype(g.dtype)).astype(np.float64)
            arrays.update(x=x, cos=cos, sin=sin, y=_rotate(stage, x, spec, reg, cos, sin))
        else:
            arrays.update({"x" if stage == "forward" else "grad": x, "positions": reg.positions,
                           "y" if stage == "forward" else "grad_x": _rotate(stage, x, spec, reg, None, None)})
            if reg.cu_seqlens is not None:
                arrays["cu_seqlens"] = reg.cu_seqlens
        k_shape = _k_shape(spec, reg, g.form, g.k_heads)
        if k_shape is not None and g.form is not None:
            k = _draw(rng, k_shape, g.dtype)
            k_in, k_out = QK_ARRAYS[stage]
            arrays.update({k_in: k, k_out: _rotate(stage, k, g.form.k_spec or spec, reg, cos, sin)})
    missing = [k for k in STAGE_OUTPUTS[stage] if k not in arrays]
    assert not missing, missing
    return GoldenCase(g.id, g.light.family, stage, spec, g.dtype, "smoke", g.flags, arrays, g.form)


def materialize_all(items: Iterable[GenCase]) -> list[GoldenCase]:
    """Materialize several cases (NumPy only: nothing is compiled)."""
    return [materialize_generated(g) for g in items]
