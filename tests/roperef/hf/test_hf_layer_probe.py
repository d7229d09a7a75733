"""transformers' truth beyond config attributes: per-layer attention code, config-only model types,
attribute maps and a ``text_config`` a non-composite config class ignores (conformance.hf.truth).

Synthetic configs only. The expected layers are read from the config the test writes (which layer types
it declares), never from the code under test. Needs torch and transformers (skipped where absent, except
under CI=true).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import textwrap
import types

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

from conformance.hf import source as hf_source  # after the importorskip above (tests allow late imports)
from conformance.hf.crosscheck import cross_check, render
from conformance.hf.truth import (
    apply_attention,
    hf_config,
    layer_probe,
    mapped_module,
    modeling_modules,
    text_config_of,
    transformers_truth,
)
from roperef.hf import families as fam
from roperef.spec import RopeSpec

SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
         "intermediate_size": 128, "vocab_size": 128}
PATTERN = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 2


def _truth_layers(config: dict) -> tuple:
    truth = transformers_truth(config, {"text": RopeSpec(head_dim=16)})
    assert truth.layers is not None, truth.notes
    return truth.layers


# ----------------------------------------------------------------------------- 1. per-layer attention code


def test_afmoe_full_attention_layers_have_no_rope():
    """AfmoeAttention.forward: ``if self.is_local_attention: apply_rotary_pos_emb(...)``."""
    cfg = {"model_type": "afmoe", **SMALL, "num_hidden_layers": 8, "layer_types": PATTERN, "sliding_window": 32,
           "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "num_dense_layers": 1}
    layers = _truth_layers(cfg)
    assert [x is None for x in layers] == [t == "full_attention" for t in PATTERN]


@pytest.mark.parametrize("model_type", ["exaone4", "exaone_moe"])
def test_exaone_full_layers_have_no_rope_with_a_window(model_type):
    """``if self.sliding_window is None or self.is_sliding``: with a window, full layers are NoPE."""
    cfg = {"model_type": model_type, **SMALL, "num_hidden_layers": 8, "layer_types": PATTERN, "sliding_window": 32}
    assert [x is None for x in _truth_layers(cfg)] == [t == "full_attention" for t in PATTERN]


def test_exaone4_without_a_window_every_layer_has_rope():
    """The same test without a window (``sliding_window: null``, which ExaoneMoeConfig refuses): all RoPE."""
    cfg = {"model_type": "exaone4", **SMALL, "num_hidden_layers": 8, "sliding_window": None,
           "layer_types": ["full_attention"] * 8}
    assert all(x is not None for x in _truth_layers(cfg))


def test_mllama_cross_attention_layers_have_no_rope():
    """MllamaTextModel builds MllamaCrossAttentionDecoderLayer at ``cross_attention_layers``: no RoPE there."""
    cfg = {"model_type": "mllama_text_model", **SMALL, "num_hidden_layers": 6, "cross_attention_layers": [1, 4]}
    layers = _truth_layers(cfg)
    assert [x is None for x in layers] == [i in (1, 4) for i in range(6)]


def test_layer_probe_differs_from_a_reading_that_gives_every_layer_rope(monkeypatch):
    """The cross-check reports the per-layer difference (roperef planted to give every layer RoPE)."""
    import dataclasses

    from conformance.hf import crosscheck as hf_crosscheck
    from roperef.hf import model_rope

    cfg = {"model_type": "exaone4", **SMALL, "num_hidden_layers": 8, "layer_types": PATTERN, "sliding_window": 32}

    def every_layer(config, **kw):
        right = model_rope(config, **kw)
        return dataclasses.replace(right, layers=tuple("text" for _ in range(8)))

    monkeypatch.setattr(hf_crosscheck, "model_rope", every_layer)
    check = cross_check(cfg)
    item = next(i for i in check.items if i.what == "layers")
    assert item.verdict == "DIFFER" and item.transformers == "layer 3: no RoPE", render(check)


def test_evaluate_reads_instance_attributes_and_names():
    config = types.SimpleNamespace(sliding_window=4, layers=[1, 3])
    inst = types.SimpleNamespace(is_sliding=False, sliding_window=None, proj=object())

    def ev(src, instance=None, names=None):
        return hf_source.evaluate(ast.parse(src, mode="eval").body, config, instance, names)

    assert ev("self.sliding_window is None") is False  # no instance: read from the config
    assert ev("self.sliding_window is None", inst) is True  # the instance's own value
    assert ev("self.sliding_window is None or self.is_sliding", inst) is True
    assert ev("self.is_sliding", inst) is False
    assert ev("self.proj is not None", inst) is True  # an object: only `is (not) None` is known
    assert ev("self.proj", inst) is hf_source.UNKNOWN
    assert ev("self.proj == 3", inst) is hf_source.UNKNOWN
    assert ev("i in self.layers", names={"i": 3}) is True
    assert ev("i in self.layers", names={"i": 2}) is False
    assert ev("i in self.layers") is hf_source.UNKNOWN


FAKE = '''
import torch


def apply_rotary_pos_emb(q, k, cos, sin):
    return q, k


class FakeAttention(torch.nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        if config.broken:
            raise ValueError("cannot build")
        self.rotates = config.kinds[layer_idx] == "rope"

    def forward(self, q, k, cos, sin):
        if self.rotates:
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return q


class FakeDecoderLayer(torch.nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.attn = FakeAttention(config, layer_idx)


class FakeCrossAttention(torch.nn.Module):
    def forward(self, q):
        return q


class FakeCrossDecoderLayer(torch.nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.attn = FakeCrossAttention()


class FakeModel(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        layers = []
        for layer_idx in range(config.num_hidden_layers):
            if layer_idx in config.cross_layers:
                layers.append(FakeCrossDecoderLayer(config, layer_idx))
            else:
                layers.append(FakeDecoderLayer(config, layer_idx))
'''


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "modeling_fake.py"
    path.write_text(textwrap.dedent(FAKE))
    spec = importlib.util.spec_from_file_location("modeling_fake", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_config(**kw):
    base = {"num_hidden_layers": 5, "kinds": ["rope", "nope", "rope", "rope", "nope"], "cross_layers": [2],
            "broken": False}
    return types.SimpleNamespace(**{**base, **kw})


def test_layer_probe_on_a_synthetic_modeling_module(fake):
    cfg = _fake_config()
    attention, fn, _ = apply_attention([fake], cfg)
    assert attention is fake.FakeAttention and fn is fake.apply_rotary_pos_emb
    assert hf_source.layer_classes(fake.FakeModel, cfg, 5) == [
        "FakeDecoderLayer", "FakeDecoderLayer", "FakeCrossDecoderLayer", "FakeDecoderLayer", "FakeDecoderLayer"]
    layers, notes = layer_probe([fake], cfg, ("text",) * 5, attention)
    # layer 1, 4: the attention's `if self.rotates` is false; layer 2: a cross-attention layer
    assert layers == ("text", None, None, "text", None), notes


def test_layer_probe_keeps_the_config_answer_when_the_attention_cannot_be_built(fake):
    cfg = _fake_config(broken=True, cross_layers=[])
    layers, notes = layer_probe([fake], cfg, ("text",) * 5, fake.FakeAttention)
    assert layers == ("text",) * 5
    assert any("did not build" in n and "ValueError" in n for n in notes), notes


# ----------------------------------------------------------------------------- 2. config-only model types


@pytest.mark.parametrize("model_type, owner", [
    ("internlm3", "llama"), ("exaone", "llama"), ("iquestcoder", "llama"), ("sarvam_mla", "deepseek_v3"),
    ("sarvam_moe", "glm4_moe"),
])
def test_config_only_model_types_use_the_mapped_family(model_type, owner):
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    assert mapped_module(model_type) == owner
    names = [m.__name__ for m in modeling_modules(model_type)]
    assert names and all(n.startswith(f"transformers.models.{owner}.modeling_") for n in names)
    classes = [c.__name__ for m in modeling_modules(model_type) for c in vars(m).values() if isinstance(c, type)]
    assert MODEL_MAPPING_NAMES[model_type] in classes
    assert model_type in fam.ROPE_FAMILIES and model_type not in fam.NO_ROPE_FAMILIES


def test_a_model_type_with_its_own_modeling_file_keeps_it():
    assert [m.__name__ for m in modeling_modules("llama")] == ["transformers.models.llama.modeling_llama"]


# ----------------------------------------------------------------------------- 3. attribute maps


def test_attribute_maps_are_the_config_classes_own():
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES

    assert fam.ATTRIBUTE_MAPS["dbrx"]["num_hidden_layers"] == "n_layers"
    assert fam.ATTRIBUTE_MAPS["moonshine"]["num_attention_heads"] == "decoder_num_attention_heads"
    assert isinstance(fam.ATTRIBUTE_MAPS, types.MappingProxyType)
    assert "llama" not in fam.ATTRIBUTE_MAPS  # LlamaConfig maps nothing
    for mt in CONFIG_MAPPING_NAMES:
        own = {k: v for k, v in (getattr(CONFIG_MAPPING[mt], "attribute_map", None) or {}).items()
               if isinstance(k, str) and isinstance(v, str)}
        assert dict(fam.ATTRIBUTE_MAPS.get(mt, {})) == own, mt


# ----------------------------------------------------------------------------- 4. an ignored text_config


LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
         "rope_theta": 5e5}


def test_a_text_config_a_non_composite_class_ignores_is_a_clean_differ():
    cfg = {**LLAMA, "text_config": {**LLAMA, "num_hidden_layers": 2}}
    built = hf_config(cfg)
    assert text_config_of(built) is built  # the model reads the top-level keys
    check = cross_check(cfg)
    assert not any(i.verdict == "ERROR" for i in check.items), render(check)
    item = next(i for i in check.items if i.what == "text_config")
    assert item.verdict == "DIFFER" and item.transformers == "ignores text_config"
    assert any("ignores the text_config dict" in n for n in check.notes)


def test_without_a_text_config_no_such_item():
    check = cross_check(LLAMA)
    assert check.verdict == "AGREE" and not any(i.what == "text_config" for i in check.items), render(check)
