"""``roperef check``: judge a backend (or a foreign program's output files) against the golden vectors.

Exit codes (:class:`conformance.exit_codes.ExitCode`): 0 cases were judged and every one passed
(XFAIL and XPASS do not fail a run, nor does IMPRECISE unless --fail-imprecise), 1 any FAIL or
ERROR (or IMPRECISE with --fail-imprecise), 2 a usage or input error (one line on stderr, no
traceback), 3 nothing was judged (every selected case NOT_SUPPORTED), 6 the console could not be
written (the report files were), 130 interrupted by Ctrl-C, 143 by SIGTERM (the partial report is
still written and printed, marked interrupted).

IMPRECISE: a case over its bound by at most 8x whose output a precision mechanism reproduces
(frequencies drifting with the pair index as in ggml, an angle error growing with the angle,
rounding coarser than declared): the meaning is right, the precision below the declaration; the
report names the mechanism and the --tol constants or declaration under which it would pass.

Order of a run: the flags are checked as given, then every path is made absolute before the
backend is loaded (a backend that changes the working directory moves nothing); the backend is
loaded and whatever its import changed in the process is put back and noted; the cases are
loaded and their set anchored; the run; then the report files, written atomically with Ctrl-C
and SIGTERM held off; the console last.
"""

from __future__ import annotations

import argparse
import functools
import io
import math
import os
import shlex
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..backends.resolve import ENV_VAR, BackendError
from ..bugs.exposure_cache import ExposureCache
from ..calls.isolate import IsolatedBackend
from ..calls.process_state import ProcessState
from ..calls.stage_call import DEFAULT_TIMEOUT_S
from ..cases.case import GoldenCase
from ..error_model.tolerance import default_profile_name, get_profile
from ..exit_codes import ExitCode
from ..golden.atomic_files import NotARegularFile, require_writable_target, sigint_deferred
from ..golden.case_source import user_case_source
from ..interrupt import StopFlag, sigint_sets
from ..judge import runner  # runner.run_cases called through the module: tests wrap it to see the options
from ..judge.check_sources import attach_sections, check_cases
from ..judge.run_verdict import exit_code_for, nothing_judged_line
from ..judge.runner import RunOptions, effective_jobs
from ..judge.xfail import builtin_name, load_xfail, shipped_xfail
from ..report import formats as rep
from ..report.sections import coverage_line, write_verdict_png
from ..selection import exact_pattern
from ..untrusted_text import for_terminal
from ..usage_error import UsageError
from ..vocabulary import DTYPES, TIERS
from .backend_load import load_in_process, load_isolated_backend
from .check_modes import add_mode_arguments, option, parse_mode
from .compile_notice import compile_notice
from .exchange import ExchangeError, OutputsBackend
from .progress import Progress

__all__ = ["add_parser", "run", "add_check_arguments", "Progress"]


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", "-b", default=None, help="short name (numpy, numba, ...), module:attr, or env ROPEREF_BACKEND; default numba")
    p.add_argument("--filter", "-k", action="append", default=[], metavar="PAT", help="case id substring or glob; repeat or comma-separate for OR")
    p.add_argument("--dtype", action="append", choices=DTYPES, default=[], help="only cases of this dtype (repeatable)")
    p.add_argument("--tier", choices=TIERS, default="smoke", help="smoke (checked-in golden/) or full (generated in memory)")
    p.add_argument("--profile", default=None,
                   help="tolerance profile: strict, fp32-angles, backend, or a .toml file (default: by the backend's angle dtype)")
    p.add_argument("--tol", action="append", default=[], metavar="KEY=VALUE", help="override a profile constant, e.g. c_ang=16")
    p.add_argument("--golden", default=None, metavar="DIR", help="golden directory (default: env ROPEREF_GOLDEN or the repository's golden/)")
    p.add_argument("--outputs", default=None, metavar="DIR", help="judge output files written by a foreign program into an exported DIR")
    p.add_argument("--cases", default=None, metavar="DIR",
                   help="judge your own cases instead of the golden set: folders with case.json + .npy/.npz arrays (docs/user-cases.md)")
    xf = p.add_mutually_exclusive_group()
    xf.add_argument("--xfail", default=None, metavar="FILE",
                    help="expected failures: 'PATTERN  reason' per line (replaces a built-in backend's shipped list)")
    xf.add_argument("--no-xfail", action="store_true",
                    help="judge a built-in backend without its shipped list of known discrepancies "
                         "(conformance/backends/xfail/NAME.txt, applied by default)")
    p.add_argument("--set-hash", "--golden-hash", dest="set_hash", default=None, metavar="HEX",
                   help="judge only if the golden set (or --cases directory) has this set hash (or starts with these "
                        "16+ hex digits), as the header prints it; env ROPEREF_SET_HASH")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help="run N cases at a time (capped by the number of CPU cores)")
    p.add_argument("--isolate", action="store_true", help="run the backend in worker processes (segfaults, exits and hangs become ERROR)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help=f"seconds per backend call, ERROR when exceeded (default {DEFAULT_TIMEOUT_S:g}); "
                        "given explicitly, it also runs the backend in worker processes, as --isolate, so that a hung call is killed")
    p.add_argument("--json", default=None, metavar="FILE", help="write the JSON report (docs/report-schema.md)")
    p.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML")
    p.add_argument("--markdown", default=None, metavar="FILE", help="write a Markdown report")
    p.add_argument("--plot", default=None, metavar="DIR", help="PNG of error/bound vs position for failing and near-failing cases (needs matplotlib)")
    p.add_argument("--no-diagnose", action="store_true", help="skip the diagnosis of failures (decoys, measured operator, probing)")
    p.add_argument("--no-probe", action="store_true",
                   help="diagnose failures from their own data only: never call the backend again with designed inputs "
                        "(by default the first FAIL of each group of cases sharing stage, spec, dtype and shape costs up to 5 extra calls)")
    p.add_argument("--fail-imprecise", action="store_true",
                   help="count IMPRECISE cases (within 8x the bound, reproduced by a precision mechanism) as failing: exit 1")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--goldens-only", action="store_true", help="judge the golden cases only (no cases generated for the backend's interface)")
    which.add_argument("--generated-only", action="store_true", help="judge only the cases generated for the backend's interface")
    p.add_argument("--quiet", "-q", action="store_true", help="only the summary line and problems")
    add_mode_arguments(p)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("check", help="judge a backend against the golden vectors", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_check_arguments(p)
    return p


# ----------------------------------------------------------------------------- run


def _repro(args: argparse.Namespace, backend: str) -> Callable[[GoldenCase], str]:
    base = ["roperef", "check"]
    if args.outputs:
        base += option("--outputs", args.outputs)
    else:
        base += option("--backend", backend)
    if args.cases:
        base += option("--cases", args.cases)
    for flag in ("golden", "profile"):
        value = getattr(args, flag)
        if value:
            base += option(f"--{flag}", str(value))
    for t in args.tol:
        base += option("--tol", t)
    if args.tier != "smoke":
        base += ["--tier", args.tier]
    if args.isolate:
        base.append("--isolate")
    if args.timeout is not None:
        base += ["--timeout", f"{args.timeout:g}"]
    return lambda case: shlex.join([*base, *option("--filter", exact_pattern(case.id))])  # exact, not a substring


def _check_args(args: argparse.Namespace) -> None:
    if args.jobs < 1:
        raise UsageError(f"--jobs={args.jobs}: must be >= 1")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout={args.timeout}: must be a finite number of seconds > 0")
    if args.outputs and args.backend:
        raise UsageError("--outputs judges files; it cannot be combined with --backend")
    if args.plot:
        try:
            import matplotlib  # noqa: F401  # imported only to fail early, before any case runs, if it is missing
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install 'roperef[plot]' (or pip install matplotlib)") from None
    if args.cases and (args.outputs or args.golden or args.tier != "smoke"):
        other = "--outputs" if args.outputs else "--golden" if args.golden else f"--tier {args.tier}"
        raise UsageError(f"--cases judges your own cases; it cannot be combined with {other}")
    if args.outputs and args.isolate:
        raise UsageError("--isolate runs a Python backend; it cannot be combined with --outputs")
    for flag in ("json", "junit", "markdown"):
        value = getattr(args, flag)
        if not value:
            continue
        try:
            target = require_writable_target(value)
        except NotARegularFile as exc:
            raise UsageError(f"--{flag} {exc.strerror}") from None
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise UsageError(f"--{flag} {value}: the directory {parent} does not exist")


def run(args: argparse.Namespace) -> int:
    try:
        with ExitStack() as judging:  # holds the compile notice once a backend is loaded (below)
            return _run(args, judging)
    except UsageError as exc:
        print(f"roperef check: error: {for_terminal(str(exc))}", file=sys.stderr)
        return ExitCode.USAGE


def _load_backend(args: argparse.Namespace, stop: Any, timeout: float, isolate: bool) -> tuple[Any, str | None, str]:
    """(backend, selector for workers, label for reports and repro commands)."""
    if args.outputs:
        try:
            return OutputsBackend.open(args.outputs), None, f"outputs:{args.outputs}"
        except ExchangeError as exc:
            raise UsageError(str(exc)) from None

    selector = args.backend or os.environ.get(ENV_VAR) or "numba"
    try:
        if isolate:
            return load_isolated_backend(selector, timeout, stop), selector, selector
        return load_in_process(selector, stop), selector, selector
    except BackendError as exc:
        raise UsageError(str(exc)) from None


#: the command line's paths, made absolute before the backend is loaded
_PATH_FLAGS = ("json", "junit", "markdown", "plot", "golden", "cases", "outputs", "xfail", "save_failures")


def _absolute_paths(args: argparse.Namespace) -> None:
    """Every path of the command line made absolute now: a backend that calls ``os.chdir`` (at import
    or while it runs) cannot move the reports or change which golden set is read."""
    for flag in _PATH_FLAGS:
        value = getattr(args, flag, None)
        if value:
            try:
                setattr(args, flag, os.path.abspath(value))
            except (OSError, ValueError):  # a working directory that no longer exists: leave it as given
                pass


def _run(args: argparse.Namespace, judging: ExitStack) -> int:
    _check_args(args)
    try:
        mode = parse_mode(args)  # --explore / --long-context (validated before any backend is loaded)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    try:
        given = load_xfail(args.xfail) if args.xfail else None
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    _absolute_paths(args)  # checked as given above; from here on absolute, before the backend is loaded

    timeout = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S
    isolate = bool(args.isolate or (args.timeout is not None and not args.outputs))
    stop = StopFlag()
    state = ProcessState.capture()
    try:
        backend, selector, label = _load_backend(args, stop, timeout, isolate)
    finally:
        load_notes = state.restore("the backend's import")  # a chdir, a replaced sys.stdout: put back, said
    judging.enter_context(compile_notice(sys.stderr))  # a machine's first run says what it compiles, never a silent minute
    try:
        return _judge(args, mode, backend, selector, label, stop, timeout, isolate, given, load_notes)
    finally:
        close = getattr(backend, "close", None)
        if isinstance(backend, IsolatedBackend) and callable(close):
            close()  # the worker that answered supports() while cases were planned


def _judge(args: argparse.Namespace, mode: Any, backend: Any, selector: str | None, label: str, stop: StopFlag,
           timeout: float, isolate: bool, given: Any, load_notes: list[str]) -> int:
    shipped = given is None and not args.no_xfail and not args.outputs
    try:
        xfail = given if given is not None else shipped_xfail(builtin_name(backend, selector)) if shipped else None
        profile = get_profile(args.profile, args.tol, default=default_profile_name(backend.capabilities))
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None

    if mode is not None:
        options = RunOptions(profile=profile, timeout=timeout, isolate=isolate, xfail=xfail,
                             diagnose=not args.no_diagnose, probe=not args.no_probe,
                             fail_imprecise=args.fail_imprecise)
        out, err = io.StringIO(), io.StringIO()  # the console, printed after the report files
        make_bar = functools.partial(Progress, quiet=args.quiet)
        report, info, code = mode.run(backend, options, args=args, label=label, selector=selector, progress=make_bar,
                                      out=out, err=err)
        report.notes[:0] = load_notes
        printed = _write_reports(args, report, info)
        sys.stdout.write(out.getvalue() + printed)
        sys.stderr.write(err.getvalue())
        return int(code)
    filters = list(args.filter)
    plan = None
    exposure: ExposureCache | None = None
    if args.outputs:
        source = backend.case_source(args.golden, args.tier, filters, args.dtype, set_hash=args.set_hash)
    elif args.cases:
        source = user_case_source(args.cases, filters, args.dtype, set_hash=args.set_hash)
    else:
        exposure = ExposureCache.open()  # the exposure rules' answers of earlier runs (same code): saved below
        source, plan = check_cases(backend, args.golden, args.tier, filters, args.dtype,
                                   goldens_only=args.goldens_only, generated_only=args.generated_only,
                                   set_hash=args.set_hash, exposure=exposure)
    jobs = effective_jobs(args.jobs)
    if jobs < args.jobs:
        print(f"roperef check: --jobs {args.jobs} capped at {jobs} (the CPU cores available)", file=sys.stderr)
    options = RunOptions(
        profile=profile, timeout=timeout, isolate=isolate, jobs=jobs, xfail=xfail,
        diagnose=not args.no_diagnose, repro=_repro(args, label), stop=stop, probe=not args.no_probe,
        fail_imprecise=args.fail_imprecise,
    )
    bar = Progress(len(source.cases), quiet=args.quiet)
    try:
        with sigint_sets(stop):
            report = runner.run_cases(backend, source.cases, options, progress=bar, selector=selector)
    finally:
        bar.close()
    report.notes[:0] = load_notes
    attach_sections(report, source.cases, backend, plan, exposure)
    if exposure is not None:
        exposure.save()  # an unwritable cache directory: the next run computes them again
    if xfail is not None and given is None:
        # a shipped list covers several case sets (smoke, full, examples): only entries whose every
        # selected match passed are worth a line here (check_backends.py passes --xfail: all of them)
        report.stale_xfails = [e for e in report.stale_xfails if e["why"] != "matches no selected case"]
    golden_info = source.info
    printed = _write_reports(args, report, golden_info)  # the files first: a failing console loses nothing
    _console(args, report, golden_info)
    sys.stdout.write(printed)
    code = exit_code_for(report)
    if code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED):
        by = "SIGTERM" if code == ExitCode.TERMINATED else "Ctrl-C"
        print(f"roperef check: interrupted after {len(report.results)} of "
              f"{len(report.results) + report.not_run} cases by {by} (partial report)", file=sys.stderr)
    elif code == ExitCode.NOTHING_JUDGED:
        print(f"roperef check: {for_terminal(nothing_judged_line(report))}", file=sys.stderr)
    return code


def _console(args: argparse.Namespace, report: Any, golden_info: dict[str, Any]) -> None:
    """The console report (``-q``: problems, coverage, the run-level diagnosis and the summary only)."""
    if args.quiet:
        problems = [r for r in report.results if r.status in ("FAIL", "ERROR", "IMPRECISE")]
        for r in problems:
            print(rep.failure_line(r))
        if report.coverage:
            print(coverage_line(report.coverage))
        if report.verdict:
            print(f"run-level diagnosis: {for_terminal(report.verdict['summary'])}")
        print(rep.summary_line(report))
    else:
        rep.console(report, sys.stdout, golden=golden_info)


def _write_reports(args: argparse.Namespace, report: Any, golden_info: dict[str, Any]) -> str:
    """--json, --junit, --markdown, --plot, each atomically, with Ctrl-C and SIGTERM held until all are
    written (an unwritable path is a usage error). Returns what to print about them."""
    command = ["roperef", "check", *sys.argv[2:]] if sys.argv and sys.argv[0].endswith("roperef") else None
    printed = ""
    try:
        with sigint_deferred():
            if args.json:
                rep.write_json(report, args.json, golden=golden_info, command=command)
            if args.junit:
                rep.write_junit(report, args.junit)
            if args.markdown:
                rep.write_markdown(report, args.markdown, golden=golden_info)
            if args.plot:
                paths = rep.write_plots(report, args.plot)
                verdict_png = write_verdict_png(report, args.plot)
                if verdict_png:
                    paths.append(verdict_png)
                printed = f"wrote {len(paths)} plot(s) to {args.plot}\n"
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write report: {exc}") from None
    return printed
