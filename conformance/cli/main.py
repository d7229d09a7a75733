"""The ``roperef`` command: dispatches to one module per subcommand, imported only when used.

``roperef spec CONFIG.json``; ``roperef golden {generate,verify,list,show,audit,export}``;
``roperef check [--backend NAME] ...``. Exit codes: :class:`conformance.exit_codes.ExitCode`
(0 success, 1 a check failed, 2 usage or input error, 3 nothing judged, 4 an internal
roperef error, 5 no RoPE, 6 the console could not be written, 130 interrupted, 143 SIGTERM).
Whatever goes wrong, the user gets one line on stderr naming the file, key or argument and the
problem, never a traceback; ``--debug`` (anywhere on the command line) or ``ROPEREF_DEBUG=1``
prints the traceback as well.

The command writes through guarded streams (:mod:`conformance.cli.streams`): control characters
escaped, a closed pipe (``| head``) or a full disk never a traceback. SIGTERM stops every
command the way Ctrl-C does (:mod:`conformance.interrupt`). A thread a backend left running does
not keep the process alive after the summary (:func:`console_main`).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from ..exit_codes import ExitCode
from ..interrupt import Terminated, sigterm_raises
from ..untrusted_text import for_terminal
from .streams import guarded_streams, output_exit_code

__all__ = ["main", "SUBCOMMANDS"]

#: subcommand -> (module, one-line help). Each module defines ``add_parser(subparsers)`` (it adds
#: its own parser named after the subcommand to argparse's subparsers action) and ``run(args) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "spec": ("conformance.cli.spec", "print the RopeSpec(s) resolved from a HF config.json"),
    "golden": ("conformance.cli.golden", "generate, verify, list, show, audit or export golden vectors"),
    "check": ("conformance.cli.check", "judge a backend against the golden vectors"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors: exit 2 with one line
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


def _describe(exc: BaseException) -> tuple[ExitCode, str]:
    """The exit code and the one line for an exception that reached :func:`main`."""
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return ExitCode.USAGE, f"{where}no space left on the device (nothing was replaced; free space and retry)"
        if exc.errno == errno.EROFS:
            return ExitCode.USAGE, f"{where}read-only file system (nothing was written)"
        if exc.strerror:
            return ExitCode.USAGE, f"{where}{exc.strerror}"
        return ExitCode.USAGE, str(exc)
    if isinstance(exc, (ValueError, TypeError)):
        return ExitCode.USAGE, str(exc)
    if isinstance(exc, MemoryError):
        return ExitCode.USAGE, "out of memory (an input declares or needs more memory than this machine has)"
    if isinstance(exc, RecursionError):
        return ExitCode.USAGE, "an input is nested too deeply to process"
    if isinstance(exc, OverflowError):
        return ExitCode.USAGE, f"a number in the input is out of range ({exc})"
    return ExitCode.INTERNAL, (f"internal error (a roperef bug, please report it): {type(exc).__name__}: {exc} "
                               "(rerun with --debug for the traceback)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``roperef`` command; its exit code (see the module docstring). argparse's own exits
    (``--help``, a usage error) raise ``SystemExit`` as usual."""
    with guarded_streams() as (out, err), sigterm_raises():
        code = _main(argv)
        out.flush()
        err.flush()
        for stream in (out, err):
            if stream.failure is not None and not stream.broken_pipe and err.failure is None:
                reason = getattr(stream.failure, "strerror", None) or str(stream.failure)
                print(f"roperef: error: cannot write to {stream.name}: {reason} (report files given with "
                      "--json/--junit/--markdown were written before the console)", file=err)
                err.flush()
    return output_exit_code(code, out, err)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list or os.environ.get("ROPEREF_DEBUG", "") not in ("", "0")
    args_list = [a for a in args_list if a != "--debug"]
    try:
        parser, modules = build_parser()  # imports the subcommands (NumPy): Ctrl-C may land here
        args = parser.parse_args(args_list)
    except Terminated:
        print("roperef: terminated (SIGTERM)", file=sys.stderr)
        return ExitCode.TERMINATED
    except KeyboardInterrupt:
        print("roperef: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # a signal during an import can arrive wrapped (RuntimeError from a dataclass's __set_name__)
        stopped = _stopped_by(exc)
        if stopped is None:
            raise
        print("roperef: terminated (SIGTERM)" if stopped == ExitCode.TERMINATED else "roperef: interrupted", file=sys.stderr)
        return stopped
    if not getattr(args, "command", None):
        parser.print_help()
        return ExitCode.USAGE
    prefix = f"roperef {args.command}" + (f" {args.golden_command}" if getattr(args, "golden_command", None) else "")
    try:
        return int(modules[args.command].run(args))
    except Terminated:
        print(f"{prefix}: terminated (SIGTERM)", file=sys.stderr)
        return ExitCode.TERMINATED
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except SystemExit as exc:  # something below called sys.exit(): never a silent exit 0
        if debug:
            traceback.print_exc()
        print(f"{prefix}: error: unexpected exit request SystemExit({exc.code!r}) (a backend or plugin called "
              "sys.exit; rerun with --debug for the traceback)", file=sys.stderr)
        return ExitCode.INTERNAL
    except Exception as exc:
        stopped = _stopped_by(exc)
        if stopped is not None:  # Ctrl-C or SIGTERM wrapped by the code it interrupted (an import, a __set_name__)
            print(f"{prefix}: terminated (SIGTERM)" if stopped == ExitCode.TERMINATED else f"{prefix}: interrupted",
                  file=sys.stderr)
            return stopped
        if debug:
            traceback.print_exc()
        code, line = _describe(exc)
        print(f"{prefix}: error: {for_terminal(line)}", file=sys.stderr)
        return code


def _stopped_by(exc: BaseException) -> ExitCode | None:
    """``INTERRUPTED`` or ``TERMINATED`` when ``exc`` was caused by Ctrl-C or SIGTERM: Python wraps an
    exception raised inside some hooks (``__set_name__`` while a dataclass is defined, so during an
    import) in a ``RuntimeError`` whose cause is the signal's exception; None otherwise."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, Terminated):
            return ExitCode.TERMINATED
        if isinstance(cur, KeyboardInterrupt):
            return ExitCode.INTERRUPTED
        cur = cur.__cause__ or cur.__context__
    return None


def _lingering_threads() -> list[str]:
    """Names of the non-daemon threads still running besides the main one (Python would wait for them)."""
    return [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]


def console_main() -> int:
    """The ``roperef`` command (and ``python -m conformance.cli``): :func:`main`, then Ctrl-C and
    SIGTERM ignored while the interpreter shuts down. A signal that lands after the run has ended
    (its report written, its exit code decided) would otherwise make the process die by the signal
    (-2, -15) instead of exiting with that code; an interrupted run exits without the interpreter's
    shutdown, and so does a run after which a backend's non-daemon thread is still running (Python
    would wait for it forever after the summary)."""
    code = main()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    lingering = _lingering_threads()
    if code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED) or lingering:
        # a Ctrl-C that interrupted an import (the subcommands import NumPy and Numba) can leave the
        # interpreter to die by the signal while it shuts down (exit -2 instead of 130, seen in ~1 of
        # 10 runs): the partial report is written, so leave without the shutdown
        if lingering:
            try:
                print(f"roperef: not waiting for {len(lingering)} thread(s) a backend left running "
                      f"({', '.join(lingering[:5])})", file=sys.stderr)
            except (OSError, ValueError):
                pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(int(code))
    return code


if __name__ == "__main__":
    raise SystemExit(console_main())
