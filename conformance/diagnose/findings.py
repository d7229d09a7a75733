"""The record of one thing measured about a backend's operator: a :class:`Finding`.

A finding says, along one *axis*, where a deviation from the spec holds and what was measured
against what was expected, and which section of docs/spec.md it contradicts. Findings are data
first (``to_dict`` is what the JSON report carries, docs/report-schema.md) and words second.

Axes (:data:`AXES`)::

    position          effective position per token (a table: shift, clamp, wrap, restart, per row, per tile, ...)
    frequency         effective frequency per pair (uniform ratio, geometric, mirrored, band, zero, permuted)
    angle             the map from the spec's angle phi to the applied one (reversed, doubled, pi/2 - phi)
    gain              |output pair| / |input pair| against s (per pair, per token)
    pair_map          the 2x2 map of a pair is not the spec's (a reflection, a sign error, identity, s on cos only, ...)
    rounding          the input or the output rounded to a coarser dtype than the case's
    channel           which input channels feed which outputs (pairing, window, output order, pass-through)
    head              heads unrotated, copied, mixed, or rotated with different positions
    token             tokens unrotated (tails), rotated with another token's position (transposed layouts)
    row               batch rows (or packed sequences) that differ from the others
    axis_row          mRoPE / 2-D vision: the position row driving a pair
    state             the output changes between identical calls
    linearity         the output is not linear in the input
    dependence        the output at one (token, head) depends on inputs elsewhere
    attention_factor  the attention factor of an inv_freq stage
    nonfinite         NaN/inf where the expected value is finite
    precision         a precision mechanism explains the deviation (the IMPRECISE verdict)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AXES", "SPEC_SECTIONS", "Finding", "ranges", "jsonable"]

AXES = ("position", "frequency", "angle", "gain", "pair_map", "rounding", "channel", "head", "token", "row", "axis_row",
        "state", "linearity", "dependence", "attention_factor", "nonfinite", "precision")

#: the docs/spec.md section each axis is a contract of
SPEC_SECTIONS: Mapping[str, str] = {
    "position": "1 (positions) and 6", "frequency": "3 (frequencies)", "angle": "2 (pair rotation) and 5 (backward)",
    "gain": "1 (attention factor s)", "pair_map": "2 (pair rotation)", "rounding": "6 (precision) and 5b",
    "channel": "2 (pairing, rotary window)",
    "head": "1 (every head rotated alike)", "token": "1 (each token at its own position)",
    "row": "1 (positions per batch row)", "axis_row": "4 (multi-axis positions)", "state": "3 (stateless reference)",
    "linearity": "2 (a linear map of x)", "dependence": "2 (each token and head rotated on its own)",
    "attention_factor": "3 (attention factor)", "nonfinite": "5b (finite outputs)", "precision": "5c (error model)",
}


def jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays turned into Python numbers and lists (floats rounded to 9 digits)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if not np.isfinite(v) else float(f"{v:.9g}")
    return value


@dataclass(frozen=True)
class Finding:
    """One deviation along one axis.

    ``where``: indices it holds at (``pairs``, ``tokens``, ``heads``, ``rows``, ``channels``, as lists);
    ``measured`` / ``expected``: the values (a number, a list, or a small table); ``pattern``: a short
    machine name of what was recognised (``shift``, ``wrap``, ``mirrored``, ``reversed``, ...);
    ``probe``: measured by calling the backend again with designed inputs (not from the case's own data).
    """

    axis: str
    words: str
    pattern: str = ""
    where: Mapping[str, Any] = field(default_factory=dict)
    measured: Any = None
    expected: Any = None
    probe: bool = False

    def __post_init__(self) -> None:
        if self.axis not in AXES:
            raise ValueError(f"finding axis={self.axis!r}: expected one of {', '.join(AXES)}")

    @property
    def section(self) -> str:
        return SPEC_SECTIONS[self.axis]

    def to_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "pattern": self.pattern, "words": self.words, "where": jsonable(dict(self.where)),
                "measured": jsonable(self.measured), "expected": jsonable(self.expected), "section": self.section,
                "probe": self.probe}


def ranges(idx: Iterable[int]) -> str:
    """``0-3, 7, 9-10``: sorted indices as runs of consecutive values."""
    vals = sorted({int(i) for i in idx})
    if not vals:
        return ""
    out = []
    start = prev = vals[0]
    for i in vals[1:]:
        if i == prev + 1:
            prev = i
            continue
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = i
    out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(out)
