"""RopeSpec(s) from a Hugging Face ``config.json`` (dict, JSON string path or :class:`~pathlib.Path`).

Every form of ROPE-SPEC.md section 7 is accepted:

- v5 ``rope_parameters``: flat (``{"rope_type": ..., "rope_theta": ..., ...}``) or nested by layer
  type (``{"full_attention": {...}, "sliding_attention": {...}}``; a ``null`` entry is a NoPE layer
  and is left out of the result);
- legacy ``rope_scaling`` + top-level ``rope_theta`` / ``partial_rotary_factor``; ``type`` is an alias of
  ``rope_type``; when both ``rope_scaling`` and ``rope_parameters`` are given, ``rope_scaling`` wins
  (transformers' ``rope_scaling or rope_parameters``);
- type aliases: ``mrope`` -> ``default`` + ``mrope_section``; ``su`` -> ``longrope``; Phi-3 ``yarn`` ->
  ``longrope``; ``dynamic`` with a non-zero ``alpha`` (HunYuan) -> ``ntk``
  (``theta' = theta * alpha^(d/(d-2))``);
- ``mrope_section`` (chunked) and ``mrope_interleaved: true`` (interleaved; Qwen3-VL is interleaved
  whatever the flag says);
- ``partial_rotary_factor`` rho: ``d = int(D*rho)``, ``rotary_dim = 2*ceil(d/2)``, ``freq_dim = d``;
  GPT-NeoX ``rotary_pct`` / ``rotary_emb_base``; GPT-J ``rotary_dim`` (adjacent pairs, theta 10000);
  ChatGLM ``rope_ratio`` / ``kv_channels`` (theta = 10000*rope_ratio, rotary on the first half of the
  head, adjacent pairs); DeepSeek ``qk_rope_head_dim`` + ``rope_interleave``; Gemma 3
  ``rope_local_base_freq`` (sliding layers); Gemma 4 ``proportional`` (full layers, ``global_head_dim``);
- nested ``text_config`` / ``vision_config``: when the vision tower has 2-D RoPE (Pixtral, Qwen2/2.5/3-VL)
  the result is ``{"text": ..., "vision": ...}`` (a per-layer-type text part is flattened to
  ``"text.<layer_type>"`` keys).

``head_dim`` D: ``qk_rope_head_dim`` (MLA: RoPE runs on that slice only), else ``head_dim``, else
``attention_head_dim``, else ``hidden_size // num_attention_heads`` (also ``n_embd // n_head``, vision
``num_heads``). ``max_position_embeddings`` M (``n_positions``, ChatGLM ``seq_length``) and
``original_max_position_embeddings`` L0 (top level or inside the rope parameters) are filled into
:class:`~roperef.spec.Scaling` where the type needs them.

The per-model transformers behaviours that change the maths are the fields of :class:`HFQuirks`
(documented there, defaults = transformers 5.24); keys absent from a config take the model type's
transformers defaults from :data:`MODEL_DEFAULTS`. Keys starting with ``_`` are annotations and are
ignored. Bad input raises ``ValueError``/``TypeError`` through :func:`roperef.errors.bad`, naming the
config key, the value and the rule.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from .errors import bad
from .spec import RopeSpec, Scaling

__all__ = ["HFQuirks", "MODEL_DEFAULTS", "load_config", "spec_from_config"]

_F = frozenset


@dataclass(frozen=True)
class HFQuirks:
    """Model-specific transformers (5.24) behaviours that change the maths; override to model another engine.

    - ``default_honours_partial_rotary``: model types whose ``default`` rope init reads
      ``partial_rotary_factor`` (``d = int(D*rho)``). Every other model type ignores it under ``default``
      (``d = D``: Llama, Mistral, Qwen2/3, Gemma 1-3, Llama 4, DeepSeek, ...). Scaled types (linear,
      dynamic, yarn, longrope, llama3) honour it in every model (``ROPE_INIT_FUNCTIONS``).
    - ``adjacent_pairing``: model types whose apply pairs channels ``(2j, 2j+1)`` (GPT-J
      ``rotate_every_two``, GLM ``rotate_half_llm``, Cohere, ChatGLM, complex ``view_as_complex`` of
      Llama 4 / DeepSeek V2). Note GLM-4.5 / GLM-4.5V (``glm4_moe``, ``glm4v_moe``) use ``half``.
    - ``rope_interleave_models``: model types with a ``rope_interleave`` flag (default ``True``) meaning
      DeepSeek V3's adjacent-in / half-out order; ``false`` gives ``half``.
    - ``yarn_means_longrope``: model types where a legacy ``yarn`` type is LongRoPE (Phi-3).
      ``su`` means ``longrope`` for every model.
    - ``dynamic_alpha_means_ntk``: ``dynamic`` with a non-zero ``alpha`` is fixed NTK (HunYuan).
    - ``always_interleaved_mrope``: model types whose mRoPE is interleaved whatever
      ``mrope_interleaved`` says (Qwen3-VL, Qwen3.5).
    - ``top_level_original_max_wins``: a top-level ``original_max_position_embeddings`` overrides the one
      inside the rope parameters (transformers' Phi-3 priority rule in ``standardize_rope_params``).
    - ``original_max_falls_back_to_max``: transformers fills a missing L0 for yarn/llama3/longrope with
      ``max_position_embeddings``; off by default here (ROPE-SPEC.md section 7: L0 is required).
    - ``yarn_null_factor_is_ratio``: yarn ``"factor": null`` means ``M / L0`` (transformers).
    - ``zero_beta_is_unset``: yarn ``beta_fast``/``beta_slow`` equal to 0 mean the defaults 32/1
      (transformers' ``get("beta_fast") or 32``).
    - ``gptj_theta``: GPT-J hard-codes theta 10000 and ignores ``rope_theta`` (``None``: read the config).
    - ``pixtral_head_dim_from_hidden``: Pixtral vision head_dim is ``hidden_size // num_attention_heads``
      (the config's ``head_dim`` key is overwritten).
    """

    default_honours_partial_rotary: frozenset[str] = _F({
        "bamba", "glm", "glm4", "glm4_moe", "glm4_moe_lite", "glm4v", "glm4v_text", "glm4v_moe",
        "glm4v_moe_text", "gpt_neox", "gpt_neox_japanese", "laguna", "mimo_v2_flash", "minimax_m2",
        "nemotron", "persimmon", "phi", "phi3", "phi4_multimodal", "qwen3_5", "qwen3_5_text",
        "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_next", "recurrent_gemma", "solar_open", "stablelm",
    })
    adjacent_pairing: frozenset[str] = _F({
        "chatglm", "cohere", "cohere2", "deepseek_v2", "glm", "glm4", "glm4v", "glm4v_text", "gptj",
        "llama4", "llama4_text",
    })
    rope_interleave_models: frozenset[str] = _F({"deepseek_v3", "kimi_k2"})
    yarn_means_longrope: frozenset[str] = _F({"phi3"})
    dynamic_alpha_means_ntk: bool = True
    always_interleaved_mrope: frozenset[str] = _F({
        "qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "qwen3_5", "qwen3_5_text",
        "qwen3_5_moe", "qwen3_5_moe_text",
    })
    top_level_original_max_wins: bool = True
    original_max_falls_back_to_max: bool = False
    yarn_null_factor_is_ratio: bool = True
    zero_beta_is_unset: bool = True
    gptj_theta: float | None = 10000.0
    pixtral_head_dim_from_hidden: bool = True


def _ro(**kw: Any) -> Mapping[str, Any]:
    return MappingProxyType(kw)


#: transformers 5.24 ``*Config`` defaults for keys a config may omit (only those that matter for RoPE).
MODEL_DEFAULTS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "llama": _ro(max_position_embeddings=2048),
    "gemma3_text": _ro(head_dim=256, num_attention_heads=8, max_position_embeddings=131072,
                       rope_theta=1_000_000.0, rope_local_base_freq=10_000.0),
    "gemma4_text": _ro(head_dim=256, global_head_dim=512, max_position_embeddings=131072),
    "gpt_neox": _ro(rotary_pct=0.25, rotary_emb_base=10000.0, max_position_embeddings=2048),
    "gptj": _ro(rotary_dim=64, n_positions=2048, n_embd=4096, n_head=16),
    "phi3": _ro(max_position_embeddings=4096, original_max_position_embeddings=4096),
    "deepseek_v2": _ro(qk_rope_head_dim=64),
    "deepseek_v3": _ro(qk_rope_head_dim=64, rope_interleave=True),
    "glm": _ro(partial_rotary_factor=0.5),
    "glm4": _ro(partial_rotary_factor=0.5),
    "glm4v_text": _ro(partial_rotary_factor=0.5, mrope_section=(8, 12, 12)),
    "glm4v_moe_text": _ro(partial_rotary_factor=0.5, mrope_section=(8, 12, 12)),
    "qwen3_vl_text": _ro(mrope_section=(24, 20, 20)),
    "chatglm": _ro(rope_ratio=1.0),
    "pixtral": _ro(hidden_size=1024, num_attention_heads=16, rope_theta=10000.0),
    "qwen2_vl_vision": _ro(embed_dim=1280, num_heads=16, rope_theta=10000.0),
    "qwen2_5_vl_vision": _ro(hidden_size=3584, num_heads=16, rope_theta=10000.0),
    "qwen3_vl_vision": _ro(hidden_size=1152, num_heads=16, rope_theta=10000.0),
})

#: wrapper model type -> (text model type, vision model type or None when the vision tower has no RoPE)
_WRAPPERS: Mapping[str, tuple[str, str | None]] = MappingProxyType({
    "gemma3": ("gemma3_text", None),
    "gemma4": ("gemma4_text", None),
    "qwen2_vl": ("qwen2_vl_text", "qwen2_vl_vision"),
    "qwen2_5_vl": ("qwen2_5_vl_text", "qwen2_5_vl_vision"),
    "qwen3_vl": ("qwen3_vl_text", "qwen3_vl_vision"),
    "qwen3_vl_moe": ("qwen3_vl_moe_text", "qwen3_vl_vision"),
    "glm4v": ("glm4v_text", None),
    "glm4v_moe": ("glm4v_moe_text", None),
    "mistral3": ("mistral", "pixtral"),
    "llava": ("llama", "pixtral"),
})
_QWEN_VISION = _F({"qwen2_vl_vision", "qwen2_5_vl_vision", "qwen3_vl_vision"})

_TYPES = _F({"default", "linear", "dynamic", "ntk", "yarn", "longrope", "llama3", "proportional"})
_NEEDS_L0 = _F({"yarn", "longrope", "llama3"})
_PARAM_KEYS = _F({
    "rope_type", "type", "rope_theta", "partial_rotary_factor", "factor", "original_max_position_embeddings",
    "attention_factor", "beta_fast", "beta_slow", "short_factor", "long_factor", "low_freq_factor",
    "high_freq_factor", "mscale", "mscale_all_dim", "truncate", "mrope_section", "mrope_interleaved", "alpha",
})
_LAYER_NAMES = _F({"full_attention", "sliding_attention", "chunked_attention", "linear_attention"})


# ----------------------------------------------------------------------------- loading and key access


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a ``config.json`` file within the limits of :mod:`roperef.json_input` (nesting depth,
    integer digits, finite floats, file size, regular file); JSON ``NaN``/``Infinity`` are read,
    then rejected by validation."""
    from .json_input import JSONInputError, load_json_file

    p = Path(path)
    try:
        data = load_json_file(p, what="config file")
    except FileNotFoundError:
        raise FileNotFoundError(f"config={str(p)!r}: file not found") from None
    except JSONInputError as exc:
        bad("config", str(p), str(exc).removeprefix(f"{p}: "))
    if not isinstance(data, dict):
        bad("config", data, f"{p.name} must hold a JSON object", TypeError)
    return data


def _clean(d: Mapping[str, Any]) -> dict[str, Any]:
    """Drop ``_``-prefixed annotation keys."""
    return {k: v for k, v in d.items() if not (isinstance(k, str) and k.startswith("_"))}


class _Cfg:
    """One config level (top, text_config or vision_config) with its model type's defaults."""

    def __init__(self, data: Mapping[str, Any], path: str, model_type: str) -> None:
        self.data, self.path, self.model_type = _clean(data), path, model_type
        self.defaults = MODEL_DEFAULTS.get(model_type, MappingProxyType({}))

    def key(self, name: str) -> str:
        return f"{self.path}{name}"

    def raw(self, name: str, default: Any = None) -> Any:
        """The config value, else the model type's default, else ``default`` (``null`` counts as absent)."""
        value = self.data.get(name)
        if value is None:
            value = self.defaults.get(name, default)
        return value

    def has(self, name: str) -> bool:
        return self.raw(name) is not None

    def num(self, name: str, default: Any = None, *, positive: bool = True) -> float | None:
        value = self.raw(name, default)
        return None if value is None else _number(self.key(name), value, positive=positive)

    def int_(self, name: str, default: Any = None) -> int | None:
        value = self.raw(name, default)
        return None if value is None else _integer(self.key(name), value)

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw(name, default)
        if not isinstance(value, bool):
            bad(self.key(name), value, "must be true or false", TypeError)
        return value


def _number(key: str, value: Any, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        bad(key, value, "must be a number", TypeError)
    value = float(value)
    if not math.isfinite(value):
        bad(key, value, "must be a finite number")
    if positive and value <= 0:
        bad(key, value, "must be a finite number > 0")
    return value


def _integer(key: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        bad(key, value, "must be an integer", TypeError)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        bad(key, value, "must be an integer")
    if value < minimum:
        bad(key, value, f"must be an integer >= {minimum}")
    return int(value)


def _model_type(data: Mapping[str, Any], path: str, fallback: str) -> str:
    value = data.get("model_type", fallback)
    if value is None:
        value = fallback
    if not isinstance(value, str):
        bad(f"{path}model_type", value, "must be a string", TypeError)
    return value


# ----------------------------------------------------------------------------- geometry


def _head_dim(c: _Cfg, quirks: HFQuirks) -> int:
    """D: qk_rope_head_dim (MLA), head_dim, attention_head_dim, else hidden // heads."""
    for name in ("qk_rope_head_dim", "head_dim", "attention_head_dim", "kv_channels"):
        if c.model_type == "pixtral" and name == "head_dim" and quirks.pixtral_head_dim_from_hidden:
            continue
        if name == "kv_channels" and c.model_type != "chatglm":
            continue
        if c.has(name):
            return c.int_(name)  # type: ignore[return-value]
    hidden_name = next((n for n in ("hidden_size", "n_embd", "embed_dim") if c.has(n)), None)
    if c.model_type == "qwen2_vl_vision":
        hidden_name = "embed_dim"
    heads_name = next((n for n in ("num_attention_heads", "n_head", "num_heads") if c.has(n)), None)
    if hidden_name is None or heads_name is None:
        bad(c.key("head_dim"), None, "is required (or hidden_size and num_attention_heads)")
    hidden, heads = c.int_(hidden_name), c.int_(heads_name)
    if hidden % heads:  # type: ignore[operator]
        bad(c.key(hidden_name), hidden, f"must be divisible by {heads_name}={heads} when head_dim is absent")
    return hidden // heads  # type: ignore[operator]


def _max_positions(c: _Cfg) -> int | None:
    for name in ("max_position_embeddings", "n_positions", "seq_length"):
        if c.has(name):
            return c.int_(name)
    return None


# ----------------------------------------------------------------------------- one spec


def _rope_type(p: Mapping[str, Any], c: _Cfg, where: str, quirks: HFQuirks) -> str:
    kind = p.get("rope_type", p.get("type", "default"))
    if kind is None:
        kind = "default"
    if not isinstance(kind, str):
        bad(f"{where}.rope_type", kind, "must be a string", TypeError)
    if kind == "mrope":
        return "default"
    if kind == "su" or (kind == "yarn" and c.model_type in quirks.yarn_means_longrope):
        return "longrope"
    if kind == "dynamic" and quirks.dynamic_alpha_means_ntk and p.get("alpha"):
        return "ntk"
    if kind not in _TYPES:
        bad(f"{where}.rope_type", kind, f"unknown rope type; expected one of {', '.join(sorted(_TYPES))} "
            "(or the aliases type, mrope, su)")
    return kind


def _pairing(p: Mapping[str, Any], c: _Cfg, where: str, quirks: HFQuirks) -> str:
    if c.model_type in quirks.rope_interleave_models:
        return "adjacent_in_half_out" if c.flag("rope_interleave", True) else "half"
    return "adjacent" if c.model_type in quirks.adjacent_pairing else "half"


def _widths(kind: str, p: Mapping[str, Any], c: _Cfg, head: int, where: str, quirks: HFQuirks) -> tuple[int, int]:
    """``(rotary_dim, freq_dim)``: ``d = int(D*rho)`` when rho applies, ``rotary_dim = 2*ceil(d/2)``."""
    if kind == "proportional":
        return head, head
    if c.model_type == "chatglm":
        return head // 2, head // 2
    if c.model_type == "gptj":
        d = c.int_("rotary_dim") or head
        return 2 * math.ceil(d / 2), d
    if c.model_type == "gpt_neox" and "partial_rotary_factor" not in p and not c.has("partial_rotary_factor"):
        rho = c.num("rotary_pct")
        rho_key = c.key("rotary_pct")
    else:
        rho = p.get("partial_rotary_factor", c.raw("partial_rotary_factor"))
        rho_key = f"{where}.partial_rotary_factor" if "partial_rotary_factor" in p else c.key("partial_rotary_factor")
        rho = None if rho is None else _number(rho_key, rho)
    if rho is None or (kind == "default" and c.model_type not in quirks.default_honours_partial_rotary):
        if head % 2:
            bad(c.key("head_dim"), head, "is odd; a fully rotated head needs an even width (pairs of channels)")
        return head, head
    if rho > 1:
        bad(rho_key, rho, "must be in (0, 1]")
    d = int(head * rho)
    if d < 2:
        bad(rho_key, rho, f"leaves int(head_dim*rho) = {d} rotary channels; need >= 2")
    return 2 * math.ceil(d / 2), d


def _theta(p: Mapping[str, Any], c: _Cfg, where: str, quirks: HFQuirks, fallback: float | None) -> float:
    if c.model_type == "gptj" and quirks.gptj_theta is not None:
        return quirks.gptj_theta
    if "rope_theta" in p and p["rope_theta"] is not None:
        return _number(f"{where}.rope_theta", p["rope_theta"])
    if fallback is not None:
        return fallback
    if c.model_type == "chatglm":
        return 10000.0 * c.num("rope_ratio")  # type: ignore[operator]
    if c.model_type == "gpt_neox" and not c.has("rope_theta"):
        return c.num("rotary_emb_base")  # type: ignore[return-value]
    return c.num("rope_theta", 10000.0)  # type: ignore[return-value]


def _original_max(p: Mapping[str, Any], c: _Cfg, where: str, quirks: HFQuirks, m: int | None) -> int | None:
    inner = p.get("original_max_position_embeddings")
    top = c.data.get("original_max_position_embeddings")
    if top is not None and (quirks.top_level_original_max_wins or inner is None):
        return _integer(c.key("original_max_position_embeddings"), top)
    if inner is not None:
        return _integer(f"{where}.original_max_position_embeddings", inner)
    if c.has("original_max_position_embeddings"):
        return c.int_("original_max_position_embeddings")
    if quirks.original_max_falls_back_to_max and m is not None:
        return m
    return None


def _scaling(kind: str, p: Mapping[str, Any], c: _Cfg, where: str, quirks: HFQuirks, rho: float | None) -> Scaling:
    m = _max_positions(c)
    kw: dict[str, Any] = {"type": kind}
    take = lambda *names: kw.update({n: p[n] for n in names if p.get(n) is not None})  # noqa: E731
    if kind in _NEEDS_L0:
        l0 = _original_max(p, c, where, quirks, m)
        if l0 is None:
            bad(f"{where}.original_max_position_embeddings", None, f"is required for rope_type '{kind}'")
        kw["original_max_position_embeddings"] = l0
    if kind in ("linear", "dynamic", "llama3", "yarn"):
        take("factor")
    if kind == "dynamic":
        if m is None:
            bad(c.key("max_position_embeddings"), None, "is required for rope_type 'dynamic'")
        kw["max_position_embeddings"] = m
    elif kind == "ntk":
        kw["alpha"] = p.get("alpha")
    elif kind == "llama3":
        take("low_freq_factor", "high_freq_factor")
    elif kind == "yarn":
        if "factor" in p and p["factor"] is None and quirks.yarn_null_factor_is_ratio and m is not None:
            kw["factor"] = m / kw["original_max_position_embeddings"]
        take("mscale", "mscale_all_dim", "attention_factor", "truncate")
        for beta in ("beta_fast", "beta_slow"):
            value = p.get(beta)
            if value is not None and not (quirks.zero_beta_is_unset and value == 0 and not isinstance(value, bool)):
                kw[beta] = value
    elif kind == "longrope":
        take("short_factor", "long_factor", "factor", "attention_factor")
        if m is not None:
            kw["max_position_embeddings"] = m
    elif kind == "proportional":
        take("factor")
        if rho is not None:
            kw["partial_rotary_factor"] = rho
    try:
        return Scaling(**kw)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{exc} (config {where})") from None


def _mrope(p: Mapping[str, Any], c: _Cfg, where: str, quirks: HFQuirks) -> tuple[Any, str]:
    section = p.get("mrope_section")
    if section is None and "mrope_section" in MODEL_DEFAULTS.get(c.model_type, {}):
        section = MODEL_DEFAULTS[c.model_type]["mrope_section"]
    if section is None:
        return None, "chunked"
    if isinstance(section, (str, bytes)) or not isinstance(section, (list, tuple)):
        bad(f"{where}.mrope_section", section, "must be a list of 3 integers", TypeError)
    interleaved = p.get("mrope_interleaved", False)
    if not isinstance(interleaved, bool):
        bad(f"{where}.mrope_interleaved", interleaved, "must be true or false", TypeError)
    if interleaved or c.model_type in quirks.always_interleaved_mrope:
        return tuple(section), "interleaved"
    return tuple(section), "chunked"


def _one(p: Mapping[str, Any], c: _Cfg, where: str, quirks: HFQuirks, *,
         head: int | None = None, theta: float | None = None) -> RopeSpec:
    """One RopeSpec from a flat rope-parameter dict ``p`` (may be empty) at config level ``c``."""
    if not isinstance(p, Mapping):
        bad(where, p, "must be a JSON object (dict) or null", TypeError)
    p = _clean(p)
    kind = _rope_type(p, c, where, quirks)
    head = _head_dim(c, quirks) if head is None else head
    rotary, freq = _widths(kind, p, c, head, where, quirks)
    rho = p.get("partial_rotary_factor", c.raw("partial_rotary_factor")) if kind == "proportional" else None
    if rho is not None:
        rho = _number(f"{where}.partial_rotary_factor", rho)
    section, layout = _mrope(p, c, where, quirks)
    pairing = _pairing(p, c, where, quirks)
    theta = _theta(p, c, where, quirks, theta)
    scaling = _scaling(kind, p, c, where, quirks, rho)
    try:
        return RopeSpec(head_dim=head, rotary_dim=rotary, freq_dim=freq, pairing=pairing, theta=theta,
                        scaling=scaling, mrope_section=section, mrope_layout=layout)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{exc} (config {where})") from None


# ----------------------------------------------------------------------------- config levels


def _is_nested(params: Mapping[str, Any], where: str) -> bool:
    keys = [k for k in params if not str(k).startswith("_")]
    nested = [k for k in keys if k not in _PARAM_KEYS and (params[k] is None or isinstance(params[k], Mapping))]
    if nested and len(nested) != len(keys):
        flat = sorted(set(keys) - set(nested))
        bad(where, f"<keys {sorted(keys)}>", f"mixes per-layer-type entries {sorted(nested)} with flat keys {flat}")
    return bool(nested)


def _text(c: _Cfg, quirks: HFQuirks) -> RopeSpec | dict[str, RopeSpec]:
    scaling, params = c.data.get("rope_scaling"), c.data.get("rope_parameters")
    chosen, name = (scaling, "rope_scaling") if scaling else (params, "rope_parameters")
    where = c.key(name)
    if chosen is not None and not isinstance(chosen, Mapping):
        bad(where, chosen, "must be a JSON object (dict) or null", TypeError)
    chosen = _clean(chosen or {})
    if chosen and _is_nested(chosen, where):
        return {str(k): _one(v, c, f"{where}.{k}", quirks, head=_layer_head(c, str(k)), theta=_layer_theta(c, str(k)))
                for k, v in chosen.items() if v is not None}
    if c.model_type == "gemma3_text":  # legacy: rope_scaling -> full layers; sliding layers: default + local base
        return {
            "full_attention": _one(chosen, c, where, quirks),
            "sliding_attention": _one({}, c, c.key("rope_local_base_freq"), quirks,
                                      theta=c.num("rope_local_base_freq")),
        }
    if c.model_type == "gemma4_text" and not chosen:  # transformers' default per-layer parameters
        defaults = {"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                       "rope_theta": 1_000_000.0}}
        return {k: _one(v, c, f"{where}.{k}", quirks, head=_layer_head(c, k)) for k, v in defaults.items()}
    return _one(chosen, c, where, quirks)


def _layer_theta(c: _Cfg, layer: str) -> float | None:
    """Gemma 3 sliding layers default to ``rope_local_base_freq`` when their entry has no rope_theta."""
    if c.model_type == "gemma3_text" and layer == "sliding_attention":
        return c.num("rope_local_base_freq")
    return None


def _layer_head(c: _Cfg, layer: str) -> int | None:
    if c.model_type == "gemma4_text" and layer == "full_attention":
        return c.int_("global_head_dim")
    return None


def _vision(c: _Cfg, quirks: HFQuirks) -> RopeSpec:
    form = "pixtral" if c.model_type == "pixtral" else "qwen_vl"
    params = c.data.get("rope_parameters") or {}
    if not isinstance(params, Mapping):
        bad(c.key("rope_parameters"), params, "must be a JSON object (dict) or null", TypeError)
    where = c.key("rope_parameters")
    theta = _number(f"{where}.rope_theta", params["rope_theta"]) if params.get("rope_theta") is not None else None
    try:
        return RopeSpec(head_dim=_head_dim(c, quirks), theta=theta or c.num("rope_theta", 10000.0), vision=form)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{exc} (config {c.path or 'vision_config.'})") from None


def _resolve(cfg: Mapping[str, Any], quirks: HFQuirks) -> RopeSpec | dict[str, RopeSpec]:
    top_type = _model_type(cfg, "", "")
    text_type, vision_type = _WRAPPERS.get(top_type, (top_type, None))
    text_cfg = cfg.get("text_config")
    if text_cfg is not None:
        if not isinstance(text_cfg, Mapping):
            bad("text_config", text_cfg, "must be a JSON object (dict)", TypeError)
        text = _text(_Cfg(text_cfg, "text_config.", _model_type(text_cfg, "text_config.", text_type)), quirks)
    else:
        text = _text(_Cfg(cfg, "", text_type), quirks)  # a wrapper's text keys may sit at the top level
    vision_cfg = cfg.get("vision_config")
    if vision_cfg is None or vision_type is None:
        return text
    if not isinstance(vision_cfg, Mapping):
        bad("vision_config", vision_cfg, "must be a JSON object (dict)", TypeError)
    vtype = _model_type(vision_cfg, "vision_config.", vision_type)
    if vtype != "pixtral" and vtype not in _QWEN_VISION:
        vtype = vision_type
    out: dict[str, RopeSpec] = {}
    if isinstance(text, dict):
        out.update({f"text.{k}": v for k, v in text.items()})
    else:
        out["text"] = text
    out["vision"] = _vision(_Cfg(vision_cfg, "vision_config.", vtype), quirks)
    return out


def spec_from_config(
    config: Mapping[str, Any] | str | Path,
    *,
    layer_type: str | None = None,
    quirks: HFQuirks | None = None,
) -> RopeSpec | dict[str, RopeSpec]:
    """The RopeSpec of a HF config, or ``{layer_type or "text"/"vision": RopeSpec}`` when they differ.

    ``config``: a dict, or a path to ``config.json``. ``layer_type`` picks one entry of a per-layer
    result (``full_attention``, ``sliding_attention``, ``text``, ``vision``, ``text.<layer_type>``); for a
    config with one RoPE for every layer, any name in its ``layer_types`` (or the common layer names)
    returns that one spec. ``quirks``: the transformers behaviours to model (default: transformers 5.24).
    """
    if isinstance(config, (str, Path)):
        config = load_config(config)
    if not isinstance(config, Mapping):
        bad("config", config, "must be a dict (parsed config.json) or a path", TypeError)
    if quirks is None:
        quirks = HFQuirks()
    elif not isinstance(quirks, HFQuirks):
        bad("quirks", quirks, "must be an HFQuirks or None", TypeError)
    result = _resolve(config, quirks)
    if layer_type is None:
        return result
    if not isinstance(layer_type, str):
        bad("layer_type", layer_type, "must be a string", TypeError)
    if isinstance(result, dict):
        if layer_type in result:
            return result[layer_type]
        if f"text.{layer_type}" in result:
            return result[f"text.{layer_type}"]
        bad("layer_type", layer_type, f"not in this config; expected one of {', '.join(result)}")
    names = set(_LAYER_NAMES) | {"text"}
    declared = config.get("layer_types") or (config.get("text_config") or {}).get("layer_types") or []
    if isinstance(declared, list):
        names |= {str(x) for x in declared}
    if layer_type not in names:
        bad("layer_type", layer_type, f"not a layer type of this config; expected one of {', '.join(sorted(names))}")
    return result
