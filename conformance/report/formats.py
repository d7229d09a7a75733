"""Reports of a run: console table, JSON (docs/report-schema.md), JUnit XML, Markdown, plots.

Every FAIL/ERROR line ends with a copy-paste command that reproduces just that case.
Report files are written atomically (a temporary file beside the target, then ``os.replace``):
a full disk or a read-only directory leaves the old file or none, never a partial one. A run
stopped by Ctrl-C or SIGTERM is reported as such (``INTERRUPTED`` in the summary,
``summary.interrupted``, ``summary.stopped_by`` and ``summary.not_run`` in the JSON); a run that
judged nothing says why in its summary line, in every format.

Text the judge did not write (backend messages and names, NOT_SUPPORTED reasons, case ids from
user folders) goes through :mod:`conformance.untrusted_text` on every output: escaped for the
terminal, valid XML in JUnit, inert in Markdown, clipped everywhere.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import numpy

from ..exit_codes import ExitCode
from ..golden.atomic_files import write_bytes_atomic, write_text_atomic
from ..judge.run_verdict import exit_code_for, nothing_judged_why
from ..judge.runner import STATUSES, CaseResult, RunReport
from ..untrusted_text import for_markdown, for_terminal, for_xml, markdown_code
from .context_text import console_context, junit_context_text, markdown_context
from .sections import console_sections, junit_sections, markdown_sections
from .uninformative import console_uninformative, junit_text, markdown_uninformative, summary_suffix, uninformative_summary

__all__ = [
    "SCHEMA", "console", "to_json", "write_json", "write_junit", "write_markdown", "write_plots", "environment", "summary_line", "failure_line",
    "plot_file_name",
]

SCHEMA = "roperef-check-report/1"


def environment() -> dict[str, Any]:
    """Versions and machine, for the JSON report."""
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "numpy": numpy.__version__,
    }
    for mod in ("numba", "ml_dtypes", "roperef"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception:
            env[mod] = None
    return env


def _family_rows(report: RunReport) -> list[tuple[str, dict[str, int]]]:
    fams: dict[str, dict[str, int]] = {}
    for r in report.results:
        fams.setdefault(r.family, {s: 0 for s in STATUSES})[r.status] += 1
    return sorted(fams.items())


def _budget(r: CaseResult) -> float:
    return r.metrics.budget_used if r.metrics else 0.0


def summary_line(report: RunReport) -> str:
    """The one line that ends every report: the verdict, counts and time; why, when nothing was judged."""
    c = report.counts()
    parts = ", ".join(f"{c[s]} {s}" for s in STATUSES if c[s])
    if report.interrupted:
        by = "SIGTERM" if getattr(report, "stopped_by", None) == "SIGTERM" else "Ctrl-C"
        return (f"INTERRUPTED: {len(report.results)} cases judged before {by}, {report.not_run} not run "
                f"({parts or 'none'}) in {report.seconds:.1f} s")
    verdict = "FAILED" if not report.ok else "NOTHING JUDGED" if report.judged == 0 or report.informed == 0 else "OK"
    if verdict == "OK" and c.get("IMPRECISE"):
        verdict = f"OK with {c['IMPRECISE']} IMPRECISE (a precision mechanism; --fail-imprecise makes them fail)"
    line = f"{verdict}: {len(report.results)} cases ({parts or 'none'}){summary_suffix(report)} in {report.seconds:.1f} s"
    if verdict == "NOTHING JUDGED":
        line += f": {for_terminal(nothing_judged_why(report), limit=400)}"
    return line


def failure_line(r: CaseResult) -> str:
    """One FAIL/ERROR/XFAIL row as the console prints it: status, id, message, diagnosis, xfail reason, repro."""
    diag = f"; {for_terminal(r.diagnosis['summary'])}" if r.diagnosis else ""
    xf = f" [xfail: {for_terminal(r.xfail_reason)}]" if r.xfail_reason else ""
    tail = f"\n      repro: {for_terminal(r.repro)}" if r.repro else ""
    return f"  {r.status:<6} {for_terminal(r.id)}: {for_terminal(r.message)}{diag}{xf}{tail}"


def console(report: RunReport, out: TextIO, *, golden: Mapping[str, Any] | None = None, worst: int = 5) -> None:
    """The human report: header, table per family, worst cases, failures with repro commands."""
    w = out.write
    prof = report.profile
    w(f"roperef check: backend {for_terminal(report.backend)} (angles {report.capabilities.get('angle_dtype')}, "
      f"tables {report.capabilities.get('table_dtype')})\n")
    if report.capabilities.get("notes"):
        w(f"backend notes: {for_terminal(report.capabilities['notes'])}\n")
    w(f"profile {prof.get('name')}: c_out={prof.get('c_out'):g} c_tab={prof.get('c_tab'):g} c_ang={prof.get('c_ang'):g} "
      f"c_log={prof.get('c_log'):g} c_blend={prof.get('c_blend', 0):g} c_floor={prof.get('c_floor'):g} "
      f"(angle dtype {prof.get('angle_dtype')}, table dtype {prof.get('table_dtype')})\n")
    if golden and golden.get("directory") is None and golden.get("source"):
        w(f"golden set: {for_terminal(golden['source'])}\n")
    elif golden:
        what = "your cases" if golden.get("tier") == "user" else "golden set"
        w(f"{what} {for_terminal(golden.get('directory'))} (hash {str(golden.get('set_hash'))[:16]}, tier "
          f"{golden.get('tier')})\n")
        if golden.get("anchor"):
            w(f"  set hash {golden.get('set_hash')}: {for_terminal(golden['anchor'])}\n")
    if report.xfail_source:
        n = sum(r.xfail_reason is not None for r in report.results)
        w(f"expected failures: {for_terminal(report.xfail_source)} (matched {n} case(s))\n")
    for note in report.notes:
        w(f"note: {for_terminal(note)}\n")
    head = f"{'family':<10}" + "".join(f"{s:>14}" for s in STATUSES) + f"{'worst budget':>14}\n"
    w("\n" + head + "-" * (len(head) - 1) + "\n")
    for fam, counts in _family_rows(report):
        worst_b = max((_budget(r) for r in report.results if r.family == fam), default=0.0)
        w(f"{for_terminal(fam):<10}" + "".join(f"{counts[s]:>14}" for s in STATUSES) + f"{worst_b:>14.3g}\n")
    ranked = sorted(((r, m) for r in report.results if (m := r.metrics)), key=lambda rm: _budget(rm[0]), reverse=True)[:worst]
    if ranked:
        w("\nhighest budget used (error / bound; pass <= 1):\n")
        for r, m in ranked:
            w(f"  {m.budget_used:9.3g}  {r.status:<6} {for_terminal(r.id)}  max|err|={m.max_abs_error:.3g} nmse={m.nmse:.3g}\n")
    bad = [r for r in report.results if r.status in ("FAIL", "ERROR", "IMPRECISE", "XFAIL", "XPASS")]
    if bad:
        w("\nproblems:\n")
        for r in bad:
            w(failure_line(r) + "\n")
    console_uninformative(report, out)
    console_context(report, out)
    if report.probe_calls:
        w(f"\nprobing: {report.probe_calls} extra backend call(s) for {report.probe_groups} failing group(s) (--no-probe: none)\n")
    if report.stale_xfails:
        w("\nstale expected-failure entries:\n")
        for e in report.stale_xfails:
            w(f"  line {e['line']}: {for_terminal(e['pattern'])} ({for_terminal(e['why'])})\n")
    console_sections(report, out)
    if report.notes and not report.ok:
        w("\n" + "".join(f"note: {for_terminal(note)}\n" for note in report.notes))
    w("\n" + summary_line(report) + "\n")


def to_json(report: RunReport, *, golden: Mapping[str, Any] | None = None, command: list[str] | None = None) -> dict[str, Any]:
    """The JSON document (schema :data:`SCHEMA`, documented in docs/report-schema.md)."""
    return {
        "schema": SCHEMA,
        "command": command,
        "environment": environment(),
        "golden": dict(golden or {}),
        "backend": {"name": report.backend, "capabilities": report.capabilities, "notes": list(report.notes)},
        "profile": report.profile,
        "summary": {"ok": exit_code_for(report) == ExitCode.OK, "exit_code": int(exit_code_for(report)),
                    "counts": report.counts(), "cases": len(report.results), "seconds": round(report.seconds, 3),
                    "judged": report.judged, "interrupted": report.interrupted, "not_run": report.not_run, "jobs": report.jobs,
                    "fail_imprecise": report.fail_imprecise,
                    "probe": {"calls": report.probe_calls, "groups": report.probe_groups},
                    "stopped_by": getattr(report, "stopped_by", None),
                    "uninformative": uninformative_summary(report),
                    "why_nothing_judged": nothing_judged_why(report) if report.judged == 0 or report.informed == 0 else None},
        "stale_xfails": report.stale_xfails,
        "xfail": report.xfail_source,
        "coverage": report.coverage,
        "verdict": report.verdict,
        "context": report.context,
        "results": [r.to_dict() for r in report.results],
    }


def _finite_json(obj: Any) -> Any:
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_json(v) for v in obj]
    return obj


def write_json(report: RunReport, path: str | Path, **kw: Any) -> None:
    write_text_atomic(path, json.dumps(_finite_json(to_json(report, **kw)), indent=1) + "\n")


def _junit_notes(suite: ET.Element, report: RunReport) -> None:
    """The backend's own notes (``Capabilities.notes``) and the run's notes as ``<properties>`` of a testsuite."""
    items = [("backend notes", str(report.capabilities.get("notes") or ""))] + [("note", n) for n in report.notes]
    items = [(k, v) for k, v in items if v]
    if items:
        props = ET.SubElement(suite, "properties")
        for key, value in items:
            ET.SubElement(props, "property", name=key, value=for_xml(value, limit=500))


def write_junit(report: RunReport, path: str | Path) -> None:
    """JUnit XML: one testsuite per family, one testcase per case (skipped = NOT_SUPPORTED/XFAIL).

    Every text is valid XML 1.0 (:func:`conformance.untrusted_text.for_xml`), attribute messages cut at 500."""
    x = for_xml
    root = ET.Element("testsuites", name=x(f"roperef check {report.backend}"), time=f"{report.seconds:.3f}")
    by_family: dict[str, list[CaseResult]] = {}
    for r in report.results:
        by_family.setdefault(r.family, []).append(r)
    for fam, results in sorted(by_family.items()):
        suite = ET.SubElement(
            root, "testsuite", name=x(fam), tests=str(len(results)),
            failures=str(sum(r.status == "FAIL" or (r.status == "IMPRECISE" and report.fail_imprecise) for r in results)),
            errors=str(sum(r.status == "ERROR" for r in results)),
            skipped=str(sum(r.status in ("NOT_SUPPORTED", "XFAIL") for r in results)),
            time=f"{sum(r.seconds for r in results):.3f}",
        )
        _junit_notes(suite, report)
        for r in results:
            tc = ET.SubElement(suite, "testcase", classname=x(f"roperef.{fam}"), name=x(r.id), time=f"{r.seconds:.3f}")
            text = x(r.message) + (f"\n{x(r.diagnosis['summary'])}" if r.diagnosis else "") + (f"\nrepro: {x(r.repro)}" if r.repro else "")
            if r.status == "FAIL" or (r.status == "IMPRECISE" and report.fail_imprecise):
                ET.SubElement(tc, "failure", message=x(r.message, limit=500)).text = text
            elif r.status == "IMPRECISE":
                ET.SubElement(tc, "system-out").text = f"IMPRECISE (passes as a precision warning): {text}"
            elif r.status == "ERROR":
                ET.SubElement(tc, "error", message=x(r.message, limit=500)).text = text
            elif r.status in ("NOT_SUPPORTED", "XFAIL"):
                ET.SubElement(tc, "skipped", message=x(f"{r.status}: {r.xfail_reason or r.message}", limit=500))
            elif r.status == "XPASS":
                ET.SubElement(tc, "system-out").text = x(f"XPASS (expected failure: {r.xfail_reason})")
            elif (said := junit_text(r)) is not None:
                ET.SubElement(tc, "system-out").text = x(said)
            if (ctx := junit_context_text(report, r)) is not None:  # one system-out per testcase
                so = tc.find("system-out")
                so = ET.SubElement(tc, "system-out") if so is None else so
                so.text = (so.text + "\n" if so.text else "") + x(ctx)
    if report.interrupted:
        root.set("interrupted", "true")
    if (report.judged == 0 or report.informed == 0) and report.results:
        root.set("nothing_judged", x(nothing_judged_why(report), limit=500))
    junit_sections(report, root)
    buf = io.BytesIO()
    ET.ElementTree(root).write(buf, encoding="utf-8", xml_declaration=True)
    write_bytes_atomic(path, buf.getvalue())


def write_markdown(report: RunReport, path: str | Path, *, golden: Mapping[str, Any] | None = None) -> None:
    """The Markdown report; untrusted text is inert (no live HTML, no split table rows)."""
    md, code = for_markdown, markdown_code
    lines = [f"# roperef check: {md(report.backend)}", "", md(summary_line(report)), ""]
    if report.capabilities.get("notes"):
        lines += [f"Backend notes: {md(str(report.capabilities['notes']))}", ""]
    lines += [f"> **Note:** {md(note)}" for note in report.notes] + ([""] if report.notes else [])
    if golden and golden.get("directory"):
        what = "Your cases" if golden.get("tier") == "user" else "Golden set"
        lines += [f"{what} {code(golden.get('directory'))}, hash `{golden.get('set_hash')}`"
                  + (f" ({md(golden['anchor'])})" if golden.get("anchor") else "") + ".", ""]
    elif golden and golden.get("source"):
        lines += [f"Cases: {md(golden['source'])} (computed in memory, no golden files).", ""]
    lines += ["| family | " + " | ".join(STATUSES) + " | worst budget |", "|---" * (len(STATUSES) + 2) + "|"]
    for fam, counts in _family_rows(report):
        worst_b = max((_budget(r) for r in report.results if r.family == fam), default=0.0)
        lines.append(f"| {md(fam)} | " + " | ".join(str(counts[s]) for s in STATUSES) + f" | {worst_b:.3g} |")
    bad = [r for r in report.results if r.status not in ("PASS", "NOT_SUPPORTED")]
    if bad:
        lines += ["", "## Problems", "", "| status | case | message | likely cause | repro |", "|---|---|---|---|---|"]
        for r in bad:
            diag = r.diagnosis["summary"] if r.diagnosis else (r.xfail_reason or "")
            lines.append(f"| {r.status} | {code(r.id)} | {md(r.message)} | {md(diag)} | {code(r.repro) if r.repro else ''} |")
    lines += markdown_uninformative(report)
    lines += markdown_context(report)
    lines += markdown_sections(report)
    write_text_atomic(path, "\n".join(lines) + "\n")


def plot_file_name(case_id: str) -> str:
    """A file name for a case's plot: the id with ``/`` as ``__``, other unsafe characters as ``_``, at most
    200 characters (a longer id keeps its start and a hash of the whole)."""
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", case_id.replace("/", "__")).lstrip(".") or "case"
    if len(name) > 200:
        name = name[:180] + "-" + hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return name + ".png"


def write_plots(report: RunReport, directory: str | Path, *, near: float = 0.5) -> list[Path]:
    """PNG of error/bound vs position for each failing or near-failing case (budget >= ``near``).

    Raises RuntimeError with an install hint when matplotlib is missing.
    """
    try:
        import matplotlib  # lazy: optional (roperef[plot]), needed for --plot only

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # lazy: after choosing the Agg backend
    except ImportError:
        raise RuntimeError("--plot needs matplotlib: pip install 'roperef[plot]' (or pip install matplotlib)") from None
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for r in report.results:
        m = r.metrics
        if m is None or m.profile_positions is None or m.profile_ratios is None or m.budget_used < near:
            continue
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.plot(m.profile_positions, m.profile_ratios, ".", ms=3)
        ax.axhline(1.0, color="red", lw=1, label="bound")
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_xlabel("position")
        ax.set_ylabel("max |error| / bound")
        ax.set_title(f"{r.status} {for_terminal(r.id, limit=120)}".replace("$", r"\$"), fontsize=8)
        ax.legend(loc="best", fontsize=7)
        fig.tight_layout()
        path = out_dir / plot_file_name(r.id)
        buf = io.BytesIO()
        fig.savefig(buf, dpi=90, format="png")
        write_bytes_atomic(path, buf.getvalue())
        plt.close(fig)
        written.append(path)
    return written
