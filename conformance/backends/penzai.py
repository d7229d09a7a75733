"""penzai ``pz.nn.ApplyRoPE`` / ``ApplyRoPEToSubset`` (penzai 0.2, JAX), jitted.

API mapping (``penzai/nn/embeddings.py``): the layer works on named arrays. ``x [B, T, H, D]``
is wrapped as a ``NamedArray`` with axes ``batch, seq, heads, embedding``; positions
``[B, T]`` are the side input ``token_positions`` with axes ``batch, seq`` (penzai vectorises
over the named axes, so any per-token positions work). ``max_wavelength = theta``.

Maths as penzai computes it, per token: ``timescale_i = theta^(2i/D)`` (float32),
``angle = position / timescale`` (an integer position divided by a float32 timescale: a
division, not a product with ``inv_freq``; float32), ``sin``/``cos`` in float32, the rotation
of ``[first_half, second_half]`` (``half`` pairing) in the promoted dtype (float32 for
bfloat16/float16 inputs), then cast back to the input dtype. So angles and tables are float32.
``ApplyRoPEToSubset(rope_subset_size=r)`` rotates the first ``r`` channels with the exponent
denominator ``r`` (GPT-NeoX's ``rotary_pct``); no other window, no scaling of any kind
(penzai's Llama/Mistral converters read only ``rope_theta``).
Backward: ``jax.vjp`` of the jitted forward.

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from .base import BaseBackend, Capabilities
from .jax_util import JitCache, call_bshd, missing_modules, positions_fit_int32, vjp_x

__all__ = ["PenzaiBackend"]

_AXES = ("batch", "seq", "heads", "embedding")

_CAPS = Capabilities(
    stages=frozenset({"forward", "backward"}),
    pairings=frozenset({"half"}),
    dtypes=frozenset({"float32", "bfloat16", "float16"}),
    scaling_types=frozenset({"default"}),
    features=frozenset({"partial", "varlen", "negative_positions", "per_batch_positions", "sparse_positions"}),
    angle_dtype="float32",
    table_dtype="float32",
    applies_attention_factor=True,
    notes="penzai pz.nn.ApplyRoPE / ApplyRoPEToSubset on named arrays, jax.jit; angle = p / theta^(2i/d) in float32",
)


def _make_layer(spec: RopeSpec) -> Any:
    from penzai import pz

    if spec.rotary_dim == spec.head_dim:
        return pz.nn.ApplyRoPE(embedding_axis="embedding", max_wavelength=spec.theta, positions_input_name="token_positions")
    return pz.nn.ApplyRoPEToSubset(
        embedding_axis="embedding",
        max_wavelength=spec.theta,
        rope_subset_size=spec.rotary_dim,
        positions_input_name="token_positions",
    )


@dataclass
class PenzaiBackend(BaseBackend):
    name: str = "penzai"
    capabilities: Capabilities = field(default_factory=lambda: _CAPS)
    _jit: JitCache = field(default_factory=JitCache, repr=False)

    def library_reason(self) -> str | None:
        return missing_modules("jax", "penzai")

    def case_reason(self, case: GoldenCase) -> str | None:
        if not positions_fit_int32(case.positions):
            return "positions beyond int32 (JAX default integer width)"
        return None

    def _fn(self, spec: RopeSpec, backward: bool) -> Any:
        def build() -> Any:
            from penzai import pz

            layer = _make_layer(spec)

            def forward(x: Any, pos: Any) -> Any:
                named = pz.nx.wrap(x).tag(*_AXES)
                out = layer(named, token_positions=pz.nx.wrap(pos).tag("batch", "seq"))
                return out.unwrap(*_AXES)

            return vjp_x(forward) if backward else forward

        return self._jit.get((spec, backward), build)

    def _run(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any, backward: bool) -> np.ndarray:
        reason = self.library_reason()
        if reason:
            raise RuntimeError(reason)
        return call_bshd(self._fn(spec, backward), x, positions, cu_seqlens, backward)

    def forward(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(x, positions, spec, cu_seqlens, backward=False)

    def backward(self, grad: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(grad, positions, spec, cu_seqlens, backward=True)
