"""``flash-attn`` (GPU): ``flash_attn.layers.rotary.apply_rotary_emb`` and its ``RotaryEmbedding`` tables.

Documented API (flash-attn 2.x): ``apply_rotary_emb(x, cos, sin, interleaved=False,
inplace=False, seqlen_offsets=0, cu_seqlens=None, max_seqlen=None)`` with ``x`` bshd
``[B, S, H, D]`` (or packed ``[total, H, D]`` with ``cu_seqlens``), ``cos, sin
[seqlen_ro, rotary_dim/2]`` indexed by row ``s + seqlen_offsets[b]``; ``interleaved``
= adjacent pairs. ``RotaryEmbedding(dim, base, interleaved, scale_base=None,
pos_idx_in_fp32=True)`` builds the tables (inv_freq float32, positions float32 outer
product, cos/sin cast to the input dtype).

Stages: ``apply`` (given per-token tables: one sequence ``[1, N, H, D]`` with ``[N, n]``
tables); ``forward``/``backward`` with positions ``p0_b + arange(T)`` per row
(``seqlen_offsets`` tensor) or packed sequences restarting at 0 (``cu_seqlens``), tables
from ``RotaryEmbedding._update_cos_sin_cache``. Backward: flash-attn's autograd Function.
Needs a CUDA GPU; NOT_SUPPORTED otherwise.

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
from .gpu_util import CUDA_KERNEL_FEATURES, gpu_reason, sequence_offsets
from .torch_util import to_numpy, to_torch, torch_dtype

__all__ = ["FlashAttnBackend"]


@dataclass
class FlashAttnBackend(BaseBackend):
    name: str = "flash-attn"
    device: str = "cuda"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"apply", "forward", "backward"}),
            pairings=frozenset({"half", "adjacent"}),
            scaling_types=frozenset({"default"}),
            features=CUDA_KERNEL_FEATURES,
            angle_dtype="float32",
            table_dtype="input",
            notes="CUDA only. RotaryEmbedding tables (float32 angles, cast to x dtype); kernel computes in float32.",
        )
    )

    def library_reason(self) -> str | None:
        return gpu_reason("flash_attn")

    def case_reason(self, case: GoldenCase) -> str | None:
        if case.spec.head_dim > 256:
            return "flash-attn's rotary kernel supports head_dim <= 256"
        if case.stage in ("forward", "backward"):
            x = case.arrays.get("x", case.arrays.get("grad"))
            if x is None:  # not reached: forward and backward cases carry x or grad
                return "the case has no x or grad array"
            if sequence_offsets(case.positions, x.shape, case.arrays.get("cu_seqlens")) is None:
                return "positions must be p0 + arange(len) per sequence (seqlen_offsets)"
        return None

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        from flash_attn.layers.rotary import apply_rotary_emb

        grid, n = x.shape[:-2], spec.n_pairs
        N = int(np.prod(grid))
        xt = to_torch(x, self.device).reshape(1, N, *x.shape[-2:])
        c = to_torch(np.broadcast_to(cos, (*grid, n)).reshape(N, n), self.device)
        s = to_torch(np.broadcast_to(sin, (*grid, n)).reshape(N, n), self.device)
        y = apply_rotary_emb(xt, c, s, interleaved=spec.pairing == "adjacent")
        return to_numpy(y.reshape(x.shape))

    def _run(self, arr: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any, grad: bool) -> np.ndarray:
        import torch
        from flash_attn.layers.rotary import RotaryEmbedding, apply_rotary_emb

        offs = sequence_offsets(positions, arr.shape, cu_seqlens)
        assert offs is not None
        xt = to_torch(arr, self.device)
        if cu_seqlens is not None:
            cu = np.asarray(cu_seqlens, dtype=np.int64)
            lengths = np.diff(cu)
            kw = {"cu_seqlens": to_torch(cu.astype(np.int32), self.device), "max_seqlen": int(lengths.max())}
            rows = int((offs + lengths).max())
        else:
            kw, rows = {}, int(offs.max()) + arr.shape[1]
        rope = RotaryEmbedding(spec.resolved_rotary_dim, base=spec.theta, interleaved=spec.pairing == "adjacent",
                               device=self.device)
        rope._update_cos_sin_cache(rows, device=torch.device(self.device), dtype=torch_dtype(str(arr.dtype)))
        cos, sin = rope._cos_cached, rope._sin_cached
        off = to_torch(offs.astype(np.int32), self.device)
        x_in = xt.clone().requires_grad_(grad)
        y = apply_rotary_emb(x_in, cos, sin, interleaved=spec.pairing == "adjacent", seqlen_offsets=off, **kw)
        if not grad:
            return to_numpy(y)
        (gx,) = torch.autograd.grad(y, x_in, grad_outputs=xt)
        return to_numpy(gx)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(x, positions, spec, cu_seqlens, grad=False)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(grad, positions, spec, cu_seqlens, grad=True)
