"""The documented exceptions to roperef's generic config rules, each mirroring a transformers source.

- :class:`HFQuirks`: the per-model-type behaviours of transformers 5.24 that change the maths. The
  family sets default to :mod:`roperef.hf.families` (generated from the installed transformers source,
  which names, per model type, the apply function its attention calls) plus the remote-code families of
  :data:`REMOTE_FAMILIES`. Override a field to model another engine or version.
- :data:`MODEL_DEFAULTS`: the config-class defaults the generated tables (:mod:`roperef.hf.config_classes`)
  cannot hold (a default a class pops from its kwargs, a remote family's, a vision tower's).
- :data:`REMOTE_FAMILIES`: model types transformers does not ship (``trust_remote_code`` families) whose
  RoPE roperef knows, with the remote modeling file each entry mirrors.
- :data:`VISION_FORMS_BY_TYPE`: vision model types whose 2-D RoPE roperef models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from . import config_classes as cc
from . import families as fam

__all__ = ["HFQuirks", "MODEL_DEFAULTS", "REMOTE_FAMILIES", "VISION_FORMS_BY_TYPE", "RemoteFamily"]

_F = frozenset


def _pairing_set(kind: str) -> frozenset[str]:
    return _F(mt for mt, (pairing, _default, _src) in fam.ROPE_FAMILIES.items() if pairing == kind)


@dataclass(frozen=True)
class RemoteFamily:
    """A remote-code family: its attention's pairing, where that was read, and the transformers model type
    its code copies (``None``: none; ``roperef spec --against transformers`` compares with that one)."""

    pairing: str
    source: str
    in_library: str | None = None
    theta: float | None = None  # the code's base when the config has none
    alibi_unless_hidden_size: int | None = None  # the code uses ALiBi (no RoPE) unless hidden_size is this
    refuse: str | None = None  # why no fixed spec describes this family's RoPE (refused, naming it)


#: Remote-code model types (not in transformers) and the modeling file each mirrors.
REMOTE_FAMILIES: Mapping[str, RemoteFamily] = MappingProxyType({
    "chatglm": RemoteFamily("adjacent", "THUDM/glm-4-9b-chat modeling_chatglm.py apply_rotary_pos_emb: "
                                        "x.reshape(..., rot_dim // 2, 2) (adjacent pairs), on the first half of "
                                        "each head (rotary_dim = kv_channels // 2)"),
    "kimi_k2": RemoteFamily("adjacent_in_half_out", "moonshotai/Kimi-K2-Instruct modeling_deepseek.py (DeepSeek V3 "
                                                    "code): q.view(b, h, s, d // 2, 2).transpose(4, 3) before "
                                                    "rotate_half", "deepseek_v3"),
    "hunyuan": RemoteFamily("half", "tencent/Hunyuan-A13B-Instruct modeling_hunyuan.py: Llama's rotate_half; "
                                    "transformers ports it as hunyuan_v1_moe", "hunyuan_v1_moe"),
    "minimax_m3": RemoteFamily("half", "MiniMaxAI/MiniMax-M3 remote code, ported to transformers as the text "
                                       "model of minimax_m3_vl (rotate_half on the first rotary_dim channels)",
                               "minimax_m3_vl_text"),
    "nemotron-nas": RemoteFamily("half", "nvidia/Llama-3_3-Nemotron-Super-49B-v1 modeling_decilm.py: Llama's "
                                         "rotate_half apply_rotary_pos_emb", "llama"),
    "mimo": RemoteFamily("half", "XiaomiMiMo/MiMo-7B-Base modeling_mimo.py: Qwen2's rotate_half "
                                 "apply_rotary_pos_emb", "qwen2"),
    "qwen": RemoteFamily("half", "Qwen/Qwen-7B modeling_qwen.py apply_rotary_pos_emb: rotate_half on the first "
                                 "rotary_pct of each head"),
    "internlm2": RemoteFamily("half", "internlm/internlm2-chat-7b modeling_internlm2.py: Llama's rotate_half",
                              "llama"),
    "baichuan": RemoteFamily("half", "baichuan-inc/Baichuan2-7B-Chat modeling_baichuan.py RotaryEmbedding(head_dim, "
                                     "base=10000) and rotate_half; the 13B models (hidden_size 5120) use ALiBi "
                                     "(vLLM baichuan.py: ROPE if hidden_size == 4096 else ALIBI)",
                             theta=10000.0, alibi_unless_hidden_size=4096),
    "internlm": RemoteFamily("half", "internlm/internlm-chat-7b modeling_internlm.py InternLMRotaryEmbedding(head_dim, "
                                     "base=10000) and Llama's rotate_half", "llama", theta=10000.0),
    "minicpm": RemoteFamily("half", "openbmb/MiniCPM-2B-sft-bf16 configuration_minicpm.py rope_theta=10000 default, "
                                    "modeling_minicpm.py Llama's rotate_half", "llama", theta=10000.0),
    "orion": RemoteFamily("half", "OrionStarAI/Orion-14B-Chat modeling_orion.py (vLLM orion.py): Llama's rotate_half "
                                  "on the whole head", "llama"),
    "bailing_moe": RemoteFamily("half", "inclusionAI/Ling models/modeling_bailing_moe.py: base = rope_theta, "
                                        "rotate_half on head_dim = hidden_size // num_attention_heads"),
    "telechat": RemoteFamily("half", "Tele-AI/Telechat models/7B/modeling_telechat.py RotaryEmbedding",
                             refuse="its remote code rescales the base per sequence length (ntk_alpha from "
                                    "log2(max(seq_len, training_seqlen) / 4096), hard-coded in modeling_telechat.py), "
                                    "which no fixed spec describes; supply rope_theta (--set) for the length you "
                                    "run at"),
    "phi-msft": RemoteFamily("half", "microsoft/phi-2 (2023 remote code) modeling_phi.py RotaryEmbedding(base=10000) "
                                     "and _apply_rotary_emb: x_rot[..., :rotary_dim // 2] and [..., rotary_dim // 2:] "
                                     "halves", theta=10000.0),
})

#: vision model type -> 2-D RoPE form roperef models (``RopeSpec.vision``).
VISION_FORMS_BY_TYPE: Mapping[str, str] = MappingProxyType({
    "pixtral": "pixtral",
    "qwen2_vl_vision": "qwen_vl",
    "qwen2_5_vl_vision": "qwen_vl",
    "qwen3_vl_vision": "qwen_vl",
    "qwen3_vl_moe_vision": "qwen_vl",
    # transformers' Qwen3_5VisionRotaryEmbedding, VisionAttention and apply_rotary_pos_emb_vision are
    # Qwen3-VL's (modeling_qwen3_5.py; only the deepstack mergers differ)
    "qwen3_5_vision": "qwen_vl",
    "qwen3_5_moe_vision": "qwen_vl",
})


@dataclass(frozen=True)
class HFQuirks:
    """Model-specific transformers (5.24) behaviours that change the maths; override to model another engine.

    - ``default_honours_partial_rotary``: model types whose ``default`` rope init reads
      ``partial_rotary_factor`` (``d = int(D*rho)``; :data:`roperef.hf.families.PARTIAL_IN_DEFAULT` plus
      the GLM/Phi/Qwen3.5 wrappers). Every other *transformers* model type ignores it under ``default``
      (Llama, Mistral, Qwen2/3, Gemma 1-3, DeepSeek, ...). Scaled types honour it in every model
      (``ROPE_INIT_FUNCTIONS``), and so does any model type transformers does not ship (generic rule).
    - ``adjacent_pairing``: model types whose apply pairs channels ``(2j, 2j+1)`` (probed; GPT-J
      ``rotate_every_two``, GLM ``rotate_half_llm``, Cohere, ERNIE 4.5, complex ``view_as_complex`` of
      Llama 4 / DeepSeek V2, ...). GLM-4.5 / GLM-4.5V (``glm4_moe``, ``glm4v_moe``) use ``half``.
    - ``rope_interleave_models``: model types whose attention picks DeepSeek V3's adjacent-in / half-out
      form from ``config.rope_interleave`` and whose config class defaults the flag to ``True``. For every
      other model type a ``rope_interleave`` key is read the same way (generic), with no default.
    - ``always_rope_interleave``: model types whose attention always uses the adjacent-in / half-out form
      (GLM-5 ``glm_moe_dsa``, DeepSeek V3.2, LongCat-Flash, ...), whatever ``rope_interleave`` says.
    - ``yarn_means_longrope``: model types where a legacy ``yarn`` type is LongRoPE (Phi-3).
      ``su`` means ``longrope`` for every model.
    - ``dynamic_alpha_means_ntk``: ``dynamic`` with a non-zero ``alpha`` is fixed NTK (HunYuan).
    - ``always_interleaved_mrope``: model types whose mRoPE is interleaved whatever
      ``mrope_interleaved`` says (Qwen3-VL, Qwen3.5).
    - ``top_level_original_max_wins``: a top-level ``original_max_position_embeddings`` overrides the one
      inside the rope parameters (transformers' Phi-3 priority rule in ``standardize_rope_params``).
    - ``original_max_falls_back_to_max``: transformers fills a missing L0 for yarn/llama3/longrope with
      ``max_position_embeddings``; off by default here (docs/spec.md section 7: L0 is required).
    - ``yarn_null_factor_is_ratio``: yarn ``"factor": null`` means ``M / L0`` (transformers).
    - ``zero_beta_is_unset``: yarn ``beta_fast``/``beta_slow`` equal to 0 mean the defaults 32/1
      (transformers' ``get("beta_fast") or 32``).
    - ``gptj_theta``: GPT-J / CodeGen hard-code theta 10000 and ignore ``rope_theta`` (``None``: read it).
    - ``pixtral_head_dim_from_hidden``: Pixtral vision head_dim is ``hidden_size // num_attention_heads``
      (the config's ``head_dim`` key is overwritten).
    - ``head_dim_from_hidden``: model type -> (k, key, always) for the config classes that set the head width
      (``key``) to ``k * hidden_size // num_attention_heads`` themselves: always (a width given under ``key`` is
      overwritten), or when the config gives none, where ``k`` is not 1 (generated,
      :data:`roperef.hf.config_classes.HEAD_DIM_FROM_HIDDEN`: Zamba2's ``attention_head_dim``, k = 2).
    """

    default_honours_partial_rotary: frozenset[str] = fam.PARTIAL_IN_DEFAULT | _F({
        "glm4v", "glm4v_text", "glm4v_moe", "glm4v_moe_text", "qwen3_5", "qwen3_5_moe", "gpt_neox_japanese",
        "phi4_multimodal", "recurrent_gemma",
    })
    adjacent_pairing: frozenset[str] = _pairing_set("adjacent") | _F({
        "chatglm", "glm4v", "glm4v_text", "llama4", "glm_ocr",
    })
    rope_interleave_models: frozenset[str] = _F(
        mt for mt, (pairing, default, _src) in fam.ROPE_FAMILIES.items() if pairing == "rope_interleave" and default
    ) | _F({"kimi_k2"})
    always_rope_interleave: frozenset[str] = _pairing_set("adjacent_in_half_out")
    yarn_means_longrope: frozenset[str] = _F({"phi3"})
    dynamic_alpha_means_ntk: bool = True
    always_interleaved_mrope: frozenset[str] = fam.ALWAYS_INTERLEAVED_MROPE | _F({
        "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe",
    })
    top_level_original_max_wins: bool = True
    original_max_falls_back_to_max: bool = False
    yarn_null_factor_is_ratio: bool = True
    zero_beta_is_unset: bool = True
    gptj_theta: float | None = 10000.0
    pixtral_head_dim_from_hidden: bool = True
    head_dim_from_hidden: Mapping[str, tuple[int, str, bool]] = field(default_factory=lambda: cc.HEAD_DIM_FROM_HIDDEN)


def _ro(**kw: Any) -> Mapping[str, Any]:
    return MappingProxyType(kw)


#: transformers 5.24 ``*Config`` defaults for keys a config may omit, by model type (merged into MODEL_DEFAULTS).
_DEFAULTS: dict[str, Mapping[str, Any]] = {
    # (a transformers family's sizes and RoPE parameters come from the generated config_classes tables; what is
    # here is what they cannot hold: a default popped from the kwargs, a remote family's, a vision tower's)
    "gemma3_text": _ro(sliding_window_pattern=6),
    # configuration_{gemma4,diffusion_gemma,embedding_gemma2,gemma4_unified}.py: kwargs.pop("global_head_dim", 512)
    "gemma4_text": _ro(global_head_dim=512),
    "diffusion_gemma_text": _ro(global_head_dim=512),
    "embedding_gemma2_text": _ro(global_head_dim=512),
    "gemma4_unified_text": _ro(global_head_dim=512),
    "gptj": _ro(rotary_dim=64, n_positions=2048, n_embd=4096, n_head=16),
    "kimi_k2": _ro(qk_rope_head_dim=64),
    "glm4v_text": _ro(mrope_section=(8, 12, 12)),
    "glm4v_moe_text": _ro(mrope_section=(8, 12, 12)),
    "qwen3_vl_text": _ro(mrope_section=(24, 20, 20)),
    "chatglm": _ro(rope_ratio=1.0),
    "llama4_text": _ro(no_rope_layer_interval=4),
    # configuration_mistral_large4.py: no_rope_layers built with kwargs.pop("no_rope_layer_interval", 4)
    "mistral_large4_text": _ro(no_rope_layer_interval=4),
    "smollm3": _ro(no_rope_layer_interval=4),
    # configuration_recurrent_gemma.py: block_types default (recurrent, recurrent, attention), cycled over the
    # layers (published configs that spell it "_block_types" get this default in transformers 5.24)
    "recurrent_gemma": _ro(block_types=("recurrent", "recurrent", "attention")),
    "pixtral": _ro(hidden_size=1024, num_attention_heads=16, rope_theta=10000.0),
    "qwen2_vl_vision": _ro(embed_dim=1280, num_heads=16, rope_theta=10000.0),
    "qwen2_5_vl_vision": _ro(hidden_size=3584, num_heads=16, rope_theta=10000.0),
    "qwen3_vl_vision": _ro(hidden_size=1152, num_heads=16, rope_theta=10000.0),
    "qwen3_vl_moe_vision": _ro(hidden_size=1152, num_heads=16, rope_theta=10000.0),
    "qwen3_5_vision": _ro(hidden_size=1152, num_heads=16, rope_theta=10000.0),
    "qwen3_5_moe_vision": _ro(hidden_size=1152, num_heads=16, rope_theta=10000.0),
}
#: transformers' config classes that build layer_types as "full_attention if (i + 1) % P == 0 else sliding" when
#: a config gives no list (their __post_init__; P is the class's own unless the config says it); checked against
#: transformers by tests/roperef/hf/test_hf_crosscheck.py::test_layer_types_of_a_config_without_the_list
_SLIDING_PATTERN = {
    "cohere2": 4, "gemma2": 2, "vaultgemma": 2, "t5_gemma_module": 2, "gpt_oss": 2, "ultrabert": 3, "olmo3": 4,
    "muse_glimmer_text": 4, "dory": 4, "kolibri1": 5, "gemma3n_text": 5, "gemma4_text": 6, "gemma4_unified_text": 6,
    "diffusion_gemma_text": 6, "embedding_gemma2_text": 6, "t5gemma2_text": 6, "t5gemma2_decoder": 6,
}
#: transformers 5.24 ``*Config`` defaults for keys a config may omit (only those that matter for RoPE).
MODEL_DEFAULTS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    mt: _ro(**{**_DEFAULTS.get(mt, {}), **({"sliding_window_pattern": _SLIDING_PATTERN[mt]} if mt in _SLIDING_PATTERN else {})})
    for mt in sorted(set(_DEFAULTS) | set(_SLIDING_PATTERN))
})
