"""``roperef spec CONFIG.json``: the RopeSpec(s) a HF config resolves to, per layer, or checked against transformers.

    roperef spec CONFIG.json                      # RopeSpec.to_dict() (or {name: ...}) as JSON on stdout
    roperef spec CONFIG.json --layer-type T       # one of them (a spec name or a layer type with RoPE)
    roperef spec CONFIG.json --layers             # per decoder layer: its type and the spec it applies, or "no RoPE"
    roperef spec CONFIG.json --set KEY=VALUE ...  # supply / replace config values (JSON values; pairing=, rope=none)
    roperef spec CONFIG.json --against transformers   # AGREE/DIFFER table against transformers' own modules

Every value roperef had to assume (model type it does not know) and every note (a key transformers
ignores) is printed on stderr, one line each. Exit codes (:class:`conformance.exit_codes.ExitCode`):
0 printed / all AGREE; 1 an item DIFFERs; 2 bad input (one line on stderr); 3 ``--against`` could not
judge anything (transformers does not ship the model type); 5 the model has no RoPE (BERT, GPT-2, ...):
stdout says why as well (``{"rope": null, "model_type": ..., "why": ...}``, or a ``no RoPE: ...`` line
after ``--layers``), so the reason is not lost with stderr.

Errors (missing file, bad JSON, JSON past the limits of :mod:`roperef.json_input`, a config
rule broken, a number out of range) are one line on stderr naming the file, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from roperef.hf import load_config, model_rope, spec_from_config

from ..exit_codes import ExitCode
from ..hf.crosscheck import cross_check, render

__all__ = ["add_parser", "run", "parse_sets"]

_INPUT_ERRORS = (ValueError, TypeError, FileNotFoundError, PermissionError, IsADirectoryError, RecursionError,
                 OverflowError, OSError, MemoryError)


def add_parser(subparsers: Any) -> None:
    """Add the ``spec`` subcommand to an argparse subparsers action."""
    p = subparsers.add_parser(
        "spec",
        help="print the RopeSpec(s) resolved from a HF config.json",
        description="Resolve a Hugging Face config.json into RopeSpec(s) and print them as JSON, per layer "
                    "(--layers), or checked against transformers (--against transformers).",
    )
    p.add_argument("config", metavar="CONFIG.json", help="path to a HF config.json")
    p.add_argument("--layer-type", dest="layer_type", default=None,
                   help="one spec: a name (text, vision, full_attention, ...) or a layer type that applies RoPE")
    p.add_argument("--layers", action="store_true", help="print each decoder layer's type and RoPE (or none)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value (dotted key, JSON value), or pairing=half|adjacent|"
                        "adjacent_in_half_out, or rope=none; repeatable")
    p.add_argument("--against", choices=["transformers"], default=None,
                   help="compare with transformers' own rotary modules built from the config (no download)")


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``["rope_theta=1e6", "pairing=adjacent"]`` -> ``{"rope_theta": 1000000.0, "pairing": "adjacent"}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set={item!r}: expected KEY=VALUE (e.g. rope_theta=1e6)")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text  # a bare word: a string (rope_type=yarn, pairing=adjacent)
        out[key.strip()] = value
    return out


def _say(lines: Any, prefix: str) -> None:
    for line in lines:
        print(f"roperef spec: {prefix}{line}", file=sys.stderr)


def _layers_table(mr: Any) -> str:
    def describe(spec: Any) -> str:
        sc = spec.scaling.type
        return (f"{spec.pairing}, {spec.rotary_dim} of {spec.head_dim} channels, theta {spec.theta:g}, {sc}"
                + (f", mrope {list(spec.mrope_section)} {spec.mrope_layout}" if spec.mrope_section else ""))
    lines = []
    if not mr.layers:
        lines.append("the config gives no layer count or list; every decoder layer applies:")
        for name, spec in mr.specs.items():
            if name != "vision":
                lines.append(f"  {name}: {describe(spec)}")
    else:
        width = max(len(t) for t in mr.layer_types) if mr.layer_types else 4
        lines.append(f"{'layer':>5}  {'type'.ljust(width)}  RoPE")
        for i, (kind, name) in enumerate(zip(mr.layer_types, mr.layers)):
            lines.append(f"{i:>5}  {kind.ljust(width)}  {'no RoPE' if name is None else name}")
        for name, spec in mr.specs.items():
            if name != "vision":
                lines.append(f"{name}: {describe(spec)}")
    if "vision" in mr.specs:
        lines.append(f"vision: {mr.specs['vision'].vision} 2-D RoPE, head_dim {mr.specs['vision'].head_dim}, "
                     f"theta {mr.specs['vision'].theta:g}")
    return "\n".join(lines)


def _against(args: argparse.Namespace, config: dict[str, Any], overrides: dict[str, Any]) -> int:
    try:
        import torch  # noqa: F401  # imported only to check that it is installed
        import transformers  # noqa: F401  # imported only to check that it is installed
    except ImportError as exc:
        print(f"roperef spec: error: --against transformers needs torch and transformers installed ({exc})",
              file=sys.stderr)
        return ExitCode.USAGE

    check = cross_check(config, overrides=overrides)
    print(render(check, args.config))
    if check.verdict == "DIFFER":
        return ExitCode.FAILED
    if check.verdict == "NOT_CHECKED":
        return ExitCode.NOTHING_JUDGED
    return ExitCode.OK


def run(args: argparse.Namespace) -> int:
    """Print the resolved spec(s) / layers / cross-check; see the module docstring for the exit codes."""
    try:
        overrides = parse_sets(list(getattr(args, "sets", None) or []))
        config = load_config(args.config)
        mr = model_rope(config, overrides=overrides)
    except _INPUT_ERRORS as exc:
        print(f"roperef spec: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    _say(mr.assumptions, "")
    _say(mr.notes, "note: ")
    if getattr(args, "against", None):
        return _against(args, config, overrides)
    if getattr(args, "layers", False):
        print(_layers_table(mr))
    if not mr.has_rope:  # stdout says why too (a script that keeps only stdout still learns it)
        if getattr(args, "layers", False):
            print(f"no RoPE: {mr.no_rope}")
        else:
            print(json.dumps({"rope": None, "model_type": mr.model_type, "why": mr.no_rope}, indent=2))
        print(f"roperef spec: {args.config}: no RoPE: {mr.no_rope}", file=sys.stderr)
        return ExitCode.NO_ROPE
    if getattr(args, "layers", False):
        return ExitCode.OK
    try:
        result = spec_from_config(config, layer_type=getattr(args, "layer_type", None), overrides=overrides)
    except _INPUT_ERRORS as exc:
        print(f"roperef spec: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    out = result.to_dict() if not isinstance(result, dict) else {name: s.to_dict() for name, s in result.items()}
    print(json.dumps(out, indent=2, allow_nan=False))
    return ExitCode.OK
