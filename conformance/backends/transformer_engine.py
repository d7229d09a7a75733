"""``transformer-engine`` (GPU): ``transformer_engine.pytorch.attention.rope``.

Documented API: ``RotaryPositionEmbedding(dim, rotary_percent=1.0,
seq_len_interpolation_factor=None, pretrained_max_position_embeddings=None,
rotary_base=10000.0, interleaved=False)``; calling it with ``max_seq_len`` gives the angle
table ``freqs [S, 1, 1, dim]`` for positions ``0..S-1`` (float32; ``cat(f, f)`` layout, or
repeated pairs when interleaved; ``seq_len_interpolation_factor`` divides positions:
``linear``). ``apply_rotary_pos_emb(t, freqs, tensor_format="bshd"|"sbhd"|"thd",
interleaved=False, fused=False|True, cu_seqlens=None)`` rotates ``t[..., :dim]`` with the
row of each token's index (``thd``: the index restarts at 0 in each sequence).

Stages: ``forward`` and ``backward`` (autograd, incl. TE's fused backward) for positions
``arange(T)`` shared by every row (``bshd``) or packed sequences restarting at 0 (``thd``),
with the fused kernel (``fused=True``). Releases that accept ``start_positions`` (per-row
offsets) are used for offset rows. Needs a CUDA GPU.

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from .base import BaseBackend, Capabilities
from .gpu_util import CUDA_KERNEL_FEATURES, gpu_reason, sequence_offsets
from .torch_util import to_numpy, to_torch

__all__ = ["TransformerEngineBackend"]


@dataclass
class TransformerEngineBackend(BaseBackend):
    name: str = "transformer-engine"
    device: str = "cuda"
    fused: bool = True
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"forward", "backward"}),
            pairings=frozenset({"half", "adjacent"}),
            scaling_types=frozenset({"default", "linear"}),
            features=CUDA_KERNEL_FEATURES,
            angle_dtype="float32",
            table_dtype="float32",
            notes="CUDA only; float32 angle table freqs [S,1,1,d]; fused kernel computes in float32.",
        )
    )

    def library_reason(self) -> str | None:
        return gpu_reason("transformer_engine")

    def case_reason(self, case: GoldenCase) -> str | None:
        x = case.arrays.get("x", case.arrays.get("grad"))
        if x is None:  # not reached: forward and backward cases (the only stages declared) carry x or grad
            return "the case has no x or grad array"
        offs = sequence_offsets(case.positions, x.shape, case.arrays.get("cu_seqlens"))
        if offs is None:
            return "positions must be p0 + arange(len) per sequence"
        if offs.any() and not self._has_start_positions():
            return "this TransformerEngine release has no start_positions: positions must start at 0"
        return None

    @staticmethod
    def _has_start_positions() -> bool:
        from transformer_engine.pytorch.attention.rope import apply_rotary_pos_emb

        return "start_positions" in inspect.signature(apply_rotary_pos_emb).parameters

    def _run(self, arr: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any, grad: bool) -> np.ndarray:
        import torch
        from transformer_engine.pytorch.attention.rope import RotaryPositionEmbedding, apply_rotary_pos_emb

        offs = sequence_offsets(positions, arr.shape, cu_seqlens)
        assert offs is not None
        sc = spec.scaling
        emb = RotaryPositionEmbedding(
            spec.rotary_dim, rotary_base=spec.theta, interleaved=spec.pairing == "adjacent",
            seq_len_interpolation_factor=sc.factor if sc.type == "linear" else None,
        )
        kw: dict[str, Any] = {"fused": self.fused, "interleaved": spec.pairing == "adjacent"}
        if cu_seqlens is not None:
            cu = np.asarray(cu_seqlens, dtype=np.int64)
            kw |= {"tensor_format": "thd", "cu_seqlens": to_torch(cu.astype(np.int32), self.device)}
            rows = int((offs + np.diff(cu)).max())
        else:
            kw["tensor_format"] = "bshd"
            rows = int(offs.max()) + arr.shape[1]
        if offs.any():
            kw["start_positions"] = to_torch(offs.astype(np.int32), self.device)
        freqs = emb(rows).to(self.device)
        xt = to_torch(arr, self.device)
        x_in = xt.clone().requires_grad_(grad)
        y = apply_rotary_pos_emb(x_in, freqs, **kw)
        if not grad:
            return to_numpy(y)
        (gx,) = torch.autograd.grad(y, x_in, grad_outputs=xt)
        return to_numpy(gx)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(x, positions, spec, cu_seqlens, grad=False)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(grad, positions, spec, cu_seqlens, grad=True)
