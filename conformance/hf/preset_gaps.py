"""Model types of transformers 5.24 with RoPE that ``conformance/presets`` has no real published config for,
each with the reason (read by :mod:`conformance.hf.preset_coverage`; ``tests/roperef/hf/test_hf_configs.py`` keeps it
exact: a listed type that gains a preset, or an uncovered type missing here, fails).

Every model type listed here is still cross-checked through transformers' own default config
(``tests/roperef/hf/test_hf_crosscheck.py``); a gap means only that no published checkpoint config was found in the
sources searched, never that the type is unread. Searched for each (sessions of 2026-11-30): ``find_string``
on ``"model_type": "<type>"``, the architecture class name and the checkpoint id named in transformers'
configuration docstring; code search on the model card and config text; the vendoring repositories
ai-dynamo/aiconfigurator, sdpython/onnx-diagnostic, mlc-ai/mlc-llm, lablup/mlxcel, NVIDIA/TensorRT-LLM,
onnxruntime/mobius, NVIDIA-NeMo/Megatron-Bridge, alibaba/rtp-llm, pd95/ollama; path guesses for GitHub
mirrors of hub repositories. A copy is rejected when it is a test fixture, built by code, reduced in a
RoPE key, or when its repository cannot be named (a preset must say where its text was read).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_NONE = "no published config found: only test fixtures, registries and configs built by code"
_ZERO = "no published config found: no hit for the model type or its architecture in the searched sources"


def _sub(parent: str) -> str:
    return f"a sub-config of {parent}; no published {parent} config found in the searched sources"


def _uncited(what: str) -> str:
    return f"{what}; its repository could not be named, so it cannot be cited"


GAPS: Mapping[str, str] = MappingProxyType({
    "EvollaModel": _ZERO,
    "evolla": _ZERO,
    "arcee": _NONE,
    "aria_text": _sub("aria (rhymes-ai/Aria)"),
    "axk1": _ZERO,
    "axk2": _NONE + " (a vLLM test builds AXK2Config in code)",
    "bamba": "only converters and reduced dicts without the RoPE keys (attn_rotary_emb, attn_layer_indices)",
    "beam": _ZERO,
    "blt_global_transformer": _sub("blt (BLT-1B)"),
    "blt_local_decoder": _sub("blt (BLT-1B)"),
    "blt_local_encoder": _sub("blt (BLT-1B)"),
    "blt_patcher": _sub("blt (BLT-1B)"),
    "chameleon": _NONE,
    "cohere2": "only tiny synthetic test configs (TensorRT-LLM, mlxcel) and tables with renamed keys",
    "cohere2_moe": "only expected-value subsets and comprehension-built test dicts of North-Mini-Code-1.0",
    "cosmos3_edge_text": _NONE + " (mobius builds it in code)",
    "csm": "a reduced copy without the RoPE keys, and code",
    "csm_depth_decoder_model": _sub("csm (sesame/csm-1b)"),
    "cwm": _NONE,
    "deepseek_ocr2_encoder": _sub("deepseek_ocr2"),
    "deepseek_ocr2_text": "a hand-reconstructed test dict without provenance (rejected)",
    "dia_decoder": _sub("dia (nari-labs/Dia-1.6B)"),
    "dia_encoder": _sub("dia (nari-labs/Dia-1.6B)"),
    "diffllama": _NONE,
    "doge": _NONE,
    "dory": _ZERO,
    "dots3_note_text": _sub("dots3_note") + " (geometry checks only)",
    "embedding_gemma2_text": _sub("embedding_gemma2"),
    "emu3_text_model": "only BAAI/Emu3's remote-code format, pasted into scripts without a repository",
    "esm": "(RoPE only with position_embedding_type 'rotary', issue 24) only test fixtures and keras-hub-style "
           "dicts found for ESM-2 (find_string on the rotary key and the model type)",
    "esmc": _ZERO,
    "eurobert": _NONE,
    "exaone": _uncited("a markdown printout of EXAONE-3.0-7.8B-Instruct's ExaoneConfig (not config.json text)"),
    "iquestcoder": _NONE + " (one comment quoting the model type)",
    "sarvam_mla": _NONE + " (tests writing a one-key config)",
    "sarvam_moe": _NONE + " (tests naming the model type only)",
    "flex_olmo": _NONE + " (mobius names the model id only)",
    "flint": _ZERO,
    "gemma3n_text": "fixtures, and one config whose numbers match no released checkpoint (rejected)",
    "gemma4_unified_text": "fixtures and a truncated layer_types list (rejected)",
    "glm": _uncited("a reduced glm-4-9b-chat-hf config quoted in a C++ test"),
    "glm4": _NONE,
    "glmasr_encoder": _sub("glmasr (zai-org/GLM-ASR-Nano-2512)") + "; unit tests with made-up values only",
    "gpt_neox_japanese": _NONE,
    "gradium_phonon_tts": _ZERO,
    "granite4_vision_text": _uncited("a probe script quoting ibm-granite/granite-4.0-3b-vision's config (older layout: "
                                     "text_config granitemoehybrid)"),
    "granite_docling_text": _ZERO,
    "granitemoe": "fixtures and a validator's expected-values dict only",
    "granitemoe_swa": "an expected-values dict without rope_theta or layer_types, and fixtures",
    "granitemoeshared": _NONE,
    "gte": "fixtures, a trimmed reranker dict without RoPE keys",
    "hrm_text": _uncited("an agent log printing sapientinc/HRM-Text-1B's config.json"),
    "hunyuan_v1_dense": _uncited("Hunyuan-MT / Hy-MT2-7B config.json quoted in a Swift test and an agent log"),
    "hunyuan_v1_moe": "fixtures and partial dicts without the RoPE keys",
    "hy_v3": "fixtures and one partial signature; Tencent-Hunyuan/Hy3 holds no config.json",
    "hy_v4": "Tencent-Hunyuan/Hy4-preview holds fine-tuning scripts only",
    "hy_v4_vl_text": _sub("hy_v4_vl"),
    "hyperclovax": _NONE,
    "idefics": _NONE + " (onnx-diagnostic holds only a tiny random idefics)",
    "jais2": _NONE,
    "jetmoe": _NONE + " (myshell-ai/JetMoE holds no config.json)",
    "jina_embeddings_v3": _NONE,
    "kolibri1": _uncited("a Zig test quoting Kolibri-1's config with keys left out"),
    "kyutai_speech_to_text": _NONE,
    "lara_mini": _ZERO,
    "lasr_encoder": _sub("lasr (google/medasr)") + "; fixtures built by code only",
    "lfm3": _NONE,
    "longcat_flash": "tiny fixtures and one partial snippet",
    "mimi": "tiny fixtures and 4-key codec sub-configs; kyutai-labs/moshi holds its native (non-HF) configs",
    "mimi_decoder": _sub("mimi (kyutai/mimi)"),
    "mimi_encoder": _sub("mimi (kyutai/mimi)"),
    "minimax": _NONE + " (a tiny legacy minimax_text_01 test config)",
    "minimax_m3_vl_text": "fixtures and trimmed text_configs (the MiniMax-M3 text configs are presets as minimax_m3)",
    "ministral": "fixtures, and a Devstral dict without RoPE keys",
    "mistral4": "fixtures and converter code building the config from params.json",
    "mistral_large4_text": "only a 3-key test dict quoting the model type",
    "modernbert": "fixtures with ModernBERT-base values, partial or tiny",
    "modernbert-decoder": _ZERO,
    "molmo2_text": _sub("molmo2") + "; tiny fixtures only",
    "moonshine": _uncited("a moonshine-base-shaped test dict") + "; the only path copy is a Git LFS pointer",
    "moonshine_streaming": "fixtures and a partial markdown quote",
    "moshi": "Kyutai's native configs, fixtures and converter code",
    "muse_glimmer_assistant": _sub("muse_glimmer"),
    "muse_glimmer_text": "fixtures, and a trimmed flat config in a vLLM test without provenance",
    "muse_spark_text": _ZERO,
    "nemotron3_5_transcribe_asr_audio": _ZERO,
    "nemotron3_5_transcribe_word_timestamp": _ZERO,
    "nemotron3_diarization_audio": "fixtures and export metadata only",
    "neomme": _ZERO,
    "neucodec": _ZERO,
    "nomic_bert": "partial dicts and fixtures only",
    "olmo": _uncited("partial copies of allenai/OLMo-1B-hf in Rust tests"),
    "olmo3": "fixtures, reduced test dicts and the RoPE block quoted alone",
    "olmo_hybrid": _NONE,
    "olmoe": "a 'sample' OLMoE-1B-7B dict that differs from the hub file and a reduced 2-layer copy (rejected)",
    "openai_privacy_filter": "guards and fixtures quoting a few keys; a model card without the config text",
    "paddleocr_vl_text": _uncited("a 'subset of the 1.5 config'"),
    "persimmon": _uncited("a markdown snapshot with re-ordered keys and no partial_rotary_factor (also rejected)"),
    "phi4_multimodal": "the hub config is remote-code phi4mm; no verbatim copy found",
    "phimoe": "copies with the longrope factor lists cut to 8 entries (rejected)",
    "pocket_tts": "a Swift test mirroring the structure of an MLX copy (rejected)",
    "qwen2_5_omni_talker": "the talker sub-config of qwen2.5-omni-7b is in the corpus, but roperef does not model "
                           "the speech talker's RoPE (said in a note)",
    "qwen3_omni_moe_talker_code_predictor": _sub("qwen3_omni_moe (Qwen3-Omni-30B-A3B)"),
    "qwen3_omni_moe_talker_text": _sub("qwen3_omni_moe (Qwen3-Omni-30B-A3B)"),
    "qwen3_omni_moe_text": _sub("qwen3_omni_moe (Qwen3-Omni-30B-A3B)"),
    "qwen4_exp_text": "copies written out by hand, reduced to 4 layers or built by code (rejected)",
    "solar_open": "a generated summary of upstage/Solar-Open-100B without head_dim (rejected)",
    "t5gemma2_decoder": _sub("t5gemma2") + "; only a printed T5Gemma2Config repr",
    "t5gemma2_text": "only a printed T5Gemma2Config repr (not config.json text), repository not named",
    "timesfm2_5": _ZERO,
    "ultrabert": _ZERO,
    "unlimited_ocr_text": "the published baidu/Unlimited-OCR config says model_type 'unlimited-ocr' (remote code, "
                          "language_config) and names only its remote classes (UnlimitedOCRForCausalLM), so "
                          "transformers 5.24 does not map it to unlimited_ocr; roperef refuses it (pairing missing; "
                          "tests/data/refused_configs/unlimited-ocr.json)",
    "vaultgemma": "a partial keras-hub converter dict; the vaultgemma repositories hold no config",
    "voxtral_realtime_encoder": _sub("voxtral_realtime (Voxtral-Mini-4B-Realtime-2602)"),
    "voxtral_realtime_text": "a reduced Rust copy without any RoPE key (rejected)",
    "xcodec2": _ZERO,
    "youtu": _uncited("a Swift test slice and a plan document, both partial"),
    "zaya": _uncited("a truncated ZAYA1-8B config in an agent log"),
    "zamba2": "(RoPE only with use_mem_rope true, issue 24) a Zamba2-7B config.json transcribed into NX-AI/mlstm_kernels' "
              "benchmark registry is in tests/data/hf_real_configs/zamba2-7b.json, not a preset (its spec would add "
              "a golden model case)",
})
