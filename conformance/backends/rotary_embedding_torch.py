"""``rotary-embedding-torch``: lucidrains' ``RotaryEmbedding`` through its main API.

``RotaryEmbedding(dim, theta, interpolate_factor, theta_rescale_factor)`` and
``rotate_queries_or_keys(t, seq_dim=-3, offset=p0)`` on bshd ``[B, T, H, D]`` input:

- pairing: ``rotate_half`` here is ``rearrange('... (d r) -> ... d r', r=2)``: adjacent pairs;
- partial rotation: ``dim`` < head dim rotates the first ``dim`` channels (``start_index=0``);
- ``interpolate_factor f``: positions divided by ``f`` (``linear``);
- ``theta_rescale_factor a``: ``theta * a^(dim/(dim-2))`` (``ntk``).

Positions, two public entry points:

- contiguous positions shared by every batch row (``p0 + arange(T)``): the main API
  ``rotate_queries_or_keys(t, seq_dim=-3, offset=p0)``. Its ``get_seq_pos`` builds the
  positions as ``torch.arange(T, dtype=t.dtype) + offset``, i.e. in the *input* dtype;
- anything else (per-row offsets, sparse, packed): ``freqs = rotary(positions)`` (the
  module's ``forward`` takes a tensor of positions, converted to float32) and
  ``apply_rotary_emb(freqs[..., None, :], t)``, as the README's axial/custom-position
  examples do.

The frequencies are a float32 parameter, the angles ``positions.float() * freqs``
float32, and the rotation multiplies float32 cos/sin (``t * freqs.cos()``) before
casting back.
The library exposes no cos/sin tables and no apply-with-tables function, so only
``inv_freq`` (the ``freqs`` parameter; default and ntk), ``forward`` and ``backward``
(autograd) are adapted.

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from ..vocabulary import FEATURES
from .base import BaseBackend, Capabilities
from .torch_util import TorchFunctionStages, missing, to_numpy, to_torch

__all__ = ["RotaryEmbeddingTorchBackend"]


@dataclass
class RotaryEmbeddingTorchBackend(TorchFunctionStages, BaseBackend):
    name: str = "rotary-embedding-torch"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"inv_freq", "forward", "backward"}),
            pairings=frozenset({"adjacent"}),
            scaling_types=frozenset({"default", "linear", "ntk"}),
            features=frozenset(FEATURES)
            - {"window_last", "odd_freq_dim",
               "mrope_chunked", "mrope_interleaved", "vision_qwen_vl", "vision_pixtral"},
            angle_dtype="float32",
            table_dtype="float32",
            notes="contiguous shared positions: rotate_queries_or_keys(offset=p0) (positions built in the input "
            "dtype); otherwise rotary(positions) + apply_rotary_emb; float32 freqs/angles/cos/sin, result cast back.",
        )
    )

    def library_reason(self) -> str | None:
        return missing("torch", "rotary_embedding_torch")

    def case_reason(self, case: GoldenCase) -> str | None:
        if case.spec.scaling.type == "linear":
            if case.stage == "inv_freq":
                return "interpolate_factor divides the positions; the freqs parameter is unscaled"
            x = case.arrays.get("x", case.arrays.get("grad"))
            positions = case.positions
            if x is not None and (positions is None or self.contiguous_offset(positions, x.shape) is None):
                return "interpolate_factor is applied only by rotate_queries_or_keys (contiguous positions)"
        return None

    def _module(self, spec: RopeSpec) -> Any:
        from rotary_embedding_torch import RotaryEmbedding

        sc = spec.scaling
        return RotaryEmbedding(
            dim=spec.rotary_dim,
            theta=spec.theta,
            interpolate_factor=sc.factor if sc.type == "linear" else 1.0,
            theta_rescale_factor=sc.alpha if sc.type == "ntk" else 1.0,
        )

    def inv_freq(self, spec: RopeSpec, seq_len: int) -> tuple[np.ndarray, float]:
        return to_numpy(self._module(spec).freqs), 1.0

    @staticmethod
    def contiguous_offset(positions: np.ndarray, shape: tuple[int, ...]) -> int | None:
        """``p0`` when ``x`` is bshd and every row's positions are ``p0 + arange(T)``, else None."""
        if len(shape) != 4:
            return None
        pos = np.broadcast_to(np.asarray(positions, dtype=np.int64), shape[:2])
        if pos.size == 0:
            return 0  # no token: any offset describes it
        p0 = int(pos[0, 0])
        return p0 if np.array_equal(pos, p0 + np.broadcast_to(np.arange(shape[1]), pos.shape)) else None

    def _forward_fn(self, spec: RopeSpec, positions: np.ndarray, shape: tuple[int, ...]) -> Any:
        from rotary_embedding_torch import apply_rotary_emb

        module = self._module(spec)
        offset = self.contiguous_offset(positions, shape)
        if offset is not None:
            return lambda xt: module.rotate_queries_or_keys(xt, seq_dim=-3, offset=offset)
        grid = tuple(shape[:-2])
        bt = grid if len(grid) == 2 else (1, int(np.prod(grid)))
        pos = to_torch(np.broadcast_to(np.asarray(positions, dtype=np.int64), grid).reshape(bt))

        def fn(xt: Any) -> Any:
            freqs = module(pos)  # [B, T, r] angles, adjacent-repeated
            y = apply_rotary_emb(freqs.unsqueeze(-2), xt.reshape(*bt, *shape[-2:]))  # 4-D: no seq slicing
            return y.reshape(shape)

        return fn

