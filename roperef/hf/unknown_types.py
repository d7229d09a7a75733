"""A ``model_type`` transformers does not ship, read through the classes its config names.

A repack often renames ``model_type`` (``"mistral_custom"``) while its ``architectures`` still name the
transformers class that runs it (``MistralForCausalLM``), or its ``auto_map`` names remote classes that
carry a transformers class name (``modeling_deepseek.DeepseekV3ForCausalLM``). :func:`family_of` maps those
names to model types with the generated :data:`~roperef.hf.config_classes.MODEL_CLASSES` /
:data:`~roperef.hf.config_classes.CONFIG_CLASS_NAMES` (a class several model types share goes to the one
whose folder defines it, :data:`~roperef.hf.config_classes.CLASS_OWNERS`; a composite to its text model
type). One family: the config is read as that family (and said in a note). None, or several that differ:
nothing is guessed; the caller refuses, naming the classes and the ``--set`` that decides.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from . import config_classes as cc
from . import families as fam

__all__ = ["Resolution", "family_of", "class_names", "remote_code_names"]


@functools.cache
def _class_types() -> Mapping[str, tuple[str, ...]]:
    """class name -> the model types it belongs to (computed once, on first use, from the generated tables)."""
    out: dict[str, set[str]] = {}
    for mt, names in cc.MODEL_CLASSES.items():
        for name in names:
            out.setdefault(name, set()).add(mt)
    for mt, name in cc.CONFIG_CLASS_NAMES.items():
        out.setdefault(name, set()).add(mt)
    return MappingProxyType({name: tuple(cc.CLASS_OWNERS.get(name, sorted(types))) for name, types in out.items()})


@dataclass(frozen=True)
class Resolution:
    """``model_type``: the family the names give (None: none, or several that differ); ``names``: the class
    names the config gives; ``families``: the distinct text families they map to."""

    model_type: str | None
    names: tuple[str, ...]
    families: tuple[str, ...]


def _class_name(value: Any) -> str | None:
    """``"modeling_x.XForCausalLM"`` / ``"org/repo--modeling_x.XForCausalLM"`` -> ``XForCausalLM``."""
    if not isinstance(value, str) or not value:
        return None
    return value.rsplit(".", 1)[-1].rsplit("--", 1)[-1] or None


def remote_code_names(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    """The class names ``auto_map`` points to (remote code), in the order given."""
    auto_map = cfg.get("auto_map")
    out: list[str] = []
    if isinstance(auto_map, Mapping):
        for value in auto_map.values():
            for item in value if isinstance(value, (list, tuple)) else [value]:
                name = _class_name(item)
                if name is not None and name not in out:
                    out.append(name)
    return tuple(out)


def class_names(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    """``architectures`` entries, then ``auto_map`` class names (distinct, in order)."""
    out: list[str] = []
    archs = cfg.get("architectures")
    for item in archs if isinstance(archs, (list, tuple)) else []:
        name = _class_name(item)
        if name is not None and name not in out:
            out.append(name)
    for name in remote_code_names(cfg):
        if name not in out:
            out.append(name)
    return tuple(out)


def _text_family(model_type: str) -> str:
    text, _vision = fam.WRAPPER_FAMILIES.get(model_type, (None, None))
    return text or model_type


def family_of(cfg: Mapping[str, Any]) -> Resolution:
    """The transformers family the class names of ``cfg`` give (see the module docstring)."""
    names = class_names(cfg)
    families: list[str] = []
    for name in names:
        types = _class_types().get(name, ())
        texts = sorted({_text_family(mt) for mt in types})
        if len(texts) == 1 and texts[0] not in families:
            families.append(texts[0])
        elif len(texts) > 1:
            families.extend(t for t in texts if t not in families)
    one = families[0] if len(families) == 1 else None
    return Resolution(one, names, tuple(families))
