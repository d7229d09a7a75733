"""keras-hub ``RotaryEmbedding`` (and ``LlamaRotaryEmbedding`` for llama3) on the JAX backend, jitted.

API mapping (keras-hub 0.32, ``keras_hub/src/layers/modeling/rotary_embedding.py``):

- ``RotaryEmbedding(max_wavelength=theta, scaling_factor=f, rope_type=..., dtype=<case dtype>)``
  called as ``layer(x, positions=pos)`` with ``x [B, T, H, D]`` (``sequence_axis=1``,
  ``feature_axis=-1``) and ``pos [B, T]``. It rotates the *whole* feature axis with
  ``half`` pairing; a partial rotary window is sliced off and concatenated back, as
  keras-hub's own GPT-NeoX attention does (``query[..., :rotary_dim]``).
- Frequencies ``theta^(-2i/d)`` in float32 (``denominator_dim`` = ``freq_dim``); positions
  cast to float32; angles ``einsum(pos, inv_freq)`` in float32; ``cos``/``sin`` computed in
  float32 then cast to the layer's compute dtype (the case dtype here: ``table_dtype="input"``).
- ``rope_type="linear"``: ``w/f`` (``default`` is ``f = 1``). ``rope_type="yarn"``: the HF ramp
  (``beta_fast``, ``beta_slow``, ``original_max_position_embeddings``, ``truncate``) with the
  attention factor ``0.1 ln f + 1`` folded into cos/sin; explicit ``attention_factor`` or an
  ``mscale``/``mscale_all_dim`` pair are not parameters of the layer (NOT_SUPPORTED), and the
  yarn path ignores ``denominator_dim``.
- ``llama3``: ``keras_hub.src.models.llama.llama_rotary_embedding.LlamaRotaryEmbedding``
  (``frequency_adjustment_factor=f``, ``low_freq_factor``, ``high_freq_factor``,
  ``pretraining_sequence_length=L0``), the layer keras-hub's Llama 3.1 presets use.
- keras-hub's ``rope_type="dynamic"`` divides every frequency by ``f^(d/(d-2))`` (a constant,
  not NTK's per-pair base change, and no sequence-length dependence): it matches neither
  ``dynamic`` nor ``ntk`` here, so neither is declared (see docs/backends-jax-mlx.md).

``KERAS_BACKEND=jax`` must be set before keras is first imported: the adapter sets it when
keras is not imported yet and reports NOT_SUPPORTED when keras already runs another backend.
Backward: ``jax.vjp`` of the same jitted forward.

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from .base import BaseBackend, Capabilities
from .jax_util import JitCache, call_bshd, missing_modules, positions_fit_int32, vjp_x

__all__ = ["KerasHubBackend"]

_CAPS = Capabilities(
    stages=frozenset({"forward", "backward"}),
    pairings=frozenset({"half"}),
    dtypes=frozenset({"float32", "bfloat16", "float16"}),
    scaling_types=frozenset({"default", "linear", "yarn", "llama3"}),
    features=frozenset({"partial", "odd_freq_dim", "varlen", "negative_positions", "per_batch_positions", "sparse_positions"}),
    angle_dtype="float32",
    table_dtype="input",
    applies_attention_factor=True,
    notes="keras-hub RotaryEmbedding / LlamaRotaryEmbedding, KERAS_BACKEND=jax, jax.jit; partial window by slicing",
)


def _keras_backend_reason() -> str | None:
    """None when keras is (or will be) running on JAX, else why not."""
    reason = missing_modules("jax", "keras", "keras_hub")
    if reason:
        return reason
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "jax"
        return None
    import keras

    backend = keras.backend.backend()
    if backend != "jax":
        return f"keras already imported with backend {backend!r}; set KERAS_BACKEND=jax before importing keras"
    return None


def _layer_key(spec: RopeSpec, dtype: str) -> tuple[Any, ...]:
    return (spec, dtype)


def _make_layer(spec: RopeSpec, dtype: str) -> Any:
    sc = spec.scaling
    if sc.type == "llama3":
        from keras_hub.src.models.llama.llama_rotary_embedding import LlamaRotaryEmbedding

        return LlamaRotaryEmbedding(
            max_wavelength=spec.theta,
            frequency_adjustment_factor=sc.factor,
            low_freq_factor=sc.low_freq_factor,
            high_freq_factor=sc.high_freq_factor,
            pretraining_sequence_length=sc.original_max_position_embeddings,
            dtype=dtype,
        )
    from keras_hub.layers import RotaryEmbedding

    if sc.type == "yarn":
        return RotaryEmbedding(
            max_wavelength=spec.theta,
            scaling_factor=sc.factor,
            rope_type="yarn",
            beta_fast=32.0 if not sc.beta_fast else sc.beta_fast,
            beta_slow=1.0 if not sc.beta_slow else sc.beta_slow,
            original_max_position_embeddings=sc.original_max_position_embeddings,
            truncate=True if sc.truncate is None else sc.truncate,
            dtype=dtype,
        )
    factor = 1.0 if sc.type == "default" else sc.factor
    denominator = None if spec.resolved_freq_dim == spec.resolved_rotary_dim else spec.resolved_freq_dim
    return RotaryEmbedding(
        max_wavelength=spec.theta, scaling_factor=factor, rope_type="linear", denominator_dim=denominator, dtype=dtype
    )


@dataclass
class KerasHubBackend(BaseBackend):
    name: str = "keras-hub"
    capabilities: Capabilities = field(default_factory=lambda: _CAPS)
    _jit: JitCache = field(default_factory=JitCache, repr=False)

    def library_reason(self) -> str | None:
        return _keras_backend_reason()

    def case_reason(self, case: GoldenCase) -> str | None:
        sc, spec = case.spec.scaling, case.spec
        if sc.type == "yarn":
            if sc.attention_factor is not None:
                return "yarn attention_factor is not a parameter of RotaryEmbedding (it always uses 0.1 ln f + 1)"
            if sc.mscale and sc.mscale_all_dim:
                return "yarn mscale/mscale_all_dim are not parameters of RotaryEmbedding"
            if spec.freq_dim != spec.rotary_dim:
                return "RotaryEmbedding's yarn path ignores denominator_dim"
        if sc.type == "llama3" and spec.freq_dim != spec.rotary_dim:
            return "LlamaRotaryEmbedding has no denominator_dim"
        if not positions_fit_int32(case.positions):
            return "positions beyond int32 (JAX default integer width)"
        return None

    def _fn(self, spec: RopeSpec, dtype: str, backward: bool) -> Any:
        def build() -> Any:
            layer = _make_layer(spec, dtype)
            lo, hi = spec.rotary_start, spec.rotary_start + spec.resolved_rotary_dim

            def forward(x: Any, pos: Any) -> Any:
                import jax.numpy as jnp

                if lo == 0 and hi == spec.head_dim:
                    return layer(x, positions=pos)
                return jnp.concatenate([layer(x[..., lo:hi], positions=pos), x[..., hi:]], axis=-1)

            return vjp_x(forward) if backward else forward

        return self._jit.get((_layer_key(spec, dtype), backward), build)

    def _run(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any, backward: bool) -> np.ndarray:
        reason = self.library_reason()
        if reason:
            raise RuntimeError(reason)
        dtype = "bfloat16" if x.dtype.name == "bfloat16" else x.dtype.name
        return call_bshd(self._fn(spec, dtype, backward), x, positions, cu_seqlens, backward)

    def forward(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(x, positions, spec, cu_seqlens, backward=False)

    def backward(self, grad: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(grad, positions, spec, cu_seqlens, backward=True)
