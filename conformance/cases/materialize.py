"""The case catalogue: small records that say how to build each golden case, and how to build it.

A :class:`~conformance.cases.case.CaseRecipe` is the *recipe* of a case (stable id, spec, dtype, tier, flags,
shape, positions regime, seed, input scale); :func:`materialize` turns it into a
:class:`~conformance.cases.case.GoldenCase` with inputs and float64 expected outputs.

Ids are ``family/variant/pairing/dtype/shape/positions``, e.g.
``forward/yarn/half/bfloat16/b2-s16-h2-d64/long-odd``; they are also the filter
(:func:`conformance.selection.select`) and the report key. The families and their recipes live in
:mod:`conformance.cases.catalog`; the position regimes in :mod:`conformance.cases.positions`.

Inputs. Each case draws its inputs with its own ``np.random.default_rng(seed)`` (the seed
is the CRC-32 of the id, so a case never depends on another case or on global state):
unit normal times ``scale``, a fraction ``zeros`` of exact zeros (plus one whole pair set
to zero), rounded to the case dtype (bfloat16 through ml_dtypes) and stored exactly as
float64. Given cos/sin tables (the ``apply`` stage) are rounded likewise. The expected
outputs are the float64 reference (:mod:`roperef.reference`) applied to the rounded
values; :mod:`roperef.fast` computes every case as well and the two must agree within
2 ulp (error over spacing, :func:`roperef.ulp.ulp_error`; :class:`DisagreementError` otherwise,
naming the case).

The recipe record (:class:`~conformance.cases.case.CaseRecipe`) and the words of a case (families,
flags, ...: :mod:`conformance.vocabulary`) live below this module; selection by id pattern is
:mod:`conformance.selection`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from roperef import fast, reference
from roperef.errors import bad
from roperef.frequencies import inv_freq
from roperef.layout import pair_axes, pair_map
from roperef.spec import RopeSpec
from roperef.ulp import max_ulp_error

from ..vocabulary import TIERS
from .case import CaseRecipe, GoldenCase, numpy_dtype
from .catalog import all_recipes
from .positions import build_positions

__all__ = [
    "DisagreementError",
    "catalogue",
    "materialize",
    "recipe_positions",
    "reference_arrays",
]


def catalogue(tier: str = "smoke", presets_dir: str | None = None) -> list[CaseRecipe]:
    """Every recipe of ``tier`` (``full`` includes the smoke cases), sorted by id, ids unique."""
    if tier not in TIERS:
        bad("tier", tier, f"expected one of {', '.join(TIERS)}")
    recipes = [r for r in all_recipes(presets_dir) if tier == "full" or r.tier == "smoke"]
    seen: dict[str, CaseRecipe] = {}
    for r in recipes:
        if r.id in seen:
            bad("case id", r.id, "is not unique in the catalogue")
        seen[r.id] = r
    return sorted(seen.values(), key=lambda r: r.id)


# --------------------------------------------------------------------------- materialize


class DisagreementError(ValueError):
    """The NumPy reference and the Numba twin disagree by more than 2 ulp (error over spacing) on a case."""


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` rounded (nearest-even) to the case dtype, back as exact float64."""
    return np.asarray(values, dtype=np.float64).astype(numpy_dtype(dtype)).astype(np.float64)


def _draw(recipe: CaseRecipe, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape) * recipe.scale
    if recipe.zeros > 0:
        x[rng.random(shape) < recipe.zeros] = 0.0
        n = recipe.spec.n_pairs
        pm = pair_map(recipe.spec)
        first = (0,) * (len(shape) - 1)
        x[first + (int(pm.in_a[n // 2]),)] = 0.0
        x[first + (int(pm.in_b[n // 2]),)] = 0.0
    return _round(x, recipe.dtype)


def _both(recipe: CaseRecipe, name: str, compute: Callable[[ModuleType], object], check_fast: bool) -> list[np.ndarray]:
    """Run ``compute`` with the module :mod:`roperef.reference` and (if ``check_fast``) its twin :mod:`roperef.fast`;
    agreement within 2 ulp (error over spacing, :func:`roperef.ulp.ulp_error` of the twin against the reference)."""
    ref = compute(reference)
    ref_list = list(ref) if isinstance(ref, tuple) else [ref]
    if check_fast:
        twin = compute(fast)
        fast_list = list(twin) if isinstance(twin, tuple) else [twin]
        for k, (a, b) in enumerate(zip(ref_list, fast_list)):
            a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            worst = max_ulp_error(b, a) if a.shape == b.shape else float("inf")
            if worst > 2.0:
                raise DisagreementError(
                    f"case {recipe.id}: roperef.reference and roperef.fast disagree on {name}[{k}] "
                    f"by {worst:.3g} ulp (> 2 ulp); refusing to write it"
                )
    return [np.ascontiguousarray(a, dtype=np.float64) for a in ref_list]


def reference_arrays(spec: RopeSpec, positions: np.ndarray) -> dict[str, np.ndarray]:
    """``inv_freq``, ``attention_factor``, ``pair_axis`` of a case at ``seq_len = max(position) + 1``
    (what :func:`roperef.reference.forward` uses; see :data:`conformance.cases.case.REFERENCE_ARRAYS`)."""
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
    within 2 ulp (error over spacing; :class:`DisagreementError`). ``check_fast=False`` skips the twin (verification
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
