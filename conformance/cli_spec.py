"""``roperef spec CONFIG.json [--layer-type T]``: print the RopeSpec(s) resolved from a HF config as JSON.

Output: ``RopeSpec.to_dict()`` for a single spec, or ``{name: RopeSpec.to_dict()}`` for a config with
one spec per layer type (Gemma 3/4) or text + vision parts. Errors (missing file, bad JSON, JSON past
the limits of :mod:`roperef.json_input`, a config rule broken, a number out of range): one line on
stderr naming the file, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .exit_codes import ExitCode

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Add the ``spec`` subcommand to an argparse subparsers action."""
    p = subparsers.add_parser(
        "spec",
        help="print the RopeSpec(s) resolved from a HF config.json",
        description="Resolve a Hugging Face config.json into RopeSpec(s) and print them as JSON.",
    )
    p.add_argument("config", metavar="CONFIG.json", help="path to a HF config.json")
    p.add_argument("--layer-type", dest="layer_type", default=None,
                   help="one layer type (full_attention, sliding_attention, text, vision, ...)")


def run(args: argparse.Namespace) -> int:
    """Print the resolved spec(s); return 0, or 2 with one line on stderr on bad input."""
    from roperef.hf import spec_from_config
    from roperef.spec import RopeSpec

    try:
        result = spec_from_config(args.config, layer_type=getattr(args, "layer_type", None))
    except (ValueError, TypeError, OSError) as exc:
        print(f"roperef spec: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except (OverflowError, RecursionError, MemoryError) as exc:
        print(f"roperef spec: error: config={args.config!r}: a value is out of range for the RoPE maths "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return ExitCode.USAGE
    if isinstance(result, RopeSpec):
        out: Any = result.to_dict()
    else:
        out = {name: spec.to_dict() for name, spec in result.items()}
    print(json.dumps(out, indent=2, allow_nan=False))
    return ExitCode.OK
