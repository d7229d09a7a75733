"""The generated config-class rules (:mod:`roperef.hf.config_classes`) as Markdown, for docs/hf-configs.md.

``python scripts/gen_hf_config_classes.py --doc docs/hf-configs.md`` rewrites the section between
:data:`BEGIN` and :data:`END` with :func:`rules_markdown`; ``tests/roperef/hf/test_hf_config_classes.py`` checks the page
holds what the checked-in tables give. Only the rules that differ from transformers' base class are listed
(``rope_theta`` and ``partial_rotary_factor`` read the generic way, theta 10000, no rotary fraction, every
layer full attention); the file holds all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roperef.hf import config_classes as cc

__all__ = ["BEGIN", "END", "rules_markdown", "layer_rule_words"]

BEGIN = "<!-- config-class-rules:begin (scripts/gen_hf_config_classes.py --doc) -->"
END = "<!-- config-class-rules:end -->"
_PLAIN_KEYS = {("rope_theta", "rope_theta", "value"), ("partial_rotary_factor", "partial_rotary_factor", "value")}
_MODE_WORDS = {"absent": "no section", "given": "a section", "flat": "a flat rope_scaling",
               "flat_params": "a flat rope_parameters"}


def _label(label: str | None) -> str:
    return label or "(one entry)"


def layer_rule_words(rule: tuple[Any, ...]) -> str:
    """``(period, offset, every, other, first_k, first, last)`` in words."""
    period, offset, every, other, first_k, first, last = rule
    if not period:
        text = f"every layer `{other}`"
    else:
        text = f"`{every}` where (i + {offset}) % {period} == 0, else `{other}`"
    if first_k:
        text += f"; the first {first_k} `{first}`"
    if last is not None:
        text += f"; the last `{last}`"
    return text


def _outside_keys(section: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(key, entry.parameter, how, when)`` for the keys outside the section a class reads otherwise than the base."""
    found: dict[tuple[str, str, str], set[str]] = {}
    for mode, rules in section["modes"].items():
        for label, per in rules["labels"].items():
            if not per:
                continue
            for param in ("rope_theta", "partial_rotary_factor"):
                for key, kind in per[param]["keys"]:
                    found.setdefault((key, f"{_label(label)}.{param}", kind), set()).add(mode)
    out = []
    for (key, target, kind), modes in sorted(found.items()):
        plain = (key, target.rsplit(".", 1)[1], kind) in _PLAIN_KEYS and target.startswith("(one entry)")
        if plain and modes >= set(section["modes"]):
            continue
        how = "its value" if kind == "value" else "value / head_dim"
        out.append((key, target, how, ", ".join(_MODE_WORDS[m] for m in sorted(modes))))
    return out


def _into(section: Mapping[str, Any], mode: str) -> str:
    found = section["modes"].get(mode)
    if found is None:
        return "(the class cannot be built with it: refused)"
    labels = [_label(x) for x in found["into"]]
    return ", ".join(labels) if labels else "none (ignored)"


def rules_markdown() -> str:
    """The generated rules that differ from transformers' base config class, one table per kind."""
    lines = [f"Generated from transformers {cc.TRANSFORMERS_VERSION} (`roperef/hf/config_classes.py`): "
             f"{len(cc.ROPE_SECTIONS)} RoPE sections, {len(cc.CLASS_DEFAULTS)} classes' size defaults, "
             f"{len(cc.LAYER_TYPES_RULES)} layer-type rules, {len(cc.ROPE_SWITCHES)} switches.", ""]
    rows = [(mt, *row) for mt, section in cc.ROPE_SECTIONS.items() for row in _outside_keys(section)]
    lines += ["Keys outside the RoPE section a class reads otherwise than `rope_theta` -> theta and "
              "`partial_rotary_factor` -> rotary fraction (a family's own spelling, a key read only in some cases; "
              "every other such key is ignored, and noted):", "",
              "| model type | key | sets | to | when the config gives |", "|---|---|---|---|---|"]
    lines += [f"| {mt} | `{key}` | {target} | {how} | {when} |" for mt, key, target, how, when in rows]
    defaults = []
    for mt, section in cc.ROPE_SECTIONS.items():
        absent = section["modes"].get("absent", {}).get("labels", {})
        for label, per in absent.items():
            if not per:
                continue
            theta, rho = per["rope_theta"]["default"], per["partial_rotary_factor"]["default"]
            kind = (per["base"] or {}).get("rope_type", "default")
            if theta not in (None, 10000.0) or rho is not None or kind != "default":
                defaults.append((mt, _label(label), kind, theta, rho))
    lines += ["", "Entries a class builds when the config gives no RoPE key, where they are not `default` at 10000 "
              "over the whole head (a rotary fraction here is the backward-compatibility default a class sets, "
              "GLM's and Phi's 0.5):", "", "| model type | entry | rope_type | theta | rotary fraction |",
              "|---|---|---|---|---|"]
    lines += [f"| {mt} | {label} | {kind} | {theta} | {rho if rho is not None else ''} |"
              for mt, label, kind, theta, rho in defaults]
    lines += ["", "Where a flat legacy section lands in a class with per-layer-type entries (the other entries keep "
              "the class's own):", "", "| model type | entries | `rope_scaling` lands in | flat `rope_parameters` lands in |",
              "|---|---|---|---|"]
    for mt, section in cc.ROPE_SECTIONS.items():
        if section["labels"]:
            lines.append(f"| {mt} | {', '.join(section['labels'])} | {_into(section, 'flat')} | "
                         f"{_into(section, 'flat_params')} |")
    lines += ["", "Switches: the model builds and applies its rotary embedding only for these values (the class "
              "default when the config omits the key):", "", "| model type | key | default | RoPE on | RoPE off |",
              "|---|---|---|---|---|"]
    for mt, keys in cc.ROPE_SWITCHES.items():
        for key, (default, on, off, other) in keys.items():
            tail = " and any other value" if not other else ""
            lines.append(f"| {mt} | `{key}` | {default!r} | {', '.join(map(repr, on))} | "
                         f"{', '.join(map(repr, off))}{tail} |")
    lines += ["", "Generic switch keys and the families whose source reads them (elsewhere transformers ignores "
              "them, and so does roperef, noted): " + "; ".join(
                  f"`{k}`: {', '.join(sorted(v)) or 'none'}" for k, v in cc.KEY_READERS.items()), ""]
    lines += ["Layer types a class builds when the config gives no `layer_types` (and no key of its own for them; "
              "every layer full attention is not listed):", "", "| model type | rule |", "|---|---|"]
    lines += [f"| {mt} | {layer_rule_words(rule)} |" for mt, rule in cc.LAYER_TYPES_RULES.items()]
    lines += ["", "Head width a class sets itself: " + "; ".join(
        f"{mt}: `{key}` = {k} * hidden_size // num_attention_heads" + (" (overwrites a given one)" if always else
                                                                       " (when the config gives none)")
        for mt, (k, key, always) in cc.HEAD_DIM_FROM_HIDDEN.items()) + ".", ""]
    lines += ["Composites whose text config is not at `text_config`: " + "; ".join(
        f"{mt}: `{'.'.join(path)}`" for mt, path in cc.TEXT_PATHS.items()) + ".", ""]
    lines += ["What a composite sets in a `text_config` it is given: " + "; ".join(
        f"{mt}: " + ", ".join(f"{k.replace('rope:.', '')}={v}" for k, v in fills.items())
        for mt, fills in cc.WRAPPER_TEXT_FILLS.items()) + "."]
    return "\n".join(lines)
