"""Coverage, said out loud: which bug classes a run judged, and why the others were not.

For every class of the catalogue (:mod:`conformance.bugs.catalogue`):

- *judged*: the judged cases (PASS, FAIL, XFAIL, XPASS) that expose it (the class can occur in
  the case and its exposure rule holds at the backend's declared precision), how many, how many
  failed, and the worst budget among them;
- *not judged*, with the reason: the interface cannot express it (the declaration lacks the
  stage, scaling type or feature; from :func:`conformance.generated.plan.plan_cases`), the backend
  declined every case it declared for it (NOT_SUPPORTED although declared: an inconsistent
  declaration), every exposing case was an ERROR, or no selected case exposes it (a filter,
  ``--goldens-only``).

Also the NOT_SUPPORTED reasons with their counts, the reasons the backend gave for declining
declared candidates while the generated cases were planned (``planning_declined``: such a candidate
is replaced by another where one exists, so the cases judged are fewer than the interface declares;
the line says so instead of a silent 100%), and the shapes judged (token, head, pair and batch
boundaries, layouts, call forms: :mod:`conformance.judge.shape_coverage`). The fraction ``judged / expressible`` is the
number docs/backends.md shows per backend.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ..bugs.catalogue import CATALOGUE
from ..bugs.exposure_cache import ExposureCache
from ..bugs.facts import case_facts
from ..calls.declared import INCONSISTENT, Interface
from ..cases.case import GoldenCase
from .runner import RunReport
from .shape_coverage import shape_coverage

__all__ = ["coverage", "JUDGED"]

JUDGED = frozenset({"PASS", "FAIL", "IMPRECISE", "XFAIL", "XPASS"})


def _budget(r: Any) -> float | None:
    return r.metrics.budget_used if r.metrics is not None else None


def coverage(report: RunReport, cases: Iterable[GoldenCase], backend: Any,
             expressible: Mapping[str, str | None] | None = None,
             refused: Mapping[str, int] | None = None, exposure: ExposureCache | None = None) -> dict[str, Any]:
    """The coverage section of a run (JSON-ready; see the module docstring). ``refused``: the
    ``supports()`` reasons the backend gave while the generated cases were planned, with counts
    (:attr:`conformance.generated.plan.Plan.refused`); ``exposure``: the exposure rules' answers remembered
    between runs (:mod:`conformance.bugs.exposure_cache`; None: computed)."""
    exposed_by = exposure.exposed if exposure is not None else (lambda cls, facts: cls.exposed(facts))
    by_id = {c.id: c for c in cases}
    try:
        iface: Interface | None = Interface.of(backend)
    except (AttributeError, TypeError):
        iface = None
    exposed: dict[str, list[tuple[Any, GoldenCase]]] = {c.id: [] for c in CATALOGUE}
    for r in report.results:
        case = by_id.get(r.id)
        if case is None:
            continue
        facts = None
        for cls in CATALOGUE:
            if not cls.occurs_in(case):
                continue
            if facts is None:
                prec = iface.precision(case.dtype) if iface is not None else None
                facts = case_facts(case, prec)
            if exposed_by(cls, facts):
                exposed[cls.id].append((r, case))
    rows = []
    for cls in CATALOGUE:
        hits = exposed[cls.id]
        judged = [r for r, _ in hits if r.status in JUDGED]
        row: dict[str, Any] = {"id": cls.id, "section": cls.section, "words": cls.words}
        if judged:
            budgets = [b for r in judged if (b := _budget(r)) is not None]
            row.update(judged=True, cases=len(judged), failing=sum(r.status in ("FAIL", "XFAIL") for r in judged),
                       worst_budget=max(budgets) if budgets else None)
        else:
            row["judged"] = False
            why = (expressible or {}).get(cls.id)
            declined = [r for r, _ in hits if r.status == "NOT_SUPPORTED" and r.message.startswith(INCONSISTENT)]
            errors = [r for r, _ in hits if r.status == "ERROR"]
            if why:
                row["why"] = why
            elif declined:
                reasons = sorted({r.message[len(INCONSISTENT) + 2:] for r in declined})
                row["why"] = f"the backend declined the {len(declined)} case(s) it declared for it ({'; '.join(reasons[:3])})"
            elif errors:
                row["why"] = f"every exposing case was an ERROR ({len(errors)})"
            elif hits:
                top = Counter(r.message for r, _ in hits).most_common(1)[0][0]
                row["why"] = f"NOT_SUPPORTED on the {len(hits)} selected case(s) that expose it ({top})"
            else:
                row["why"] = "no selected case exposes it (filter, --goldens-only or the case set)"
        rows.append(row)
    expressible_ids = [r["id"] for r in rows if not str(r.get("why", "")).startswith("the interface cannot express it")]
    judged_n = sum(r["judged"] for r in rows)
    unsupported = Counter(r.message for r in report.results if r.status == "NOT_SUPPORTED")
    return {
        "classes": rows,
        "total": len(rows),
        "expressible": len(expressible_ids),
        "judged": judged_n,
        "fraction": (sum(r["judged"] for r in rows if r["id"] in expressible_ids) / len(expressible_ids)) if expressible_ids else None,
        "not_supported": [{"reason": m, "count": n} for m, n in sorted(unsupported.items(), key=lambda kv: (-kv[1], kv[0]))],
        "inconsistent": sum(n for m, n in unsupported.items() if m.startswith(INCONSISTENT)),
        "planning_declined": [{"reason": m, "count": n} for m, n in sorted((refused or {}).items(), key=lambda kv: (-kv[1], kv[0]))],
        "shapes": shape_coverage(report.results, by_id.values()),
    }
