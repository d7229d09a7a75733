"""The case catalogue: small records that say how to build each golden case, and how to build it.

A :class:`CaseRecipe` is the *recipe* of a case (stable id, spec, dtype, tier, flags,
shape, positions regime, seed, input scale); :func:`materialize` turns it into a
:class:`~conformance.case.GoldenCase` with inputs and float64 expected outputs.

Ids are ``family/variant/pairing/dtype/shape/positions``, e.g.
``forward/yarn/half/bfloat16/b2-s16-h2-d64/long-odd``; they are also the filter
(:func:`select`) and the report key. The families and their recipes live in
:mod:`conformance.cases_catalog`; the position regimes in :mod:`conformance.cases_positions`.

Inputs. Each case draws its inputs with its own ``np.random.default_rng(seed)`` (the seed
is the CRC-32 of the id, so a case never depends on another case or on global state):
unit normal times ``scale``, a fraction ``zeros`` of exact zeros (plus one whole pair set
to zero), rounded to the case dtype (bfloat16 through ml_dtypes) and stored exactly as
float64. Given cos/sin tables (the ``apply`` stage) are rounded likewise. The expected
outputs are the float64 reference (:mod:`roperef.reference`) applied to the rounded
values; :mod:`roperef.fast` computes every case as well and the two must agree within
2 ulp (:class:`DisagreementError` otherwise, naming the case).

Flag vocabulary (:data:`FLAGS`): what a case is designed to expose.
"""

from __future__ import annotations

import fnmatch
import zlib
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from roperef import reference
from roperef.errors import bad
from roperef.frequencies import inv_freq
from roperef.spec import RopeSpec

from .case import DTYPES, FAMILIES, STAGES, TIERS, GoldenCase, numpy_dtype
from .cases_positions import build_positions

__all__ = [
    "FLAGS",
    "CaseRecipe",
    "DisagreementError",
    "catalogue",
    "materialize",
    "select",
    "recipe_seed",
    "recipe_positions",
    "ulp_disagreement",
    "reference_arrays",
]

#: What a case is designed to expose (every recipe's flags come from here).
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
}

_SHAPE_KEYS = "bsthd"


@dataclass(frozen=True)
class CaseRecipe:
    """How to build one golden case.

    ``shape``: the x/grad shape for apply/forward/backward (bshd ``(B, T, H, D)`` or packed
    ``(N, H, D)``), the token grid ``(B, T)`` (or ``(1, N)``) for cos_sin, ``()`` for inv_freq.
    ``positions``: the regime name (:mod:`conformance.cases_positions`), ``""`` for inv_freq.
    ``seq_len``: the inv_freq stage's input (``None`` elsewhere: ``max(position) + 1``).
    """

    id: str
    family: str
    stage: str
    spec: RopeSpec
    dtype: str
    tier: str
    flags: tuple[str, ...]
    shape: tuple[int, ...]
    positions: str
    seed: int
    scale: float = 1.0
    zeros: float = 0.0
    seq_len: int | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            bad("family", self.family, f"expected one of {', '.join(FAMILIES)}")
        if self.stage not in STAGES:
            bad("stage", self.stage, f"expected one of {', '.join(STAGES)}")
        if self.dtype not in DTYPES:
            bad("dtype", self.dtype, f"expected one of {', '.join(DTYPES)}")
        if self.tier not in TIERS:
            bad("tier", self.tier, f"expected one of {', '.join(TIERS)}")
        unknown = [f for f in self.flags if f not in FLAGS]
        if unknown:
            bad(f"case {self.id} flags", unknown, "not in the flag vocabulary conformance.cases.FLAGS")
        if len(self.id.split("/")) != 6:
            bad("case id", self.id, "must be family/variant/pairing/dtype/shape/positions")


def recipe_seed(case_id: str) -> int:
    """The seed of a case: CRC-32 of its id (stable across runs, Python versions and machines)."""
    return zlib.crc32(case_id.encode("utf-8"))


def shape_tag(shape: Sequence[int], stage: str, head_dim: int) -> str:
    """``b2-s16-h2-d64`` (bshd), ``t32-h2-d64`` (packed), ``b2-s16-d64`` (tables), ``d64`` (inv_freq)."""
    if stage == "inv_freq":
        return f"d{head_dim}"
    if stage == "cos_sin":
        return f"b{shape[0]}-s{shape[1]}-d{head_dim}"
    if len(shape) == 3:
        return f"t{shape[0]}-h{shape[1]}-d{shape[2]}"
    return f"b{shape[0]}-s{shape[1]}-h{shape[2]}-d{shape[3]}"


# --------------------------------------------------------------------------- selection


def select(cases: Iterable, pattern: str | None) -> list:
    """Cases (recipes or GoldenCases) whose id matches ``pattern``.

    ``pattern``: comma-separated alternatives; an alternative with a glob character
    (``*?[``) is an fnmatch pattern on the whole id, otherwise a substring of the id.
    ``None`` or ``""`` selects everything.
    """
    items = list(cases)
    if not pattern:
        return items
    alternatives = [p.strip() for p in pattern.split(",") if p.strip()]

    def hit(case_id: str) -> bool:
        for alt in alternatives:
            if any(ch in alt for ch in "*?["):
                if fnmatch.fnmatchcase(case_id, alt):
                    return True
            elif alt in case_id:
                return True
        return False

    return [c for c in items if hit(c.id)]


def catalogue(tier: str = "smoke", presets_dir: str | None = None) -> list[CaseRecipe]:
    """Every recipe of ``tier`` (``full`` includes the smoke cases), sorted by id, ids unique."""
    if tier not in TIERS:
        bad("tier", tier, f"expected one of {', '.join(TIERS)}")
    from .cases_catalog import all_recipes  # the tables; imported here to keep this module small

    recipes = [r for r in all_recipes(presets_dir) if tier == "full" or r.tier == "smoke"]
    seen: dict[str, CaseRecipe] = {}
    for r in recipes:
        if r.id in seen:
            bad("case id", r.id, "is not unique in the catalogue")
        seen[r.id] = r
    return sorted(seen.values(), key=lambda r: r.id)


# --------------------------------------------------------------------------- materialize


class DisagreementError(ValueError):
    """The NumPy reference and the Numba twin disagree by more than 2 ulp on a case."""


def ulp_disagreement(ref: np.ndarray, fast: np.ndarray) -> float:
    """``max |ref - fast| / ulp(max(|ref|, |fast|))`` (0 when equal; inf on a NaN mismatch)."""
    ref = np.atleast_1d(np.asarray(ref, dtype=np.float64))
    fast = np.atleast_1d(np.asarray(fast, dtype=np.float64))
    if ref.shape != fast.shape:
        return float("inf")
    if ref.size == 0:
        return 0.0
    nan = np.isnan(ref) != np.isnan(fast)
    if nan.any():
        return float("inf")
    diff = np.where(np.isnan(ref), 0.0, np.abs(ref - fast))
    ulp = np.spacing(np.maximum(np.abs(ref), np.abs(fast)))
    return float(np.max(diff / ulp))


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` rounded (nearest-even) to the case dtype, back as exact float64."""
    return np.asarray(values, dtype=np.float64).astype(numpy_dtype(dtype)).astype(np.float64)


def _draw(recipe: CaseRecipe, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape) * recipe.scale
    if recipe.zeros > 0:
        x[rng.random(shape) < recipe.zeros] = 0.0
        n = recipe.spec.n_pairs
        from roperef.layout import pair_map

        pm = pair_map(recipe.spec)
        first = (0,) * (len(shape) - 1)
        x[first + (int(pm.in_a[n // 2]),)] = 0.0
        x[first + (int(pm.in_b[n // 2]),)] = 0.0
    return _round(x, recipe.dtype)


def _fast():
    from roperef import fast  # the Numba twin (imported lazily: JIT compilation happens on first use)

    return fast


def _both(recipe: CaseRecipe, name: str, compute: Callable[[object], object], check_fast: bool) -> list[np.ndarray]:
    """Run ``compute`` with the reference and (if ``check_fast``) the fast twin; 2-ulp agreement."""
    ref = compute(reference)
    ref_list = list(ref) if isinstance(ref, tuple) else [ref]
    if check_fast:
        fast = compute(_fast())
        fast_list = list(fast) if isinstance(fast, tuple) else [fast]
        for k, (a, b) in enumerate(zip(ref_list, fast_list)):
            worst = ulp_disagreement(a, b)
            if worst > 2.0:
                raise DisagreementError(
                    f"case {recipe.id}: roperef.reference and roperef.fast disagree on {name}[{k}] "
                    f"by {worst:.3g} ulp (> 2 ulp); refusing to write it"
                )
    return [np.ascontiguousarray(a, dtype=np.float64) for a in ref_list]


def reference_arrays(spec: RopeSpec, positions: np.ndarray) -> dict[str, np.ndarray]:
    """``inv_freq``, ``attention_factor``, ``pair_axis`` of a case at ``seq_len = max(position) + 1``
    (what :func:`roperef.reference.forward` uses; see :data:`conformance.case.REFERENCE_ARRAYS`)."""
    from roperef.layout import pair_axes

    pos = np.asarray(positions)
    seq_len = max(int(pos.max()) + 1, 1) if pos.size else 1
    freqs, s = inv_freq(spec, seq_len)
    return {
        "inv_freq": np.ascontiguousarray(freqs, dtype=np.float64),
        "attention_factor": np.asarray(s, dtype=np.float64),
        "pair_axis": np.ascontiguousarray(pair_axes(spec), dtype=np.int64),
    }


def recipe_positions(recipe: CaseRecipe) -> tuple[np.ndarray, np.ndarray | None]:
    """The ``(positions, cu_seqlens)`` :func:`materialize` gives ``recipe`` (drawn first from its generator)."""
    grid = recipe.shape if recipe.stage == "cos_sin" else recipe.shape[:-2]
    return build_positions(recipe.positions, recipe.spec.n_axes, grid, np.random.default_rng(recipe.seed))


def materialize(recipe: CaseRecipe, *, check_fast: bool = True) -> GoldenCase:
    """Build the :class:`GoldenCase` of ``recipe`` (inputs drawn with the recipe's own generator).

    Both :mod:`roperef.reference` and :mod:`roperef.fast` compute the outputs; they must agree
    within 2 ulp (:class:`DisagreementError`). ``check_fast=False`` skips the twin (verification
    of stored files recomputes with the reference only).
    """
    rng = np.random.default_rng(recipe.seed)
    spec, stage = recipe.spec, recipe.stage
    arrays: dict[str, np.ndarray] = {}
    if stage == "inv_freq":
        if recipe.seq_len is None:
            bad(f"case {recipe.id} seq_len", None, "an inv_freq case needs an explicit seq_len")
        seq_len = int(recipe.seq_len)
        freqs, s = inv_freq(spec, seq_len)
        arrays["seq_len"] = np.asarray(seq_len, dtype=np.int64)
        arrays["inv_freq"] = np.ascontiguousarray(freqs, dtype=np.float64)
        arrays["attention_factor"] = np.asarray(s, dtype=np.float64)
    elif stage == "cos_sin":
        pos, _ = build_positions(recipe.positions, spec.n_axes, recipe.shape, rng)
        arrays["positions"] = pos
        arrays["cos"], arrays["sin"] = _both(recipe, "cos_sin", lambda m: m.cos_sin(spec, pos), check_fast)
    else:
        shape = recipe.shape
        grid = shape[:-2]
        pos, cu = build_positions(recipe.positions, spec.n_axes, grid, rng)
        x = _draw(recipe, rng, shape)
        if stage == "apply":
            cos, sin = reference.cos_sin(spec, pos)
            cos, sin = _round(cos, recipe.dtype), _round(sin, recipe.dtype)
            arrays.update(x=x, cos=cos, sin=sin, table_positions=pos)
            (arrays["y"],) = _both(recipe, "apply", lambda m: m.apply(x, cos, sin, spec), check_fast)
        else:
            key, out = ("x", "y") if stage == "forward" else ("grad", "grad_x")
            arrays[key] = x
            arrays["positions"] = pos
            if cu is not None:
                arrays["cu_seqlens"] = cu
            fn = "forward" if stage == "forward" else "backward"
            (arrays[out],) = _both(
                recipe, fn, lambda m: getattr(m, fn)(x, pos, spec, cu_seqlens=cu), check_fast
            )
    if stage != "inv_freq":
        arrays.update(reference_arrays(spec, pos))
    return GoldenCase(
        id=recipe.id,
        family=recipe.family,
        stage=stage,
        spec=spec,
        dtype=recipe.dtype,
        tier=recipe.tier,
        flags=tuple(recipe.flags),
        arrays=arrays,
    )
