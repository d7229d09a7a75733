"""What ``roperef check`` judges by default: the goldens it supports plus cases generated for the
backend's interface; and the sections added to its report (coverage, run-level verdict).

Generated cases (:mod:`conformance.generated.plan`) obey ``--filter`` and ``--dtype`` like the
goldens; a generated id equal to a golden id is skipped (the golden wins).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..cases.case import GoldenCase
from ..generated.plan import Plan, materialize_all, plan_cases
from ..selection import select
from .coverage import coverage
from .runner import RunReport
from .verdict import run_verdict

__all__ = ["with_generated", "attach_sections"]


def with_generated(cases: Sequence[GoldenCase], backend: Any, filters: Sequence[str], dtypes: Sequence[str]) -> tuple[list[GoldenCase], int, Plan]:
    """``cases`` plus the selected generated cases of ``backend``: ``(cases, n_generated, plan)``.

    ValueError when nothing at all is selected."""
    plan = plan_cases(backend)
    have = {c.id for c in cases}
    chosen = [g for g in plan.cases if g.id not in have]
    if filters:
        chosen = select(chosen, ",".join(filters))
    if dtypes:
        chosen = [g for g in chosen if g.dtype in dtypes]
    generated = materialize_all(chosen)
    out = list(cases) + generated
    if not out:
        what = " and ".join(x for x in (f"--filter {','.join(filters)}" if filters else "", f"--dtype {','.join(dtypes)}" if dtypes else "") if x)
        raise ValueError(f"no case matches {what or 'the selection'} (goldens and the {len(plan.cases)} generated cases)")
    return out, len(generated), plan


def attach_sections(report: RunReport, cases: Sequence[GoldenCase], backend: Any, plan: Plan | None) -> None:
    """Set ``report.coverage`` and ``report.verdict``."""
    report.coverage = coverage(report, cases, backend, plan.expressible if plan is not None else None)
    report.verdict = run_verdict(report, cases)
