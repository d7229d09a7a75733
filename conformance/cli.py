"""The ``roperef`` command: dispatches to one module per subcommand, imported only when used.

``roperef spec CONFIG.json``; ``roperef golden {generate,verify,list,show,audit,export}``;
``roperef check [--backend NAME] ...``. Exit codes: 0 success, 1 a check failed,
2 usage or input error (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import Sequence

__all__ = ["main", "SUBCOMMANDS"]

#: subcommand -> (module, one-line help). Each module defines ``add_parser(subparsers)`` (it adds
#: its own parser named after the subcommand to argparse's subparsers action) and ``run(args) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "spec": ("conformance.cli_spec", "print the RopeSpec(s) resolved from a HF config.json"),
    "golden": ("conformance.cli_golden", "generate, verify, list, show, audit or export golden vectors"),
    "check": ("conformance.cli_check", "judge a backend against the golden vectors"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors: exit 2 with one line
        self.print_usage(sys.stderr)
        print(f"roperef: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    """The top-level parser and the subcommand modules that exist in this install."""
    parser = _Parser(prog="roperef", description="Reference, golden vectors and conformance judge for RoPE.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    modules: dict[str, ModuleType] = {}
    for name, (module_name, _help) in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.add_parser(sub)
        modules[name] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(modules[args.command].run(args))
    except (ValueError, TypeError, FileNotFoundError, PermissionError) as exc:
        print(f"roperef {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
