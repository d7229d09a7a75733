"""Every RoPE family of transformers, read from a minimal published-style config (issue 24), against
transformers' own config class and rotary modules (``roperef spec --against transformers``).

The config is built from the family's class (:mod:`conformance.hf.published_style`): the sizes a checkpoint
writes, the RoPE written the legacy way, everything else (layer types, ``partial_rotary_factor`` set "for
backward compatibility", a composite's text sizes) left to the class. Each family that does not agree is
listed in :data:`PUBLISHED_NOT_AGREE` with the reason; the list is exact (a family that starts agreeing, or
one that stops, fails). Needs torch and transformers: under CI=true their absence fails instead of skipping.
"""

from __future__ import annotations

import os

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

from conformance.hf.published_style import check_family, families_to_check, same_as
from roperef.hf import families as fam

_SYNTHETIC_HEAD = ("the class's own defaults give no head_dim and a hidden size the heads do not divide "
                   "({}): transformers floors it, roperef refuses a head width it cannot derive exactly")
_SYNTHETIC_MROPE = "the class's default mrope_section does not fit its default head: transformers' own default is broken"
_FORWARD_NOPE = ("the model's forward passes position_embeddings=None to these layers ({}); roperef reads that from "
                 "the source, the per-layer probe reads the attention only (the same reason as the default config)")

#: Families whose published-style config does not AGREE, with the verdict and why.
PUBLISHED_NOT_AGREE: dict[str, tuple[str, str]] = {
    "glm4_moe": ("REFUSED", _SYNTHETIC_HEAD.format("4096 / 96")),
    "qwen3_omni_moe_text": ("REFUSED", _SYNTHETIC_HEAD.format("2048 / 28")),
    "qwen3_omni_moe_thinker": ("REFUSED", _SYNTHETIC_HEAD.format("2048 / 28")),
    "qwen3_omni_moe": ("REFUSED", _SYNTHETIC_HEAD.format("2048 / 28")),
    "qwen3_omni_moe_talker_text": ("REFUSED", _SYNTHETIC_MROPE),
    "qwen4_exp_text": ("REFUSED", _SYNTHETIC_MROPE),
    "qwen4_exp": ("REFUSED", _SYNTHETIC_MROPE),
    "lara_mini": ("DIFFER", _FORWARD_NOPE.format("LaraMini's non-sliding layers")),
    "muse_spark_text": ("DIFFER", _FORWARD_NOPE.format("layer_rope_theta 0")),
    "muse_spark": ("DIFFER", _FORWARD_NOPE.format("layer_rope_theta 0")),
    "muse_glimmer_text": ("DIFFER", _FORWARD_NOPE.format("layer_rope_theta 0")),
    "muse_glimmer": ("DIFFER", _FORWARD_NOPE.format("layer_rope_theta 0")),
    "hrm_text": ("DIFFER", "HrmTextConfig reads a num_hidden_layers without num_layers_per_stack as the per-stack count "
                           "and multiplies it by H_cycles * (L_cycles + 1) (1024 layer applications for 128); roperef "
                           "counts the layers the config states. Every layer has the same RoPE"),
    "mistral4": ("DIFFER", "a legacy rope_scaling without partial_rotary_factor replaces the section Mistral4Config "
                           "builds with its qk_rope / head_dim fraction, so transformers' module makes 64 frequencies "
                           "for the 128-wide head; roperef models the 64-channel rope slice the MLA attention rotates"),
    "fun_asr_nano": ("DIFFER", "transformers cannot build FunAsrNanoConfig from a text_config that gives only its "
                               "model_type (validate_architecture: ERROR on transformers' side)"),
}


@pytest.mark.parametrize("model_type", families_to_check())
def test_published_style_config_agrees_or_is_listed(model_type):
    result = check_family(model_type)
    want = PUBLISHED_NOT_AGREE.get(model_type, ("AGREE", ""))[0]
    assert result.verdict == want, f"{model_type}: {result.verdict}: {result.detail}\nconfig: {result.config}"


def test_every_rope_family_and_composite_is_checked_and_the_list_is_exact():
    checked = set(families_to_check())
    assert set(fam.ROPE_FAMILIES) <= checked
    composites = same_as()
    assert all(first in checked for first in composites.values())
    assert set(PUBLISHED_NOT_AGREE) <= checked, set(PUBLISHED_NOT_AGREE) - checked


def test_the_published_style_config_leaves_out_what_the_class_fills():
    from conformance.hf.published_style import composite_style, published_style

    persimmon = published_style("persimmon")
    assert "partial_rotary_factor" not in persimmon and "rope_parameters" not in persimmon  # the class's BC default
    # configuration_persimmon.py sets no theta of its own: PreTrainedConfig.default_theta 10000
    assert persimmon["rope_theta"] == 10000.0 and persimmon["architectures"] == ["PersimmonForCausalLM"]
    llava = composite_style("llava")
    assert llava is not None and set(llava["text_config"]) == {"model_type", "rope_theta"}  # sizes left to LlamaConfig
    omni = composite_style("qwen2_5_omni")
    assert omni is not None and omni["thinker_config"]["text_config"]["model_type"] == "qwen2_5_omni_text"


def test_the_docs_table_lists_exactly_these_families_as_not_agreeing():
    """docs/hf-configs.md's per-family table (scripts/cross_check_presets.py --update) says what this test says."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "hf-configs.md").read_text()
    table = page.split("Every RoPE family from a minimal published-style config", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:] if line.startswith("| ")]
    listed = {name.split(" (also")[0].strip(): verdict.strip() for name, verdict in rows}
    assert set(listed) == set(families_to_check())
    assert {mt: v for mt, v in listed.items() if v != "AGREE"} == {mt: v for mt, (v, _why) in PUBLISHED_NOT_AGREE.items()}
