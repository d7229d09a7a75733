"""roperef against Hugging Face transformers (the de-facto spec of config semantics).

1. Frequencies: inv_freq and attention_factor of ``spec_from_config(cfg)`` vs HF's ``ROPE_INIT_FUNCTIONS``
   (every scaling type) and vs each preset model's own rotary-embedding module (its default init).
   HF computes inv_freq in float32 (roperef in float64): relative difference <= 1e-6 (measured: <= 3.3e-7;
   the worst case of a float32 exponent ``2i/d`` is ``ln(theta) * 2^-24``, 1.2e-6 at theta = 1e9, not
   reached by torch's pow on these configs). Attention factors are Python floats in HF: equal.
2. Apply: HF's apply functions (Llama, GPT-J, GLM, Cohere, Qwen2-VL mRoPE, Qwen3-VL interleaved, GLM-4V
   adjacent mRoPE, DeepSeek V2 complex, DeepSeek V3 interleave, Pixtral and Qwen-VL vision) on float64 q/k
   with float64 cos/sin tables laid out the HF way (the model's own ``recomposition_frequencies`` where it
   has one) vs ``roperef.reference.forward``: ``max|y_hf - y_ref| / max|y_ref| <= 1e-6`` at positions < 4096.

No network: every HF config object is built in memory. The measured maxima are printed with ``-s``.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from conformance.cases.catalog import presets_dir  # noqa: E402  # after the importorskip above
from roperef.frequencies import inv_freq  # noqa: E402  # after the importorskip above
from roperef.hf import spec_from_config  # noqa: E402  # after the importorskip above
from roperef.reference import forward  # noqa: E402  # after the importorskip above
from roperef.spec import RopeSpec, Scaling  # noqa: E402  # after the importorskip above

U32 = 2.0**-24
PRESETS = presets_dir()  # $ROPEREF_PRESETS, else the copy shipped in conformance/presets


@pytest.fixture(scope="module")
def record():
    table: dict[str, float] = {}
    yield table
    print("\nmax relative difference vs transformers:")
    for key in sorted(table):
        print(f"  {key:55s} {table[key]:.3e}")


def _quiet():
    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")


def _freq_rel(ref: np.ndarray, hf) -> float:
    hf = hf.detach().to(torch.float64).numpy()
    assert hf.shape == ref.shape
    zero = ref == 0
    assert np.all(hf[zero] == 0)
    return float(np.max(np.abs(hf[~zero] - ref[~zero]) / ref[~zero])) if (~zero).any() else 0.0


def _check_freq(record, key, spec, hf_w, hf_s, seq_len=None, ref=None):
    w, s = inv_freq(spec, seq_len) if ref is None else ref
    rel = _freq_rel(w, hf_w)
    rel_s = abs(float(hf_s) - s) / s
    bound = 1e-6
    record[f"inv_freq  {key}"] = rel
    record[f"attn_fac  {key}"] = rel_s
    assert rel <= bound, (key, rel, bound)
    assert rel_s <= 1e-6, (key, float(hf_s), s)


# ----------------------------------------------------------------------------- 1a. ROPE_INIT_FUNCTIONS

LLAMA = dict(hidden_size=2048, num_attention_heads=16, head_dim=128, max_position_embeddings=8192)
LF = [1.0 + 0.37 * i for i in range(64)]
SF = [1.0 + 0.013 * i for i in range(64)]
INIT_CASES = {
    "linear": ({"rope_type": "linear", "factor": 4.0, "rope_theta": 5e5}, [None]),
    "linear+partial0.5": ({"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4,
                           "partial_rotary_factor": 0.5}, [None]),
    "dynamic": ({"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4}, [None, 100, 8192, 8193, 20000]),
    "yarn": ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048,
              "rope_theta": 1e6}, [None]),
    "yarn+mscale": ({"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                     "mscale": 0.707, "mscale_all_dim": 1.0, "beta_fast": 16, "beta_slow": 2,
                     "rope_theta": 1e4}, [None]),
    "yarn+no-truncate": ({"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096,
                          "truncate": False, "rope_theta": 150000}, [None]),
    "yarn+null-factor+zero-beta": ({"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 2048,
                                    "beta_fast": 0, "beta_slow": 0, "rope_theta": 1e4}, [None]),
    "yarn+attention_factor": ({"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 1024,
                               "attention_factor": 0.75, "rope_theta": 1e4}, [None]),
    "yarn+partial0.75": ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048,
                          "partial_rotary_factor": 0.75, "rope_theta": 1e4}, [None]),
    "longrope": ({"rope_type": "longrope", "short_factor": SF, "long_factor": LF,
                  "original_max_position_embeddings": 2048, "rope_theta": 1e4}, [None, 2048, 2049]),
    "longrope+factor": ({"rope_type": "longrope", "short_factor": SF, "long_factor": LF, "factor": 3.0,
                         "original_max_position_embeddings": 2048, "rope_theta": 1e4}, [2048, 2049]),
    "llama3": ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 2048, "rope_theta": 5e5}, [None]),
    "proportional": ({"rope_type": "proportional", "partial_rotary_factor": 0.25, "factor": 2.0,
                      "rope_theta": 1e6}, [None]),
}


@pytest.mark.parametrize("name", sorted(INIT_CASES))
def test_rope_init_functions(name, record):
    _quiet()
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params, lengths = INIT_CASES[name]
    spec = spec_from_config({"model_type": "llama", **LLAMA, "rope_parameters": dict(params)})
    hf_config = LlamaConfig(**LLAMA, rope_parameters=json.loads(json.dumps(params)))
    for seq_len in lengths:
        hf_w, hf_s = ROPE_INIT_FUNCTIONS[params["rope_type"]](hf_config, "cpu", seq_len=seq_len)
        # roperef's stateless default: dynamic L = M, longrope short factors when seq_len is None.
        _check_freq(record, f"{name} seq_len={seq_len}", spec, hf_w, hf_s, seq_len)


@pytest.mark.parametrize("head, width, rho", [(128, 64, 0.25), (256, 128, 0.5), (96, 32, 0.75)])
def test_proportional_on_a_window_narrower_than_the_head(head, width, rho, record):
    """docs/spec.md section 3: proportional uses the width of the vector it rotates as denominator and count.

    transformers computes it over ``head_dim`` of the config it is given (Gemma 4 gives each layer
    type its own ``head_dim``): for a spec whose window of ``width`` channels is narrower than its
    head, roperef's frequencies are transformers' for ``head_dim = width``; for ``head_dim = head``
    transformers returns ``head/2`` frequencies, which a window of ``width/2`` pairs cannot use.
    """
    _quiet()
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_type": "proportional", "partial_rotary_factor": rho, "factor": 2.0, "rope_theta": 1e6}
    spec = RopeSpec(head_dim=head, rotary_dim=width, rotary_start=head - width, theta=1e6,
                    scaling=Scaling("proportional", partial_rotary_factor=rho, factor=2.0))
    init = ROPE_INIT_FUNCTIONS["proportional"]
    as_window = LlamaConfig(**dict(LLAMA, head_dim=width), rope_parameters=dict(params))
    hf_w, hf_s = init(as_window, "cpu")
    _check_freq(record, f"proportional window r={width} of D={head}", spec, hf_w, hf_s)
    as_head = LlamaConfig(**dict(LLAMA, head_dim=head), rope_parameters=dict(params))
    assert init(as_head, "cpu")[0].shape == (head // 2,) != (spec.n_pairs,)


def test_ntk_alpha_hunyuan(record):
    _quiet()
    from transformers import HunYuanDenseV1Config
    from transformers.models.hunyuan_v1_dense.modeling_hunyuan_v1_dense import HunYuanDenseV1RotaryEmbedding

    cfg = dict(hidden_size=4096, num_attention_heads=32, head_dim=128, max_position_embeddings=32768)
    params = {"type": "dynamic", "alpha": 1000.0, "factor": 1.0, "rope_theta": 1e4}
    spec = spec_from_config({"model_type": "hunyuan_v1_dense", **cfg, "rope_scaling": dict(params)})
    module = HunYuanDenseV1RotaryEmbedding(HunYuanDenseV1Config(**cfg, rope_parameters=dict(params)))
    assert spec.scaling.type == "ntk"
    _check_freq(record, "ntk (HunYuan dynamic+alpha)", spec, module.inv_freq, module.attention_scaling)


# ----------------------------------------------------------------------------- 1b. every preset

ROTARY_CLASSES = {  # model type -> (module, rotary class)
    "cohere": ("cohere", "CohereRotaryEmbedding"),
    "llama": ("llama", "LlamaRotaryEmbedding"),
    "mistral": ("mistral", "MistralRotaryEmbedding"),
    "deepseek_v2": ("deepseek_v2", "DeepseekV2RotaryEmbedding"),
    "deepseek_v3": ("deepseek_v3", "DeepseekV3RotaryEmbedding"),
    "gemma3_text": ("gemma3", "Gemma3RotaryEmbedding"),
    "glm4v_moe_text": ("glm4v_moe", "Glm4vMoeTextRotaryEmbedding"),
    "glm": ("glm", "GlmRotaryEmbedding"),
    "gpt_neox": ("gpt_neox", "GPTNeoXRotaryEmbedding"),
    "gpt_oss": ("gpt_oss", "GptOssRotaryEmbedding"),
    "hunyuan_v1_dense": ("hunyuan_v1_dense", "HunYuanDenseV1RotaryEmbedding"),
    "phi3": ("phi3", "Phi3RotaryEmbedding"),
    "qwen2": ("qwen2", "Qwen2RotaryEmbedding"),
    "qwen2_5_vl_text": ("qwen2_5_vl", "Qwen2_5_VLRotaryEmbedding"),
    "qwen3_vl_text": ("qwen3_vl", "Qwen3VLTextRotaryEmbedding"),
    "pixtral": ("pixtral", "PixtralVisionRotaryEmbedding"),
    "qwen2_5_vl_vision": ("qwen2_5_vl", "Qwen2_5_VLVisionRotaryEmbedding"),
    "qwen3_vl_vision": ("qwen3_vl", "Qwen3VLVisionRotaryEmbedding"),
}


def _rotary(model_type: str, config):
    import importlib

    mod, cls = ROTARY_CLASSES[model_type]
    return getattr(importlib.import_module(f"transformers.models.{mod}.modeling_{mod}"), cls)(config)


def _hf_configs(data: dict):
    """(text HF config, vision HF config or None) built in memory from a preset dict."""
    from transformers import AutoConfig

    model_type = {"hunyuan": "hunyuan_v1_dense"}.get(data["model_type"], data["model_type"])
    if model_type == "hunyuan_v1_dense":  # HF's ntk-alpha init reads config.head_dim only (None here)
        data = {**data, "head_dim": data["attention_head_dim"]}
    cfg = AutoConfig.for_model(model_type, **{k: v for k, v in data.items() if k != "model_type"})
    return getattr(cfg, "text_config", None) or cfg, getattr(cfg, "vision_config", None)


def _presets():
    """The presets of the model types above (the team's set); every preset of the corpus, whatever its family,
    is cross-checked against transformers' own modules in tests/roperef/hf/test_hf_crosscheck.py."""
    def family(path):
        data = json.loads(path.read_text())
        text = (data.get("text_config") or {}).get("model_type") or data["model_type"]
        return {"hunyuan": "hunyuan_v1_dense"}.get(text, text)
    return sorted(p for p in PRESETS.glob("*.json") if family(p) in ROTARY_CLASSES or family(p) in ("chatglm", "gptj"))


@pytest.mark.parametrize("path", _presets(), ids=lambda p: p.stem)
def test_preset_frequencies(path, record):
    _quiet()
    data = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}
    result = spec_from_config(data)
    specs = result if isinstance(result, dict) else {"": result}
    if data["model_type"] == "chatglm":
        # not in transformers: its HF-format conversion is GLM with rho 0.5 and theta 10000*rope_ratio
        from transformers import GlmConfig

        hf = GlmConfig(hidden_size=4096, num_attention_heads=32, head_dim=128, partial_rotary_factor=0.5,
                       rope_theta=10000.0 * data.get("rope_ratio", 1.0))  # ChatGLM2/3: no rope_ratio = 1
        module = _rotary("glm", hf)
        _check_freq(record, f"preset {path.stem} (as GLM-hf)", specs[""], module.inv_freq, module.attention_scaling)
        return
    if data["model_type"] == "gptj":
        from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions

        table = create_sinusoidal_positions(64, data["rotary_dim"]).to(torch.float64).numpy()
        w, _ = inv_freq(specs[""])
        p = np.arange(64)[:, None] * w
        err = np.max(np.abs(table - np.concatenate([np.sin(p), np.cos(p)], axis=1)))
        record[f"sin/cos   preset {path.stem} (abs, p<64)"] = float(err)
        assert err <= 64 * 4 * U32
        return
    text_cfg, vision_cfg = _hf_configs(data)
    for key, spec in specs.items():
        if key == "vision":
            vtype = {"pixtral": "pixtral"}.get(getattr(vision_cfg, "model_type", ""), None) or (
                "qwen2_5_vl_vision" if "qwen2_5" in data["model_type"] else "qwen3_vl_vision")
            module = _rotary(vtype, vision_cfg)
            w, s = inv_freq(spec)
            if spec.vision == "qwen_vl":  # HF keeps the D/4 frequencies once; roperef repeats them for h, w
                q = spec.head_dim // 4
                assert np.array_equal(w[:q], w[q:])
                w = w[:q]
            _check_freq(record, f"preset {path.stem} vision", spec, module.inv_freq, module.attention_scaling,
                        ref=(w, s))
            continue
        module = _rotary(text_cfg.model_type, text_cfg)
        layer = key.split(".")[-1] if key not in ("", "text") else None
        if layer in ("full_attention", "sliding_attention"):
            hf_w = getattr(module, f"{layer}_inv_freq")
            hf_s = getattr(module, f"{layer}_attention_scaling")
        else:
            hf_w, hf_s = module.inv_freq, module.attention_scaling
        _check_freq(record, f"preset {path.stem} {key}".rstrip(), spec, hf_w, hf_s)


# ----------------------------------------------------------------------------- 2. apply functions

B, T, H = 2, 9, 3


def _positions(rng, batch=B, seq=T):
    start = rng.integers(0, 4096 - seq, size=(batch, 1))
    return (start + np.arange(seq)[None]).astype(np.int64)


def _angles64(spec, rows):
    w, s = inv_freq(spec, 4096)
    return rows[..., None].astype(np.float64) * w, s


def _compare(record, key, y_hf, x, positions, spec, seq_len=4096):
    ref = forward(x, positions, spec, seq_len=seq_len)
    y = y_hf.detach().to(torch.float64).numpy()
    rel = float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))
    record[f"apply     {key}"] = rel
    assert rel <= 1e-6, (key, rel)
    # the test can fail: a wrong pairing is far off
    assert np.max(np.abs(ref - x)) > 1e-3


def _x(rng, d, batch=B, seq=T):
    return rng.standard_normal((batch, seq, H, d))


def test_apply_llama_half(record):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    rng = np.random.default_rng(1)
    for name, cfg in {
        "llama (llama3)": json.loads((PRESETS / "llama-3.1-8b.json").read_text()) if PRESETS.is_dir() else None,
        "llama (yarn s!=1)": {"model_type": "llama", **LLAMA, "rope_scaling": INIT_CASES["yarn"][0]},
        "llama (proportional)": {"model_type": "llama", **LLAMA, "rope_parameters": INIT_CASES["proportional"][0]},
    }.items():
        if cfg is None:
            continue
        spec = spec_from_config(cfg)
        pos = _positions(rng)
        phi, s = _angles64(spec, pos)
        emb = torch.from_numpy(np.concatenate([phi, phi], -1))
        x = _x(rng, spec.head_dim)
        q, _ = apply_rotary_pos_emb(torch.from_numpy(x), torch.from_numpy(x), emb.cos() * s, emb.sin() * s,
                                    unsqueeze_dim=2)
        _compare(record, name, q, x, pos, spec)


def test_apply_gptj(record):
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb

    rng = np.random.default_rng(2)
    spec = spec_from_config({"model_type": "gptj", "n_embd": 1024, "n_head": 8, "rotary_dim": 64})
    pos = _positions(rng)
    phi, _ = _angles64(spec, pos)
    x = _x(rng, spec.head_dim)
    xt = torch.from_numpy(x)
    rot = apply_rotary_pos_emb(xt[..., :64], torch.from_numpy(np.sin(phi)), torch.from_numpy(np.cos(phi)))
    _compare(record, "gptj (adjacent, rotary_dim 64 of 128)", torch.cat([rot, xt[..., 64:]], -1), x, pos, spec)


def _apply_qk_bhsd(fn, x, cos, sin):
    """Apply an HF ``(q, k, cos, sin, unsqueeze_dim=1)`` function on [B,H,S,D] and return [B,S,H,D]."""
    q = torch.from_numpy(x).transpose(1, 2)
    out, _ = fn(q, q, cos, sin)
    return out.transpose(1, 2)


def test_apply_glm_partial_adjacent(record):
    from transformers.models.glm.modeling_glm import apply_rotary_pos_emb

    rng = np.random.default_rng(3)
    spec = spec_from_config({"model_type": "glm", "head_dim": 128, "rope_theta": 1e4})  # rho 0.5 default
    assert (spec.rotary_dim, spec.pairing) == (64, "adjacent")
    pos = _positions(rng)
    phi, s = _angles64(spec, pos)
    emb = torch.from_numpy(np.concatenate([phi, phi], -1))
    x = _x(rng, 128)
    _compare(record, "glm (adjacent, partial 0.5)", _apply_qk_bhsd(apply_rotary_pos_emb, x, emb.cos(), emb.sin()),
             x, pos, spec)


def test_apply_cohere_adjacent(record):
    from transformers.models.cohere.modeling_cohere import apply_rotary_pos_emb

    rng = np.random.default_rng(4)
    spec = spec_from_config({"model_type": "cohere", "hidden_size": 1024, "num_attention_heads": 8})
    pos = _positions(rng)
    phi, _ = _angles64(spec, pos)
    emb = torch.from_numpy(np.repeat(phi, 2, axis=-1))  # Cohere's repeat_interleave tables
    x = _x(rng, 128)
    _compare(record, "cohere (adjacent)", _apply_qk_bhsd(apply_rotary_pos_emb, x, emb.cos(), emb.sin()),
             x, pos, spec)


def _mrope_rows(rng):
    t = _positions(rng)
    return np.stack([t, t // 3 + rng.integers(0, 50, size=t.shape), t % 7 + rng.integers(0, 50, size=t.shape)])


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen3_vl", "glm4v"])
def test_apply_mrope(family, record):
    _quiet()
    rng = np.random.default_rng(5)
    if family == "qwen2_vl":
        from transformers import Qwen2VLTextConfig as Cfg
        from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding as Rot
        from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb as fn

        raw = dict(hidden_size=1536, num_attention_heads=12, rope_theta=1e6,
                   rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]})
    elif family == "qwen3_vl":
        from transformers import Qwen3VLTextConfig as Cfg
        from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding as Rot
        from transformers.models.qwen3_vl.modeling_qwen3_vl import apply_rotary_pos_emb as fn

        raw = dict(hidden_size=2048, num_attention_heads=16, head_dim=128, rope_parameters={
            "rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20], "mrope_interleaved": True})
    else:
        from transformers import Glm4vTextConfig as Cfg
        from transformers.models.glm4v.modeling_glm4v import Glm4vTextRotaryEmbedding as Rot
        from transformers.models.glm4v.modeling_glm4v import apply_rotary_pos_emb as fn

        # GLM-4.1V checkpoints give partial_rotary_factor 0.5 (Glm4vTextConfig has no default for it, and the
        # 8+12+12 section covers half of the 128-wide head)
        raw = dict(hidden_size=4096, num_attention_heads=32, rope_parameters={
            "rope_type": "default", "rope_theta": 1e4, "mrope_section": [8, 12, 12], "partial_rotary_factor": 0.5})
    model_type = {"qwen2_vl": "qwen2_vl_text", "qwen3_vl": "qwen3_vl_text", "glm4v": "glm4v_text"}[family]
    spec = spec_from_config({"model_type": model_type, **json.loads(json.dumps(raw))})
    module = Rot(Cfg(**json.loads(json.dumps(raw))))
    rows = _mrope_rows(rng)
    phi, s = _angles64(spec, rows)  # [3, B, T, n]
    cos = module.recomposition_frequencies(torch.from_numpy(np.cos(phi) * s))
    sin = module.recomposition_frequencies(torch.from_numpy(np.sin(phi) * s))
    x = _x(rng, spec.head_dim)
    _compare(record, f"{family} mRoPE ({spec.mrope_layout}, {spec.pairing})",
             _apply_qk_bhsd(fn, x, cos, sin), x, rows, spec)


def test_apply_deepseek(record):
    from transformers.models.deepseek_v2.modeling_deepseek_v2 import apply_rotary_emb
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import apply_rotary_pos_emb_interleave

    rng = np.random.default_rng(6)
    base = {"hidden_size": 2048, "num_attention_heads": 16, "qk_rope_head_dim": 64, "max_position_embeddings": 163840,
            "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                             "mscale": 1.0, "mscale_all_dim": 0.5, "beta_fast": 32, "beta_slow": 1}}
    v3 = spec_from_config({"model_type": "deepseek_v3", **base})
    pos = _positions(rng)
    phi, s = _angles64(v3, pos)
    emb = torch.from_numpy(np.concatenate([phi, phi], -1))
    x = _x(rng, 64)
    _compare(record, "deepseek_v3 interleave (adjacent_in_half_out, yarn)",
             _apply_qk_bhsd(apply_rotary_pos_emb_interleave, x, emb.cos() * s, emb.sin() * s), x, pos, v3)
    v2 = spec_from_config({"model_type": "deepseek_v2", **base})
    freqs_cis = torch.polar(torch.ones_like(torch.from_numpy(phi)), torch.from_numpy(phi)) * s
    q = torch.from_numpy(x).transpose(1, 2)
    out, _ = apply_rotary_emb(q, q, freqs_cis)  # HF casts q to float32 here: ~1e-7 relative
    _compare(record, "deepseek_v2 complex (adjacent, yarn)", out.transpose(1, 2), x, pos, v2)


def _grid(rng, n=40):
    return np.stack([rng.integers(0, 64, n), rng.integers(0, 64, n)], axis=-1).astype(np.int64)


def test_apply_vision(record):
    _quiet()
    from transformers import PixtralVisionConfig, Qwen2_5_VLConfig, Qwen3VLConfig
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding
    from transformers.models.pixtral.modeling_pixtral import apply_rotary_pos_emb as pixtral_apply
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLVisionRotaryEmbedding
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import apply_rotary_pos_emb_vision as q25_apply
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionRotaryEmbedding
    from transformers.models.qwen3_vl.modeling_qwen3_vl import apply_rotary_pos_emb_vision as q3_apply

    rng = np.random.default_rng(7)
    grid = _grid(rng)
    # Pixtral: positions [N, 2]; tables [N, D] from the module's recomposition of [N, 2, D/2] angles.
    vcfg = {"model_type": "pixtral", "hidden_size": 1024, "num_attention_heads": 16, "rope_theta": 1e4}
    spec = spec_from_config({"model_type": "llava", "text_config": {"model_type": "mistral", "head_dim": 128,
                                                                    "rope_theta": 1e9},
                             "vision_config": vcfg})["vision"]
    module = PixtralVisionRotaryEmbedding(PixtralVisionConfig(hidden_size=1024, num_attention_heads=16))
    w_full = inv_freq(spec.replace(vision=None))[0]  # theta^(-2k/D), D/2 of them
    w2d = np.concatenate([w_full[0::2], w_full[1::2]])
    phi = grid[:, :, None].astype(np.float64) * w2d  # [N, 2, D/2], as HF's forward
    cos = module.recomposition_frequencies(torch.from_numpy(np.cos(phi)))
    sin = module.recomposition_frequencies(torch.from_numpy(np.sin(phi)))
    x = rng.standard_normal((grid.shape[0], H, 64))
    q = torch.from_numpy(x).transpose(0, 1)[None]  # [1, H, N, D]
    out, _ = pixtral_apply(q, q, cos[None], sin[None], unsqueeze_dim=1)
    _compare(record, "pixtral vision 2-D", out[0].transpose(0, 1), x, grid, spec)
    # Qwen2.5-VL / Qwen3-VL vision: [N, H, D] with [N, D] tables; HF computes q in float32 here.
    for name, cfg_cls, rot_cls, fn, vision in (
        ("qwen2_5_vl vision 2-D", Qwen2_5_VLConfig, Qwen2_5_VLVisionRotaryEmbedding, q25_apply,
         {"hidden_size": 1280, "num_heads": 16}),
        ("qwen3_vl vision 2-D", Qwen3VLConfig, Qwen3VLVisionRotaryEmbedding, q3_apply,
         {"hidden_size": 1152, "num_heads": 16}),
    ):
        mt = "qwen2_5_vl" if "2_5" in name else "qwen3_vl"
        spec = spec_from_config({"model_type": mt, "hidden_size": 2048, "num_attention_heads": 16,
                                 "vision_config": vision})["vision"]
        module = rot_cls(cfg_cls(vision_config=vision).vision_config)
        quarter = spec.head_dim // 4
        w = inv_freq(spec)[0][:quarter]
        phi = grid[:, :, None].astype(np.float64) * w  # [N, 2, D/4]
        cos = module.recomposition_frequencies(torch.from_numpy(np.cos(phi)))
        sin = module.recomposition_frequencies(torch.from_numpy(np.sin(phi)))
        x = rng.standard_normal((grid.shape[0], H, spec.head_dim))
        out, _ = fn(torch.from_numpy(x), torch.from_numpy(x), cos, sin)
        _compare(record, name, out, x, grid, spec)


def test_partial_rotary_quirk_matches_transformers_source():
    """HFQuirks.default_honours_partial_rotary == the models whose default init reads rho (installed source)."""
    import importlib
    import inspect

    from roperef.hf import HFQuirks

    def reads_rho(model: str) -> bool | None:
        try:
            mod = importlib.import_module(f"transformers.models.{model}.modeling_{model}")
        except ImportError:
            return None
        found = [cls for cls in vars(mod).values() if inspect.isclass(cls) and cls.__module__ == mod.__name__
                 and "compute_default_rope_parameters" in vars(cls)]
        if not found:
            return None
        return any("partial_rotary_factor" in inspect.getsource(c.compute_default_rope_parameters) for c in found)

    honour = HFQuirks().default_honours_partial_rotary
    checked = 0
    for model in sorted(honour):
        got = reads_rho(model)
        if got is not None:
            assert got, model
            checked += 1
    assert checked >= 15
    for model in ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "llama4", "deepseek_v2",
                  "deepseek_v3", "cohere", "gpt_oss", "qwen2_vl", "qwen3_vl", "hunyuan_v1_dense"):
        assert model not in honour
        assert reads_rho(model) is False, model
