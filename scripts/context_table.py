"""Measure the context sweep of every built-in CPU backend: certified position, first FAIL, cost (docs/context.md).

Usage: ``python scripts/context_table.py [NAME ...]`` (default: every built-in backend); prints a
Markdown table, one row per backend x stage x dtype, and the sweep's wall time per backend (the
time of ``run_context`` after the backend is loaded, so library import and first compile excluded
only where the backend does them at load).
"""

from __future__ import annotations

import sys
import time

from conformance.backends.names import BUILTIN_BACKENDS
from conformance.backends.resolve import resolve_backend
from conformance.context.sweep import ContextPlan, run_context
from roperef.spec import RopeSpec


def main(names: list[str]) -> int:
    spec = RopeSpec(head_dim=128, theta=10000.0)
    print("| backend | stage | dtype | status | swept to | certified | first FAIL | UNINFORMATIVE from | sweep s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names or list(BUILTIN_BACKENDS):
        try:
            backend = resolve_backend(name)
            reason = getattr(backend, "library_reason", lambda: None)()
            if reason:
                print(f"| {name} | - | - | not run: {reason} | | | | |")
                continue
            t0 = time.perf_counter()
            report = run_context(backend, ContextPlan(spec), diagnose=False, adapt_pairing=True)
            dt = time.perf_counter() - t0
        except Exception as exc:  # a backend that cannot load is a row, not a crash
            print(f"| {name} | - | - | not run: {type(exc).__name__}: {str(exc)[:80]} | | | | |")
            continue
        assert report.context is not None
        for r in report.context["rows"]:
            status = r["status"] if r["positions"] else f"{r['status']} ({r['message'][:60]})"
            top = r["positions"][-1] if r["positions"] else None
            print(f"| {name} | {r['stage']} | {r['dtype']} | {status} | {top} | {r['certified']} | {r['first_fail']} | "
                  f"{r['uninformative_from']} | {dt:.2f} |", flush=True)
        if not report.context["rows"]:
            print(f"| {name} | - | - | no declared stage x dtype swept | | | | {dt:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
