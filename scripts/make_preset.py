"""Cut a preset for ``conformance/presets`` out of a real published ``config.json``.

    python scripts/make_preset.py CONFIG.json --id ORG/NAME --source REPO:PATH@COMMIT \\
        [--notes "..."] --out conformance/presets/NAME.json

Keeps the RoPE-relevant keys (:data:`KEEP`, matched by name, also inside ``text_config`` /
``vision_config``) exactly as published (same spelling, same values, same order) and adds
``_hf_model_id``, ``_source`` and ``_notes``. Nothing is computed or edited: a preset is a fact.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

#: Key names (regular expressions, full match) that can change a model's RoPE or say where it applies.
KEEP = [
    r"model_type", r"hidden_size", r"num_attention_heads", r"num_heads", r"num_key_value_heads", r"head_dim",
    r"\w*_head_dim", r"qk_\w+", r"kv_channels", r"attention_head_dim", r"embed_dim", r"n_embd", r"n_head",
    r"n_positions", r"n_layer", r"num_hidden_layers", r"num_layers", r"max_position_embeddings",
    r"original_max_position_embeddings", r"seq_length", r"rope\w*", r"\w*rope\w*", r"rotary\w*",
    r"partial_rotary_factor", r"position_embedding_type", r"alibi", r"layer_types", r"sliding_window\w*",
    r"attention_chunk_size", r"hybrid\w*", r"layers_block_type", r"attn_layer_\w+", r"block_types",
    r"swa_\w+", r"compress\w*", r"use_dynamic_ntk", r"use_logn_attn", r"global_head_dim",
    r"full_attn_idxs", r"attn_type_list", r"mrope\w*", r"linear_attn_config", r"llama_4_scaling_beta",
    r"index_\w+", r"indexer_\w+", r"layer_type\w*", r"mla_\w+",
    # keys a family's config class turns into layer types / per-layer RoPE (docs/hf-configs.md)
    r"full_attention_interval", r"global_attn_every_n_layers", r"layer_group_size", r"cross_attention_layers",
    r"partial_rotary_factors", r"num_nextn_predict_layers", r"yarn_only_types", r"attention_other_setting",
    r"no_rope\w*", r"use_rope\w*", r"training_seqlen", r"use_sliding_window", r"max_window_layers", r"layer_rope_theta",
    r"first_k_dense_replace", r"mlp_layer_types", r"prefix_dense_sliding_window_pattern", r"full_attn_idxs", r"_?block_types",
    # other spellings of the width / layer keys (each config class's attribute_map)
    r"d_model", r"n_heads", r"n_layers", r"max_seq_len", r"attn_config", r"decoder_\w+", r"encoder_\w+",
    # the classes a config names: the family of a model type transformers does not ship, and remote code (issue 24)
    r"architectures", r"auto_map",
]
_KEEP = re.compile("|".join(f"(?:{k})" for k in KEEP))


def cut(config: dict[str, Any]) -> dict[str, Any]:
    """The RoPE-relevant part of ``config`` (sub-configs ``text_config`` / ``vision_config`` likewise)."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in ("text_config", "vision_config") and isinstance(value, dict):
            out[key] = cut(value)
        elif _KEEP.fullmatch(key):
            out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config", type=Path)
    p.add_argument("--id", required=True, help="the Hugging Face model id, e.g. meta-llama/Llama-3.1-8B")
    p.add_argument("--source", required=True, help="where the config text was read: repository:path@commit")
    p.add_argument("--notes", default="", help="caveats (partial copy, stand-in, ...)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    preset = cut(json.loads(args.config.read_text()))
    preset["_hf_model_id"] = args.id
    preset["_source"] = args.source
    if args.notes:
        preset["_notes"] = args.notes
    args.out.write_text(json.dumps(preset, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({len(preset) - 3} keys)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
