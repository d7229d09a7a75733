"""``assert_rope_conforms(backend, filter=...)``: the judge inside a backend's own test suite.

    from conformance.assertions import assert_rope_conforms

    def test_my_kernel_conforms():
        assert_rope_conforms(MyBackend(), filter="forward/*/half/*")

Raises ``AssertionError`` listing every FAIL/ERROR as numpy.testing does (the mismatch
fraction and the worst elements: index, position, actual, expected, bound), with the
diagnosis and the repro command; returns the :class:`~conformance.judge.runner.RunReport` otherwise.
The helper hides its own frames from pytest tracebacks (``__tracebackhide__``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .backends.resolve import resolve_backend
from .cases.case import GoldenCase
from .golden.case_source import load_cases, user_case_source
from .judge.runner import RunOptions, run_cases
from .judge.xfail import load_xfail
from .report.failure_text import failure_text

__all__ = ["assert_rope_conforms"]


def assert_rope_conforms(
    backend: Any,
    filter: str | Sequence[str] | None = None,
    *,
    dtypes: Sequence[str] = (),
    tier: str = "smoke",
    profile: str | None = None,
    golden: str | None = None,
    xfail: str | None = None,
    cases: str | os.PathLike[str] | Sequence[GoldenCase] | None = None,
) -> Any:
    """Run the selected golden cases on ``backend`` (object, short name, module:attr or file.py:Name).

    ``cases``: a directory of your own cases (docs/user-cases.md; ``filter`` and ``dtypes``
    select among them) or a sequence of :class:`~conformance.cases.case.GoldenCase`; default: the
    golden set (``golden``, ``tier``)."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's

    obj = resolve_backend(backend)
    filters = [filter] if isinstance(filter, str) else list(filter or [])
    if isinstance(cases, (str, os.PathLike)):
        selected = user_case_source(os.fspath(cases), filters, dtypes).cases
    elif cases is not None:
        selected = list(cases)
    else:
        selected = load_cases(golden, tier, filters, dtypes).cases
    options = RunOptions(profile=profile, xfail=load_xfail(xfail) if xfail else None)
    report = run_cases(obj, selected, options)
    bad = [r for r in report.results if r.status in ("FAIL", "ERROR")]
    if bad:
        lines = [f"{len(bad)} of {len(report.results)} RoPE conformance case(s) failed (backend {report.backend}):"]
        lines += [f"note: {note}" for note in report.notes]
        lines += [failure_text(r) for r in bad]
        raise AssertionError("\n".join(lines))
    return report
