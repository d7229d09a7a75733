"""A minimal published-style config for every RoPE family of transformers, and its cross-check.

A checkpoint's ``config.json`` rarely spells out everything its config class builds: older ones carry the
legacy RoPE keys (a top-level ``rope_theta``, ``rope_scaling`` only when scaled, a family's own spelling
such as ``rotary_pct`` or ``rope_local_base_freq``), no ``layer_types``, no ``head_dim`` when it is
``hidden_size // num_attention_heads``, and a composite's ``text_config`` often leaves out the sizes its text
class fills with defaults. :func:`published_style` builds such a config from the class itself:

- ``model_type`` and the ``architectures`` entry transformers maps to it (the causal-LM class, else the base
  model class);
- the sizes a checkpoint writes (``hidden_size``, ``num_attention_heads``, ``num_hidden_layers``,
  ``max_position_embeddings``; ``head_dim`` only when it is not ``hidden_size // num_attention_heads``), at
  the class's default values;
- the RoPE of the class's default config written the legacy way: a flat section becomes ``rope_theta`` (and
  ``rope_scaling`` without theta and rotary fraction when it is not ``default``); a section nested by layer
  type is kept as it is (no legacy form exists for it);
- every other key left out: the class fills it with its default (``layer_types``, ``partial_rotary_factor``
  set "for backward compatibility", a family's layer-pattern key, ...).

A composite model type whose text config is a RoPE family gets ``{"model_type", "architectures",
<its text sub-config keys>: the text family's published-style dict without sizes}``.

:func:`check_family` runs :func:`conformance.hf.crosscheck.cross_check` on it (``REFUSED`` when roperef
refuses it, with the message). ``tests/roperef/hf/test_hf_published_style.py`` runs it for every family and lists
each one that does not agree, with the reason; ``scripts/cross_check_presets.py`` prints the table into
docs/hf-configs.md. transformers is imported inside the functions (an optional dependency).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roperef.hf import config_classes as cc
from roperef.hf import families as fam

from .crosscheck import cross_check

__all__ = ["FamilyCheck", "published_style", "composite_style", "check_family", "families_to_check", "same_as"]

#: The sizes a checkpoint's config.json writes (a composite's text_config may leave them out).
_SIZES = ("hidden_size", "num_attention_heads", "num_hidden_layers", "max_position_embeddings", "head_dim")
_PARAMS = ("rope_theta", "partial_rotary_factor")


@dataclass(frozen=True)
class FamilyCheck:
    """The cross-check of one family's published-style config: ``verdict`` AGREE / DIFFER / NOT_CHECKED /
    REFUSED, and the items (or the refusal) that are not AGREE, in words."""

    model_type: str
    verdict: str
    detail: str
    config: Mapping[str, Any]


def _architectures(model_type: str) -> list[str]:
    names = cc.MODEL_CLASSES.get(model_type, ())
    for suffix in ("ForCausalLM", "ForConditionalGeneration", "Model"):
        found = sorted(n for n in names if n.endswith(suffix))
        if found:
            return [found[0]]
    return []


def _legacy_rope(model_type: str) -> dict[str, Any]:
    """The RoPE keys of the class's default config, the way a pre-``rope_parameters`` checkpoint writes them."""
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type)
    params = getattr(cfg, "rope_parameters", None) if hasattr(cfg, "rope_parameters") else None
    if not isinstance(params, Mapping) or not params:
        theta = getattr(cfg, "rope_theta", None)
        return {"rope_theta": theta} if isinstance(theta, (int, float)) else {}
    nested = list(cfg.nested_rope_parameter_keys(dict(params))) if hasattr(cfg, "nested_rope_parameter_keys") else []
    if nested:
        return {"rope_parameters": {k: (dict(params[k]) if isinstance(params[k], Mapping) else None) for k in nested}}
    flat = dict(params)
    out: dict[str, Any] = {}
    if flat.get("rope_theta") is not None:
        out["rope_theta"] = flat["rope_theta"]
    scaled = {k: v for k, v in flat.items() if k not in _PARAMS}
    kind = scaled.get("rope_type", scaled.get("type", "default"))
    if kind != "default" or any(k not in ("rope_type", "type") for k in scaled):
        out["rope_scaling"] = scaled
    return out


def _sizes(model_type: str) -> dict[str, Any]:
    """The sizes a checkpoint writes (:data:`_SIZES`, under the class's own field names), ``head_dim`` only when
    it is not ``hidden_size // num_attention_heads``."""
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type)
    data = cfg.to_dict()
    aliases = {k: v for k, v in (getattr(type(cfg), "attribute_map", None) or {}).items() if isinstance(v, str)}
    out = {}
    for key in _SIZES:
        name = key if key in data else aliases.get(key, key)
        if isinstance(data.get(name), int) and not isinstance(data.get(name), bool):
            out[name] = data[name]
    hidden, heads = out.get(aliases.get("hidden_size", "hidden_size")), out.get(aliases.get("num_attention_heads",
                                                                                            "num_attention_heads"))
    if isinstance(hidden, int) and isinstance(heads, int) and heads and out.get("head_dim") == hidden // heads:
        del out["head_dim"]
    return out


def published_style(model_type: str, sizes: bool = True) -> dict[str, Any]:
    """The minimal published-style config of RoPE family ``model_type`` (see the module docstring); without
    ``sizes``, as a composite's ``text_config`` that leaves them to the text class."""
    out: dict[str, Any] = {"model_type": model_type}
    archs = _architectures(model_type)
    if archs:
        out["architectures"] = archs
    if sizes:
        out.update(_sizes(model_type))
    out.update(_legacy_rope(model_type))
    return out


def composite_style(composite: str) -> dict[str, Any] | None:
    """A composite's published-style config: its text family's, without sizes, under the sub-config keys its
    class reads it from (``text_config``; ``thinker_config.text_config``, ``vlm_config.text_config``, ... as
    :data:`roperef.hf.config_classes.TEXT_PATHS` says); None when its text family has no RoPE."""
    text_type, _vision = fam.WRAPPER_FAMILIES.get(composite, (None, None))
    if text_type is None or text_type not in fam.ROPE_FAMILIES:
        return None
    path = cc.TEXT_PATHS.get(composite, ("text_config",))
    out: dict[str, Any] = {"model_type": composite}
    archs = _architectures(composite)
    if archs:
        out["architectures"] = archs
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = {k: v for k, v in published_style(text_type, sizes=False).items() if k != "architectures"}
    return out


def same_as() -> dict[str, str]:
    """Composite -> the first composite (alphabetically) that roperef and transformers read the same way: same
    text family, same path to its text config, same values the composite sets in it. Checking one of them
    checks all (``roperef`` reads nothing else of a composite; transformers builds the same text class)."""
    seen: dict[tuple[Any, ...], str] = {}
    out: dict[str, str] = {}
    for composite, (text, _vision) in sorted(fam.WRAPPER_FAMILIES.items()):
        if text not in fam.ROPE_FAMILIES:
            continue
        key = (text, cc.TEXT_PATHS.get(composite, ("text_config",)),
               tuple(sorted(cc.WRAPPER_TEXT_FILLS.get(composite, {}).items())))
        out[composite] = seen.setdefault(key, composite)
    return out


def families_to_check() -> list[str]:
    """Every RoPE family (``ROPE_FAMILIES``), then one composite per way of reading one (:func:`same_as`)."""
    composites = sorted({first for first in same_as().values()})
    return sorted(fam.ROPE_FAMILIES) + composites


def check_family(model_type: str) -> FamilyCheck:
    """Cross-check ``model_type``'s published-style config against transformers."""
    config = composite_style(model_type) if model_type in fam.WRAPPER_FAMILIES else published_style(model_type)
    if config is None:
        return FamilyCheck(model_type, "NOT_CHECKED", "its text family has no RoPE", {})
    try:
        check = cross_check(config)
    except (ValueError, TypeError) as exc:
        return FamilyCheck(model_type, "REFUSED", str(exc)[:300], config)
    detail = "; ".join(f"{i.entry}/{i.what} {i.verdict}: roperef {i.roperef}, transformers {i.transformers}"[:200]
                       for i in check.items if i.verdict in ("DIFFER", "ERROR"))
    if not check.shipped:
        detail = "; ".join(check.notes)
    return FamilyCheck(model_type, check.verdict, detail, config)
