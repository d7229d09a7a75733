"""The backend protocol: what an implementation under test offers the judge.

A backend is any object with ``name``, ``capabilities`` (:class:`Capabilities`),
``supports(case) -> True | reason`` and any of the stages::

    inv_freq(spec, seq_len) -> (inv_freq, attention_factor)
    cos_sin(spec, positions) -> (cos, sin)                  # each [..., n]
    apply(x, cos, sin, spec) -> y
    forward(x, positions, spec, cu_seqlens=None) -> y       # bshd, or thd with cu_seqlens
    backward(grad, positions, spec, cu_seqlens=None) -> grad_x

Arrays cross the boundary as NumPy (any float dtype; bfloat16 via ml_dtypes). The
judge passes ``x``/``grad``/``cos``/``sin`` in the case dtype and positions as int64;
the backend returns its own dtype (the judge widens to float64 to compare).
"not supported" is its own status: :meth:`BaseBackend.supports` returns a reason
string, never raises, for anything outside the declared capabilities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from roperef.spec import PAIRINGS, SCALING_TYPES

from ..case import DTYPES, FEATURES, STAGES, GoldenCase, case_features

__all__ = ["Capabilities", "Backend", "BaseBackend", "backend_stages"]

_ALL_FEATURES = frozenset(FEATURES)


@dataclass(frozen=True)
class Capabilities:
    """What a backend declares about itself (used by ``supports`` and by the tolerance model).

    ``angle_dtype``: the dtype its inv_freq and angles ``p*w`` are computed in.
    ``table_dtype``: the dtype of its cos/sin tables and the multiply; ``"input"`` means the
    case dtype (engines that cast tables to bf16/fp16 inputs).
    ``applies_attention_factor``: whether ``s`` is folded into its output (else the judge
    compares against ``expected / s``).
    """

    stages: frozenset[str]
    pairings: frozenset[str] = frozenset(PAIRINGS)
    dtypes: frozenset[str] = frozenset(DTYPES)
    scaling_types: frozenset[str] = frozenset(SCALING_TYPES)
    features: frozenset[str] = _ALL_FEATURES
    angle_dtype: str = "float64"
    table_dtype: str = "float64"
    applies_attention_factor: bool = True
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": sorted(self.stages),
            "pairings": sorted(self.pairings),
            "dtypes": sorted(self.dtypes),
            "scaling_types": sorted(self.scaling_types),
            "features": sorted(self.features),
            "angle_dtype": self.angle_dtype,
            "table_dtype": self.table_dtype,
            "applies_attention_factor": self.applies_attention_factor,
            "notes": self.notes,
        }


@runtime_checkable
class Backend(Protocol):
    name: str
    capabilities: Capabilities

    def supports(self, case: GoldenCase) -> "bool | str": ...


def backend_stages(backend: object) -> frozenset[str]:
    """The stages a backend object actually implements (callable attributes named like a stage)."""
    return frozenset(s for s in STAGES if callable(getattr(backend, s, None)))


@dataclass
class BaseBackend:
    """Convenience base: ``supports`` from the declared capabilities and :meth:`library_reason`;
    subclasses add stage methods, override ``library_reason`` when they need an optional library
    (or a GPU), and may extend ``supports`` with case-specific reasons (call ``super().supports(case)`` first)."""

    name: str = "unnamed"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(stages=frozenset()))

    def supports(self, case: GoldenCase) -> "bool | str":
        caps = self.capabilities
        if case.stage not in caps.stages or case.stage not in backend_stages(self):
            return f"stage {case.stage} not implemented"
        if case.spec.pairing not in caps.pairings:
            return f"pairing {case.spec.pairing} not supported"
        if case.dtype not in caps.dtypes:
            return f"dtype {case.dtype} not supported"
        if case.spec.scaling.type not in caps.scaling_types:
            return f"scaling {case.spec.scaling.type} not supported"
        missing = sorted(case_features(case) - caps.features)
        if missing:
            return f"needs {', '.join(missing)}"
        return self.library_reason() or True

    def library_reason(self) -> "str | None":
        """Why the implementation cannot run here at all (library not installed, no GPU), or None."""
        return None
