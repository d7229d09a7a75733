#!/usr/bin/env python3
"""The meta-test table of bugs nobody listed: caught and described correctly, never named wrongly.

Usage::

    PYTHONPATH=. python scripts/meta_table_unlisted.py [--out docs/meta-tests.md] [--bugs a,b] [--quick]

For each engine of ``tests/support/engines/unlisted_bug_engines.py`` (single bugs of kinds the bug catalogue does not
list, and ggml's precision as a non-bug), every case of the engine's generated plan and of the smoke
tier is run with the full diagnosis (probing on): *judged* cases, *caught* (FAIL), *described* (a FAIL
with a finding on the axis and pattern the engine's bug calls for, ``Expect``), *named wrong* (a FAIL
naming a catalogue class the bug is not), *IMPRECISE*, and the mean and worst diagnosis time per FAIL.
With ``--out`` the table replaces the part of the file between ``<!-- unlisted:begin -->`` and
``<!-- unlisted:end -->``; it is printed either way. ``--quick``: the engine's own Expect cases only.
``--every K``: every K-th case of the plan and the smoke tier (a reduced set, said in the table's header).
``--tiled``: the tiled kernels of ``tests/support/engines/tiled_bug_engines.py`` (issue 22's tile, row, head and stride bugs),
between ``<!-- tiled:begin -->`` and ``<!-- tiled:end -->``, each judged on the tiled engine's own plan (every
layout and call form).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- unlisted:begin -->", "<!-- unlisted:end -->"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--bugs", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--tiled", action="store_true")
    args = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT), *(str(p) for p in sorted((ROOT / "tests" / "support").glob("*/")))]
    from conformance.generated.plan import materialize_all, plan_cases
    from conformance.judge.runner import RunOptions, run_cases
    from judge_cases import smoke_cases
    from tiled_bug_engines import TiledEngine, tile_expectations
    from unlisted_bug_engines import NOT_BUG_WORDS, NOT_BUGS, UNLISTED, UnlistedEngine, make_case

    table = tile_expectations() if args.tiled else UNLISTED
    make = TiledEngine if args.tiled else UnlistedEngine
    begin, end = ("<!-- tiled:begin -->", "<!-- tiled:end -->") if args.tiled else (BEGIN, END)
    wanted = [b for b in args.bugs.split(",") if b] or ([*table] if args.tiled else [*UNLISTED, *NOT_BUGS])
    base = [] if args.quick else (list(smoke_cases()) + materialize_all(plan_cases(make()).cases))[::max(args.every, 1)]
    lines = ["| bug (engine) | what it does | judged | caught (FAIL) | described correctly | named wrong | IMPRECISE | "
             "diagnosis ms per FAIL (mean / worst) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    totals = [0, 0, 0, 0, 0]
    all_ms: list[float] = []
    for bug in wanted:
        expect = table.get(bug)
        cases = base + ([make_case(*c) for c in expect.cases] if expect else [])
        quick = run_cases(make(bug=bug), cases, RunOptions(diagnose=False))
        off = {r.id: r.seconds for r in quick.results}
        rep = run_cases(make(bug=bug), cases, RunOptions())
        judged = [r for r in rep.results if r.status != "NOT_SUPPORTED"]
        fails = [r for r in rep.results if r.status == "FAIL"]
        described = [r for r in fails if expect is not None and expect.described(r.diagnosis, r.message)]
        wrong = [r for r in fails if (r.diagnosis or {}).get("match") not in (None, *(expect.may_name if expect else ()))]
        imprecise = [r for r in rep.results if r.status == "IMPRECISE"]
        ms = [1000 * max(r.seconds - off.get(r.id, 0.0), 0.0) for r in fails + imprecise]
        all_ms += ms
        row = [len(judged), len(fails), len(described), len(wrong), len(imprecise)]
        totals = [a + b for a, b in zip(totals, row)]
        what = expect.words if expect else NOT_BUG_WORDS[bug]
        timing = f"{statistics.mean(ms):.0f} / {max(ms):.0f}" if ms else "-"
        lines.append(f"| {bug} | {what} | " + " | ".join(str(x) for x in row) + f" | {timing} |")
        print(lines[-1], flush=True)
    timing = f"{statistics.mean(all_ms):.0f} / {max(all_ms):.0f}" if all_ms else "-"
    lines.append("| **all** | | " + " | ".join(f"**{x}**" for x in totals) + f" | {timing} |")
    print(lines[-1])
    if args.out:
        text = args.out.read_text(encoding="utf-8")
        if begin not in text or end not in text:
            raise SystemExit(f"{args.out}: no {begin} ... {end} section to replace")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        stamp = time.strftime("%Y-%m-%d")
        flags = (" --tiled" if args.tiled else "") + (f" --every {args.every}" if args.every > 1 else "")
        body = (f"{begin}\nGenerated by `PYTHONPATH=. python scripts/meta_table_unlisted.py{flags} --out docs/meta-tests.md` on "
                f"{stamp}" + (f": every {args.every}th case of the plan and the smoke tier ({len(base)} cases) plus each bug's own "
                              "cases, a reduced set that fits this machine's time" if args.every > 1 else "") + ".\n\n")
        args.out.write_text(head + body + "\n".join(lines) + "\n" + end + tail, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
