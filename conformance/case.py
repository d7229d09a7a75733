"""The record every part of the judge shares: a golden case, loaded or computed in memory.

A case is one stage of the RoPE pipeline run on fixed inputs. Its arrays hold the
inputs the backend receives and the float64 expected outputs; low-precision inputs
are rounded to the case dtype and stored *exactly* as float64 (so any language can
read them); :meth:`GoldenCase.input_as` gives them back in the case dtype.

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

Forward-like stages use ``seq_len = max(position) + 1`` (the protocol default).

Reference arrays (:data:`REFERENCE_ARRAYS`, every golden case of a stage other than
``inv_freq``; optional for cases built in memory): ``inv_freq`` float64 ``[n]`` and
``attention_factor`` (0-d) the case was computed with (at that ``seq_len``), and
``pair_axis`` int64 ``[n]``, the row of the positions that drives each pair (0 for plain
positions; t, h, w = 0, 1, 2 for mRoPE; h, w = 0, 1 for 2-D vision); ``apply`` cases also
keep ``table_positions``, the positions their given tables were computed at. They are neither
inputs nor outputs: a reader in another language feeds them to its kernel to separate
"my inv_freq is off" from "my rotation is off".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from roperef.errors import bad
from roperef.spec import RopeSpec

__all__ = [
    "STAGES",
    "FAMILIES",
    "DTYPES",
    "TIERS",
    "STAGE_INPUTS",
    "STAGE_OUTPUTS",
    "OPTIONAL_INPUTS",
    "REFERENCE_ARRAYS",
    "GoldenCase",
    "case_features",
    "numpy_dtype",
]

STAGES = ("inv_freq", "cos_sin", "apply", "forward", "backward")
FAMILIES = ("freq", "table", "apply", "forward", "mrope", "vision2d", "backward", "model")
DTYPES = ("float64", "float32", "float16", "bfloat16")
TIERS = ("smoke", "full")

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

#: Features a case may need from a backend (see :func:`case_features`).
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
)


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a case dtype name (bfloat16 through ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if name not in DTYPES:
        bad("dtype", name, f"expected one of {', '.join(DTYPES)}")
    return np.dtype(name)


@dataclass(frozen=True)
class GoldenCase:
    """One case: id (also its filter and report key), spec, dtype, tier, flags and arrays."""

    id: str
    family: str
    stage: str
    spec: RopeSpec
    dtype: str
    tier: str
    flags: tuple[str, ...]
    arrays: Mapping[str, np.ndarray] = field(repr=False)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            bad("stage", self.stage, f"expected one of {', '.join(STAGES)}")
        if self.family not in FAMILIES:
            bad("family", self.family, f"expected one of {', '.join(FAMILIES)}")
        if self.dtype not in DTYPES:
            bad("dtype", self.dtype, f"expected one of {', '.join(DTYPES)}")
        missing = [k for k in STAGE_INPUTS[self.stage] + STAGE_OUTPUTS[self.stage] if k not in self.arrays]
        if missing:
            bad(f"case {self.id}", missing, f"arrays missing for stage {self.stage}")

    def inputs(self) -> dict[str, np.ndarray]:
        """The stage's inputs as stored (float64 or int64), optional ones included when present."""
        names = STAGE_INPUTS[self.stage] + OPTIONAL_INPUTS.get(self.stage, ())
        return {k: self.arrays[k] for k in names if k in self.arrays}

    def expected(self) -> dict[str, np.ndarray]:
        return {k: self.arrays[k] for k in STAGE_OUTPUTS[self.stage]}

    def reference(self) -> dict[str, np.ndarray]:
        """The stored :data:`REFERENCE_ARRAYS` (frequencies, attention factor, pair axes) present in the case."""
        return {k: self.arrays[k] for k in REFERENCE_ARRAYS.get(self.stage, ()) if k in self.arrays}

    def input_as(self, name: str) -> np.ndarray:
        """Input ``name`` converted (exactly) to the case dtype; integer arrays unchanged."""
        arr = self.arrays[name]
        if arr.dtype.kind in "iu":
            return arr
        return arr.astype(numpy_dtype(self.dtype))

    @property
    def positions(self) -> np.ndarray | None:
        return self.arrays.get("positions")


def case_features(case: GoldenCase) -> frozenset[str]:
    """The features a backend needs to run ``case`` (names in :data:`FEATURES`)."""
    spec, out = case.spec, set()
    if spec.rotary_start > 0:
        out.add("window_last")
    elif spec.resolved_rotary_dim < spec.head_dim:
        out.add("partial")
    if spec.freq_dim != spec.rotary_dim:
        out.add("odd_freq_dim")
    if "cu_seqlens" in case.arrays:
        out.add("varlen")
    if spec.mrope_section is not None:
        out.add(f"mrope_{spec.mrope_layout}")
    if spec.vision is not None:
        out.add(f"vision_{spec.vision}")
    pos = case.positions
    if pos is not None and pos.size:
        if pos.min() < 0:
            out.add("negative_positions")
        plain = pos if spec.n_axes == 1 else None
        if plain is not None and plain.ndim == 2 and plain.shape[0] > 1 and (plain != plain[:1]).any():
            out.add("per_batch_positions")
        if plain is not None and plain.ndim >= 1 and plain.shape[-1] > 1 and "cu_seqlens" not in case.arrays:
            if (np.diff(plain, axis=-1) != 1).any():
                out.add("sparse_positions")
    return frozenset(out)
