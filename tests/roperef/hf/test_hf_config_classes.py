"""What transformers' config classes do to a config, as roperef reads it (issue 24).

Each expected value is derived by hand from the config written here and the transformers 5.24 source line
named in the comment (never copied from roperef's output); the few cases the issue names are also cross-
checked against transformers' own modules. The generated tables (``roperef/hf/config_classes.py``) must be
what ``scripts/gen_hf_config_classes.py`` derives from the installed transformers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from roperef.hf import config_classes as cc
from roperef.hf import model_rope, spec_from_config

ROOT = Path(__file__).resolve().parents[3]


def _notes(result) -> str:
    return " | ".join(result.notes)


# ----------------------------------------------------------------------------- forced and default values


def test_bamba_forces_half_rotation_whatever_the_top_level_key_says():
    # configuration_bamba.py: kwargs["partial_rotary_factor"] = 0.5  # hardcode for BC; layers: attention only at
    # attn_layer_indices (layers_block_type), Mamba elsewhere
    cfg = {"model_type": "bamba", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 4,
           "attn_layer_indices": [1, 3], "rope_theta": 1e4, "partial_rotary_factor": 1.0}
    result = model_rope(cfg)
    spec = result.specs["text"]
    assert (spec.head_dim, spec.rotary_dim, spec.theta) == (128, 64, 1e4)
    assert result.layers == (None, "text", None, "text")
    assert "partial_rotary_factor=1.0 ignored" in _notes(result)
    # without attn_layer_indices every layer is Mamba: no attention applies RoPE
    no = model_rope({k: v for k, v in cfg.items() if k != "attn_layer_indices"})
    assert not no.has_rope


def test_backward_compatible_partial_defaults_and_the_keys_that_override_them():
    # configuration_persimmon.py: kwargs.setdefault("partial_rotary_factor", 0.5); head 4096 / 64 = 64
    persimmon = {"model_type": "persimmon", "hidden_size": 4096, "num_attention_heads": 64, "rope_theta": 25000.0}
    assert spec_from_config(persimmon).rotary_dim == 32
    assert spec_from_config({**persimmon, "partial_rotary_factor": 1.0}).rotary_dim == 64  # the config's key wins
    # configuration_gpt_neox.py: rope_parameters.setdefault("partial_rotary_factor", kwargs.pop("rotary_pct", 0.25)),
    # rope_theta from rotary_emb_base; head 6144 / 64 = 96 -> int(96 * 0.25) = 24; a top-level
    # partial_rotary_factor is not read by this class
    neox = {"model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64, "rotary_emb_base": 5e5}
    spec = spec_from_config(neox)
    assert (spec.rotary_dim, spec.theta) == (24, 5e5)
    noted = model_rope({**neox, "partial_rotary_factor": 0.5})
    assert noted.specs["text"].rotary_dim == 24 and "partial_rotary_factor=0.5 ignored" in _notes(noted)


def test_a_familys_own_spelling_of_the_rotary_width():
    # configuration_minimax_m2.py: kwargs.setdefault("partial_rotary_factor", rotary_dim / head_dim): an explicit
    # partial_rotary_factor is set first and wins
    m2 = {"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 64, "rope_theta": 5e6}
    assert spec_from_config(m2).rotary_dim == 64
    both = model_rope({**m2, "partial_rotary_factor": 0.25})
    assert both.specs["text"].rotary_dim == 32 and "rotary_dim=64 not applied" in _notes(both)
    # Llama's class reads no rotary_dim: a leftover key does not narrow the rotation
    llama = model_rope({"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "rotary_dim": 64,
                        "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
    assert llama.specs["text"].rotary_dim == 128 and "rotary_dim=64 ignored" in _notes(llama)


def test_a_familys_own_theta_keys_per_layer_type():
    # configuration_modernbert.py convert_rope_params_to_dict: full <- global_rope_theta, sliding <- local_rope_theta,
    # a legacy rope_scaling goes to both; layer i is full where i % global_attn_every_n_layers == 0
    cfg = {"model_type": "modernbert", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 6,
           "global_rope_theta": 160000.0, "local_rope_theta": 10000.0, "global_attn_every_n_layers": 3}
    result = model_rope(cfg)
    assert result.specs["full_attention"].theta == 160000.0 and result.specs["sliding_attention"].theta == 10000.0
    assert result.layers == ("full_attention", "sliding_attention", "sliding_attention") * 2
    # configuration_gemma3.py: a legacy rope_scaling updates the full-attention entry only
    gemma = {"model_type": "gemma3_text", "hidden_size": 1152, "num_attention_heads": 4, "head_dim": 256,
             "num_hidden_layers": 6, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
             "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    specs = spec_from_config(gemma)
    assert (specs["full_attention"].scaling.type, specs["full_attention"].theta) == ("linear", 1e6)
    assert (specs["sliding_attention"].scaling.type, specs["sliding_attention"].theta) == ("default", 1e4)


def test_deepseek_v4_legacy_scaling_lands_on_the_compressed_layers_and_the_slice_is_derived():
    # configuration_deepseek_v4.py __post_init__: main = default at rope_theta; compress = the flat section at
    # compress_rope_theta with YaRN attention_factor forced to 1; partial_rotary_factor default 64 / 512 and
    # qk_rope_head_dim = int(head_dim * partial_rotary_factor) = 64 (the slice roperef models as the head)
    cfg = {"model_type": "deepseek_v4", "num_hidden_layers": 4, "compress_ratios": [0, 4, 128, 4], "rope_theta": 1e4,
           "compress_rope_theta": 160000.0, "rope_scaling": {"type": "yarn", "factor": 16.0,
                                                           "original_max_position_embeddings": 65536}}
    result = model_rope(cfg)
    main, compress = result.specs["main"], result.specs["compress"]
    assert (main.head_dim, main.rotary_dim, main.theta, main.scaling.type) == (64, 64, 1e4, "default")
    assert (compress.theta, compress.scaling.type, compress.scaling.attention_factor) == (160000.0, "yarn", 1.0)
    assert result.layers == ("main", "compress", "compress", "compress")


def test_a_composite_text_config_without_sizes_gets_its_text_classs_defaults():
    # LlavaConfig builds text_config with LlamaConfig(**text_config): hidden_size 4096, 32 heads, 32 layers
    llava = model_rope({"model_type": "llava", "text_config": {"model_type": "llama", "rope_theta": 5e5}})
    spec = llava.specs["text"]
    assert (spec.head_dim, spec.theta, len(llava.layers)) == (128, 5e5, 32)
    # configuration_voxtral.py merges its init_kwargs into a given text_config: hidden_size 3072, head_dim 128,
    # rope_theta 1e8 (a head of 3072 / 32 = 96 would be wrong)
    voxtral = spec_from_config({"model_type": "voxtral", "text_config": {"model_type": "llama"}})
    assert (voxtral.head_dim, voxtral.theta) == (128, 1e8)
    assert spec_from_config({"model_type": "voxtral", "text_config": {"model_type": "llama", "rope_theta": 5.0}}).theta == 5.0


def test_a_null_key_stays_null_only_an_absent_key_gets_the_class_default():
    base = {"model_type": "exaone4", "hidden_size": 1024, "num_attention_heads": 8, "head_dim": 128,
            "num_hidden_layers": 4, "rope_theta": 1e4, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    # Exaone4Config sliding_window default 4096: global layers NoPE (the attention rotates only sliding layers)
    assert model_rope(base).layers == ("text", "text", "text", None)
    # sliding_window: null is None in transformers (not the default): every layer rotates
    assert model_rope({**base, "sliding_window": None}).layers == ("text",) * 4


# ----------------------------------------------------------------------------- per-layer rules and switches


def test_a_layer_rule_the_class_builds_when_the_config_gives_no_list():
    # configuration_beam.py: sliding except every sixth layer and the last; rope_parameters full_attention: None
    beam = {"model_type": "beam", "num_hidden_layers": 7}
    result = model_rope(beam)
    assert result.layer_types == ("sliding_attention",) * 5 + ("full_attention", "full_attention")
    assert result.layers == ("sliding_attention",) * 5 + (None, None)
    assert cc.LAYER_TYPES_RULES["beam"] == (6, 1, "full_attention", "sliding_attention", 0, "full_attention",
                                            "full_attention")


def test_rope_behind_a_flag_in_shared_blocks_of_a_hybrid_model():
    # modeling_zamba2.py: rotary_emb built and applied only if config.use_mem_rope; the shared attention runs on the
    # hybrid layers; configuration_zamba2.py: attention_head_dim = 2 * hidden_size // num_attention_heads = 160
    # (kv_channels = hidden_size // heads is not the rotary width)
    cfg = {"model_type": "zamba2", "hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 6,
           "kv_channels": 80, "rope_theta": 1e4, "use_mem_rope": True,
           "layers_block_type": ["mamba", "mamba", "hybrid", "mamba", "mamba", "hybrid"]}
    result = model_rope(cfg)
    assert result.specs["text"].head_dim == 160
    assert result.layers == (None, None, "text", None, None, "text")
    off = model_rope({**cfg, "use_mem_rope": False})
    assert not off.has_rope and "use_mem_rope" in off.no_rope


@pytest.mark.parametrize("value, rope", [("rotary", True), ("absolute", False), (None, False)])
def test_esm_rotates_only_with_position_embedding_type_rotary(value, rope):
    # modeling_esm.py: EsmRotaryEmbedding built and applied only when position_embedding_type == "rotary"; the
    # class default is "absolute"; rope_theta default 10000; head 320 / 20 = 16
    cfg = {"model_type": "esm", "hidden_size": 320, "num_attention_heads": 20, "num_hidden_layers": 6}
    if value is not None:
        cfg["position_embedding_type"] = value
    result = model_rope(cfg)
    assert result.has_rope is rope
    if rope:
        assert (result.specs["text"].head_dim, result.specs["text"].theta) == (16, 1e4)
    else:
        assert "position_embedding_type" in result.no_rope and "'rotary'" in result.no_rope


def test_granite_hybrid_rotates_only_when_its_class_says_rope():
    # modeling_granitemoehybrid.py: rotary_emb = ... if config.position_embedding_type == "rope" else None; default None
    cfg = {"model_type": "granitemoehybrid", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 2,
           "rope_theta": 1e4, "layers_block_type": ["mamba", "attention"]}
    assert not model_rope(cfg).has_rope
    assert model_rope({**cfg, "position_embedding_type": "rope"}).has_rope


@pytest.mark.parametrize("model_type, value", [("llama", "absolute"), ("mistral", "sans_pos"), ("gpt_neox", "rope_gptj")])
def test_position_embedding_type_counts_only_where_the_family_reads_it(model_type, value):
    cfg = {"model_type": model_type, "hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 1e4,
           "position_embedding_type": value}
    result = model_rope(cfg)
    assert result.has_rope and f"position_embedding_type={value!r} ignored" in _notes(result)


def test_alibi_still_switches_falcon_off_but_not_a_family_that_never_reads_it():
    falcon = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "alibi": True}
    assert not model_rope(falcon).has_rope  # configuration_falcon.py alibi: FalconModel adds ALiBi, no rotary
    llama = model_rope({"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "alibi": True})
    assert llama.has_rope and "alibi=True ignored" in _notes(llama)


# ----------------------------------------------------------------------------- model types transformers does not know


def test_an_unknown_model_type_is_read_as_the_family_its_architectures_name():
    cfg = {"model_type": "mistral_custom", "architectures": ["MistralForCausalLM"], "hidden_size": 4096,
           "num_attention_heads": 32, "rope_theta": 1e6}
    result = model_rope(cfg)
    assert result.model_type == "mistral" and result.assumptions == ()
    assert (result.specs["text"].pairing, result.specs["text"].head_dim) == ("half", 128)
    assert "MistralForCausalLM" in _notes(result)


def test_an_unknown_model_type_is_read_through_its_auto_map_names():
    # DeepseekV3Config.rope_interleave defaults to True: DeepSeek V3's adjacent-in / half-out pairing
    cfg = {"model_type": "my_ds", "auto_map": {"AutoConfig": "configuration_x.DeepseekV3Config",
                                               "AutoModelForCausalLM": "org/repo--modeling_x.DeepseekV3ForCausalLM"},
           "hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64, "rope_theta": 1e4}
    assert spec_from_config(cfg).pairing == "adjacent_in_half_out"


def test_names_of_several_families_or_of_none_are_refused_naming_what_decides():
    both = {"model_type": "mix", "architectures": ["LlamaForCausalLM", "Gemma2ForCausalLM"], "rope_theta": 1e4,
            "hidden_size": 2048, "num_attention_heads": 16}
    with pytest.raises(ValueError, match=r"several transformers families \(llama, gemma2\).*--set model_type=NAME"):
        model_rope(both)
    assert model_rope(both, overrides={"model_type": "llama"}).model_type == "llama"
    none = {**both, "architectures": ["FooForCausalLM"]}
    with pytest.raises(ValueError, match=r"a value is missing: .*FooForCausalLM.*--set pairing=half\|adjacent"):
        model_rope(none)
    assert spec_from_config(none, overrides={"pairing": "adjacent"}).pairing == "adjacent"


def test_rope_keys_of_a_family_without_rope_in_transformers_are_remote_code():
    # transformers' xlm-roberta has no rotary embedding; this config's RoPE is in the remote code auto_map names
    cfg = {"model_type": "xlm-roberta", "hidden_size": 1024, "num_attention_heads": 16, "rotary_emb_base": 20000.0,
           "position_embedding_type": "rotary",
           "auto_map": {"AutoModel": "jinaai/xlm-roberta-flash-implementation--modeling_xlm_roberta.XLMRobertaModel"}}
    with pytest.raises(ValueError, match=r"RoPE in remote code roperef does not model: .*XLMRobertaModel"):
        model_rope(cfg)
    read = spec_from_config(cfg, overrides={"pairing": "half"})  # the generic rules, on the keys it gives
    assert (read.head_dim, read.theta, read.pairing) == (64, 20000.0, "half")
    plain = model_rope({k: v for k, v in cfg.items() if k != "auto_map"})
    assert not plain.has_rope and plain.no_rope.startswith("no RoPE in transformers' code")


# ----------------------------------------------------------------------------- against transformers itself


@pytest.mark.parametrize("cfg", [
    {"model_type": "bamba", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 4,
     "attn_layer_indices": [1, 3], "rope_theta": 1e4, "partial_rotary_factor": 1.0},
    {"model_type": "persimmon", "hidden_size": 4096, "num_attention_heads": 64, "num_hidden_layers": 2, "rope_theta": 25000.0},
    {"model_type": "zamba2", "hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 6, "kv_channels": 80,
     "rope_theta": 1e4, "use_mem_rope": True, "layers_block_type": ["mamba", "mamba", "hybrid", "mamba", "mamba", "hybrid"]},
    {"model_type": "esm", "hidden_size": 320, "num_attention_heads": 20, "num_hidden_layers": 2,
     "position_embedding_type": "rotary"},
    {"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 2, "rope_theta": 1e4,
     "position_embedding_type": "rope_gptj"},
    {"model_type": "mistral_custom", "architectures": ["MistralForCausalLM"], "hidden_size": 4096,
     "num_attention_heads": 32, "num_hidden_layers": 2, "rope_theta": 1e6},
    {"model_type": "voxtral", "text_config": {"model_type": "llama", "num_hidden_layers": 2}},
], ids=["bamba", "persimmon", "zamba2", "esm", "gpt_neox-leftover", "unknown-type", "voxtral"])
def test_the_issue_cases_agree_with_transformers(cfg):
    if os.environ.get("CI") != "true":
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    from conformance.hf.crosscheck import cross_check, render

    check = cross_check(cfg)
    assert check.verdict == "AGREE", render(check)


def test_config_classes_is_current():
    """roperef/hf/config_classes.py is what scripts/gen_hf_config_classes.py derives from the installed transformers."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers") if os.environ.get("CI") != "true" else __import__("transformers")
    if transformers.__version__ != cc.TRANSFORMERS_VERSION:
        pytest.skip(f"config_classes was generated from transformers {cc.TRANSFORMERS_VERSION}")
    spec = importlib.util.spec_from_file_location("gen_hf_config_classes", ROOT / "scripts" / "gen_hf_config_classes.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    text = script.render()
    assert (ROOT / "roperef" / "hf" / "config_classes.py").read_text() == text, "STALE: run scripts/gen_hf_config_classes.py"


def test_docs_list_the_generated_rules():
    """docs/hf-configs.md holds the rules of the checked-in tables (scripts/gen_hf_config_classes.py --doc)."""
    from conformance.hf.rules_doc import BEGIN, END, rules_markdown

    page = (ROOT / "docs" / "hf-configs.md").read_text()
    section = page.split(BEGIN, 1)[1].split(END, 1)[0]
    assert section.strip() == rules_markdown().strip(), "STALE: run scripts/gen_hf_config_classes.py --doc docs/hf-configs.md"
    assert "| bamba | (one entry) | default | 10000.0 | 0.5 |" in section  # the hard-coded 0.5 "for BC"


# ----------------------------------------------------------------------------- real configs of the issue's cases

REAL = ROOT / "tests" / "data" / "hf_real_configs"
#: Real published configs of the cases issue 24 names, kept out of conformance/presets (a preset with a new spec
#: adds a golden model case: the integrator's call). Expected values by hand from the config and the transformers
#: source cited in each file's _notes: (head_dim, rotary_dim, pairing, theta, layers that apply RoPE).
REAL_EXPECTED = {
    # configuration_zamba2.py: attention_head_dim = 2 * 3584 // 32 = 224 (kv_channels 112 is not it); RoPE on the
    # 13 'hybrid' layers (use_mem_rope true), theta 10000, rotate_half
    "zamba2-7b": (224, 224, "half", 1e4, (6, 11, 17, 23, 29, 35, 41, 47, 53, 59, 65, 71, 77)),
}


def test_the_real_configs_are_exactly_the_listed_ones_and_say_where_they_came_from():
    assert {p.stem for p in REAL.glob("*.json")} == set(REAL_EXPECTED)
    for path in REAL.glob("*.json"):
        data = json.loads(path.read_text())
        assert re.fullmatch(r"[\w.-]+/[\w.-]+:\S+@[0-9a-f]{40}", data["_source"]) and data["_hf_model_id"]


@pytest.mark.parametrize("name", sorted(REAL_EXPECTED))
def test_real_config(name):
    head, rotary, pairing, theta, rope_layers = REAL_EXPECTED[name]
    result = model_rope(REAL / f"{name}.json")
    spec = result.specs["text"]
    assert (spec.head_dim, spec.rotary_dim, spec.pairing, spec.theta) == (head, rotary, pairing, theta)
    assert tuple(i for i, n in enumerate(result.layers) if n is not None) == rope_layers
    if os.environ.get("CI") != "true":
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    from conformance.hf.crosscheck import cross_check, render

    check = cross_check(json.loads((REAL / f"{name}.json").read_text()))
    assert check.verdict == "AGREE", render(check)
