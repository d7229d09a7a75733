"""The Numba-parallel twin (:mod:`roperef.fast`) as a backend: the default of ``roperef check``.

``roperef.fast`` is imported (and its kernels compiled or loaded from the on-disk cache)
on the first stage call, never at import of this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from roperef.spec import RopeSpec

from ..case import STAGES
from .base import BaseBackend, Capabilities

__all__ = ["NumbaBackend"]


def _fast() -> ModuleType:
    from roperef import fast

    return fast


@dataclass
class NumbaBackend(BaseBackend):
    """``roperef.fast`` behind the backend protocol (float64 arithmetic, two-term angles)."""

    name: str = "numba"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset(STAGES), angle_dtype="float64", table_dtype="float64", notes="roperef.fast (Numba, float64)"
        )
    )

    def inv_freq(self, spec: RopeSpec, seq_len: int) -> tuple[np.ndarray, float]:
        return _fast().inv_freq(spec, seq_len)

    def cos_sin(self, spec: RopeSpec, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _fast().cos_sin(spec, positions)

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        return _fast().apply(x, cos, sin, spec)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: np.ndarray | None = None) -> np.ndarray:
        return _fast().forward(x, positions, spec, cu_seqlens)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: np.ndarray | None = None) -> np.ndarray:
        return _fast().backward(grad, positions, spec, cu_seqlens)
