"""Which case would separate two bug classes that give the same output on a failing case.

For a tie ("one of: A, B"), the same spec and stage are tried on the other position
regimes of the generator (:mod:`conformance.generated.positions`); the first case on which
the tied decoys differ by more than their bounds is named, with its id (runnable with
``roperef check --filter ID``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..bugs.decoy import budget, run_decoy
from ..bugs.fit import Candidate
from ..cases.case import GoldenCase
from ..error_model.tolerance import Resolved
from ..generated.plan import GenCase, light_case, materialize_all
from ..generated.positions import REGIMES

__all__ = ["separating_case"]

_ORDER = ("rows", "near4096", "step", "sparse", "near256", "at0", "packed", "near65536", "past-L0", "below-L0", "at-L0", "past-M", "at-M")


def _variants(case: GoldenCase) -> list[GenCase]:
    out = []
    kind = "mrope" if case.spec.mrope_section is not None else "vision" if case.spec.vision is not None else "plain"
    for name in _ORDER + tuple(r for r in REGIMES if r not in _ORDER):
        reg = REGIMES[name]
        if {"mrope": "mrope", "vision": "vision"}.get(reg.kind, "plain") != kind:
            continue
        if case.stage == "inv_freq" and reg.seq_len == int(np.asarray(case.arrays["seq_len"])):
            continue
        if case.stage == "apply" and reg.kind not in ("shared", "rows"):
            continue
        cid = f"{case.family}/separate-{case.id.split('/')[1]}/{case.spec.pairing}/{case.dtype}/{name}"
        try:
            out.append(GenCase(cid, case.stage, "", case.spec, case.dtype, reg, light_case(cid, case.stage, case.spec, case.dtype, reg)))
        except (ValueError, TypeError):
            continue
    return out


def separating_case(case: GoldenCase, group: Sequence[Candidate], r: Resolved) -> dict[str, str] | None:
    """``{"case": description, "why": words}`` for the first regime that separates the tied classes, or None."""
    for g in _variants(case)[:8]:
        (alt,) = materialize_all([g])
        runs = []
        for c in group[:3]:
            d = c.cls.family.make(alt, c.decoy.param)
            if d is None:
                break
            runs.append(run_decoy(alt, d, r))
        if len(runs) < min(len(group), 3):
            continue
        distinct = all(
            budget(a.outputs, b.outputs, {k: np.maximum(a.bound[k], b.bound[k]) for k in a.bound}) > 1.0
            for i, a in enumerate(runs) for b in runs[i + 1:]
        )
        if distinct:
            what = f"the same spec and stage at positions {g.regime.name} ({g.regime.tag})"
            return {"case": what, "why": "a case that separates them"}
    return None
