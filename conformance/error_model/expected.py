"""What a backend's output is compared with: the expected outputs and their bounds under its declaration.

A backend that declares ``applies_attention_factor=False`` leaves ``s`` out of its rotated
channels (docs/spec.md section 1: ``s`` multiplies cos and sin), so the expected values and
the bounds of those channels are divided by ``s``. A leaf module: the runner, the diagnosis
and the declaration hints all use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.layout import pair_map

from ..cases.case import GoldenCase
from .tolerance import Resolved, bounds

__all__ = ["expected_and_bounds", "attention_divisor", "divide_rotated"]


def attention_divisor(case: GoldenCase, caps: Any) -> float:
    """``s`` when the backend leaves the attention factor out of this case's outputs, else 1."""
    if getattr(caps, "applies_attention_factor", True) or case.stage in ("inv_freq", "apply"):
        return 1.0
    rows = case.arrays["positions"]
    s = inv_freq(case.spec, max(int(np.max(rows)) + 1, 1))[1]
    return 1.0 if s in (0.0, 1.0) else float(s)


def divide_rotated(case: GoldenCase, arrays: Mapping[str, np.ndarray], s: float) -> dict[str, np.ndarray]:
    """``arrays`` (outputs or bounds of ``case``) with the rotated channels divided by ``s``."""
    if s == 1.0:
        return dict(arrays)
    if case.stage == "cos_sin":
        return {k: np.asarray(v) / s for k, v in arrays.items()}
    name = "y" if case.stage == "forward" else "grad_x"
    pm = pair_map(case.spec)
    ch = np.concatenate([pm.out_a, pm.out_b] if case.stage == "forward" else [pm.in_a, pm.in_b])
    out = np.array(arrays[name], dtype=np.float64, copy=True)
    out[..., ch] /= s
    return {name: out}


def expected_and_bounds(case: GoldenCase, caps: Any, r: Resolved) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Expected outputs and bounds; divided by ``s`` on rotated channels if the backend leaves ``s`` out."""
    exp = {k: np.asarray(v, dtype=np.float64) for k, v in case.expected().items()}
    bnd = bounds(case, r)
    s = attention_divisor(case, caps)
    return divide_rotated(case, exp, s), divide_rotated(case, bnd, s)
