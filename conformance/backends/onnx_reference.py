"""ONNX's reference implementation: ``onnx.reference.ReferenceEvaluator`` on the opset-23 ``RotaryEmbedding``.

The same one-node model and feeding as the ``onnxruntime`` adapter
(:mod:`conformance.backends.onnx_rotary`): stages ``apply`` (given tables, no ``position_ids``)
and ``forward`` (roperef's exact caches in the input dtype, indexed by ``position_ids``). The
evaluator runs the schema's NumPy function (``onnx/reference/ops/op_rotary_embedding.py``) in
the input dtype, bfloat16 included (ml_dtypes), so every dtype of the schema is declared.

Positions are passed as ``position_ids`` unchanged. A negative id has no cache row; the evaluator
does not refuse it but indexes the cache from its end (NumPy's negative indexing), so
``position_ids = -1`` silently rotates by the last row's angle, where onnxruntime raises ``out of
range``: the golden cases with negative positions FAIL, listed in
``conformance/backends/xfail/onnx-reference.txt`` (docs/backends-onnx.md has the reproducer).

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from .base import BaseBackend, Capabilities
from .onnx_rotary import apply_tables, forward_caches, from_operator_layout, standard_model, to_operator_layout
from .onnxruntime import onnx_capabilities
from .torch_util import cache_rows_reason, missing

__all__ = ["OnnxReferenceBackend"]


@dataclass
class OnnxReferenceBackend(BaseBackend):
    name: str = "onnx-reference"
    capabilities: Capabilities = field(default_factory=lambda: onnx_capabilities(
        "onnx.reference.ReferenceEvaluator, opset-23 RotaryEmbedding (NumPy in the input dtype); "
        "caches = roperef's exact cos/sin in the input dtype"))
    libraries: tuple[str, ...] = ("onnx",)
    _evaluators: dict[Any, Any] = field(default_factory=dict, repr=False)

    def library_reason(self) -> str | None:
        return missing("onnx")

    def case_reason(self, case: Any) -> str | None:
        return cache_rows_reason(case.positions) if case.stage == "forward" else None

    def _evaluator(self, dtype: str, spec: RopeSpec, heads: int, with_positions: bool) -> Any:
        key = (dtype, spec.head_dim, spec.resolved_rotary_dim, spec.pairing, heads, with_positions)
        if key not in self._evaluators:
            from onnx.reference import ReferenceEvaluator

            self._evaluators[key] = ReferenceEvaluator(standard_model(dtype, spec, heads, with_positions=with_positions))
        return self._evaluators[key]

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        x = np.asarray(x)
        c, s = apply_tables(x, cos, sin, spec)
        feeds = {"input": to_operator_layout(x), "cos_cache": c, "sin_cache": s}
        (y,) = self._evaluator(x.dtype.name, spec, int(x.shape[-2]), False).run(None, feeds)
        return from_operator_layout(np.asarray(y, dtype=x.dtype), x)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        x = np.asarray(x)
        inp = to_operator_layout(x)
        pos = np.broadcast_to(np.asarray(positions, dtype=np.int64), x.shape[:-2]) if x.ndim == 4 else np.asarray(positions)
        cos, sin, ids = forward_caches(spec, pos.reshape(inp.shape[0], inp.shape[2]), x.dtype)
        feeds = {"input": inp, "position_ids": ids, "cos_cache": cos, "sin_cache": sin}
        (y,) = self._evaluator(x.dtype.name, spec, int(x.shape[-2]), True).run(None, feeds)
        return from_operator_layout(np.asarray(y, dtype=x.dtype), x)
