"""The Numba-parallel twin (:mod:`roperef.fast`) as a backend: the default of ``roperef check``.

``roperef.fast`` is imported (and its kernels compiled or loaded from the on-disk cache)
on the first stage call, never at import of this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..vocabulary import LAYOUTS, STAGES
from .base import Capabilities
from .roperef_module import RoperefModuleBackend

__all__ = ["NumbaBackend"]


@dataclass
class NumbaBackend(RoperefModuleBackend):
    """``roperef.fast`` behind the backend protocol (float64 arithmetic, two-term angles)."""

    name: str = "numba"
    module: str = "roperef.fast"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset(STAGES), angle_dtype="float64", table_dtype="float64", notes="roperef.fast (Numba, float64)",
            layouts=frozenset(LAYOUTS),
        )
    )
