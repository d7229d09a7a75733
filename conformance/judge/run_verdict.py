"""The exit code of a judged run (``roperef check``), and the one line that explains a run that judged nothing.

Order of precedence: an interrupted run is ``INTERRUPTED`` (130; ``TERMINATED``, 143, when SIGTERM
stopped it) whatever it found so far; any FAIL or ERROR is ``FAILED`` (1), and so is any IMPRECISE
when the run was asked to fail on them (``RunOptions.fail_imprecise``, ``--fail-imprecise``); a run
in which every case was NOT_SUPPORTED is ``NOTHING_JUDGED`` (3), never 0, and so is a run whose every
judged case is an UNINFORMATIVE PASS (a bound as large as the output's own scale certifies nothing,
docs/conformance.md "A PASS must inform"); otherwise ``OK`` (0):
IMPRECISE cases (within a small factor of their bound, reproduced by a precision mechanism) are
reported as warnings, in the spirit of the Khronos conformance tests' QualityWarning, and do not
fail the run by default.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..exit_codes import ExitCode

__all__ = ["exit_code_for", "nothing_judged_line", "nothing_judged_why"]


def exit_code_for(report: Any) -> ExitCode:
    """The :class:`ExitCode` of a :class:`~conformance.judge.runner.RunReport` (see the module docstring)."""
    if report.interrupted:
        return ExitCode.TERMINATED if getattr(report, "stopped_by", None) == "SIGTERM" else ExitCode.INTERRUPTED
    if not report.ok:
        return ExitCode.FAILED
    if report.judged == 0 or getattr(report, "informed", report.judged) == 0:
        return ExitCode.NOTHING_JUDGED
    return ExitCode.OK


def nothing_judged_why(report: Any, top: int = 3) -> str:
    """Why a run judged nothing, in words: ``no case was selected``, or ``every case NOT_SUPPORTED (top
    reasons: 120 x "library torch is not installed"; ...)``. Every output mode prints it (the summary
    line, JSON ``summary.why_nothing_judged``, JUnit, Markdown), so ``-q`` says why as well."""
    if not report.results:
        return "no case was run"
    if report.judged and not getattr(report, "informed", report.judged):
        return (f"every judged case ({report.judged}) is an UNINFORMATIVE PASS: its bound is as large as the "
                "output's own scale, so it certifies nothing")
    reasons = Counter(r.message for r in report.results if r.status == "NOT_SUPPORTED")
    listed = "; ".join(f'{n} x "{why}"' for why, n in reasons.most_common(top))
    more = f"; {len(reasons) - top} other reason(s)" if len(reasons) > top else ""
    return f"every case NOT_SUPPORTED (top reasons: {listed}{more})"


def nothing_judged_line(report: Any, top: int = 3) -> str:
    """``nothing judged: 190 cases, all NOT_SUPPORTED (top reasons: 120 x "..."; ...)``."""
    why = nothing_judged_why(report, top).replace("every case NOT_SUPPORTED", "all NOT_SUPPORTED", 1)
    return f"nothing judged: {len(report.results)} cases, {why}"
