"""Narrow-interface wrong backends for the meta-tests: each offers a small part of the protocol and
has one bug (docs/spec.md section 6), like real engines that take only an offset, only build
tables, or only decode.

- :func:`offset_only_bf16`: forward/backward on contiguous positions shared by every row
  (``p0 + arange(T)``, a scalar offset), positions built in bfloat16 (rotary-embedding-torch's bug);
- :func:`tables_only_offsets_ignored`: only ``cos_sin``, ignores each row's offset;
- :func:`decode_only_row0`: forward on decode steps (T = 1, B > 1), uses row 0's position for every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bug_engines import BugEngine
from conformance.backends.base import Capabilities
from conformance.cases.case import GoldenCase
from conformance.vocabulary import FEATURES

__all__ = ["offset_only_bf16", "tables_only_offsets_ignored", "decode_only_row0", "NarrowEngine"]


@dataclass
class NarrowEngine(BugEngine):
    """A :class:`BugEngine` with narrower capabilities and an extra acceptance rule ``rule``."""

    rule: str = ""

    def supports(self, case: GoldenCase) -> bool | str:
        base = super().supports(case)
        if base is not True:
            return base
        x = case.arrays.get("x", case.arrays.get("grad"))
        if self.rule == "offset":
            if x is None or x.ndim != 4:
                return "takes bshd x [B, T, H, D] and one offset"
            pos = np.broadcast_to(case.positions, x.shape[:2])
            if not np.array_equal(pos, pos[0, 0] + np.broadcast_to(np.arange(x.shape[1]), pos.shape)):
                return "positions must be p0 + arange(T), the same for every row"
        if self.rule == "decode" and (x is None or x.ndim != 4 or x.shape[1] != 1):
            return "decode only: x [B, 1, H, D]"
        return True


def offset_only_bf16() -> NarrowEngine:
    caps = Capabilities(stages=frozenset({"forward", "backward"}), pairings=frozenset({"adjacent"}),
                        scaling_types=frozenset({"default", "linear"}), features=frozenset({"partial"}),
                        angle_dtype="float32", table_dtype="float32")
    e = NarrowEngine(bug="positions-bf16", precision="float32", capabilities=caps, rule="offset")
    e.name = "offset-only-bf16-positions"
    return e


def tables_only_offsets_ignored() -> NarrowEngine:
    caps = Capabilities(stages=frozenset({"cos_sin"}), scaling_types=frozenset({"default", "llama3"}),
                        features=frozenset(FEATURES), angle_dtype="float32", table_dtype="float32")
    e = NarrowEngine(bug="offsets-ignored", precision="float32", capabilities=caps)
    e.name = "tables-only-offsets-ignored"
    return e


def decode_only_row0() -> NarrowEngine:
    caps = Capabilities(stages=frozenset({"forward"}), pairings=frozenset({"half"}), dtypes=frozenset({"bfloat16", "float16", "float32"}),
                        scaling_types=frozenset({"default"}), features=frozenset({"per_batch_positions"}),
                        angle_dtype="float32", table_dtype="input")
    e = NarrowEngine(bug="row0-everywhere", precision="float32", capabilities=caps, rule="decode")
    e.name = "decode-only-row0"
    return e
