#!/usr/bin/env python3
"""Judge every built-in backend on the smoke tier, one ``roperef check`` process each.

Usage::

    python scripts/check_backends.py REPORT_DIR [--backends a,b,...] [--jobs N]

For each backend in ``conformance.backends.names.BUILTIN_BACKENDS`` it runs
``roperef check --backend NAME [--xfail conformance/backends/xfail/NAME.txt]
--json REPORT_DIR/NAME.json`` and prints one line: exit code, time, counts.

Backends in :data:`EXTRA_CASES` are also judged on those case directories (``roperef check --cases
DIR``, same xfail file; reports in ``REPORT_DIR/cases/``, which make_backends_doc.py does not read).

Exit 1 when any check exits non-zero (a FAIL or ERROR not in the backend's xfail file),
or when a CPU backend judged no case at all (``roperef check`` exit 3: every case NOT_SUPPORTED
usually means its library failed to install or import). GPU-only backends (:data:`GPU_ONLY`)
may be all NOT_SUPPORTED (exit 3) on a machine without CUDA. Exit 2 on usage errors.

``--jobs N`` (default: the number of CPU cores, at most 4) runs that many ``roperef check``
processes at once (each backend is one process and most of its time is one core's work); the
lines are printed in the backends' order, each when its run is done.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPU_ONLY = frozenset({"flash-attn", "flash-attn-triton", "vllm", "transformer-engine"})
#: Case directories (docs/user-cases.md) judged besides the golden smoke tier, per backend.
EXTRA_CASES: dict[str, tuple[str, ...]] = {
    name: ("examples/onnx_rotary_cases", "examples/onnx_discrepancies")
    for name in ("onnxruntime", "onnxruntime-contrib", "onnx-reference")
}

#: Backends judged on a narrower selection than the plain run, with why: the smoke tier must fit CI's time.
#: inductor compiles a kernel per family and input signature (16-25 s the first, ~5 s each after): its plain
#: run of 596 cases takes over 25 minutes on 2 cores, so CI judges its golden float32 cases (every family
#: it supports, one compile each); the plain run stays what a user gets (docs/backends-torch.md, inductor).
NARROWED: dict[str, tuple[str, ...]] = {"inductor": ("--goldens-only", "--dtype", "float32")}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from conformance.backends.names import BUILTIN_BACKENDS
    from conformance.exit_codes import ExitCode
    from conformance.judge.xfail import xfail_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report_dir", type=Path)
    ap.add_argument("--backends", help="comma-separated names (default: every built-in backend)")
    ap.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1),
                    help="roperef check processes at once (default: the CPU cores, at most 4)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        print(f"check_backends: --jobs={args.jobs}: must be at least 1", file=sys.stderr)
        return 2
    names = args.backends.split(",") if args.backends else list(BUILTIN_BACKENDS)
    unknown = [n for n in names if n not in BUILTIN_BACKENDS]
    if unknown:
        print(f"check_backends: unknown backend(s) {unknown}; known: {', '.join(BUILTIN_BACKENDS)}", file=sys.stderr)
        return 2
    args.report_dir.mkdir(parents=True, exist_ok=True)
    runs: list[tuple[str, Path, list[str], str, Path | None]] = []
    for name in names:
        listed = xfail_path(name)
        xfail = listed if listed.is_file() else None
        narrowed = NARROWED.get(name, ())
        label = f"{name} {' '.join(narrowed)}" if narrowed else name
        runs.append((name, args.report_dir / f"{name}.json", list(narrowed), label, xfail))
        runs += [(name, args.report_dir / "cases" / f"{name}--{Path(d).name}.json", ["--cases", d], f"{name} --cases {d}", xfail)
                 for d in EXTRA_CASES.get(name, ())]

    def run(item: tuple[str, Path, list[str], str, Path | None]) -> tuple[subprocess.CompletedProcess[str], float]:
        name, report, extra, _label, xfail = item
        report.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "conformance.cli", "check", "--backend", name, *extra, "--json", str(report)]
        if xfail:
            cmd += ["--xfail", str(xfail)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        return done, time.perf_counter() - t0

    failed: list[str] = []
    t_all = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for (name, report, _extra, label, _xfail), (done, seconds) in zip(runs, pool.map(run, runs)):
            counts: dict[str, int] = {}
            if report.is_file():
                counts = json.loads(report.read_text())["summary"]["counts"]
            judged = sum(v for k, v in counts.items() if k != "NOT_SUPPORTED")
            line = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
            print(f"{label:<24} exit {done.returncode}  {seconds:6.1f} s  {line}", flush=True)
            nothing_judged = done.returncode == ExitCode.NOTHING_JUDGED
            if nothing_judged and name in GPU_ONLY:
                continue
            if done.returncode != 0 and not nothing_judged:
                failed.append(label)
                print(done.stdout[-4000:] + done.stderr[-4000:], file=sys.stderr)
            elif judged == 0:
                failed.append(label)
                print(f"  {label}: no case judged (library missing or broken?)\n{done.stdout[-2000:]}", file=sys.stderr)
    print(f"check_backends: {len(runs)} runs in {time.perf_counter() - t_all:.0f} s with --jobs {args.jobs}", flush=True)
    if failed:
        print(f"backend checks failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
