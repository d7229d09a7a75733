"""``roperef check``: judge a backend (or a foreign program's output files) against the golden vectors.

Exit codes: 0 every selected case passes (NOT_SUPPORTED, XFAIL and XPASS do not fail a
run), 1 any FAIL or ERROR, 2 a usage or input error (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .case import DTYPES, TIERS, GoldenCase

__all__ = ["add_parser", "run", "add_check_arguments", "load_cases", "CaseSource", "UsageError"]


class UsageError(ValueError):
    """Bad command-line input: printed as one line, exit 2."""


@dataclass
class CaseSource:
    """The selected cases and where they came from (for reports)."""

    cases: list[GoldenCase]
    info: dict[str, Any]


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", "-b", default=None, help="short name (numpy, numba, ...), module:attr, or env ROPEREF_BACKEND; default numba")
    p.add_argument("--filter", "-k", action="append", default=[], metavar="PAT", help="case id substring or glob; repeat or comma-separate for OR")
    p.add_argument("--dtype", action="append", choices=DTYPES, default=[], help="only cases of this dtype (repeatable)")
    p.add_argument("--tier", choices=TIERS, default="smoke", help="smoke (checked-in golden/) or full (generated in memory)")
    p.add_argument("--profile", default=None, help="tolerance profile: strict, fp32-angles, backend, or a .toml file (default: by the backend's angle dtype)")
    p.add_argument("--tol", action="append", default=[], metavar="KEY=VALUE", help="override a profile constant, e.g. c_ang=16")
    p.add_argument("--golden", default=None, metavar="DIR", help="golden directory (default: env ROPEREF_GOLDEN or the repository's golden/)")
    p.add_argument("--outputs", default=None, metavar="DIR", help="judge output files written by a foreign program into an exported DIR")
    p.add_argument("--xfail", default=None, metavar="FILE", help="expected failures: 'PATTERN  reason' per line")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help="run N cases at a time")
    p.add_argument("--isolate", action="store_true", help="run the backend in a subprocess (segfaults and hangs become ERROR)")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds per backend call (ERROR when exceeded)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the JSON report (docs/report-schema.md)")
    p.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML")
    p.add_argument("--markdown", default=None, metavar="FILE", help="write a Markdown report")
    p.add_argument("--plot", default=None, metavar="DIR", help="PNG of error/bound vs position for failing and near-failing cases (needs matplotlib)")
    p.add_argument("--no-diagnose", action="store_true", help="skip the decoy diagnosis of failures")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--goldens-only", action="store_true", help="judge the golden cases only (no cases generated for the backend's interface)")
    which.add_argument("--generated-only", action="store_true", help="judge only the cases generated for the backend's interface")
    p.add_argument("--quiet", "-q", action="store_true", help="only the summary line and problems")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("check", help="judge a backend against the golden vectors", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_check_arguments(p)
    return p


# ----------------------------------------------------------------------------- cases


def _select(cases: list[GoldenCase], filters: Sequence[str], dtypes: Sequence[str]) -> list[GoldenCase]:
    from .cases import select

    if filters:
        cases = select(cases, ",".join(filters))
    if dtypes:
        cases = [c for c in cases if c.dtype in dtypes]
    return cases


def load_cases(golden: str | None, tier: str, filters: Sequence[str] = (), dtypes: Sequence[str] = (), *,
               allow_empty: bool = False) -> CaseSource:
    """The golden cases to judge: from the golden directory, or (``--tier full`` without a full
    golden directory) materialized in memory from the catalogue. ``allow_empty``: no error when
    the selection is empty (generated cases may still match)."""
    from .golden import GoldenError, default_golden_dir, load_golden

    directory = Path(golden) if golden else default_golden_dir()
    info: dict[str, Any] = {"directory": str(directory), "tier": tier}
    loaded = None
    if (directory / "manifest.json").is_file() or golden:
        try:
            loaded = load_golden(directory)
        except GoldenError as exc:
            raise UsageError(f"golden set: {exc}") from None
    if loaded is not None and (tier == "smoke" or loaded.manifest.get("tier") == "full"):
        info.update(set_hash=loaded.set_hash, tier=loaded.manifest.get("tier", tier), generator=loaded.manifest.get("generator_version"))
        cases = [c for c in loaded.cases if tier == "full" or c.tier == "smoke"]
    else:
        from .cases import catalogue, materialize

        recipes = catalogue(tier)
        if filters:
            from .cases import select

            recipes = select(recipes, ",".join(filters))
        cases = [materialize(r, check_fast=False) for r in recipes]
        info.update(directory=None, set_hash=None, source=f"catalogue {tier} tier, computed in memory")
    selected = _select(cases, filters, dtypes)
    if not selected and not allow_empty:
        what = " and ".join(x for x in (f"--filter {','.join(filters)}" if filters else "", f"--dtype {','.join(dtypes)}" if dtypes else "") if x)
        raise UsageError(f"no case matches {what or 'the selection'} ({len(cases)} cases in the {tier} tier)")
    info["selected"] = len(selected)
    return CaseSource(selected, info)


# ----------------------------------------------------------------------------- progress


class Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()

    def __call__(self, result: Any) -> None:
        self.done += 1
        self.failed += result.status in ("FAIL", "ERROR")
        if not self.enabled:
            return
        width = 30
        fill = int(width * self.done / max(self.total, 1))
        self.stream.write(
            f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} {self.failed} failing "
            f"{time.perf_counter() - self.t0:5.1f}s"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()


# ----------------------------------------------------------------------------- run


def _repro(args: argparse.Namespace, backend: str) -> Callable[[GoldenCase], str]:
    base = ["roperef", "check"]
    if args.outputs:
        base += ["--outputs", args.outputs]
    else:
        base += ["--backend", backend]
    for flag in ("golden", "profile"):
        value = getattr(args, flag)
        if value:
            base += [f"--{flag}", str(value)]
    for t in args.tol:
        base += ["--tol", t]
    if args.tier != "smoke":
        base += ["--tier", args.tier]
    if args.isolate:
        base.append("--isolate")
    return lambda case: shlex.join([*base, "--filter", case.id])


def _check_args(args: argparse.Namespace) -> None:
    if args.jobs < 1:
        raise UsageError(f"--jobs={args.jobs}: must be >= 1")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout={args.timeout}: must be > 0 seconds")
    if args.outputs and args.backend:
        raise UsageError("--outputs judges files; it cannot be combined with --backend")
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install 'roperef[plot]' (or pip install matplotlib)") from None
    if args.outputs and args.isolate:
        raise UsageError("--isolate runs a Python backend; it cannot be combined with --outputs")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UsageError as exc:
        print(f"roperef check: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("roperef check: interrupted", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from . import report as rep
    from .report_sections import coverage_line
    from .backends.resolve import ENV_VAR, BackendError, resolve_backend
    from .runner import RunOptions, run_cases
    from .tolerance import default_profile_name, get_profile
    from .xfail import load_xfail

    _check_args(args)
    try:
        xfail = load_xfail(args.xfail) if args.xfail else None
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None

    if args.outputs:
        from .exchange import OutputsBackend, ExchangeError

        try:
            backend = OutputsBackend.open(args.outputs)
        except ExchangeError as exc:
            raise UsageError(str(exc)) from None
        selector = None
        label = f"outputs:{args.outputs}"
    else:
        selector = args.backend or os.environ.get(ENV_VAR) or "numba"
        try:
            backend = resolve_backend(selector)
        except BackendError as exc:
            raise UsageError(str(exc)) from None
        label = selector
    try:
        profile = get_profile(args.profile, args.tol, default=default_profile_name(backend.capabilities))
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None

    filters = list(args.filter)
    plan = None
    if args.outputs:
        source = backend.case_source(args.golden, args.tier, filters, args.dtype)
    else:
        from .check_sources import with_generated

        try:
            if args.generated_only:
                source = CaseSource([], {"tier": args.tier, "directory": None, "selected": 0})
            else:
                source = load_cases(args.golden, args.tier, filters, args.dtype, allow_empty=not args.goldens_only)
            if not args.goldens_only:
                cases, n_gen, plan = with_generated(source.cases, backend, filters, args.dtype)
                source = CaseSource(cases, dict(source.info, generated=n_gen, selected=len(cases)))
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None
    options = RunOptions(
        profile=profile, timeout=args.timeout, isolate=args.isolate, jobs=args.jobs, xfail=xfail,
        diagnose=not args.no_diagnose, repro=_repro(args, label),
    )
    bar = Progress(len(source.cases))
    try:
        report = run_cases(backend, source.cases, options, progress=bar, selector=selector)
    finally:
        bar.close()
    from .check_sources import attach_sections

    attach_sections(report, source.cases, backend, plan)
    golden_info = source.info
    command = ["roperef", "check", *sys.argv[2:]] if sys.argv and sys.argv[0].endswith("roperef") else None
    if args.quiet:
        problems = [r for r in report.results if r.status in ("FAIL", "ERROR")]
        for r in problems:
            print(rep._failure_line(r))
        if report.coverage:
            print(coverage_line(report.coverage))
        if report.verdict:
            print(f"run-level diagnosis: {report.verdict['summary']}")
        print(rep.summary_line(report))
    else:
        rep.console(report, sys.stdout, golden=golden_info)
    try:
        if args.json:
            rep.write_json(report, args.json, golden=golden_info, command=command)
        if args.junit:
            rep.write_junit(report, args.junit)
        if args.markdown:
            rep.write_markdown(report, args.markdown, golden=golden_info)
        if args.plot:
            paths = rep.write_plots(report, args.plot)
            from .report_sections import write_verdict_png

            verdict_png = write_verdict_png(report, args.plot)
            if verdict_png:
                paths.append(verdict_png)
            print(f"wrote {len(paths)} plot(s) to {args.plot}")
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write report: {exc}") from None
    return 0 if report.ok else 1
