"""The NumPy float64 reference as a backend (every stage; angles as exact two-term products).

It is the judge's own yardstick: it must PASS every case under the ``strict`` profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..vocabulary import LAYOUTS, STAGES
from .base import Capabilities
from .roperef_module import RoperefModuleBackend

__all__ = ["NumpyBackend"]


@dataclass
class NumpyBackend(RoperefModuleBackend):
    """``roperef.reference`` behind the backend protocol (float64 everything)."""

    name: str = "numpy"
    module: str = "roperef.reference"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset(STAGES), angle_dtype="float64", table_dtype="float64", notes="roperef.reference (float64)",
            layouts=frozenset(LAYOUTS),
        )
    )
