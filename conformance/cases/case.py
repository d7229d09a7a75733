"""The records every part of the judge shares: a golden case (:class:`GoldenCase`, loaded or
computed in memory) and the recipe it is built from (:class:`CaseRecipe`), with the one validator
of their common fields (:func:`check_case_fields`).

A case is one stage of the RoPE pipeline run on fixed inputs. Its arrays hold the
inputs the backend receives and the float64 expected outputs; low-precision inputs
are rounded to the case dtype and stored *exactly* as float64 (so any language can
read them); :meth:`GoldenCase.input_as` gives them back in the case dtype. The stages, their
input and output arrays and every other word a case is described with are in
:mod:`conformance.vocabulary`.

Forward-like stages use ``seq_len = max(position) + 1`` (the protocol default).

Reference arrays (:data:`~conformance.vocabulary.REFERENCE_ARRAYS`, every golden case of a stage
other than ``inv_freq``; optional for cases built in memory): ``inv_freq`` float64 ``[n]`` and
``attention_factor`` (0-d) the case was computed with (at that ``seq_len``), and
``pair_axis`` int64 ``[n]``, the row of the positions that drives each pair (0 for plain
positions; t, h, w = 0, 1, 2 for mRoPE; h, w = 0, 1 for 2-D vision); ``apply`` cases also
keep ``table_positions``, the positions their given tables were computed at. They are neither
inputs nor outputs: a reader in another language feeds them to its kernel to separate
"my inv_freq is off" from "my rotation is off".

Ids. A catalogue case id is ``family/variant/pairing/dtype/shape/positions``, e.g.
``forward/yarn/half/bfloat16/b2-s16-h2-d64/long-odd``: also its filter and report key, and
(CRC-32) the seed of its inputs. A user's case (tier ``user``) keeps the id it was given.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.errors import bad
from roperef.spec import RopeSpec

from ..vocabulary import (
    CASE_TIERS,
    DTYPES,
    FAMILIES,
    FLAGS,
    OPTIONAL_INPUTS,
    REFERENCE_ARRAYS,
    STAGE_INPUTS,
    STAGE_OUTPUTS,
    STAGES,
    TIERS,
    USER_TIER,
)
from .form import CallForm, check_form_arrays, form_needs

__all__ = [
    "CaseFields",
    "GoldenCase",
    "CaseRecipe",
    "check_case_fields",
    "ID_SHAPE",
    "case_features",
    "case_family",
    "is_empty",
    "numpy_dtype",
    "recipe_seed",
    "shape_tag",
]

#: the parts of a catalogue case id
ID_SHAPE = "family/variant/pairing/dtype/shape/positions"


def check_case_fields(case_id: Any, family: Any, stage: Any, dtype: Any, tier: Any, flags: Any, *,
                      catalogue: bool = True) -> None:
    """The one check of the fields every case record shares (:class:`GoldenCase`, :class:`CaseRecipe`,
    a golden manifest entry): ``ValueError`` ``name=value: rule`` on the first field that is wrong.

    ``stage``, ``family`` and ``dtype`` must be words of :mod:`conformance.vocabulary`; ``flags`` a
    sequence of strings, each in :data:`~conformance.vocabulary.FLAGS`; ``case_id`` a non-empty
    string without whitespace.

    A catalogue record (``catalogue``: a recipe, a golden manifest entry, whose ids are the
    catalogue's filter keys) has a tier of :data:`~conformance.vocabulary.TIERS` and an id of the
    shape ``family/variant/pairing/dtype/shape/positions``. A case built in memory
    (:class:`GoldenCase`: a generated or explored case, a long-context row, a separation variant,
    a test's hand-made case, a user's case) keeps the id it was given, and its tier may also be
    ``user``: a user's case keeps its own words (any flags).
    """
    tiers = TIERS if catalogue else CASE_TIERS
    for name, value, allowed in (("stage", stage, STAGES), ("family", family, FAMILIES), ("dtype", dtype, DTYPES),
                                 ("tier", tier, tiers)):
        if not isinstance(value, str) or value not in allowed:
            bad(name, value, f"expected one of {', '.join(allowed)}")
    if isinstance(flags, (str, bytes)) or not isinstance(flags, Sequence) or not all(isinstance(f, str) for f in flags):
        bad(f"case {case_id} flags", flags, "must be a list of strings")
    if not isinstance(case_id, str) or not case_id or any(ch.isspace() for ch in case_id):
        bad("case id", case_id, "must be a non-empty string without whitespace")
    if tier == USER_TIER:
        return
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        bad(f"case {case_id} flags", unknown, "not in the flag vocabulary conformance.vocabulary.FLAGS")
    if catalogue and len(case_id.split("/")) != 6:
        bad("case id", case_id, f"must be {ID_SHAPE}")


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a case dtype name (bfloat16 through ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes  # lazy: only bfloat16 cases need it

        return np.dtype(ml_dtypes.bfloat16)
    if name not in DTYPES:
        bad("dtype", name, f"expected one of {', '.join(DTYPES)}")
    return np.dtype(name)


@dataclass(frozen=True)
class CaseFields:
    """What every case record names: id (also its filter and report key), family, stage, spec,
    dtype, tier and flags (validated by :func:`check_case_fields`)."""

    id: str
    family: str
    stage: str
    spec: RopeSpec
    dtype: str
    tier: str
    flags: tuple[str, ...]


@dataclass(frozen=True)
class GoldenCase(CaseFields):
    """One case: the :class:`CaseFields` and its arrays; ``form``: how the backend is called
    (:class:`~conformance.cases.form.CallForm`: a memory layout, in place, q with k; None: ``stage(x) -> y``
    on a fresh contiguous array)."""

    arrays: Mapping[str, np.ndarray] = field(repr=False)
    form: CallForm | None = None

    def __post_init__(self) -> None:
        check_case_fields(self.id, self.family, self.stage, self.dtype, self.tier, self.flags, catalogue=False)
        missing = [k for k in STAGE_INPUTS[self.stage] + STAGE_OUTPUTS[self.stage] if k not in self.arrays]
        if missing:
            bad(f"case {self.id}", missing, f"arrays missing for stage {self.stage}")
        check_form_arrays(self.id, self.stage, self.form, self.arrays)

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


@dataclass(frozen=True)
class CaseRecipe(CaseFields):
    """How to build one golden case (:func:`conformance.cases.materialize.materialize` builds it).

    ``shape``: the x/grad shape for apply/forward/backward (bshd ``(B, T, H, D)`` or packed
    ``(N, H, D)``), the token grid ``(B, T)`` (or ``(1, N)``) for cos_sin, ``()`` for inv_freq.
    ``positions``: the regime name (:mod:`conformance.cases.positions`), ``""`` for inv_freq.
    ``seq_len``: the inv_freq stage's input (``None`` elsewhere: ``max(position) + 1``).
    ``seed``: :func:`recipe_seed` of the id; ``scale`` and ``zeros``: how the inputs are drawn.
    """

    shape: tuple[int, ...]
    positions: str
    seed: int
    scale: float = 1.0
    zeros: float = 0.0
    seq_len: int | None = None

    def __post_init__(self) -> None:
        check_case_fields(self.id, self.family, self.stage, self.dtype, self.tier, self.flags)


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


def case_family(stage: str, spec: RopeSpec) -> str:
    """The report family of a case of ``stage`` on ``spec`` built outside the catalogue (generated,
    explored or a user's): ``mrope`` / ``vision2d`` for forward cases of those specs, else the stage's."""
    if stage == "forward" and spec.mrope_section is not None:
        return "mrope"
    if stage == "forward" and spec.vision is not None:
        return "vision2d"
    return {"inv_freq": "freq", "cos_sin": "table", "apply": "apply", "forward": "forward", "backward": "backward"}[stage]


def case_features(case: GoldenCase) -> frozenset[str]:
    """The features a backend needs to run ``case`` (names in :data:`conformance.vocabulary.FEATURES`)."""
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
    if is_empty(case):
        out.add("zero_size")
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


def is_empty(case: GoldenCase) -> bool:
    """The case's tensor (x, grad) or, for tables, its positions hold no element: its output is empty."""
    a = case.arrays
    name = {"apply": "x", "forward": "x", "backward": "grad", "cos_sin": "positions"}.get(case.stage)
    return name is not None and name in a and np.size(a[name]) == 0


def outside_interface(iface: Any, case: GoldenCase) -> tuple[str, str] | None:
    """The first thing ``case`` needs that an interface (any object with ``stages``, ``pairings``, ``dtypes``,
    ``scaling_types`` and ``features`` collections, and optionally ``max_position``, ``shared_tables``,
    ``layouts``, ``call_forms`` and ``qk_shapes``: no limit, nothing beyond a plain call when absent) does
    not declare, as ``(kind, what)``: ``("stage", "backward")``, ``("pairing", ...)``, ``("dtype", ...)``,
    ``("scaling", ...)``, ``("features", "a, b")``, ``("max_position", ...)``, ``("shared_tables", ...)``,
    ``("layout", "qkv")``, ``("call form", "qk")`` or ``("q+k shape", "gqa")``; None when the case is inside."""
    for kind, value, declared in (("stage", case.stage, iface.stages), ("pairing", case.spec.pairing, iface.pairings),
                                  ("dtype", case.dtype, iface.dtypes),
                                  ("scaling", case.spec.scaling.type, iface.scaling_types)):
        if value not in declared:
            return kind, value
    missing = sorted(case_features(case) - iface.features)
    if missing:
        return "features", ", ".join(missing)
    declared = {"layout": "layouts", "call form": "call_forms", "q+k shape": "qk_shapes"}
    for kind, word in form_needs(case.form, case.stage, case.arrays):
        if word not in getattr(iface, declared[kind], ()):
            return kind, word
    return _outside_limits(iface, case)


def _outside_limits(iface: Any, case: GoldenCase) -> tuple[str, str] | None:
    """The limits an interface may state beyond its collections (``max_position``, ``shared_tables``;
    absent attributes mean no limit): ``("max_position", ...)`` when a position exceeds the largest it
    takes, ``("shared_tables", ...)`` when an apply case's batch rows have different cos/sin tables."""
    limit = getattr(iface, "max_position", None)
    pos = case.positions
    if limit is not None and pos is not None and pos.size and int(pos.max()) > int(limit):
        return "max_position", f"position {int(pos.max())} beyond the largest it takes ({int(limit)})"
    if getattr(iface, "shared_tables", False) and case.stage == "apply":
        cos, sin = case.arrays.get("cos"), case.arrays.get("sin")
        if cos is not None and sin is not None and cos.ndim >= 3 and cos.shape[0] > 1 and (
                (cos != cos[:1]).any() or (sin != sin[:1]).any()):
            return "shared_tables", "cos/sin tables that differ between batch rows (it takes one table for the batch)"
    return None
