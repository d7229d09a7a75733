"""JIT behaviour of ``roperef.fast``: nothing compiles at import; with ``cache=True`` a second process compiles nothing.

Self-contained: a temporary ``NUMBA_CACHE_DIR``. A warm-up process calls every kernel
(``tables_kernel``, ``rope_kernel`` for each input/output dtype pair, ``apply_kernel``)
and so compiles and caches them; a fresh second process doing the same calls must load every kernel from the cache
(cache hits, no compilation). How long those processes take is measured by
``benchmarks/bench_jit.py`` (speed targets live in benchmarks, not in unit tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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

CHECK_ALL_CACHE_HITS = """
from roperef.fast import kernels as fast_kernels
for kernel in (fast_kernels.tables_kernel, fast_kernels.rope_kernel, fast_kernels.apply_kernel):
    stats = kernel.stats
    assert sum(stats.cache_misses.values()) == 0, (kernel.__name__, "compiled instead of loading", stats.cache_misses)
    assert sum(stats.cache_hits.values()) >= 1, (kernel.__name__, "not loaded from the cache", stats)
print("ok")
"""

CHECK_IMPORT_COMPILES_NOTHING = """
import os
from roperef import fast
from roperef.fast import kernels as fast_kernels
kernels = [fast_kernels.tables_kernel, fast_kernels.rope_kernel, fast_kernels.apply_kernel]
assert all(k.signatures == [] for k in kernels), [k.signatures for k in kernels]
files = [f for _, _, fs in os.walk(os.environ["NUMBA_CACHE_DIR"]) for f in fs]
assert files == [], files
print("ok")
"""


def _run(code: str, cache_dir: Path) -> None:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_import_compiles_nothing(tmp_path):
    _run(CHECK_IMPORT_COMPILES_NOTHING, tmp_path)


def test_second_process_loads_every_kernel_from_the_cache(tmp_path):
    """cache=True works: after a warm-up process, a fresh process compiles nothing (all cache hits).

    The time this takes is a benchmark figure (benchmarks/bench_jit.py), not a unit-test assertion.
    """
    _run(CALL_EVERY_KERNEL, tmp_path)  # compiles and fills the cache
    assert any(f.endswith(".nbi") for _, _, fs in os.walk(tmp_path) for f in fs), "cache=True wrote no index"
    _run(CALL_EVERY_KERNEL + CHECK_ALL_CACHE_HITS, tmp_path)
