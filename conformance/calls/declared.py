"""What a backend declares it can run: its capabilities, with the stages it really implements.

A leaf module. The runner uses :func:`declaration_gap` to tell an inconsistent declaration
(the backend declines, or lacks the stage for, a case its capabilities declare, without the
:meth:`~conformance.backends.base.BaseBackend.case_reason` / ``library_reason`` channel made for
declining) from an honest NOT_SUPPORTED; the case generator and the coverage section use :class:`Interface`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..backends.base import backend_methods, backend_stages
from ..bugs.facts import Precision
from ..cases.case import GoldenCase, outside_interface

__all__ = ["Interface", "declaration_gap", "undeclared", "INCONSISTENT"]

#: the prefix of a NOT_SUPPORTED message for a case the backend's capabilities declare
INCONSISTENT = "inconsistent declaration: declined a case its capabilities declare"



def undeclared(iface: Any, case: GoldenCase) -> str | None:
    """What of ``case`` falls outside an interface's declared ``stages``, ``pairings``, ``dtypes``,
    ``scaling_types`` and ``features`` (any object with those collections), or None when inside."""
    out = outside_interface(iface, case)
    if out is None:
        return None
    kind, what = out
    if kind in ("max_position", "shared_tables"):
        return what
    return f"feature(s) {what}" if kind == "features" else f"{kind} {what}"

@dataclass(frozen=True)
class Interface:
    """What a backend declares (its capabilities, with the stages it really implements); ``methods``:
    the call-form methods it implements (``forward_qk``, ...: :func:`~conformance.backends.base.backend_methods`)."""

    stages: frozenset[str]
    pairings: frozenset[str]
    dtypes: frozenset[str]
    scaling_types: frozenset[str]
    features: frozenset[str]
    angle_dtype: str
    table_dtype: str
    declared_stages: frozenset[str] = frozenset()
    max_position: int | None = None
    shared_tables: bool = False
    layouts: frozenset[str] = frozenset()
    call_forms: frozenset[str] = frozenset()
    qk_shapes: frozenset[str] = frozenset()
    methods: frozenset[str] = frozenset()

    @classmethod
    def of(cls, backend: Any) -> Interface:
        caps = backend.capabilities
        declared = frozenset(getattr(caps, "stages", ()))
        limit = getattr(caps, "max_position", None)
        return cls(declared & backend_stages(backend), frozenset(caps.pairings), frozenset(caps.dtypes),
                   frozenset(caps.scaling_types), frozenset(caps.features), str(caps.angle_dtype), str(caps.table_dtype),
                   declared, None if limit is None else int(limit), bool(getattr(caps, "shared_tables", False)),
                   frozenset(getattr(caps, "layouts", ())), frozenset(getattr(caps, "call_forms", ())),
                   frozenset(getattr(caps, "qk_shapes", ())), backend_methods(backend))

    def declares(self, case: GoldenCase) -> str | None:
        """None if the declared capabilities cover ``case``, else what is missing."""
        return undeclared(self, case)

    def precision(self, dtype: str) -> Precision:
        return Precision.of(self.angle_dtype, self.table_dtype, dtype)


def declaration_gap(backend: Any, case: GoldenCase) -> str | None:
    """Why the backend's declaration does not cover ``case`` (None: it does). A stage declared in
    the capabilities but not implemented counts as declared (that is the inconsistency)."""
    try:
        iface = Interface.of(backend)
    except (AttributeError, TypeError):
        return "no capabilities"
    if case.stage in iface.declared_stages and case.stage not in iface.stages:
        iface = replace(iface, stages=iface.stages | {case.stage})
    return iface.declares(case)
