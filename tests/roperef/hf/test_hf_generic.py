"""roperef.hf's generic rules (issue 12) and its config-input guards (issue 16).

Keys read for every family, assumptions said instead of guessed, per-layer truth, explicit no-RoPE
results, overrides, refused typos and contradictions, numbers that overflow float64. Expected values
are derived by hand from each small config written here.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import pytest

from roperef.hf import ModelRope, NoRopeError, model_rope, spec_from_config

#: A model type neither transformers nor roperef knows, with RoPE keys (no architectures, no auto_map).
UNKNOWN = {"model_type": "myarch", "hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 1e6}
#: The one value such a config cannot say and roperef never guesses (issue 24): given, the generic rules apply.
HALF = {"pairing": "half"}
LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16}


# ----------------------------------------------------------------------------- never a silent guess


def test_unknown_model_type_is_refused_until_the_pairing_is_given():
    with pytest.raises(ValueError) as info:
        model_rope(UNKNOWN)
    text = str(info.value)
    assert text.startswith("model_type='myarch'") and "a value is missing" in text
    assert "--set pairing=half|adjacent|adjacent_in_half_out" in text and "rope=none" in text
    result = model_rope(UNKNOWN, overrides=HALF)
    assert isinstance(result, ModelRope) and result.has_rope
    spec = result.specs["text"]
    assert (spec.head_dim, spec.rotary_dim, spec.pairing, spec.theta) == (128, 128, "half", 1e6)
    assumed = {a.key: a.value for a in result.assumptions}
    assert assumed == {"rotary_dim": 128}  # the pairing was given, theta too: neither assumed
    assert all(a.reason for a in result.assumptions)


def test_unknown_model_type_without_theta_assumes_10000_and_says_so():
    cfg = {k: v for k, v in UNKNOWN.items() if k != "rope_theta"} | {"partial_rotary_factor": 0.5}
    result = model_rope(cfg, overrides=HALF)
    assert {a.key: a.value for a in result.assumptions} == {"rope_theta": 10000.0}
    assert result.specs["text"].rotary_dim == 64  # an explicit rho is honoured for an unknown model type


def test_overrides_remove_the_assumptions():
    result = model_rope(UNKNOWN, overrides={"pairing": "adjacent", "rotary_dim": 64})
    assert result.assumptions == ()
    spec = result.specs["text"]
    assert (spec.pairing, spec.rotary_dim, spec.freq_dim) == ("adjacent", 64, 64)
    assert spec_from_config(UNKNOWN, overrides={"rope_theta": 5e5, **HALF}).theta == 5e5


def test_unknown_model_type_without_rope_keys_is_refused_with_what_to_supply():
    cfg = {"model_type": "myarch", "hidden_size": 2048, "num_attention_heads": 16}
    with pytest.raises(ValueError, match="model_type='myarch'") as info:
        model_rope(cfg)
    assert "rope=none" in str(info.value) and "rope_theta" in str(info.value)
    declared = model_rope(cfg, overrides={"rope": "none"})
    assert not declared.has_rope and "rope=none" in declared.no_rope


def test_known_families_resolve_without_assumptions():
    for cfg in (LLAMA, {"model_type": "qwen3", "head_dim": 128, "rope_theta": 1e6},
                {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128}):
        assert model_rope(cfg).assumptions == ()


# ----------------------------------------------------------------------------- keys read for every family


def test_rotary_dim_is_a_width_for_every_family_that_honours_partial_rotary():
    spec = spec_from_config({**UNKNOWN, "rotary_dim": 32, "pairing": None}, overrides={"pairing": "half"})
    assert (spec.head_dim, spec.rotary_dim, spec.freq_dim) == (128, 32, 32)
    m2 = spec_from_config({"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 64, "rope_theta": 5e6})
    assert (m2.rotary_dim, m2.freq_dim) == (64, 64)


def test_a_width_key_transformers_ignores_is_noted_not_dropped_silently():
    result = model_rope({**LLAMA, "partial_rotary_factor": 0.5})
    assert result.specs["text"].rotary_dim == 128  # Llama's default init rotates the whole head
    assert any("partial_rotary_factor not applied" in n for n in result.notes)


@pytest.mark.parametrize("cfg, first, second", [
    ({**UNKNOWN, "rotary_dim": 64, "partial_rotary_factor": 0.25}, "partial_rotary_factor", "rotary_dim"),
    ({**UNKNOWN, "rotary_pct": 0.25, "partial_rotary_factor": 0.5}, "partial_rotary_factor", "rotary_pct"),
    ({**UNKNOWN, "rotary_pct": 0.5, "rotary_dim": 32}, "rotary_pct", "rotary_dim"),
])
def test_contradictory_width_keys_are_refused_naming_both(cfg, first, second):
    with pytest.raises(ValueError) as info:
        model_rope(cfg, overrides=HALF)
    text = str(info.value)
    assert text.startswith(first) and f"disagrees with {second}" in text and "rotary channels" in text


def test_agreeing_width_keys_are_accepted():
    spec = spec_from_config({**UNKNOWN, "rotary_dim": 64, "partial_rotary_factor": 0.5}, overrides={"pairing": "half"})
    assert spec.rotary_dim == 64


def test_rope_interleave_is_read_for_every_family():
    on = spec_from_config({**UNKNOWN, "rope_interleave": True})  # the flag itself says the pairing
    off = spec_from_config({**UNKNOWN, "rope_interleave": False}, overrides=HALF)
    assert (on.pairing, off.pairing) == ("adjacent_in_half_out", "half")
    v3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128}
    assert spec_from_config(v3).pairing == "adjacent_in_half_out"  # the family's flag defaults to true
    # GLM-5's attention always calls the interleaved form, whatever the flag says
    glm5 = {"model_type": "glm_moe_dsa", "qk_rope_head_dim": 64, "rope_interleave": False, "rope_theta": 1e6}
    assert model_rope(glm5).specs["text"].pairing == "adjacent_in_half_out"
    with pytest.raises(TypeError, match="rope_interleave"):
        model_rope({**UNKNOWN, "rope_interleave": "yes"}, overrides=HALF)


def test_swa_rope_theta_gives_sliding_layers_their_own_base():
    cfg = {**UNKNOWN, "swa_rope_theta": 1e4, "num_hidden_layers": 4,
           "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]}
    result = model_rope(cfg, overrides={"pairing": "half"})
    assert result.specs["full_attention"].theta == 1e6 and result.specs["sliding_attention"].theta == 1e4
    assert result.layers == ("sliding_attention", "full_attention", "sliding_attention", "full_attention")


def test_compress_rope_theta_gives_compressed_layers_a_second_rope():
    cfg = {**UNKNOWN, "rope_theta": 1e4, "compress_rope_theta": 160000, "num_hidden_layers": 3,
           "compress_ratios": [0, 4, 128], "qk_rope_head_dim": 64,
           "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536}}
    result = model_rope(cfg, overrides={"pairing": "adjacent"})
    main, compress = result.specs["main"], result.specs["compress"]
    assert (main.theta, main.scaling.type) == (1e4, "default")
    assert (compress.theta, compress.scaling.type, compress.scaling.factor) == (160000.0, "yarn", 16.0)
    assert compress.scaling.attention_factor == 1.0
    assert result.layers == ("main", "compress", "compress")


def test_no_rope_layers_list_and_interval():
    cfg = {**LLAMA, "num_hidden_layers": 4, "no_rope_layers": [1, 0, 1, 1]}
    assert model_rope(cfg).layers == ("text", None, "text", "text")
    smol = {"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 8,
            "rope_theta": 5e6}
    assert model_rope(smol).layers == ("text", "text", "text", None) * 2  # no_rope_layer_interval 4 default


def test_hybrid_layers_without_attention_have_no_rope():
    cfg = {**LLAMA, "model_type": "qwen3_next", "num_hidden_layers": 4, "head_dim": 256, "partial_rotary_factor": 0.25,
           "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"]}
    result = model_rope(cfg)
    assert result.layers == (None, None, None, "text") and result.specs["text"].rotary_dim == 64
    bamba = {"model_type": "bamba", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
             "attn_layer_indices": [2], "rope_theta": 1e4, "partial_rotary_factor": 0.5}
    assert model_rope(bamba).layers == (None, None, "text", None)
    nemotron_h = {"model_type": "nemotron_h", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
                  "hybrid_override_pattern": "M*M-", "rope_theta": 1e4}
    assert model_rope(nemotron_h).layer_types == ("mamba", "full_attention", "mamba", "mlp")


# ----------------------------------------------------------------------------- models without RoPE


@pytest.mark.parametrize("cfg, why", [
    ({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12}, "has no rotary embedding"),
    ({"model_type": "gpt2", "n_embd": 768, "n_head": 12}, "has no rotary embedding"),
    ({"model_type": "granitemoehybrid", "hidden_size": 768, "num_attention_heads": 12, "rope_theta": 1e4,
      "position_embedding_type": "nope"}, "position_embedding_type='nope'"),
    ({**UNKNOWN, "alibi": True}, "ALiBi"),
    ({**UNKNOWN, "use_mem_rope": False}, "use_mem_rope=false"),
    ({"model_type": "kimi_linear", "hidden_size": 7168, "num_attention_heads": 96, "qk_rope_head_dim": 64,
      "mla_use_nope": True}, "no rotary embedding"),
    ({**UNKNOWN, "mla_use_nope": True}, "mla_use_nope=true"),
    ({"model_type": "nemotron_h", "hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 1e4},
     "rope_theta key(s) are not used"),
])
def test_models_without_rope_say_so(cfg, why):
    result = model_rope(cfg, overrides=HALF if cfg.get("model_type") == "myarch" else None)
    assert not result.has_rope and why in result.no_rope and dict(result.specs) == {}
    with pytest.raises(NoRopeError, match="no RoPE"):
        spec_from_config(cfg, overrides=HALF if cfg.get("model_type") == "myarch" else None)
    assert json.loads(json.dumps(result.to_dict()))["rope"] is False


def test_every_layer_nope_is_no_rope():
    cfg = {**LLAMA, "num_hidden_layers": 2, "no_rope_layers": [0, 0]}
    result = model_rope(cfg)
    assert not result.has_rope and "no decoder layer" in result.no_rope


# ----------------------------------------------------------------------------- keys inside RoPE sections


@pytest.mark.parametrize("section, key, hint", [
    ({"rope_typ": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048}, "rope_typ", "rope_type"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048, "beta_fsat": 16}, "beta_fsat",
     "beta_fast"),
    ({"rope_type": "linear", "factr": 2.0}, "factr", "factor"),
])
def test_misspelt_keys_are_refused_with_a_suggestion(section, key, hint):
    with pytest.raises(ValueError) as info:
        model_rope({**LLAMA, "rope_scaling": section})
    assert f"rope_scaling.{key}=" in str(info.value) and f"did you mean '{hint}'" in str(info.value)


def test_unknown_keys_are_refused_and_known_extras_noted():
    with pytest.raises(ValueError, match="unknown key in a RoPE section; known keys: "):
        model_rope({**LLAMA, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "zzz_custom": 1}})
    fine = model_rope({**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "finetuned": True,
                                                 "original_max_position_embeddings": 2048}})
    assert any("finetuned ignored" in n for n in fine.notes)
    beta = model_rope({**LLAMA, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                                                    "llama_4_scaling_beta": 0.1}})
    assert any("llama_4_scaling_beta ignored" in n for n in beta.notes)
    with pytest.raises(ValueError, match="unknown key"):  # the same check inside a per-layer-type entry
        model_rope({**LLAMA, "model_type": "qwen2", "num_hidden_layers": 1, "layer_types": ["full_attention"],
                    "rope_parameters": {"full_attention": {"rope_typ": "linear"}}})


def test_nested_rope_parameters_with_a_flat_key_is_accepted_as_transformers_does():
    # Gemma 3's config object has layer_types: it nests by them and reads only the entries; an entry without
    # rope_theta takes the key the class reads for it (the top-level rope_theta for full attention)
    cfg = {"model_type": "gemma3_text", "num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"],
           "rope_theta": 1e6, "rope_parameters": {"rope_theta": 5.0, "sliding_attention": {"rope_type": "default",
                                                                                          "rope_theta": 1e4},
                                                  "full_attention": {"rope_type": "default"}}}
    result = model_rope(cfg)
    assert result.specs["sliding_attention"].theta == 1e4 and result.specs["full_attention"].theta == 1e6
    assert any("rope_parameters.rope_theta ignored" in n for n in result.notes)


def test_a_family_without_layer_types_reads_a_nested_looking_section_flat():
    # LlamaConfig has no layer_types field: transformers standardizes rope_parameters before the extra key is set,
    # so the section is flat (theta 5.0; checked against LlamaRotaryEmbedding) and the per-type entries are ignored
    cfg = {**LLAMA, "num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"], "rope_theta": 1e6,
           "rope_parameters": {"rope_theta": 5.0, "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                               "full_attention": {"rope_type": "default"}}}
    result = model_rope(cfg)
    assert list(result.specs) == ["text"] and result.specs["text"].theta == 5.0
    assert any("rope_parameters.sliding_attention ignored" in n for n in result.notes)


def test_runtime_rescaling_keys_are_assumptions_or_notes():
    qwen1 = {"model_type": "qwen", "hidden_size": 2048, "num_attention_heads": 16, "rotary_pct": 1.0,
             "rotary_emb_base": 10000, "seq_length": 8192, "use_dynamic_ntk": True, "use_logn_attn": True}
    result = model_rope(qwen1)
    assert [a.key for a in result.assumptions] == ["use_dynamic_ntk"] and "8192" in result.assumptions[0].reason
    assert any("use_logn_attn" in n for n in result.notes)
    assert result.specs["text"].theta == 10000.0


# ----------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("cfg, key", [
    ({**LLAMA, "rope_theta": 10**400}, "rope_theta="),
    ({**LLAMA, "head_dim": 10**400}, "head_dim="),
    ({**LLAMA, "rope_theta": float("inf")}, "rope_theta="),
    ({**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 10**400}},
     "original_max_position_embeddings="),
    ({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 10**400}}, "rope_scaling.factor="),
    ({**LLAMA, "num_hidden_layers": 10**400}, "num_hidden_layers="),
    ({**LLAMA, "max_position_embeddings": 2**40, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
     "max_position_embeddings="),
])
def test_overflowing_and_absurd_numbers_are_key_value_rule_errors(cfg, key):
    with pytest.raises(ValueError) as info:
        model_rope(cfg)
    assert type(info.value) is ValueError and key in str(info.value)
    assert len(str(info.value)) < 400  # a 400-digit value is summarised, not printed


# ----------------------------------------------------------------------------- layer types and overrides


def test_layer_type_must_exist_and_apply_rope():
    cfg = {**LLAMA, "num_hidden_layers": 4, "no_rope_layers": [1, 1, 1, 0],
           "layer_types": ["full_attention", "full_attention", "full_attention", "chunked_attention"]}
    assert spec_from_config(cfg, layer_type="full_attention") == spec_from_config(cfg)
    for name in ("sliding_attention", "chunked_attention", "global"):  # absent, NoPE-only, unknown
        with pytest.raises(ValueError, match="expected one of full_attention, text"):
            spec_from_config(cfg, layer_type=name)
    assert spec_from_config(LLAMA, layer_type="full_attention") == spec_from_config(LLAMA)  # no layer list
    with pytest.raises(ValueError, match="sliding_attention"):
        spec_from_config(LLAMA, layer_type="sliding_attention")


def test_overrides_set_nested_keys_and_remove_keys():
    cfg = {**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    assert spec_from_config(cfg, overrides={"rope_scaling.factor": 4.0}).scaling.factor == 4.0
    assert spec_from_config(cfg, overrides={"rope_scaling": None}).scaling.type == "default"
    assert cfg["rope_scaling"]["factor"] == 2.0  # the caller's dict is not modified
    text = spec_from_config({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}},
                            overrides={"text_config.rope_theta": 2e6}, layer_type="full_attention")
    assert text.theta == 2e6


@pytest.mark.parametrize("overrides, key", [
    ({"pairing": "diagonal"}, "overrides.pairing"),
    ({"rope": "yes"}, "overrides.rope"),
    ({"rope_scaling.factor.x": 1}, "overrides.rope_scaling.factor.x"),
    ({"": 1}, "overrides"),
    ([("rope_theta", 1)], "overrides"),
])
def test_bad_overrides_are_named(overrides, key):
    with pytest.raises((ValueError, TypeError)) as info:
        model_rope({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}, overrides=overrides)
    assert str(info.value).startswith(key)


def test_model_rope_to_dict_round_trips_through_json():
    result = model_rope({**UNKNOWN, "num_hidden_layers": 2, "no_rope_layers": [1, 0]}, overrides=HALF)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["layers"] == ["text", None] and data["rope"] is True
    assert {a["key"] for a in data["assumptions"]} == {"rotary_dim"}
    assert Counter(data["layer_types"]) == {"full_attention": 2}


# ----------------------------------------------------------------------------- roperef spec (CLI)


def _args(config, **kw) -> argparse.Namespace:
    base = dict(command="spec", config=str(config), layer_type=None, layers=False, sets=[], against=None)
    return argparse.Namespace(**{**base, **kw})


def _write(tmp_path, cfg, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


def test_cli_prints_assumptions_on_stderr_and_set_removes_them(tmp_path, capsys):
    from conformance.cli import spec as cli_spec

    path = _write(tmp_path, UNKNOWN)
    assert cli_spec.run(_args(path)) == 2  # refused: the pairing is missing, and the message says how to give it
    out, err = capsys.readouterr()
    assert out == "" and "--set pairing=" in err and len(err.strip().splitlines()) == 1
    assert cli_spec.run(_args(path, sets=["pairing=half"])) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["pairing"] == "half"
    assert "assumed rotary_dim=128" in err and "assumed pairing" not in err
    assert cli_spec.run(_args(path, sets=["pairing=adjacent", "rotary_dim=64", "rope_theta=5e5"])) == 0
    out, err = capsys.readouterr()
    spec = json.loads(out)
    assert (spec["pairing"], spec["rotary_dim"], spec["theta"]) == ("adjacent", 64, 5e5) and err == ""


def test_cli_no_rope_exit_code_and_layers(tmp_path, capsys):
    from conformance.cli import spec as cli_spec
    from conformance.exit_codes import ExitCode

    assert ExitCode.NO_ROPE == 5
    path = _write(tmp_path, {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 2})
    assert cli_spec.run(_args(path)) == ExitCode.NO_ROPE
    out, err = capsys.readouterr()
    assert "no RoPE" in err and "gpt2" in err
    said = json.loads(out)  # stdout says it too, as data: {"rope": null, "why": ...}
    assert said["rope"] is None and said["model_type"] == "gpt2" and "no rotary embedding" in said["why"]
    assert cli_spec.run(_args(path, layers=True)) == ExitCode.NO_ROPE
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[-2:] for line in lines[1:3]] == [["no", "RoPE"]] * 2  # each of the 2 layers
    assert lines[3].startswith("no RoPE:") and "gpt2" in lines[3] and len(lines) == 4  # then why
    llama4 = _write(tmp_path, {**LLAMA, "num_hidden_layers": 4, "no_rope_layers": [1, 1, 1, 0]}, "l4.json")
    assert cli_spec.run(_args(llama4, layers=True)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["layer", "type", "RoPE"] and lines[4].split() == ["3", "full_attention", "no", "RoPE"]


def test_cli_usage_errors_exit_2_with_one_line(tmp_path, capsys):
    from conformance.cli import spec as cli_spec

    path = _write(tmp_path, LLAMA)
    for kw in ({"sets": ["rope_theta"]}, {"layer_type": "sliding_attention"}, {"sets": ["pairing=diagonal"]}):
        assert cli_spec.run(_args(path, **kw)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "roperef spec: error:" in err
    big = tmp_path / "big.json"
    big.write_text('{"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 1'
                   + "0" * 400 + "}")
    assert cli_spec.run(_args(big)) == 2
    assert "rope_theta=" in capsys.readouterr().err


def test_cli_set_values_parse_as_json_else_strings():
    from conformance.cli.spec import parse_sets

    assert parse_sets(["rope_theta=1e6", "rope_scaling.type=yarn", "rope_scaling=null", "a.b=[1, 2]"]) == {
        "rope_theta": 1e6, "rope_scaling.type": "yarn", "rope_scaling": None, "a.b": [1, 2]}
