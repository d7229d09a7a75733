"""Whether a transformers model applies its RoPE for a config, and the config keys that switch it
(:func:`switches`: ESM ``position_embedding_type``, Zamba2 ``use_mem_rope``), and which generic switch keys a
family's source reads (:func:`reads_key`): the ``ROPE_SWITCHES`` / ``KEY_READERS`` facts of
``roperef/hf/config_classes.py``. transformers is imported inside the functions (an optional dependency).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import textwrap
from typing import Any

from . import source as hf_source
from .class_probe import build, field_defaults, plain, read_attr
from .truth import apply_function, modeling_modules, text_config_of, text_rotary_class

__all__ = ["SWITCH_KEYS", "rope_applied", "switches", "reads_key"]


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
                    if not isinstance(attr, str) or read_attr(text, attr) is None and attr not in vars(text):
                        continue
                    consts = found.setdefault(attr, set())
                    for c in ast.walk(node.test):
                        if isinstance(c, ast.Constant) and isinstance(c.value, (str, bool)):
                            consts.add(c.value)
    return {k: v for k, v in found.items() if isinstance(read_attr(text, k), (str, bool, type(None)))}


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
        default = read_attr(text, attr)
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
        out[attr] = (plain(default), on, off, other)
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

    if key not in field_defaults(model_type):
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
