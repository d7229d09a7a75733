"""``torchtune`` / ``torchtune-qwen2``: torchtune 0.6's RoPE modules, called as its models call them.

- ``torchtune``: ``RotaryPositionalEmbeddings`` (adjacent pairs, Meta Llama layout) and
  ``Llama3ScaledRoPE`` (llama3 scaling). Both build a float32 cache
  ``[max_seq_len, D/2, 2]`` (``theta`` float32, ``idx_theta = positions x theta`` in
  float32), look it up with ``input_pos``, and rotate ``x.float()`` in float32, casting
  the result back to the input dtype: angle and table dtype float32.
- ``torchtune-qwen2``: ``Qwen2RotaryPositionalEmbeddings`` (half pairing); its cache is
  float32 but cos/sin are cast to the input dtype before the multiply (table dtype
  ``input``).

Both rotate the whole head (no partial rotary), take no scaling other than llama3, and
index a cache with ``input_pos``: positions must lie in ``[0, max_seq_len)``; the adapter
sizes the cache to ``max(position) + 1`` rows and declines positions past
``ROPEREF_MAX_CACHE_ROWS`` (default 2^20 + 4096; memory and time). ``input_pos [b, s]`` may differ per batch row, so packed
(varlen) sequences are a ``[1, tokens]`` batch. torchtune's ``VisionRotaryPositionalEmbeddings``
is a third 2-D form (adjacent pairs, (x+1, y+1) per tile, CLS token at zero) that
:class:`RopeSpec` does not describe: not adapted.

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
from .torch_util import TorchFunctionStages, cache_rows_reason, missing, positions_to_torch, to_numpy

__all__ = ["TorchtuneBackend", "TorchtuneQwen2Backend"]


_UNSUPPORTED_FEATURES = {"partial", "window_last", "odd_freq_dim", "negative_positions", "mrope_chunked",
                         "mrope_interleaved", "vision_qwen_vl", "vision_pixtral"}


def _bt(positions: np.ndarray, grid: tuple[int, ...]) -> np.ndarray:
    """Positions as torchtune's ``input_pos [b, s]`` for a token grid (bshd ``[B, T]`` or packed ``[N]``)."""
    pos = np.broadcast_to(np.asarray(positions, dtype=np.int64), grid)
    return pos if len(grid) == 2 else pos.reshape(1, -1)


@dataclass
class TorchtuneBackend(TorchFunctionStages, BaseBackend):
    """torchtune RotaryPositionalEmbeddings / Llama3ScaledRoPE (adjacent pairing)."""

    name: str = "torchtune"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"inv_freq", "cos_sin", "forward", "backward"}),
            pairings=frozenset({"adjacent"}),
            scaling_types=frozenset({"default", "llama3"}),
            features=frozenset(FEATURES) - _UNSUPPORTED_FEATURES,
            angle_dtype="float32",
            table_dtype="float32",
            notes="float32 cache of max_seq_len rows looked up by input_pos; x.float() rotated, cast back.",
        )
    )

    def library_reason(self) -> str | None:
        return missing("torch", "torchtune")

    def case_reason(self, case: GoldenCase) -> str | None:
        return cache_rows_reason(case.positions)

    # ---- the module -------------------------------------------------------------------------
    def _module(self, spec: RopeSpec, rows: int) -> Any:
        from torchtune.models.llama3_1 import Llama3ScaledRoPE
        from torchtune.modules import RotaryPositionalEmbeddings

        sc = spec.scaling
        if sc.type == "llama3":
            return Llama3ScaledRoPE(
                dim=spec.head_dim, max_seq_len=rows, base=spec.theta, scale_factor=sc.factor,
                low_freq_factor=sc.low_freq_factor, high_freq_factor=sc.high_freq_factor,
                old_context_len=sc.original_max_position_embeddings,
            )
        return RotaryPositionalEmbeddings(dim=spec.head_dim, max_seq_len=rows, base=spec.theta)

    def _cos_sin_from_cache(self, module: Any, idx: Any, n: int) -> tuple[Any, Any]:
        cache = module.cache[idx]  # [..., n, 2]
        return cache[..., 0], cache[..., 1]

    @staticmethod
    def _rows(positions: np.ndarray) -> int:
        return int(np.max(positions)) + 1 if np.size(positions) else 1

    # ---- stages -----------------------------------------------------------------------------
    def inv_freq(self, spec: RopeSpec, seq_len: int) -> tuple[np.ndarray, float]:
        return to_numpy(self._module(spec, 1).theta), 1.0

    def cos_sin(self, spec: RopeSpec, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.asarray(positions, dtype=np.int64)
        module = self._module(spec, self._rows(pos))
        cos, sin = self._cos_sin_from_cache(module, positions_to_torch(pos), spec.n_pairs)
        return to_numpy(cos), to_numpy(sin)

    def _forward_fn(self, spec: RopeSpec, positions: np.ndarray, shape: tuple[int, ...]) -> Any:
        grid = tuple(shape[:-2])
        module = self._module(spec, self._rows(positions))
        pos = positions_to_torch(_bt(positions, grid))

        def fn(xt: Any) -> Any:
            y = module(xt.reshape(*pos.shape, *shape[-2:]), input_pos=pos)
            return y.reshape(shape)

        return fn



@dataclass
class TorchtuneQwen2Backend(TorchtuneBackend):
    """torchtune Qwen2RotaryPositionalEmbeddings (half pairing; cos/sin cast to the input dtype)."""

    name: str = "torchtune-qwen2"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"inv_freq", "cos_sin", "forward", "backward"}),
            pairings=frozenset({"half"}),
            scaling_types=frozenset({"default"}),
            features=frozenset(FEATURES) - _UNSUPPORTED_FEATURES,
            angle_dtype="float32",
            table_dtype="input",
            notes="float32 cache cat(cos, sin) of max_seq_len rows; cos/sin cast to the input dtype before the multiply.",
        )
    )

    def _module(self, spec: RopeSpec, rows: int) -> Any:
        from torchtune.models.qwen2._positional_embeddings import Qwen2RotaryPositionalEmbeddings

        return Qwen2RotaryPositionalEmbeddings(dim=spec.head_dim, max_seq_len=rows, base=spec.theta)

    def _cos_sin_from_cache(self, module: Any, idx: Any, n: int) -> tuple[Any, Any]:
        cache = module.cache[idx]  # [..., 2D] = cat(cos(cat(f, f)), sin(cat(f, f)))
        D = 2 * n
        return cache[..., :n], cache[..., D : D + n]
