"""Per-family layer rules of transformers 5.24 that a config states only through a family's convention.

- :data:`LAYER_PATTERNS`: config classes that build ``layer_types`` themselves from one integer key when the
  config gives no list (layer ``i`` is the ``every`` type when ``(i + offset) % k == 0``, else ``other``).
  The rules differ per family (AFMoE counts from 1, ModernBERT from 0), so each is read only for its
  model types, with its config class's default for ``k``.
- :data:`NOPE_LAYERS`: families whose attention (or model ``forward``) skips RoPE on every layer that is not
  a sliding-window layer, although nothing in the config says "NoPE" (AFMoE, Cohere 2, Flint, LaraMini,
  and EXAONE 4 / Kolibri while ``sliding_window`` is set).
- :data:`LAYER_THETAS`: families with a per-layer base ``layer_rope_theta`` (0 = NoPE).
- :data:`DEFAULT_LAYER_TYPES`: families whose config class builds ``layer_types`` from a fixed rule of the
  layer index when the config gives no list and no key (Flint, LaraMini, LFM3, MiniMax, OLMo-Hybrid,
  NeoMME); ``tests/roperef/hf/test_hf_crosscheck.py`` compares every family's result with transformers' own.
- :data:`LAYER_INDEX_KEYS`: keys listing layer indices that families read: ``attn_layer_indices`` (Bamba:
  attention at those indices, Mamba elsewhere), ``full_attn_idxs`` (LFM2: attention there, convolution
  elsewhere) and ``cross_attention_layers`` (Mllama: cross-attention layers, no RoPE). Other families' configs may carry the key (Falcon-H1 publishes
  ``attn_layer_indices: null``) but transformers ignores it there; so does roperef (noted).

Each entry names the transformers source it mirrors; ``tests/roperef/hf/test_hf_configs.py`` checks them on real
configs and ``roperef spec --against transformers`` probes each layer's attention on the meta device.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["DEFAULT_LAYER_TYPES", "LAYER_INDEX_KEYS", "LAYER_PATTERNS", "LAYER_THETAS", "NOPE_LAYERS", "LayerPattern", "LayerThetas", "NopeLayers"]


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
    """Only layers of type ``rope_type`` apply RoPE (the others are NoPE); with ``unless_null``, only while that
    config key is set (null: every layer applies RoPE). ``dense_prefix_rope``: Cohere2-MoE's exception, a layer
    whose MLP is dense applies RoPE while ``prefix_dense_sliding_window_pattern`` is 1."""

    rope_type: str
    unless_null: str | None
    source: str
    dense_prefix_rope: bool = False


@dataclass(frozen=True)
class LayerThetas:
    """``layer_rope_theta``: one base per layer, ``0`` = NoPE (Granite-SWA, Muse). Absent: every layer at the
    config's theta, or, with ``nope_every`` k, NoPE where ``(n - 1 - i) % k == 0`` (Muse's default)."""

    nope_every: int | None
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
_SLIDING_ONLY = ("modeling_{}.py {}Attention.forward: 'if self.sliding_window is not None: apply_rotary_pos_emb', "
                 "self.sliding_window set for sliding_attention layers only")
_S = "sliding_attention"
NOPE_LAYERS: Mapping[str, NopeLayers] = MappingProxyType({
    "afmoe": NopeLayers(_S, None, "modeling_afmoe.py AfmoeAttention.forward: 'if self.is_local_attention: "
                                  "apply_rotary_pos_emb'"),
    "exaone4": NopeLayers(_S, "sliding_window", _EXAONE.format("exaone4", "Exaone4")),
    "exaone_moe": NopeLayers(_S, "sliding_window", _EXAONE.format("exaone_moe", "ExaoneMoe")),
    "kolibri1": NopeLayers(_S, "sliding_window", _EXAONE.format("kolibri1", "Kolibri1")),
    "cohere2": NopeLayers(_S, None, _SLIDING_ONLY.format("cohere2", "Cohere2")),
    "flint": NopeLayers(_S, None, _SLIDING_ONLY.format("flint", "Flint")),
    "cohere2_moe": NopeLayers(_S, None, _SLIDING_ONLY.format("cohere2_moe", "Cohere2Moe") + " or self.force_rope "
                                        "(mlp_layer_types[i] == 'dense' and prefix_dense_sliding_window_pattern == 1)",
                              dense_prefix_rope=True),
    "lara_mini": NopeLayers(_S, None, "modeling_lara_mini.py LaraMiniModel.forward: position_embeddings only if "
                                      "layer_type == 'sliding_attention', else None (NoPE)"),
})

_THETAS = "configuration_{}.py: layer_rope_theta, per-layer base, 0 = NoPE; modeling passes position_embeddings=None there"
LAYER_THETAS: Mapping[str, LayerThetas] = MappingProxyType({
    "granite_swa": LayerThetas(None, _THETAS.format("granite_swa")),
    "granitemoe_swa": LayerThetas(None, _THETAS.format("granitemoe_swa")),
    "muse_spark_text": LayerThetas(4, _THETAS.format("muse_spark") + "; default NoPE where (n - 1 - i) % 4 == 0"),
    "muse_glimmer_text": LayerThetas(4, _THETAS.format("muse_glimmer") + "; default NoPE where (n - 1 - i) % 4 == 0"),
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


@dataclass(frozen=True)
class DefaultLayers:
    """``layer_types[i] = rule(i, n)`` for a config without a list (``n`` layers), as the config class builds it."""

    rule: Callable[[int, int], str]
    source: str


def _flint(i: int, n: int) -> str:
    return "full_attention" if i < 2 or i % 4 == 1 or i == n - 1 else "sliding_attention"


def _lara_mini(i: int, n: int) -> str:
    return ("linear_attention", "sliding_attention", "linear_attention", "full_attention", "sliding_attention")[i % 5]


def _lfm3(i: int, n: int) -> str:
    return "full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv"


def _minimax(i: int, n: int) -> str:
    return "full_attention" if (i + 1) % 2 else "linear_attention"


def _olmo_hybrid(i: int, n: int) -> str:
    return "full_attention" if i % 4 == 3 or (n < 4 and i == n - 1) else "linear_attention"


def _neomme(i: int, n: int) -> str:
    return "full_attention" if (i + 1) % 6 == 0 or i == n - 1 else "sliding_attention"


DEFAULT_LAYER_TYPES: Mapping[str, DefaultLayers] = MappingProxyType({
    "flint": DefaultLayers(_flint, "configuration_flint.py: full on the first two layers, every fourth (i % 4 == 1) "
                                   "and the last"),
    "lara_mini": DefaultLayers(_lara_mini, "configuration_lara_mini.py: the released period-5 pattern"),
    "lfm3": DefaultLayers(_lfm3, "configuration_lfm3.py: full at i % 4 == 2, sliding at i % 4 == 0 (i > 0), conv "
                                 "elsewhere"),
    "minimax": DefaultLayers(_minimax, "configuration_minimax.py: full at even i, linear attention at odd i"),
    "olmo_hybrid": DefaultLayers(_olmo_hybrid, "configuration_olmo_hybrid.py: full at i % 4 == 3 (at least one: "
                                               "the last), linear attention elsewhere"),
    "neomme": DefaultLayers(_neomme, "configuration_neomme.py: full at (i + 1) % 6 == 0 and the last layer"),
})
