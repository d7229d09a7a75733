"""One RopeSpec from one flat set of rope parameters at one config level (the generic rules).

Called by :mod:`roperef.hf` once per RoPE of a model (one, or one per layer type / rope label). Every
key is read for every model type; :class:`~roperef.hf.quirks.HFQuirks` supplies only the documented
exceptions. What the config does not say and cannot be defaulted from a known family is recorded as an
:class:`~roperef.hf.model.Assumption` in ``ctx.assumed``.

- width: ``partial_rotary_factor`` rho (rope section, else top level), ``rotary_pct`` (the same rho),
  ``rotary_dim`` (an absolute width: rho = rotary_dim / D, so ``int(D*rho) = rotary_dim``); two of them
  that disagree are refused naming both. ``d = int(D*rho)``, ``rotary_dim = 2*ceil(d/2)``, ``freq_dim = d``.
  Under ``default`` a transformers model type whose default init ignores rho rotates the whole head
  (noted); GPT-J / CodeGen slice ``rotary_dim`` channels in their attention (``freq_dim = rotary_dim``).
- pairing: an override, else ``always_rope_interleave``, else a ``rope_interleave`` key (true:
  ``adjacent_in_half_out``; its default comes from ``rope_interleave_models``), else the family's
  (``adjacent_pairing``, :data:`~roperef.hf.quirks.REMOTE_FAMILIES`), else ``half`` (assumed for a model type
  roperef does not know).
- theta: the section's ``rope_theta``, else a per-label theta (``swa_rope_theta``, ``compress_rope_theta``,
  ``rope_local_base_freq``), else the top-level ``rope_theta`` / ``rotary_emb_base`` / ChatGLM
  ``10000 * rope_ratio``, else DBRX's ``attn_config.rope_theta``, else the model type's default, else 10000 (assumed for an unknown model type).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import bad
from ..spec import PAIRINGS, RopeSpec, Scaling
from . import families as fam
from .keys import Level, clean, integer, number
from .model import Assumption
from .quirks import MODEL_DEFAULTS, REMOTE_FAMILIES, HFQuirks

__all__ = ["Context", "one_spec", "head_dim", "TYPES", "PARAM_KEYS", "IGNORABLE_KEYS"]

TYPES = frozenset({"default", "linear", "dynamic", "ntk", "yarn", "longrope", "llama3", "proportional"})
_NEEDS_L0 = frozenset({"yarn", "longrope", "llama3"})
#: Every key roperef reads inside a RoPE section (``rope_scaling`` / ``rope_parameters`` / an entry).
PARAM_KEYS = frozenset({
    "rope_type", "type", "rope_theta", "partial_rotary_factor", "factor", "original_max_position_embeddings",
    "attention_factor", "beta_fast", "beta_slow", "short_factor", "long_factor", "low_freq_factor",
    "high_freq_factor", "mscale", "mscale_all_dim", "truncate", "mrope_section", "mrope_interleaved", "alpha",
})
#: Keys published configs carry inside RoPE sections that do not change transformers' maths (reason).
IGNORABLE_KEYS: Mapping[str, str] = MappingProxyType({
    "finetuned": "a training annotation (YaRN configs); transformers does not read it",
    "max_position_embeddings": "transformers reads the top-level max_position_embeddings, not this copy",
    "rope_interleave": "read from the top level of the config",
    "llama_4_scaling_beta": "scales queries by position (Llama 4 / Mistral 3 attention temperature "
                            "1 + beta*log(1 + floor(p/L0))), outside RoPE; not part of the spec",
})


@dataclass
class Context:
    """What the resolver knows about the model type, and where assumptions and notes go."""

    quirks: HFQuirks
    known: str  # "transformers", "remote" or "unknown"
    pairing_override: str | None = None
    remote_code: tuple[str, ...] = ()  # the class names the config's auto_map points to
    names_given: tuple[str, ...] = ()  # its architectures and auto_map class names
    assumed: list[Assumption] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def assume(self, key: str, value: Any, reason: str) -> None:
        if not any(a.key == key for a in self.assumed):
            self.assumed.append(Assumption(key, value, reason))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def head_dim(c: Level, quirks: HFQuirks) -> int:
    """D: ``qk_rope_head_dim`` (MLA; skipped when ``use_mla`` is false), ``head_dim``, ``attention_head_dim``, ``kv_channels`` (ChatGLM, JetMoE), else
    ``hidden_size // num_attention_heads`` (also ``n_embd // n_head``, vision ``embed_dim`` / ``num_heads``)."""
    factor = None
    rule = quirks.head_dim_from_hidden.get(c.model_type)
    if rule is not None:  # the class sets its head width (key) to k * hidden_size // num_attention_heads itself
        k, key, always = rule
        literal = c.data.get("head_dim") is not None and key != "head_dim"  # set after __post_init__: it wins
        if not literal and (always or c.data.get(key) is None):
            factor = k
    for name in ("qk_rope_head_dim", "head_dim", "attention_head_dim", "kv_channels"):
        if name == "qk_rope_head_dim" and c.raw("use_mla") is False:
            continue  # an MLA-capable config with MLA off (Unlimited-OCR): the plain attention's head
        if name != "qk_rope_head_dim" and factor is not None:
            break  # the config class overwrites head_dim with factor * hidden_size // num_attention_heads
        if name == "head_dim" and c.model_type == "pixtral" and quirks.pixtral_head_dim_from_hidden:
            continue
        if c.has(name):
            return c.need_int(name)
    hidden_name = next((n for n in ("hidden_size", "n_embd", "embed_dim", "d_model") if c.has(n)), None)
    if c.model_type == "qwen2_vl_vision":
        hidden_name = "embed_dim"
    heads_name = next((n for n in ("num_attention_heads", "n_head", "num_heads", "n_heads") if c.has(n)), None)
    if hidden_name is None or heads_name is None:
        bad(c.key("head_dim"), None, "is required (or hidden_size and num_attention_heads): a value is missing; give "
            f"it with --set {c.key('head_dim')}=N")
    hidden, heads = c.need_int(hidden_name), c.need_int(heads_name)
    if hidden % heads:
        bad(c.key(hidden_name), hidden, f"must be divisible by {heads_name}={heads} when head_dim is absent")
    return (factor or 1) * hidden // heads


def _max_positions(c: Level) -> int | None:
    for name in ("max_position_embeddings", "n_positions", "seq_length"):
        if c.has(name):
            return c.int_(name)
    return None


def _rope_type(p: Mapping[str, Any], c: Level, where: str, quirks: HFQuirks) -> str:
    kind = p.get("rope_type", p.get("type", "default"))
    if kind is None:
        kind = "default"
    if not isinstance(kind, str):
        bad(f"{where}.rope_type", kind, "must be a string", TypeError)
    if "rope_type" in p and "type" in p and p["type"] is not None and p["type"] != p["rope_type"]:
        bad(f"{where}.type", p["type"], f"disagrees with {where}.rope_type={p['rope_type']!r}")
    if kind == "mrope":
        return "default"
    if kind == "su" or (kind == "yarn" and c.model_type in quirks.yarn_means_longrope):
        return "longrope"
    if kind == "dynamic" and quirks.dynamic_alpha_means_ntk and p.get("alpha"):
        return "ntk"
    if kind not in TYPES:
        bad(f"{where}.rope_type", kind, f"unknown rope type; expected one of {', '.join(sorted(TYPES))} "
            "(or the aliases type, mrope, su)")
    return kind


def _pairing(c: Level, ctx: Context) -> str:
    q = ctx.quirks
    given = c.data.get("rope_interleave")
    if given is not None and not isinstance(given, bool):
        bad(c.key("rope_interleave"), given, "must be true or false", TypeError)
    if ctx.pairing_override is not None:
        return ctx.pairing_override
    mt = c.model_type
    if mt in q.always_rope_interleave:
        return "adjacent_in_half_out"
    base = "adjacent" if mt in q.adjacent_pairing else "half"
    if mt in REMOTE_FAMILIES and mt not in q.rope_interleave_models:
        base = REMOTE_FAMILIES[mt].pairing
    default = True if mt in q.rope_interleave_models else None
    flag = c.data.get("rope_interleave", default)
    if flag is not None:
        if not isinstance(flag, bool):
            bad(c.key("rope_interleave"), flag, "must be true or false", TypeError)
        return "adjacent_in_half_out" if flag else ("half" if base == "adjacent_in_half_out" else base)
    if ctx.known == "unknown":
        ctx.assume("pairing", base, f"model_type {mt!r} is not a family roperef knows; transformers' generic "
                   "apply_rotary_pos_emb (rotate_half) pairs channels (j, j+n) - supply pairing=... if not")
    return base


def _rho_sources(p: Mapping[str, Any], c: Level, where: str, head: int,
                 top_level: bool = True) -> tuple[float | None, str | None]:
    """``(rho, the key it came from)`` after checking that every width key the config gives agrees.
    ``top_level`` false: the entry was built as the config class builds it (:mod:`roperef.hf.class_rules`),
    which already decided which keys outside it count, so only the entry is read."""
    found: list[tuple[str, Any, float]] = []  # (key, value as written, rho)
    if p.get("partial_rotary_factor") is not None:
        key = f"{where}.partial_rotary_factor"
        found.append((key, p["partial_rotary_factor"], number(key, p["partial_rotary_factor"])))
    if not top_level:
        if found and found[0][2] > 1:
            bad(found[0][0], found[0][1], "must be in (0, 1]")
        return (found[0][2], found[0][0]) if found else (None, None)
    if not found and c.given("partial_rotary_factor"):
        found.append((c.key("partial_rotary_factor"), c.raw("partial_rotary_factor"), c.need_num("partial_rotary_factor")))
    if c.given("rotary_pct"):
        found.append((c.key("rotary_pct"), c.raw("rotary_pct"), c.need_num("rotary_pct")))
    if c.given("rotary_dim") and c.model_type not in ("gptj", "codegen"):
        width = c.need_int("rotary_dim")
        if width > head:
            bad(c.key("rotary_dim"), width, f"must be <= head_dim={head}")
        found.append((c.key("rotary_dim"), width, width / head))
    for key, value, rho in found:
        if rho > 1:
            bad(key, value, "must be in (0, 1]")
    for key, value, rho in found[1:]:
        first_key, first_value, first_rho = found[0]
        if int(head * first_rho) != int(head * rho):
            bad(first_key, first_value, f"disagrees with {key}={value!r}: they give {int(head * first_rho)} and "
                f"{int(head * rho)} rotary channels of head_dim={head}")
    if not found:  # the model type's transformers default, when it has one
        for name in ("partial_rotary_factor", "rotary_pct"):
            if c.has(name):
                return c.num(name), c.key(name)
        return None, None
    return found[0][2], found[0][0]


def _widths(kind: str, p: Mapping[str, Any], c: Level, head: int, where: str, ctx: Context,
            top_level: bool = True) -> tuple[int, int]:
    """``(rotary_dim, freq_dim)``: ``d = int(D*rho)`` when rho applies, ``rotary_dim = 2*ceil(d/2)``."""
    if kind == "proportional":
        return head, head
    if c.model_type == "chatglm":
        return head // 2, head // 2
    if c.model_type in ("gptj", "codegen"):
        d = c.int_("rotary_dim") or head
        if d > head:
            bad(c.key("rotary_dim"), d, f"must be <= head_dim={head}")
        return 2 * math.ceil(d / 2), d
    if c.has("qk_rope_head_dim"):  # MLA: D is the rope slice, which rotates whole; rho (V4) is of head_dim
        rho, rho_key = _rho_sources(p, c, where, c.int_("head_dim") or head, top_level) if c.has("head_dim") else (
            None, None)
        full = c.int_("head_dim") if c.has("head_dim") else None
        if rho is not None and full is not None and int(full * rho) != head:
            bad(rho_key or "partial_rotary_factor", rho, f"disagrees with {c.key('qk_rope_head_dim')}={head}: "
                f"int(head_dim={full} * rho) = {int(full * rho)}")
        if head % 2:
            bad(c.key("qk_rope_head_dim"), head, "must be even (pairs of channels rotate together)")
        return head, head
    rho, rho_key = _rho_sources(p, c, where, head, top_level)
    honours = ctx.known != "transformers" or c.model_type in ctx.quirks.default_honours_partial_rotary
    if rho is not None and kind == "default" and not honours:
        ctx.note(f"{rho_key} not applied: transformers' {c.model_type} default RoPE init rotates the whole head")
        rho = None
    if rho is None:
        if head % 2:
            bad(c.key("head_dim"), head, "is odd; a fully rotated head needs an even width (pairs of channels)")
        if ctx.known == "unknown":
            ctx.assume("rotary_dim", head, "no partial_rotary_factor / rotary_pct / rotary_dim in the config: the "
                       "whole head rotates")
        return head, head
    d = int(head * rho)
    if d < 2:
        bad(rho_key or "partial_rotary_factor", rho, f"leaves int(head_dim*rho) = {d} rotary channels; need >= 2")
    return 2 * math.ceil(d / 2), d


def _theta(p: Mapping[str, Any], c: Level, where: str, ctx: Context, fallback: float | None,
           top_level: bool = True) -> float:
    if c.model_type in ("gptj", "codegen") and ctx.quirks.gptj_theta is not None:
        return ctx.quirks.gptj_theta
    if p.get("rope_theta") is not None:
        return number(f"{where}.rope_theta", p["rope_theta"])
    if fallback is not None:
        return fallback
    if not top_level:
        bad(f"{where}.rope_theta", None, f"is required: transformers' {c.model_type} config class sets no theta for "
            f"this config (its rotary module would fail); give it with --set {where}.rope_theta=VALUE")
    if c.model_type == "chatglm":
        return 10000.0 * c.need_num("rope_ratio")
    if c.given("rope_theta"):
        return c.need_num("rope_theta")
    if c.has("rotary_emb_base"):
        return c.need_num("rotary_emb_base")
    if c.has("rope_theta"):
        return c.need_num("rope_theta")
    attn = c.data.get("attn_config")
    if isinstance(attn, Mapping) and attn.get("rope_theta") is not None:  # DBRX (and MPT-style configs)
        return number(f"{c.key('attn_config')}.rope_theta", attn["rope_theta"])
    remote = REMOTE_FAMILIES.get(c.model_type)
    if remote is not None and remote.theta is not None:
        return remote.theta
    if ctx.known == "unknown" or ctx.known == "remote":
        ctx.assume("rope_theta", 10000.0, "not in the config; 10000 is transformers' default_theta")
    return 10000.0


def _original_max(p: Mapping[str, Any], c: Level, where: str, quirks: HFQuirks, m: int | None) -> int | None:
    inner = p.get("original_max_position_embeddings")
    top = c.data.get("original_max_position_embeddings")
    if top is not None and (quirks.top_level_original_max_wins or inner is None):
        return integer(c.key("original_max_position_embeddings"), top)
    if inner is not None:
        return integer(f"{where}.original_max_position_embeddings", inner)
    if c.has("original_max_position_embeddings"):
        return c.int_("original_max_position_embeddings")
    if quirks.original_max_falls_back_to_max and m is not None:
        return m
    return None


def _scaling(kind: str, p: Mapping[str, Any], c: Level, where: str, quirks: HFQuirks, rho: float | None) -> Scaling:
    m = _max_positions(c)
    kw: dict[str, Any] = {"type": kind}

    def take(*names: str) -> None:
        kw.update({n: p[n] for n in names if p.get(n) is not None})

    if kind in _NEEDS_L0:
        l0 = _original_max(p, c, where, quirks, m)
        if l0 is None:
            bad(f"{where}.original_max_position_embeddings", None, f"is required for rope_type '{kind}': a value is "
                f"missing; give it with --set {where}.original_max_position_embeddings=N")
        kw["original_max_position_embeddings"] = l0
    if kind in ("linear", "dynamic", "llama3", "yarn"):
        take("factor")
    if kind == "dynamic":
        if m is None:
            bad(c.key("max_position_embeddings"), None, "is required for rope_type 'dynamic': a value is missing; give "
                f"it with --set {c.key('max_position_embeddings')}=N")
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
    for name, value in list(kw.items()):  # overflowing integers and the like: one clear error, never a traceback
        if name != "type" and isinstance(value, int) and not isinstance(value, bool):
            number(f"{where}.{name}", value, positive=False)
    try:
        return Scaling(**kw)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{exc} (config {where})") from None


def _mrope(p: Mapping[str, Any], c: Level, where: str, quirks: HFQuirks) -> tuple[Any, str]:
    section = p.get("mrope_section")
    if section is None and "mrope_section" in MODEL_DEFAULTS.get(c.model_type, {}):
        section = MODEL_DEFAULTS[c.model_type]["mrope_section"]
    if section is None:  # the section the family's rotary module uses when the config gives none
        section = fam.DEFAULT_MROPE_SECTION.get(c.model_type)
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


def one_spec(p: Mapping[str, Any], c: Level, where: str, ctx: Context, *,
             head: int | None = None, theta: float | None = None, extra: Mapping[str, Any] | None = None,
             from_class: bool = False) -> RopeSpec:
    """One RopeSpec from a flat rope-parameter dict ``p`` (may be empty) at config level ``c``.

    ``extra`` are parameters inherited from elsewhere (DeepSeek V4's compress entry takes the
    ``rope_scaling`` dict); ``p`` wins over them. ``from_class``: ``p`` is an entry as the model type's
    config class builds it (:func:`roperef.hf.class_rules.class_entries`): its theta and rotary fraction
    are read from it alone, never from keys outside it.
    """
    if not isinstance(p, Mapping):
        bad(where, p, "must be a JSON object (dict) or null", TypeError)
    p = {**(extra or {}), **clean(p)}
    kind = _rope_type(p, c, where, ctx.quirks)
    head = head_dim(c, ctx.quirks) if head is None else head
    rotary, freq = _widths(kind, p, c, head, where, ctx, not from_class)
    rho = None
    if kind == "proportional":
        rho_raw = p.get("partial_rotary_factor") if from_class else p.get("partial_rotary_factor",
                                                                          c.raw("partial_rotary_factor"))
        rho = None if rho_raw is None else number(f"{where}.partial_rotary_factor", rho_raw)
    section, layout = _mrope(p, c, where, ctx.quirks)
    pairing = _pairing(c, ctx)
    if pairing not in PAIRINGS:
        bad("pairing", pairing, f"expected one of {', '.join(PAIRINGS)}")
    theta = _theta(p, c, where, ctx, theta, not from_class)
    scaling = _scaling(kind, p, c, where, ctx.quirks, rho)
    try:
        return RopeSpec(head_dim=head, rotary_dim=rotary, freq_dim=freq, pairing=pairing, theta=theta,
                        scaling=scaling, mrope_section=section, mrope_layout=layout)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{exc} (config {where})") from None
