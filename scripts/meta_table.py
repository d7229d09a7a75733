#!/usr/bin/env python3
"""The meta-test table: for every bug class, caught and named, at float32 and float64, smoke and generated.

Usage::

    PYTHONPATH=. python scripts/meta_table.py [--out FILE.md]

For each single-bug engine of ``tests/support/engines/bug_engines.py`` (one per catalogue class) and each
precision, every case of the smoke tier and of the engine's generated cases that exposes the
class is run with diagnosis: *exposing* cases, *caught* (FAIL), *named* (the class is in the
diagnosis's matches), *alone* (named without a tie), *wrong* (another class named without it).
Prints a Markdown table (the issue's "class, caught, named").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _matches(diagnosis: dict[str, Any] | None) -> list[str]:
    """The bug classes a result's diagnosis names (none when it has no diagnosis)."""
    return list(diagnosis["matches"]) if diagnosis else []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT), *(str(p) for p in sorted((ROOT / "tests" / "support").glob("*/")))]
    from bug_engines import BUGS, BugEngine
    from conformance.bugs.catalogue import BY_ID
    from conformance.bugs.facts import case_facts
    from conformance.calls.declared import Interface
    from conformance.generated.plan import materialize_all, plan_cases
    from conformance.judge.runner import RunOptions, run_cases
    from judge_cases import smoke_cases

    smoke = list(smoke_cases())
    lines = ["| bug (engine) | class | precision | exposing cases | caught (FAIL) | named | named alone | named wrong |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    totals = [0, 0, 0, 0, 0]
    for precision in ("float32", "float64"):
        cases = smoke + materialize_all(plan_cases(BugEngine(precision=precision)).cases)
        for bug, cid in BUGS.items():
            cls = BY_ID[cid]
            e = BugEngine(bug=bug, precision=precision)
            iface = Interface.of(e)
            exposing = [c for c in cases if cls.occurs_in(c) and cls.exposed(case_facts(c, iface.precision(c.dtype)))]
            if bug == "dynamic-stale":
                e.state["longest"] = 2**31
            rep = run_cases(e, exposing, RunOptions())
            fails = [r for r in rep.results if r.status == "FAIL"]
            named = [r for r in fails if cid in _matches(r.diagnosis)]
            alone = [r for r in named if _matches(r.diagnosis) == [cid]]
            wrong = [r for r in fails if _matches(r.diagnosis) and cid not in _matches(r.diagnosis)]
            row = [len(exposing), len(fails), len(named), len(alone), len(wrong)]
            totals = [a + b for a, b in zip(totals, row)]
            lines.append(f"| {bug} | `{cid}` | {precision} | " + " | ".join(str(x) for x in row) + " |")
            print(lines[-1], flush=True)
    lines.append("| **all** | | | " + " | ".join(f"**{x}**" for x in totals) + " |")
    text = "\n".join(lines) + "\n"
    print(lines[-1])
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
