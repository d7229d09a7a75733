"""JIT cost of ``roperef.fast``: nothing compiles at import; with ``cache=True`` a second process is fast.

Self-contained: a temporary ``NUMBA_CACHE_DIR``. A warm-up process calls every kernel
(``tables_kernel``, ``rope_kernel`` for each input/output dtype pair, ``apply_kernel``)
and so compiles and caches them; its wall time is the cold first-run compile time
(printed, and recorded as a junit property). A fresh second process doing the same
calls must start and finish in under 2 s. The machine is shared, so the second process
gets two tries and the faster counts; when the 1-minute load average exceeds the core
count the 2 s budget cannot be judged and the test is skipped with the measured times
in the reason (never silently).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CALL_EVERY_KERNEL = """
import numpy as np
from roperef import RopeSpec, fast
spec = RopeSpec(head_dim=16, rotary_dim=12, rotary_start=4)
x = np.random.default_rng(0).standard_normal((2, 3, 2, 16))
pos = np.arange(6).reshape(2, 3)
cos, sin = fast.cos_sin(spec, pos)                      # tables_kernel
fast.apply(x, cos, sin, spec)                           # apply_kernel, float64 -> float64
for xd in (np.float64, np.float32):                     # rope_kernel, every dtype pair
    for od in (np.float64, np.float32):
        fast.forward(x.astype(xd), pos, spec, out_dtype=od)
fast.backward(x, pos, spec)
print("ok")
"""

CHECK_IMPORT_COMPILES_NOTHING = """
import os
from roperef import fast, fast_kernels
kernels = [fast_kernels.tables_kernel, fast_kernels.rope_kernel, fast_kernels.apply_kernel]
assert all(k.signatures == [] for k in kernels), [k.signatures for k in kernels]
files = [f for _, _, fs in os.walk(os.environ["NUMBA_CACHE_DIR"]) for f in fs]
assert files == [], files
print("ok")
"""


def _run(code: str, cache_dir: Path) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
    return wall


def test_import_compiles_nothing(tmp_path):
    _run(CHECK_IMPORT_COMPILES_NOTHING, tmp_path)


def test_second_process_loads_cached_kernels_fast(tmp_path, record_property):
    cold = _run(CALL_EVERY_KERNEL, tmp_path)  # compiles and fills the cache
    assert any(f.endswith(".nbi") for _, _, fs in os.walk(tmp_path) for f in fs), "cache=True wrote no index"
    warm = min(_run(CALL_EVERY_KERNEL, tmp_path) for _ in range(2))
    record_property("cold_compile_s", round(cold, 2))
    record_property("cached_process_s", round(warm, 2))
    print(f"\nroperef.fast JIT: cold first run {cold:.1f} s (compile of every kernel), cached second process {warm:.2f} s")
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if warm >= 2.0 and load > cores:
        pytest.skip(f"machine overloaded (load {load:.1f} on {cores} cores): cached process {warm:.2f} s, cold {cold:.1f} s")
    assert warm < 2.0, f"a process that loads the cached kernels took {warm:.2f} s (cold: {cold:.1f} s)"
