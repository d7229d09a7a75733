"""onnxruntime (CPU) running ONNX's opset-23 ``RotaryEmbedding`` and ``com.microsoft.RotaryEmbedding``.

Two backends (``onnxruntime``, ``onnxruntime-contrib``), one single-node model each
(:mod:`conformance.backends.onnx_rotary`, which says how cases are fed to the operator):

- stages ``apply`` (given tables) and ``forward`` (roperef's exact caches rounded to the input
  dtype, indexed by ``position_ids``); no ``backward`` (onnxruntime has no gradient for the
  operator), no ``inv_freq``/``cos_sin`` (the caches are its inputs);
- pairings ``half`` and ``adjacent`` (``interleaved=1``); a rotary window at the start
  (``rotary_embedding_dim``; the contrib op also needs ``num_heads``); one position axis
  (no mRoPE, no 2-D vision); packed sequences as ``position_ids [1, N]``;
- dtypes float32 and float16; bfloat16 is in both schemas but the CPU build has no kernel for
  it: probed once per backend, NOT_SUPPORTED with onnxruntime's own message
  (docs/backends-onnx.md);
- caches and the rotation are in the input dtype (``table_dtype="input"``), the cache values
  are exact (``angle_dtype="float64"``), the attention factor is folded into the caches;
- positions are passed as ``position_ids`` unchanged; onnxruntime refuses negative ones
  (``position_ids value -1 at index 0 is out of range [0, rows)``, where ONNX's reference indexes
  the cache from its end), so ``negative_positions`` is not declared: such cases are NOT_SUPPORTED;
  positions past the cache rows roperef builds (``ROPEREF_MAX_CACHE_ROWS``) are ``max_position``;
- known discrepancy (``conformance/backends/xfail/onnxruntime*.txt``, docs/backends-onnx.md):
  onnxruntime refuses a cache with fewer rows than the sequence (``Updating cos_cache and sin_cache
  in RotaryEmbedding is not currently supported``) even when every position is in range (packed
  sequences restarting at 0).
  The contrib op's ``scale`` attribute has no effect on CPU and is not used.

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from ..vocabulary import FEATURES
from .base import BaseBackend, Capabilities
from .onnx_rotary import ONNX_DTYPES, apply_tables, contrib_model, forward_caches, from_operator_layout, standard_model, to_operator_layout
from .torch_util import max_cache_rows, missing

__all__ = ["OnnxRuntimeBackend", "OnnxRuntimeContribBackend", "onnx_capabilities", "onnxruntime_capabilities"]


def onnx_capabilities(notes: str) -> Capabilities:
    """What both ONNX operators can express (shared by the onnxruntime and onnx-reference adapters)."""
    return Capabilities(
        stages=frozenset({"apply", "forward"}),
        pairings=frozenset({"half", "adjacent"}),
        dtypes=ONNX_DTYPES,
        features=frozenset(FEATURES) - {"window_last", "mrope_chunked", "mrope_interleaved", "vision_qwen_vl",
                                         "vision_pixtral"},
        angle_dtype="float64",
        table_dtype="input",
        notes=notes,
    )


def onnxruntime_capabilities(notes: str) -> Capabilities:
    """:func:`onnx_capabilities` less what onnxruntime refuses: negative ``position_ids`` ("out of range
    [0, rows)"; ONNX's reference wraps them), and positions past the cache rows roperef builds
    (``ROPEREF_MAX_CACHE_ROWS``)."""
    caps = onnx_capabilities(notes)
    return replace(caps, features=caps.features - {"negative_positions"}, max_position=max_cache_rows() - 1)


def _heads(x: np.ndarray) -> int:
    return int(x.shape[-2])


@dataclass
class OnnxRuntimeBackend(BaseBackend):
    """onnxruntime's CPU kernel of the opset-23 ``RotaryEmbedding``."""

    name: str = "onnxruntime"
    capabilities: Capabilities = field(default_factory=lambda: onnxruntime_capabilities(
        "onnxruntime CPUExecutionProvider, opset-23 RotaryEmbedding; caches = roperef's exact cos/sin in the input dtype"))
    libraries: tuple[str, ...] = ("onnx", "onnxruntime")
    contrib: bool = False
    _sessions: dict[Any, Any] = field(default_factory=dict, repr=False)
    _dtype_reasons: dict[str, str | None] = field(default_factory=dict, repr=False)

    def library_reason(self) -> str | None:
        return missing("onnx", "onnxruntime")

    def case_reason(self, case: GoldenCase) -> str | None:
        if case.dtype == "bfloat16":
            reason = self._dtype_reason("bfloat16")
            if reason:
                return reason
        return None

    # ---- sessions ------------------------------------------------------------------------------
    def _model(self, dtype: str, spec: RopeSpec, heads: int, with_positions: bool) -> Any:
        if self.contrib:
            return contrib_model(dtype, spec, heads)
        return standard_model(dtype, spec, heads, with_positions=with_positions)

    def _session(self, dtype: str, spec: RopeSpec, heads: int, with_positions: bool) -> Any:
        key = (dtype, spec.head_dim, spec.resolved_rotary_dim, spec.pairing, heads, with_positions)
        if key not in self._sessions:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.log_severity_level = 4  # fatal only: errors are raised to the judge, not printed
            model = self._model(dtype, spec, heads, with_positions).SerializeToString()
            self._sessions[key] = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        return self._sessions[key]

    def _dtype_reason(self, dtype: str) -> str | None:
        """Whether this onnxruntime build has a CPU kernel for ``dtype`` (probed once: a session is built)."""
        if dtype not in self._dtype_reasons:
            import onnxruntime as ort

            try:
                self._session(dtype, RopeSpec(head_dim=4), 1, True)
                self._dtype_reasons[dtype] = None
            except Exception as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                self._dtype_reasons[dtype] = (
                    f"onnxruntime {ort.__version__} CPU has no {dtype} kernel for "
                    f"{'com.microsoft.' if self.contrib else ''}RotaryEmbedding ({first}; docs/backends-onnx.md)"
                )
        return self._dtype_reasons[dtype]

    def _run(self, feeds: dict[str, np.ndarray], dtype: str, spec: RopeSpec, heads: int, with_positions: bool) -> np.ndarray:
        sess = self._session(dtype, spec, heads, with_positions)
        return sess.run(None, feeds)[0]

    # ---- stages --------------------------------------------------------------------------------
    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        x = np.asarray(x)
        inp = to_operator_layout(x)
        c, s = apply_tables(x, cos, sin, spec)
        b, t = c.shape[:2]
        if self.contrib:  # always indexes: the tables become a [B*T, n] cache
            ids = np.arange(b * t, dtype=np.int64).reshape(b, t)
            feeds = {"input": inp, "position_ids": ids, "cos_cache": c.reshape(b * t, c.shape[-1]),
                     "sin_cache": s.reshape(b * t, s.shape[-1])}
        else:
            feeds = {"input": inp, "cos_cache": c, "sin_cache": s}
        y = self._run(feeds, x.dtype.name, spec, _heads(x), with_positions=self.contrib)
        return from_operator_layout(y, x)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        x = np.asarray(x)
        inp = to_operator_layout(x)
        pos = np.broadcast_to(np.asarray(positions, dtype=np.int64), x.shape[:-2]) if x.ndim == 4 else np.asarray(positions)
        cos, sin, ids = forward_caches(spec, pos.reshape(inp.shape[0], inp.shape[2]), x.dtype)
        feeds = {"input": inp, "position_ids": ids, "cos_cache": cos, "sin_cache": sin}
        y = self._run(feeds, x.dtype.name, spec, _heads(x), with_positions=True)
        return from_operator_layout(y, x)


@dataclass
class OnnxRuntimeContribBackend(OnnxRuntimeBackend):
    """onnxruntime's CPU kernel of ``com.microsoft.RotaryEmbedding`` (``scale`` left at 1: it has no effect on CPU)."""

    name: str = "onnxruntime-contrib"
    capabilities: Capabilities = field(default_factory=lambda: onnxruntime_capabilities(
        "onnxruntime CPUExecutionProvider, com.microsoft.RotaryEmbedding (num_heads set, scale unused); "
        "caches = roperef's exact cos/sin in the input dtype"))
    contrib: bool = True
