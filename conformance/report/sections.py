"""The coverage and run-level diagnosis sections of every report (console, Markdown, JUnit, plot).

The sections are computed by :mod:`conformance.judge.coverage` and :mod:`conformance.judge.verdict` and
stored on the :class:`~conformance.judge.runner.RunReport` (``coverage``, ``verdict``); the JSON
report carries them as they are (docs/report-schema.md).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, TextIO

from ..judge.runner import RunReport
from ..judge.verdict import write_verdict_plot
from ..untrusted_text import for_markdown, for_terminal, for_xml
from .shape_text import shape_lines

__all__ = ["console_sections", "markdown_sections", "junit_sections", "write_verdict_png", "coverage_line"]


def coverage_line(cov: dict[str, Any]) -> str:
    frac = cov.get("fraction")
    pct = f" ({100 * frac:.0f}% of the {cov['expressible']} the interface can express)" if frac is not None else ""
    refused = sum(e["count"] for e in cov.get("planning_declined") or [])
    declined = f"; the backend declined {refused} declared generated case(s) while they were planned" if refused else ""
    return f"coverage: {cov['judged']} of {cov['total']} bug classes judged{pct}{declined}"


def _class_line(row: dict[str, Any]) -> str:
    if row["judged"]:
        wb = row.get("worst_budget")
        fail = f", {row['failing']} failing" if row.get("failing") else ""
        return f"  judged      {row['id']:<30} {row['cases']:>4} case(s){fail}, worst budget {wb:.3g}" if wb is not None else \
            f"  judged      {row['id']:<30} {row['cases']:>4} case(s){fail}"
    return f"  NOT judged  {row['id']:<30} {for_terminal(row['why'])}"


def console_sections(report: RunReport, out: TextIO, *, quiet: bool = False) -> None:
    """Coverage (per class, NOT_SUPPORTED reasons with counts) and the run-level diagnosis."""
    w = out.write
    cov = report.coverage
    if cov:
        w("\n" + coverage_line(cov) + ":\n")
        rows = cov["classes"] if not quiet else [r for r in cov["classes"] if not r["judged"]]
        for row in rows:
            w(_class_line(row) + "\n")
        ns = cov.get("not_supported") or []
        if ns:
            total = sum(e["count"] for e in ns)
            w(f"\nNOT_SUPPORTED reasons ({total} case(s)):\n")
            for e in ns[: (8 if quiet else 20)]:
                w(f"  {e['count']:>5}  {for_terminal(e['reason'])}\n")
            if len(ns) > (8 if quiet else 20):
                w(f"  ... and {len(ns) - (8 if quiet else 20)} more reasons\n")
        if cov.get("inconsistent"):
            w(f"  ({cov['inconsistent']} declined although declared: an inconsistent declaration, not a failure)\n")
        pd = cov.get("planning_declined") or []
        if pd:
            w(f"\ndeclined while the generated cases were planned ({sum(e['count'] for e in pd)} candidate(s) the "
              "interface declares; another candidate replaced each where one exists):\n")
            for e in pd[:8]:
                w(f"  {e['count']:>5}  {e['reason']}\n")
            if len(pd) > 8:
                w(f"  ... and {len(pd) - 8} more reasons\n")
        if cov.get("shapes"):
            w("\n" + "\n".join(shape_lines(cov["shapes"], quiet)) + "\n")
    v = report.verdict
    if v:
        w(f"\nrun-level diagnosis ({v['failing']} failing case(s)):\n")
        for line in v["words"]:
            w(f"  - {for_terminal(line)}\n")


def _md(text: str) -> str:
    return for_markdown(text)


def markdown_sections(report: RunReport) -> list[str]:
    lines: list[str] = []
    v = report.verdict
    if v:
        lines += ["", f"## Run-level diagnosis ({v['failing']} failing case(s))", ""] + [f"- {_md(x)}" for x in v["words"]]
    cov = report.coverage
    if cov:
        lines += ["", "## Coverage", "", coverage_line(cov) + ".", "",
                  "| bug class | spec section | judged | cases | failing | worst budget / why not |",
                  "|---|---|---|---:|---:|---|"]
        for r in cov["classes"]:
            if r["judged"]:
                wb = r.get("worst_budget")
                lines.append(f"| `{r['id']}` | {r['section']} | yes | {r['cases']} | {r['failing']} | {wb:.3g} |" if wb is not None else
                             f"| `{r['id']}` | {r['section']} | yes | {r['cases']} | {r['failing']} | - |")
            else:
                lines.append(f"| `{r['id']}` | {r['section']} | no | 0 | 0 | {_md(r['why'])} |")
        ns = cov.get("not_supported") or []
        if ns:
            lines += ["", "NOT_SUPPORTED reasons: " + "; ".join(f"{_md(e['reason'])} ({e['count']})" for e in ns[:12])]
        if cov.get("shapes"):
            head, *rest = shape_lines(cov["shapes"])
            lines += ["", "### Shapes", "", _md(head), ""] + [f"- {_md(x.strip())}" for x in rest]
    return lines


def junit_sections(report: RunReport, root: ET.Element) -> None:
    """A ``coverage`` testsuite: one testcase per bug class, skipped (with the reason) when not judged."""
    cov = report.coverage
    if not cov:
        return
    skipped = [r for r in cov["classes"] if not r["judged"]]
    suite = ET.SubElement(root, "testsuite", name="coverage", tests=str(len(cov["classes"])), failures="0", errors="0",
                          skipped=str(len(skipped)), time="0")
    props = ET.SubElement(suite, "properties")
    for key in ("judged", "expressible", "total", "fraction", "inconsistent"):
        ET.SubElement(props, "property", name=key, value=for_xml(cov.get(key)))
    if report.verdict:
        ET.SubElement(props, "property", name="run-level diagnosis", value=for_xml(report.verdict["summary"]))
    for r in cov["classes"]:
        tc = ET.SubElement(suite, "testcase", classname="roperef.coverage", name=r["id"], time="0")
        if r["judged"]:
            ET.SubElement(tc, "system-out").text = f"judged on {r['cases']} case(s), {r['failing']} failing, worst budget {r.get('worst_budget')}"
        else:
            ET.SubElement(tc, "skipped", message=for_xml(f"not judged: {r['why']}", limit=500))


def write_verdict_png(report: RunReport, directory: str | Path) -> Path | None:
    """``DIR/run-level.png``: the run's per-pair and per-position error profile (None when nothing failed)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = write_verdict_plot(report, str(out / "run-level.png"))
    return Path(path) if path else None
