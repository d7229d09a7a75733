"""``roperef golden export [--filter PAT] [--dtype D] [--tier T] [--golden DIR] --out DIR``.

Writes each selected case's inputs for a program outside Python (see :mod:`conformance.cli.exchange`
for the naming); the program writes its outputs next to them and ``roperef check --outputs DIR``
judges them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..golden.case_source import load_cases
from ..usage_error import UsageError
from ..vocabulary import DTYPES, TIERS
from .exchange import export_cases

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("export", help="write case inputs as .npy + case.json for programs outside Python",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, metavar="DIR", help="export directory (created)")
    p.add_argument("--filter", action="append", default=[], metavar="PAT", help="case id substring or glob (repeatable)")
    p.add_argument("--dtype", action="append", choices=DTYPES, default=[])
    p.add_argument("--tier", choices=TIERS, default="smoke")
    p.add_argument("--golden", default=None, metavar="DIR", help="golden directory (default: ROPEREF_GOLDEN or golden/)")
    return p


def run(args: argparse.Namespace) -> int:
    try:
        source = load_cases(args.golden, args.tier, args.filter, args.dtype)
        out = export_cases(source.cases, args.out, golden={k: source.info.get(k) for k in ("directory", "set_hash", "tier")})
    except UsageError as exc:
        print(f"roperef golden export: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"roperef golden export: error: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2
    print(f"exported {len(source.cases)} case(s) to {out}")
    return 0
