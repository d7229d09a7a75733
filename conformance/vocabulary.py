"""The words a case is described with, in one place: stages and their arrays, families, dtypes,
tiers, flags and features.

Every record of a case (:class:`conformance.cases.case.GoldenCase`, :class:`conformance.cases.case.CaseRecipe`,
a golden manifest entry, a user's ``case.json``) takes its field values from these closed sets and
is checked against them by one function, :func:`conformance.cases.case.check_case_fields`. Scaling
types and pairings are the spec's words: :data:`roperef.spec.SCALING_TYPES` and
:data:`roperef.spec.PAIRINGS` (the catalogue covers every one of them). Position regimes belong
to :mod:`conformance.cases.positions`.

Stages and their arrays (``cu_seqlens`` optional, packed thd cases only):

===========  ===================================  ===========================
stage        inputs                               expected outputs (float64)
===========  ===================================  ===========================
inv_freq     seq_len (int64, 0-d)                 inv_freq [n], attention_factor (0-d)
cos_sin      positions (int64)                    cos, sin [..., n] (attention factor folded in)
apply        x, cos, sin                          y
forward      x, positions[, cu_seqlens]           y
backward     grad, positions[, cu_seqlens]        grad_x
===========  ===================================  ===========================

A case with a call form (:mod:`conformance.cases.form`: a memory layout, in place, q with k)
has the same arrays; a q+k case adds k's input and expected output (:data:`QK_ARRAYS`).

Reference arrays (:data:`REFERENCE_ARRAYS`) are what the expected outputs were computed with
(see :mod:`conformance.cases.case`).

This module is a leaf: it imports nothing from roperef or conformance.
"""

from __future__ import annotations

__all__ = [
    "STAGES",
    "FAMILIES",
    "DTYPES",
    "TIERS",
    "USER_TIER",
    "CASE_TIERS",
    "STAGE_INPUTS",
    "OPTIONAL_INPUTS",
    "REFERENCE_ARRAYS",
    "STAGE_OUTPUTS",
    "FLAGS",
    "FEATURES",
    "LAYOUTS",
    "CALL_FORMS",
    "QK_SHAPES",
    "QK_ARRAYS",
]

STAGES = ("inv_freq", "cos_sin", "apply", "forward", "backward")
#: the report families (the first component of a catalogue case id, except ``long/`` rows)
FAMILIES = ("freq", "table", "apply", "forward", "mrope", "vision2d", "backward", "model")
DTYPES = ("float64", "float32", "float16", "bfloat16")
#: the catalogue's tiers: ``smoke`` (checked in under golden/) and ``full`` (generated on demand)
TIERS = ("smoke", "full")
#: the tier of a user's own cases (docs/user-cases.md): their ids and flags are the user's own words
USER_TIER = "user"
#: every tier a case may carry
CASE_TIERS = TIERS + (USER_TIER,)

STAGE_INPUTS: dict[str, tuple[str, ...]] = {
    "inv_freq": ("seq_len",),
    "cos_sin": ("positions",),
    "apply": ("x", "cos", "sin"),
    "forward": ("x", "positions"),
    "backward": ("grad", "positions"),
}
OPTIONAL_INPUTS: dict[str, tuple[str, ...]] = {"forward": ("cu_seqlens",), "backward": ("cu_seqlens",)}
#: What the expected outputs were computed with (stored in golden files for every stage but inv_freq).
REFERENCE_ARRAYS: dict[str, tuple[str, ...]] = {
    "cos_sin": ("inv_freq", "attention_factor", "pair_axis"),
    "apply": ("inv_freq", "attention_factor", "pair_axis", "table_positions"),
    "forward": ("inv_freq", "attention_factor", "pair_axis"),
    "backward": ("inv_freq", "attention_factor", "pair_axis"),
}
STAGE_OUTPUTS: dict[str, tuple[str, ...]] = {
    "inv_freq": ("inv_freq", "attention_factor"),
    "cos_sin": ("cos", "sin"),
    "apply": ("y",),
    "forward": ("y",),
    "backward": ("grad_x",),
}

#: What a case is designed to expose (the flags of every case but a user's come from here).
FLAGS: dict[str, str] = {
    "odd-position": "odd positions >= 1 (round positions hide low-precision position bugs)",
    "long-position": "positions up to 2^20 or near 2^31 (angle precision, fp32/bf16 angle bugs)",
    "offset": "rows or sequences start at different offsets (offsets ignored, only row 0 rotated)",
    "negative-offset": "negative positions (unsigned or clamped position handling)",
    "varlen": "packed [tokens, heads, dim] with cu_seqlens, >= 5 ragged sequences incl. length 1",
    "decode-b>1-t1": "decode step: T = 1, B > 1, a different position per row",
    "partial": "rotary width < head dim (wrong rotary slice)",
    "window-last": "rotary window at the end of the head (window at the wrong end)",
    "odd-width": "odd exponent denominator d (rotary width 2*ceil(d/2); wrong denominator)",
    "boundary": "a parameter boundary: seq_len = L0 / L0+1, dynamic at M / 2M, band edges, 2^31",
    "attention-factor": "attention factor s != 1 (dropped or squared factor)",
    "pairing-order": "adjacent-in, half-out output order (DeepSeek V3 rope_interleave)",
    "text-image": "mRoPE text + image position ids (wrong row per frequency)",
    "text-only": "mRoPE with three equal rows: must equal plain RoPE",
    "mrope-chunked": "mRoPE chunked sections (Qwen2/2.5-VL, GLM-4V)",
    "mrope-interleaved": "mRoPE interleaved sections (Qwen3-VL)",
    "vision-2d": "2-D axial vision RoPE (Qwen-VL or Pixtral)",
    "large-scale": "inputs scaled up (|x| ~ 1e3)",
    "small-scale": "inputs scaled down (|x| ~ 1e-3)",
    "zeros": "exact zeros in the input, including a whole pair",
    "model": "a real model's config through roperef.hf, its real head dim",
    "generated": "generated in memory for the backend's interface (conformance.generated.plan), not a golden case",
    "shape-sweep": "tokens, heads, batch rows and pair counts at tile boundaries (conformance.generated.shapes)",
    "zero-size": "an empty input (no batch row, token or head): the output must be empty, not a crash",
    "rows>4096": "more than 4096 token rows (batch rows x tokens)",
    "strided": "x (q, k) passed as a view with a memory layout of LAYOUTS, guard memory around it",
    "in-place": "the backend's in-place method rotates x (q, k) in its own memory",
    "q-k": "q and k rotated by one call, possibly with different head counts or head dims",
}

#: Features a case may need from a backend (see :func:`conformance.cases.case.case_features`).
FEATURES = (
    "partial",  # rotary_dim < head_dim, window at the start
    "window_last",  # rotary_start > 0
    "odd_freq_dim",  # exponent denominator != rotary width
    "varlen",  # packed thd with cu_seqlens
    "mrope_chunked",
    "mrope_interleaved",
    "vision_qwen_vl",
    "vision_pixtral",
    "negative_positions",
    "per_batch_positions",  # positions differ between batch rows
    "sparse_positions",  # positions of a row are not p0 + arange(T)
    "zero_size",  # an empty input: no batch row, no token or no head (the output is empty)
)

#: Memory layouts of x (q, k) a backend may accept besides a fresh C-contiguous array
#: (``Capabilities.layouts``; :mod:`conformance.calls.memory` builds them, with guard memory):
LAYOUTS: dict[str, str] = {
    "qkv": "a strided view into a fused buffer [..., Hq + 2*Hk, D]: q, k, v slices side by side (vLLM, flash-attn)",
    "bhtd": "the transpose of a [B, H, T(+pad), D] buffer ([H, N(+pad), D] packed): token stride D, padding after the tokens",
    "fortran": "Fortran (column-major) order: the first axis varies fastest",
    "offset": "C-contiguous, but starting one element past the buffer's base address (misaligned), guards on both sides",
}

#: Ways a backend may be called besides ``stage(x, ...) -> y`` (``Capabilities.call_forms``; the method
#: is the stage name with a suffix: ``forward_``, ``forward_qk``, ``forward_qk_``, ...):
CALL_FORMS: dict[str, str] = {
    "inplace": "stage_(x, ...): rotates x in place (its return value is ignored)",
    "qk": "stage_qk(q, k, ...) -> (q_out, k_out): q and k in one call",
    "qk_inplace": "stage_qk_(q, k, ...): rotates q and k in place (flash-attn inplace=True, vLLM rotary_embedding)",
}

#: The arrays of k in a q+k case (input, expected output): the stage's tensor names with a ``k_`` prefix.
QK_ARRAYS: dict[str, tuple[str, str]] = {
    "apply": ("k_x", "k_y"),
    "forward": ("k_x", "k_y"),
    "backward": ("k_grad", "k_grad_x"),
}

#: How k may differ from q in a q+k call (``Capabilities.qk_shapes``; equal shapes are always judged):
QK_SHAPES: dict[str, str] = {
    "gqa": "k has fewer heads than q, dividing them (grouped-query attention)",
    "mqa": "k has one head (multi-query attention)",
    "head_dims": "k has its own head dim: q rotates its last r channels, k is the r-channel rope part (MLA)",
}
