#!/usr/bin/env python3
"""Where ``roperef check``'s main job (built-in backend, default cases) spends its time, in one process.

Usage::

    python benchmarks/judge_breakdown.py [--cache DIR | --no-cache]

Run as a fresh process (``benchmarks/bench_judge.py --breakdown`` runs it cold and warm) so that the
imports count. The phases, each timed with ``time.perf_counter`` in the order ``roperef check`` runs
them (:func:`conformance.judge.check_sources.check_cases` split into its parts):

- *imports*: ``conformance.cli.check`` and the backend's resolution (what ``roperef check`` imports
  before the first case);
- *goldens*: loading the checked-in golden set (hash-verified);
- *planning*: :func:`conformance.generated.plan.plan_cases` (the backend's ``supports`` and the
  exposure rules; with the exposure cache of :mod:`conformance.bugs.exposure_cache` unless
  ``--no-cache``);
- *materialize*: the generated cases' inputs and expected values (:mod:`roperef.reference`);
- *judging*: :func:`conformance.judge.runner.run_cases` minus *calls*;
- *calls*: every case's backend call (:func:`conformance.calls.stage_call.call_stage`) alone, made
  again after the run (so the backend's first-call costs fall in *judging*);
- *coverage*: :func:`conformance.judge.check_sources.attach_sections` (coverage and run verdict);
- *report*: the JSON report built and serialised.

Prints one line per phase and the total; numbers are a report, never an assertion.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402  # after T0: the imports are the first phase measured
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=None, help="the exposure cache's directory (default: the user cache dir)")
    ap.add_argument("--no-cache", action="store_true", help="compute the exposure rules without the cache")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    t: dict[str, float] = {}
    mark = T0

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        t[name] = now - mark
        mark = now

    import conformance.cli.check  # noqa: F401  # the CLI's own imports, as roperef check pays them
    from conformance.backends.resolve import resolve_backend
    from conformance.bugs.exposure_cache import ExposureCache
    from conformance.calls.stage_call import call_stage
    from conformance.generated.plan import materialize_all, plan_cases
    from conformance.golden.case_source import load_cases
    from conformance.judge.check_sources import attach_sections
    from conformance.judge.runner import RunOptions, run_cases
    from conformance.report.formats import to_json

    backend = resolve_backend("numba")
    lap("imports")
    source = load_cases(None, "smoke", allow_empty=True)
    lap("goldens")
    exposure = None if args.no_cache else ExposureCache.open(args.cache)
    plan = plan_cases(backend, exposure=exposure)
    lap("planning")
    have = {c.id for c in source.cases}
    cases = list(source.cases) + materialize_all([g for g in plan.cases if g.id not in have])
    lap("materialize")
    report = run_cases(backend, cases, RunOptions())
    lap("judging")
    for c in cases:  # after the run: the backend's first call (its compiled kernels loaded) is not counted here
        call_stage(backend, c)
    lap("calls")
    t["judging"] -= t["calls"]
    attach_sections(report, cases, backend, plan, exposure)
    if exposure is not None:
        exposure.save()
    lap("coverage")
    json.dumps(to_json(report), default=str)
    lap("report")
    total = sum(t.values())
    for name, s in t.items():
        print(f"  {name:<12} {s:6.2f} s  {100 * s / total:4.0f}%")
    hits = f", exposure cache {exposure.hits} hits / {exposure.misses} computed" if exposure is not None else ", no exposure cache"
    passed = sum(r.status == "PASS" for r in report.results)
    print(f"  {'total':<12} {total:6.2f} s  ({len(cases)} cases, {passed} PASS{hits}; load {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
