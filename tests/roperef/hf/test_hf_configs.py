"""roperef.hf: every real preset parses to the values read off its published config, every config form
of docs/spec.md section 7 is understood, and every malformed config fails naming its key.

Expected values are derived by hand from the config facts (head_dim = hidden_size / heads, rotary width
= int(D * rho), theta as published, ...), never copied from the parser's output.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from conformance.cases.catalog import presets_dir
from roperef.frequencies import inv_freq
from roperef.hf import HFQuirks, NoRopeError, load_config, model_rope, spec_from_config
from roperef.spec import RopeSpec

PRESETS = presets_dir()  # $ROPEREF_PRESETS, else the copy shipped in conformance/presets
MALFORMED = Path(__file__).resolve().parents[2] / "data" / "malformed_configs"

# (head_dim, rotary_dim, pairing, theta, scaling type, extra Scaling fields) by hand from the configs.
L31 = dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)
EXPECTED: dict[str, dict[str, tuple]] = {
    "aya-23-8b": {"": (4096 // 32, 128, "adjacent", 1e4, "default", {})},
    "codellama-7b": {"": (128, 128, "half", 1e6, "default", {})},
    "deepseek-v2-lite": {"": (64, 64, "adjacent", 1e4, "yarn", dict(
        factor=40.0, original_max_position_embeddings=4096, mscale=0.707, mscale_all_dim=0.707))},
    "deepseek-v3": {"": (64, 64, "adjacent_in_half_out", 1e4, "yarn", dict(
        factor=40.0, original_max_position_embeddings=4096, mscale=1.0, mscale_all_dim=1.0))},
    "gemma-3-1b-it": {"full_attention": (256, 256, "half", 1e6, "default", {}),
                      "sliding_attention": (256, 256, "half", 1e4, "default", {})},
    "gemma-3-4b-it": {"full_attention": (256, 256, "half", 1e6, "linear", dict(factor=8.0)),
                      "sliding_attention": (256, 256, "half", 1e4, "default", {})},
    "glm-4-9b-chat": {"": (128, 64, "adjacent", 10000.0 * 500, "default", {})},
    "glm-4.5v": {"": (128, 64, "half", 1e4, "default", {})},
    "gpt-j-6b": {"": (4096 // 16, 64, "adjacent", 1e4, "default", {})},
    "gpt-neox-20b": {"": (6144 // 64, 24, "half", 1e4, "default", {})},
    "gpt-oss-20b": {"": (64, 64, "half", 150000.0, "yarn", dict(
        factor=32.0, original_max_position_embeddings=4096, truncate=False))},
    "hunyuan-a13b-instruct": {"": (128, 128, "half", 1e4, "ntk", dict(alpha=1000.0))},
    "llama-2-7b": {"": (128, 128, "half", 1e4, "default", {})},
    "llama-3.1-8b": {"": (128, 128, "half", 5e5, "llama3", L31)},
    "llama-3.2-1b": {"": (64, 64, "half", 5e5, "llama3", {**L31, "factor": 32.0})},
    "mistral-7b-v0.1": {"": (128, 128, "half", 1e4, "default", {})},
    "mistral-small-3.1-24b-instruct": {"text": (128, 128, "half", 1e9, "default", {}),
                                       "vision": (64, 64, "half", 1e4, "default", {})},
    "phi-3-mini-128k-instruct": {"": (3072 // 32, 96, "half", 1e4, "longrope", dict(
        original_max_position_embeddings=4096, max_position_embeddings=131072))},
    "phi-3.5-mini-instruct": {"": (96, 96, "half", 1e4, "longrope", dict(
        original_max_position_embeddings=4096, max_position_embeddings=131072))},
    "phi-4-mini-instruct": {"": (3072 // 24, 96, "half", 1e4, "longrope", dict(
        original_max_position_embeddings=4096, max_position_embeddings=131072))},
    "pixtral-12b": {"text": (128, 128, "half", 1e9, "default", {}), "vision": (64, 64, "half", 1e4, "default", {})},
    "qwen2.5-7b-instruct-yarn": {"": (3584 // 28, 128, "half", 1e6, "yarn", dict(
        factor=4.0, original_max_position_embeddings=32768))},
    "qwen2.5-7b-instruct": {"": (128, 128, "half", 1e6, "default", {})},
    "qwen2.5-vl-7b-instruct": {"text": (128, 128, "half", 1e6, "default", {}),
                               "vision": (1280 // 16, 80, "half", 1e4, "default", {})},
    "qwen3-vl-32b-instruct": {"text": (128, 128, "half", 5e6, "default", {}),
                              "vision": (1152 // 16, 72, "half", 1e4, "default", {})},
}
EXPECTED_TEAM = frozenset(EXPECTED)  # the team's first 25 presets (their _source lines predate the repo:path@commit rule)

# The real corpus grown for issue 12 (conformance/presets/*.json; values read off each file's published keys).
DS_YARN = dict(original_max_position_embeddings=4096, mscale=1.0, mscale_all_dim=1.0)
L31_BANDS = dict(low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)
EXPECTED.update({
    # swa_rope_theta + hybrid_layer_pattern; rho 0.334 of 192: int(64.128) = 64 channels
    "mimo-v2-flash": {"full_attention": (192, 64, "half", 5e6, "default", {}),
                      "sliding_attention": (192, 64, "half", 1e4, "default", {})},
    # compress_rope_theta: main = plain RoPE at rope_theta, compress = the yarn rope_scaling at 160000
    "deepseek-v4-flash": {"main": (64, 64, "adjacent", 1e4, "default", {}),
                          "compress": (64, 64, "adjacent", 160000.0, "yarn", dict(
                              factor=16.0, original_max_position_embeddings=65536, attention_factor=1.0))},
    "glm-5": {"text": (64, 64, "adjacent_in_half_out", 1e6, "default", {}),
              "indexer": (64, 64, "adjacent_in_half_out", 1e6, "default", {})},
    "deepseek-v3.2": {"text": (64, 64, "adjacent_in_half_out", 1e4, "yarn", dict(factor=40.0, **DS_YARN)),
                      "indexer": (64, 64, "half", 1e4, "yarn", dict(factor=40.0, **DS_YARN))},
    "kimi-k2-instruct": {"": (64, 64, "adjacent_in_half_out", 50000.0, "yarn", dict(
        factor=32.0, beta_fast=1.0, beta_slow=1.0, **DS_YARN))},
    "kimi-k2.5": {"": (64, 64, "adjacent_in_half_out", 50000.0, "yarn", dict(factor=64.0, **DS_YARN))},
    # llama3 with high_freq_factor == low_freq_factor (empty middle band)
    "llama-4-scout-17b-16e-instruct": {"": (128, 128, "adjacent", 5e5, "llama3", dict(
        factor=16.0, low_freq_factor=1.0, high_freq_factor=1.0, original_max_position_embeddings=8192))},
    "llama-4-maverick-17b-128e-instruct": {"": (128, 128, "adjacent", 5e5, "default", {})},
    "minimax-m2.5": {"": (128, 64, "half", 5e6, "default", {})},  # rotary_dim 64 of head_dim 128
    "minimax-m3": {"": (128, 64, "half", 5e6, "default", {})},  # rotary_dim 64 and rho 0.5 agree
    "llama-3.3-nemotron-super-49b-v1": {"": (8192 // 64, 128, "half", 5e5, "llama3", L31)},
    "qwen3-8b": {"": (128, 128, "half", 1e6, "default", {})},
    "qwen3-30b-a3b": {"": (128, 128, "half", 1e6, "default", {})},
    "qwen3.5-27b": {"text": (256, 64, "half", 1e7, "default", {}),  # rho 0.25 of 256
                    "vision": (1152 // 16, 72, "half", 1e4, "default", {})},
    "qwen3-vl-30b-a3b-instruct": {"text": (128, 128, "half", 5e6, "default", {}),
                                  "vision": (1152 // 16, 72, "half", 1e4, "default", {})},
    # per layer type; full layers on global_head_dim 512 with proportional rho 0.25
    "gemma-4-26b-a4b": {"full_attention": (512, 512, "half", 1e6, "proportional", dict(partial_rotary_factor=0.25)),
                        "sliding_attention": (256, 256, "half", 1e4, "default", {})},
    "mixtral-8x7b-v0.1": {"": (4096 // 32, 128, "half", 1e6, "default", {})},
    "mimo-7b-base": {"": (128, 128, "half", 640000.0, "default", {})},
    "phi-2-msft": {"": (2560 // 32, 32, "half", 1e4, "default", {})},  # rotary_dim 32 of 80, base 10000 in the code
    "phi-1.5-msft": {"": (2048 // 32, 32, "half", 1e4, "default", {})},
    "phi-2": {"": (80, 32, "half", 1e4, "default", {})},  # rho 0.4 of 80
    "qwen-1.8b-chat": {"": (2048 // 16, 128, "half", 1e4, "default", {})},  # rotary_pct 1.0, rotary_emb_base
    "gemma-2b": {"": (256, 256, "half", 1e4, "default", {})},
    "gemma-2-2b": {"": (256, 256, "half", 1e4, "default", {})},
    "stablelm-2-zephyr-1.6b": {"": (2048 // 32, 16, "half", 1e4, "default", {})},  # rho 0.25 of 64
    "internlm2.5-7b-chat": {"": (4096 // 32, 128, "half", 1e6, "dynamic", dict(
        factor=2.0, max_position_embeddings=32768))},
    "starcoder2-15b": {"": (4608 // 36, 128, "half", 1e6, "default", {})},
    "olmo-2-7b": {"": (4096 // 32, 128, "half", 5e5, "default", {})},
    "qwen1.5-moe-a2.7b": {"": (2048 // 16, 128, "half", 1e6, "default", {})},
    "redpajama-incite-3b-v1": {"": (2560 // 32, 80, "half", 1e4, "default", {})},  # rotary_pct 1.0
})
#: Real configs whose model has no RoPE anywhere (not a default spec).
NO_ROPE = {"gpt2", "gpt-bigcode-santacoder", "snowflake-arctic-embed-m", "bert-base-multilingual-cased", "bart-base",
           "nemotron-3-nano-30b-a3b", "kimi-k3", "granite-4.0-h-350m"}
MROPE = {"glm-4.5v": ((8, 12, 12), "chunked"), "qwen2.5-vl-7b-instruct": ((16, 24, 24), "chunked"),
         "qwen3-vl-32b-instruct": ((24, 20, 20), "interleaved"), "qwen3.5-27b": ((11, 11, 10), "interleaved"),
         "qwen3-vl-30b-a3b-instruct": ((24, 20, 20), "interleaved")}
VISION = {"mistral-small-3.1-24b-instruct": "pixtral", "pixtral-12b": "pixtral",
          "qwen2.5-vl-7b-instruct": "qwen_vl", "qwen3-vl-32b-instruct": "qwen_vl", "qwen3-vl-30b-a3b-instruct": "qwen_vl",
          "qwen3.5-27b": "qwen_vl"}
#: Assumptions a preset may carry (everything else resolves without one).
ASSUMED = {"qwen-1.8b-chat": {"use_dynamic_ntk"}}

# Corpus grown for issue 12 item 5 (transformers families and remote-code families), read by hand off each config
# and its family's transformers (or remote) source; the comments give the rule each value comes from.
EXPECTED.update({
    # llama3 in rope_scaling, top-level rope_theta; ApertusAttention rotate_half; D = 4096 // 32
    "apertus-8b-2509": {"": (4096 // 32, 128, "half", 12e6, "llama3", dict(factor=8.0, **L31_BANDS))},
    "apertus-v1.5-8b": {"": (4096 // 32, 128, "half", 4e6, "llama3", dict(factor=32.0, **L31_BANDS))},  # text_config
    # afmoe: head_dim 128, default RoPE at 1e4 (full layers are NoPE: LAYERS)
    "trinity-nano-preview": {"": (128, 128, "half", 1e4, "default", {})},
    # bailing_hybrid: head_dim = qk_rope_head_dim 64 (BailingHybridConfig), interleaved apply, theta 6e6 default
    "ling-3.0-tiny": {"": (64, 64, "adjacent_in_half_out", 6e6, "default", {})},
    # DBRX: d_model 6144 / n_heads 48; transformers 5.24's DbrxConfig builds rope_parameters without reading
    # attn_config.rope_theta (5e5 as published, noted): its class default theta 10000 (default_theta)
    "dbrx-instruct": {"": (6144 // 48, 128, "half", 1e4, "default", {})},
    "dots.llm1.inst": {"": (4096 // 32, 128, "half", 1e7, "default", {})},
    # Gemma-4-like per-type rope_parameters: full on global_head_dim 512, proportional rho 0.25
    "diffusiongemma-26b-a4b-it": {"full_attention": (512, 512, "half", 1e6, "proportional", dict(partial_rotary_factor=0.25)),
                                  "sliding_attention": (256, 256, "half", 1e4, "default", {})},
    "exaone-4.0-32b": {"": (128, 128, "half", 1e6, "llama3", dict(factor=16.0, **L31_BANDS))},
    "k-exaone-236b-a23b": {"": (128, 128, "half", 1e6, "default", {})},
    "glm-4.5": {"": (128, 64, "half", 1e6, "default", {})},  # glm4_moe default init reads rho 0.5
    # glm4_moe_lite: D = qk_rope_head_dim 64, rope_interleave defaults to true
    "glm-4.7-flash": {"": (64, 64, "adjacent_in_half_out", 1e6, "default", {})},
    # falcon_h1: every layer is hybrid (attention + Mamba); attn_layer_indices is not a FalconH1Config field
    "falcon-h1-0.5b-instruct": {"": (64, 64, "half", 1e11, "default", {})},
    "granite-swash-2b": {"": (2560 // 20, 128, "half", 1e4, "default", {})},
    "falcon-7b-instruct": {"": (4544 // 71, 64, "half", 1e4, "default", {})},  # alibi false; FalconConfig theta 1e4
    "helium-1-preview-2b": {"": (128, 128, "adjacent", 1e5, "default", {})},  # repeat_interleave cos/sin
    "laguna-xs.2-fp8": {"full_attention": (128, 64, "half", 5e5, "yarn", dict(
        factor=64.0, original_max_position_embeddings=4096, beta_fast=64.0, beta_slow=1.0,
        attention_factor=1.4158883083359672)),
        "sliding_attention": (128, 128, "half", 1e4, "default", {})},
    "ministral-3-3b-instruct-2512": {"text": (128, 128, "half", 1e6, "yarn", dict(
        factor=16.0, original_max_position_embeddings=16384, beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0)),
        "vision": (1024 // 16, 64, "half", 1e4, "default", {})},
    "qwen3.5-35b-a3b": {"text": (256, 64, "half", 1e7, "default", {}), "vision": (1152 // 16, 72, "half", 1e4, "default", {})},
    "qwen3-next-80b-a3b-thinking": {"": (256, 64, "half", 1e7, "default", {})},  # rho 0.25 of 256
    # per-layer rope_theta / partial_rotary_factors lists: each layer type takes its first layer's values;
    # rope_scaling (llama3) joins full_attention only
    "step-3.5-flash": {"full_attention": (128, 64, "half", 5e6, "llama3", dict(
        factor=2.0, low_freq_factor=1.0, high_freq_factor=32.0, original_max_position_embeddings=131072)),
        "sliding_attention": (128, 128, "half", 1e4, "default", {})},
    # remote code: ChatGLM2/3 rotate half of each 128 head in adjacent pairs at 10000 * rope_ratio (absent: 1)
    "chatglm2-6b": {"": (128, 64, "adjacent", 1e4, "default", {})},
    "chatglm3-6b": {"": (128, 64, "adjacent", 1e4, "default", {})},
    "orion-14b-chat": {"": (5120 // 40, 128, "half", 1e4, "default", {})},
    "ling-plus": {"": (5376 // 42, 128, "half", 6e5, "default", {})},
    # config-only in transformers (mapped to Llama): dynamic NTK factor 6 at M 32768
    "internlm3-8b-instruct": {"": (128, 128, "half", 5e7, "dynamic", dict(factor=6.0, max_position_embeddings=32768))},
    # remote code without a RoPE key: the code's base 10000, rotate_half on the whole head
    "baichuan2-7b-chat": {"": (4096 // 32, 128, "half", 1e4, "default", {})},
    "internlm-chat-7b": {"": (4096 // 32, 128, "half", 1e4, "default", {})},
    "minicpm-2b-sft-bf16": {"": (2304 // 36, 64, "half", 1e4, "default", {})},
    "granite-3.3-2b-instruct": {"": (2048 // 32, 64, "half", 1e7, "default", {})},
    # RecurrentGemma: D = 2560 // 10 (the config class overwrites head_dim), partial_rotary_factor 0.5 honoured
    "recurrentgemma-2b": {"": (2560 // 10, 128, "half", 1e4, "default", {})},
    "smollm3-3b": {"": (2048 // 16, 128, "half", 5e6, "default", {})},
    # ERNIE 4.5: published head_dim 128 (hidden 1024 / 16 heads would be 64); rotate_half on 0::2 / 1::2 = adjacent
    "ernie-4.5-0.3b-base-pt": {"": (128, 128, "adjacent", 5e5, "default", {})},
    "ernie-4.5-21b-a3b-pt": {"": (2560 // 20, 128, "adjacent", 5e5, "default", {})},
    # CodeGen: n_embd 2048 / n_head 16; rotary_dim 64 sliced in the attention, rotate_every_two, fixed base 10000
    "codegen2-1b": {"": (2048 // 16, 64, "adjacent", 1e4, "default", {})},
    "bitnet-b1.58-2b-4t-bf16": {"": (2560 // 20, 128, "half", 5e5, "default", {})},
    "llama-3.2-11b-vision": {"": (4096 // 32, 128, "half", 5e5, "llama3", L31)},  # mllama text_config
    "nemotron-mini-4b": {"": (3072 // 24, 64, "half", 1e4, "default", {})},  # partial_rotary_factor 0.5
    "lfm2-1.2b": {"": (2048 // 32, 64, "half", 1e6, "default", {})},
    "glm-ocr": {"": (128, 128, "adjacent", 1e4, "default", {})},  # text_config, mrope [16, 24, 24]
    # legacy flat Qwen2-VL: mrope in rope_scaling; vision head = embed_dim 1280 / 16 (hidden_size is the merger's)
    "qwen2-vl-2b": {"text": (1536 // 12, 128, "half", 1e6, "default", {}), "vision": (1280 // 16, 80, "half", 1e4, "default", {})},
    # MLA rope part qk_rope_head_dim 32; longrope with L0 = M = 32768 (MiniCPM3Config theta 10000)
    "minicpm3-4b": {"": (32, 32, "half", 1e4, "longrope", dict(original_max_position_embeddings=32768,
                                                             max_position_embeddings=32768))},
})
EXPECTED.update({
    "mellum2-12b-a2.5b-base": {"full_attention": (128, 128, "half", 5e5, "yarn", dict(
        factor=16.0, original_max_position_embeddings=8192, beta_fast=32.0, beta_slow=1.0,
        attention_factor=1.2772588722239782)),
        "sliding_attention": (128, 128, "half", 5e5, "default", {})},
    "t5gemma-2b-2b-ul2-encoder": {"": (256, 256, "half", 1e4, "default", {})},  # the encoder sub-config alone

})
# Omni: the text config sits in thinker_config.text_config (D = 3584 // 28), mRoPE [16, 24, 24] chunked (Qwen2.5-VL)
EXPECTED["qwen2.5-omni-7b"] = {"": (3584 // 28, 128, "half", 1e6, "default", {})}
# Seed-OSS keeps its explicit head_dim 128 (5120 / 80 would be 64); LFM2-MoE: D = 2048 // 32, conv layers
EXPECTED["seed-oss-36b-instruct-4bit"] = {"": (128, 128, "half", 1e7, "default", {})}
EXPECTED["lfm2-8b-a1b-4bit"] = {"": (2048 // 32, 64, "half", 1e6, "default", {})}
MROPE["qwen2.5-omni-7b"] = ((16, 24, 24), "chunked")
MROPE.update({"glm-ocr": ((16, 24, 24), "chunked"), "qwen2-vl-2b": ((16, 24, 24), "chunked")})
VISION["qwen2-vl-2b"] = "qwen_vl"
MROPE["qwen3.5-35b-a3b"] = ((11, 11, 10), "interleaved")
VISION.update({"ministral-3-3b-instruct-2512": "pixtral", "qwen3.5-35b-a3b": "qwen_vl"})


def _preset_files() -> list[Path]:
    return sorted(PRESETS.glob("*.json"))


def test_every_preset_has_expectations():
    assert {p.stem for p in _preset_files()} == set(EXPECTED) | NO_ROPE
    assert not set(EXPECTED) & NO_ROPE


def test_every_preset_says_where_it_came_from():
    """``_hf_model_id`` and ``_source``; the presets added beyond the team's set name repository:path@commit."""
    for path in _preset_files():
        data = json.loads(path.read_text())
        assert data.get("_hf_model_id") and data.get("_source"), path.name
        if path.stem not in EXPECTED_TEAM:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+:\S+@[0-9a-f]{40}( .*)?", data["_source"]), path.name


@pytest.mark.parametrize("path", sorted(p for p in _preset_files() if p.stem in NO_ROPE), ids=lambda p: p.stem)
def test_preset_without_rope(path: Path):
    result = model_rope(path)
    assert not result.has_rope and result.no_rope and not result.specs
    assert all(name is None for name in result.layers)
    with pytest.raises(NoRopeError, match="no RoPE"):
        spec_from_config(path)


@pytest.mark.parametrize("path", sorted(p for p in _preset_files() if p.stem not in NO_ROPE), ids=lambda p: p.stem)
def test_preset_assumes_nothing_undocumented(path: Path):
    result = model_rope(path)
    assert {a.key for a in result.assumptions} == ASSUMED.get(path.stem, set()), result.assumptions


@pytest.mark.parametrize("path", sorted(p for p in _preset_files() if p.stem not in NO_ROPE), ids=lambda p: p.stem)
def test_preset(path: Path):
    result = spec_from_config(path)
    specs = result if isinstance(result, dict) else {"": result}
    want = EXPECTED[path.stem]
    assert set(specs) == set(want)
    for key, (head, rotary, pairing, theta, kind, extra) in want.items():
        s = specs[key]
        assert isinstance(s, RopeSpec)
        assert (s.head_dim, s.rotary_dim, s.pairing, s.theta, s.scaling.type) == (head, rotary, pairing, theta, kind)
        assert s.rotary_start == 0
        for name, value in extra.items():
            assert getattr(s.scaling, name) == value, name
        if key == "vision":
            assert s.vision == VISION[path.stem]
        elif path.stem in MROPE and key != "indexer":
            assert (s.mrope_section, s.mrope_layout) == MROPE[path.stem]
        else:
            assert s.mrope_section is None and s.vision is None
        assert RopeSpec.from_dict(s.to_dict()) == s


def test_preset_frequency_facts():
    """Worked values: derived scalars of the presets, by hand."""
    # HunYuan: dynamic + alpha = fixed NTK, base theta * alpha^(d/(d-2)).
    s = spec_from_config(PRESETS / "hunyuan-a13b-instruct.json")
    w, att = inv_freq(s)
    base = 1e4 * 1000.0 ** (128 / 126)
    np.testing.assert_allclose(w, base ** (-np.arange(64) * 2 / 128), rtol=1e-13)
    assert att == 1.0
    # Phi-3: factor = 131072/4096 = 32 -> s = sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12).
    for name in ("phi-3-mini-128k-instruct", "phi-3.5-mini-instruct", "phi-4-mini-instruct"):
        _, att = inv_freq(spec_from_config(PRESETS / f"{name}.json"))
        assert att == pytest.approx(math.sqrt(1 + 5 / 12), rel=1e-15)
    # Phi-3 long factors are used past L0: w_0 = 1 / long_factor[0].
    phi = spec_from_config(PRESETS / "phi-3-mini-128k-instruct.json")
    raw = json.loads((PRESETS / "phi-3-mini-128k-instruct.json").read_text())["rope_scaling"]
    assert inv_freq(phi, 4097)[0][0] == pytest.approx(1 / raw["long_factor"][0], rel=1e-15)
    assert inv_freq(phi, 4096)[0][0] == pytest.approx(1 / raw["short_factor"][0], rel=1e-15)
    # YaRN attention factors: DeepSeek mscale == mscale_all_dim -> 1; gpt-oss / Qwen: 0.1 ln f + 1.
    assert inv_freq(spec_from_config(PRESETS / "deepseek-v2-lite.json"))[1] == 1.0
    assert inv_freq(spec_from_config(PRESETS / "deepseek-v3.json"))[1] == 1.0
    assert inv_freq(spec_from_config(PRESETS / "gpt-oss-20b.json"))[1] == pytest.approx(0.1 * math.log(32) + 1)
    assert inv_freq(spec_from_config(PRESETS / "qwen2.5-7b-instruct-yarn.json"))[1] == pytest.approx(
        0.1 * math.log(4) + 1)
    # GLM-4 chat: w_1 = (10000*500)^(-2/64).
    glm = spec_from_config(PRESETS / "glm-4-9b-chat.json")
    assert inv_freq(glm)[0][1] == pytest.approx(5e6 ** (-2 / 64), rel=1e-15)


# ----------------------------------------------------------------------------- forms and quirks

LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 4096}


def test_v5_flat_rope_parameters_and_type_alias():
    a = spec_from_config({**LLAMA, "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 5e5}})
    b = spec_from_config({**LLAMA, "rope_theta": 5e5, "rope_scaling": {"type": "linear", "factor": 2}})
    assert a == b and a.theta == 5e5 and a.scaling.factor == 2.0 and a.head_dim == 128


def test_v5_nested_by_layer_type_and_selection():
    # Qwen2's config object has layer_types, so its rope_parameters may be nested by them (LlamaConfig has none)
    cfg = {**LLAMA, "model_type": "qwen2", "num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"],
           "rope_parameters": {
        "full_attention": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024,
                           "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        "chunked_attention": None}}
    out = spec_from_config(cfg)
    assert set(out) == {"full_attention", "sliding_attention"}  # null = NoPE layer, left out
    assert out["full_attention"].scaling.type == "yarn" and out["sliding_attention"].theta == 1e4
    assert spec_from_config(cfg, layer_type="sliding_attention") == out["sliding_attention"]
    with pytest.raises(ValueError, match="layer_type"):
        spec_from_config(cfg, layer_type="global")


def test_gemma3_defaults_and_v5_nested_form():
    legacy = spec_from_config({"model_type": "gemma3_text", "hidden_size": 1152})
    assert legacy["full_attention"].theta == 1e6 and legacy["sliding_attention"].theta == 1e4
    assert legacy["full_attention"].head_dim == 256
    v5 = spec_from_config({"model_type": "gemma3_text", "rope_local_base_freq": 2e4, "rope_parameters": {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default"}}})
    assert v5["sliding_attention"].theta == 2e4 and v5["full_attention"].scaling.factor == 8.0


def test_gemma4_proportional_defaults():
    out = spec_from_config({"model_type": "gemma4_text"})
    full, sliding = out["full_attention"], out["sliding_attention"]
    assert (full.head_dim, full.rotary_dim, full.freq_dim, full.theta) == (512, 512, 512, 1e6)
    assert full.scaling.type == "proportional" and full.scaling.partial_rotary_factor == 0.25
    w, _ = inv_freq(full)
    k = int(0.25 * 512 // 2)
    assert np.all(w[k:] == 0) and w[k - 1] == pytest.approx(1e6 ** (-2 * (k - 1) / 512), rel=1e-15)
    assert (sliding.head_dim, sliding.theta, sliding.scaling.type) == (256, 1e4, "default")


def test_partial_rotary_quirk():
    cfg = {**LLAMA, "partial_rotary_factor": 0.5}
    assert spec_from_config(cfg).rotary_dim == 128  # Llama's default init ignores rho
    honour = HFQuirks(default_honours_partial_rotary=frozenset({"llama"}))
    assert spec_from_config(cfg, quirks=honour).rotary_dim == 64
    scaled = spec_from_config({**cfg, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
    assert (scaled.rotary_dim, scaled.freq_dim) == (64, 64)  # scaled types honour rho everywhere
    phi = spec_from_config({"model_type": "phi3", "hidden_size": 3000, "num_attention_heads": 24,
                            "partial_rotary_factor": 0.4})  # D = 125, d = int(50.0) = 50
    assert (phi.head_dim, phi.rotary_dim, phi.freq_dim) == (125, 50, 50)
    odd = spec_from_config({"model_type": "phi", "head_dim": 80, "partial_rotary_factor": 0.4125,
                            "rope_theta": 1e4})  # d = int(33.0) = 33 -> width 34, denominator 33
    assert (odd.rotary_dim, odd.freq_dim) == (34, 33)
    np.testing.assert_allclose(inv_freq(odd)[0], 1e4 ** (-np.arange(17) * 2 / 33), rtol=1e-14)


def test_phi3_legacy_aliases_and_l0_priority():
    lf = [1.0] * 48
    base = {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
            "max_position_embeddings": 131072, "original_max_position_embeddings": 4096}
    for alias in ("su", "yarn", "longrope"):
        s = spec_from_config({**base, "rope_scaling": {"type": alias, "short_factor": lf, "long_factor": lf,
                                                       "original_max_position_embeddings": 8192}})
        assert s.scaling.type == "longrope"
        assert s.scaling.original_max_position_embeddings == 4096  # the top-level value wins (HF)
    other = HFQuirks(top_level_original_max_wins=False)
    s = spec_from_config({**base, "rope_scaling": {"type": "su", "short_factor": lf, "long_factor": lf,
                                                   "original_max_position_embeddings": 8192}}, quirks=other)
    assert s.scaling.original_max_position_embeddings == 8192
    # yarn stays yarn outside Phi-3
    y = spec_from_config({**LLAMA, "rope_scaling": {"type": "yarn", "factor": 2.0,
                                                    "original_max_position_embeddings": 2048}})
    assert y.scaling.type == "yarn"


def test_yarn_hf_rules():
    cfg = {**LLAMA, "max_position_embeddings": 8192}
    s = spec_from_config({**cfg, "rope_scaling": {"rope_type": "yarn", "factor": None,
                                                  "original_max_position_embeddings": 2048,
                                                  "beta_fast": 0, "beta_slow": 0}})
    assert s.scaling.factor == 4.0  # null factor = M / L0
    assert s.scaling.beta_fast is None and s.scaling.beta_slow is None  # explicit 0 = unset
    with pytest.raises(ValueError, match="original_max_position_embeddings"):
        spec_from_config({**cfg, "rope_scaling": {"rope_type": "yarn", "factor": 2.0}})
    fb = spec_from_config({**cfg, "rope_scaling": {"rope_type": "yarn", "factor": 2.0}},
                          quirks=HFQuirks(original_max_falls_back_to_max=True))
    assert fb.scaling.original_max_position_embeddings == 8192


def test_mrope_alias_and_interleaved_flag():
    base = {"model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12, "rope_theta": 1e6}
    s = spec_from_config({**base, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})
    assert s.scaling.type == "default" and s.mrope_section == (16, 24, 24) and s.mrope_layout == "chunked"
    s = spec_from_config({**base, "rope_parameters": {"rope_type": "default", "mrope_section": [24, 20, 20],
                                                      "mrope_interleaved": True}})
    assert s.mrope_layout == "interleaved"


def test_deepseek_interleave_flag_and_v2():
    base = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128}
    assert spec_from_config(base).pairing == "adjacent_in_half_out"  # rope_interleave defaults to true
    assert spec_from_config({**base, "rope_interleave": False}).pairing == "half"
    assert spec_from_config(base).head_dim == 64  # qk_rope_head_dim default
    assert spec_from_config({"model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16,
                             "qk_rope_head_dim": 32}).pairing == "adjacent"


def test_gpt_neox_rotary_pct_default_and_rope_parameters():
    s = spec_from_config({"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16})
    assert (s.rotary_dim, s.theta) == (32, 1e4)  # transformers default rotary_pct 0.25
    s = spec_from_config({"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16,
                          "rope_parameters": {"rope_type": "default", "rope_theta": 2e4,
                                              "partial_rotary_factor": 0.5}})
    assert (s.rotary_dim, s.theta) == (64, 2e4)


def test_annotations_ignored_and_file_loading(tmp_path):
    cfg = {**LLAMA, "_notes": "anything", "_transformers_defaults_for_absent_keys": {"rope_theta": 5.0}}
    assert spec_from_config(cfg).theta == 1e4
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert load_config(path) == cfg
    assert spec_from_config(str(path)) == spec_from_config(cfg)


def test_bad_call_arguments(tmp_path):
    with pytest.raises(TypeError, match="config"):
        spec_from_config(42)  # type: ignore[arg-type]  # deliberately the wrong type: the error is under test
    with pytest.raises(TypeError, match="quirks"):
        spec_from_config(LLAMA, quirks={"x": 1})  # type: ignore[arg-type]  # deliberately the wrong type: the error is under test
    with pytest.raises(FileNotFoundError, match="config"):
        spec_from_config(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="config"):
        spec_from_config(tmp_path / "broken.json")


# ----------------------------------------------------------------------------- malformed corpus


def _malformed() -> list[Path]:
    return sorted(MALFORMED.glob("*.json"))


def test_corpus_size():
    assert len(_malformed()) >= 15


@pytest.mark.parametrize("path", _malformed(), ids=lambda p: p.stem)
def test_malformed_config(path: Path):
    raw = json.loads(path.read_text())
    meta = raw[0] if isinstance(raw, list) else raw
    exc = {"ValueError": ValueError, "TypeError": TypeError}[meta["_expect_error"]]
    with pytest.raises(exc) as info:
        spec_from_config(path)
    assert type(info.value) is exc
    assert meta["_expect_key"] in str(info.value)
    assert "Traceback" not in str(info.value)


# ----------------------------------------------------------------------------- CLI


def _cli_args(config, layer_type=None) -> argparse.Namespace:
    return argparse.Namespace(command="spec", config=str(config), layer_type=layer_type)


def test_cli_spec_prints_json(tmp_path, capsys):
    from conformance.cli import spec as cli_spec

    path = tmp_path / "c.json"
    path.write_text(json.dumps({"model_type": "gemma3_text"}))
    assert cli_spec.run(_cli_args(path)) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"full_attention", "sliding_attention"}
    assert RopeSpec.from_dict(out["sliding_attention"]).theta == 1e4
    assert cli_spec.run(_cli_args(path, "full_attention")) == 0
    assert RopeSpec.from_dict(json.loads(capsys.readouterr().out)).theta == 1e6


def test_cli_spec_error_is_one_line(capsys):
    from conformance.cli import spec as cli_spec

    assert cli_spec.run(_cli_args(MALFORMED / "linear_factor_below_one.json")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "factor" in err


def test_cli_main_dispatch(capsys):
    from conformance.cli.main import main

    assert main(["spec", str(MALFORMED / "unknown_rope_type.json")]) == 2
    assert "rope_type" in capsys.readouterr().err


# ----------------------------------------------------------------------------- per-layer truth of the corpus

#: preset -> (decoder layers, {spec name or None: layers}), by hand from each config's rule.
LAYERS = {
    # transformers' MiMo-V2 rule, matching hybrid_layer_pattern: full at i = 0 and (i + 1) % 6 == 0
    "mimo-v2-flash": (48, {"full_attention": 9, "sliding_attention": 39}),
    # compress_ratios[:43]: 0 at layers 0 and 1 (sliding, main RoPE), 4/128 elsewhere (compress RoPE)
    "deepseek-v4-flash": (43, {"main": 2, "compress": 41}),
    # no_rope_layer_interval 4 (transformers' default): layers 3, 7, ..., 47 are NoPE
    "llama-4-scout-17b-16e-instruct": (48, {"text": 36, None: 12}),
    "llama-4-maverick-17b-128e-instruct": (48, {"text": 36, None: 12}),
    # linear_attention layers have no RoPE; full attention every 4th layer
    "qwen3.5-27b": (64, {"text": 16, None: 48}),
    "gemma-4-26b-a4b": (30, {"full_attention": 5, "sliding_attention": 25}),
    # sliding_window_pattern 6 (Gemma3TextConfig default): full at (i + 1) % 6 == 0
    "gemma-3-4b-it": (34, {"full_attention": 5, "sliding_attention": 29}),
    "nemotron-3-nano-30b-a3b": (52, {None: 52}),
    "kimi-k3": (93, {None: 93}),
    "glm-5": (78, {"text": 78}),
    "qwen3-vl-30b-a3b-instruct": (48, {"text": 48}),
}
LAYERS.update({
    # AfmoeConfig: full at (i + 1) % global_attn_every_n_layers (4) == 0; AfmoeAttention rotates sliding layers only
    "trinity-nano-preview": (56, {"text": 42, None: 14}),
    # BailingHybridConfig: full at (i + 1) % layer_group_size (4) == 0, linear attention (no RoPE) elsewhere
    "ling-3.0-tiny": (24, {"text": 6, None: 18}),
    "dbrx-instruct": (40, {"text": 40}),  # n_layers
    "dots.llm1.inst": (62, {"text": 62}),
    "diffusiongemma-26b-a4b-it": (30, {"full_attention": 5, "sliding_attention": 25}),
    # sliding_window_pattern 4 with a sliding_window: full at (i + 1) % 4 == 0, and EXAONE 4's full layers are NoPE
    "exaone-4.0-32b": (32, {"text": 24, None: 8}),
    "k-exaone-236b-a23b": (4, {"text": 3, None: 1}),  # layer_types LLLG
    "glm-4.5": (92, {"text": 92}),
    "glm-4.7-flash": (47, {"text": 47}),
    "falcon-h1-0.5b-instruct": (36, {"text": 36}),
    "granite-swash-2b": (24, {"text": 24}),
    "laguna-xs.2-fp8": (40, {"full_attention": 10, "sliding_attention": 30}),
    "qwen3.5-35b-a3b": (40, {"text": 10, None: 30}),
    # no layer_types: Qwen3NextConfig builds them from full_attention_interval 4; linear attention has no RoPE
    "qwen3-next-80b-a3b-thinking": (48, {"text": 12, None: 36}),
    "step-3.5-flash": (45, {"full_attention": 12, "sliding_attention": 33}),  # layer_types[:45]
    "chatglm2-6b": (28, {"text": 28}),  # num_layers
    "ling-plus": (88, {"text": 88}),
    "internlm3-8b-instruct": (48, {"text": 48}),
    "granite-3.3-2b-instruct": (40, {"text": 40}),
    # position_embedding_type "nope": no RoPE; 4 attention layers among 32 (layer_types)
    "granite-4.0-h-350m": (32, {None: 32}),
    # block_types default cycle (recurrent, recurrent, attention) over 26 layers: 8 attention layers
    "recurrentgemma-2b": (26, {"text": 8, None: 18}),
    "smollm3-3b": (36, {"text": 27, None: 9}),  # no_rope_layers [1, 1, 1, 0] x 9
    "ernie-4.5-0.3b-base-pt": (18, {"text": 18}),
    "codegen2-1b": (16, {"text": 16}),  # n_layer
    # cross_attention_layers [3, 8, ..., 38]: MllamaTextCrossAttention applies no RoPE
    "llama-3.2-11b-vision": (40, {"text": 32, None: 8}),
    "nemotron-mini-4b": (32, {"text": 32}),
    # full_attn_idxs [2, 5, 8, 10, 12, 14]: short-convolution blocks elsewhere
    "lfm2-1.2b": (16, {"text": 6, None: 10}),
    "minicpm3-4b": (62, {"text": 62}),
    "mellum2-12b-a2.5b-base": (28, {"sliding_attention": 21, "full_attention": 7}),
    "t5gemma-2b-2b-ul2-encoder": (26, {"text": 26}),
    "qwen2.5-omni-7b": (28, {"text": 28}),
    "lfm2-8b-a1b-4bit": (24, {"text": 6, None: 18}),  # layer_types: 6 full_attention, 18 conv
    "seed-oss-36b-instruct-4bit": (64, {"text": 64}),
})


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_preset_layers(name):
    from collections import Counter

    result = model_rope(PRESETS / f"{name}.json")
    count, by_spec = LAYERS[name]
    assert len(result.layers) == len(result.layer_types) == count
    assert dict(Counter(result.layers)) == by_spec
    for i, spec_name in enumerate(result.layers):
        assert result.layer_spec(i) == (None if spec_name is None else result.specs[spec_name])


def test_llama4_nope_layers_are_every_fourth():
    result = model_rope(PRESETS / "llama-4-scout-17b-16e-instruct.json")
    assert [i for i, name in enumerate(result.layers) if name is None] == list(range(3, 48, 4))


def test_llama4_equal_low_and_high_freq_factors():
    """high == low: no middle band; w/16 where the wavelength exceeds L0 = 8192, w elsewhere (by hand)."""
    spec = spec_from_config(PRESETS / "llama-4-scout-17b-16e-instruct.json")
    w, att = inv_freq(spec)
    base = 5e5 ** (-np.arange(64) * 2 / 128)
    want = np.where(2 * np.pi / base > 8192, base / 16, base)
    np.testing.assert_allclose(w, want, rtol=1e-13)
    assert att == 1.0 and (want != base).any() and (want == base).any()
    from conformance.error_model.conditioning import blend_conditioning

    with np.errstate(all="raise"):  # no 0/0 from the empty band
        assert not blend_conditioning(spec).any()


def test_deepseek_v4_compress_rope_facts():
    """compress: YaRN at theta 160000 with attention factor forced to 1 (transformers' DeepseekV4Config)."""
    result = spec_from_config(PRESETS / "deepseek-v4-flash.json")
    _, att = inv_freq(result["compress"])
    assert att == 1.0
    w_main, _ = inv_freq(result["main"])
    np.testing.assert_allclose(w_main, 1e4 ** (-np.arange(32) * 2 / 64), rtol=1e-14)


# ----------------------------------------------------------------------------- coverage of transformers' families

def test_every_rope_family_has_a_real_config_or_a_documented_gap():
    """Issue 12 item 5: each RoPE model type transformers ships is covered by a real published config, or
    conformance/hf/preset_gaps.py says why not; a gap that gains a preset must leave the list."""
    from conformance.hf.preset_coverage import coverage
    from conformance.hf.preset_gaps import GAPS
    from roperef.hf.families import ROPE_FAMILIES

    table = coverage(PRESETS)
    assert {fc.model_type for fc in table} == set(ROPE_FAMILIES)
    undocumented = [fc.model_type for fc in table if not fc.covered and not fc.gap]
    stale = [fc.model_type for fc in table if fc.covered and fc.gap]
    assert not undocumented, f"no preset and no documented gap: {undocumented}"
    assert not stale, f"covered by a preset but still listed in preset_gaps.GAPS: {stale}"
    assert set(GAPS) <= set(ROPE_FAMILIES), set(GAPS) - set(ROPE_FAMILIES)
    assert all(len(reason) > 20 for reason in GAPS.values())


def test_preset_model_types_reach_wrapped_and_nested_configs():
    from conformance.hf.preset_coverage import preset_model_types

    assert preset_model_types({"model_type": "qwen2_5_vl"}) == {"qwen2_5_vl", "qwen2_5_vl_text"}
    nested = {"model_type": "x_omni", "thinker_config": {"text_config": {"model_type": "x_text"}},
              "_notes": {"model_type": "ignored"}}
    assert preset_model_types(nested) == {"x_omni", "x_text"}


# ----------------------------------------------------------------------------- real configs refused with a reason

REFUSED_DIR = Path(__file__).resolve().parents[2] / "data" / "refused_configs"
#: Real published configs roperef must refuse (no fixed spec describes them), with what the message names.
REFUSED = {
    # Tele-AI/Telechat modeling_telechat.py: base rescaled per length (ntk_alpha from training_seqlen and seq_len)
    "telechat-7b": (r"model_type='telechat': .*rescales the base per sequence length", {"rope_theta": 10000.0}),
    "telechat-12b": (r"model_type='telechat': .*rescales the base per sequence length", {"rope_theta": 10000.0}),
    # remote code whose architectures / auto_map name no transformers class: the pairing is missing, never guessed
    "unlimited-ocr": (r"model_type='unlimited-ocr': a value is missing: .*UnlimitedOCRForCausalLM.*--set pairing=",
                      {"pairing": "half"}),
}


def test_refused_real_configs_are_exactly_the_listed_ones():
    assert {p.stem for p in REFUSED_DIR.glob("*.json")} == set(REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_real_config_refused_with_reason(name):
    path = REFUSED_DIR / f"{name}.json"
    data = json.loads(path.read_text())
    assert re.fullmatch(r"[\w.-]+/[\w.-]+:\S+@[0-9a-f]{40}( .*)?", data["_source"])
    pattern, supplied = REFUSED[name]
    with pytest.raises(ValueError, match=pattern):
        model_rope(path)
    # supplying the value the message asks for resolves it
    assert model_rope(path, overrides=supplied).has_rope


# ----------------------------------------------------------------------------- family layer rules (synthetic configs)

def _base(model_type: str, n: int = 8, **kw):
    return {"model_type": model_type, "hidden_size": 1024, "num_attention_heads": 8, "head_dim": 128,
            "num_hidden_layers": n, "rope_theta": 10000.0, **kw}


def test_one_key_layer_patterns_follow_each_family_and_its_default():
    # Qwen3-Next: (i + 1) % full_attention_interval; absent: 4 (Qwen3NextConfig)
    assert model_rope(_base("qwen3_next", full_attention_interval=2)).layers == (None, "text") * 4
    assert model_rope(_base("qwen3_next")).layers == (None, None, None, "text") * 2
    # AFMoE: full at (i + 1) % k == 0, sliding elsewhere; the full layers are NoPE
    afmoe = model_rope(_base("afmoe", global_attn_every_n_layers=2))
    assert afmoe.layer_types == ("sliding_attention", "full_attention") * 4 and afmoe.layers == ("text", None) * 4
    # ModernBERT counts from 0: layer 0 is global
    assert model_rope(_base("modernbert", n=6)).layer_types == ("full_attention", "sliding_attention", "sliding_attention") * 2
    # Bailing-Hybrid: default group 6
    assert model_rope(_base("bailing_hybrid", n=12, qk_rope_head_dim=64)).layers.count(None) == 10
    # an unrelated family does not read another family's key
    assert model_rope(_base("llama", full_attention_interval=2)).layers == ("text",) * 8


def test_exaone4_full_layers_are_nope_only_with_a_sliding_window():
    hybrid = model_rope(_base("exaone4", sliding_window=4096, sliding_window_pattern=4))
    assert hybrid.layers == ("text", "text", "text", None) * 2
    types = ["full_attention"] * 8
    assert model_rope(_base("exaone4", sliding_window=None, layer_types=types)).layers == ("text",) * 8


def test_layer_index_keys_only_for_the_families_that_read_them():
    falcon_h1 = model_rope(_base("falcon_h1", attn_layer_indices=[1, 3]))
    assert falcon_h1.layers == ("text",) * 8
    assert any("attn_layer_indices ignored" in n for n in falcon_h1.notes)
    assert model_rope(_base("bamba", attn_layer_indices=[1, 3])).layers == (None, "text", None, "text", None, None, None, None)
    lfm2 = model_rope(_base("lfm2", n=6, full_attn_idxs=[2, 5]))
    assert lfm2.layer_types == ("conv", "conv", "full_attention", "conv", "conv", "full_attention")
    assert lfm2.layers == (None, None, "text", None, None, "text")
    mllama = {"model_type": "mllama", "text_config": _base("mllama_text_model", cross_attention_layers=[0, 5])}
    assert model_rope(mllama).layers == (None, "text", "text", "text", "text", None, "text", "text")


def test_per_layer_theta_lists_take_each_types_first_layer_and_must_agree():
    types = ["full_attention", "sliding_attention"] * 2
    cfg = _base("step3p5", n=4, layer_types=types, rope_theta=[5e6, 1e4, 5e6, 1e4],
                partial_rotary_factors=[0.5, 1.0, 0.5, 1.0],
                rope_scaling={"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 32.0,
                              "original_max_position_embeddings": 4096})
    specs = spec_from_config(cfg)
    assert (specs["full_attention"].theta, specs["full_attention"].rotary_dim, specs["full_attention"].scaling.type) == (5e6, 64, "llama3")
    assert (specs["sliding_attention"].theta, specs["sliding_attention"].rotary_dim, specs["sliding_attention"].scaling.type) == (1e4, 128, "default")
    with pytest.raises(ValueError, match=r"rope_theta\[2\]=.*differs from layer 0 of the same type 'full_attention'"):
        spec_from_config({**cfg, "rope_theta": [5e6, 1e4, 4e6, 1e4]})
    with pytest.raises(ValueError, match=r"partial_rotary_factors='<3 entries>': must have one entry per layer \(4\)"):
        spec_from_config({**cfg, "partial_rotary_factors": [0.5, 1.0, 0.5]})


def test_remote_family_rules():
    # Baichuan: RoPE at hidden_size 4096 (7B), ALiBi otherwise (13B)
    assert spec_from_config({"model_type": "baichuan", "hidden_size": 4096, "num_attention_heads": 32}).theta == 1e4
    no = model_rope({"model_type": "baichuan", "hidden_size": 5120, "num_attention_heads": 40})
    assert not no.has_rope and "ALiBi" in (no.no_rope or "")
    # DBRX: transformers 5.24's DbrxConfig does not read attn_config.rope_theta (its default_theta 10000 applies);
    # the published value is said in a note, and --set rope_theta applies it
    dbrx = {"model_type": "dbrx", "d_model": 1024, "n_heads": 8, "n_layers": 2, "attn_config": {"rope_theta": 5e5}}
    assert spec_from_config(dbrx).theta == 1e4 and len(model_rope(dbrx).layers) == 2
    assert any("attn_config.rope_theta=500000.0 ignored" in n for n in model_rope(dbrx).notes)
    assert spec_from_config(dbrx, overrides={"rope_theta": 5e5}).theta == 5e5


def test_sliding_only_rope_families():
    types = ["sliding_attention", "sliding_attention", "full_attention"] * 2
    for mt in ("cohere2", "flint", "lara_mini", "afmoe"):
        assert model_rope(_base(mt, n=6, layer_types=types, sliding_window=512)).layers == ("text", "text", None) * 2, mt
    # Kolibri / EXAONE 4: only while a sliding window is set
    assert model_rope(_base("kolibri1", n=6, layer_types=types, sliding_window=512)).layers == ("text", "text", None) * 2
    assert model_rope(_base("kolibri1", n=6, layer_types=["full_attention"] * 6, sliding_window=None)).layers == ("text",) * 6
    # Cohere2-MoE: a dense-MLP layer rotates while prefix_dense_sliding_window_pattern is 1 (force_rope)
    moe = _base("cohere2_moe", n=6, layer_types=["full_attention"] * 2 + types[2:], sliding_window=512,
                mlp_layer_types=["dense", "dense", "sparse", "sparse", "sparse", "sparse"])
    assert model_rope(moe).layers == ("text", "text", None, "text", "text", None)
    assert model_rope({**moe, "prefix_dense_sliding_window_pattern": 2}).layers == (None, None, None, "text", "text", None)


def test_layer_rope_theta_zero_is_nope():
    assert model_rope(_base("granite_swa", n=4, layer_rope_theta=[1e4, 0, 1e4, 0])).layers == ("text", None, "text", None)
    assert model_rope(_base("granite_swa", n=4)).layers == ("text",) * 4
    # Muse's default: NoPE where (n - 1 - i) % 4 == 0
    assert model_rope(_base("muse_spark_text", n=8)).layers == ("text", "text", "text", None) * 2
    with pytest.raises(ValueError, match=r"layer_rope_theta='<2 entries>': must be a list with one base per layer \(4"):
        model_rope(_base("granite_swa", n=4, layer_rope_theta=[1e4, 0]))


def test_omni_configs_are_read_through_thinker_config():
    text = _base("qwen2_5_omni_text", n=2, rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]})
    cfg = {"model_type": "qwen2_5_omni", "thinker_config": {"model_type": "qwen2_5_omni_thinker", "text_config": text},
           "talker_config": {"model_type": "qwen2_5_omni_talker"}}
    result = model_rope(cfg)
    assert result.specs["text"].mrope_section == (16, 24, 24) and len(result.layers) == 2
    assert any("talker_config" in n for n in result.notes)
    with pytest.raises((ValueError, TypeError), match=r"thinker_config\.text_config\.rope_theta='x'"):
        model_rope({**cfg, "thinker_config": {"text_config": {**text, "rope_theta": "x"}}})
