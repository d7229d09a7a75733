"""``roperef check --explore N`` and ``roperef check --long-context T,...``: the flags, their validation, the run.

Two case sources besides the golden set (docs/explore.md, docs/long-context.md):

- ``--explore N [--seed S] [--save-failures DIR]``: N random cases drawn within the backend's
  declared interface (:mod:`conformance.explore.run`); failures are shrunk, printed with their
  diagnosis and a one-line repro, and optionally saved as a golden set;
- ``--long-context [T,...] [--chunk N] [--long-heads H] [--long-spec SPEC] [--seed S]``: forward
  and backward streamed at real lengths (:mod:`conformance.long_context.stream`).

:func:`parse_mode` validates everything before any backend is loaded and raises ValueError
(``name=value: rule``), which ``roperef check`` turns into a usage error (exit 2).
:meth:`ExploreMode.run` / :meth:`LongContextMode.run` print the console report and return
the :class:`~conformance.judge.runner.RunReport`, the case-source object of the JSON report and the
exit code (:class:`~conformance.exit_codes.ExitCode`).
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from roperef.errors import bad
from roperef.hf import spec_from_config
from roperef.json_input import JSONInputError, load_json_file
from roperef.spec import RopeSpec

from ..cases.catalog import presets_dir
from ..exit_codes import ExitCode
from ..explore.run import MAX_COUNT, MAX_SEED, ExploreConfig, save_cases
from ..explore.run import explore as run_explore
from ..explore.specs import Interface
from ..golden.store import MANIFEST, GoldenError, load_golden
from ..judge.runner import FAILING, RunOptions, RunReport
from ..long_context.stream import (
    DEFAULT_CHUNK,
    DEFAULT_DTYPES,
    DEFAULT_HEADS,
    MAX_CHUNK,
    LongContextPlan,
    default_spec,
    row_id,
    rows,
    run_long_context,
)
from ..report import formats as rep
from ..selection import select
from .context_mode import ContextMode, parse_context

__all__ = ["add_mode_arguments", "parse_mode", "ExploreMode", "LongContextMode", "exit_code", "option"]


def add_mode_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("explore mode (docs/explore.md)")
    g.add_argument("--explore", default=None, metavar="N",
                   help="judge N random cases drawn within the backend's declared interface; failures are shrunk")
    g.add_argument("--seed", default=None, metavar="S",
                   help="seed of --explore (default: a random one, printed) or of the --long-context inputs (default 0)")
    g.add_argument("--save-failures", default=None, metavar="DIR",
                   help="save each minimal failing case into the golden set DIR (replay: roperef check --golden DIR --goldens-only)")
    g = p.add_argument_group("long context (docs/long-context.md)")
    g.add_argument("--long-context", nargs="?", const="131072,1048576", default=None, metavar="T[,T...]",
                   help="stream forward/backward at these sequence lengths, chunk by chunk (default 131072,1048576)")
    g.add_argument("--chunk", default=None, metavar="N", help="tokens per chunk (default 4096)")
    g.add_argument("--long-heads", default=None, metavar="H", help="heads of the long sequences (default 8)")
    g.add_argument("--context", action="store_true",
                   help="the context sweep: every declared stage x dtype at positions sampled in every octave up to 2^31-1, "
                        "the certified position per row (docs/context.md; --long-spec picks the spec)")
    g.add_argument("--long-spec", default=None, metavar="SPEC",
                   help="a preset name, a HF config.json or a RopeSpec JSON (default: D=128, theta=500000, no scaling)")


# ----------------------------------------------------------------------------- validation


def _integer(name: str, text: str, lo: int, hi: int) -> int:
    rule = f"must be an integer in [{lo}, {hi}]"
    try:
        value = int(str(text).strip(), 10)
    except ValueError:
        bad(name, text, rule)
    if not lo <= value <= hi:
        bad(name, value, rule)
    return value


def _refuse(args: argparse.Namespace, mode: str, flags: dict[str, bool]) -> None:
    for flag, given in flags.items():
        if given:
            value = getattr(args, flag.lstrip("-").replace("-", "_"), True)
            bad(flag, ",".join(value) if isinstance(value, list) else value, f"cannot be combined with {mode}")


def _golden_dir_ok(path: str) -> None:
    d = Path(path)
    if d.exists() and not d.is_dir():
        bad("--save-failures", path, "exists and is not a directory")
    if (d / MANIFEST).is_file():
        try:
            load_golden(d)
        except GoldenError as exc:
            bad("--save-failures", path, f"holds a golden set that does not load ({exc})")
    elif d.is_dir() and any(d.glob("*.npz")):
        bad("--save-failures", path, "holds .npz files but no manifest.json (not a golden set written by roperef)")


def _load_spec(text: str) -> Any:
    """A RopeSpec from a preset name, a HF config.json, or a RopeSpec JSON (``roperef spec`` output)."""
    path = Path(text)
    if not path.is_file():
        preset = presets_dir() / f"{text}.json"
        if not preset.is_file():
            bad("--long-spec", text, f"is neither a file nor a preset name in {presets_dir()}")
        path = preset
    try:  # within the JSON limits (depth, digits, finite numbers, size, a regular file): errors name the file
        data = load_json_file(path, what="spec")
    except (OSError, JSONInputError) as exc:
        bad("--long-spec", text, f"does not read as JSON ({exc})")
    if isinstance(data, dict) and "pairing" in data:  # roperef spec output (HF configs have no 'pairing')
        return RopeSpec.from_dict(data)
    spec = spec_from_config(data)
    if not isinstance(spec, RopeSpec):
        bad("--long-spec", text, f"resolves to several specs ({', '.join(spec)}); write one with "
            f"`roperef spec {path} --layer-type NAME > spec.json` and pass that")
    return spec


def parse_mode(args: argparse.Namespace) -> ExploreMode | LongContextMode | ContextMode | None:
    """The mode the flags ask for (None: the golden run), validated; ValueError on bad input."""
    if getattr(args, "context", False):
        return parse_context(args, _load_spec, _integer)
    explore, long = args.explore is not None, args.long_context is not None
    if explore and long:
        bad("--explore", args.explore, "cannot be combined with --long-context (run them separately)")
    if not explore:
        for flag in ("save_failures",):
            if getattr(args, flag) is not None:
                bad("--save-failures", getattr(args, flag), "needs --explore")
    if not long:
        for flag in ("chunk", "long_heads", "long_spec"):
            if getattr(args, flag) is not None:
                bad(f"--{flag.replace('_', '-')}", getattr(args, flag), "needs --long-context")
    if not explore and not long:
        if args.seed is not None:
            bad("--seed", args.seed, "needs --explore or --long-context")
        return None
    common = {"--outputs": bool(args.outputs), "--golden": bool(args.golden), "--tier": args.tier != "smoke",
              "--jobs": args.jobs != 1, "--set-hash": bool(getattr(args, "set_hash", None))}
    if explore:
        _refuse(args, "--explore", {**common, "--filter": bool(args.filter)})
        count = _integer("--explore", args.explore, 1, MAX_COUNT)
        if args.seed is None:
            seed, given = secrets.randbelow(2**32), False
        else:
            seed, given = _integer("--seed", args.seed, 0, MAX_SEED), True
            if seed + count - 1 > MAX_SEED:
                bad("--seed", seed, f"seed + count - 1 must be <= 2^63 - 1 (case i uses seed + i; count {count})")
        if args.save_failures is not None:
            _golden_dir_ok(args.save_failures)
        return ExploreMode(count, seed, given, args.save_failures, tuple(args.dtype))

    _refuse(args, "--long-context", {**common, "--isolate": args.isolate, "--timeout": args.timeout is not None})
    items = [t.strip() for t in str(args.long_context).split(",")]
    if not items or any(not t for t in items) or len(items) > 8:
        bad("--long-context", args.long_context, "must be 1 to 8 comma-separated lengths, e.g. 131072,1048576")
    lengths = tuple(_integer("--long-context", t, 1, 2**31) for t in items)
    chunk = DEFAULT_CHUNK if args.chunk is None else _integer("--chunk", args.chunk, 1, MAX_CHUNK)
    heads = DEFAULT_HEADS if args.long_heads is None else _integer("--long-heads", args.long_heads, 1, 1024)
    seed = 0 if args.seed is None else _integer("--seed", args.seed, 0, 2**63 - 1)
    spec = _load_spec(args.long_spec) if args.long_spec is not None else None
    LongContextPlan(lengths, spec or default_spec(), chunk, heads, tuple(args.dtype) or DEFAULT_DTYPES, seed=seed)  # validates
    return LongContextMode(lengths, chunk, heads, spec, seed, tuple(args.dtype), tuple(args.filter))


# ----------------------------------------------------------------------------- exit code


def exit_code(report: RunReport, err: TextIO | None = None) -> ExitCode:
    """FAILED on any FAIL/ERROR; NOTHING_JUDGED when every result is NOT_SUPPORTED (or there is none); else OK."""
    if any(r.status in FAILING for r in report.results):
        return ExitCode.FAILED
    if all(r.status == "NOT_SUPPORTED" for r in report.results):
        if err is not None:
            print(f"roperef check: nothing was judged: {len(report.results)} case(s), all NOT_SUPPORTED", file=err)
        return ExitCode.NOTHING_JUDGED
    if report.informed == 0:  # every judged case an UNINFORMATIVE PASS (docs/conformance.md)
        if err is not None:
            print(f"roperef check: nothing was judged: every judged case of {len(report.results)} is an UNINFORMATIVE "
                  "PASS (a bound as large as the output)", file=err)
        return ExitCode.NOTHING_JUDGED
    return ExitCode.OK


def option(flag: str, value: str) -> list[str]:
    """``[flag, value]``, or ``[flag=value]`` when the value starts with ``-`` (argparse would take it for an option)."""
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def _base_command(args: argparse.Namespace, label: str) -> list[str]:
    cmd = ["roperef", "check", *option("--backend", label)]
    for flag in ("profile",):
        if getattr(args, flag):
            cmd += [f"--{flag}", str(getattr(args, flag))]
    for t in args.tol:
        cmd += ["--tol", t]
    for d in args.dtype:
        cmd += ["--dtype", d]
    if getattr(args, "isolate", False):
        cmd.append("--isolate")
    if getattr(args, "timeout", None):
        cmd += ["--timeout", f"{args.timeout:g}"]
    return cmd


def _short(arr: Any, limit: int = 12) -> str:
    if arr is None:
        return "-"
    flat = arr.reshape(-1)
    body = ", ".join(str(int(v)) for v in flat[:limit]) + (", ..." if flat.size > limit else "")
    return f"[{body}] (shape {list(arr.shape)})" if arr.ndim > 1 or flat.size > limit else f"[{body}]"


# ----------------------------------------------------------------------------- explore


@dataclass(frozen=True)
class ExploreMode:
    count: int
    seed: int
    seed_given: bool
    save_to: str | None
    dtypes: tuple[str, ...]

    def run(self, backend: Any, options: RunOptions, *, args: argparse.Namespace, label: str, selector: str | None,
            progress: Callable[[int], Any] | None = None, out: TextIO | None = None,
            err: TextIO | None = None) -> tuple[RunReport, dict[str, Any], ExitCode]:
        """Draw, judge and shrink; print the report and the minimal failing cases; save them with
        ``--save-failures``. Returns (report, case-source object for --json, exit code)."""
        out, err = out or sys.stdout, err or sys.stderr

        iface = Interface.of(backend, self.dtypes)
        library = getattr(backend, "library_reason", None)
        why = iface.empty_reason() or (library() if callable(library) else None)
        if why:
            print(f"roperef check: nothing was judged: explore has nothing to draw for {label}: {why}", file=err)
            empty = RunReport(backend=str(getattr(backend, "name", label)), capabilities={}, profile={})
            return empty, {"directory": None, "set_hash": None, "source": "explore"}, ExitCode.NOTHING_JUDGED
        base = _base_command(args, label)
        bar = progress(self.count) if progress else None
        try:
            outcome = run_explore(backend, ExploreConfig(self.count, self.seed, self.dtypes), options, selector=selector,
                              repro=lambda s: shlex.join([*base, "--explore", "1", "--seed", str(s)]), progress=bar)
        finally:
            if bar is not None:
                bar.close()
        code = exit_code(outcome.report, err)
        saved_problem = None
        if self.save_to and outcome.findings:
            try:
                save_cases([f.case for f in outcome.findings], self.save_to)
                for f in outcome.findings:
                    f.saved_to = self.save_to
                    f.replay = shlex.join([*base, *option("--golden", self.save_to), "--goldens-only",
                                           *option("--filter", f.case.id)])
            except (OSError, ValueError) as exc:
                saved_problem = f"roperef check: error: --save-failures {self.save_to}: {exc}"
        seed_note = "" if self.seed_given else " (random; pass --seed to repeat)"
        out.write(f"explore: {self.count} case(s) drawn within the declared interface of {outcome.report.backend}, "
                  f"seed {self.seed}{seed_note}\n  stages {', '.join(iface.stages)}; pairings {', '.join(iface.pairings)}; "
                  f"dtypes {', '.join(iface.dtypes)}; scaling {', '.join(iface.scaling_types)}; "
                  f"features {', '.join(sorted(iface.features)) or 'none'}\n")
        if args.quiet:
            for r in outcome.report.results:
                if r.status in FAILING:
                    out.write(rep.failure_line(r) + "\n")
        else:
            rep.console(outcome.report, out)
        self._findings(outcome, out)
        summary = rep.summary_line(outcome.report)
        if code == ExitCode.NOTHING_JUDGED:
            summary = "NOTHING JUDGED" + summary[summary.index(":"):]
        out.write(f"explore seed {self.seed}: {summary}\n")
        if saved_problem:
            print(saved_problem, file=err)
            return outcome.report, outcome.info(), ExitCode.USAGE
        return outcome.report, outcome.info(), code

    @staticmethod
    def _findings(outcome: Any, out: TextIO) -> None:
        if outcome.declined:
            total = sum(outcome.declined.values())
            top = "; ".join(f"{n} x {why}" for why, n in outcome.declined.most_common(5))
            out.write(f"\nthe backend declined {total} draw(s) inside its declared capabilities (drawn again): {top}\n")
        for k, f in enumerate(outcome.findings, 1):
            d, r = f.draw, f.minimal
            budget = "" if f.calls < 200 else " (shrink budget spent)"
            out.write(f"\nminimal failing case {k}/{len(outcome.findings)} (case {f.index}, seed {f.seed}; "
                      f"{f.steps} shrink steps, {f.calls} backend calls{budget}):\n")
            out.write(f"  id        {r.id}\n  drawn as  {f.original.id}\n")
            out.write(f"  spec      {json.dumps(f.case.spec.to_dict(), separators=(',', ':'))}\n")
            if d.stage == "inv_freq":
                out.write(f"  input     seq_len={d.seq_len}\n")
            else:
                shape = list(d.tensor.shape) if d.tensor is not None else None
                tensor = f"{'x' if d.stage != 'backward' else 'grad'} {shape} {d.dtype}; " if shape else ""
                cu = f"; cu_seqlens {_short(d.cu_seqlens)}" if d.cu_seqlens is not None else ""
                out.write(f"  input     {d.stage}: {tensor}positions {_short(d.positions)}{cu}\n")
            out.write(f"  result    {r.status}: {r.message}\n")
            if r.diagnosis:
                out.write(f"  diagnosis {r.diagnosis.get('summary')}\n")
            out.write(f"  repro     {r.repro}\n")
            if f.replay:
                out.write(f"  replay    {f.replay}\n")


# ----------------------------------------------------------------------------- long context


@dataclass(frozen=True)
class LongContextMode:
    lengths: tuple[int, ...]
    chunk: int
    heads: int
    spec: Any
    seed: int
    dtypes: tuple[str, ...]
    filters: tuple[str, ...]

    def run(self, backend: Any, options: RunOptions, *, args: argparse.Namespace, label: str, selector: str | None,
            progress: Callable[[int], Any] | None = None, out: TextIO | None = None,
            err: TextIO | None = None) -> tuple[RunReport, dict[str, Any], ExitCode]:
        """Stream every row (length x stage x dtype, narrowed by ``--filter``) and print the report.
        Returns (report, case-source object for --json, exit code)."""
        out, err = out or sys.stdout, err or sys.stderr

        spec = self.spec or default_spec(getattr(backend.capabilities, "pairings", ("half",)))
        plan = LongContextPlan(self.lengths, spec, self.chunk, self.heads, self.dtypes or DEFAULT_DTYPES, seed=self.seed)
        pattern = ",".join(self.filters)
        wanted = {row_id(plan, *r) for r in rows(plan)}
        if pattern:
            wanted = {i for i in wanted if select([_Id(i)], pattern)}
            if not wanted:
                print(f"roperef check: nothing was judged: --filter {pattern} matches no long-context row (rows look "
                      f"like {row_id(plan, *next(rows(plan)))})", file=err)
                empty = RunReport(backend=str(getattr(backend, "name", label)), capabilities={}, profile={})
                return empty, {"directory": None, "set_hash": None, "source": "long-context"}, ExitCode.NOTHING_JUDGED
        base = _base_command(args, label)
        bar = progress(len(wanted)) if progress else None
        try:
            report = run_long_context(backend, plan, options.profile if not isinstance(options.profile, str) else None,
                                      diagnose=options.diagnose, select=lambda i: i in wanted, progress=bar)
        finally:
            if bar is not None:
                bar.close()
        for r in report.results:
            length = r.id.split("/")[-1].split("-")[0][1:]
            cmd = [*base, "--long-context", length, "--chunk", str(plan.chunk), "--long-heads", str(plan.heads),
                   "--seed", str(plan.seed), *option("--filter", r.id)]
            if args.long_spec:
                cmd += option("--long-spec", args.long_spec)
            r.repro = shlex.join(cmd)
        out.write(f"long context: {', '.join(str(t) for t in plan.lengths)} tokens x {plan.heads} heads, chunks of "
                  f"{plan.chunk} tokens, spec {json.dumps(spec.to_dict(), separators=(',', ':'))}, input seed {plan.seed}\n")
        if args.quiet:
            for r in report.results:
                if r.status in FAILING:
                    out.write(rep.failure_line(r) + "\n")
            out.write(rep.summary_line(report) + "\n")
        else:
            rep.console(report, out)
        info = {"directory": None, "set_hash": None, "source": "long-context", "selected": len(report.results),
                "long_context": {"lengths": list(plan.lengths), "chunk": plan.chunk, "heads": plan.heads,
                                 "dtypes": list(plan.dtypes), "stages": list(plan.stages), "seed": plan.seed,
                                 "spec": spec.to_dict()}}
        return report, info, exit_code(report, err)


@dataclass(frozen=True)
class _Id:
    id: str
