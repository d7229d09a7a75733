"""What a transformers config class does with a config dict, read by building it: the facts behind
``roperef/hf/config_classes.py`` (written by ``scripts/gen_hf_config_classes.py``).

Each fact is observed, not parsed: the class is instantiated (in memory, no download) with and without a
key, and the attributes the rotary module reads are compared. For one model type:

- :func:`class_defaults`: the constant default of each key of :data:`DEFAULT_KEYS` (a dataclass field
  default that ``__post_init__`` leaves alone and that does not move when another size changes);
- :func:`rope_section`: how the class builds ``rope_parameters`` (flat, or one entry per label):

  - ``absent``: the entries it builds when the config has no RoPE key;
  - ``fills``: what it adds to an entry the config gives without ``rope_theta`` / ``partial_rotary_factor``;
  - ``legacy``: keys outside the RoPE section that set an entry's parameter (``rope_theta``,
    ``rope_local_base_freq`` -> the sliding entry, ``rotary_pct``, ``rotary_dim`` -> ``rotary_dim / head_dim``),
    each with whether it acts when the config gives no section (``absent``), when it gives one (``given``),
    or both;
  - ``scaling``: the entries a flat legacy ``rope_scaling`` / flat ``rope_parameters`` lands in (Gemma 3:
    the full-attention entry only; DeepSeek V4: ``compress``), and what the class adds to a YaRN entry;
  - ``forced``: parameters the class sets whatever the config's entry says;
- :func:`switches`: config keys the model reads to decide whether it builds and applies its rotary
  embedding at all (ESM ``position_embedding_type == "rotary"``, Zamba2 ``use_mem_rope``, Granite-4
  hybrid ``position_embedding_type == "rope"``), with the values that switch it on;
- :func:`head_dim_factor`: the class overwrites the head width with ``k * hidden_size // num_attention_heads``;
- :func:`model_classes`: the class names transformers maps to each model type (for ``architectures`` and
  ``auto_map`` entries of a config whose ``model_type`` transformers does not know);
- :func:`wrapper_text_fills`: what a composite class sets in a ``text_config`` it is given.

transformers and torch are imported inside the functions (optional dependencies).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import inspect
import math
import os
import re
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from . import source as hf_source
from .truth import apply_function, modeling_modules, text_config_of, text_rotary_class

__all__ = ["SWITCH_KEYS", "reads_key", "DEFAULT_KEYS", "LEGACY_CANDIDATES", "build", "rope_entries", "class_defaults", "rope_section",
           "switches", "has_layer_types", "head_dim_factor", "model_classes", "config_class_names", "class_owners", "wrapper_text_fills",
           "rope_applied"]

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
#: Keys outside the RoPE section that a config class may turn into a RoPE parameter, probed for every class
#: (plus every such name its own source spells: ``global_rope_theta``, ``swa_rope_theta``, ...).
LEGACY_CANDIDATES = ("rope_theta", "partial_rotary_factor", "rotary_pct", "rotary_dim", "rotary_emb_base",
                     "rope_local_base_freq", "swa_rope_theta", "global_rope_theta", "local_rope_theta",
                     "compress_rope_theta", "rope_ratio", "qk_rope_head_dim")
_PARAMS = ("rope_theta", "partial_rotary_factor")
_THETA_PROBE = 123457.0
_RHO_PROBES = (0.375, 0.5, 0.25, 0.75)
_NAME = re.compile(r'"([a-z_0-9]*(?:rope|rotary|theta|base_freq)[a-z_0-9]*)"')
_NOT_LEGACY = frozenset({"rope_parameters", "rope_scaling", "rope_type", "type", "rope_interleave",
                         "mrope_section", "mrope_interleaved", "indexer_rope_interleave", "use_rope",
                         "use_mem_rope", "rotary_emb", "rotary_pos_emb", "layer_rope_theta", "partial_rotary_factors",
                         "max_position_embeddings", "mla_use_nope", "default_theta", "rope_layers"})


def config_class(model_type: str) -> Any:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


def build(model_type: str, **kw: Any) -> Any:
    """The config object of ``model_type`` built from ``kw`` (deep-copied: classes mutate what they get)."""
    return config_class(model_type)(**copy.deepcopy(kw))


def _plain(value: Any) -> Any:
    """A value as a Python literal of JSON kinds (tuples for lists), or ``None`` when it is not one."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return tuple(items) if all(i is not None or v is None for i, v in zip(items, value)) else None
    return None


def rope_entries(cfg: Any) -> dict[str | None, dict[str, Any] | None] | None:
    """``{label: parameters}`` of the built config (``None`` label: one flat entry); None when it has none.

    A class without ``rope_parameters`` that keeps a ``rope_theta`` attribute (ESM) is one flat entry."""
    rp = getattr(cfg, "rope_parameters", None) if hasattr(cfg, "rope_parameters") else None
    if not isinstance(rp, Mapping) or not rp:
        theta = _get(cfg, "rope_theta")
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


def _get(cfg: Any, name: str) -> Any:
    """``getattr(cfg, name, None)``; a per-layer attribute of a heterogeneous config (Gemma 4's ``head_dim``,
    which its full-attention layers override) is read as the global value the config stores."""
    try:
        return getattr(cfg, name, None)
    except Exception:
        try:
            return vars(cfg).get(name)
        except TypeError:
            return None


def _head(cfg: Any) -> int | None:
    head = _get(cfg, "head_dim")
    if isinstance(head, int) and head > 0:
        return head
    hidden, heads = _get(cfg, "hidden_size"), _get(cfg, "num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return hidden // heads
    return None


def _fields(model_type: str) -> dict[str, Any]:
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
    fields = _fields(model_type)
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
        value = _plain(fields[field]) if fields[field] is not None else _plain(_get(base, field))
        if value is None or _plain(_get(base, field)) != value:
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
            if _plain(_get(changed, field)) != value:
                moved = True
                break
        if not moved:
            out[key] = value
    return out


def _legacy_names(model_type: str) -> list[str]:
    """Candidate keys: :data:`LEGACY_CANDIDATES` plus the RoPE-like names the class's own source spells."""
    names = list(LEGACY_CANDIDATES)
    cls = config_class(model_type)
    for klass in cls.__mro__:
        if not klass.__module__.startswith("transformers.models."):
            continue
        try:
            text = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        for name in _NAME.findall(text):
            if name not in names and name not in _NOT_LEGACY and not name.startswith("_"):
                names.append(name)
    return names


def _probe_values(name: str, head: int | None) -> list[Any]:
    if "dim" in name:
        return [head // 2] if head and head % 4 == 0 else ([head // 2 + 1] if head else [32])
    if any(t in name for t in ("pct", "partial", "fraction", "percent")):
        return list(_RHO_PROBES)
    return [_THETA_PROBE]


#: A value of each parameter written inside the section by a probe (distinct from every legacy probe value).
_IN_SECTION = {"rope_theta": (23456.0,), "partial_rotary_factor": (0.5, 0.25, 0.75)}
#: The section each mode gives: none, one in the class's own shape, a flat one for a class with labels.
_FLAT_TRIES = ({"rope_type": "linear", "factor": 4.0},
               {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
               {"rope_type": "dynamic", "factor": 4.0})
#: One section of each scaling type, to read what the class adds to an entry of that type (YaRN's attention factor).
_TYPED = ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
          {"rope_type": "linear", "factor": 4.0}, {"rope_type": "dynamic", "factor": 4.0},
          {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 1024, "low_freq_factor": 1.0,
           "high_freq_factor": 4.0})
_SECTION_KEYS = frozenset({"rope_type", "type", "factor", "original_max_position_embeddings", "max_position_embeddings"})


def _section_for(mode: str, labels: tuple[str, ...], entry: Mapping[str, Any],
                       own: Mapping[str | None, Mapping[str, Any]] | None = None) -> tuple[str, dict[str, Any]] | None:
    """``(config key, section)`` a probe of ``mode`` gives (None: no section). ``own``: the class's own entries
    without theta and rotary fraction (an mRoPE class needs its ``mrope_section``); ``entry`` goes over them."""
    if mode == "absent":
        return None
    own = own or {}
    if mode == "given":
        if labels:
            return "rope_parameters", {label: {**own.get(label, {}), **entry} for label in labels}
        return "rope_parameters", {**own.get(None, {}), **entry}
    first = next(iter(own.values()), {}) if own else {}
    return ("rope_scaling" if mode == "flat" else "rope_parameters"), {**first, **entry}


def _build_entries(model_type: str, section: tuple[str, dict[str, Any]] | None, **kw: Any) -> dict[str | None, Any] | None:
    try:
        cfg = build(model_type, **({} if section is None else {section[0]: section[1]}), **kw)
    except Exception:
        return None
    return rope_entries(cfg)


def _matches(found: Any, value: float, head: int | None) -> str | None:
    if not isinstance(found, (int, float)) or isinstance(found, bool):
        return None
    if math.isclose(float(found), float(value), rel_tol=1e-12):
        return "value"
    if head and math.isclose(float(found), value / head, rel_tol=1e-12):
        return "per_head_dim"
    return None


def _mode_rules(model_type: str, mode: str, labels: tuple[str, ...], names: list[str],
                head: int | None, own: Mapping[str | None, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The rules of one mode: ``into`` (labels that take the section's own parameters) and per label its
    ``base`` (a label outside ``into``: the entry's parameters other than theta and rotary fraction),
    ``extra`` (a label inside: scaling type -> what the class adds to an entry of that type, DeepSeek V4's
    YaRN attention factor 1), and per parameter: ``default`` (none given anywhere), ``keys`` (the keys outside
    the section that set it, ``(key, kind)``), ``section_wins`` (a value the section gives beats those keys:
    True; is replaced: False; None: no key to compare with, or the label takes no section); several keys are in
    the order the class lets them win."""
    tries = ({"rope_type": "default"},) if mode in ("absent", "given") else _FLAT_TRIES
    plain: dict[str | None, Any] | None = None
    chosen: Mapping[str | None, Mapping[str, Any]] = {}
    entry: Mapping[str, Any] = {}
    layouts: tuple[Mapping[str | None, Mapping[str, Any]] | None, ...] = (None, own)
    for base in layouts:
        for entry in tries:
            plain = _build_entries(model_type, _section_for(mode, labels, entry, base))
            if plain is not None:
                break
        if plain is not None:
            chosen = base or {}
            break
    if plain is None:
        return None

    def section_of(written: Mapping[str, Any]) -> Any:
        return _section_for(mode, labels, written, chosen)

    keys = list(plain)
    kind = entry.get("rope_type")
    into = tuple(k for k in keys if mode != "absent" and (plain[k] or {}).get("rope_type") == kind
                 and (mode == "given" or kind != "default"))
    section = section_of(entry)
    with_key: dict[str, tuple[Any, dict[str | None, Any]]] = {}  # each key outside the section, probed once
    for name in names:
        for value in _probe_values(name, head):
            after = _build_entries(model_type, section, **{name: value})
            if after is not None:
                if set(after) == set(keys):
                    with_key[name] = (value, after)
                break
    written: dict[str, dict[str | None, Any] | None] = {}  # each parameter written inside the section
    inner: dict[str, Any] = {}
    for param in _PARAMS if into else ():
        for value in _IN_SECTION[param]:
            after = _build_entries(model_type, section_of(dict(entry, **{param: value})))
            if after is not None and set(after) == set(keys):
                written[param], inner[param] = after, value
                break
    out: dict[str, Any] = {"into": into, "labels": {}}
    for label in keys:
        got = plain[label]
        if got is None:
            out["labels"][label] = None
            continue
        rules: dict[str, Any] = {
            "base": {} if label in into else {k: _plain(v) for k, v in got.items() if k not in _PARAMS
                                               and _plain(v) is not None and k != "max_position_embeddings"},
            "extra": {},
        }
        for param in _PARAMS:
            rule: dict[str, Any] = {"default": _plain(got.get(param)), "keys": [], "section_wins": None}
            for name, (value, after) in with_key.items():
                found = (after[label] or {}).get(param)
                how = _matches(found, value, head)
                if how is not None and _plain(found) != rule["default"]:
                    rule["keys"].append((name, how))
            if label in into and written.get(param) is not None:
                mine = inner[param]
                if _plain(((written[param] or {}).get(label) or {}).get(param)) != mine:
                    rule["section_wins"] = False  # the class replaces the section's value
                elif rule["keys"]:
                    name = rule["keys"][0][0]
                    both = _build_entries(model_type, section_of(dict(entry, **{param: mine})),
                                          **{name: with_key[name][0]})
                    if both is not None and set(both) == set(keys):
                        rule["section_wins"] = _plain((both[label] or {}).get(param)) == mine
                else:
                    rule["section_wins"] = True
            rule["keys"] = tuple(_by_precedence(model_type, section, label, param, rule["keys"], head))
            rules[param] = rule
        out["labels"][label] = rules
    for typed in _TYPED if into else ():
        after = _build_entries(model_type, section_of(typed))
        if after is None or set(after) != set(keys):
            continue
        for label in into:
            added = {k: _plain(v) for k, v in (after[label] or {}).items() if k not in typed and k not in _PARAMS
                     and k not in _SECTION_KEYS and _plain(v) is not None}
            if added and out["labels"].get(label) is not None:
                out["labels"][label]["extra"][typed["rope_type"]] = added
    return out


def _other_value(name: str, head: int | None) -> Any:
    """A second probe value of ``name``, different from :func:`_probe_values`'s first."""
    if "dim" in name:
        return head // 4 if head and head % 8 == 0 else (head // 2 - 1 if head else 16)
    if any(t in name for t in ("pct", "partial", "fraction", "percent")):
        return 0.75
    return 54321.0


def _by_precedence(model_type: str, section: tuple[str, dict[str, Any]] | None, label: str | None, param: str,
                   keys: list[tuple[str, str]], head: int | None) -> list[tuple[str, str]]:
    """``keys`` (several keys set the same parameter: MiniMax-M2 ``partial_rotary_factor`` and ``rotary_dim``)
    ordered as the class lets them win: each pair is built with both keys at different values."""
    ordered = list(keys)
    for i in range(1, len(ordered)):
        j = i
        while j > 0:
            (a, kind_a), (b, kind_b) = ordered[j - 1], ordered[j]
            va, vb = _probe_values(a, head)[0], _other_value(b, head)
            after = _build_entries(model_type, section, **{a: va, b: vb})
            got = ((after or {}).get(label) or {}).get(param) if after else None
            if _matches(got, vb, head) == kind_b and _matches(got, va, head) != kind_a:
                ordered[j - 1], ordered[j] = ordered[j], ordered[j - 1]
                j -= 1
            else:
                break
    return ordered


def rope_section(model_type: str) -> dict[str, Any] | None:
    """How ``model_type``'s config class builds its RoPE entries (see the module docstring); None when the
    default config has no RoPE entry or cannot be built.

    ``{"labels": (entry labels, none: one flat entry), "modes": {mode: rules}}`` with a mode per way the
    config can give its section: ``absent`` (no RoPE section), ``given`` (``rope_parameters`` in the class's
    own shape: flat, or one entry per label), ``flat`` (a flat legacy ``rope_scaling``), ``flat_params`` (a
    flat ``rope_parameters`` for a class with labels). See :func:`_mode_rules` for the rules of one mode."""
    try:
        cfg = build(model_type)
    except Exception:
        return None
    base = rope_entries(cfg)
    if not base:
        return None
    head = _head(cfg)
    labels = tuple(label for label in base if label is not None)
    names = _legacy_names(model_type)
    own = {label: {k: v for k, v in (entry or {}).items() if k not in _PARAMS and k != "rope_type"}
           for label, entry in base.items()}
    modes: dict[str, Any] = {}
    for mode in ("absent", "given", "flat", "flat_params"):
        if mode == "flat_params" and not labels:
            continue
        if mode != "absent" and not hasattr(cfg, "rope_parameters"):
            continue
        found = _mode_rules(model_type, mode, labels, names, head, own)
        if found is not None:
            modes[mode] = found
    return {"labels": labels, "modes": modes}


def has_layer_types(model_type: str) -> bool:
    """Does the built default config carry a ``layer_types`` list (built by the class when a config has none)?
    Only then can a config's ``rope_parameters`` be nested by layer type (``nested_rope_parameter_keys``)."""
    try:
        return isinstance(_get(build(model_type), "layer_types"), (list, tuple))
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
        hidden, heads = _get(cfg, "hidden_size"), _get(cfg, "num_attention_heads")
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
            got = _get(probe, key)
            if not isinstance(got, int) or (given is not None and got == given(size)) or got % (size // heads):
                return None
            found.add(got // (size // heads))
        return found.pop() if len(found) == 1 else None

    forced = factor(lambda size: 3 * (size // heads) + 2)
    if forced is not None:
        return forced, key, True
    derived = factor(None)
    return (derived, key, False) if derived is not None and derived != 1 else None


def rope_applied(model_type: str, cfg: Any) -> bool | None:
    """Does the text model build its rotary module and its attention call an apply function for ``cfg``?
    None when that cannot be read."""
    text = text_config_of(cfg)
    modules = modeling_modules(getattr(text, "model_type", model_type)) or modeling_modules(model_type)
    cls, _ = text_rotary_class(modules, text)
    if cls is None:
        return None
    model_classes = [c for c in hf_source.classes_named(modules, "Model") if hf_source.is_text_name(c.__name__)]
    name, built = hf_source.rotary_assignment(model_classes, text)
    if name is None and built is None:
        attentions = [c for c in hf_source.classes_named(modules, "Attention") if hf_source.is_text_name(c.__name__)]
        name, built = hf_source.rotary_assignment(attentions, text)
    if built is False:
        return False
    fn, note = apply_function(modules, text)
    if fn is not None:
        return True
    if "no text class calls" in note:
        return False
    return None


def _switch_names(model_type: str, cfg: Any) -> dict[str, set[Any]]:
    """Config attributes read in the ``if`` tests (and ``x if test else y``) of the text model's and its
    attention's ``__init__`` / ``forward``, with the constants they are compared with."""
    text = text_config_of(cfg)
    modules = modeling_modules(getattr(text, "model_type", model_type)) or modeling_modules(model_type)
    classes = [c for c in hf_source.classes_named(modules, "") if hf_source.is_text_name(c.__name__)
               and (c.__name__.endswith(("Model", "Attention", "Layer")))]
    found: dict[str, set[Any]] = {}
    for cls in classes:
        for fname in ("__init__", "forward"):
            fn = vars(cls).get(fname)
            if fn is None:
                continue
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
            except (OSError, TypeError, SyntaxError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.If, ast.IfExp)):
                    continue
                for sub in ast.walk(node.test):
                    attr: Any = None
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, (ast.Name, ast.Attribute)):
                        base = sub.value
                        if (isinstance(base, ast.Name) and base.id in ("config", "self")) or (
                                isinstance(base, ast.Attribute) and base.attr == "config"):
                            attr = sub.attr
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "getattr" \
                            and len(sub.args) >= 2 and isinstance(sub.args[1], ast.Constant):
                        attr = sub.args[1].value
                    if not isinstance(attr, str) or _get(text, attr) is None and attr not in vars(text):
                        continue
                    consts = found.setdefault(attr, set())
                    for c in ast.walk(node.test):
                        if isinstance(c, ast.Constant) and isinstance(c.value, (str, bool)):
                            consts.add(c.value)
    return {k: v for k, v in found.items() if isinstance(_get(text, k), (str, bool, type(None)))}


def switches(model_type: str) -> dict[str, tuple[Any, tuple[Any, ...], tuple[Any, ...], bool]]:
    """``{key: (class default, values that switch RoPE on, values that switch it off, what any other value
    does)}`` for each config key whose value alone decides whether the model applies its RoPE."""
    try:
        cfg = build(model_type)
    except Exception:
        return {}
    text = text_config_of(cfg)
    base = rope_applied(model_type, cfg)
    out: dict[str, tuple[Any, tuple[Any, ...], tuple[Any, ...], bool]] = {}
    for attr, consts in sorted(_switch_names(model_type, cfg).items()):
        default = _get(text, attr)
        candidates = {v for v in consts if isinstance(v, (str, bool))} | {default}
        if isinstance(default, bool) or any(isinstance(v, bool) for v in candidates):
            candidates |= {True, False}
        results: dict[Any, bool | None] = {}
        for value in sorted(candidates, key=repr):
            if value == default:
                results[value] = base
                continue
            try:
                probe = build(model_type, **{attr: value}) if text is cfg else None
            except Exception:
                continue
            if probe is None:
                continue
            results[value] = rope_applied(model_type, probe)
        if any(r is None for r in results.values()) or len({r for r in results.values()}) < 2:
            continue
        other = True
        if all(isinstance(v, str) or v is None for v in results):
            try:
                probe = build(model_type, **{attr: "__other__"})
                other_r = rope_applied(model_type, probe)
            except Exception:
                other_r = None
            if other_r is None:
                continue
            other = other_r
        on = tuple(sorted((v for v, r in results.items() if r), key=repr))
        off = tuple(sorted((v for v, r in results.items() if not r), key=repr))
        out[attr] = (_plain(default), on, off, other)
    return out


#: Keys that switch a model's RoPE off in the generic rules (docs/hf-configs.md), read for a transformers
#: family only when its modeling or configuration source reads them (:func:`reads_key`).
SWITCH_KEYS = ("position_embedding_type", "alibi", "use_rope", "use_mem_rope", "mla_use_nope")


def reads_key(model_type: str, key: str) -> bool:
    """Does the modeling or configuration source of ``model_type`` read config key ``key`` (``config.key``,
    ``self.config.key``, ``getattr(config, "key")``, ``kwargs.pop("key")``)? An attribute of the same name
    set from something else (Llama 4's ``self.use_rope = config.no_rope_layers[i]``) does not count, nor a key
    that is not an attribute of this model type's config class (a sub-model's: Evolla's protein encoder)."""
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    if key not in _fields(model_type):
        try:
            if key not in vars(build(model_type)):
                return False  # not an attribute of this config class: a sub-model's key (Evolla's protein encoder)
        except Exception:
            return False
    pattern = re.compile(rf'config\.{key}\b|["\']{key}["\']')
    texts = []
    for mod in modeling_modules(model_type):
        try:
            texts.append(inspect.getsource(mod))
        except (OSError, TypeError):
            continue
    name = model_type_to_module_name(model_type)
    folder = os.path.join(os.path.dirname(transformers.__file__), "models", name)
    if os.path.isdir(folder):
        for file in sorted(os.listdir(folder)):
            if file.startswith("configuration_") and file.endswith(".py"):
                try:
                    texts.append(inspect.getsource(importlib.import_module(f"transformers.models.{name}.{file[:-3]}")))
                except Exception:
                    continue
    return any(pattern.search(t) for t in texts)


def model_classes() -> dict[str, tuple[str, ...]]:
    """``{model type: class names}``: every class name transformers' auto mappings give the model type."""
    from transformers.models.auto import modeling_auto

    out: dict[str, set[str]] = {}
    for name, table in vars(modeling_auto).items():
        if not (name.startswith("MODEL") and name.endswith("MAPPING_NAMES") and isinstance(table, Mapping)):
            continue
        for model_type, classes in table.items():
            for cls in ([classes] if isinstance(classes, str) else list(classes or ())):
                if isinstance(cls, str):
                    out.setdefault(model_type, set()).add(cls)
    return {mt: tuple(sorted(names)) for mt, names in sorted(out.items())}


def config_class_names() -> dict[str, str]:
    """``{model type: its config class name}`` (``CONFIG_MAPPING_NAMES``)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return dict(sorted(CONFIG_MAPPING_NAMES.items()))


def class_owners(classes: Mapping[str, tuple[str, ...]], config_names: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """For each class name that several model types map to (``LlamaForCausalLM``: llama, exaone, internlm3,
    iquestcoder), the model types whose ``transformers.models`` folder defines it."""
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    owners: dict[str, set[str]] = {}
    for mt, names in classes.items():
        for name in names:
            owners.setdefault(name, set()).add(mt)
    for mt, name in config_names.items():
        owners.setdefault(name, set()).add(mt)
    out: dict[str, tuple[str, ...]] = {}
    for name, types in sorted(owners.items()):
        if len(types) < 2:
            continue
        try:
            folder = getattr(transformers, name).__module__.split(".")[2]
        except Exception:
            continue
        own = tuple(sorted(mt for mt in types if model_type_to_module_name(mt) == folder))
        if own and own != tuple(sorted(types)):
            out[name] = own
    return out


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
    if text is composite or _get(composite, "text_config") is not text or _get(text, "model_type") != text_type:
        return {}
    out: dict[str, Any] = {}
    for _round in range(3):  # a key the text class derives (head_dim from hidden_size) is kept when it differs
        for key in DEFAULT_KEYS:
            a, b = _plain(_get(text, key)), _plain(_get(own, key))
            if a != b and a is not None:
                out[key] = a
        try:
            own = build(text_type, **out)
        except Exception:
            break
    mine, theirs = rope_entries(text) or {}, rope_entries(own) or {}
    if set(mine) == set(theirs):
        for label, entry in mine.items():
            for param in _PARAMS:
                a, b = (entry or {}).get(param), (theirs.get(label) or {}).get(param)
                if a != b and a is not None:
                    out[f"rope:{label or ''}.{param}"] = _plain(a)
    return out


def _layer_lists(model_type: str, counts: tuple[int, ...]) -> dict[int, tuple[str, ...]] | None:
    out: dict[int, tuple[str, ...]] = {}
    for n in counts:
        try:
            built = _get(build(model_type, num_hidden_layers=n), "layer_types")
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
                child = _get(node, key)
                if child is target:
                    return (*path, key)
                if child is not None and hasattr(type(child), "sub_configs"):
                    nxt.append(((*path, key), child))
        frontier = nxt
    return None
