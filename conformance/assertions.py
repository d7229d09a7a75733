"""``assert_rope_conforms(backend, filter=...)``: the judge inside a backend's own test suite.

    from conformance.assertions import assert_rope_conforms

    def test_my_kernel_conforms():
        assert_rope_conforms(MyBackend(), filter="forward/*/half/*")

It judges exactly what ``roperef check --backend ...`` judges (with the same filter and dtypes):
the golden cases plus the cases generated for the backend's interface
(:func:`conformance.judge.check_sources.check_cases`), with a built-in backend's shipped list of
known discrepancies applied (XFAIL) unless ``xfail=False``. Raises ``AssertionError`` listing every
FAIL/ERROR as numpy.testing does (the mismatch fraction and the worst elements: index, position,
actual, expected, bound), with the diagnosis and the repro command, and when nothing was judged
(every case NOT_SUPPORTED: ``roperef check`` exits 3); returns the
:class:`~conformance.judge.runner.RunReport` otherwise (with its coverage section).
IMPRECISE cases (a precision mechanism within a small factor of the bound) are a
:class:`UserWarning` unless ``fail_imprecise=True``; ``probe=False`` keeps the diagnosis from calling
the backend again with designed inputs.
The helper hides its own frames from pytest tracebacks (``__tracebackhide__``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .backends.resolve import resolve_backend
from .calls.stage_call import DEFAULT_TIMEOUT_S
from .cases.case import GoldenCase
from .golden.case_source import user_case_source
from .judge.check_sources import attach_sections, check_cases
from .judge.run_verdict import nothing_judged_line
from .judge.runner import RunOptions, run_cases
from .judge.xfail import choose_xfail
from .report.failure_text import failure_text
from .untrusted_text import for_terminal

__all__ = ["assert_rope_conforms"]


def assert_rope_conforms(
    backend: Any,
    filter: str | Sequence[str] | None = None,
    *,
    dtypes: Sequence[str] = (),
    tier: str = "smoke",
    profile: str | None = None,
    golden: str | None = None,
    xfail: str | os.PathLike[str] | bool | None = None,
    cases: str | os.PathLike[str] | Sequence[GoldenCase] | None = None,
    generated: bool = True,
    probe: bool = True,
    fail_imprecise: bool = False,
    set_hash: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> Any:
    """Judge ``backend`` (object, short name, module:attr or file.py:Name) as ``roperef check`` does.

    ``cases``: a directory of your own cases (docs/user-cases.md; ``filter`` and ``dtypes``
    select among them) or a sequence of :class:`~conformance.cases.case.GoldenCase`; default: the
    golden set (``golden``, ``tier``) plus the cases generated for the backend's interface
    (``generated=False``: the goldens only, as ``--goldens-only``). ``xfail``: a file of expected
    failures, ``False`` for none, ``None`` (default) for a built-in backend's shipped list. ``set_hash``
    pins the set's hash (as ``roperef check --set-hash``); ``timeout``: seconds per backend call."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's

    obj = resolve_backend(backend)
    filters = [filter] if isinstance(filter, str) else list(filter or [])
    plan = None
    if isinstance(cases, (str, os.PathLike)):
        selected = user_case_source(os.fspath(cases), filters, dtypes, set_hash=set_hash).cases
    elif cases is not None:
        selected = list(cases)
    else:
        source, plan = check_cases(obj, golden, tier, filters, dtypes, goldens_only=not generated, set_hash=set_hash)
        selected = source.cases
    listed = choose_xfail(xfail if isinstance(xfail, (str, Path, os.PathLike)) else None, xfail is not False, obj,
                          backend if isinstance(backend, str) else None)
    report = run_cases(obj, selected, RunOptions(profile=profile, xfail=listed, timeout=timeout, probe=probe,
                                                  fail_imprecise=fail_imprecise))
    attach_sections(report, selected, obj, plan)
    failing = ("FAIL", "ERROR", "IMPRECISE") if fail_imprecise else ("FAIL", "ERROR")
    bad = [r for r in report.results if r.status in failing]
    imprecise = [r for r in report.results if r.status == "IMPRECISE" and not fail_imprecise]
    if imprecise:
        warnings.warn(f"{len(imprecise)} RoPE conformance case(s) IMPRECISE (backend {for_terminal(report.backend)}):\n"
                      + "\n".join(failure_text(r) for r in imprecise), UserWarning, stacklevel=2)
    if bad:
        lines = [f"{len(bad)} of {len(report.results)} RoPE conformance case(s) failed (backend {for_terminal(report.backend)}):"]
        lines += [f"note: {for_terminal(note)}" for note in report.notes]
        lines += [failure_text(r) for r in bad]
        raise AssertionError("\n".join(lines))
    if report.judged == 0:
        notes = "".join(f"\nnote: {for_terminal(note)}" for note in report.notes)
        raise AssertionError(f"backend {for_terminal(report.backend)}: {for_terminal(nothing_judged_line(report))}{notes}")
    return report
