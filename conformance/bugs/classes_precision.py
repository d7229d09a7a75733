"""Bug classes of precision: cos/sin tables and angles in a low-precision dtype (docs/spec.md section 6)."""

from __future__ import annotations

from ..cases.case import GoldenCase
from .decoy import Decoy
from .facts import CaseFacts
from .model import BugClass, Family, Probe
from .rounding import LOW_DTYPES

__all__ = ["PRECISION_CLASSES"]

_U = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
_SHORT = {"bfloat16": "bf16", "float16": "fp16"}
#: table entries (distinct non-zero positions x pairs) a case needs for a table rounding to show
_MIN_TABLE_VALUES = 16


def _tables(dtype: str):
    def make(case: GoldenCase, _: object) -> Decoy:
        return Decoy(f"tables:{_SHORT[dtype]}", f"cos/sin tables rounded to {dtype} (after angles in the declared precision)",
                     round_tables=dtype)

    return make


def _angles(case: GoldenCase, how: object) -> Decoy:
    if how == "all":
        return Decoy("angles:bf16", "the whole angle computation in bfloat16 (positions, frequencies, p*w and the cos/sin tables)",
                     param="all", round_positions="bfloat16", round_freqs="bfloat16", round_angles="bfloat16", round_tables="bfloat16")
    return Decoy("angles:bf16", "angles p*w and the cos/sin tables computed in bfloat16", round_angles="bfloat16", round_tables="bfloat16")


def _tables_visible(dtype: str):
    def rule(f: CaseFacts) -> bool:
        p = f.precision
        if p.u_table >= _U[dtype] or _U[dtype] < 3.0 * (2.0 * p.u_out + 4.0 * p.u_table):
            return False
        if f.stage == "apply":
            return True
        # enough table entries that are not cos 1, sin 0 (exact in any dtype) for their rounding to show
        enough = f.distinct_nonzero * f.spec.n_pairs >= _MIN_TABLE_VALUES
        return f.has_positions and enough and p.u_angle * max(f.min_abs * f.w_min, 1.0) * 24.0 < _U[dtype] / 4.0

    return rule


def _angles_visible(f: CaseFacts) -> bool:
    p = f.precision
    # one pair: its angles p*w are exact in bfloat16 while they are small integers (w = 1: up to 256)
    inexact = f.spec.n_pairs >= 2 or f.max_abs * f.w_min > 256
    return (f.has_positions and f.any_nonzero and inexact and f.max_abs >= 8 and p.u_angle < 2.0**-12
            and f.tight(f.min_abs_nonzero) and 2.0**-9 * f.max_abs > 16.0 * (2.0 * p.u_out + 4.0 * p.u_table))


PRECISION_CLASSES: tuple[BugClass, ...] = tuple(
    BugClass(
        f"tables:{_SHORT[dt]}", 6, f"cos/sin tables stored in {dt} (after float32 or float64 angles)",
        frozenset({"cos_sin", "apply", "forward", "backward"}),
        "cos_sin, apply, forward, backward; every spec", f"tables rounded to {dt}, with the slack of the declared angle precision",
        f"a case whose output dtype and declared tables are finer than {dt}, at positions with a tight angle bound",
        Family(_tables(dt)), _tables_visible(dt), probes=(Probe("default", "near256"), Probe("default", "at0")),
    )
    for dt in LOW_DTYPES
) + (
    BugClass(
        "angles:bf16", 6, "angles and tables computed in bfloat16 (tables from bfloat16 angles)",
        frozenset({"cos_sin", "forward", "backward"}), "cos_sin, forward, backward; every spec",
        "angles rounded to bfloat16, then tables rounded to bfloat16", "angles past ~8 rad with a tight bound, output finer than bfloat16",
        Family(_angles, lambda c, h: (None, "all")), _angles_visible, probes=(Probe("default", "near4096"), Probe("default", "near256")),
    ),
)
