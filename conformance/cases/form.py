"""How the judge calls a backend for a case, beyond ``stage(x, ...) -> y`` on a fresh C-contiguous array.

A :class:`CallForm` says three things about the call of an ``apply``, ``forward`` or ``backward`` case:

- ``layout``: the memory x (q, k) is handed over in: ``contiguous`` (a fresh array, the default) or one
  of :data:`~conformance.vocabulary.LAYOUTS` (a strided view of a fused qkv buffer, the transpose of a
  ``[B, H, T, D]`` buffer, Fortran order, one element past an aligned base), built with guard memory
  around the view by :mod:`conformance.calls.memory`;
- ``inplace``: the backend's in-place method (``forward_``, ``apply_qk_``, ...) rotates x (q, k) in
  its own memory; the judge reads the result from that memory;
- ``qk``: q and k are rotated by one call (``forward_qk(q, k, ...) -> (q_out, k_out)``); the case's
  ``x``/``grad`` is q and its arrays add k's input and expected output
  (:data:`~conformance.vocabulary.QK_ARRAYS`). k may have fewer heads than q (GQA, MQA) and, with
  ``k_spec``, its own head dim (MLA: q rotates its last ``r`` channels, k is the ``r``-channel rope part;
  same rotary width, frequencies, pairing and scaling).

The stage method called is :meth:`CallForm.method`; what the form asks of a backend's declaration
is :func:`form_needs`. The maths of the case does not change: every part is judged against roperef's
expected values like any other case. This module is a leaf of the cases layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roperef.errors import bad
from roperef.spec import RopeSpec

from ..vocabulary import CALL_FORMS, LAYOUTS, QK_ARRAYS

__all__ = ["CallForm", "CONTIGUOUS", "FORM_STAGES", "form_needs", "qk_shape", "form_method", "form_word", "form_tag",
           "check_form_arrays"]

#: the layout of a fresh C-contiguous array (no guard memory): what every case without a form gets
CONTIGUOUS = "contiguous"
#: the stages a call form applies to (the ones that take a tensor x or grad)
FORM_STAGES = ("apply", "forward", "backward")


@dataclass(frozen=True)
class CallForm:
    """The call of one case (see the module docstring). ``k_spec`` only with ``qk``: k's own spec, same
    rotary width, frequencies, pairing and scaling as q's (None: k shares q's spec)."""

    layout: str = CONTIGUOUS
    inplace: bool = False
    qk: bool = False
    k_spec: RopeSpec | None = None

    def __post_init__(self) -> None:
        if self.layout != CONTIGUOUS and self.layout not in LAYOUTS:
            bad("layout", self.layout, f"expected {CONTIGUOUS} or one of {', '.join(LAYOUTS)}")
        if self.k_spec is not None and not self.qk:
            bad("k_spec", "given", "only a q+k call (qk=True) has a spec for k")

    @property
    def word(self) -> str | None:
        """The :data:`~conformance.vocabulary.CALL_FORMS` word of this call (None: ``stage(x) -> y``)."""
        return form_word(self.inplace, self.qk)

    def method(self, stage: str) -> str:
        """The backend method called: ``forward``, ``forward_``, ``forward_qk``, ``forward_qk_``, ..."""
        return form_method(stage, self.word)


def form_word(inplace: bool, qk: bool) -> str | None:
    """``inplace``, ``qk``, ``qk_inplace`` or None."""
    if qk:
        return "qk_inplace" if inplace else "qk"
    return "inplace" if inplace else None


def form_method(stage: str, word: str | None) -> str:
    """The method name of ``stage`` called in form ``word`` (a CALL_FORMS word or None)."""
    if word is not None and word not in CALL_FORMS:
        bad("call form", word, f"expected one of {', '.join(CALL_FORMS)}")
    return stage + {None: "", "inplace": "_", "qk": "_qk", "qk_inplace": "_qk_"}[word]


def qk_shape(form: CallForm | None, stage: str, arrays: Mapping[str, np.ndarray]) -> str | None:
    """How k differs from q in a q+k case: ``head_dims`` (its own spec), ``mqa`` (one head, q more),
    ``gqa`` (fewer heads than q), or None (same heads and head dim, or not a q+k case)."""
    if form is None or not form.qk or stage not in QK_ARRAYS:
        return None
    if form.k_spec is not None:
        return "head_dims"
    q = arrays["x" if stage != "backward" else "grad"]
    k = arrays[QK_ARRAYS[stage][0]]
    hq, hk = int(np.shape(q)[-2]), int(np.shape(k)[-2])
    if hk == hq:
        return None
    return "mqa" if hk == 1 else "gqa"


def form_needs(form: CallForm | None, stage: str, arrays: Mapping[str, np.ndarray]) -> list[tuple[str, str]]:
    """What a case's call form asks of a declaration, as ``(kind, word)``: ``("layout", "qkv")``,
    ``("call form", "qk")``, ``("q+k shape", "gqa")``; empty for a plain call."""
    if form is None:
        return []
    out = []
    if form.layout != CONTIGUOUS:
        out.append(("layout", form.layout))
    if form.word is not None:
        out.append(("call form", form.word))
    shape = qk_shape(form, stage, arrays)
    if shape is not None:
        out.append(("q+k shape", shape))
    return out


def form_tag(form: CallForm | None, k_heads: int | None = None, k_head_dim: int | None = None) -> str:
    """The suffix a case id gets for its form: ``+qkv``, ``+inplace``, ``+qk-k2``, ``+qk_inplace-k1-d64``
    (empty for a plain call)."""
    if form is None:
        return ""
    parts = [] if form.layout == CONTIGUOUS else [form.layout]
    word = form.word
    if word is not None:
        extra = (f"-k{k_heads}" if k_heads is not None else "") + (f"-d{k_head_dim}" if form.k_spec is not None and k_head_dim else "")
        parts.append(word + extra)
    return "".join(f"+{p}" for p in parts)


def check_form_arrays(case_id: str, stage: str, form: Any, arrays: Mapping[str, np.ndarray]) -> None:
    """``ValueError`` unless ``form`` is None or a :class:`CallForm` whose stage and arrays fit."""
    if form is None:
        return
    if not isinstance(form, CallForm):
        bad(f"case {case_id} form", form, "must be a conformance.cases.form.CallForm or None", TypeError)
    if stage not in FORM_STAGES:
        bad(f"case {case_id} form", form, f"a call form applies to stages {', '.join(FORM_STAGES)} only (stage {stage})")
    if form.qk:
        missing = [k for k in QK_ARRAYS[stage] if k not in arrays]
        if missing:
            bad(f"case {case_id}", missing, "arrays missing for a q+k case")
