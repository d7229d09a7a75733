"""UNINFORMATIVE PASSes in every report format: a PASS whose bound is as large as the output's own scale.

A case is UNINFORMATIVE when ``Metrics.admitted`` (the worst token's ``sqrt(sum bound^2 / sum
expected^2)``, :func:`conformance.error_model.tolerance.admitted_error`) is at least
:data:`~conformance.error_model.tolerance.UNINFORMATIVE_C` = 1/2: the bound would accept an error
carrying a quarter of the output's energy there (float32 angles near 2^30 admit ``max|err| = 6``).
Its status stays PASS (the backend did nothing the judge can show is wrong) but the reports say it
certifies nothing; a run whose every judged case is UNINFORMATIVE exits NOTHING_JUDGED (3), never OK.
"""

from __future__ import annotations

from typing import Any, TextIO

from ..error_model.tolerance import UNINFORMATIVE_C
from ..judge.runner import CaseResult, RunReport
from ..untrusted_text import for_markdown, for_terminal, markdown_code

__all__ = ["uninformative_words", "summary_suffix", "console_uninformative", "markdown_uninformative",
           "junit_text", "uninformative_summary"]


def uninformative_words(r: CaseResult) -> str:
    """``the bound admits a relative error of 3.2 (>= 0.5): this PASS certifies nothing``."""
    admitted = r.metrics.admitted if r.metrics is not None else float("nan")
    return (f"the bound admits a relative error of {admitted:.3g} at one token (>= {UNINFORMATIVE_C:g} of the "
            "output's RMS): this PASS certifies nothing")


def summary_suffix(report: RunReport) -> str:
    """``, 12 of them UNINFORMATIVE`` for the summary line ('' when none)."""
    n = report.uninformative
    return f" ({n} PASS UNINFORMATIVE: the bound is as large as the output)" if n else ""


def console_uninformative(report: RunReport, out: TextIO, top: int = 10) -> None:
    """The UNINFORMATIVE PASSes, the ``top`` largest admitted errors first."""
    rows = sorted((r for r in report.results if r.uninformative), key=lambda r: -(r.metrics.admitted if r.metrics else 0.0))
    if not rows:
        return
    out.write(f"\nUNINFORMATIVE (PASS within a bound as large as the output; certifies nothing): {len(rows)} case(s)\n")
    for r in rows[:top]:
        m = r.metrics
        assert m is not None  # uninformative implies metrics
        out.write(f"  UNINF  {for_terminal(r.id)}: admitted {m.admitted:.3g}, max|err|={m.max_abs_error:.3g} "
                  f"nmse={m.nmse:.3g}\n")
    if len(rows) > top:
        out.write(f"  ... and {len(rows) - top} more (JSON: results[].uninformative)\n")


def markdown_uninformative(report: RunReport) -> list[str]:
    """A Markdown section listing the UNINFORMATIVE PASSes ([] when none)."""
    rows = [r for r in report.results if r.uninformative]
    if not rows:
        return []
    lines = ["", "## UNINFORMATIVE", "", f"{len(rows)} PASS(es) within a bound as large as the output's own scale "
             f"(admitted relative error >= {UNINFORMATIVE_C:g}): they certify nothing.", "",
             "| case | admitted | max abs error | nmse |", "|---|---|---|---|"]
    for r in rows:
        m = r.metrics
        assert m is not None
        lines.append(f"| {markdown_code(r.id)} | {m.admitted:.3g} | {m.max_abs_error:.3g} | {for_markdown(f'{m.nmse:.3g}')} |")
    return lines


def junit_text(r: CaseResult) -> str | None:
    """The system-out text of an UNINFORMATIVE PASS's testcase (None for any other result)."""
    return f"UNINFORMATIVE PASS: {uninformative_words(r)}" if r.uninformative else None


def uninformative_summary(report: Any) -> dict[str, Any]:
    """The JSON ``summary.uninformative`` object: count and the rule's constant."""
    return {"count": int(report.uninformative), "threshold": UNINFORMATIVE_C, "informed": int(report.informed)}

