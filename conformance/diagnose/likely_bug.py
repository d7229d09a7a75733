"""Name the likely bug behind a FAIL: decoys of every bug class, judged at the backend's precision.

For every class of the catalogue (:mod:`conformance.bugs.catalogue`) that can occur in the
failing case, the class's best decoy is found (:func:`conformance.bugs.fit.best_decoy`: the
fixed decoy, or the free parameter fitted from the output) and judged with its own bound at
the precision the backend declared (:mod:`conformance.bugs.decoy`). Then:

- one decoy within its bound: *likely cause*, with the runner-up and its budget;
- several: a tie, "one of: A, B", with a case that would separate them when one is found
  (:mod:`conformance.diagnose.separate`); a parametric decoy that reproduces a fixed one is dropped
  from the tie (the fixed one is the more specific name);
- none: no class is named (never a "closest" guess); the summary says what the output measures
  (``measured``: the operator's description, :mod:`conformance.diagnose.operator`; without it, the
  inverse diagnosis of :mod:`conformance.diagnose.inverse` in words). The best non-matching decoys stay
  in ``candidates`` as data.

NaN/inf outputs get their own words (:mod:`conformance.diagnose.nonfinite`); declaration hints
(:mod:`conformance.diagnose.declaration`) are added by the caller. Decoys that equal the correct output
on the case are skipped: they cannot be told apart here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..bugs.catalogue import CATALOGUE
from ..bugs.decoy import budget
from ..bugs.fit import Candidate, best_decoy
from ..cases.case import GoldenCase
from ..error_model.expected import divide_rotated
from ..error_model.tolerance import Resolved
from .inverse import inverse_diagnosis
from .nonfinite import nonfinite_findings

__all__ = ["diagnose", "candidates_for", "DECOY_NAMES"]

Arr = np.ndarray
DECOY_NAMES = tuple(c.id for c in CATALOGUE)


def _param(c: Candidate) -> Any:
    p = c.decoy.param
    if isinstance(p, (np.integer,)):
        return int(p)
    if isinstance(p, (float, np.floating)):
        return float(f"{float(p):.6g}")
    return p


def _entry(c: Candidate) -> dict[str, Any]:
    out = {"name": c.cls.id, "words": c.decoy.words, "budget": c.budget, "section": c.cls.section}
    if c.decoy.param is not None:
        out["param"] = _param(c)
    return out


def _same(a: Candidate, b: Candidate) -> bool:
    bound = {k: np.maximum(a.run.bound[k], b.run.bound[k]) for k in a.run.bound}
    return budget(a.run.outputs, b.run.outputs, bound) <= 1.0


def candidates_for(case: GoldenCase, actual: Mapping[str, Arr], r: Resolved, expected: Mapping[str, Arr],
                   hints: Mapping[str, Any], divisor: float = 1.0) -> list[Candidate]:
    """Every class's best decoy on this case, smallest budget first."""
    out = []
    for cls in CATALOGUE:
        c = best_decoy(cls, case, r, actual, expected, hints)
        if c is None:
            continue
        if divisor != 1.0:
            c.run.outputs = divide_rotated(case, c.run.outputs, divisor)
            c.run.bound = divide_rotated(case, c.run.bound, divisor)
            c.budget = budget(actual, c.run.outputs, c.run.bound)
            c.distinct = budget(c.run.outputs, expected, c.run.bound)
            if c.distinct <= 1.0:
                continue
        out.append(c)
    out.sort(key=lambda c: c.budget)
    return out


def _rank(c: Candidate) -> int:
    """Specificity: a fixed decoy (0) before a parametric one (1) before a broad fallback family (2)."""
    return 2 if c.cls.fallback else 1 if c.cls.parameter is not None else 0


def _tie_group(cands: list[Candidate]) -> list[Candidate]:
    """The matching candidates, without those that merely reproduce a more specific matching one."""
    matches = [c for c in cands if c.budget <= 1.0]
    return [c for c in matches if not any(_rank(o) < _rank(c) and _same(c, o) for o in matches)]


def _words(c: Candidate) -> str:
    return f"{c.decoy.words} ({c.cls.id}, budget {c.budget:.3g})"


def diagnose(
    case: GoldenCase,
    actual: Mapping[str, Arr],
    r: Resolved,
    expected: Mapping[str, Arr] | None = None,
    *,
    divisor: float = 1.0,
    hints: Sequence[str] = (),
    separate: Callable[[GoldenCase, Sequence[Candidate], Resolved], dict[str, str] | None] | None = None,
    measured: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The diagnosis of one failing case (a JSON-ready dict; ``summary`` is the sentence for humans).

    Keys: ``match`` (class id or None), ``matches`` (the tie group), ``summary``, ``candidates``
    (up to 5 ``{name, words, budget, section[, param]}``, best first), ``runner_up``,
    ``separate`` (``{case, why}`` or None), ``inverse`` (words and effective quantities),
    ``nonfinite`` (words or None), ``hints`` (declaration hints). ``measured``: words describing the
    measured operator, said instead of the inverse diagnosis's when no class matches.
    """
    expected = expected or {k: np.asarray(v, dtype=np.float64) for k, v in case.expected().items()}
    with np.errstate(all="ignore"):
        nonfinite = nonfinite_findings(case, actual, expected)
        try:
            inverse = inverse_diagnosis(case, actual, r)
        except (ValueError, FloatingPointError, IndexError, ZeroDivisionError) as exc:
            inverse = {"words": [f"inverse diagnosis not possible: {exc}"], "hints": {}}
        fit_hints = inverse.pop("hints", {})
        cands = candidates_for(case, actual, r, expected, fit_hints, divisor)
    group = _tie_group(cands)
    others = [c for c in cands if c not in group and c.budget > 1.0]
    runner = others[0] if others else None
    sep = None
    if len(group) > 1 and separate is not None:
        try:
            sep = separate(case, group, r)
        except (ValueError, TypeError, KeyError, IndexError):
            sep = None
    inv_words = "; ".join(measured if measured is not None else inverse.get("words", []))
    if len(group) == 1:
        best = group[0]
        summary = f"likely cause: {best.decoy.words} (matches decoy {best.cls.id} within tolerance, budget {best.budget:.3g})"
        match = best.cls.id
    elif group:
        summary = "likely cause, one of: " + "; ".join(_words(c) for c in group) + " (they give the same output on this case"
        summary += f"; {sep['why']}: {sep['case']})" if sep else ")"
        match = group[0].cls.id
    else:
        summary = ("no known bug pattern matches" if cands else "no known bug pattern applies to this case")
        summary += f". The output itself says: {inv_words}" if inv_words else ""
        match = None
    if runner is not None and group:
        summary += f"; runner-up: {runner.cls.id} (budget {runner.budget:.3g})"
    if nonfinite:
        summary = f"{nonfinite}. {summary}"
    for h in hints:
        summary += f". {h}"
    return {
        "match": match,
        "matches": [c.cls.id for c in group],
        "summary": summary,
        "candidates": [_entry(c) for c in cands[:5]],
        "runner_up": _entry(runner) if runner is not None else None,
        "separate": sep,
        "inverse": inverse,
        "nonfinite": nonfinite,
        "hints": list(hints),
    }
