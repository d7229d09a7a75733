"""The context sweep's section in the console, Markdown and JUnit reports (``RunReport.context``).

Reads the plain dict written by :func:`conformance.context.sweep.run_context` (docs/report-schema.md,
``context``); one line per stage x dtype: the certified position, the first failing one, where
IMPRECISE and UNINFORMATIVE begin, the sampling's resolution and the mechanism the judge measured.
"""

from __future__ import annotations

from typing import Any, TextIO

from ..judge.runner import CaseResult, RunReport
from ..untrusted_text import for_markdown, for_terminal

__all__ = ["row_words", "console_context", "markdown_context", "junit_context_text"]


def _p(v: Any) -> str:
    return "-" if v is None else str(v)


def row_words(row: dict[str, Any]) -> str:
    """``certified to 2097151; first FAIL at 4096 (boundary in (4095, 4096]); ...``."""
    if row.get("certified") is None and not row.get("positions"):
        return f"not swept: {row['status']} {row.get('message', '')}"
    words = [f"certified to position {_p(row['certified'])}" if row["certified"] is not None
             else "certified nowhere (position 0 already fails or certifies nothing)"]
    if row.get("first_fail") is not None:
        words.append(f"first FAIL at {row['first_fail']}")
    if row.get("imprecise_from") is not None:
        words.append(f"IMPRECISE from {row['imprecise_from']}")
    if row.get("uninformative_from") is not None:
        words.append(f"UNINFORMATIVE from {row['uninformative_from']}")
    if row.get("resolution"):
        lo, hi = row["resolution"]
        words.append(f"the boundary lies in ({lo}, {hi}] (sampled positions)")
    if row.get("declined"):
        words.append(f"swept only below: {row['declined']}")
    if row.get("mechanism"):
        words.append(f"judged: {row['mechanism']}")
    return "; ".join(words)


def console_context(report: RunReport, out: TextIO) -> None:
    ctx = report.context
    if not ctx:
        return
    out.write(f"\ncontext sweep: {ctx['sampled']} sampled positions in [0, {ctx['limit']}] ({ctx['per_octave']} random "
              f"per octave, seed {ctx['seed']}, plus 2^k-1, 2^k, 2^k+1); evidence over these positions, not a proof:\n")
    for row in ctx["rows"]:
        out.write(f"  {row['stage']:<9}{row['dtype']:<10}{row['status']:<14}{for_terminal(row_words(row), limit=600)}\n")


def markdown_context(report: RunReport) -> list[str]:
    ctx = report.context
    if not ctx:
        return []
    lines = ["", "## Context sweep", "", f"{ctx['sampled']} sampled positions in [0, {ctx['limit']}] "
             f"({ctx['per_octave']} random per octave, seed {ctx['seed']}); evidence over these positions, not a proof.", "",
             "| stage | dtype | status | certified | first FAIL | IMPRECISE from | UNINFORMATIVE from |", "|---|---|---|---|---|---|---|"]
    for r in ctx["rows"]:
        lines.append(f"| {r['stage']} | {r['dtype']} | {r['status']} | {_p(r['certified'])} | {_p(r['first_fail'])} | "
                     f"{_p(r['imprecise_from'])} | {_p(r['uninformative_from'])} |")
    lines += [f"- {r['stage']} {r['dtype']}: {for_markdown(row_words(r))}" for r in ctx["rows"] if r.get("mechanism")]
    return lines


def junit_context_text(report: RunReport, r: CaseResult) -> str | None:
    """The context row's words for its testcase (None when ``r`` is not a context row)."""
    ctx = report.context
    if not ctx or r.family != "context":
        return None
    for row in ctx["rows"]:
        if f"context/{row['stage']}/{row['dtype']}" == r.id:
            return f"context: {row_words(row)}"
    return None
