"""JIT cost of roperef.fast: cold compile, cached second process, and Numba's own floor.

Issue 3 target: with ``cache=True``, a second process that calls every kernel once
starts (and finishes) in < 2 s. Three fresh processes are timed in one run, each with the
same temporary ``NUMBA_CACHE_DIR``:

- ``cold``: the first process, compiling every kernel, serial and parallel (documented in docs/fast.md);
- ``cached``: the same calls again, loading every kernel from the cache (median of N);
- ``numba floor``: a process that imports numba and calls one trivial cached
  ``parallel=True`` kernel -- the least any Numba-parallel package can cost here.

The ratio ``cached / floor`` says how much roperef adds on top of Numba itself.
Run by hand: ``python benchmarks/bench_jit.py [--repeats N] [--json F]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CALL_EVERY_KERNEL = """
import numpy as np
from roperef import RopeSpec, fast
spec = RopeSpec(head_dim=16, rotary_dim=12, rotary_start=4)
x = np.random.default_rng(0).standard_normal((2, 3, 2, 16))
pos = np.arange(6).reshape(2, 3)
for serial_max in (fast.SERIAL_MAX_ELEMENTS, -1):  # the serial kernels of small calls, then the parallel ones
    fast.SERIAL_MAX_ELEMENTS = serial_max
    cos, sin = fast.cos_sin(spec, pos)
    fast.apply(x, cos, sin, spec)
    for xd in (np.float64, np.float32):
        for od in (np.float64, np.float32):
            fast.forward(x.astype(xd), pos, spec, out_dtype=od)
    fast.backward(x, pos, spec)
"""

NUMBA_FLOOR = """
import numpy as np
from numba import njit, prange

@njit(parallel=True, cache=True)
def total(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i]
    return s

total(np.ones(8))
"""


def _time(code: str, cache_dir: str, script_dir: str) -> float:
    path = Path(script_dir) / f"bench_{abs(hash(code))}.py"  # a file: Numba caches only functions in files
    path.write_text(code)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(path)], env=env, cwd=ROOT, check=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed cached processes (median)")
    ap.add_argument("--json", metavar="F", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as scripts:
        cold = _time(CALL_EVERY_KERNEL, cache, scripts)
        _time(NUMBA_FLOOR, cache, scripts)  # fills the floor kernel's cache
        cached, floor = [], []
        for _ in range(args.repeats):  # interleaved, so load changes hit both alike
            cached.append(_time(CALL_EVERY_KERNEL, cache, scripts))
            floor.append(_time(NUMBA_FLOOR, cache, scripts))
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "cold_compile_s": round(cold, 2),
        "cached_process_s": round(statistics.median(cached), 2),
        "numba_floor_s": round(statistics.median(floor), 2),
    }
    result["cached_over_floor"] = round(result["cached_process_s"] / result["numba_floor_s"], 2)
    result["target_cached_lt_2s"] = result["cached_process_s"] < 2.0
    for key, value in result.items():
        print(f"{key:>20}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
