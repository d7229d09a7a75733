"""``roperef spec --against transformers`` over the whole corpus, over every RoPE family transformers ships
(its own default config), and with planted mistakes that it must catch.

Needs torch and transformers: skipped where they are absent, except under CI=true (CI installs them), so
the corpus is cross-checked on every CI run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cases.catalog import presets_dir
from roperef.hf import HFQuirks
from roperef.hf import families as fam

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

from conformance.hf.crosscheck import cross_check, render

PRESETS = presets_dir()
ROOT = Path(__file__).resolve().parents[1]

#: Presets whose cross-check is not AGREE, and why (docs/hf-configs.md lists them too).
NOT_AGREE = {
    "glm-4-9b-chat": ("NOT_CHECKED", "chatglm is remote code with its own keys (rope_ratio); no in-library family"),
    "phi-1.5-msft": ("NOT_CHECKED", "phi-msft is the 2023 remote code; transformers' phi reads other keys"),
    "phi-2-msft": ("NOT_CHECKED", "phi-msft is the 2023 remote code; transformers' phi reads other keys"),
    "qwen-1.8b-chat": ("NOT_CHECKED", "Qwen-1 remote code; transformers has no qwen (v1) family"),
    "baichuan2-7b-chat": ("NOT_CHECKED", "Baichuan remote code; no in-library family"),
    "chatglm2-6b": ("NOT_CHECKED", "chatglm is remote code with its own keys; no in-library family"),
    "chatglm3-6b": ("NOT_CHECKED", "chatglm is remote code with its own keys; no in-library family"),
    "ling-plus": ("NOT_CHECKED", "bailing_moe (Ling) remote code; no in-library family"),
    "ministral-3-3b-instruct-2512": ("DIFFER", "this copy's top-level model_type is the text type ministral3 with a "
                                               "text_config: transformers' Ministral3Config ignores text_config, "
                                               "roperef reads it (the architecture is Mistral3ForConditionalGeneration)"),
    "hunyuan-a13b-instruct": ("DIFFER", "transformers' hunyuan_v1_moe cannot build the published config: its "
                                        "ntk-alpha init reads head_dim, the config says attention_head_dim"),
}
#: transformers' own default configs roperef refuses or reads differently, and why.
DEFAULTS_NOT_AGREE = {
    "dory": "its default dict lists 72 layer types for num_hidden_layers 36 (one per sub-block)",
    "glm4_moe": "no head_dim and hidden_size 4096 not divisible by 96 heads: roperef refuses, transformers floors",
    "qwen3_omni_moe_text": "no head_dim and hidden_size 2048 not divisible by 28 heads: roperef refuses",
    "qwen3_omni_moe_talker_text": "the default mrope_section does not sum to the default head's pairs",
    "qwen4_exp_text": "the default mrope_section does not sum to the default head's pairs",
    # the model's forward passes position_embeddings=None to some layers (a per-layer theta of 0, non-sliding
    # layers): the layer probe reads the attention only and keeps the config's answer; roperef follows the source
    "lara_mini": "LaraMiniModel.forward gives position_embeddings only to sliding_attention layers (roperef: NoPE "
                 "elsewhere; the probe cannot see the model's forward)",
    "muse_spark_text": "layer_rope_theta 0 = NoPE (default every 4th layer from the end); the probe cannot see the "
                       "model's forward passing position_embeddings=None",
    "muse_glimmer_text": "layer_rope_theta 0 = NoPE (default every 4th layer from the end); the probe cannot see the "
                         "model's forward passing position_embeddings=None",
}


def _presets() -> list[Path]:
    return sorted(PRESETS.glob("*.json"))


@pytest.mark.parametrize("path", _presets(), ids=lambda p: p.stem)
def test_every_preset_against_transformers(path):
    check = cross_check(json.loads(path.read_text()))
    want = NOT_AGREE.get(path.stem, ("AGREE", ""))[0]
    assert check.verdict == want, render(check, path.name)
    if want == "AGREE":
        judged = {i.what for i in check.items if i.verdict == "AGREE"}
        assert "rope" in judged
        if any(i.what == "inv_freq" for i in check.items):
            assert {"inv_freq", "attention_factor", "rotary_dim"} <= judged


def test_hunyuan_agrees_once_head_dim_is_supplied():
    cfg = json.loads((PRESETS / "hunyuan-a13b-instruct.json").read_text())
    assert cross_check(cfg, overrides={"head_dim": 128}).verdict == "AGREE"


@pytest.mark.parametrize("model_type", sorted(fam.ROPE_FAMILIES))
def test_every_transformers_rope_family_default_config(model_type):
    from transformers import AutoConfig

    data = AutoConfig.for_model(model_type).to_dict()
    data["model_type"] = model_type
    if model_type in DEFAULTS_NOT_AGREE:
        try:
            verdict = cross_check(data).verdict
        except ValueError:
            verdict = "REFUSED"
        assert verdict != "AGREE", f"{model_type} now agrees: drop it from DEFAULTS_NOT_AGREE"
        return
    check = cross_check(data)
    assert check.verdict == "AGREE", render(check, model_type)


def test_hf_families_is_current():
    """The checked-in family table of the installed transformers release (roperef/hf/families.py, or
    families_<release>.py for another release) is what scripts/gen_hf_families.py derives from it; a release
    with no checked-in table fails, naming the command that writes it (CI shows drift the day a release lands)."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_hf_families.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


# ----------------------------------------------------------------------------- it can fail


LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
         "rope_theta": 5e5}


@pytest.mark.parametrize("overrides, quirks, entry, what", [
    ({"pairing": "adjacent"}, None, "text", "pairing"),
    ({"rope": "none"}, None, "model", "rope"),
    (None, HFQuirks(default_honours_partial_rotary=frozenset({"llama"})), "text", "rotary_dim"),
])
def test_planted_mistakes_differ(overrides, quirks, entry, what):
    cfg = {**LLAMA, "partial_rotary_factor": 0.5} if quirks else LLAMA
    check = cross_check(cfg, overrides=overrides, quirks=quirks)
    assert check.verdict == "DIFFER"
    assert any(i.entry == entry and i.what == what and i.verdict == "DIFFER" for i in check.items), render(check)


def test_wrong_theta_differs():
    """A theta transformers does not read: GPT-J's fixed 10000 turned off in the quirks."""
    gptj = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64, "rope_theta": 5e5}
    assert cross_check(gptj).verdict == "AGREE"
    check = cross_check(gptj, quirks=HFQuirks(gptj_theta=None))
    assert any(i.what == "inv_freq" and i.verdict == "DIFFER" for i in check.items), render(check)


def test_wrong_pairing_table_differs():
    llama4 = {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
              "num_hidden_layers": 8, "rope_theta": 5e5}
    assert cross_check(llama4).verdict == "AGREE"
    lied = cross_check(llama4, quirks=HFQuirks(adjacent_pairing=frozenset()))
    assert any(i.what == "pairing" and i.verdict == "DIFFER" for i in lied.items), render(lied)


def test_wrong_layer_map_differs(monkeypatch):
    """Llama 4's NoPE layers moved by one: the per-layer comparison must see it."""
    import dataclasses

    from conformance.hf import crosscheck as hf_crosscheck
    from roperef.hf import model_rope

    llama4 = {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
              "num_hidden_layers": 8, "rope_theta": 5e5}

    def shifted(config, **kw):
        right = model_rope(config, **kw)
        return dataclasses.replace(right, layers=right.layers[1:] + right.layers[:1])

    monkeypatch.setattr(hf_crosscheck, "model_rope", shifted)
    check = cross_check(llama4)
    assert any(i.what == "layers" and i.verdict == "DIFFER" for i in check.items), render(check)


def test_cli_against_exit_codes(capsys):
    from conformance.cli import spec as cli_spec
    from conformance.exit_codes import ExitCode

    def run(name, sets=()):
        args = argparse.Namespace(command="spec", config=str(PRESETS / name), layer_type=None, layers=False,
                                  sets=list(sets), against="transformers")
        code = cli_spec.run(args)
        return code, capsys.readouterr().out

    code, out = run("llama-3.1-8b.json")
    assert code == ExitCode.OK and out.rstrip().endswith("verdict: AGREE") and "inv_freq" in out
    code, out = run("llama-3.1-8b.json", ["pairing=adjacent"])
    assert code == ExitCode.FAILED and "DIFFER" in out
    code, out = run("glm-4-9b-chat.json")
    assert code == ExitCode.NOTHING_JUDGED and "NOT_CHECKED" in out


#: Model types whose config class builds layer_types itself (when a config gives no list) in a way roperef does
#: not reproduce, and why that does not change the RoPE (or why roperef refuses instead). The others are rebuilt
#: by the hand rules of roperef/hf/layer_rules.py or the generated config_classes.LAYER_TYPES_RULES (issue 24:
#: 16 types were listed here before).
LAYER_TYPES_NOT_REBUILT = {
    "muse_spark_text": "names only (one RoPE; NoPE layers come from layer_rope_theta); its class's rule is none of the "
                       "generated shapes (config_classes.LAYER_TYPES_RULES has no entry)",
    "qwen4_exp_text": "its default mrope_section does not fit the default head (refused either way)",
}

def test_layer_types_of_a_config_without_the_list():
    """A config that omits layer_types gets what the family's config class builds (transformers' own rule)."""
    from transformers import AutoConfig

    from roperef.hf import model_rope
    from roperef.hf.families import ROPE_FAMILIES

    differ = []
    for mt in sorted(ROPE_FAMILIES):
        data = AutoConfig.for_model(mt).to_dict()
        if not data.get("layer_types"):
            continue
        data = {k: v for k, v in data.items() if k != "layer_types"}
        want = list(AutoConfig.for_model(mt, **{k: v for k, v in data.items() if k != "model_type"}).layer_types)
        try:
            got = list(model_rope({**data, "model_type": mt}).layer_types)
        except ValueError:
            got = None
        if got != want:
            differ.append(mt)
    assert sorted(differ) == sorted(LAYER_TYPES_NOT_REBUILT), set(differ) ^ set(LAYER_TYPES_NOT_REBUILT)
