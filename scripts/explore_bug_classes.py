"""Explore each planted bug class of tests/support/engines/wrong_backends.py: failing draws, naming of the minimal cases.

    python scripts/explore_bug_classes.py [--count 200] [--seed 0]

For every bug of ``wrong_backends.BUGS`` it runs ``roperef check --explore`` in-process on
``Buggy(bug=...)`` and prints how many drawn cases FAIL, how many minimal cases the diagnosis
names with one of that bug's decoys, the largest minimal input and the backend calls spent
shrinking. The figures in docs/explore.md come from this script (about 4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), *(str(p) for p in sorted((ROOT / "tests" / "support").glob("*/")))]

from conformance.explore.run import ExploreConfig, explore  # noqa: E402 - imported after sys.path gains the repo root
from wrong_backends import BUGS, Buggy  # noqa: E402 - imported after sys.path gains tests/


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"{'bug':<22} {'FAIL':>5} {'ERROR':>5} {'named':>6} {'largest minimal input':>22} {'shrink calls':>12} {'s':>6}")
    for bug, patterns in BUGS.items():
        t0 = time.perf_counter()
        run = explore(Buggy(bug=bug), ExploreConfig(args.count, args.seed))
        counts = run.report.counts()
        matches = [(f.minimal.diagnosis or {}).get("match") for f in run.findings]
        named = sum(1 for m in matches if m and any(fnmatch.fnmatch(m, p) for p in patterns))
        sizes = [next(f.case.arrays[k] for k in ("x", "grad", "positions", "seq_len") if k in f.case.arrays).size
                 for f in run.findings]
        print(f"{bug:<22} {counts['FAIL']:>5} {counts['ERROR']:>5} {named:>6} {max(sizes, default=0):>22} "
              f"{sum(f.calls for f in run.findings):>12} {time.perf_counter() - t0:>6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
