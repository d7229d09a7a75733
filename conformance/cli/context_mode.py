"""``roperef check --backend NAME --context [--long-spec SPEC] [--seed S]``: the context sweep (docs/context.md).

Judges every declared stage x dtype of the backend at positions sampled in every octave up to
``2^31 - 1`` (or its ``max_position``) and prints the certified position per row
(:mod:`conformance.context.sweep`); the JSON report carries the ``context`` section.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from roperef.errors import bad
from roperef.spec import RopeSpec

from ..context.sweep import ContextPlan, run_context
from ..exit_codes import ExitCode
from ..judge.run_verdict import exit_code_for
from ..judge.runner import RunOptions, RunReport
from ..report import formats as rep
from ..report.context_text import console_context
from ..vocabulary import DTYPES

__all__ = ["ContextMode", "parse_context", "DEFAULT_CONTEXT_SPEC"]

#: the sweep's spec without --long-spec: Llama-2's (D=128, theta=10000, no scaling)
DEFAULT_CONTEXT_SPEC = RopeSpec(head_dim=128, theta=10000.0)


def parse_context(args: argparse.Namespace, load_spec: Callable[[str], Any], integer: Callable[..., int]) -> ContextMode:
    """The validated ``--context`` mode (ValueError naming the flag on bad input)."""
    for flag, on in (("--explore", args.explore is not None), ("--long-context", args.long_context is not None),
                     ("--chunk", args.chunk is not None), ("--long-heads", args.long_heads is not None),
                     ("--save-failures", args.save_failures is not None), ("--golden", bool(args.golden)),
                     ("--outputs", bool(args.outputs)), ("--isolate", bool(args.isolate))):
        if on:
            bad(flag, "given", "cannot be combined with --context")
    seed = 0 if args.seed is None else integer("--seed", args.seed, 0, 2**63 - 1)
    spec = load_spec(args.long_spec) if args.long_spec is not None else DEFAULT_CONTEXT_SPEC
    dtypes = tuple(args.dtype) or DTYPES
    ContextPlan(spec, seed=seed, dtypes=dtypes)  # validates the spec
    return ContextMode(spec, seed, dtypes, args.long_spec is None)


@dataclass(frozen=True)
class ContextMode:
    spec: RopeSpec
    seed: int
    dtypes: tuple[str, ...]
    default_spec: bool = True  # no --long-spec: the pairing follows the backend's declaration

    def run(self, backend: Any, options: RunOptions, *, args: argparse.Namespace, label: str, selector: str | None,
            progress: Callable[[int], Any] | None = None, out: TextIO | None = None,
            err: TextIO | None = None) -> tuple[RunReport, dict[str, Any], ExitCode]:
        """Sweep, print the report; returns (report, case-source object for --json, exit code)."""
        out, err = out or sys.stdout, err or sys.stderr
        plan = ContextPlan(self.spec, seed=self.seed, dtypes=self.dtypes)
        profile = options.profile if not isinstance(options.profile, str) else None
        report = run_context(backend, plan, profile, diagnose=options.diagnose, timeout=options.timeout,
                             adapt_pairing=self.default_spec)
        spec = report.context["spec"] if report.context else self.spec.to_dict()
        out.write(f"context sweep of {report.backend}: spec {json.dumps(spec, separators=(',', ':'))}\n")
        if args.quiet:
            console_context(report, out)
            out.write(rep.summary_line(report) + "\n")
        else:
            rep.console(report, out)
        info = {"directory": None, "set_hash": None, "source": "context", "selected": len(report.results)}
        code = exit_code_for(report)
        if code == ExitCode.NOTHING_JUDGED:
            print(f"roperef check: nothing was judged: the context sweep judged no declared stage x dtype of {label}", file=err)
        return report, info, code
