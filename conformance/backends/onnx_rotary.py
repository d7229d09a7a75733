"""The ``RotaryEmbedding`` operator as the ONNX adapters run it: one-node models, their inputs, caches.

Two operators (docs/backends-onnx.md):

- ONNX opset 23 ``RotaryEmbedding(input, cos_cache, sin_cache[, position_ids])`` with attributes
  ``interleaved``, ``rotary_embedding_dim``, ``num_heads``; ``input`` is 4-D ``[B, H, S, D]`` (or
  3-D ``[B, S, H*D]``); the caches are ``[max_position_id_plus_1, n]`` indexed by
  ``position_ids [B, S]``, or ``[B, S, n]`` per token without ``position_ids``; types float,
  float16, bfloat16 (no double).
- ``com.microsoft.RotaryEmbedding(input, position_ids, cos_cache, sin_cache)`` (onnxruntime
  contrib) with ``interleaved``, ``rotary_embedding_dim`` (needs ``num_heads``), ``num_heads``,
  ``scale``, ``is_packed_batching``; ``position_ids`` ``[B, S]`` or ``[1]`` (an offset); the
  caches ``[max_sequence_length, n]``.

How the adapters feed them (both operators, both runtimes):

- ``x [B, T, H, D]`` -> ``input [B, H, T, D]``; packed ``x [N, H, D]`` -> ``[1, H, N, D]`` with
  ``position_ids [1, N]``; the result is transposed back.
- ``apply`` (given per-token tables ``[..., n]``): the standard op takes them directly as 3-D
  caches ``[B, T, n]`` (no ``position_ids``); the contrib op, which always indexes, gets them as a
  ``[B*T, n]`` cache with ``position_ids = arange(B*T)``.
- ``forward``: ``position_ids`` are the case's positions; the caches have ``max(position) + 1``
  rows (the schema's ``max_position_id_plus_1``; rows no position uses are zero, the operator
  never reads them), and the rows used hold roperef's exact cos/sin (attention factor folded in,
  ``seq_len = max(position) + 1``) rounded to the input dtype, as an exported model holds
  precomputed caches. Negative positions are passed as they are: they have no row, and what the
  runtime does with them (refuse, or index from the end) is judged. This judges the operator's gather and rotation for every scaling type, not
  a frequency formula (the caches are inputs of the operator).

onnx is imported lazily, inside the functions that build models: an optional library, loaded
only when an ONNX adapter runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roperef import reference
from roperef.spec import RopeSpec

__all__ = ["ONNX_DTYPES", "standard_model", "contrib_model", "to_operator_layout", "from_operator_layout",
           "forward_caches", "apply_tables", "onnx_elem_type"]

#: Case dtypes the RotaryEmbedding schemas allow (tensor(float), tensor(float16), tensor(bfloat16)).
ONNX_DTYPES = frozenset({"float32", "float16", "bfloat16"})


def onnx_elem_type(dtype: str) -> int:
    from onnx import TensorProto

    return {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16}[dtype]


def _model(node: Any, inputs: list[Any], output: Any, opsets: dict[str, int]) -> Any:
    from onnx import helper

    graph = helper.make_graph([node], "rope", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    model.ir_version = 10  # accepted by onnx 1.23 and onnxruntime 1.32
    return model


def standard_model(dtype: str, spec: RopeSpec, heads: int, *, with_positions: bool) -> Any:
    """Opset-23 ``RotaryEmbedding`` on ``input [B, H, S, D]``; caches indexed by ``position_ids`` or per token."""
    from onnx import TensorProto, helper

    elem = onnx_elem_type(dtype)
    names = ["input", "cos_cache", "sin_cache"] + (["position_ids"] if with_positions else [])
    attrs: dict[str, Any] = {"interleaved": int(spec.pairing == "adjacent")}
    if spec.rotary_dim != spec.head_dim:
        attrs["rotary_embedding_dim"] = spec.rotary_dim
    node = helper.make_node("RotaryEmbedding", names, ["output"], **attrs)
    cache_shape: list[str | int] = ["rows", spec.n_pairs] if with_positions else ["B", "S", spec.n_pairs]
    inputs = [
        helper.make_tensor_value_info("input", elem, ["B", heads, "S", spec.head_dim]),
        helper.make_tensor_value_info("cos_cache", elem, cache_shape),
        helper.make_tensor_value_info("sin_cache", elem, cache_shape),
    ]
    if with_positions:
        inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["B", "S"]))
    output = helper.make_tensor_value_info("output", elem, ["B", heads, "S", spec.head_dim])
    return _model(node, inputs, output, {"": 23})


def contrib_model(dtype: str, spec: RopeSpec, heads: int) -> Any:
    """``com.microsoft.RotaryEmbedding`` on ``input [B, H, S, D]`` with ``position_ids [B, S]``."""
    from onnx import TensorProto, helper

    elem = onnx_elem_type(dtype)
    attrs: dict[str, Any] = {"interleaved": int(spec.pairing == "adjacent"), "num_heads": heads}
    if spec.rotary_dim != spec.head_dim:
        attrs["rotary_embedding_dim"] = spec.rotary_dim
    node = helper.make_node("RotaryEmbedding", ["input", "position_ids", "cos_cache", "sin_cache"], ["output"],
                            domain="com.microsoft", **attrs)
    inputs = [
        helper.make_tensor_value_info("input", elem, ["B", heads, "S", spec.head_dim]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["B", "S"]),
        helper.make_tensor_value_info("cos_cache", elem, ["rows", spec.n_pairs]),
        helper.make_tensor_value_info("sin_cache", elem, ["rows", spec.n_pairs]),
    ]
    output = helper.make_tensor_value_info("output", elem, ["B", heads, "S", spec.head_dim])
    return _model(node, inputs, output, {"": 23, "com.microsoft": 1})


def _batch_seq(grid: tuple[int, ...]) -> tuple[int, int]:
    """``(B, S)`` of the operator for a token grid: ``[B, T]`` stays, anything else is one row."""
    b = grid[0] if len(grid) == 2 else 1
    return b, (int(np.prod(grid)) // b if b else 0)


def to_operator_layout(x: np.ndarray) -> np.ndarray:
    """``[B, T, H, D]`` or packed ``[N, H, D]`` (or any ``[..., H, D]``) -> ``input [B, H, S, D]``."""
    b, s = _batch_seq(x.shape[:-2])
    return np.ascontiguousarray(np.swapaxes(x.reshape(b, s, *x.shape[-2:]), 1, 2))


def from_operator_layout(y: np.ndarray, like: np.ndarray) -> np.ndarray:
    """The inverse of :func:`to_operator_layout` (back to ``like``'s shape)."""
    return np.ascontiguousarray(np.swapaxes(np.asarray(y), 1, 2)).reshape(like.shape)


def apply_tables(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> tuple[np.ndarray, np.ndarray]:
    """Given tables ``[..., n]`` broadcast to ``x``'s tokens, as ``[B, S, n]`` in ``x``'s dtype."""
    grid = x.shape[:-2]
    b, s = _batch_seq(grid)
    out = []
    for t in (cos, sin):
        full = np.broadcast_to(np.asarray(t), (*grid, spec.n_pairs))
        out.append(np.ascontiguousarray(full.reshape(b, s, spec.n_pairs)).astype(x.dtype))
    return out[0], out[1]


def forward_caches(spec: RopeSpec, positions: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cos_cache, sin_cache, position_ids)``: caches of ``max(position) + 1`` rows (at least 1) in ``dtype``
    whose rows at the used non-negative positions hold roperef's exact values (zero elsewhere), and
    ``position_ids [B, S]`` int64: the case's positions unchanged, negative ones included (a negative
    position has no row; what the operator does with it is what is judged)."""
    pos = np.asarray(positions, dtype=np.int64)
    ids = pos.reshape(pos.shape[0], int(np.prod(pos.shape[1:]))) if pos.ndim == 2 else pos.reshape(1, pos.size)
    rows = max(int(ids.max()) + 1, 1) if ids.size else 1
    used = np.unique(ids[ids >= 0])
    cos = np.zeros((rows, spec.n_pairs), dtype=dtype)
    sin = np.zeros((rows, spec.n_pairs), dtype=dtype)
    if used.size:
        c, s = reference.cos_sin(spec, used, seq_len=rows)
        cos[used] = c.astype(dtype)
        sin[used] = s.astype(dtype)
    return cos, sin, np.ascontiguousarray(ids)
