"""The README's main job on a fresh machine: a cold `roperef check` against the warm ones, in one run.

Issue 25 target: the first run (fresh clone, empty caches) within 3x the warm time and under
10 s on 2 cores without other load. What is timed, each a fresh process, wall clock:

- ``cold``: in a fresh copy of this checkout (the files a clone has: tracked plus untracked
  non-ignored files, so no ``__pycache__``, no Numba cache beside ``roperef/fast/``; an empty
  ``XDG_CACHE_HOME``, so no exposure cache either), with
  ``NUMBA_CACHE_DIR`` unset: Python compiles every module's bytecode and Numba compiles every
  kernel the run needs, exactly as on a newcomer's machine;
- ``warm``: the same command again in the same copy, ``--repeats`` times (median): bytecode and
  kernels load from their caches.

Each is reported as wall time and as CPU time (user + sys of the child process, which a loaded
machine inflates far less than the wall time).

With ``--venv`` the copy is also installed into a fresh virtual environment
(``python -m venv`` + ``pip install -e COPY``, timed apart as ``install_s``) and the command is
that environment's ``roperef`` script, as the README says: ``pip install -e . && roperef check``.
Without it, the command is ``python -m conformance.cli check`` with the copy first on ``PYTHONPATH``.

The ratio and both targets are printed as ``measured (target): met|NOT met``: a report, never an
assertion. The cold run's stderr lines ``roperef: compiling Numba kernel ...`` are counted (the
kernels it compiled); a warm run that compiles anything is reported. Record the load average
(printed) with any figure you quote: the machine is shared.

Run by hand: ``python benchmarks/bench_first_run.py [--repeats N] [--venv] [--json F]``;
``--quick`` (used by ``tests/test_bench_first_run_quick.py``) judges a few cases, one warm run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPILE_LINE = re.compile(r"^roperef: compiling Numba kernel (.+?) -- ", re.M)
QUICK_FILTER = "forward/default/half/float64/*"
TARGET_RATIO = 3.0
TARGET_COLD_S = 10.0


def fresh_copy(dest: Path) -> int:
    """Copy the files a clone of this checkout holds (``git ls-files``: tracked + untracked non-ignored) to ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    n = 0
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
            n += 1
    return n


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, list[str], str]:
    """Wall and CPU (user + sys) seconds of ``cmd``, the kernels it said it compiled, its last stdout line (exit 0 required)."""
    c0, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    return seconds, cpu, COMPILE_LINE.findall(done.stderr), lines[-1] if lines else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="warm runs (median)")
    ap.add_argument("--venv", action="store_true", help="install the copy into a fresh venv (pip install -e) and run its roperef")
    ap.add_argument("--quick", action="store_true", help=f"smoke mode: --filter '{QUICK_FILTER}', one warm run")
    ap.add_argument("--json", metavar="F", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    repeats = 1 if args.quick else max(1, args.repeats)
    check_args = ["check", "-q", *(["--filter", QUICK_FILTER] if args.quick else [])]
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    result: dict[str, object] = {"date": time.strftime("%Y-%m-%d %H:%M"), "load_avg_1m_before": round(os.getloadavg()[0], 2),
                                 "cpus": os.cpu_count(), "command": "roperef " + " ".join(check_args), "venv": args.venv}
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "roperef"
        result["files_copied"] = fresh_copy(copy)
        env["XDG_CACHE_HOME"] = str(Path(tmp) / "xdg-cache")  # an empty user cache too (the exposure cache)
        if args.venv:
            venv = Path(tmp) / "venv"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", str(copy)], check=True)
            result["install_s"] = round(time.perf_counter() - t0, 1)
            cmd = [str(venv / "bin" / "roperef"), *check_args]
        else:
            env["PYTHONPATH"] = str(copy)
            cmd = [sys.executable, "-m", "conformance.cli", *check_args]
        cold, cold_cpu, cold_kernels, summary = timed(cmd, copy, env)
        warm, warm_cpu, warm_kernels = [], [], []
        for _ in range(repeats):
            seconds, cpu, kernels, _ = timed(cmd, copy, env)
            warm.append(seconds)
            warm_cpu.append(cpu)
            warm_kernels += kernels
    result.update(
        cold_s=round(cold, 2), warm_s=[round(w, 2) for w in warm], warm_median_s=round(statistics.median(warm), 2),
        cold_cpu_s=round(cold_cpu, 2), warm_cpu_median_s=round(statistics.median(warm_cpu), 2),
        cold_over_warm_cpu=round(cold_cpu / statistics.median(warm_cpu), 2),
        cold_compiled=cold_kernels, warm_compiled=warm_kernels, summary=summary,
        load_avg_1m_after=round(os.getloadavg()[0], 2),
    )
    ratio = cold / statistics.median(warm)
    result["cold_over_warm"] = round(ratio, 2)
    result["target_ratio_met"] = ratio <= TARGET_RATIO
    result["target_cold_met"] = cold < TARGET_COLD_S
    for key, value in result.items():
        print(f"{key:>20}: {value}")
    print(f"cold/warm {ratio:.2f} (<= {TARGET_RATIO:g}): {'met' if ratio <= TARGET_RATIO else 'NOT met'}")
    print(f"cold {cold:.2f} s (< {TARGET_COLD_S:g} s on 2 idle cores): {'met' if cold < TARGET_COLD_S else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
