"""``roperef golden``: generate, verify, list, show and audit golden vectors (and ``export`` if installed).

- ``generate [--tier smoke|full] [--out DIR] [--filter PAT] [--force]``: materialize the catalogue
  (reference and Numba twin must agree within 2 ulp, error over spacing) and write it as one transaction (the old
  set or the new one, whatever happens); refuses to overwrite a different set without
  ``--force``; ``unchanged: N cases`` when the set is already there; Ctrl-C (or SIGTERM) stops between
  cases (exit 130, or 143).
- ``verify [DIR]``: schema, hashes, recompute-and-compare; exit 1 when a problem is found.
- ``list [--filter PAT] [--tier T]``: catalogue ids with stage and flags (default tier smoke, like
  ``check``); exit 2 when the filter matches nothing.
- ``show ID [--dir DIR]``: spec, shapes, flags and a few values (from the golden set, else built).
- ``verify`` also prints the set hash and whether it is the published one (:mod:`conformance.golden.published`);
  a set that lists no case is a problem (exit 1).
- ``audit [DIR] [--filter PAT] [--samples N]``: mpmath audit (N in [1, 100000]); exit 1 when a forward,
  backward or apply output exceeds 4 units of roundoff of its pair magnitude.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..cases.case import GoldenCase
from ..cases.materialize import catalogue, materialize
from ..exit_codes import ExitCode
from ..golden.atomic_files import require_writable_target, write_text_atomic
from ..golden.audit import BOUND_UNITS, audit_case
from ..golden.published import published_description
from ..golden.store import GoldenError, default_golden_dir, load_golden, read_manifest, verify_golden, write_golden_set
from ..interrupt import StopFlag, Terminated, sigint_sets
from ..paths import path_problem
from ..selection import select
from ..untrusted_text import for_terminal

__all__ = ["add_parser", "run"]


def _export_module() -> ModuleType | None:
    try:
        return importlib.import_module("conformance.cli.export")
    except ModuleNotFoundError as exc:
        if exc.name != "conformance.cli.export":
            raise
        return None


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("golden", help="generate, verify, list, show, audit or export golden vectors",
                                   description="Golden vectors: the float64 expected outputs of every case.")
    sub = parser.add_subparsers(dest="golden_command", metavar="ACTION")
    gen = sub.add_parser("generate", help="build the catalogue's cases and write a golden set")
    gen.add_argument("--tier", choices=("smoke", "full"), default="smoke")
    gen.add_argument("--out", default=None, help="directory (default: ROPEREF_GOLDEN or the repo's golden/)")
    gen.add_argument("--filter", default=None, help="id glob or substring; comma-separated alternatives")
    gen.add_argument("--force", action="store_true", help="replace a different golden set in --out")
    ver = sub.add_parser("verify", help="check schema, hashes and recompute the expected outputs")
    ver.add_argument("dir", nargs="?", default=None)
    lst = sub.add_parser("list", help="list the catalogue's case ids")
    lst.add_argument("--filter", default=None)
    lst.add_argument("--tier", choices=("smoke", "full"), default="smoke")
    show = sub.add_parser("show", help="show one case: spec, shapes, flags, a few values")
    show.add_argument("id")
    show.add_argument("--dir", default=None, help="golden directory to read the case from")
    aud = sub.add_parser("audit", help="recompute a sample of expected values with mpmath (50 digits)")
    aud.add_argument("dir", nargs="?", default=None)
    aud.add_argument("--filter", default=None)
    aud.add_argument("--samples", type=int, default=200, help="random elements per case (default 200)")
    aud.add_argument("--json", dest="json_out", default=None, help="also write the results as JSON here")
    export = _export_module()
    if export is not None:
        export.add_parser(sub)
    return parser


def _progress(done: int, total: int, label: str, start: float) -> None:
    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // max(total, 1)
    bar = "#" * filled + "-" * (width - filled)
    write = getattr(sys.stderr, "write_raw", sys.stderr.write)  # the bar's own \r (the stream escapes others')
    write(f"\r[{bar}] {done}/{total} {time.perf_counter() - start:5.1f}s {for_terminal(label[:60]):<60}")
    if done == total:
        write("\n")
    sys.stderr.flush()


def _generate(args: argparse.Namespace) -> int:
    recipes = select(catalogue(args.tier), args.filter)
    if not recipes:
        print(f"roperef golden generate: error: --filter {args.filter!r} matches no case", file=sys.stderr)
        return ExitCode.USAGE
    out = Path(args.out) if args.out else default_golden_dir()
    if os.path.lexists(out) and not out.is_dir():
        print(f"roperef golden generate: error: --out {out}: exists and is not a directory "
              "(a golden set is a directory)", file=sys.stderr)
        return ExitCode.USAGE
    start = time.perf_counter()
    cases = []
    stop = StopFlag()
    # Ctrl-C sets a flag, checked between cases: a KeyboardInterrupt raised inside Numba's compiler
    # callbacks would be printed as "Exception ignored" and lost, and the set written anyway.
    with sigint_sets(stop):
        for k, recipe in enumerate(recipes):
            if stop.is_set():
                break
            _progress(k, len(recipes), recipe.id, start)
            cases.append(materialize(recipe))
    if stop.is_set():  # nothing was written: the old set is untouched
        raise Terminated if stop.terminated else KeyboardInterrupt
    _progress(len(recipes), len(recipes), "done", start)
    tier = args.tier if not args.filter else f"{args.tier}-filtered"
    tier = tier if tier in ("smoke", "full") else "custom"
    written = write_golden_set(cases, out, force=args.force, tier=tier)
    size = sum(p.stat().st_size for p in written.directory.glob("*.npz")) + (written.directory / "manifest.json").stat().st_size
    if not written.changed:
        print(f"unchanged: {len(cases)} cases in {written.directory} ({size / 1e6:.2f} MB) are already this golden set "
              f"(checked in {time.perf_counter() - start:.1f} s)")
        return ExitCode.OK
    print(f"wrote {len(cases)} cases to {written.directory} ({size / 1e6:.2f} MB) in {time.perf_counter() - start:.1f} s")
    return ExitCode.OK


def _verify(args: argparse.Namespace) -> int:
    folder = Path(args.dir) if args.dir else default_golden_dir()
    problem = path_problem(folder, "dir")
    if problem:
        print(f"roperef golden verify: error: {folder}: {problem} (no golden set there)", file=sys.stderr)
        return ExitCode.USAGE
    problems = verify_golden(folder)
    for p in problems:
        print(p)
    if problems:
        print(f"{folder}: {len(problems)} problem(s)", file=sys.stderr)
        return ExitCode.FAILED
    _, raw = read_manifest(folder)
    set_hash = hashlib.sha256(raw).hexdigest()
    published = published_description(set_hash)
    print(f"set hash {set_hash}: " + (f"published ({published})" if published else
                                      f"not a published set; `roperef check --set-hash {set_hash[:16]}` pins it"))
    print(f"{folder}: OK (schema, hashes, outputs, frequencies and attention factors recomputed bit for bit)")  # the verdict last
    return ExitCode.OK


def _list(args: argparse.Namespace) -> int:
    recipes = select(catalogue(args.tier), args.filter)
    if not recipes:
        print(f"roperef golden list: error: --filter {args.filter!r} matches no case of the {args.tier} tier", file=sys.stderr)
        return ExitCode.USAGE
    for r in recipes:
        print(f"{r.id}  [{r.tier}, {r.stage}] {','.join(r.flags)}")
    print(f"{len(recipes)} case(s) of the {args.tier} tier", file=sys.stderr)
    return ExitCode.OK


def _find_case(case_id: str, directory: str | None) -> tuple[GoldenCase, str]:
    folder = Path(directory) if directory else default_golden_dir()
    if directory and not (folder / "manifest.json").is_file():
        raise GoldenError(f"--dir {folder}: {path_problem(folder, 'dir') or 'holds no manifest.json'} "
                          "(no golden set there)")
    if (folder / "manifest.json").is_file():
        manifest, _ = read_manifest(folder)
        if case_id in manifest["cases"]:
            return load_golden(folder).case(case_id), str(folder)
    for recipe in catalogue("full"):
        if recipe.id == case_id:
            return materialize(recipe), "built from the catalogue"
    raise ValueError(f"case id={case_id!r}: not in the golden set at {folder} nor in the catalogue "
                     "(see `roperef golden list`)")


def _show(args: argparse.Namespace) -> int:
    case, source = _find_case(args.id, args.dir)
    print(f"id      {case.id}  ({source})")
    print(f"family  {case.family}   stage {case.stage}   dtype {case.dtype}   tier {case.tier}")
    print(f"flags   {', '.join(case.flags) or '-'}")
    print("spec    " + json.dumps(case.spec.to_dict(), sort_keys=True))
    with np.printoptions(precision=17, threshold=8, edgeitems=3, linewidth=110):
        for name, arr in case.arrays.items():
            flat = np.asarray(arr).ravel()
            print(f"  {name:<17} {arr.dtype.str} {list(arr.shape)}  first: {flat[:4]}")
        pos = case.positions
        if pos is not None and pos.size:
            print(f"  positions range   [{int(pos.min())}, {int(pos.max())}]")
    return ExitCode.OK


#: the most random elements ``golden audit --samples`` takes per case
MAX_SAMPLES = 100_000


def _audit(args: argparse.Namespace) -> int:
    if not 1 <= args.samples <= MAX_SAMPLES:
        print(f"roperef golden audit: error: --samples={args.samples}: must be an integer in [1, {MAX_SAMPLES}] "
              "(random elements audited per case)", file=sys.stderr)
        return ExitCode.USAGE
    if args.json_out:
        require_writable_target(args.json_out)  # a FIFO or a directory: refused before the audit, not after
    golden = load_golden(args.dir)
    cases = select(golden.cases, args.filter)
    if not cases:
        print(f"roperef golden audit: error: --filter {args.filter!r} matches no case", file=sys.stderr)
        return ExitCode.USAGE
    start = time.perf_counter()
    results = []
    for k, case in enumerate(cases):
        _progress(k, len(cases), case.id, start)
        results.append(audit_case(case, args.samples))
    _progress(len(cases), len(cases), "done", start)
    print(f"{'case':<78} {'n':>5} {'max ulp':>9} {'bound':>7}")
    for r in results:
        print(f"{for_terminal(r.id):<78} {r.n:>5} {r.max_ulp:>9.3g} {r.max_bound:>7.3g}")
    rot = [r for r in results if r.stage in ("forward", "backward", "apply")]
    over = [r for r in rot if not r.within_bound]
    print(f"audited {sum(r.n for r in results)} elements of {len(results)} cases in "
          f"{time.perf_counter() - start:.1f} s")
    for stage in ("inv_freq", "cos_sin", "apply", "forward", "backward"):
        sel = [r for r in results if r.stage == stage]
        if sel:
            worst = max(sel, key=lambda r: r.max_bound)
            unit = "relative, units of u" if stage == "inv_freq" else "units of u*s" if stage == "cos_sin" else \
                "units of u*pair magnitude"
            print(f"  {stage:<9} max {max(r.max_ulp for r in sel):.3g} ulp, {worst.max_bound:.3g} {unit} "
                  f"(worst {worst.id}: {worst.worst}); largest position "
                  f"{max(r.max_position for r in sel)}")
    if args.json_out:
        write_text_atomic(args.json_out, json.dumps([r.to_dict() for r in results], indent=1) + "\n")
    if over:
        for r in over:
            print(f"OVER BOUND ({BOUND_UNITS:g} u): {r.id} {r.max_bound:.3g} at {r.worst}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "golden_command", None)
    handlers = {"generate": _generate, "verify": _verify, "list": _list, "show": _show, "audit": _audit}
    if action == "export":
        export = _export_module()
        if export is None:
            print("roperef golden export: error: conformance.cli.export is not installed", file=sys.stderr)
            return ExitCode.USAGE
        return int(export.run(args))
    if action not in handlers:
        print("usage: roperef golden {generate,verify,list,show,audit" + (",export" if _export_module() else "")
              + "} ...", file=sys.stderr)
        return ExitCode.USAGE
    try:
        return handlers[action](args)
    except GoldenError as exc:
        print(f"roperef golden {action}: error: {for_terminal(str(exc))}", file=sys.stderr)
        return ExitCode.USAGE
