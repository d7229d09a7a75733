"""Engines whose certified context length is known by construction (for the context sweep's meta-tests).

Each is the float64 reference (:class:`conformance.backends.numpy_backend.NumpyBackend`, exact) with
one position defect built in before the rotation; the defect, not the judge, fixes the length:

- ``clamp-4096``: a cos/sin table of 2^12 rows indexed with clamping: positions >= 4096 read row 4095,
  so 4095 is the last right position and 4096 (sampled: 2^12) the first wrong one;
- ``int16-index``: positions through an int16 index: 32768 wraps to -32768 (32767 right, 32768 wrong);
- ``positions-bf16``: positions rounded to bfloat16 (8 significant bits): exact through 256, 257 rounds
  to 256 (ties to even), so 256 is the last right position and 257 (sampled: 2^8 + 1) the first wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from conformance.backends.numpy_backend import NumpyBackend

#: engine -> (certified, first failing position) by construction
CONSTRUCTED: dict[str, tuple[int, int]] = {
    "clamp-4096": (4095, 4096),
    "int16-index": (32767, 32768),
    "positions-bf16": (256, 257),
}


def wrong_positions(defect: str, positions: np.ndarray) -> np.ndarray:
    p = np.asarray(positions, dtype=np.int64)
    if defect == "clamp-4096":
        return np.minimum(p, 4095)
    if defect == "int16-index":
        return p.astype(np.int16).astype(np.int64)
    if defect == "positions-bf16":
        rounded = p.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
        return np.minimum(rounded, 2**31 - 1).astype(np.int64)  # 2^31 - 1 rounds to 2^31: saturate
    raise ValueError(defect)


@dataclass
class PositionDefect(NumpyBackend):
    """The reference with ``defect`` applied to its positions (cos_sin, forward, backward)."""

    defect: str = "clamp-4096"

    def __post_init__(self) -> None:
        self.name = f"context-{self.defect}"

    def cos_sin(self, spec, positions):
        return super().cos_sin(spec, wrong_positions(self.defect, positions))

    def forward(self, x, positions, spec, cu_seqlens=None):
        return super().forward(x, wrong_positions(self.defect, positions), spec, cu_seqlens)

    def backward(self, grad, positions, spec, cu_seqlens=None):
        return super().backward(grad, wrong_positions(self.defect, positions), spec, cu_seqlens)
