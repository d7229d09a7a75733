"""Declaration hints: a FAIL that would PASS if the backend had declared its precision differently.

The error model reads the backend's declaration (``angle_dtype``, ``table_dtype``,
``applies_attention_factor``; docs/spec.md section 6). A float32 engine that declares
nothing is judged as float64; an engine that casts its tables to bf16 inputs but declares
float32 tables fails by a few units of bf16. Before blaming the maths, each FAIL is judged
again under the plausible other declarations; if one passes, the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..cases.case import GoldenCase
from ..error_model.expected import expected_and_bounds
from ..error_model.tolerance import Profile, compare, resolve

__all__ = ["declaration_hints"]


@dataclass(frozen=True)
class _Declared:
    angle_dtype: str
    table_dtype: str
    applies_attention_factor: bool


def _alternatives(case: GoldenCase, caps: Any, resolved_angle: str, resolved_table: str) -> list[tuple[str, _Declared]]:
    base = _Declared(str(getattr(caps, "angle_dtype", "float64")), str(getattr(caps, "table_dtype", "float64")),
                     bool(getattr(caps, "applies_attention_factor", True)))
    out: list[tuple[str, _Declared]] = []
    if resolved_angle == "float64":
        out.append(("angle_dtype='float32'", replace(base, angle_dtype="float32")))
    low = case.dtype in ("bfloat16", "float16")
    if low and resolved_table != case.dtype and case.stage != "inv_freq":
        out.append(("table_dtype='input'", replace(base, table_dtype="input")))
        if resolved_angle == "float64":
            out.append(("angle_dtype='float32' and table_dtype='input'", replace(base, angle_dtype="float32", table_dtype="input")))
    if case.stage not in ("inv_freq", "apply"):
        flag = not base.applies_attention_factor
        out.append((f"applies_attention_factor={flag}", replace(base, applies_attention_factor=flag)))
    return out


def declaration_hints(case: GoldenCase, outputs: Mapping[str, np.ndarray], caps: Any, profile: Profile, out_dtype: Any) -> list[str]:
    """Words for every alternative declaration under which this FAIL would PASS."""
    r0 = resolve(profile, caps, case, out_dtype)
    free = replace(profile, angle_dtype="backend", table_dtype="backend")
    hints = []
    for label, alt in _alternatives(case, caps, r0.angle_dtype, r0.table_dtype):
        r = resolve(free, alt, case, out_dtype)
        exp, bnd = expected_and_bounds(case, alt, r)
        if exp.keys() != outputs.keys() and not set(exp) <= set(outputs):
            continue
        m = compare(case, outputs, exp, bnd, with_profile=False)
        if m.budget_used <= 1.0:
            hints.append(f"this FAIL would PASS if the backend declared {label} (budget {m.budget_used:.3g}): "
                         "check the declaration before the maths")
    return hints
