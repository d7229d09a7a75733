"""``litgpt``: ``litgpt.model.build_rope_cache`` + ``apply_rope`` / ``apply_rope_interleave``.

Mapped the way ``litgpt.model.GPT`` / ``CausalSelfAttention`` use them:

- ``n_elem`` = ``rope_n_elem`` (``int(rotary_percentage * head_size)``): the first
  ``n_elem`` channels rotate, ``q[..., :n_elem]``; the rest is concatenated back;
- pairing ``half`` -> ``apply_rope``; ``adjacent_in_half_out`` (DeepSeek V3 layout,
  ``rope_interleave``) -> ``apply_rope_interleave``; litgpt has no adjacent-in/adjacent-out form;
- scaling: ``linear`` with an integer factor -> ``condense_ratio`` (positions divided by
  it; litgpt's own field), other linear factors -> ``rope_adjustments={"factor": f}``
  (inv_freq divided by ``f``); ``llama3`` and ``yarn`` -> ``rope_adjustments`` with
  litgpt's key names (``original_max_seq_len``, ``low_freq_factor``/``high_freq_factor``,
  ``beta_fast``/``beta_slow``/``mscale``/``mscale_all_dim``/``truncate``);
- positions: the cache has one row per position ``0..seq_len-1`` and is indexed with
  ``input_pos`` (per batch row allowed), so positions must lie in ``[0, seq_len)``.

Precision: ``theta`` and ``idx_theta = outer(arange.float()/condense_ratio, theta)`` in
float32, cos/sin float32 (attention scaling folded in); ``apply_rope`` multiplies the input
by the float32 tables (promoting bf16/fp16 to float32) and casts back.

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
from .torch_util import TorchFunctionStages, cache_rows_reason, missing, positions_to_torch, to_numpy, to_torch

__all__ = ["LitGPTBackend"]



@dataclass
class LitGPTBackend(TorchFunctionStages, BaseBackend):
    name: str = "litgpt"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"cos_sin", "apply", "forward", "backward"}),
            pairings=frozenset({"half", "adjacent_in_half_out"}),
            scaling_types=frozenset({"default", "linear", "llama3", "yarn"}),
            features=frozenset(FEATURES)
            - {"window_last", "odd_freq_dim", "negative_positions", "mrope_chunked", "mrope_interleaved",
               "vision_qwen_vl", "vision_pixtral"},
            angle_dtype="float32",
            table_dtype="float32",
            notes="build_rope_cache float32 (theta, angles, cos/sin); apply_rope promotes to float32, casts back.",
        )
    )

    def library_reason(self) -> str | None:
        return missing("torch", "litgpt")

    def case_reason(self, case: GoldenCase) -> str | None:
        sc = case.spec.scaling
        if sc.type == "yarn" and sc.attention_factor is not None:
            return "litgpt's YaRN has no attention_factor key (it derives the scaling from mscale only)"
        return cache_rows_reason(case.positions)

    # ---- cache ------------------------------------------------------------------------------
    @staticmethod
    def _cache_args(spec: RopeSpec) -> dict[str, Any]:
        sc = spec.scaling
        kw: dict[str, Any] = {"n_elem": spec.rotary_dim, "base": spec.theta}
        if sc.type == "linear":
            factor = sc.given("factor")
            if factor.is_integer():
                kw["condense_ratio"] = int(factor)
            else:
                kw["extra_config"] = {"factor": sc.factor}
        elif sc.type == "llama3":
            kw["extra_config"] = {
                "factor": sc.factor,
                "low_freq_factor": sc.low_freq_factor,
                "high_freq_factor": sc.high_freq_factor,
                "original_max_seq_len": sc.original_max_position_embeddings,
            }
        elif sc.type == "yarn":
            extra: dict[str, Any] = {
                "factor": sc.factor,
                "beta_fast": 32.0 if sc.beta_fast is None else sc.beta_fast,
                "beta_slow": 1.0 if sc.beta_slow is None else sc.beta_slow,
                "original_max_seq_len": sc.original_max_position_embeddings,
            }
            for key in ("mscale", "mscale_all_dim", "truncate"):
                if getattr(sc, key) is not None:
                    extra[key] = getattr(sc, key)
            kw["extra_config"] = extra
        return kw

    def _tables(self, spec: RopeSpec, positions: np.ndarray) -> tuple[Any, Any]:
        """cos, sin ``[*P, n_elem]`` (litgpt's cat layout), looked up at ``positions``."""
        from litgpt.model import build_rope_cache

        rows = int(np.max(positions)) + 1 if np.size(positions) else 1
        cos, sin = build_rope_cache(seq_len=rows, **self._cache_args(spec))
        idx = positions_to_torch(positions)
        return cos[idx], sin[idx]

    def _rotate(self, spec: RopeSpec, xt: Any, cos: Any, sin: Any) -> Any:
        """xt ``[*P, H, D]``; cos/sin ``[*P, r]``: as CausalSelfAttention, on ``[B, H, T, D]`` with ``[B, T, r]`` tables."""
        import torch
        from litgpt.model import apply_rope, apply_rope_interleave

        shape, r = xt.shape, spec.resolved_rotary_dim
        grid = tuple(shape[:-2])
        bt = grid if len(grid) == 2 else (1, int(np.prod(grid)))
        q = xt.reshape(*bt, *shape[-2:]).transpose(1, 2)  # (B, nh, T, hs)
        c, s = cos.reshape(*bt, r), sin.reshape(*bt, r)
        fn = apply_rope_interleave if spec.pairing == "adjacent_in_half_out" else apply_rope
        q = torch.cat((fn(q[..., :r], c, s), q[..., r:]), dim=-1)
        return q.transpose(1, 2).reshape(shape)

    # ---- stages -----------------------------------------------------------------------------
    def cos_sin(self, spec: RopeSpec, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cos, sin = self._tables(spec, np.asarray(positions, dtype=np.int64))
        n = spec.n_pairs
        return to_numpy(cos[..., :n]), to_numpy(sin[..., :n])

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        import torch

        grid = x.shape[:-2]
        c = to_torch(np.broadcast_to(cos, (*grid, spec.n_pairs)))
        s = to_torch(np.broadcast_to(sin, (*grid, spec.n_pairs)))
        return to_numpy(self._rotate(spec, to_torch(x), torch.cat((c, c), -1), torch.cat((s, s), -1)))

    def _forward_fn(self, spec: RopeSpec, positions: np.ndarray, shape: tuple[int, ...]) -> Any:
        pos = np.broadcast_to(np.asarray(positions, dtype=np.int64), shape[:-2])
        cos, sin = self._tables(spec, pos)

        def fn(xt: Any) -> Any:
            return self._rotate(spec, xt, cos, sin)

        return fn

