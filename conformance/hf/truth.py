"""What transformers itself does with a config: its rotary module(s) built in memory, probed.

:func:`transformers_truth` builds the family's config object (``AutoConfig.for_model``, no download, no
weights), finds the text model's rotary-embedding class in the family's modeling source, builds it
from the config, and reads per RoPE entry (one, or one per layer type / rope label):

- ``inv_freq`` (HF's float32 buffer, as float64) and ``attention_scaling``;
- the pairing / rotary window / mRoPE layout the family's apply function really uses: the apply
  function the attention's ``forward`` calls (:mod:`conformance.hf.source`) is run on random float64
  input with the module's own cos/sin, and its output is matched against each candidate structure
  rotated with HF's own frequencies (so a frequency difference cannot hide a pairing difference);
- per decoder layer, which entry applies or none (``layer_types``, ``no_rope_layers``, hybrid types);
- whether the model builds a rotary module at all for this config.

Vision towers: ``inv_freq`` of the vision rotary module when it can be built from the vision config.
torch and transformers are imported inside the functions (optional dependencies).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import textwrap
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.layout import pair_axes
from roperef.reference import apply as rotate
from roperef.spec import PAIRINGS, RopeSpec

from . import source as hf_source
from .unwrap import unwrap_callable

__all__ = ["Probe", "HFEntry", "HFTruth", "transformers_truth", "NON_ATTENTION_LAYER_TYPES", "hf_config", "quiet_transformers",
           "modeling_modules", "mapped_module", "text_config_of", "ignored_text_config", "text_rotary_class",
           "rope_labels", "entry_tensors", "apply_function", "apply_attention", "apply_functions", "layer_probe"]

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
    ignores_text_config: bool = False


def quiet_transformers() -> None:
    """Silence transformers' logging and warnings (a probe builds many models)."""
    import transformers

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore", module="transformers")


def modeling_modules(model_type: str) -> list[Any]:
    """The importable ``transformers.models.<name>.modeling_*`` modules of ``model_type`` (none: ``[]``).

    A model type shipped with only a configuration file (``internlm3``, ``exaone``, ``sarvam_mla``) is mapped
    by ``models/auto/modeling_auto.py`` to another family's model class (``LlamaModel``, ``DeepseekV3Model``):
    its modules are that family's, the code transformers really runs for it."""
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = model_type_to_module_name(model_type)
    out = _modules_of(os.path.join(os.path.dirname(transformers.__file__), "models", name), name)
    if out:
        return out
    owner = mapped_module(model_type)
    if owner is None or owner == name:
        return []
    return _modules_of(os.path.join(os.path.dirname(transformers.__file__), "models", owner), owner)


def mapped_module(model_type: str) -> str | None:
    """The ``transformers.models`` folder of the class ``AutoModel`` (else ``AutoModelForCausalLM``) builds
    for ``model_type`` (``MODEL_MAPPING_NAMES``), None when neither maps it or the class is not found."""
    import transformers
    from transformers.models.auto import modeling_auto

    for table in (modeling_auto.MODEL_MAPPING_NAMES, modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        names = table.get(model_type)
        for cls_name in ([names] if isinstance(names, str) else list(names or ())):
            try:
                cls = getattr(transformers, cls_name)
            except Exception:
                continue
            parts = getattr(cls, "__module__", "").split(".")
            if len(parts) >= 4 and parts[:2] == ["transformers", "models"]:
                return parts[2]
    return None


def _modules_of(folder: str, name: str) -> list[Any]:
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
    """The decoder text config of a transformers config (the config itself when it has none).

    A config class that is not composite (``ministral3``, ``llama``) keeps a ``text_config`` key of the
    dict as a plain dict attribute that no module reads: the model is built from the top-level keys, so
    that config itself is the text config (:func:`ignored_text_config` says when this happened)."""
    from transformers import PretrainedConfig

    try:
        text = cfg.get_text_config(decoder=True)
    except Exception:
        text = getattr(cfg, "text_config", None) or cfg
    return text if isinstance(text, PretrainedConfig) else cfg


def ignored_text_config(cfg: Any) -> bool:
    """True when ``cfg`` carries a ``text_config`` its (non-composite) class ignores: a plain dict."""
    return isinstance(getattr(cfg, "text_config", None), Mapping)


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


def apply_functions(modules: list[Any]) -> dict[str, Any]:
    """The module-level ``apply*rotary*`` / ``apply*rope*`` functions of the modeling source, by name, each
    unwrapped to the function that runs (:func:`conformance.hf.unwrap.unwrap_callable`)."""
    funcs = {}
    for mod in modules:
        for name, obj in vars(mod).items():
            if not (name.startswith("apply") and ("rotary" in name or "rope" in name)) or inspect.isclass(obj):
                continue
            fn = unwrap_callable(obj).function  # kernels' hub wrapper, a partial, a decorated function
            if fn is not None and fn.__module__ == mod.__name__:
                funcs[name] = fn
    return funcs


def apply_attention(modules: list[Any], text_cfg: Any) -> tuple[type | None, Any, str]:
    """``(attention class, apply function, how)``: the text class whose ``forward`` calls an apply function
    for this config and the function (``None``: none or several)."""
    funcs = apply_functions(modules)
    prefix = _config_prefix(text_cfg)
    classes = [c for c in hf_source.classes_named(modules, "") if hf_source.is_text_name(c.__name__)
               and "Indexer" not in c.__name__ and "Cross" not in c.__name__ and "forward" in vars(c)]
    classes.sort(key=lambda c: (not c.__name__.startswith(prefix), not c.__name__.endswith(("Attention", "MLA")),
                                c.__name__))
    for cls in classes:
        called, certain = hf_source.attention_apply_calls(cls, text_cfg, set(funcs))
        if len(called) == 1:
            return cls, funcs[called[0]], f"{cls.__name__}.forward calls {called[0]}"
        if called:
            why = "" if certain else " (under a condition it could not evaluate)"
            return cls, None, f"{cls.__name__}.forward calls {', '.join(called)}{why}"
    if funcs:
        return None, None, f"no text class calls {', '.join(sorted(funcs))} for this config"
    return None, None, "no apply function in the modeling source"


def apply_function(modules: list[Any], text_cfg: Any) -> tuple[Any, str]:
    """The apply function the text attention's ``forward`` calls for this config (``None``: none or several)."""
    _, fn, note = apply_attention(modules, text_cfg)
    return fn, note


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
    funcs = apply_functions(modules)
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


def _instance_key(attention: type, cfg: Any) -> Any:
    """A function ``i -> key`` such that two layers with the same key build the same ``attention`` instance.

    When ``attention.__init__`` uses its layer index only as ``config.<list>[layer_idx]`` (``layer_types``)
    or stores it (``self.layer_idx = layer_idx``, which ``forward`` does not branch on), the key is the tuple of those
    list entries: a 90-layer config instantiates once per distinct layer type. Any other use (arithmetic,
    passing it on) keys by the index itself."""

    def per_layer(i: int) -> Any:
        return ("layer", i)

    try:
        init = ast.parse(textwrap.dedent(inspect.getsource(vars(attention)["__init__"]))).body[0]
        fwd = ast.parse(textwrap.dedent(inspect.getsource(vars(attention)["forward"])))
    except (KeyError, OSError, TypeError, SyntaxError, IndexError):
        return per_layer
    if not isinstance(init, ast.FunctionDef):
        return per_layer
    if len(init.args.args) < 3:
        return lambda _i: ()  # __init__(self, config): every layer builds the same instance
    index = init.args.args[2].arg
    branches_on_index = any(isinstance(n, ast.Attribute) and n.attr == index for stmt in ast.walk(fwd)
                            if isinstance(stmt, (ast.If, ast.IfExp)) for n in ast.walk(stmt.test))
    parents = {child: node for node in ast.walk(init) for child in ast.iter_child_nodes(node)}
    lists: list[str] = []
    for node in ast.walk(init):
        if not (isinstance(node, ast.Name) and node.id == index):
            continue
        up = parents.get(node)
        if (isinstance(up, ast.Subscript) and up.slice is node and isinstance(up.value, ast.Attribute)
                and isinstance(up.value.value, ast.Name) and up.value.value.id == "config"):
            lists.append(up.value.attr)
        elif isinstance(up, ast.Assign) and up.value is node and not branches_on_index:
            continue  # self.layer_idx = layer_idx, which forward does not branch on
        else:
            return per_layer

    def key(i: int) -> Any:
        out = []
        for name in dict.fromkeys(lists):
            values: Any = getattr(cfg, name, None)
            try:
                out.append(values[i])
            except (TypeError, IndexError, KeyError):
                return ("layer", i)
        try:
            hash(tuple(out))
        except TypeError:  # a per-layer sub-config: key by the index
            return ("layer", i)
        return tuple(out)

    return key


def _build_attention(attention: type, cfg: Any, i: int) -> Any:
    """``attention(cfg, layer_idx=i)`` (positional when it names the index otherwise; ``attention(cfg)`` when
    it takes no index) on the meta device: no memory, no weights; in eval mode, as a loaded model is."""
    import torch

    params = list(inspect.signature(inspect.getattr_static(attention, "__init__")).parameters)[1:]  # self first
    with torch.device("meta"):
        if len(params) < 2:
            module = attention(cfg)
        elif "layer_idx" in params:
            module = attention(cfg, layer_idx=i)
        else:
            module = attention(cfg, i)
    if hasattr(module, "eval"):
        module.eval()
    return module


def layer_probe(modules: list[Any], text_cfg: Any, layers: tuple[str | None, ...],
                attention: type | None) -> tuple[tuple[str | None, ...], list[str]]:
    """Per layer, ``layers`` (read from config attributes) with the layers whose code applies no RoPE set to None.

    (a) A text model that picks its decoder-layer class per index (Mllama: ``cross_attention_layers``
    build ``MllamaCrossAttentionDecoderLayer``): a layer whose class does not build ``attention`` and
    builds no class whose ``forward`` calls an apply function has no RoPE. (b) ``attention`` built for
    each layer on the meta device and its ``forward``'s ``if`` tests evaluated with ``self`` bound to it
    (AFMoE ``if self.is_local_attention:``, EXAONE 4 ``if self.sliding_window is None or self.is_sliding:``):
    a layer whose instance certainly calls no apply function has no RoPE. Whatever cannot be built or
    evaluated keeps the config's answer, with a note (never a guess).
    """
    out = list(layers)
    notes: list[str] = []
    if attention is None:
        return layers, notes
    funcs = apply_functions(modules)
    classes = {c.__name__: c for c in hf_source.classes_named(modules, "")}
    prefix = _config_prefix(text_cfg)
    models = [c for c in hf_source.classes_named(modules, "Model") if hf_source.is_text_name(c.__name__)]
    models.sort(key=lambda c: c.__name__ != f"{prefix}Model")
    builds = [True] * len(out)
    for model in models:
        kinds = hf_source.layer_classes(model, text_cfg, len(out))
        if kinds is None:
            continue
        if not any(attention.__name__ in hf_source.classes_built(classes[k]) for k in set(kinds) if k in classes):
            notes.append(f"{model.__name__} picks its layer class per index but none builds {attention.__name__}; "
                         "layers read from the config")
            break
        for i, kind in enumerate(kinds):
            built = hf_source.classes_built(classes[kind]) if kind in classes else []
            if attention.__name__ in built:
                continue
            builds[i] = False
            applies = [n for n in built if n in classes and hf_source.attention_apply_calls(classes[n], text_cfg, set(funcs))[0]]
            if out[i] is not None and kind in classes and not applies:
                out[i] = None
            elif out[i] is not None:
                notes.append(f"layer {i} is a {kind}: whether it applies RoPE is not read; layer kept from the config")
        if not all(builds):
            gone = [i for i, b in enumerate(builds) if not b]
            notes.append(f"{model.__name__} builds {len(gone)} layers as another class without {attention.__name__} "
                         f"(first: layer {gone[0]}, {kinds[gone[0]]})")
        break
    key_of = _instance_key(attention, text_cfg)
    seen: dict[Any, bool | None] = {}
    unsure = False
    for i, label in enumerate(out):
        if label is None or not builds[i]:
            continue
        key = key_of(i)
        if key not in seen:
            try:
                module = _build_attention(attention, text_cfg, i)
            except Exception as exc:
                notes.append(f"{attention.__name__}(config, layer_idx={i}) did not build on the meta device "
                             f"({type(exc).__name__}); per-layer RoPE read from the config only")
                return tuple(out), notes
            called, certain = hf_source.attention_apply_calls(attention, text_cfg, set(funcs), module)
            seen[key] = bool(called) if (certain or not called) else None
        if seen[key] is False:
            out[i] = None
        elif seen[key] is None:
            unsure = True
    if unsure:
        notes.append(f"{attention.__name__}.forward applies RoPE under a condition not evaluated for some layers; "
                     "those layers read from the config")
    gone = [i for i, (a, b) in enumerate(zip(layers, out)) if a is not None and b is None]
    if gone:
        notes.append(f"{len(gone)} layers whose attention code applies no RoPE for this config (first: layer {gone[0]})")
    return tuple(out), notes


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
    ignored = ignored_text_config(cfg)
    if ignored:
        notes.append(f"{model_type}: {type(cfg).__name__} is not a composite config, so transformers ignores the "
                     "text_config dict and builds the model from the top-level keys (its defaults where the top "
                     "level gives none)")
    vision = _vision_entry(cfg, model_type) if "vision" in specs else None
    cls, how = text_rotary_class(modules, text_cfg)
    if cls is None:
        return HFTruth(model_type, True, False, {}, None, vision, (f"{text_type}: {how}", *notes),
                       ignores_text_config=ignored)
    built = _rope_built(modules, text_cfg)
    if built is False:
        return HFTruth(model_type, True, False, {}, None, vision,
                       (f"{text_type}: the model does not build {cls.__name__} for this config", *notes),
                       ignores_text_config=ignored)
    module = cls(config=text_cfg)
    labels = rope_labels(module, text_cfg)
    layers = _layers(text_cfg, labels)
    attention, fn, fn_note = apply_attention(modules, text_cfg)
    if layers is not None:
        layers, layer_notes = layer_probe(modules, text_cfg, layers, attention)
        notes += [f"{text_type}: {n}" for n in layer_notes]
    if layers is not None and all(x is None for x in layers):
        return HFTruth(model_type, True, False, {}, layers, vision,
                       (f"{text_type}: no decoder layer is an attention layer that applies RoPE", *notes),
                       ignores_text_config=ignored)
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
    return HFTruth(model_type, True, True, entries, layers, vision, tuple(notes), indexer, ignored)
