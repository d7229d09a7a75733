"""The catalogue tables: one function per family, each a list of :class:`~conformance.cases.case.CaseRecipe`.

Smoke tier (checked in under ``golden/``): every family, every scaling type, every pairing
and every dtype, small shapes (D <= 128 except real model head dims, 2 heads, 16 tokens).
Full tier (generated on demand): the smoke cases plus the cross product
scaling x pairing x dtype x position regime at larger shapes, and more dtypes per model.

Spec parameters are realistic (Qwen, Llama 3.1, Phi-3, DeepSeek, gpt-oss, HunYuan, Gemma 4
values) with boundary variants in the ``freq`` family (docs/spec.md sections 3 and 6).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from itertools import product
from pathlib import Path
from typing import Any

from roperef.frequencies import base_inv_freq
from roperef.hf import model_rope
from roperef.json_input import JSONInputError, load_json_file
from roperef.spec import SCALING_TYPES, RopeSpec, Scaling

from ..paths import path_problem
from ..vocabulary import DTYPES
from .case import CaseRecipe, recipe_seed, shape_tag
from .positions import PLAIN_REGIMES, REGIME_FLAGS

__all__ = ["all_recipes", "scaling_spec", "presets_dir"]

_PAIRINGS = ("half", "adjacent")


def _longrope_factors(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Phi-3-like factor lists: short ~1..1.5, long 1..~60, increasing with the pair index."""
    short = tuple(round(1.0 + 0.5 * (i / max(n - 1, 1)) ** 2, 6) for i in range(n))
    long = tuple(round(1.0 + 59.0 * (i / max(n - 1, 1)) ** 2, 6) for i in range(n))
    return short, long


def scaling_spec(kind: str, head_dim: int, pairing: str = "half", **extra: Any) -> RopeSpec:
    """A realistic spec of scaling type ``kind`` at ``head_dim``; ``extra``: further :class:`RopeSpec` fields."""
    n = head_dim // 2
    if kind == "default":
        return RopeSpec(head_dim, pairing=pairing, theta=10000.0, **extra)
    if kind == "linear":
        sc = Scaling("linear", factor=4.0)
        theta = 10000.0
    elif kind == "dynamic":
        sc = Scaling("dynamic", factor=2.0, max_position_embeddings=2048)
        theta = 10000.0
    elif kind == "ntk":
        sc = Scaling("ntk", alpha=1000.0)  # HunYuan
        theta = 10000.0
    elif kind == "yarn":
        sc = Scaling("yarn", factor=4.0, original_max_position_embeddings=32768)  # Qwen2.5
        theta = 1e6
    elif kind == "longrope":
        short, long = _longrope_factors(n)
        sc = Scaling("longrope", short_factor=short, long_factor=long, original_max_position_embeddings=4096,
                     max_position_embeddings=131072)  # Phi-3 128k
        theta = 10000.0
    elif kind == "llama3":
        sc = Scaling("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                     original_max_position_embeddings=8192)  # Llama 3.1
        theta = 500000.0
    elif kind == "proportional":
        sc = Scaling("proportional", partial_rotary_factor=0.25)  # Gemma 4 global layers
        theta = 1e6
    else:
        raise ValueError(f"scaling kind={kind!r}: unknown")
    return RopeSpec(head_dim, pairing=pairing, theta=theta, scaling=sc, **extra)


def _recipe(family: str, variant: str, spec: RopeSpec, dtype: str, tier: str, stage: str,
            shape: tuple[int, ...], positions: str, flags: tuple[str, ...] = (), *,
            scale: float = 1.0, zeros: float = 0.0, seq_len: int | None = None) -> CaseRecipe:
    tag = shape_tag(shape, stage, spec.head_dim)
    pos_tag = f"seq{seq_len}" if stage == "inv_freq" else positions
    scale_tag = "" if scale == 1.0 else f"-x{scale:g}"
    zeros_tag = "" if zeros == 0 else "-zeros"
    case_id = f"{family}/{variant}/{spec.pairing}/{dtype}/{tag}/{pos_tag}{scale_tag}{zeros_tag}"
    all_flags = set(flags) | set(REGIME_FLAGS.get(positions, ()))
    if spec.rotary_start > 0:
        all_flags.add("window-last")
    elif spec.resolved_rotary_dim < spec.head_dim:
        all_flags.add("partial")
    if spec.resolved_freq_dim % 2:
        all_flags.add("odd-width")
    if spec.pairing == "adjacent_in_half_out":
        all_flags.add("pairing-order")
    if spec.mrope_section is not None:
        all_flags.add(f"mrope-{spec.mrope_layout}")
    if spec.vision is not None:
        all_flags.add("vision-2d")
    if scale > 1:
        all_flags.add("large-scale")
    elif scale < 1:
        all_flags.add("small-scale")
    if zeros:
        all_flags.add("zeros")
    return CaseRecipe(id=case_id, family=family, stage=stage, spec=spec, dtype=dtype, tier=tier,
                      flags=tuple(sorted(all_flags)), shape=shape, positions=positions,
                      seed=recipe_seed(case_id), scale=scale, zeros=zeros, seq_len=seq_len)


def _plain_shape(regime: str, b: int, t: int, h: int, d: int) -> tuple[int, ...]:
    if regime == "decode":
        return (max(b, 2) * 2, 1, h, d)
    if regime == "varlen":
        return (b * t, h, d)
    return (b, t, h, d)


# --------------------------------------------------------------------------- families


def _freq() -> Iterator[CaseRecipe]:
    """inv_freq + attention factor: every scaling type, realistic and boundary parameters."""
    f = "freq"
    yield _recipe(f, "default", RopeSpec(128), "float64", "smoke", "inv_freq", (), "", seq_len=4096)
    yield _recipe(f, "default-theta5e5", RopeSpec(64, theta=500000.0), "float64", "smoke", "inv_freq", (), "",
                  seq_len=4096)
    odd = RopeSpec(64, rotary_dim=20, freq_dim=19)  # GPT-NeoX-like rho = 0.3: d = 19 -> width 20
    yield _recipe(f, "default-odd-width", odd, "float64", "smoke", "inv_freq", (), "", seq_len=4096)
    yield _recipe(f, "linear", scaling_spec("linear", 128), "float64", "smoke", "inv_freq", (), "", seq_len=4096)
    dyn = scaling_spec("dynamic", 128)
    for length, tag in ((2048, "dynamic-at-m"), (4096, "dynamic-at-2m"), (2049, "dynamic-past-m")):
        yield _recipe(f, tag, dyn, "float64", "smoke", "inv_freq", (), "", ("boundary",), seq_len=length)
    yield _recipe(f, "ntk", scaling_spec("ntk", 128), "float64", "smoke", "inv_freq", (), "", seq_len=4096)
    yield _recipe(f, "yarn", scaling_spec("yarn", 128), "float64", "smoke", "inv_freq", (), "",
                  ("attention-factor",), seq_len=4096)
    for trunc in (True, False):
        oss = Scaling("yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0,
                      truncate=trunc)
        spec = RopeSpec(64, theta=150000.0, scaling=oss)  # gpt-oss
        yield _recipe(f, f"yarn-truncate-{'on' if trunc else 'off'}", spec, "float64", "smoke", "inv_freq", (),
                      "", ("attention-factor", "boundary"), seq_len=4096)
    for ms, ma, tag in ((0.707, 0.707, "yarn-mscale-v2"), (1.0, 0.0, "yarn-mscale-only"), (1.0, 0.8, "yarn-mscale-ratio")):
        ds = Scaling("yarn", factor=40.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0,
                     mscale=ms, mscale_all_dim=ma)  # DeepSeek-V2/V3
        spec = RopeSpec(64, pairing="adjacent_in_half_out", scaling=ds)
        yield _recipe(f, tag, spec, "float64", "smoke", "inv_freq", (), "", ("attention-factor",), seq_len=4096)
    spec = RopeSpec(64, scaling=Scaling("yarn", factor=4.0, original_max_position_embeddings=2048, attention_factor=0.75))
    yield _recipe(f, "yarn-attention-factor", spec, "float64", "smoke", "inv_freq", (), "", ("attention-factor",),
                  seq_len=4096)
    lr = scaling_spec("longrope", 96)
    for length, tag in ((4096, "longrope-at-l0"), (4097, "longrope-past-l0")):
        yield _recipe(f, tag, lr, "float64", "smoke", "inv_freq", (), "", ("boundary", "attention-factor"),
                      seq_len=length)
    yield _recipe(f, "llama3", scaling_spec("llama3", 128), "float64", "smoke", "inv_freq", (), "", seq_len=4096)
    # band edges: L0 chosen so that pair k's wavelength sits at L0/a (resp. L0/b) up to rounding
    base = RopeSpec(128, theta=500000.0)
    lam = 2.0 * math.pi / base_inv_freq(500000.0, 128, 64)
    for k, which in ((40, "low"), (24, "high")):
        a, b = 1.0, 4.0
        l0 = int(round(lam[k] * (a if which == "low" else b)))
        spec = base.replace(scaling=Scaling("llama3", factor=8.0, low_freq_factor=a, high_freq_factor=b,
                                            original_max_position_embeddings=l0))
        yield _recipe(f, f"llama3-edge-{which}", spec, "float64", "smoke", "inv_freq", (), "", ("boundary",),
                      seq_len=4096)
    yield _recipe(f, "proportional", scaling_spec("proportional", 128), "float64", "smoke", "inv_freq", (), "",
                  seq_len=4096)
    spec = RopeSpec(256, theta=1e6, scaling=Scaling("proportional", partial_rotary_factor=0.25, factor=8.0))
    yield _recipe(f, "proportional-factor", spec, "float64", "smoke", "inv_freq", (), "", seq_len=4096)


def _table() -> Iterator[CaseRecipe]:
    """cos/sin tables (attention factor folded in) for position sets."""
    f = "table"
    for regime in ("short", "long-odd", "near-2p31", "offsets"):
        yield _recipe(f, "default", RopeSpec(64), "float64", "smoke", "cos_sin", (2, 16), regime)
    yield _recipe(f, "yarn", scaling_spec("yarn", 64), "float64", "smoke", "cos_sin", (2, 16), "long-odd",
                  ("attention-factor",))
    yield _recipe(f, "longrope", scaling_spec("longrope", 64), "float64", "smoke", "cos_sin", (2, 16), "short",
                  ("attention-factor",))
    mrope = RopeSpec(128, theta=1e6, mrope_section=(16, 24, 24))
    yield _recipe(f, "mrope-chunked", mrope, "float64", "smoke", "cos_sin", (2, 16), "text-image")
    yield _recipe(f, "pixtral", RopeSpec(64, vision="pixtral"), "float64", "smoke", "cos_sin", (1, 16), "grid")
    for kind in SCALING_TYPES:
        yield _recipe(f, kind, scaling_spec(kind, 128), "float64", "full", "cos_sin", (2, 64), "long-odd")


def _apply() -> Iterator[CaseRecipe]:
    """x rotated by given (dtype-rounded) tables: both pairings; full, partial, window-last, odd widths."""
    f, shape = "apply", (2, 16, 2, 64)
    yield _recipe(f, "full", RopeSpec(64), "float32", "smoke", "apply", shape, "short")
    yield _recipe(f, "full", RopeSpec(64, pairing="adjacent"), "bfloat16", "smoke", "apply", shape, "long-odd")
    yield _recipe(f, "partial", RopeSpec(64, rotary_dim=32), "float16", "smoke", "apply", shape, "short")
    yield _recipe(f, "window-last", RopeSpec(64, rotary_dim=32, rotary_start=32, pairing="adjacent"), "float64",
                  "smoke", "apply", shape, "long-odd")
    yield _recipe(f, "odd-width", RopeSpec(64, rotary_dim=20, freq_dim=19), "float32", "smoke", "apply", shape,
                  "offsets")
    yield _recipe(f, "full", RopeSpec(64, pairing="adjacent_in_half_out"), "bfloat16", "smoke", "apply", shape,
                  "short")
    for dtype, pairing in product(DTYPES, _PAIRINGS):
        yield _recipe(f, "full", RopeSpec(128, pairing=pairing), dtype, "full", "apply", (2, 32, 4, 128), "long-odd")


def _forward() -> Iterator[CaseRecipe]:
    """Every scaling type x both pairings x four dtypes; the position regimes rotate over the grid."""
    f = "forward"
    for kind, pi, di in product(SCALING_TYPES, range(2), range(4)):
        pairing, dtype = _PAIRINGS[pi], DTYPES[di]
        # (scaling, pairing, dtype) -> regime: every scaling and every dtype meets every regime
        regime = PLAIN_REGIMES[(SCALING_TYPES.index(kind) + pi + 2 * di) % len(PLAIN_REGIMES)]
        spec = scaling_spec(kind, 64, pairing)
        extra = ("attention-factor",) if kind in ("yarn", "longrope") else ()
        yield _recipe(f, kind, spec, dtype, "smoke", "forward", _plain_shape(regime, 2, 16, 2, 64), regime, extra)
        for regime_full in PLAIN_REGIMES:
            yield _recipe(f, kind, scaling_spec(kind, 128, pairing), dtype, "full", "forward",
                          _plain_shape(regime_full, 2, 32, 4, 128), regime_full, extra)
    ds = RopeSpec(64, pairing="adjacent_in_half_out", scaling=Scaling(
        "yarn", factor=40.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0,
        mscale=0.707, mscale_all_dim=0.707))  # DeepSeek V2/V3 rope_interleave
    for dtype, regime in (("float32", "long-odd"), ("bfloat16", "decode"), ("float64", "near-2p31")):
        yield _recipe(f, "yarn-deepseek", ds, dtype, "smoke", "forward", _plain_shape(regime, 2, 16, 2, 64), regime)
    oss = RopeSpec(64, theta=150000.0, scaling=Scaling("yarn", factor=32.0, original_max_position_embeddings=4096,
                                                        truncate=False))
    yield _recipe(f, "yarn-no-truncate", oss, "float32", "smoke", "forward", (2, 16, 2, 64), "short",
                  ("attention-factor",))
    yield _recipe(f, "default-partial", RopeSpec(64, rotary_dim=32), "float32", "smoke", "forward", (2, 16, 2, 64),
                  "long-odd")
    wl = RopeSpec(64, rotary_dim=32, rotary_start=32, pairing="adjacent")
    yield _recipe(f, "default-window-last", wl, "bfloat16", "smoke", "forward", (2, 16, 2, 64), "offsets")
    odd = RopeSpec(64, rotary_dim=20, freq_dim=19)
    yield _recipe(f, "default-odd-width", odd, "float32", "smoke", "forward", (2, 16, 2, 64), "short")
    yield _recipe(f, "default", RopeSpec(128), "float32", "smoke", "forward", (1, 8, 2, 128), "near-2p31")
    yield _recipe(f, "default", RopeSpec(64), "float16", "smoke", "forward", (2, 16, 2, 64), "long-odd", scale=1000.0)
    yield _recipe(f, "default", RopeSpec(64), "bfloat16", "smoke", "forward", (2, 16, 2, 64), "short", scale=0.001)
    yield _recipe(f, "default", RopeSpec(64, pairing="adjacent"), "float32", "smoke", "forward", (2, 16, 2, 64),
                  "offsets", zeros=0.1)


def _mrope() -> Iterator[CaseRecipe]:
    """mRoPE chunked / interleaved with real sections and text+image ids; GLM-4V adjacent + partial."""
    f, shape = "mrope", (2, 16, 2, 128)
    qwen25 = RopeSpec(128, theta=1e6, mrope_section=(16, 24, 24))
    qwen3 = RopeSpec(128, theta=5e6, mrope_section=(24, 20, 20), mrope_layout="interleaved")
    glm = RopeSpec(128, rotary_dim=64, pairing="adjacent", mrope_section=(8, 12, 12))
    yield _recipe(f, "chunked", qwen25, "float32", "smoke", "forward", shape, "text-image")
    yield _recipe(f, "chunked", qwen25, "float64", "smoke", "forward", shape, "text-only")
    yield _recipe(f, "interleaved", qwen3, "bfloat16", "smoke", "forward", shape, "text-image")
    yield _recipe(f, "interleaved", qwen3, "float32", "smoke", "forward", shape, "long-odd")
    yield _recipe(f, "glm4v", glm, "float16", "smoke", "forward", shape, "text-image")
    for (name, spec), dtype, regime in product((("chunked", qwen25), ("interleaved", qwen3), ("glm4v", glm)),
                                              DTYPES, ("text-image", "text-only", "long-odd")):
        yield _recipe(f, name, spec, dtype, "full", "forward", (2, 32, 4, 128), regime)


def _vision2d() -> Iterator[CaseRecipe]:
    """2-D axial vision RoPE: Qwen-VL (D = 80, Qwen2.5-VL's vision head) and Pixtral (D = 64)."""
    f = "vision2d"
    qwen = RopeSpec(80, theta=10000.0, vision="qwen_vl")
    pix = RopeSpec(64, theta=10000.0, vision="pixtral")
    yield _recipe(f, "qwen-vl", qwen, "float32", "smoke", "forward", (1, 16, 2, 80), "grid")
    yield _recipe(f, "qwen-vl", qwen, "float16", "smoke", "forward", (1, 16, 2, 80), "long-odd")
    yield _recipe(f, "pixtral", pix, "bfloat16", "smoke", "forward", (1, 16, 2, 64), "grid")
    yield _recipe(f, "pixtral", pix, "float64", "smoke", "forward", (1, 16, 2, 64), "long-odd")
    for (name, spec), dtype in product((("qwen-vl", qwen), ("pixtral", pix)), DTYPES):
        yield _recipe(f, name, spec, dtype, "full", "forward", (1, 64, 4, spec.head_dim), "grid")


def _backward() -> Iterator[CaseRecipe]:
    """The VJP on a representative subset (pairings, scalings, window, varlen, mRoPE, vision)."""
    f = "backward"
    s = (2, 16, 2, 64)
    yield _recipe(f, "default", RopeSpec(64), "float32", "smoke", "backward", s, "short")
    yield _recipe(f, "default", RopeSpec(64, pairing="adjacent"), "bfloat16", "smoke", "backward", s, "long-odd")
    ds = RopeSpec(64, pairing="adjacent_in_half_out", scaling=Scaling(
        "yarn", factor=40.0, original_max_position_embeddings=4096, mscale=1.0, mscale_all_dim=0.8))
    yield _recipe(f, "yarn-deepseek", ds, "float32", "smoke", "backward", s, "offsets", ("attention-factor",))
    yield _recipe(f, "longrope", scaling_spec("longrope", 64), "float64", "smoke", "backward", s, "near-2p31",
                  ("attention-factor",))
    wl = RopeSpec(64, rotary_dim=32, rotary_start=32)
    yield _recipe(f, "default-window-last", wl, "float16", "smoke", "backward", (4, 1, 2, 64), "decode")
    yield _recipe(f, "llama3", scaling_spec("llama3", 64), "float32", "smoke", "backward", (32, 2, 64), "varlen")
    qwen3 = RopeSpec(128, theta=5e6, mrope_section=(24, 20, 20), mrope_layout="interleaved")
    yield _recipe(f, "mrope-interleaved", qwen3, "float32", "smoke", "backward", (2, 16, 2, 128), "text-image")
    yield _recipe(f, "pixtral", RopeSpec(64, vision="pixtral"), "float64", "smoke", "backward", (1, 16, 2, 64), "grid")
    for kind, pairing, dtype in product(SCALING_TYPES, _PAIRINGS, DTYPES):
        yield _recipe(f, kind, scaling_spec(kind, 128, pairing), dtype, "full", "backward", (2, 32, 4, 128), "long-odd")


def presets_dir(explicit: str | os.PathLike | None = None) -> Path:
    """``explicit``, else env ``ROPEREF_PRESETS``, else the copy shipped in ``conformance/presets``.

    The shipped presets (real published configs with provenance) are what the checked-in
    golden ``model`` cases were generated from, so a checkout needs nothing beside it.
    """
    return _presets_origin(explicit)[0]


def _presets_origin(explicit: str | os.PathLike | None = None) -> tuple[Path, str]:
    """:func:`presets_dir` and what named it (for messages)."""
    if explicit:
        return Path(explicit), "presets directory"
    env = os.environ.get("ROPEREF_PRESETS")
    if env:
        return Path(env), "ROPEREF_PRESETS"
    return Path(__file__).resolve().parents[1] / "presets", "the presets shipped in conformance/presets"


def _model(directory: str | None) -> Iterator[CaseRecipe]:
    """One forward case per distinct spec of the real configs (per layer type / text+vision), short and long,
    named after the first preset (alphabetically) that resolves to it: presets sharing a spec (Llama 2 and
    Mistral 7B, the Qwen3-VL vision towers, ...) would only repeat the same case. A config whose model has no
    RoPE (BERT, GPT-2, Nemotron-H, ...) has none."""
    folder, origin = _presets_origin(directory)
    problem = path_problem(folder, "dir")
    files = sorted(folder.glob("*.json")) if problem is None else []
    if not files:  # never a silent substitute: a catalogue without its model family is not this catalogue
        raise ValueError(f"{origin} {folder}: {problem or 'holds no preset (*.json)'}; the model family of the "
                         "catalogue cannot be built (point ROPEREF_PRESETS at a folder of config.json presets, or unset it)")
    seen: set[RopeSpec] = set()
    for path in files:
        try:
            config = load_json_file(path, what="preset")
        except (JSONInputError, FileNotFoundError) as exc:
            raise ValueError(f"{origin}: {exc}") from None
        resolved = model_rope(config)  # a model without RoPE has no spec: no case
        specs = {"": resolved.specs["text"]} if list(resolved.specs) == ["text"] else dict(resolved.specs)
        for key, spec in sorted(specs.items()):
            if spec in seen:
                continue
            seen.add(spec)
            name = path.stem + (f"@{key}" if key else "")
            d = spec.head_dim
            if spec.vision is not None:
                short, long, shp_s, shp_l = "grid", "long-odd", (1, 16, 2, d), (1, 16, 2, d)
            elif spec.mrope_section is not None:
                short, long, shp_s, shp_l = "text-image", "long-odd", (2, 16, 2, d), (2, 16, 2, d)
            else:
                short, long, shp_s, shp_l = "short", "long-odd", (2, 16, 2, d), (1, 16, 2, d)
            yield _recipe("model", name, spec, "bfloat16", "smoke", "forward", shp_s, short, ("model",))
            yield _recipe("model", name, spec, "float32", "smoke", "forward", shp_l, long, ("model",))
            yield _recipe("model", name, spec, "float32", "full", "forward", shp_s, short, ("model",))
            yield _recipe("model", name, spec, "bfloat16", "full", "forward", shp_l, long, ("model",))


def all_recipes(presets: str | None = None) -> list[CaseRecipe]:
    """Every recipe of every family, both tiers."""
    out: list[CaseRecipe] = []
    for family in (_freq(), _table(), _apply(), _forward(), _mrope(), _vision2d(), _backward(), _model(presets)):
        out.extend(family)
    return out
