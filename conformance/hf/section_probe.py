"""How a transformers config class builds its RoPE entries, read by building it (:func:`rope_section`): the
``ROPE_SECTIONS`` facts of ``roperef/hf/config_classes.py`` (``scripts/gen_hf_config_classes.py``).

The class is built with no section, with a section in its own shape, with a flat legacy ``rope_scaling`` and
(for a class with per-layer-type entries) a flat ``rope_parameters``; in each mode, with each key outside the
section that could set a theta or a rotary fraction (:data:`LEGACY_CANDIDATES` and the names the class's own
source spells), and with a value written inside the section. What changes, and how, is the rule. transformers
is imported by :mod:`conformance.hf.class_probe` when a class is built (an optional dependency).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping
from typing import Any

from .class_probe import PARAMS as _PARAMS
from .class_probe import build, config_class, head_width, plain, rope_entries

__all__ = ["LEGACY_CANDIDATES", "rope_section"]

#: Keys outside the RoPE section that a config class may turn into a RoPE parameter, probed for every class
#: (plus every such name its own source spells: ``global_rope_theta``, ``swa_rope_theta``, ...).
LEGACY_CANDIDATES = ("rope_theta", "partial_rotary_factor", "rotary_pct", "rotary_dim", "rotary_emb_base",
                     "rope_local_base_freq", "swa_rope_theta", "global_rope_theta", "local_rope_theta",
                     "compress_rope_theta", "rope_ratio", "qk_rope_head_dim")
_THETA_PROBE = 123457.0
_RHO_PROBES = (0.375, 0.5, 0.25, 0.75)
_NAME = re.compile(r'"([a-z_0-9]*(?:rope|rotary|theta|base_freq)[a-z_0-9]*)"')
_NOT_LEGACY = frozenset({"rope_parameters", "rope_scaling", "rope_type", "type", "rope_interleave",
                         "mrope_section", "mrope_interleaved", "indexer_rope_interleave", "use_rope",
                         "use_mem_rope", "rotary_emb", "rotary_pos_emb", "layer_rope_theta", "partial_rotary_factors",
                         "max_position_embeddings", "mla_use_nope", "default_theta", "rope_layers"})


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
    built: dict[str | None, Any] | None = None
    chosen: Mapping[str | None, Mapping[str, Any]] = {}
    entry: Mapping[str, Any] = {}
    layouts: tuple[Mapping[str | None, Mapping[str, Any]] | None, ...] = (None, own)
    for base in layouts:
        for entry in tries:
            built = _build_entries(model_type, _section_for(mode, labels, entry, base))
            if built is not None:
                break
        if built is not None:
            chosen = base or {}
            break
    if built is None:
        return None

    def section_of(written: Mapping[str, Any]) -> Any:
        return _section_for(mode, labels, written, chosen)

    keys = list(built)
    kind = entry.get("rope_type")
    into = tuple(k for k in keys if mode != "absent" and (built[k] or {}).get("rope_type") == kind
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
        got = built[label]
        if got is None:
            out["labels"][label] = None
            continue
        rules: dict[str, Any] = {
            "base": {} if label in into else {k: plain(v) for k, v in got.items() if k not in _PARAMS
                                               and plain(v) is not None and k != "max_position_embeddings"},
            "extra": {},
        }
        for param in _PARAMS:
            rule: dict[str, Any] = {"default": plain(got.get(param)), "keys": [], "section_wins": None}
            for name, (value, after) in with_key.items():
                found = (after[label] or {}).get(param)
                how = _matches(found, value, head)
                if how is not None and plain(found) != rule["default"]:
                    rule["keys"].append((name, how))
            if label in into and written.get(param) is not None:
                mine = inner[param]
                if plain(((written[param] or {}).get(label) or {}).get(param)) != mine:
                    rule["section_wins"] = False  # the class replaces the section's value
                elif rule["keys"]:
                    name = rule["keys"][0][0]
                    both = _build_entries(model_type, section_of(dict(entry, **{param: mine})),
                                          **{name: with_key[name][0]})
                    if both is not None and set(both) == set(keys):
                        rule["section_wins"] = plain((both[label] or {}).get(param)) == mine
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
            added = {k: plain(v) for k, v in (after[label] or {}).items() if k not in typed and k not in _PARAMS
                     and k not in _SECTION_KEYS and plain(v) is not None}
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
    head = head_width(cfg)
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
