"""mlx-lm ``models.rope_utils.initialize_rope``: the RoPE layers mlx-lm builds from an HF config.

API mapping (mlx-lm 0.32, ``mlx_lm/models/rope_utils.py``)::

    rope = initialize_rope(dims, base, traditional, scaling_config, max_position_embeddings)
    y = rope(x, offset)          # x [B, H, T, D]; positions offset + arange(T)

``dims = rotary_dim`` (rotates the first ``dims`` channels; also the exponent denominator),
``base = theta``, ``traditional = (pairing == "adjacent")``, ``scaling_config`` = the spec's
scaling as the HF ``rope_scaling`` dict (``rope_type`` plus the HF keys; ``None`` for
``default``), ``max_position_embeddings`` = ``M`` (longrope without ``M``: ``factor * L0``, the
same factor HF derives). The library decides which keys it reads: a key it ignores that
changes the maths is a real discrepancy, reported as FAIL (see docs/backends-jax-mlx.md).

Layers per type: ``default``/``linear`` -> ``nn.RoPE`` (``scale = 1/factor``); ``dynamic`` ->
``DynamicNTKScalingRoPE`` (``L = max(T + offset, M)``: a scalar offset only); ``llama3`` ->
``Llama3RoPE``; ``yarn`` -> ``YarnRoPE`` (multiplies ``x[..., :dims]`` by its mscale);
``longrope`` -> ``SuScaledRoPE`` (multiplies by its attention factor); ``proportional`` ->
``ProportionalRoPE``. All run ``mx.fast.rope`` (float32 angles, tables in the input dtype);
the frequency vectors are built in float32. ``ntk`` has no HF/mlx-lm type.
Backward: ``mx.vjp``.

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
from .jax_util import missing_modules
from .mlx import case_offsets, mlx_offsets, mlx_run

__all__ = ["MlxLmBackend"]

_CAPS = Capabilities(
    stages=frozenset({"forward", "backward"}),
    pairings=frozenset({"half", "adjacent"}),
    dtypes=frozenset({"float32", "bfloat16", "float16"}),
    scaling_types=frozenset({"default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional"}),
    features=frozenset({"partial", "negative_positions", "per_batch_positions"}),
    angle_dtype="float32",
    table_dtype="input",
    applies_attention_factor=True,
    notes="mlx_lm.models.rope_utils.initialize_rope from the HF rope_scaling dict; mx.fast.rope underneath",
)


def hf_scaling_config(spec: RopeSpec) -> tuple[dict[str, Any] | None, int | None]:
    """The HF ``rope_scaling`` dict of ``spec`` and ``max_position_embeddings`` for initialize_rope."""
    sc = spec.scaling
    if sc.type == "default":
        return None, None
    cfg = sc.to_dict()
    cfg["rope_type"] = cfg.pop("type")
    m = cfg.pop("max_position_embeddings", None)
    if sc.type == "longrope" and m is None:
        # Scaling requires factor when longrope has no max_position_embeddings
        m = int(round(sc.given("factor") * sc.given_int("original_max_position_embeddings")))
    return cfg, m


@dataclass
class MlxLmBackend(BaseBackend):
    name: str = "mlx-lm"
    capabilities: Capabilities = field(default_factory=lambda: _CAPS)

    def library_reason(self) -> str | None:
        return missing_modules("mlx", "mlx_lm")

    def case_reason(self, case: GoldenCase) -> str | None:
        offs = case_offsets(case)
        if isinstance(offs, str):
            return offs
        if case.spec.scaling.type == "dynamic" and (offs != offs[0]).any():
            return "DynamicNTKScalingRoPE takes a scalar offset (its length is T + offset)"
        if case.spec.scaling.type == "proportional" and case.spec.rotary_dim != case.spec.head_dim:
            return "ProportionalRoPE rotates the whole head (dims = head_dim)"
        return None

    def _rope(self, spec: RopeSpec, scalar_offset: bool) -> Any:
        from mlx_lm.models.rope_utils import initialize_rope

        cfg, m = hf_scaling_config(spec)
        layer = initialize_rope(spec.resolved_rotary_dim, spec.theta, spec.pairing == "adjacent", cfg, m)
        if scalar_offset:
            return lambda a, off: layer(a, offset=int(off[0].item()))
        return lambda a, off: layer(a, offset=off)

    def _run(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any, backward: bool) -> np.ndarray:
        if cu_seqlens is not None:
            raise ValueError("mlx-lm RoPE layers have no packed (varlen) form")
        offs = mlx_offsets(positions, x.shape[0], x.shape[1])
        if isinstance(offs, str):
            raise ValueError(offs)
        scalar = bool((offs == offs[0]).all())
        return mlx_run(self._rope(spec, scalar), x, offs, backward)

    def forward(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(x, positions, spec, cu_seqlens, backward=False)

    def backward(self, grad: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(grad, positions, spec, cu_seqlens, backward=True)
