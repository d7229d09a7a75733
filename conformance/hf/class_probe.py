"""What a transformers config class does with a config dict, read by building it: the facts behind
``roperef/hf/config_classes.py`` (written by ``scripts/gen_hf_config_classes.py``), and the helpers the other
probes share (:func:`build`, :func:`rope_entries`, :func:`read_attr`, ...).

Each fact is observed, not parsed: the class is instantiated (in memory, no download) with and without a
key, and the attributes the rotary module reads are compared. For one model type:

- :func:`class_defaults`: the constant default of each key of :data:`DEFAULT_KEYS` (a dataclass field
  default that ``__post_init__`` leaves alone, or the constant it puts in place of ``None``, that does not move
  when another size changes);
- :func:`head_dim_factor`: the class sets its head width to ``k * hidden_size // num_attention_heads`` itself;
- :func:`has_layer_types`, :func:`layer_types_rule`: it builds ``layer_types``, and by which rule when a config
  gives none;
- :func:`wrapper_text_fills`, :func:`text_path`: what a composite sets in a ``text_config`` it is given, and
  where its text config sits.

How a class builds its RoPE entries is :mod:`conformance.hf.section_probe`; whether the model applies its RoPE
and the keys that switch it, :mod:`conformance.hf.switch_probe`; the class names of each model type (for
``architectures`` / ``auto_map``), :mod:`conformance.hf.class_names`. transformers and torch are
imported inside the functions (optional dependencies).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from .truth import text_config_of

__all__ = ["DEFAULT_KEYS", "PARAMS", "config_class", "build", "plain", "read_attr", "head_width", "field_defaults",
           "rope_entries", "class_defaults", "has_layer_types", "head_dim_factor", "wrapper_text_fills",
           "layer_types_rule", "text_path"]

#: Keys whose constant class default roperef takes when a config omits them (sizes, layer-pattern keys,
#: flags the RoPE readers consult). The RoPE parameters themselves are in :func:`rope_section`.
DEFAULT_KEYS = (
    "hidden_size", "num_attention_heads", "head_dim", "num_hidden_layers", "max_position_embeddings",
    "original_max_position_embeddings", "n_positions", "seq_length", "n_embd", "n_head", "n_layer", "num_layers",
    "n_layers", "d_model", "n_heads", "embed_dim", "num_heads", "attention_head_dim", "kv_channels",
    "qk_rope_head_dim", "global_head_dim", "use_mla", "rope_interleave", "indexer_rope_interleave", "index_n_heads",
    "index_topk", "sliding_window", "sliding_window_pattern", "no_rope_layer_interval", "full_attention_interval",
    "global_attn_every_n_layers", "layer_group_size", "rotary_dim", "prefix_dense_sliding_window_pattern",
    "first_k_dense_replace", "attention_chunk_size", "cross_attention_layers",
)
#: The two entry parameters whose source the probes read (theta and rotary fraction).
PARAMS = ("rope_theta", "partial_rotary_factor")


def config_class(model_type: str) -> Any:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


def build(model_type: str, **kw: Any) -> Any:
    """The config object of ``model_type`` built from ``kw`` (deep-copied: classes mutate what they get)."""
    return config_class(model_type)(**copy.deepcopy(kw))


def plain(value: Any) -> Any:
    """A value as a Python literal of JSON kinds (tuples for lists), or ``None`` when it is not one."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        items = [plain(v) for v in value]
        return tuple(items) if all(i is not None or v is None for i, v in zip(items, value)) else None
    return None


def rope_entries(cfg: Any) -> dict[str | None, dict[str, Any] | None] | None:
    """``{label: parameters}`` of the built config (``None`` label: one flat entry); None when it has none.

    A class without ``rope_parameters`` that keeps a ``rope_theta`` attribute (ESM) is one flat entry."""
    rp = getattr(cfg, "rope_parameters", None) if hasattr(cfg, "rope_parameters") else None
    if not isinstance(rp, Mapping) or not rp:
        theta = read_attr(cfg, "rope_theta")
        if isinstance(theta, (int, float)) and not isinstance(theta, bool):
            return {None: {"rope_type": "default", "rope_theta": float(theta)}}
        return None
    try:
        nested = list(cfg.nested_rope_parameter_keys(rp)) if hasattr(cfg, "nested_rope_parameter_keys") else []
    except Exception:
        nested = []
    if nested:  # sorted: the order a class happens to build them in is no fact
        return {k: (dict(sorted(rp[k].items())) if isinstance(rp[k], Mapping) else None) for k in sorted(nested)}
    return {None: dict(sorted(rp.items()))}


def read_attr(cfg: Any, name: str) -> Any:
    """``getattr(cfg, name, None)``; a per-layer attribute of a heterogeneous config (Gemma 4's ``head_dim``,
    which its full-attention layers override) is read as the global value the config stores."""
    try:
        return getattr(cfg, name, None)
    except Exception:
        try:
            return vars(cfg).get(name)
        except TypeError:
            return None


def head_width(cfg: Any) -> int | None:
    head = read_attr(cfg, "head_dim")
    if isinstance(head, int) and head > 0:
        return head
    hidden, heads = read_attr(cfg, "hidden_size"), read_attr(cfg, "num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return hidden // heads
    return None


def field_defaults(model_type: str) -> dict[str, Any]:
    cls = config_class(model_type)
    try:
        found = dataclasses.fields(cls)
    except TypeError:
        return {}
    out: dict[str, Any] = {}
    for f in found:
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # a list default (Mllama's cross_attention_layers)
            try:
                out[f.name] = f.default_factory()
            except Exception:
                out[f.name] = dataclasses.MISSING
        else:
            out[f.name] = dataclasses.MISSING
    return out


def class_defaults(model_type: str) -> dict[str, Any]:
    """``{key: value}`` for the keys of :data:`DEFAULT_KEYS` whose value the class fixes when a config omits
    them: a field default that the built default config keeps (or the constant ``__post_init__`` sets for a
    ``None`` default), and that stays put when another size (``hidden_size``, ``num_attention_heads``,
    ``num_hidden_layers``, ``qk_rope_head_dim``, ``head_dim``) is changed."""
    fields = field_defaults(model_type)
    aliases = {k: v for k, v in (getattr(config_class(model_type), "attribute_map", None) or {}).items()
               if isinstance(k, str) and isinstance(v, str)}
    try:
        base = build(model_type)
    except Exception:
        return {}
    out: dict[str, Any] = {}
    for key in DEFAULT_KEYS:
        field = key if key in fields else aliases.get(key)  # Moonshine: num_attention_heads -> decoder_num_attention_heads
        if field not in fields or fields[field] is dataclasses.MISSING:
            continue
        # the field's default, or the value __post_init__ puts in its place (Mllama: cross_attention_layers None ->
        # [3, 8, ...]); kept only if no other size moves it (head_dim from hidden_size is not a default)
        value = plain(fields[field]) if fields[field] is not None else plain(read_attr(base, field))
        if value is None or plain(read_attr(base, field)) != value:
            continue
        moved = False
        for other in ("hidden_size", "num_attention_heads", "num_hidden_layers", "qk_rope_head_dim", "head_dim"):
            other = other if other in fields else aliases.get(other, other)
            if other == field or not isinstance(fields.get(other), int) or isinstance(fields.get(other), bool):
                continue
            try:
                changed = build(model_type, **{other: 2 * fields[other]})
            except Exception:
                continue
            if plain(read_attr(changed, field)) != value:
                moved = True
                break
        if not moved:
            out[key] = value
    return out


def has_layer_types(model_type: str) -> bool:
    """Does the built default config carry a ``layer_types`` list (built by the class when a config has none)?
    Only then can a config's ``rope_parameters`` be nested by layer type (``nested_rope_parameter_keys``)."""
    try:
        return isinstance(read_attr(build(model_type), "layer_types"), (list, tuple))
    except Exception:
        return False


def head_dim_factor(model_type: str) -> tuple[int, str, bool] | None:
    """``(k, key, always)`` when the class sets its head width (the field ``head_dim`` maps to, ``key``) to
    ``k * hidden_size // num_attention_heads`` by itself: ``always`` when it overwrites a width the config gives
    under ``key``, else only when the config gives none and ``k`` is not 1 (Zamba2: ``attention_head_dim = 2 *
    hidden_size // num_attention_heads``). None otherwise. Read at two hidden sizes, with a given width that fits
    neither. (A ``head_dim`` key that is not the field is set after ``__post_init__``: it always wins.)"""
    try:
        cfg = build(model_type)
        hidden, heads = read_attr(cfg, "hidden_size"), read_attr(cfg, "num_attention_heads")
    except Exception:
        return None
    if not isinstance(hidden, int) or not isinstance(heads, int) or not heads:
        return None
    aliases = getattr(config_class(model_type), "attribute_map", None) or {}
    key = aliases.get("head_dim", "head_dim") if isinstance(aliases.get("head_dim", "head_dim"), str) else "head_dim"

    def factor(given: Callable[[int], int] | None) -> int | None:
        found = set()
        for size in (hidden, 2 * hidden):
            try:
                probe = build(model_type, hidden_size=size, **({} if given is None else {key: given(size)}))
            except Exception:
                return None
            got = read_attr(probe, key)
            if not isinstance(got, int) or (given is not None and got == given(size)) or got % (size // heads):
                return None
            found.add(got // (size // heads))
        return found.pop() if len(found) == 1 else None

    forced = factor(lambda size: 3 * (size // heads) + 2)
    if forced is not None:
        return forced, key, True
    derived = factor(None)
    return (derived, key, False) if derived is not None and derived != 1 else None


def wrapper_text_fills(wrapper: str, text_type: str) -> dict[str, Any]:
    """Keys a composite class sets in a ``text_config`` it is given (``{"model_type": text_type}`` only), where
    they differ from what the text class builds (its defaults, then with the keys found so far: Voxtral sets
    ``hidden_size`` 3072 and keeps ``head_dim`` 128, which the text class alone would derive as 96):
    ``{key: value}`` over :data:`DEFAULT_KEYS` and the RoPE entries (``rope:<label>.<param>``)."""
    try:
        composite = build(wrapper, text_config={"model_type": text_type})
        own = build(text_type)
    except Exception:
        return {}
    text = text_config_of(composite)
    if text is composite or read_attr(composite, "text_config") is not text or read_attr(text, "model_type") != text_type:
        return {}
    out: dict[str, Any] = {}
    for _round in range(3):  # a key the text class derives (head_dim from hidden_size) is kept when it differs
        for key in DEFAULT_KEYS:
            a, b = plain(read_attr(text, key)), plain(read_attr(own, key))
            if a != b and a is not None:
                out[key] = a
        try:
            own = build(text_type, **out)
        except Exception:
            break
    mine, theirs = rope_entries(text) or {}, rope_entries(own) or {}
    if set(mine) == set(theirs):
        for label, entry in mine.items():
            for param in PARAMS:
                a, b = (entry or {}).get(param), (theirs.get(label) or {}).get(param)
                if a != b and a is not None:
                    out[f"rope:{label or ''}.{param}"] = plain(a)
    return out


def _layer_lists(model_type: str, counts: tuple[int, ...]) -> dict[int, tuple[str, ...]] | None:
    out: dict[int, tuple[str, ...]] = {}
    for n in counts:
        try:
            built = read_attr(build(model_type, num_hidden_layers=n), "layer_types")
        except Exception:
            return None
        if not isinstance(built, (list, tuple)) or len(built) != n or not all(isinstance(t, str) for t in built):
            return None
        out[n] = tuple(built)
    return out


def _rule_types(rule: tuple[Any, ...], n: int) -> tuple[str, ...]:
    period, offset, every, other, first_k, first, last = rule
    out = [every if period and (i + offset) % period == 0 else other for i in range(n)]
    for i in range(min(first_k, n)):
        out[i] = first
    if last is not None and n:
        out[-1] = last
    return tuple(out)


def layer_types_rule(model_type: str) -> tuple[Any, ...] | None:
    """The rule by which the class builds ``layer_types`` when a config gives none, fitted to what it builds for
    1..24 layers (and 61): ``(period, offset, every, other, first_k, first, last)`` meaning layer ``i`` is
    ``every`` where ``(i + offset) % period == 0`` (period 0: never), else ``other``; the first ``first_k``
    layers are ``first``; the last layer is ``last`` (None: not forced). None when the class builds no list,
    or none of these rules gives exactly what it builds (then no rule is recorded: roperef does not guess)."""
    lists = _layer_lists(model_type, tuple(range(1, 25)) + (61,))
    if not lists:
        return None
    names = sorted({t for built in lists.values() for t in built})
    shapes: list[tuple[Any, ...]] = [(0, 0, a, a, 0, a, None) for a in names]
    for period in range(2, 13):
        for offset in range(period):
            for every in names:
                for other in names:
                    if every != other:
                        shapes.append((period, offset, every, other, 0, every, None))
    candidates: list[tuple[Any, ...]] = []
    for shape in shapes:
        period, offset, every, other = shape[:4]
        for first_k in range(0, 3):
            for first in (names if first_k else [every]):
                for last in [None, *names]:
                    candidates.append((period, offset, every, other, first_k, first, last))
    for rule in candidates:
        if all(_rule_types(rule, n) == built for n, built in lists.items()):
            return rule
    return None


def text_path(composite: str) -> tuple[str, ...] | None:
    """The sub-config keys from ``composite``'s config down to the decoder text config transformers reads
    (``get_text_config(decoder=True)``): ``("text_config",)`` mostly, ``("thinker_config", "text_config")`` for
    Qwen2.5-Omni, ``("vlm_config", "text_config")`` for ColPali; None when it cannot be found."""
    try:
        cfg = build(composite)
        target = cfg.get_text_config(decoder=True)
    except Exception:
        return None
    if target is cfg:
        return None
    frontier: list[tuple[tuple[str, ...], Any]] = [((), cfg)]
    for _depth in range(3):
        nxt: list[tuple[tuple[str, ...], Any]] = []
        for path, node in frontier:
            for key in (getattr(type(node), "sub_configs", None) or {}):
                child = read_attr(node, key)
                if child is target:
                    return (*path, key)
                if child is not None and hasattr(type(child), "sub_configs"):
                    nxt.append(((*path, key), child))
        frontier = nxt
    return None
