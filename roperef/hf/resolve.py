"""A parsed HF config -> :class:`~roperef.hf.model.ModelRope`: which RoPE(s), on which layers, or none.

The steps (docs/hf-configs.md has the full rules):

1. Levels: the text part is ``text_config`` when the config has one, else the top level; a vision
   tower whose 2-D RoPE roperef models (:data:`~roperef.hf.quirks.VISION_FORMS_BY_TYPE`) adds ``vision``.
   A composite whose text config sits elsewhere (Omni ``thinker_config.text_config``, ColPali
   ``vlm_config.text_config``) is read there (:data:`~roperef.hf.config_classes.TEXT_PATHS`). A model type
   transformers does not ship is read as the family its ``architectures`` / ``auto_map`` classes name
   (:mod:`roperef.hf.unknown_types`); several families, or none while the pairing is not given, are refused.
2. RoPE or not: an override ``rope=none``; a model type transformers ships without any rotary embedding
   (:data:`~roperef.hf.families.NO_ROPE_FAMILIES`: BERT, GPT-2, Jamba, Nemotron-H, ...: "no RoPE in
   transformers' code"; with RoPE keys and an ``auto_map`` to remote code, refused as "RoPE in remote code
   roperef does not model"); the family's own switch keys (:func:`~roperef.hf.class_rules.switched_off`);
   for remote-code and unknown model types, and transformers families whose source reads them:
   ``position_embedding_type`` other than ``rope``/``rotary``; ``alibi: true``; ``use_rope`` /
   ``use_mem_rope: false``; ``mla_use_nope: true``. A model type roperef does not know and whose config has
   no RoPE key is refused (say ``rope=none`` or give the RoPE keys). A transformers RoPE form roperef does
   not model is refused.
3. The RoPE entries: for a transformers family, as its config class builds them
   (:func:`~roperef.hf.class_rules.class_entries`); otherwise ``rope_scaling`` (wins, as in transformers) or
   ``rope_parameters``; nested by the declared layer types (or the family's labels), else one entry, plus
   per-layer thetas:
   ``rope_local_base_freq`` / ``swa_rope_theta`` (sliding layers: ``default`` at that base) and
   ``compress_rope_theta`` (DeepSeek V4: ``main`` = ``default`` at ``rope_theta`` for sliding layers,
   ``compress`` = the config's scaling at ``compress_rope_theta`` for compressed layers, YaRN attention
   factor 1 as transformers forces it).
4. Layers: :mod:`roperef.hf.layers`.

Keys inside a RoPE section that roperef does not know are refused (:func:`roperef.hf.keys.check_section_keys`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import bad
from ..spec import RopeSpec
from . import config_classes as cc
from . import families as fam
from . import release  # called through the module: tests set the installed release
from .class_rules import (
    GENERIC_SWITCH_KEYS,
    class_entries,
    class_has_layer_types,
    class_labels,
    derived_sizes,
    has_class_section,
    reads_switch,
    switched_off,
    text_defaults,
)
from .keys import Level, check_section_keys, clean, model_type_of, number
from .layer_rules import LAYER_INDEX_KEYS
from .layers import LAYER_NAMES, layer_types, nested_labels, rope_flags
from .model import ModelRope
from .quirks import MODEL_DEFAULTS, REMOTE_FAMILIES, VISION_FORMS_BY_TYPE, HFQuirks
from .rope_params import IGNORABLE_KEYS, PARAM_KEYS, Context, head_dim, one_spec
from .unknown_types import class_names, family_of, remote_code_names

__all__ = ["resolve"]

#: Model types transformers ships whose RoPE roperef reads although probing their default config failed
#: (their default config lacks the mRoPE section; tests/test_against_transformers.py covers them).
_HAND_ROPE = frozenset({"glm4v_text", "glm4v_moe_text", "glm4v", "glm4v_moe"})
#: Top-level keys whose presence says a model of unknown type has RoPE.
_ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters", "rotary_dim", "rotary_pct", "rotary_emb_base",
              "partial_rotary_factor", "qk_rope_head_dim", "rope_ratio")
_OFF_FLAGS = ("use_rope", "use_mem_rope")


def _known(model_type: str) -> str:
    """``transformers`` (a model type transformers ships), ``remote`` (roperef knows its remote code) or ``unknown``."""
    if model_type in REMOTE_FAMILIES:
        return "remote"
    if (model_type in fam.ROPE_FAMILIES or model_type in fam.NO_ROPE_FAMILIES or model_type in fam.OTHER_ROPE_FAMILIES
            or model_type in fam.WRAPPER_FAMILIES or model_type in _HAND_ROPE or model_type in VISION_FORMS_BY_TYPE):
        return "transformers"
    return "unknown"


def _no_rope_reason(c: Level, ctx: Context, pseudo: Mapping[str, Any]) -> str | None:
    """Why the model has no RoPE (None: it has), or a refusal naming which of the three it is: no RoPE in
    transformers' code, RoPE in remote code roperef does not model, or a value missing."""
    mt, known = c.model_type, ctx.known
    if pseudo.get("rope") == "none":
        return "declared by the override rope=none"
    if mt in fam.NO_ROPE_FAMILIES and known != "unknown":  # (unknown: its remote code's keys, pairing given)
        extra = [k for k in _ROPE_KEYS if c.given(k)]
        if extra and ctx.remote_code:
            bad(c.key("model_type"), mt, f"RoPE in remote code roperef does not model: transformers "
                f"{fam.TRANSFORMERS_VERSION}'s {mt} has no rotary embedding, but this config carries RoPE keys "
                f"({', '.join(extra)}) and its auto_map points to remote code ({', '.join(ctx.remote_code)}); "
                "--set pairing=half|adjacent|adjacent_in_half_out reads those keys by the generic rules, "
                "--set rope=none declares that it has none")
        tail = f" (its {', '.join(extra)} key(s) are not used)" if extra else ""
        return (f"no RoPE in transformers' code: transformers {fam.TRANSFORMERS_VERSION} model_type {mt!r} has no "
                f"rotary embedding{tail}")
    if known == "transformers":
        off = switched_off(c)
        if off is not None:
            return off
        for key in GENERIC_SWITCH_KEYS:
            if c.data.get(key) is not None and not reads_switch(mt, key):
                ctx.note(f"{c.key(key)}={c.data[key]!r} ignored: transformers' {mt} code does not read it")
        generic = {k for k in GENERIC_SWITCH_KEYS if reads_switch(mt, k) and not _probed_switch(mt, k)}
    else:
        generic = set(GENERIC_SWITCH_KEYS)
    kind = c.raw("position_embedding_type") if "position_embedding_type" in generic else None
    if kind is not None:
        if not isinstance(kind, str):
            bad(c.key("position_embedding_type"), kind, "must be a string", TypeError)
        if kind.lower() not in ("rope", "rotary"):
            return f"{c.key('position_embedding_type')}={kind!r}"
    if "alibi" in generic and c.raw("alibi") is True:
        return f"{c.key('alibi')}=true (ALiBi instead of RoPE)"
    for flag in _OFF_FLAGS:
        if flag in generic and c.raw(flag) is False:
            return f"{c.key(flag)}=false"
    if "mla_use_nope" in generic and c.raw("mla_use_nope") is True:
        return f"{c.key('mla_use_nope')}=true: the MLA attention layers use no position embedding"
    if mt in fam.OTHER_ROPE_FAMILIES and mt not in _HAND_ROPE:
        bad(c.key("model_type"), mt, f"has a RoPE roperef's config reader does not model "
            f"({fam.OTHER_ROPE_FAMILIES[mt]})")
    remote = REMOTE_FAMILIES.get(mt) if known == "remote" else None
    if remote is not None and remote.alibi_unless_hidden_size is not None and c.has("hidden_size") and \
            c.int_("hidden_size") != remote.alibi_unless_hidden_size:
        return (f"model_type {mt!r} with {c.key('hidden_size')}={c.raw('hidden_size')}: its remote code uses ALiBi "
                f"unless hidden_size is {remote.alibi_unless_hidden_size} ({remote.source})")
    if remote is not None and remote.refuse is not None and not any(c.given(k) for k in _ROPE_KEYS):
        bad(c.key("model_type"), mt, remote.refuse)
    if known == "unknown" and not any(c.given(k) for k in _ROPE_KEYS):
        bad(c.key("model_type"), mt or None, "is not a model type roperef knows and the config has no RoPE key "
            f"({', '.join(_ROPE_KEYS)}); supply them (overrides / --set), or rope=none if the model has no RoPE")
    if known == "unknown" and ctx.pairing_override is None and c.data.get("rope_interleave") is not True:
        bad(c.key("model_type"), mt or None, _unknown_pairing(ctx))  # rope_interleave: true states the pairing
    return None


def _probed_switch(model_type: str, key: str) -> bool:
    return key in cc.ROPE_SWITCHES.get(model_type, {})


def _unknown_pairing(ctx: Context) -> str:
    """The refusal of a model type nobody knows: the pairing is missing (never guessed), and how to give it."""
    said = ctx.names_given or ()
    where = (f"its architectures / auto_map name no transformers class ({', '.join(said)})" if said else
             "it names no architectures or auto_map class")
    return (f"a value is missing: this model type is not one transformers ships or roperef knows, and {where}, so "
            "which channels rotate together is not known; give it with --set pairing=half|adjacent|"
            "adjacent_in_half_out (transformers' rotate_half is half), or --set rope=none if the model has no RoPE")


def _section(c: Level) -> tuple[dict[str, Any], str]:
    scaling, params = c.data.get("rope_scaling"), c.data.get("rope_parameters")
    chosen, name = (scaling, "rope_scaling") if scaling else (params, "rope_parameters")
    where = c.key(name)
    if chosen is not None and not isinstance(chosen, Mapping):
        bad(where, chosen, "must be a JSON object (dict) or null", TypeError)
    return clean(chosen or {}), where


def _per_layer_lists(c: Level, types: tuple[str, ...]) -> tuple[dict[str, Any], str] | None:
    """Per-layer ``rope_theta`` / ``partial_rotary_factors`` lists (Step-3.5): one entry per layer type, from
    its first layer (transformers' Step3p7TextConfig.__post_init__: "taking each type's value from any one
    of its layers (they all agree)"; roperef checks that they do). ``rope_scaling`` joins the types of
    ``yarn_only_types`` (transformers: ``full_attention``). None when neither key is a list."""
    thetas, factors = c.raw("rope_theta"), c.raw("partial_rotary_factors")
    if not isinstance(thetas, list) and not isinstance(factors, list):
        return None
    if not types:
        bad(c.key("rope_theta"), "<list>", "a per-layer list needs the layer count (num_hidden_layers)")
    entries: dict[str, Any] = {}
    for name, key_name, values in (("rope_theta", "rope_theta", thetas),
                                   ("partial_rotary_factor", "partial_rotary_factors", factors)):
        if not isinstance(values, list):
            continue
        key = c.key(key_name)
        if len(values) < len(types):
            bad(key, f"<{len(values)} entries>", f"must have one entry per layer ({len(types)})")
        for i, kind in enumerate(types):
            first = types.index(kind)
            if values[i] != values[first]:
                bad(f"{key}[{i}]", values[i], f"differs from layer {first} of the same type {kind!r} "
                    f"({values[first]}); transformers takes one value per layer type")
            entries.setdefault(kind, {"rope_type": "default"})[name] = values[first]
    if not isinstance(thetas, list) and thetas is not None:
        for entry in entries.values():
            entry["rope_theta"] = thetas
    scaling = c.data.get("rope_scaling") or c.data.get("rope_parameters")
    if scaling is not None:
        if not isinstance(scaling, Mapping):
            bad(c.key("rope_scaling"), scaling, "must be a JSON object (dict) or null", TypeError)
        scaled = c.str_list("yarn_only_types") or ["full_attention"]
        for kind in scaled:
            if kind in entries:
                entries[kind].update(clean(scaling))
    return entries, c.key("rope_theta")


def _labels_declared(c: Level, types: tuple[str, ...]) -> set[str]:
    declared = set(types) | set(fam.NESTED_LABELS.get(c.model_type, ()))
    if c.model_type in ("gemma3_text", "gemma4_text") or (not types and c.model_type not in fam.ROPE_FAMILIES
                                                          and c.model_type not in REMOTE_FAMILIES):
        declared |= LAYER_NAMES
    return declared


def _layer_label(kind: str, labels: set[str], compress: bool) -> str | None:
    if compress:
        return "compress" if "compress" in kind else "main"
    return kind if kind in labels else None


def _text(c: Level, ctx: Context, pseudo: Mapping[str, Any],
          wrapper: str | None) -> tuple[dict[str, RopeSpec], tuple[str | None, ...], tuple[str, ...], str | None]:
    types = layer_types(c)
    for key, (readers, _source) in LAYER_INDEX_KEYS.items():
        if c.given(key) and c.model_type not in readers:
            ctx.note(f"{c.key(key)} ignored: only {', '.join(sorted(readers))} read it (transformers)")
    reason = _no_rope_reason(c, ctx, pseudo)
    if reason is not None:
        return {}, (None,) * len(types), types, reason
    _runtime_rescaling(c, ctx)
    lists = _per_layer_lists(c, types)
    section, where = lists or _section(c)
    declared = _labels_declared(c, types)
    by_class = lists is None and ctx.known == "transformers" and has_class_section(c.model_type)
    if by_class:  # nested only by the labels transformers' config object has (its layer_types, its rope labels)
        declared = class_labels(c.model_type) | (set(types) if class_has_layer_types(c.model_type) else set())
        section = {k: v for k, v in section.items() if k in declared or not isinstance(v, Mapping)}
    nested = nested_labels(section, declared)
    built = class_entries(c, declared, wrapper, ctx.note) if by_class else None
    if built is not None:
        for label in nested:
            if section[label] is not None:
                check_section_keys(f"{where}.{label}", section[label], PARAM_KEYS, IGNORABLE_KEYS)
        if not nested:
            for key, why in check_section_keys(where, section, PARAM_KEYS, IGNORABLE_KEYS):
                ctx.note(f"{key} ignored: {why}")
        entries, where, nested = built
        extra = derived_sizes(c, entries)
        if extra:
            c = Level(c.data, c.path, c.model_type, {**c.defaults, **extra}, fam.ATTRIBUTE_MAPS.get(c.model_type))
        if nested:
            specs = {lab: one_spec(entries[lab] or {}, c, f"{where}.{lab}", ctx, head=_layer_head(c, lab),
                                   from_class=True) for lab in nested if entries[lab] is not None}
            nulls = {lab for lab in nested if entries[lab] is None}
        else:
            specs, nulls = {"text": one_spec(entries[None] or {}, c, where, ctx, from_class=True)}, set()
    elif nested:
        flat = [k for k in section if k not in nested]
        for key in flat:
            ctx.note(f"{where}.{key} ignored: transformers reads only the per-layer-type entries of a nested "
                     f"{where.split('.')[-1]}")
        for label in nested:
            if section[label] is not None:
                check_section_keys(f"{where}.{label}", section[label], PARAM_KEYS, IGNORABLE_KEYS)
        specs = {lab: one_spec(section[lab], c, f"{where}.{lab}", ctx, head=_layer_head(c, lab),
                               theta=_layer_theta(c, lab)) for lab in nested if section[lab] is not None}
        nulls = {lab for lab in nested if section[lab] is None}
    else:
        for key, why in check_section_keys(where, section, PARAM_KEYS, IGNORABLE_KEYS):
            ctx.note(f"{key} ignored: {why}")
        specs, nulls = _flat_specs(section, where, c, ctx), set()
    compress = "main" in specs and "compress" in specs
    flags = rope_flags(c, types)
    layers: list[str | None] = []
    for kind, use in zip(types, flags):
        if not use or kind in nulls:
            layers.append(None)
        elif len(specs) == 1 and not nested:
            layers.append(next(iter(specs)))
        else:
            layer_label = _layer_label(kind, set(specs), compress)
            if layer_label is None and kind not in nulls:
                names = ", ".join(sorted(specs))
                bad(c.key("layer_types"), kind, f"has no RoPE entry; the config defines {names}")
            layers.append(layer_label)
    if types:  # keep only the entries some layer uses
        used = {name for name in layers if name is not None}
        specs = {k: v for k, v in specs.items() if k in used}
        if not specs:
            return {}, tuple(layers), types, "no decoder layer applies RoPE (every layer is NoPE or not attention)"
    indexer = _indexer(c, ctx, specs)
    if indexer is not None:
        specs["indexer"] = indexer
    return specs, tuple(layers), types, None


def _indexer(c: Level, ctx: Context, specs: Mapping[str, RopeSpec]) -> RopeSpec | None:
    """The RoPE of a sparse-attention indexer (DeepSeek V3.2 / GLM-5 DSA): the text RoPE on the index heads'
    rope slice, paired as the family's indexer applies it (transformers hard-codes it per family:
    :data:`~roperef.hf.families.INDEXER_PAIRING`), else as ``indexer_rope_interleave`` says."""
    if not (c.has("index_n_heads") or c.has("index_topk")):
        return None
    if list(specs) != ["text"]:
        ctx.note(f"{c.model_type}: the sparse-attention indexer's RoPE is not modelled (the model has several RoPEs)")
        return None
    flag = c.raw("indexer_rope_interleave")
    if flag is not None and not isinstance(flag, bool):
        bad(c.key("indexer_rope_interleave"), flag, "must be true or false", TypeError)
    said = None if flag is None else ("adjacent_in_half_out" if flag else "half")
    family = fam.INDEXER_PAIRING.get(c.model_type)
    if family is not None:
        if said is not None and said != family:
            ctx.note(f"{c.key('indexer_rope_interleave')}={flag} not applied: transformers' {c.model_type} indexer "
                     f"always pairs {family}")
        pairing = family
    elif said is not None:
        pairing = said
    else:
        ctx.note(f"{c.model_type}: the sparse-attention indexer's RoPE is not modelled (no indexer_rope_interleave "
                 "key and no known family rule)")
        return None
    return specs["text"].replace(pairing=pairing)


def _runtime_rescaling(c: Level, ctx: Context) -> None:
    """Keys of inference-time tricks outside the spec: said, never dropped silently (Qwen-1 remote code)."""
    if c.raw("use_dynamic_ntk") is True:
        limit = c.raw("seq_length") or c.raw("max_position_embeddings")
        ctx.assume("use_dynamic_ntk", True, "Qwen-1 style per-length NTK rescaling of theta at inference is not "
                   f"modelled: the spec is the RoPE of sequences up to seq_length={limit}")
    if c.raw("use_logn_attn") is True:
        ctx.note(f"{c.key('use_logn_attn')}=true scales queries by log(position) beyond seq_length: outside RoPE, "
                 "not part of the spec")


def _flat_specs(section: dict[str, Any], where: str, c: Level, ctx: Context) -> dict[str, RopeSpec]:
    """One entry, or the per-layer-theta forms (sliding-layer bases, DeepSeek V4 main/compress)."""
    if c.has("compress_rope_theta"):
        main_params = {k: v for k, v in section.items() if k in ("partial_rotary_factor",)}
        compress_extra = dict(section)
        kind = compress_extra.get("rope_type", compress_extra.get("type"))
        if kind == "yarn" and compress_extra.get("attention_factor") is None:
            compress_extra["attention_factor"] = 1.0  # transformers' DeepseekV4Config forces it
        main_params["rope_type"] = "default"
        return {
            "main": one_spec(main_params, c, where, ctx),
            "compress": one_spec({}, c, c.key("compress_rope_theta"), ctx, theta=c.num("compress_rope_theta"),
                                 extra=compress_extra),
        }
    local = next((n for n in ("rope_local_base_freq", "swa_rope_theta") if c.has(n)), None)
    if local is not None:
        keep = {k: v for k, v in section.items() if k == "partial_rotary_factor"}
        return {
            "full_attention": one_spec(section, c, where, ctx),
            "sliding_attention": one_spec(keep, c, c.key(local), ctx, theta=c.num(local)),
        }
    if c.model_type == "gemma4_text" and not section:  # transformers' default per-layer parameters
        defaults = {"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                       "rope_theta": 1_000_000.0}}
        return {k: one_spec(v, c, f"{where}.{k}", ctx, head=_layer_head(c, k)) for k, v in defaults.items()}
    return {"text": one_spec(section, c, where, ctx)}


def _layer_theta(c: Level, layer: str) -> float | None:
    """Sliding layers default to ``rope_local_base_freq`` (Gemma 3) / ``swa_rope_theta`` when their entry has no theta."""
    if layer == "sliding_attention":
        for name in ("rope_local_base_freq", "swa_rope_theta"):
            if c.has(name):
                return c.num(name)
    if layer == "compress" and c.has("compress_rope_theta"):
        return c.num("compress_rope_theta")
    return None


def _layer_head(c: Level, layer: str) -> int | None:
    """Full-attention layers use ``global_head_dim`` when the config has one (Gemma 4 and its relatives)."""
    if layer == "full_attention" and c.has("global_head_dim"):
        return c.int_("global_head_dim")
    return None


def _vision(c: Level, ctx: Context) -> RopeSpec:
    form = VISION_FORMS_BY_TYPE[c.model_type]
    params = c.data.get("rope_parameters") or {}
    if not isinstance(params, Mapping):
        bad(c.key("rope_parameters"), params, "must be a JSON object (dict) or null", TypeError)
    where = c.key("rope_parameters")
    check_section_keys(where, clean(params), PARAM_KEYS, IGNORABLE_KEYS)
    theta = number(f"{where}.rope_theta", params["rope_theta"]) if params.get("rope_theta") is not None else None
    try:
        if theta is None:
            theta = c.num("rope_theta") or 10000.0
        return RopeSpec(head_dim=head_dim(c, ctx.quirks), theta=theta, vision=form)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{exc} (config {c.path or 'vision_config.'})") from None


def _descend(cfg: Mapping[str, Any], top_type: str) -> tuple[Mapping[str, Any], str, list[str], str]:
    """``(the config level that holds the text config, its key prefix, notes, the text config's key)``.

    Most composites keep it at ``text_config``; some one level down or under another key, as their class
    says (:data:`roperef.hf.config_classes.TEXT_PATHS`, transformers' ``get_text_config``): Qwen2.5-Omni
    ``thinker_config.text_config`` (the speech ``talker`` is a second decoder, said in a note, not modelled),
    ColPali ``vlm_config.text_config``, Dia ``decoder_config``. A config that already has ``text_config`` at
    the top, or lacks the path, is read as it is."""
    path = cc.TEXT_PATHS.get(top_type)
    if not path or cfg.get("text_config") is not None or cfg.get(path[0]) is None:
        return cfg, "", [], "text_config"
    node, prefix = cfg, ""
    for key in path[:-1]:
        sub = node.get(key)
        if not isinstance(sub, Mapping):
            bad(f"{prefix}{key}", sub, "must be a JSON object (dict)", TypeError)
        node, prefix = sub, f"{prefix}{key}."
    notes = [f"the text config is read from {prefix}{path[-1]} (transformers' get_text_config)"]
    if prefix and cfg.get("talker_config") is not None:
        notes.append("talker_config (the speech decoder, its own RoPE) is not part of the spec: not modelled")
    return node, prefix, notes, path[-1]


def _by_class_names(top: Mapping[str, Any], text_type: str, path: str, pseudo: Mapping[str, Any],
                    notes: list[str]) -> tuple[str, str]:
    """``(model type, known)`` for a text model type nobody knows: the transformers family its architectures /
    auto_map classes name (:func:`roperef.hf.unknown_types.family_of`), said in a note; several families are
    refused (never a guess) unless the pairing is given; none leaves it unknown."""
    found = family_of(top)
    if found.model_type is not None and _known(found.model_type) == "transformers":
        notes.append(f"{path}model_type {text_type!r} is not a model type transformers ships: read as "
                     f"{found.model_type!r}, the transformers family of its {', '.join(found.names)}")
        return found.model_type, "transformers"
    if len(found.families) > 1 and pseudo.get("pairing") is None:
        bad(f"{path}model_type", text_type, f"a value is missing: not a model type transformers ships, and its "
            f"architectures / auto_map ({', '.join(found.names)}) name classes of several transformers families "
            f"({', '.join(found.families)}); choose one with --set {path}model_type=NAME")
    return text_type, "unknown"


def _level(data: Mapping[str, Any], path: str, model_type: str, wrapper: str | None = None) -> Level:
    """One config level with its model type's defaults: the config class's (generated, and what a composite
    ``wrapper`` sets in its text_config), then roperef's documented ones (:data:`MODEL_DEFAULTS`)."""
    defaults = {**text_defaults(model_type, wrapper), **MODEL_DEFAULTS.get(model_type, {})}
    return Level(data, path, model_type, defaults, fam.ATTRIBUTE_MAPS.get(model_type))


def _wrapper_types(top_type: str) -> tuple[str | None, str | None]:
    if top_type in fam.WRAPPER_FAMILIES:
        return fam.WRAPPER_FAMILIES[top_type]
    return None, None


def resolve(cfg: Mapping[str, Any], quirks: HFQuirks, pseudo: Mapping[str, Any]) -> ModelRope:
    """The :class:`ModelRope` of a parsed config (overrides already applied; ``pseudo``: pairing / rope)."""
    top = cfg
    top_type = model_type_of(cfg, "", "")
    cfg, prefix, notes, text_key = _descend(cfg, top_type)
    if prefix:
        top_type = model_type_of(cfg, prefix, top_type)
    default_text, default_vision = _wrapper_types(top_type)
    if top_type in VISION_FORMS_BY_TYPE and cfg.get(text_key) is None:  # a vision tower on its own
        c = _level(cfg, "", top_type)
        ctx = Context(quirks, "transformers")
        return ModelRope(top_type, {"vision": _vision(c, ctx)})
    text_cfg = cfg.get(text_key)
    wrapper = top_type if text_cfg is not None and top_type in fam.WRAPPER_FAMILIES else None
    if text_cfg is not None:
        if not isinstance(text_cfg, Mapping):
            bad(f"{prefix}{text_key}", text_cfg, "must be a JSON object (dict)", TypeError)
        path = f"{prefix}{text_key}."
        data: Mapping[str, Any] = text_cfg
        text_type = model_type_of(text_cfg, path, default_text or top_type)
    else:  # a wrapper's text keys may sit at the top level
        path, data, text_type = "", cfg, default_text or top_type
    drift = release.release_check(text_type, release.installed_transformers())
    if drift.refusal is not None:
        bad(f"{path}model_type", text_type, drift.refusal)
    if drift.note is not None:
        notes.append(drift.note)
    known = _known(text_type)
    if known == "unknown":
        text_type, known = _by_class_names(top, text_type, path, pseudo, notes)
    remote = remote_code_names(top)
    if (text_type in fam.NO_ROPE_FAMILIES and remote and pseudo.get("pairing") is not None
            and any(data.get(k) is not None for k in _ROPE_KEYS)):
        known = "unknown"  # RoPE keys of remote code, read by the generic rules with the pairing given
        notes.append(f"model_type {text_type!r} has no RoPE in transformers; its RoPE keys are read by the generic "
                     f"rules for the remote code its auto_map names ({', '.join(remote)})")
    c = _level(data, path, text_type, wrapper if known == "transformers" else None)
    if known != "transformers":
        c = Level(data, path, text_type, MODEL_DEFAULTS.get(text_type), fam.ATTRIBUTE_MAPS.get(text_type))
    ctx = Context(quirks, known, pseudo.get("pairing"), remote_code=remote, names_given=class_names(top))
    for note in notes:
        ctx.note(note)
    specs, layers, types, no_rope = _text(c, ctx, pseudo, wrapper if known == "transformers" else None)
    vision_cfg = cfg.get("vision_config")
    vision: RopeSpec | None = None
    if vision_cfg is not None:
        if not isinstance(vision_cfg, Mapping):
            bad(f"{prefix}vision_config", vision_cfg, "must be a JSON object (dict)", TypeError)
        vtype = model_type_of(vision_cfg, f"{prefix}vision_config.", default_vision or "")
        if vtype not in VISION_FORMS_BY_TYPE and default_vision is not None and default_vision in VISION_FORMS_BY_TYPE:
            vtype = default_vision  # a sub-config type alias (e.g. "qwen2_5_vl" written for the vision part)
        if vtype in VISION_FORMS_BY_TYPE:
            vision = _vision(_level(vision_cfg, f"{prefix}vision_config.", vtype), ctx)
        elif vtype in fam.OTHER_ROPE_FAMILIES or vtype in fam.ROPE_FAMILIES:
            why = fam.OTHER_ROPE_FAMILIES.get(vtype) or "a text-style rotary embedding"
            ctx.note(f"vision_config ({vtype}): its transformers module has a rotary class roperef does not model "
                     f"for it ({why}); no vision spec")
    if vision is not None:
        renamed = {("text" if k == "text" else f"text.{k}"): v for k, v in specs.items()}
        layers = tuple(None if n is None else ("text" if n == "text" else f"text.{n}") for n in layers)
        specs = {**renamed, "vision": vision}
    if not specs:
        return ModelRope(text_type, {}, layers, types, tuple(ctx.assumed), no_rope or "no RoPE entry", tuple(ctx.notes))
    return ModelRope(text_type if vision is None else top_type, specs, layers, types, tuple(ctx.assumed), None,
                     tuple(ctx.notes))
