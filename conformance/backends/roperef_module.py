"""A roperef implementation module (``roperef.reference`` or ``roperef.fast``) behind the backend protocol.

Both modules have the same public functions (``inv_freq``, ``cos_sin``, ``apply``, ``forward``,
``backward``), so one class delegates every stage to the module named by ``module``. The module
is imported on the first stage call, never at import of this file (``roperef.fast`` then
compiles or loads its kernels).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from roperef.spec import RopeSpec

from .base import BaseBackend

__all__ = ["RoperefModuleBackend"]


@dataclass
class RoperefModuleBackend(BaseBackend):
    """Every stage of ``module`` (a dotted name); subclasses set ``name``, ``module`` and ``capabilities``."""

    module: str = "roperef.reference"

    def _module(self) -> ModuleType:
        return importlib.import_module(self.module)

    def inv_freq(self, spec: RopeSpec, seq_len: int) -> tuple[np.ndarray, float]:
        return self._module().inv_freq(spec, seq_len)

    def cos_sin(self, spec: RopeSpec, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._module().cos_sin(spec, positions)

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        return self._module().apply(x, cos, sin, spec)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: np.ndarray | None = None) -> np.ndarray:
        return self._module().forward(x, positions, spec, cu_seqlens)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: np.ndarray | None = None) -> np.ndarray:
        return self._module().backward(grad, positions, spec, cu_seqlens)
