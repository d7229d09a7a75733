"""What transformers itself does with a config: its rotary module(s) built in memory, probed.

:func:`transformers_truth` builds the family's config object (``AutoConfig.for_model``, no download, no
weights), finds the text model's rotary-embedding class in the family's modeling source, builds it
from the config, and reads per RoPE entry (one, or one per layer type / rope label):

- ``inv_freq`` (HF's float32 buffer, as float64) and ``attention_scaling``;
- the pairing / rotary window / mRoPE layout the family's apply function really uses: the apply
  function the attention's ``forward`` calls (:mod:`conformance.hf_source`) is run on random float64
  input with the module's own cos/sin, and its output is matched against each candidate structure
  rotated with HF's own frequencies (so a frequency difference cannot hide a pairing difference);
- per decoder layer, which entry applies or none (``layer_types``, ``no_rope_layers``, hybrid types);
- whether the model builds a rotary module at all for this config.

Vision towers: ``inv_freq`` of the vision rotary module when it can be built from the vision config.
torch and transformers are imported inside the functions (optional dependencies).
"""

from __future__ import annotations

import importlib
import inspect
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.layout import pair_axes
from roperef.reference import apply as rotate
from roperef.spec import PAIRINGS, RopeSpec

from . import hf_source

__all__ = ["Probe", "HFEntry", "HFTruth", "transformers_truth", "NON_ATTENTION_LAYER_TYPES", "hf_config", "quiet_transformers",
           "modeling_modules", "text_config_of", "text_rotary_class", "rope_labels", "entry_tensors", "apply_function"]

#: Layer types transformers configs use for layers without attention (so without RoPE).
NON_ATTENTION_LAYER_TYPES = frozenset({
    "linear_attention", "mamba", "mamba2", "conv", "ssm", "recurrent", "moe", "mlp", "deltanet", "gated_deltanet",
    "kda", "lightning_attention", "rwkv", "hyena",
})
_PROBE_POSITIONS = 256  # float32 angles stay within ~1.5e-5 of exact below this
_PROBE_TOL = 1e-4


@dataclass(frozen=True)
class Probe:
    """The structure found by running the apply function: ``found`` false when no candidate matched."""

    function: str
    width: int
    found: bool
    pairing: str | None = None
    rotary_start: int | None = None
    mrope_layout: str | None = None
    error: float = float("nan")
    note: str = ""


@dataclass(frozen=True)
class HFEntry:
    """One RoPE entry of the transformers module."""

    label: str
    inv_freq: np.ndarray
    attention_scaling: float
    probe: Probe | None = None
    note: str = ""


@dataclass(frozen=True)
class HFTruth:
    """transformers' view of a config (``shipped`` false: the model type is not in transformers)."""

    model_type: str
    shipped: bool
    rope: bool | None = None
    entries: Mapping[str, HFEntry] = field(default_factory=dict)
    layers: tuple[str | None, ...] | None = None
    vision: HFEntry | None = None
    notes: tuple[str, ...] = ()
    indexer: Probe | None = None


def quiet_transformers() -> None:
    """Silence transformers' logging and warnings (a probe builds many models)."""
    import transformers

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore", module="transformers")


def modeling_modules(model_type: str) -> list[Any]:
    """The importable ``transformers.models.<name>.modeling_*`` modules of ``model_type`` (none: ``[]``)."""
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = model_type_to_module_name(model_type)
    folder = os.path.join(os.path.dirname(transformers.__file__), "models", name)
    if not os.path.isdir(folder):
        return []
    out = []
    for file in sorted(os.listdir(folder)):
        if file.startswith("modeling_") and file.endswith(".py") and not file.startswith("modeling_tf_"):
            try:
                out.append(importlib.import_module(f"transformers.models.{name}.{file[:-3]}"))
            except Exception:
                continue
    return out


def hf_config(config: Mapping[str, Any]) -> Any:
    """The transformers config object of a config dict (``AutoConfig.for_model``), built in memory."""
    from transformers import AutoConfig

    data = {k: v for k, v in config.items() if not str(k).startswith("_")}
    model_type = data.pop("model_type")
    return AutoConfig.for_model(model_type, **_copy(data))


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def text_config_of(cfg: Any) -> Any:
    """The decoder text config of a transformers config (the config itself when it has none)."""
    try:
        text = cfg.get_text_config(decoder=True)
    except Exception:
        text = getattr(cfg, "text_config", None) or cfg
    return text


def _config_prefix(cfg: Any) -> str:
    name = type(cfg).__name__
    return name[: -len("Config")] if name.endswith("Config") else name


def _takes_config(cls: type) -> bool:
    params = list(inspect.signature(inspect.getattr_static(cls, "__init__")).parameters)[1:]  # the plain function: self first
    return bool(params) and params[0] == "config"


def text_rotary_class(modules: list[Any], text_cfg: Any) -> tuple[type | None, str]:
    """The rotary class the text model builds, with how it was chosen."""
    model_classes = [c for c in hf_source.classes_named(modules, "Model") if hf_source.is_text_name(c.__name__)]
    prefix = _config_prefix(text_cfg)
    preferred = [c for c in model_classes if c.__name__ == f"{prefix}Model"] + model_classes
    name, _ = hf_source.rotary_assignment(preferred, text_cfg)
    rotary = {c.__name__: c for c in hf_source.classes_named(modules, "RotaryEmbedding")}
    if name in rotary:
        return rotary[name], "assigned in the text model"
    exact = rotary.get(f"{prefix}RotaryEmbedding")
    if exact is not None:
        return exact, "named after the config class"
    text = [c for n, c in rotary.items() if hf_source.is_text_name(n) and _takes_config(c)]
    if len(text) == 1:
        return text[0], "the only text rotary class"
    return None, f"no unique text rotary class (found {', '.join(rotary) or 'none'})"


def _rope_built(modules: list[Any], text_cfg: Any) -> bool | None:
    """Does the text model (or its attention) build its rotary module for this config?"""
    model_classes = [c for c in hf_source.classes_named(modules, "Model") if hf_source.is_text_name(c.__name__)]
    prefix = _config_prefix(text_cfg)
    preferred = [c for c in model_classes if c.__name__ == f"{prefix}Model"] + model_classes
    name, built = hf_source.rotary_assignment(preferred, text_cfg)
    if name is None and built is None:  # built inside the attention (ESM)
        attentions = [c for c in hf_source.classes_named(modules, "Attention") if hf_source.is_text_name(c.__name__)]
        name, built = hf_source.rotary_assignment(attentions, text_cfg)
    return built


def rope_labels(module: Any, text_cfg: Any) -> list[str]:
    """The layer-type labels ``module`` keeps a separate ``<label>_inv_freq`` for (none: one set of frequencies)."""
    names = list(getattr(text_cfg, "_rope_type_labels", None) or []) + sorted(set(getattr(text_cfg, "layer_types", None) or []))
    per = [n for n in dict.fromkeys(names) if hasattr(module, f"{n}_inv_freq")]
    return per


def entry_tensors(module: Any, label: str | None) -> tuple[np.ndarray, float]:
    """``(inv_freq as float64, attention_scaling)``; a sinusoid-table module (GPT-J, CodeGen: ``embed_positions``
    rows ``[sin(p w), cos(p w)]``) gives ``w = atan2(sin w, cos w)`` from its ``p = 1`` row."""
    prefix = f"{label}_" if label else ""
    if not hasattr(module, f"{prefix}inv_freq") and hasattr(module, "embed_positions"):
        row = module.embed_positions[1].detach().to("cpu").double().numpy()
        n = row.shape[-1] // 2
        return np.arctan2(row[:n], row[n:]), 1.0
    w = getattr(module, f"{prefix}inv_freq")
    s = getattr(module, f"{prefix}attention_scaling", 1.0)
    return w.detach().to("cpu").double().numpy().copy(), float(s)


def apply_function(modules: list[Any], text_cfg: Any) -> tuple[Any, str]:
    """The apply function the text attention's ``forward`` calls for this config (``None``: none or several)."""
    funcs = {}
    for mod in modules:
        for name, obj in vars(mod).items():
            if inspect.isfunction(obj) and obj.__module__ == mod.__name__ and name.startswith("apply") and (
                    "rotary" in name or "rope" in name):
                funcs[name] = obj
    prefix = _config_prefix(text_cfg)
    classes = [c for c in hf_source.classes_named(modules, "") if hf_source.is_text_name(c.__name__)
               and "Indexer" not in c.__name__ and "Cross" not in c.__name__ and "forward" in vars(c)]
    classes.sort(key=lambda c: (not c.__name__.startswith(prefix), not c.__name__.endswith(("Attention", "MLA")),
                                c.__name__))
    for cls in classes:
        called, certain = hf_source.attention_apply_calls(cls, text_cfg, set(funcs))
        if len(called) == 1:
            return funcs[called[0]], f"{cls.__name__}.forward calls {called[0]}"
        if called:
            why = "" if certain else " (under a condition it could not evaluate)"
            return None, f"{cls.__name__}.forward calls {', '.join(called)}{why}"
    if funcs:
        return None, f"no text class calls {', '.join(sorted(funcs))} for this config"
    return None, "no apply function in the modeling source"


def probe_apply(fn: Any, module: Any, label: str | None, width: int, w: np.ndarray, scale: float,
                mrope_section: tuple[int, ...] | None = None, note: str = "") -> Probe:
    """Run ``fn`` on random float64 q of ``width`` channels with the module's own cos/sin and match its
    output against every candidate structure (pairing x window start x mRoPE layout, and each of them
    rotating by ``-phi``) built from HF's own ``w`` and ``scale``."""
    import torch

    name = getattr(fn, "__name__", "?")
    n = len(w)
    if 2 * n > width:
        return Probe(name, width, False, note=f"HF rotates {2 * n} channels, more than the {width} probed")
    rng = np.random.default_rng(12345)
    B, T, H = 1, 5, 3
    x = rng.standard_normal((B, T, H, width))
    pos = rng.integers(0, _PROBE_POSITIONS, size=(B, T)).astype(np.int64)
    rows = pos if mrope_section is None else np.stack(
        [pos] + [rng.integers(0, _PROBE_POSITIONS, size=(B, T)) for _ in range(2)])
    kwargs = {"layer_type": label} if label is not None else {}
    try:
        emb = module(torch.zeros(B, T, width, dtype=torch.float64), torch.from_numpy(rows), **kwargs)
    except Exception as exc:
        return Probe(name, width, False, note=f"rotary module forward raised {type(exc).__name__}: {exc}"[:200])
    args = tuple(emb) if isinstance(emb, (tuple, list)) else (emb,)
    params = list(inspect.signature(fn).parameters)
    single = len(params) > 1 and params[1] in ("cos", "sin", "freqs_cis", "freqs", "rotary_pos_emb", "position_embeddings", "sincos")
    extra = {"mrope_section": list(mrope_section)} if "mrope_section" in params and mrope_section else {}
    y = None
    for layout in ("bhtd", "bthd"):
        arr = x if layout == "bthd" else x.transpose(0, 2, 1, 3)
        q = torch.from_numpy(np.ascontiguousarray(arr))
        try:
            out = fn(q, *args, **extra) if single else fn(q, q.clone(), *args, **extra)
        except Exception:
            continue
        out = out[0] if isinstance(out, (tuple, list)) else out
        if tuple(out.shape) != tuple(arr.shape):
            continue
        got = out.detach().to("cpu").double().numpy()
        y = got if layout == "bthd" else got.transpose(0, 2, 1, 3)
        break
    if y is None:
        return Probe(name, width, False, note=f"{note}; it does not take q of width {width} with the module's tables")
    best: tuple[float, str, int, str | None, bool] | None = None
    layouts = ("chunked", "interleaved") if mrope_section is not None else (None,)
    r = rows if rows.ndim == 3 else rows[None]
    for pairing in PAIRINGS:
        for start in sorted({0, width - 2 * n}):
            for lay in layouts:
                try:
                    cand = RopeSpec(head_dim=width, rotary_dim=2 * n, rotary_start=start, pairing=pairing,
                                    mrope_section=mrope_section, mrope_layout=lay or "chunked")
                except ValueError:
                    continue
                ang = np.moveaxis(r, 0, -1)[..., pair_axes(cand)].astype(np.float64) * w  # [B, T, n]
                for reverse in (False, True):
                    ref = rotate(x, np.cos(ang) * scale, np.sin(-ang if reverse else ang) * scale, cand)
                    err = float(np.max(np.abs(ref - y)) / max(float(np.max(np.abs(ref))), 1e-300))
                    if best is None or err < best[0]:
                        best = (err, pairing, start, lay, reverse)
    if best is None:
        return Probe(name, width, False, note=f"{note}; no candidate structure could be built")
    err, pairing, start, lay, reverse = best
    if err > _PROBE_TOL:
        return Probe(name, width, False, error=err, note=f"{note}; no candidate structure matches (closest: "
                     f"{pairing}, start {start}, error {err:.1e})")
    if reverse:
        return Probe(name, width, False, pairing, start, lay, err, f"{note}; it rotates by -angle ({pairing} pairs)")
    return Probe(name, width, True, pairing, start, lay, err, note)


def indexer_apply(modules: list[Any], text_cfg: Any) -> tuple[Any, str]:
    """The apply function a DSA ``*Indexer``'s ``forward`` calls (``None``: no indexer, or not one function)."""
    funcs = {name: obj for mod in modules for name, obj in vars(mod).items()
             if inspect.isfunction(obj) and obj.__module__ == mod.__name__ and name.startswith("apply")
             and ("rotary" in name or "rope" in name)}
    for cls in hf_source.classes_named(modules, "Indexer"):
        if "forward" not in vars(cls):
            continue
        called, _ = hf_source.attention_apply_calls(cls, text_cfg, set(funcs))
        if len(called) == 1:
            return funcs[called[0]], f"{cls.__name__}.forward calls {called[0]}"
        return None, f"{cls.__name__}.forward calls {', '.join(called) or 'no apply function'}"
    return None, "no indexer class"


def _probe(fn: Any, fn_note: str, module: Any, label: str | None, spec: RopeSpec, w: np.ndarray,
           scale: float, per_label: bool) -> Probe:
    """Probe at roperef's head width; when the apply function only takes the rotated slice (the attention
    slices q itself, e.g. Phi, Persimmon, StableLM), probe that slice and say the window was not probed."""
    label = label if per_label else None
    found = probe_apply(fn, module, label, spec.head_dim, w, scale, spec.mrope_section, fn_note)
    if found.found or "does not take q" not in found.note or 2 * len(w) >= spec.head_dim:
        return found
    inner = probe_apply(fn, module, label, 2 * len(w), w, scale, spec.mrope_section, fn_note)
    if not inner.found:
        return inner
    shift = spec.rotary_start  # roperef's window; the attention's slicing was not observed
    return Probe(inner.function, spec.head_dim, True, inner.pairing, shift, inner.mrope_layout, inner.error,
                 f"{fn_note}; the apply function takes only the {2 * len(w)} rotated channels (the attention "
                 "slices q), so the window start is not probed")


def _layers(text_cfg: Any, labels: list[str]) -> tuple[str | None, ...] | None:
    """Per layer: the entry label (or ``text``), None for a layer without RoPE (HF's own config attributes)."""
    n = getattr(text_cfg, "num_hidden_layers", None)
    types = getattr(text_cfg, "layer_types", None)
    if not isinstance(n, int) or n <= 0:
        return None
    if types is not None and len(types) < n:
        return None
    use = getattr(text_cfg, "no_rope_layers", None)
    out: list[str | None] = []
    for i in range(n):
        kind = types[i] if types is not None else None
        if kind in NON_ATTENTION_LAYER_TYPES:
            out.append(None)
        elif isinstance(use, (list, tuple)) and len(use) == n and not use[i]:
            out.append(None)
        elif labels:
            rp = getattr(text_cfg, "rope_parameters", None) or {}
            out.append(kind if kind in labels else (None if isinstance(rp, Mapping) and kind in rp and rp[kind] is None else f"?{kind}"))
        else:
            out.append("text")
    return tuple(out)


def _vision_entry(cfg: Any, model_type: str) -> HFEntry | None:
    vision = getattr(cfg, "vision_config", None)
    if vision is None:
        return None
    modules = modeling_modules(getattr(vision, "model_type", model_type)) or modeling_modules(model_type)
    for cls in hf_source.classes_named(modules, "RotaryEmbedding"):
        if not hf_source.is_text_name(cls.__name__) and _takes_config(cls):
            try:
                module = cls(vision)
                w, s = entry_tensors(module, None)
            except Exception:
                continue
            return HFEntry("vision", w, s, None, f"{cls.__name__}(vision_config)")
    return None


def transformers_truth(config: Mapping[str, Any], specs: Mapping[str, RopeSpec]) -> HFTruth:
    """transformers' view of ``config``; ``specs`` (roperef's, by entry label) give the probe's input width."""
    quiet_transformers()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING_NAMES:
        return HFTruth(str(model_type), False, notes=(f"transformers does not ship model_type {model_type!r}",))
    cfg = hf_config(config)
    text_cfg = text_config_of(cfg)
    text_type = getattr(text_cfg, "model_type", model_type)
    modules = modeling_modules(text_type) or modeling_modules(model_type)
    notes: list[str] = []
    vision = _vision_entry(cfg, model_type) if "vision" in specs else None
    cls, how = text_rotary_class(modules, text_cfg)
    if cls is None:
        return HFTruth(model_type, True, False, {}, None, vision, (f"{text_type}: {how}",))
    built = _rope_built(modules, text_cfg)
    if built is False:
        return HFTruth(model_type, True, False, {}, None, vision,
                       (f"{text_type}: the model does not build {cls.__name__} for this config",))
    module = cls(config=text_cfg)
    labels = rope_labels(module, text_cfg)
    layers = _layers(text_cfg, labels)
    if layers is not None and all(x is None for x in layers):
        return HFTruth(model_type, True, False, {}, layers, vision,
                       (f"{text_type}: no decoder layer is an attention layer that applies RoPE",))
    fn, fn_note = apply_function(modules, text_cfg)
    entries: dict[str, HFEntry] = {}
    choices: list[str | None] = [*labels] if labels else [None]  # None: the module's single unlabelled entry
    for label in choices:
        w, s = entry_tensors(module, label)
        key = label or "text"
        spec = specs.get(key) or specs.get("text") or next((v for k, v in specs.items() if k not in ("vision", "indexer")), None)
        if fn is None or spec is None:
            probe = Probe("", 0, False, note=fn_note if fn is None else "roperef has no spec to size the probe")
        else:
            probe = _probe(fn, fn_note, module, label, spec, w, s, bool(labels))
        entries[key] = HFEntry(key, w, s, probe, f"{cls.__name__} ({how})")
    indexer = None
    if "indexer" in specs and len(entries) == 1:
        fn_i, note_i = indexer_apply(modules, text_cfg)
        entry = next(iter(entries.values()))
        indexer = (Probe("", 0, False, note=note_i) if fn_i is None else
                   probe_apply(fn_i, module, None, specs["indexer"].head_dim, entry.inv_freq, entry.attention_scaling,
                               None, note_i))
    return HFTruth(model_type, True, True, entries, layers, vision, tuple(notes), indexer)
