"""``flash-attn`` (GPU): ``flash_attn.layers.rotary.apply_rotary_emb`` and its ``RotaryEmbedding`` tables.

Documented API (flash-attn 2.x): ``apply_rotary_emb(x, cos, sin, interleaved=False,
inplace=False, seqlen_offsets=0, cu_seqlens=None, max_seqlen=None)`` with ``x`` bshd
``[B, S, H, D]`` (or packed ``[total, H, D]`` with ``cu_seqlens``), ``cos, sin
[seqlen_ro, rotary_dim/2]`` indexed by row ``s + seqlen_offsets[b]``; ``interleaved``
= adjacent pairs. ``RotaryEmbedding(dim, base, interleaved, scale_base=None,
pos_idx_in_fp32=True)`` builds the tables (inv_freq float32, positions float32 outer
product, cos/sin cast to the input dtype).

Stages: ``apply`` (given per-token tables: each batch row ``[1, T, H, D]`` with its ``[T, n]``
tables; packed: one sequence); ``forward``/``backward`` with positions ``p0_b + arange(T)`` per row
(``seqlen_offsets`` tensor) or packed sequences restarting at 0 (``cu_seqlens``), tables
from ``RotaryEmbedding._update_cos_sin_cache``. Backward: flash-attn's autograd Function.
In place (``apply_``, ``forward_``: ``inplace=True``) and on strided x (declared layouts ``qkv``,
``bhtd``, ``offset``: the kernel takes any strides with a contiguous last dim): x reaches the GPU as
a view into a device copy of the whole buffer it lives in (``torch_util.device_views``), copied back
after the call, so a write outside the view is seen by the judge. Not run here (no GPU was lent).
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
from .torch_util import device_views, to_numpy, to_torch, torch_dtype

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
            layouts=frozenset({"qkv", "bhtd", "offset"}),  # strided x with a contiguous last dim (not Fortran order)
            call_forms=frozenset({"inplace"}),  # apply_rotary_emb(..., inplace=True)
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

    def _apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec, inplace: bool) -> np.ndarray:
        """Per batch row ``b``: ``apply_rotary_emb(x[b:b+1], cos[b], sin[b])`` (tables ``[T, n]`` shared over
        heads), on a device copy of the buffer x views (its strides kept; copied back after the call)."""
        import torch
        from flash_attn.layers.rotary import apply_rotary_emb

        n = spec.n_pairs
        (xt,), back = device_views([x], self.device)
        rows = xt if xt.dim() == 4 else xt.unsqueeze(0)  # packed [N, H, D]: one sequence
        c = np.broadcast_to(cos, (*x.shape[:-2], n)).reshape(rows.shape[0], rows.shape[1], n)
        s = np.broadcast_to(sin, (*x.shape[:-2], n)).reshape(rows.shape[0], rows.shape[1], n)
        out = []
        for b in range(rows.shape[0]):
            cb, sb = to_torch(c[b], self.device), to_torch(s[b], self.device)
            out.append(apply_rotary_emb(rows[b:b + 1], cb, sb, interleaved=spec.pairing == "adjacent", inplace=inplace))
        back()
        if inplace or not out:
            return x
        return to_numpy(torch.cat(out).reshape(x.shape))

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        return self._apply(x, cos, sin, spec, inplace=False)

    def apply_(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> None:
        """In place: flash-attn writes the rotated x into x's own (device) memory."""
        self._apply(x, cos, sin, spec, inplace=True)

    def _run(self, arr: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any, grad: bool,
             inplace: bool = False) -> np.ndarray:
        import torch
        from flash_attn.layers.rotary import RotaryEmbedding, apply_rotary_emb

        offs = sequence_offsets(positions, arr.shape, cu_seqlens)
        assert offs is not None
        (xt,), back = device_views([arr], self.device)
        if cu_seqlens is not None:
            cu = np.asarray(cu_seqlens, dtype=np.int64)
            lengths = np.diff(cu)
            kw = {"cu_seqlens": to_torch(cu.astype(np.int32), self.device), "max_seqlen": int(lengths.max())}
            rows = int((offs + lengths).max()) if lengths.size else 1
        else:
            kw, rows = {}, (int(offs.max()) if offs.size else 0) + arr.shape[1]
        rope = RotaryEmbedding(spec.resolved_rotary_dim, base=spec.theta, interleaved=spec.pairing == "adjacent",
                               device=self.device)
        rope._update_cos_sin_cache(rows, device=torch.device(self.device), dtype=torch_dtype(str(arr.dtype)))
        cos, sin = rope._cos_cached, rope._sin_cached
        off = to_torch(offs.astype(np.int32), self.device)
        if inplace:
            apply_rotary_emb(xt, cos, sin, interleaved=spec.pairing == "adjacent", seqlen_offsets=off, inplace=True, **kw)
            back()
            return arr
        x_in = xt.clone().requires_grad_(grad)
        y = apply_rotary_emb(x_in, cos, sin, interleaved=spec.pairing == "adjacent", seqlen_offsets=off, **kw)
        back()  # (x itself must come back unchanged)
        if not grad:
            return to_numpy(y)
        (gx,) = torch.autograd.grad(y, x_in, grad_outputs=xt.contiguous())
        return to_numpy(gx)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(x, positions, spec, cu_seqlens, grad=False)

    def forward_(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> None:
        """In place: ``apply_rotary_emb(x, ..., inplace=True)`` on x's own (device) memory."""
        self._run(x, positions, spec, cu_seqlens, grad=False, inplace=True)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(grad, positions, spec, cu_seqlens, grad=True)
