"""What ``roperef check`` judges by default: the goldens it supports plus cases generated for the
backend's interface; and the sections added to its report (coverage, run-level verdict).

Generated cases (:mod:`conformance.generated.plan`) obey ``--filter`` and ``--dtype`` like the
goldens; a generated id equal to a golden id is skipped (the golden wins). :func:`check_cases` is
the one selection every route uses (``roperef check`` with or without ``--isolate``/``--timeout``/
``--jobs``, ``assert_rope_conforms``, the pytest plugin), so they judge the same case ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..bugs.exposure_cache import ExposureCache
from ..cases.case import GoldenCase
from ..generated.plan import Plan, materialize_all, plan_cases
from ..golden.case_source import CaseSource, load_cases
from ..selection import select
from ..usage_error import UsageError
from .coverage import coverage
from .runner import RunReport
from .verdict import run_verdict

__all__ = ["with_generated", "attach_sections", "check_cases"]


def with_generated(cases: Sequence[GoldenCase], backend: Any, filters: Sequence[str], dtypes: Sequence[str],
                   exposure: ExposureCache | None = None) -> tuple[list[GoldenCase], int, Plan]:
    """``cases`` plus the selected generated cases of ``backend``: ``(cases, n_generated, plan)``
    (``exposure``: :func:`conformance.generated.plan.plan_cases`'s).

    ValueError when nothing at all is selected."""
    plan = plan_cases(backend, exposure=exposure)
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


def check_cases(backend: Any, golden: str | None, tier: str, filters: Sequence[str] = (), dtypes: Sequence[str] = (), *,
                goldens_only: bool = False, generated_only: bool = False,
                set_hash: str | None = None, exposure: ExposureCache | None = None) -> tuple[CaseSource, Plan | None]:
    """The cases ``roperef check`` judges for ``backend``: the selected goldens plus the cases generated
    for its interface (``goldens_only`` / ``generated_only`` keep one source), and the generation plan
    (None with ``goldens_only``) for the coverage. UsageError when nothing at all is selected.
    ``set_hash`` pins the golden set's hash (:func:`conformance.golden.case_source.load_cases`); ``exposure``: the exposure rules' answers
    remembered between runs (:mod:`conformance.bugs.exposure_cache`; None: computed)."""
    filters = list(filters)
    try:
        if generated_only:
            source = CaseSource([], {"tier": tier, "directory": None, "selected": 0})
        else:
            source = load_cases(golden, tier, filters, dtypes, allow_empty=not goldens_only, set_hash=set_hash)
        if goldens_only:
            return source, None
        cases, n_gen, plan = with_generated(source.cases, backend, filters, dtypes, exposure)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    if not cases:
        raise UsageError(f"no case matches the selection (goldens and cases generated for {getattr(backend, 'name', 'the backend')})")
    return CaseSource(cases, dict(source.info, generated=n_gen, selected=len(cases))), plan


def attach_sections(report: RunReport, cases: Sequence[GoldenCase], backend: Any, plan: Plan | None,
                    exposure: ExposureCache | None = None) -> None:
    """Set ``report.coverage`` and ``report.verdict`` (``exposure``: :func:`coverage`'s)."""
    report.coverage = coverage(report, cases, backend, plan.expressible if plan is not None else None,
                               plan.refused if plan is not None else None, exposure)
    report.verdict = run_verdict(report, cases)
