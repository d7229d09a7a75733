#!/usr/bin/env python3
"""Write docs/backends.md from the JSON reports of ``roperef check --json`` (one file per backend).

Usage::

    python scripts/make_backends_doc.py REPORT_DIR [--out docs/backends.md]

Reads every ``*.json`` in REPORT_DIR (sorted by name). A report is an object with
``backend`` (a name, or an object with ``name``), optional ``capabilities`` and
``results``: a list of case results, each with ``id``, ``family``, ``status``, optional
``metrics.budget_used``, ``diagnosis.summary``, ``xfail_reason`` and ``message``
(the schema of ``conformance/judge/runner.py``'s ``CaseResult.to_dict``). A list of such
reports, or ``{"reports": [...]}``, is accepted too.

Output: the bug-class coverage of each backend (classes judged / classes its interface can
express, from the report's ``coverage`` section, and the classes not judged with the reason),
one row per backend x family with PASS/FAIL/NOT_SUPPORTED/XFAIL/XPASS/ERROR counts and the
worst budget used (max |error|/bound over the judged cases; <= 1 passes), then every
FAIL/ERROR/XFAIL/XPASS case with its budget, the diagnosis and the reason, and the run-level
diagnosis of each backend with failures.
The output is deterministic (no dates, sorted), so regenerating it in CI gives a stable diff.
Exit 0 on success, 2 on a missing directory, no reports, or a malformed report.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

STATUSES = ("PASS", "FAIL", "IMPRECISE", "NOT_SUPPORTED", "XFAIL", "XPASS", "ERROR")
NOTABLE = ("FAIL", "ERROR", "IMPRECISE", "XFAIL", "XPASS")


class ReportError(ValueError):
    pass


def _reports_in(data: Any, source: str) -> list[dict[str, Any]]:
    if isinstance(data, dict) and "reports" in data:
        data = data["reports"]
    items = data if isinstance(data, list) else [data]
    out = []
    for i, rep in enumerate(items):
        where = f"{source}[{i}]" if isinstance(data, list) else source
        if not isinstance(rep, dict) or not isinstance(rep.get("results"), list):
            raise ReportError(f"{where}: not a report (expected an object with a 'results' list)")
        name = rep.get("backend")
        if isinstance(name, dict):
            name = name.get("name")
        if not isinstance(name, str) or not name:
            raise ReportError(f"{where}: 'backend' must be a name (or an object with 'name')")
        for j, r in enumerate(rep["results"]):
            if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("id", "status")):
                raise ReportError(f"{where}: results[{j}] needs string 'id' and 'status'")
            if r["status"] not in STATUSES:
                raise ReportError(f"{where}: results[{j}] status {r['status']!r} not one of {', '.join(STATUSES)}")
        out.append({**rep, "backend": name})
    return out


def load_reports(directory: Path) -> list[dict[str, Any]]:
    if not directory.is_dir():
        raise ReportError(f"{directory}: not a directory")
    files = sorted(directory.glob("*.json"))
    if not files:
        raise ReportError(f"{directory}: no *.json reports")
    reports = []
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ReportError(f"{f}: cannot read JSON ({exc})") from None
        reports.extend(_reports_in(data, str(f)))
    return reports


def _family(r: dict[str, Any]) -> str:
    return r.get("family") or r["id"].split("/", 1)[0]


def _budget(r: dict[str, Any]) -> float | None:
    b = (r.get("metrics") or {}).get("budget_used")
    return float(b) if isinstance(b, (int, float)) and math.isfinite(b) else None


def _fmt_budget(b: float | None) -> str:
    return "-" if b is None else (f"{b:.3g}" if b < 1000 else f"{b:.2e}")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _diagnosis(r: dict[str, Any]) -> str:
    d = r.get("diagnosis")
    if isinstance(d, dict) and d.get("summary"):
        return str(d["summary"])
    return str(r.get("message") or "")


def _coverage(reports: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Bug-class coverage",
        "",
        "Classes of the bug catalogue (docs/conformance.md) judged on at least one case that exposes them, out of the",
        "classes the backend's declared interface can express (goldens + cases generated for the interface).",
        "",
        "The last column counts the declared candidates the backend's `supports()` declined while its generated cases",
        "were planned (each replaced by another where one exists), with the most frequent reason.",
        "",
        "| backend | judged / expressible | coverage | classes the interface cannot express "
        "| expressible but not judged (why) | declined while planned |",
        "|---|---:|---:|---:|---|---|",
    ]
    for rep in reports:
        cov = rep.get("coverage")
        if not isinstance(cov, dict) or "classes" not in cov:
            lines.append(f"| {_cell(rep['backend'])} | - | - | - | no coverage section in the report | - |")
            continue
        rows = cov["classes"]
        cannot = [r for r in rows if not r.get("judged") and str(r.get("why", "")).startswith("the interface cannot express it")]
        missed = [r for r in rows if not r.get("judged") and r not in cannot]
        frac = cov.get("fraction")
        pct = "-" if frac is None else f"{100 * frac:.0f}%"
        reasons = {str(r.get("why", "")).split(" (", 1)[-1] for r in missed}
        if len(missed) > 1 and len(reasons) == 1:
            why = f"all {len(missed)}: NOT_SUPPORTED ({reasons.pop()}"
        else:
            why = "; ".join(f"`{r['id']}`: {r.get('why', '')}" for r in missed[:4]) + (f"; ... {len(missed) - 4} more" if len(missed) > 4 else "")
        planned = [e for e in cov.get("planning_declined") or [] if isinstance(e, dict)]
        declined = f"{sum(int(e.get('count', 0)) for e in planned)} ({_cell(planned[0].get('reason', ''))})" if planned else "-"
        lines.append(f"| {_cell(rep['backend'])} | {cov.get('judged')} / {cov.get('expressible')} | {pct} | {len(cannot)} | {_cell(why) or '-'} "
                     f"| {declined} |")
    return lines + [""]


def render(reports: Iterable[dict[str, Any]]) -> str:
    reports = sorted(reports, key=lambda rep: rep["backend"])
    lines = [
        "# Backends: conformance results",
        "",
        "Generated by `scripts/make_backends_doc.py` from the JSON reports of `roperef check --json`;",
        "do not edit by hand. Budget = max |error| / bound over a case (<= 1 passes); the worst",
        "budget per row is over its judged cases (PASS, FAIL, IMPRECISE, XFAIL, XPASS); IMPRECISE = over the bound by",
        "a small factor, reproduced by a precision mechanism (docs/conformance.md, Statuses).",
        "",
        *_coverage(reports),
        "## Results per family",
        "",
        "| backend | family | " + " | ".join(STATUSES) + " | worst budget |",
        "|---|---|" + "---:|" * (len(STATUSES) + 1),
    ]
    notable: list[str] = []
    for rep in reports:
        by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rep["results"]:
            by_family[_family(r)].append(r)
        for family in sorted(by_family):
            rs = by_family[family]
            counts = Counter(r["status"] for r in rs)
            budgets = [b for r in rs if (b := _budget(r)) is not None]
            worst = max(budgets) if budgets else None
            row = [rep["backend"], family, *(str(counts.get(s, 0)) for s in STATUSES), _fmt_budget(worst)]
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
        for r in sorted(rep["results"], key=lambda r: r["id"]):
            if r["status"] in NOTABLE:
                why = _diagnosis(r)
                if r.get("xfail_reason"):
                    why = f"{why} — known: {r['xfail_reason']}" if why else f"known: {r['xfail_reason']}"
                notable.append(
                    "| " + " | ".join(_cell(c) for c in (rep["backend"], f"`{r['id']}`", r["status"], _fmt_budget(_budget(r)), why)) + " |"
                )
    lines += ["", "## Failures and expected failures", ""]
    if notable:
        lines += ["| backend | case | status | budget | diagnosis |", "|---|---|---|---:|---|", *notable]
    else:
        lines.append("None: every judged case passed.")
    verdicts = [(rep["backend"], rep["verdict"]) for rep in reports if isinstance(rep.get("verdict"), dict)]
    if verdicts:
        lines += ["", "## Run-level diagnosis", ""]
        lines += [f"- **{b}** ({v.get('failing')} failing or expected-failing cases): {_cell(v.get('summary', ''))}" for b, v in verdicts]
    lines += ["", "## Capabilities", ""]
    for rep in reports:
        caps = rep.get("capabilities") or {}
        if caps:
            lines.append(
                f"- **{rep['backend']}**: stages {', '.join(caps.get('stages', []))}; pairings {', '.join(caps.get('pairings', []))}; "
                f"dtypes {', '.join(caps.get('dtypes', []))}; scaling {', '.join(caps.get('scaling_types', []))}; "
                f"angles {caps.get('angle_dtype', '?')}, tables {caps.get('table_dtype', '?')}, "
                f"attention factor applied: {caps.get('applies_attention_factor', '?')}"
                + (f"; positions up to {caps['max_position']}" if caps.get("max_position") is not None else "")
                + ("; one cos/sin table per batch" if caps.get("shared_tables") else "")
                + f". {_cell(caps.get('notes', ''))}".rstrip()
            )
        reasons = Counter(r.get("message") or "" for r in rep["results"] if r["status"] == "NOT_SUPPORTED")
        if reasons:
            top = "; ".join(f"{_cell(m) or '(no reason)'} ({n})" for m, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:6])
            lines.append(f"  - not supported: {top}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report_dir", type=Path, help="directory of roperef check --json reports")
    parser.add_argument("--out", type=Path, default=Path("docs/backends.md"), help="output Markdown file")
    args = parser.parse_args(argv)
    try:
        text = render(load_reports(args.report_dir))
    except ReportError as exc:
        print(f"make_backends_doc: error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
