"""Per-layer truth of a HF config: each decoder layer's attention type, and whether it applies RoPE.

Layer types, in order of authority (the first the config gives):

1. ``layer_types``: one name per layer (``full_attention``, ``sliding_attention``, ``chunked_attention``,
   ``linear_attention``, DeepSeek V4's ``compressed_sparse_attention`` ...);
2. ``hybrid_layer_pattern``: 0/1 per layer, 0 = ``full_attention``, 1 = ``sliding_attention`` (MiMo-V2);
3. ``compress_ratios``: 0/4/128 per layer = ``sliding_attention`` / ``compressed_sparse_attention`` /
   ``heavily_compressed_attention`` (DeepSeek V4, as transformers' ``_COMPRESS_RATIO_TO_LAYER_TYPE``);
4. ``hybrid_override_pattern``: one character per layer, ``*`` attention, ``M`` Mamba, ``-``/``E`` MLP/MoE
   (Nemotron-H); ``layers_block_type``: ``attention`` / ``mamba`` ... per layer (Jamba-like);
   ``block_types`` repeated over the layers (RecurrentGemma: ``attention`` = sliding, ``recurrent``);
   ``attn_layer_indices`` (Bamba only: attention at those indices, Mamba elsewhere); ``full_attn_idxs``
   (LFM2 only: attention at those indices, convolution elsewhere);
5. a family's own one-key pattern (:data:`roperef.hf.layer_rules.LAYER_PATTERNS`: Qwen3-Next / Qwen3.5
   ``full_attention_interval``, AFMoE / ModernBERT ``global_attn_every_n_layers``, Bailing-Hybrid
   ``layer_group_size``, with the config class's default when the key is absent);
6. a family's fixed rule of the index (:data:`roperef.hf.layer_rules.DEFAULT_LAYER_TYPES`), else
   ``sliding_window_pattern`` P (with a ``sliding_window``): layer ``i`` is ``full_attention`` when
   ``(i + 1) % P == 0``, else ``sliding_attention`` (transformers' Gemma 3 / Cohere 2 rule);
7. the rule the family's config class builds them by when a config gives none, generated
   (:data:`roperef.hf.config_classes.LAYER_TYPES_RULES`: Beam, MiMo-V2, dots3, DeepSeek V4, Llama 4, ...);
8. otherwise every layer is ``full_attention``.

A layer has no RoPE when its type is not attention (:data:`NON_ATTENTION_TYPES`), when its type's
per-layer-type ``rope_parameters`` entry is ``null``, or when ``no_rope_layers[i]`` is 0 (Llama 4 /
SmolLM3: the list holds 1 for layers that *use* RoPE; without the list, ``no_rope_layer_interval`` k
makes every k-th layer NoPE: ``use = (i + 1) % k != 0``, transformers' default), when the layer is in
Mllama's ``cross_attention_layers``, or when the family's attention skips RoPE on that layer type
(:data:`roperef.hf.layer_rules.NOPE_LAYERS`: AFMoE and EXAONE 4 full-attention layers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import bad
from . import config_classes as cc
from .keys import Level, number
from .layer_rules import DEFAULT_LAYER_TYPES, LAYER_INDEX_KEYS, LAYER_PATTERNS, LAYER_THETAS, NOPE_LAYERS

__all__ = ["LAYER_NAMES", "NON_ATTENTION_TYPES", "layer_types", "reads_layer_index_key", "rope_flags"]

#: Layer-type names recognised as attention layers without a declaration.
LAYER_NAMES = frozenset({"full_attention", "sliding_attention", "chunked_attention"})
#: Layer types without attention, hence without RoPE.
NON_ATTENTION_TYPES = frozenset({
    "linear_attention", "mamba", "mamba2", "conv", "ssm", "recurrent", "mlp", "moe", "deltanet", "gated_deltanet",
    "kda", "lightning_attention", "rwkv", "hyena",
})
_COMPRESS = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
_PATTERN = {"*": "full_attention", "M": "mamba", "-": "mlp", "E": "moe"}


def _count(c: Level) -> int | None:
    """Decoder layers: ``num_hidden_layers`` / ``n_layer`` / ``num_layers`` / ``n_layers`` (DBRX, MPT). LongCat-Flash stacks two
    attention blocks per ``num_layers`` (transformers' LongcatFlashConfig.num_hidden_layers = 2 * num_layers)."""
    if c.model_type == "longcat_flash" and c.has("num_layers") and not c.given("num_hidden_layers"):
        return 2 * c.need_int("num_layers")
    for name in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
        if c.has(name):
            return c.int_(name)
    return None


def layer_types(c: Level) -> tuple[str, ...]:
    """The attention type of every decoder layer (empty when the config gives no layer count or list)."""
    n = _count(c)
    declared = c.str_list("layer_types")
    if declared is not None:
        if n is not None and len(declared) < n:
            bad(c.key("layer_types"), f"<{len(declared)} entries>", f"must have num_hidden_layers={n} entries")
        return tuple(declared[:n] if n is not None else declared)
    pattern = c.int_list("hybrid_layer_pattern")
    if pattern is not None:
        for i, v in enumerate(pattern):
            if v not in (0, 1):
                bad(f"{c.key('hybrid_layer_pattern')}[{i}]", v, "must be 0 (full attention) or 1 (sliding window)")
        return tuple("full_attention" if v == 0 else "sliding_attention" for v in pattern[:n])
    ratios = c.int_list("compress_ratios")
    if ratios is not None:
        for i, v in enumerate(ratios):
            if v not in _COMPRESS:
                bad(f"{c.key('compress_ratios')}[{i}]", v, f"must be one of {sorted(_COMPRESS)}")
        return tuple(_COMPRESS[v] for v in ratios[:n])
    text = c.raw("hybrid_override_pattern")
    if text is not None:
        if not isinstance(text, str):
            bad(c.key("hybrid_override_pattern"), text, "must be a string of M, *, - and E", TypeError)
        for i, ch in enumerate(text):
            if ch not in _PATTERN:
                bad(f"{c.key('hybrid_override_pattern')}[{i}]", ch, "must be one of M (Mamba), * (attention), - (MLP), E (MoE)")
        return tuple(_PATTERN[ch] for ch in text)
    blocks = c.str_list("layers_block_type")
    if blocks is not None:
        return tuple("full_attention" if b == "attention" else b for b in blocks[:n])
    if n is None:
        return ()
    cycle = c.str_list("block_types")
    if cycle:  # RecurrentGemma: the list repeats over the layers; "attention" blocks are local (sliding)
        names = {"attention": "sliding_attention", "recurrent": "linear_attention"}
        return tuple(names.get(cycle[i % len(cycle)], cycle[i % len(cycle)]) for i in range(n))
    # Bamba: attention at attn_layer_indices (null: none), Mamba elsewhere; LFM2: full_attn_idxs, convolution elsewhere
    # (Bamba's layers_block_type: "attention" only at listed indices, so an absent list means none; LFM2 without
    # full_attn_idxs keeps every layer full attention)
    for key, elsewhere in (("attn_layer_indices", "mamba"), ("full_attn_idxs", "conv")):
        if (key in c.data or key == "attn_layer_indices") and reads_layer_index_key(c, key):
            at = set(c.int_list(key, minimum=0) or [])
            return tuple("full_attention" if i in at else elsewhere for i in range(n))
    rule = LAYER_PATTERNS.get(c.model_type)
    if rule is not None:
        k = c.int_(rule.key, rule.default) or rule.default
        return tuple(rule.every if (i + rule.offset) % k == 0 else rule.other for i in range(n))
    default = DEFAULT_LAYER_TYPES.get(c.model_type)
    if default is not None:
        return tuple(default.rule(i, n) for i in range(n))
    period = c.raw("sliding_window_pattern")
    if period is not None and c.raw("sliding_window") is not None:
        p = c.need_int("sliding_window_pattern")
        return tuple("full_attention" if (i + 1) % p == 0 else "sliding_attention" for i in range(n))
    built = cc.LAYER_TYPES_RULES.get(c.model_type)
    if built is not None:  # the rule the family's config class builds layer_types by (generated)
        return _class_rule(built, n)
    return ("full_attention",) * n


def _class_rule(rule: tuple[Any, ...], n: int) -> tuple[str, ...]:
    """Layer types by a generated rule ``(period, offset, every, other, first_k, first, last)``
    (:data:`roperef.hf.config_classes.LAYER_TYPES_RULES`)."""
    period, offset, every, other, first_k, first, last = rule
    out = [every if period and (i + offset) % period == 0 else other for i in range(n)]
    for i in range(min(first_k, n)):
        out[i] = first
    if last is not None and n:
        out[-1] = last
    return tuple(out)


def rope_flags(c: Level, types: tuple[str, ...]) -> tuple[bool, ...]:
    """Per layer: does it apply RoPE at all (before per-type ``null`` entries are considered)."""
    n = len(types)
    use = c.int_list("no_rope_layers")
    if use is not None and len(use) not in (0, n):
        bad(c.key("no_rope_layers"), f"<{len(use)} entries>", f"must have one 0/1 entry per layer ({n})")
    if use:
        for i, v in enumerate(use):
            if v not in (0, 1):
                bad(f"{c.key('no_rope_layers')}[{i}]", v, "must be 1 (layer uses RoPE) or 0 (NoPE layer)")
        flags = [bool(v) for v in use]
    elif c.has("no_rope_layer_interval"):
        k = c.need_int("no_rope_layer_interval")
        flags = [(i + 1) % k != 0 for i in range(n)]
    else:
        flags = [True] * n
    if reads_layer_index_key(c, "cross_attention_layers"):  # Mllama: cross-attention layers apply no RoPE
        for i in c.int_list("cross_attention_layers", minimum=0) or []:
            if i < n:
                flags[i] = False
    nope = NOPE_LAYERS.get(c.model_type)
    if nope is not None and (nope.unless_null is None or c.raw(nope.unless_null) is not None):
        forced = _dense_prefix_rope(c, n) if nope.dense_prefix_rope else [False] * n
        flags = [f and (t == nope.rope_type or force) for f, t, force in zip(flags, types, forced)]
    theta_flags = _layer_theta_flags(c, n)
    if theta_flags is not None:
        flags = [f and use for f, use in zip(flags, theta_flags)]
    return tuple(f and t not in NON_ATTENTION_TYPES for f, t in zip(flags, types))


def _dense_prefix_rope(c: Level, n: int) -> list[bool]:
    """Cohere2-MoE's ``force_rope``: the layer's MLP is dense and ``prefix_dense_sliding_window_pattern`` is 1."""
    if (c.int_("prefix_dense_sliding_window_pattern") or 1) != 1:
        return [False] * n
    mlp = c.str_list("mlp_layer_types")
    if mlp is None:
        k = c.int_("first_k_dense_replace", minimum=0) or 0
        return [i < k for i in range(n)]
    return [i < len(mlp) and mlp[i] == "dense" for i in range(n)]


def _layer_theta_flags(c: Level, n: int) -> list[bool] | None:
    """Per layer of a :data:`LAYER_THETAS` family: is its ``layer_rope_theta`` base non-zero (0 = NoPE); each base
    is checked as a number. None for other families."""
    rule = LAYER_THETAS.get(c.model_type)
    if rule is None:
        return None
    given = c.raw("layer_rope_theta")
    if given is None:
        return [not (rule.nope_every and (n - 1 - i) % rule.nope_every == 0) for i in range(n)]
    if not isinstance(given, list) or len(given) < n:
        bad(c.key("layer_rope_theta"), given if not isinstance(given, list) else f"<{len(given)} entries>",
            f"must be a list with one base per layer ({n}; 0 = NoPE)")
    return [given[i] is not None and given[i] != 0 and number(f"{c.key('layer_rope_theta')}[{i}]", given[i]) > 0
            for i in range(n)]


def reads_layer_index_key(c: Level, key: str) -> bool:
    """Does this config's model type read the layer-index list ``key`` (:data:`LAYER_INDEX_KEYS`)?"""
    return c.model_type in LAYER_INDEX_KEYS[key][0]


def nested_labels(section: Mapping[str, Any], declared: set[str]) -> list[str]:
    """Keys of ``section`` that are per-layer-type entries (transformers: keys among the declared labels)."""
    return [k for k in section if isinstance(k, str) and k in declared and (section[k] is None or isinstance(section[k], Mapping))]
