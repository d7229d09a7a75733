"""Hugging Face model families used by the ``hf`` adapter: one small record per family.

Each family knows (a) how to build its config object in memory from a :class:`RopeSpec`,
(b) its rotary-embedding module and how to call it, (c) the layout of the cos/sin tables
that module returns, and (d) its apply function. Nothing here re-implements RoPE: the
tables come from the family's rotary module and the rotation from its apply function.

Table layouts (``R`` = rotated width, ``n = R/2`` pairs; pair ``j`` uses column ``j`` of
the canonical ``[..., n]`` table):

- ``cat``: ``[c_0..c_{n-1}, c_0..c_{n-1}]`` (Llama ``torch.cat((freqs, freqs))``; GLM and
  DeepSeek V3 build it too and take the first half inside their apply functions);
- ``interleave``: ``[c_0, c_0, c_1, c_1, ...]`` (Cohere ``repeat_interleave``);
- ``pairs``: ``[c_0..c_{n-1}]`` (GPT-J's sinusoid table; its apply repeats it).

Which channels each family rotates (the model's attention code does the slicing, and so
does the adapter, the same way):

- GPT-NeoX, GLM, Phi-3: the apply function rotates ``x[..., :R]`` itself;
- GPT-J: the attention rotates ``x[..., :rotary_dim]`` (sliced here);
- DeepSeek V3: q/k are ``cat([nope, rope])``, so the *last* ``qk_rope_head_dim`` channels
  rotate (the window-last form), sliced here;
- everything else: the whole head.

All rotary modules compute ``inv_freq`` in float32 (``torch.float``) and the angles as
``position_ids.float() * inv_freq`` in float32; cos/sin are cast to the input dtype
(except the Qwen2-VL vision module, which returns float32 tables and rotates in float32,
and Cohere, whose apply function rotates in float32 and casts back).

transformers and torch are imported lazily, inside the functions that use them: optional
libraries, loaded only when the hf adapter runs.
"""

from __future__ import annotations

import importlib
import math
import sys
from dataclasses import dataclass
from typing import Any

from roperef.spec import RopeSpec

__all__ = ["Family", "FAMILIES", "rope_parameters", "partial_factor"]

_DEFAULT_M = 4096


def partial_factor(head_dim: int, d: int) -> float:
    """A ``partial_rotary_factor`` rho with ``int(head_dim * rho) == d`` exactly (HF truncates)."""
    rho = d / head_dim
    if int(head_dim * rho) == d:
        return rho
    up = math.nextafter(rho, 2.0)
    while int(head_dim * up) < d:
        up = math.nextafter(up, 2.0)
    return up


def rope_parameters(spec: RopeSpec, head_dim_for_freq: int | None = None) -> dict[str, Any]:
    """The HF v5 ``rope_parameters`` dict of ``spec`` (``rope_type``, ``rope_theta`` and the scaling keys).

    ``partial_rotary_factor`` is added when the exponent denominator ``d`` differs from
    ``head_dim_for_freq`` (the head dim the family's config will declare).
    """
    sc = spec.scaling
    out: dict[str, Any] = {"rope_type": sc.type, "rope_theta": spec.theta}
    for key, value in sc.to_dict().items():
        if key in ("type", "max_position_embeddings"):
            continue
        out[key] = value
    if sc.type != "proportional" and head_dim_for_freq is not None and spec.freq_dim != head_dim_for_freq:
        out["partial_rotary_factor"] = partial_factor(head_dim_for_freq, spec.resolved_freq_dim)
    return out


def _max_positions(spec: RopeSpec) -> int:
    sc = spec.scaling
    if sc.max_position_embeddings is not None:
        return sc.max_position_embeddings
    if sc.type == "yarn" and sc.original_max_position_embeddings:  # HF warns unless M = factor * L0
        return max(_DEFAULT_M, int(sc.given("factor") * sc.original_max_position_embeddings))
    return max(_DEFAULT_M, 2 * (sc.original_max_position_embeddings or 0))  # M > L0 (HF warns otherwise)


@dataclass(frozen=True)
class Family:
    """One HF model family: where its rotary module and apply function live and how to call them."""

    key: str
    module: str  # transformers.models.<x>.modeling_<x>
    rotary: str  # rotary embedding class
    apply_fn: str  # apply function
    layout: str  # "cat" | "interleave" | "pairs"
    window: str = "full"  # "full" | "first" (apply slices) | "first_sliced" (adapter slices) | "last"
    layer_type: str | None = None  # Gemma 3/4: forward(x, position_ids, layer_type)
    vision: bool = False
    notes: str = ""

    def mod(self) -> Any:
        """The modeling module; once imported, read from ``sys.modules`` (a dict lookup that
        ``torch.compile`` traces, where ``importlib.import_module`` is a graph break)."""
        loaded = sys.modules.get(self.module)
        return loaded if loaded is not None else importlib.import_module(self.module)

    # ---- config -------------------------------------------------------------------------
    def config(self, spec: RopeSpec, max_positions: int | None = None) -> Any:
        """The family's config object for ``spec`` (one attention head of width ``head_dim``)."""
        import transformers

        D, r = spec.head_dim, spec.resolved_rotary_dim
        M = max_positions or _max_positions(spec)
        k = self.key
        if k == "llama":
            return transformers.LlamaConfig(
                hidden_size=D, num_attention_heads=1, head_dim=D, max_position_embeddings=M,
                rope_parameters=rope_parameters(spec, D),
            )
        if k == "gpt_neox":
            return transformers.GPTNeoXConfig(
                hidden_size=D, num_attention_heads=1, max_position_embeddings=M,
                rope_parameters=rope_parameters(spec, D) | {"partial_rotary_factor": partial_factor(D, spec.resolved_freq_dim)},
            )
        if k == "glm":
            return transformers.GlmConfig(
                hidden_size=D, num_attention_heads=1, head_dim=D, max_position_embeddings=M,
                rope_parameters=rope_parameters(spec, D) | {"partial_rotary_factor": partial_factor(D, spec.resolved_freq_dim)},
            )
        if k == "cohere":
            return transformers.CohereConfig(
                hidden_size=D, num_attention_heads=1, max_position_embeddings=M, rope_parameters=rope_parameters(spec, D)
            )
        if k == "phi3":
            sc = spec.scaling
            extra: dict[str, Any] = {}
            if sc.original_max_position_embeddings is not None:
                extra["original_max_position_embeddings"] = sc.original_max_position_embeddings
            rp = rope_parameters(spec, D) | {"partial_rotary_factor": partial_factor(D, spec.resolved_freq_dim)}
            return transformers.Phi3Config(
                hidden_size=D, num_attention_heads=1, max_position_embeddings=M, rope_parameters=rp, **extra
            )
        if k == "gemma3":
            return transformers.Gemma3TextConfig(
                hidden_size=D, num_attention_heads=1, head_dim=D, max_position_embeddings=M, num_hidden_layers=1,
                layer_types=["full_attention"], rope_parameters={"full_attention": rope_parameters(spec, D)},
            )
        if k == "gemma4":
            from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig

            return Gemma4TextConfig(  # type: ignore[call-arg]  # transformers configs take extra keys through **kwargs; mypy sees only the dataclass fields
                hidden_size=D, num_attention_heads=1, head_dim=D, global_head_dim=D, max_position_embeddings=M,
                num_hidden_layers=1, layer_types=["full_attention"],
                rope_parameters={"full_attention": rope_parameters(spec, D)},
            )
        if k == "deepseek_v3":
            return transformers.DeepseekV3Config(
                hidden_size=D, num_attention_heads=1, qk_rope_head_dim=r, qk_nope_head_dim=D - r,
                rope_interleave=spec.pairing == "adjacent_in_half_out", max_position_embeddings=M,
                rope_parameters=rope_parameters(spec, r),
            )
        if k in ("qwen2_vl", "qwen3_vl"):
            cls = transformers.Qwen2VLTextConfig if k == "qwen2_vl" else transformers.Qwen3VLTextConfig
            rp = rope_parameters(spec, D) | {"mrope_section": list(spec.mrope_section or ())}
            if k == "qwen3_vl":
                rp["mrope_interleaved"] = True
            return cls(hidden_size=D, num_attention_heads=1, head_dim=D, max_position_embeddings=M, rope_parameters=rp)  # type: ignore[call-arg]  # transformers configs take extra keys through **kwargs; mypy sees only the dataclass fields
        if k == "qwen2_vl_vision":
            from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig

            return Qwen2VLVisionConfig(
                embed_dim=D, num_heads=1, rope_parameters={"rope_type": "axial", "rope_theta": spec.theta}
            )
        if k == "pixtral":
            return transformers.PixtralVisionConfig(  # type: ignore[call-arg]  # transformers configs take extra keys through **kwargs; mypy sees only the dataclass fields
                hidden_size=D, num_attention_heads=1, head_dim=D,
                rope_parameters={"rope_type": "axial", "rope_theta": spec.theta},
            )
        if k == "gptj":
            return transformers.GPTJConfig(n_embd=D, n_head=1, rotary_dim=r, n_positions=M)
        raise KeyError(k)

    # ---- rotary module ------------------------------------------------------------------
    def rotary_module(self, config: Any) -> Any:
        return getattr(self.mod(), self.rotary)(config)

    def tables(self, module: Any, x: Any, position_ids: Any) -> tuple[Any, Any]:
        """(cos, sin) in the family's layout, as its rotary module returns them."""
        if self.key == "gptj":
            sin, cos = module(x, position_ids)  # GPT-J returns (sin, cos)
            return cos, sin
        if self.layer_type is not None:
            return module(x, position_ids, layer_type=self.layer_type)
        return module(x, position_ids)

    def inv_freq(self, config: Any, seq_len: int | None) -> tuple[Any, float]:
        """The family's inv_freq function: ``ROPE_INIT_FUNCTIONS[type]`` or its default/axial one."""
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

        cls = getattr(self.mod(), self.rotary)
        if self.vision:
            inv, s = cls.compute_axial_rope_parameters(config)
            if self.key == "qwen2_vl_vision":  # one [D/4] set shared by h and w: pair order is [h..., w...]
                import torch

                inv = torch.cat([inv, inv])
            return inv, s
        params = config.rope_parameters[self.layer_type] if self.layer_type else config.rope_parameters
        kw: dict[str, Any] = {"layer_type": self.layer_type} if self.layer_type else {}
        if params["rope_type"] == "default":
            return cls.compute_default_rope_parameters(config, **kw)
        if self.key == "gemma4":
            config = config.per_layer_config[self.layer_type]
        return ROPE_INIT_FUNCTIONS[params["rope_type"]](config, None, seq_len=seq_len, **kw)

    # ---- layouts ------------------------------------------------------------------------
    def to_pairs(self, t: Any, n: int) -> Any:
        """Canonical ``[..., n]`` view of a table in the family layout."""
        if self.layout == "interleave":
            return t[..., 0::2]
        return t[..., :n]

    def from_pairs(self, t: Any) -> Any:
        """The family layout built from a canonical ``[..., n]`` table."""
        import torch

        if self.layout == "interleave":
            return torch.repeat_interleave(t, 2, dim=-1)
        if self.layout == "pairs":
            return t
        return torch.cat((t, t), dim=-1)

    # ---- apply --------------------------------------------------------------------------
    def apply(self, x: Any, cos: Any, sin: Any, spec: RopeSpec) -> Any:
        """Rotate ``x`` (bshd ``[B, T, H, D]``, or ``[N, H, D]`` for vision) with family-layout tables
        ``[B, T, R]`` (``[N, R]`` for vision), slicing the rotary window the way the model does."""
        import torch

        fn = getattr(self.mod(), self.apply_fn)
        D, r = spec.head_dim, spec.resolved_rotary_dim
        if self.key == "qwen2_vl_vision":
            return fn(x, x, cos, sin)[0]
        if self.key == "pixtral":
            return fn(x, x, cos, sin, unsqueeze_dim=1)[0]
        if self.key == "gemma4":
            return fn(x, cos, sin, unsqueeze_dim=2)
        if self.key == "gptj":  # GPTJAttention: rotate [..., :rotary_dim], keep the rest
            return torch.cat([fn(x[..., :r], sin, cos), x[..., r:]], dim=-1)
        if self.key == "deepseek_v3":  # DeepseekV3Attention: q = cat([q_pass, q_rot]); rope part last
            rot = x[..., D - r :]
            if spec.pairing == "adjacent_in_half_out":
                y = self.mod().apply_rotary_pos_emb_interleave(rot, rot, cos, sin, unsqueeze_dim=2)[0]
            else:
                y = fn(rot, rot, cos, sin, unsqueeze_dim=2)[0]
            return torch.cat([x[..., : D - r], y], dim=-1)
        return fn(x, x, cos, sin, unsqueeze_dim=2)[0]

    def apply_qk(self, q: Any, k: Any, cos: Any, sin: Any, spec: RopeSpec, k_spec: RopeSpec | None = None) -> tuple[Any, Any]:
        """Rotate q and k in one call of the family's apply function, as its attention does (q and k
        may have different head counts; in DeepSeek V3 k is the rope part alone, ``k_spec``); families
        whose apply function takes one tensor (Gemma 4, GPT-J) are called once each."""
        import torch

        fn = getattr(self.mod(), self.apply_fn)
        if self.key in ("gemma4", "gptj"):
            return self.apply(q, cos, sin, spec), self.apply(k, cos, sin, k_spec or spec)
        if self.key == "qwen2_vl_vision":
            return fn(q, k, cos, sin)
        if self.key == "pixtral":
            return fn(q, k, cos, sin, unsqueeze_dim=1)
        if self.key == "deepseek_v3":  # q = cat([q_pass, q_rot]), k_pe alone or cat([k_pass, k_rot])
            r = spec.resolved_rotary_dim
            dq, dk = q.shape[-1], k.shape[-1]
            rq, rk = q[..., dq - r:], k[..., dk - r:]
            if spec.pairing == "adjacent_in_half_out":
                yq, yk = self.mod().apply_rotary_pos_emb_interleave(rq, rk, cos, sin, unsqueeze_dim=2)
            else:
                yq, yk = fn(rq, rk, cos, sin, unsqueeze_dim=2)
            return torch.cat([q[..., : dq - r], yq], dim=-1), torch.cat([k[..., : dk - r], yk], dim=-1)
        return fn(q, k, cos, sin, unsqueeze_dim=2)


_M = "transformers.models.{0}.modeling_{0}"

FAMILIES: dict[str, Family] = {
    f.key: f
    for f in (
        Family("llama", _M.format("llama"), "LlamaRotaryEmbedding", "apply_rotary_pos_emb", "cat"),
        Family("gpt_neox", _M.format("gpt_neox"), "GPTNeoXRotaryEmbedding", "apply_rotary_pos_emb", "cat", "first"),
        Family("glm", _M.format("glm"), "GlmRotaryEmbedding", "apply_rotary_pos_emb", "cat", "first"),
        Family("cohere", _M.format("cohere"), "CohereRotaryEmbedding", "apply_rotary_pos_emb", "interleave",
               notes="apply rotates in float32 and casts back"),
        Family("phi3", _M.format("phi3"), "Phi3RotaryEmbedding", "apply_rotary_pos_emb", "cat", "first"),
        Family("gemma3", _M.format("gemma3"), "Gemma3RotaryEmbedding", "apply_rotary_pos_emb", "cat",
               layer_type="full_attention"),
        Family("gemma4", _M.format("gemma4"), "Gemma4TextRotaryEmbedding", "apply_rotary_pos_emb", "cat",
               layer_type="full_attention"),
        Family("deepseek_v3", _M.format("deepseek_v3"), "DeepseekV3RotaryEmbedding", "apply_rotary_pos_emb",
               "cat", "last"),
        Family("qwen2_vl", _M.format("qwen2_vl"), "Qwen2VLRotaryEmbedding", "apply_rotary_pos_emb", "cat"),
        Family("qwen3_vl", _M.format("qwen3_vl"), "Qwen3VLTextRotaryEmbedding", "apply_rotary_pos_emb", "cat"),
        Family("qwen2_vl_vision", _M.format("qwen2_vl"), "Qwen2VLVisionRotaryEmbedding",
               "apply_rotary_pos_emb_vision", "cat", vision=True,
               notes="tables stay float32; apply rotates in float32 and casts back"),
        Family("pixtral", _M.format("pixtral"), "PixtralVisionRotaryEmbedding", "apply_rotary_pos_emb", "cat",
               vision=True),
        Family("gptj", _M.format("gptj"), "GPTJRotaryEmbedding", "apply_rotary_pos_emb", "pairs", "first_sliced",
               notes="theta fixed at 10000; sinusoid table of max_position_embeddings rows"),
    )
}
