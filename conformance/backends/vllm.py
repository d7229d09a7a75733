"""``vllm`` (GPU): vLLM's rotary embedding from ``vllm.model_executor.layers.rotary_embedding.get_rope``.

Documented use: ``rope = get_rope(head_size, ...)`` then ``q, k = rope(positions, q, k)`` with
``positions [num_tokens]`` (``[3, num_tokens]`` for mRoPE) and ``q, k [num_tokens, heads*head_size]``;
on CUDA the custom op rotates q and k in place. ``forward`` calls it on copies of x as q and k;
``forward_qk_`` is vLLM's own form: q and k (k with fewer heads: GQA, MQA) as rows of the judge's
fused qkv buffer (layouts ``qkv``, ``offset``), copied to the device whole and back after the call
(``torch_util.device_views``), so the judge sees what the op wrote, inside the views or not. Not run
here (no GPU was lent).
``get_rope``'s signature changed across releases; the adapter fills what the installed
version asks for: older ``(head_size, rotary_dim, max_position, base, is_neox_style,
rope_scaling, dtype, partial_rotary_factor)``, newer ``(head_size, max_position,
is_neox_style, rope_parameters, dtype)`` with ``rope_theta``/``partial_rotary_factor`` inside
``rope_parameters``. ``is_neox_style`` is the pairing (True: half). vLLM precomputes a
``cos_sin_cache [max_position, rotary_dim]`` (float32 inv_freq and angles, cast to the
model dtype) and looks it up by position, so positions must lie in ``[0, max_position)``;
the adapter sets ``max_position = max(position) + 1``. Dynamic NTK in vLLM is static
(``L = M*f``), a named policy the reference does not implement: not adapted. Needs a CUDA
GPU and a vLLM install (which pins its own torch: run it in its own environment).

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from ..vocabulary import FEATURES
from .base import BaseBackend, Capabilities
from .gpu_util import gpu_reason
from .hf_families import rope_parameters
from .torch_util import device_views, to_numpy, to_torch, torch_dtype

__all__ = ["VLLMBackend"]


@dataclass
class VLLMBackend(BaseBackend):
    name: str = "vllm"
    device: str = "cuda"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"forward"}),
            pairings=frozenset({"half", "adjacent"}),
            scaling_types=frozenset({"default", "linear", "yarn", "llama3", "longrope"}),
            features=frozenset(FEATURES) - {"window_last", "negative_positions", "vision_qwen_vl", "vision_pixtral"},
            angle_dtype="float32",
            table_dtype="input",
            notes="CUDA only; cos_sin_cache of max_position rows (float32 angles) in the model dtype.",
            layouts=frozenset({"qkv", "offset"}),  # q, k as [tokens, heads*head_size] rows of a fused qkv buffer
            call_forms=frozenset({"qk_inplace"}),  # rope(positions, q, k) rotates q and k in place
            qk_shapes=frozenset({"gqa", "mqa"}),
        )
    )

    def library_reason(self) -> str | None:
        return gpu_reason("vllm")

    def _rope(self, spec: RopeSpec, max_position: int, dtype: Any) -> Any:
        from vllm.model_executor.layers.rotary_embedding import get_rope

        params = rope_parameters(spec, spec.head_dim)
        if spec.mrope_section is not None:
            params["mrope_section"] = list(spec.mrope_section)
            if spec.mrope_layout == "interleaved":
                params["mrope_interleaved"] = True
        neox = spec.pairing == "half"
        names = inspect.signature(get_rope).parameters
        if "rope_parameters" in names:
            return get_rope(spec.head_dim, max_position=max_position, is_neox_style=neox, rope_parameters=params,
                            dtype=dtype)
        scaling = None if spec.scaling.type == "default" else {**params, "type": spec.scaling.type}
        kw: dict[str, Any] = {"is_neox_style": neox, "rope_scaling": scaling, "dtype": dtype}
        if "partial_rotary_factor" in names and "partial_rotary_factor" in params:
            kw["partial_rotary_factor"] = params["partial_rotary_factor"]
            rotary_dim = spec.head_dim
        else:
            rotary_dim = spec.resolved_rotary_dim
        return get_rope(spec.head_dim, rotary_dim, max_position, spec.theta, **kw)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        import torch

        H, D = x.shape[-2:]
        N = int(np.prod(x.shape[:-2]))
        pos = np.asarray(positions, dtype=np.int64)
        if spec.mrope_section is not None:
            pos = np.broadcast_to(pos, (3, *x.shape[:-2])).reshape(3, N)
        else:
            pos = np.broadcast_to(pos, x.shape[:-2]).reshape(N)
        dtype = torch_dtype(str(x.dtype))
        rope = self._rope(spec, int(pos.max()) + 1 if pos.size else 1, dtype).to(self.device)
        q = to_torch(x, self.device).reshape(N, H * D)
        with torch.no_grad():
            y, _ = rope(to_torch(pos, self.device), q.clone(), q.clone())
        return to_numpy(y.reshape(x.shape))

    def forward_qk_(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> None:
        """vLLM's own form: ``rope(positions, query, key)`` with ``query [tokens, Hq*D]`` and ``key [tokens, Hk*D]``,
        rotated in place (the custom op writes into them), here views of a device copy of the judge's qkv buffer."""
        import torch

        D = q.shape[-1]
        N = int(np.prod(q.shape[:-2]))
        pos = np.asarray(positions, dtype=np.int64)
        pos = np.broadcast_to(pos, (3, *q.shape[:-2])).reshape(3, N) if spec.mrope_section is not None \
            else np.broadcast_to(pos, q.shape[:-2]).reshape(N)
        rope = self._rope(spec, int(pos.max()) + 1 if pos.size else 1, torch_dtype(str(q.dtype))).to(self.device)
        (qt, kt), back = device_views([q, k], self.device)
        with torch.no_grad():
            rope(to_torch(pos, self.device), qt.reshape(N, -1, D).flatten(1), kt.reshape(N, -1, D).flatten(1))
        back()
