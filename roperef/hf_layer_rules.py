"""Per-family layer rules of transformers 5.24 that a config states only through a family's convention.

- :data:`LAYER_PATTERNS`: config classes that build ``layer_types`` themselves from one integer key when the
  config gives no list (layer ``i`` is the ``every`` type when ``(i + offset) % k == 0``, else ``other``).
  The rules differ per family (AFMoE counts from 1, ModernBERT from 0), so each is read only for its
  model types, with its config class's default for ``k``.
- :data:`NOPE_LAYERS`: families whose attention skips RoPE on some layers although the layer is attention
  and nothing in the config says "NoPE" (the condition is in the attention's ``forward``).
- :data:`LAYER_INDEX_KEYS`: keys listing layer indices that families read: ``attn_layer_indices`` (Bamba:
  attention at those indices, Mamba elsewhere), ``full_attn_idxs`` (LFM2: attention there, convolution
  elsewhere) and ``cross_attention_layers`` (Mllama: cross-attention layers, no RoPE). Other families' configs may carry the key (Falcon-H1 publishes
  ``attn_layer_indices: null``) but transformers ignores it there; so does roperef (noted).

Each entry names the transformers source it mirrors; ``tests/test_hf_configs.py`` checks them on real
configs and ``roperef spec --against transformers`` probes each layer's attention on the meta device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["LAYER_PATTERNS", "LAYER_INDEX_KEYS", "NOPE_LAYERS", "LayerPattern", "NopeLayers"]


@dataclass(frozen=True)
class LayerPattern:
    """``layer_types[i] = every if (i + offset) % config[key] == 0 else other`` (``key`` absent: ``default``)."""

    key: str
    default: int
    offset: int
    every: str
    other: str
    source: str


@dataclass(frozen=True)
class NopeLayers:
    """Layers of ``layer_type`` apply no RoPE; with ``unless_null``, only while that config key is set."""

    layer_type: str
    unless_null: str | None
    source: str


_QWEN_NEXT = "configuration_{}.py __post_init__: 'linear_attention' if (i + 1) % full_attention_interval else 'full_attention'"
_INTERVAL = {mt: LayerPattern("full_attention_interval", 4, 1, "full_attention", "linear_attention", _QWEN_NEXT.format(src))
             for mt, src in (("qwen3_next", "qwen3_next"), ("qwen3_5", "qwen3_5"), ("qwen3_5_text", "qwen3_5"),
                             ("qwen3_5_moe", "qwen3_5_moe"), ("qwen3_5_moe_text", "qwen3_5_moe"))}
_MODERNBERT = LayerPattern("global_attn_every_n_layers", 3, 0, "full_attention", "sliding_attention",
                           "configuration_modernbert.py __post_init__: 'sliding_attention' if i % global_attn_every_n_layers "
                           "else 'full_attention'")

LAYER_PATTERNS: Mapping[str, LayerPattern] = MappingProxyType({
    **_INTERVAL,
    "qwen4_exp_text": LayerPattern("full_attention_interval", 4, 1, "indexed_attention", "linear_attention",
                                   "configuration_qwen4_exp.py __post_init__: 'linear_attention' if (i + 1) % "
                                   "full_attention_interval else 'indexed_attention'"),
    "afmoe": LayerPattern("global_attn_every_n_layers", 4, 1, "full_attention", "sliding_attention",
                          "configuration_afmoe.py AfmoeConfig.__post_init__: 'sliding_attention' if (i + 1) % "
                          "global_attn_every_n_layers else 'full_attention'"),
    "bailing_hybrid": LayerPattern("layer_group_size", 6, 1, "full_attention", "linear_attention",
                                   "configuration_bailing_hybrid.py __post_init__: 'full_attention' if (i + 1) % "
                                   "layer_group_size == 0 else 'linear_attention'"),
    "modernbert": _MODERNBERT,
    "modernbert-decoder": _MODERNBERT,
})

_EXAONE = ("modeling_{}.py {}Attention.forward: 'if self.sliding_window is None or self.is_sliding: "
           "apply_rotary_pos_emb' (global NoPE for hybrid attention)")
NOPE_LAYERS: Mapping[str, NopeLayers] = MappingProxyType({
    "afmoe": NopeLayers("full_attention", None, "modeling_afmoe.py AfmoeAttention.forward: 'if "
                                                "self.is_local_attention: apply_rotary_pos_emb'"),
    "exaone4": NopeLayers("full_attention", "sliding_window", _EXAONE.format("exaone4", "Exaone4")),
    "exaone_moe": NopeLayers("full_attention", "sliding_window", _EXAONE.format("exaone_moe", "ExaoneMoe")),
})

#: key -> (model types that read it, what the listed layers are).
LAYER_INDEX_KEYS: Mapping[str, tuple[frozenset[str], str]] = MappingProxyType({
    "attn_layer_indices": (frozenset({"bamba"}), "configuration_bamba.py: attention at these indices, Mamba elsewhere"),
    "full_attn_idxs": (frozenset({"lfm2"}), "configuration_lfm2.py Lfm2Config.__post_init__: 'full_attention' if i in "
                                             "full_attn_idxs else 'conv' (absent: every layer)"),
    "cross_attention_layers": (frozenset({"mllama", "mllama_text_model"}),
                               "modeling_mllama.py: MllamaCrossAttentionDecoderLayer at these indices; its "
                               "MllamaTextCrossAttention applies no RoPE"),
})
