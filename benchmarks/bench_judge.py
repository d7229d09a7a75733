#!/usr/bin/env python3
"""What the judge's issue-11/13/22 work costs: diagnosis time on failing runs, generated cases per case, the shape sweep.

Usage::

    python benchmarks/bench_judge.py [--quick] [--repeat N]

1. *Default check of the built-in backend* (warm): wall time of ``roperef check -q`` as a fresh
   process (goldens + generated), with ``--goldens-only`` and ``--generated-only``.
2. *Per-case cost*: loading + judging a golden case (the checked-in ``.npz`` set) against planning
   + materializing (``roperef.fast``) + judging a generated case, on the built-in backend.
3. *The shape sweep*: the generated cases planned, materialized and judged with and without the
   sweep (``plan_cases(shapes=False)``), their ratio and the sweep's size.
4. *Diagnosis on a failing run*: single-bug float32 engines (``tests/support/engines/bug_engines.py``, catalogue
   classes, and ``tests/support/engines/unlisted_bug_engines.py``, bugs nobody listed) on the default case set (smoke
   goldens + their generated cases), with and without diagnosis: the time diagnosis adds per FAIL
   (mean and worst, case by case: the same case's time without diagnosis subtracted; the measured
   operator, probing and the decoys included) and in total, and the extra backend calls probing made
   per failing group.

5. *The main job's breakdown* (``--breakdown``: this section only): ``benchmarks/judge_breakdown.py``
   as fresh processes, one line per phase (imports, goldens, planning, materialize, judging, calls,
   coverage, report): without the exposure cache, with an empty one (the first run), with the one
   that run wrote (warm), all in one invocation.

Run from the repository root with ``PYTHONPATH=.`` (it imports ``tests/support/engines/bug_engines.py``). Numbers
are a report, never an assertion; the machine's load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUGS = ("positions-bf16", "llama3-bands-swapped", "tables-bf16", "dynamic-static", "offsets-ignored",
        "direction-reversed", "yarn-ramp-2j", "theta-default")
UNLISTED = ("modulo-2048", "transposed-layout", "freq-mirrored", "sign-one-half", "head0-only", "output-pairs-mirrored",
            "position-counter", "ggml-theta-scale")


def _wall(args: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "conformance.cli", "check", "-q", *args], cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def default_check(repeat: int) -> None:
    _wall([], 1)  # warm the Numba cache
    for label, args in (("goldens + generated (default)", []), ("--goldens-only", ["--goldens-only"]), ("--generated-only", ["--generated-only"])):
        print(f"  roperef check -q {label:<32} {_wall(args, repeat):6.2f} s wall (median of {repeat})")


def per_case(repeat: int) -> None:
    from conformance.backends.resolve import resolve_backend
    from conformance.generated.plan import materialize_all, plan_cases
    from conformance.golden.store import default_golden_dir, load_golden
    from conformance.judge.runner import RunOptions, run_cases

    b = resolve_backend("numba")
    load_t, gen_t, judge_g, judge_n = [], [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        golden = load_golden(default_golden_dir()).cases
        t1 = time.perf_counter()
        gen = materialize_all(plan_cases(b).cases)
        t2 = time.perf_counter()
        rg = run_cases(b, golden, RunOptions(diagnose=False))
        rn = run_cases(b, gen, RunOptions(diagnose=False))
        load_t.append((t1 - t0) / len(golden))
        gen_t.append((t2 - t1) / len(gen))
        judge_g.append(rg.seconds / len(golden))
        judge_n.append(rn.seconds / len(gen))
    ms = lambda xs: 1000 * statistics.median(xs)  # noqa: E731  # a one-line unit conversion local to this report
    print(f"  golden:    {len(golden)} cases, load {ms(load_t):.2f} ms/case + judge {ms(judge_g):.2f} ms/case"
          f" = {ms(load_t) + ms(judge_g):.2f} ms/case")
    print(f"  generated: {len(gen)} cases, plan + materialize {ms(gen_t):.2f} ms/case + judge {ms(judge_n):.2f} ms/case"
          f" = {ms(gen_t) + ms(judge_n):.2f} ms/case")


def shape_sweep(repeat: int) -> None:
    """The shape sweep's share of the generated cases on the built-in backend: plan + materialize +
    judge with and without it (one process), the ratio, and the sweep's size."""
    from conformance.backends.resolve import resolve_backend
    from conformance.generated.plan import materialize_all, plan_cases
    from conformance.judge.runner import RunOptions, run_cases

    b = resolve_backend("numba")
    timings: dict[bool, list[float]] = {True: [], False: []}
    sizes: dict[bool, tuple[int, int]] = {}
    for _ in range(repeat):
        for shapes in (False, True):
            t0 = time.perf_counter()
            cases = materialize_all(plan_cases(b, shapes=shapes).cases)
            run_cases(b, cases, RunOptions(diagnose=False))
            timings[shapes].append(time.perf_counter() - t0)
            sweep = [c for c in cases if "shape-sweep" in c.flags]
            sizes[shapes] = (len(cases), sum(int(c.arrays.get("x", c.arrays.get("grad", c.arrays.get("positions"))).size) for c in sweep))
    without, with_ = statistics.median(timings[False]), statistics.median(timings[True])
    print(f"  generated cases without the sweep: {sizes[False][0]} cases, {without:.2f} s (plan + materialize + judge)")
    print(f"  with the sweep: {sizes[True][0]} cases ({sizes[True][0] - sizes[False][0]} sweep, "
          f"{sizes[True][1] / 1e6:.2f} M input elements), {with_:.2f} s: ratio {with_ / without:.2f}")


def diagnosis(quick: bool) -> None:
    sys.path[:0] = [str(p) for p in sorted((ROOT / "tests" / "support").glob("*/"))]
    from bug_engines import BugEngine
    from conformance.generated.plan import materialize_all, plan_cases
    from conformance.judge.runner import RunOptions, run_cases
    from judge_cases import smoke_cases
    from unlisted_bug_engines import UnlistedEngine

    base = list(smoke_cases()) + materialize_all(plan_cases(BugEngine()).cases)
    cases = base[::4] if quick else base
    total_on = total_off = 0.0
    per_fail: list[float] = []
    calls = groups = 0
    n_fail = 0
    engines = [("catalogue", b, lambda b=b: BugEngine(bug=b)) for b in (BUGS[:3] if quick else BUGS)]
    engines += [("unlisted", b, lambda b=b: UnlistedEngine(bug=b)) for b in (UNLISTED[:3] if quick else UNLISTED)]
    for kind, bug, make in engines:
        off = run_cases(make(), cases, RunOptions(diagnose=False))
        on = run_cases(make(), cases, RunOptions())
        t_off = {r.id: r.seconds for r in off.results}
        bad = [r for r in on.results if r.status in ("FAIL", "IMPRECISE")]
        fails = len(bad)
        named = sum(r.status == "FAIL" and bool((r.diagnosis or {}).get("matches")) for r in on.results)
        ms = [1000 * max(r.seconds - t_off.get(r.id, 0.0), 0.0) for r in bad]
        per_fail += ms
        n_fail += fails
        calls += on.probe_calls
        groups += on.probe_groups
        total_on += on.seconds
        total_off += off.seconds
        extra = on.seconds - off.seconds
        worst = f", worst {max(ms):.0f} ms" if ms else ""
        print(f"  {kind:<9} {bug:<24} {len(cases)} cases, {fails:>3} FAIL/IMPRECISE ({named} named): {off.seconds:6.2f} s without, "
              f"{on.seconds:6.2f} s with diagnosis (+{extra:.2f} s, {1000 * extra / max(fails, 1):.0f} ms per FAIL{worst}); "
              f"probing {on.probe_calls} calls for {on.probe_groups} failing groups")
    mean = statistics.mean(per_fail) if per_fail else 0.0
    print(f"  all: +{total_on - total_off:.1f} s for {n_fail} FAILs; per FAIL {mean:.0f} ms mean, "
          f"{max(per_fail, default=0.0):.0f} ms worst (median {statistics.median(per_fail) if per_fail else 0.0:.0f} ms); "
          f"probing {calls} extra calls for {groups} failing groups = {calls / max(groups, 1):.2f} per group (at most 5)")


def breakdown() -> None:
    """``benchmarks/judge_breakdown.py`` without the exposure cache, cold (an empty cache directory) and
    warm (the directory the cold run filled), each a fresh process, in that order."""
    import tempfile

    script = str(ROOT / "benchmarks" / "judge_breakdown.py")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, script, "--no-cache"], cwd=ROOT, env=env, capture_output=True)  # the Numba cache warm
    with tempfile.TemporaryDirectory() as cache:
        for label, args in (("no exposure cache", ["--no-cache"]), ("exposure cache cold (empty)", ["--cache", cache]),
                            ("exposure cache warm", ["--cache", cache])):
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, script, *args], cwd=ROOT, env=env, capture_output=True, text=True)
            print(f"  {label}: {time.perf_counter() - t0:.2f} s wall (process)")
            sys.stdout.write(done.stdout if done.returncode == 0 else f"  failed: {done.stderr[-2000:]}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer cases and bugs (smoke mode)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--breakdown", action="store_true", help="only the main job's breakdown by phase")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, {os.cpu_count()} CPUs")
    if args.breakdown:
        print("the main job (roperef check, built-in backend, default cases) by phase, fresh processes:")
        breakdown()
        print(f"load average after {os.getloadavg()[0]:.2f}")
        return 0
    if not args.quick:
        print("default check of the built-in backend (fresh process, warm Numba cache):")
        default_check(args.repeat)
    print("cost per case (built-in backend, in process):")
    per_case(1 if args.quick else args.repeat)
    print("the shape sweep (built-in backend, in process):")
    shape_sweep(1 if args.quick else args.repeat)
    print("diagnosis on failing runs (float32 single-bug engines, smoke + generated):")
    diagnosis(args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
