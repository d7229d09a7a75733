"""JIT behaviour of ``roperef.fast``: nothing compiles at import; a small call compiles only the serial
kernels; with ``cache=True`` a second process compiles nothing.

Self-contained: a temporary ``NUMBA_CACHE_DIR``. A warm-up process calls every kernel
(the serial ``tables_serial`` and ``rotate_serial`` of small calls; with
``SERIAL_MAX_ELEMENTS = -1``, ``tables_kernel``, ``rope_kernel`` for each input/output dtype
pair, ``apply_kernel``) and so compiles and caches them; a fresh second process doing the same
calls must load every kernel from the cache (cache hits, no compilation). The first run of
``roperef check`` (small cases only) must compile the two serial kernels and nothing else, one
signature per dtype of ``x``, whether the inputs are writeable or read-only. How long those
processes take is measured by ``benchmarks/bench_jit.py`` and ``benchmarks/bench_first_run.py``
(speed targets live in benchmarks, not in unit tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CALL_EVERY_KERNEL = """
import numpy as np
from roperef import RopeSpec, fast
spec = RopeSpec(head_dim=16, rotary_dim=12, rotary_start=4)
x = np.random.default_rng(0).standard_normal((2, 3, 2, 16))
pos = np.arange(6).reshape(2, 3)
for serial_max in (fast.SERIAL_MAX_ELEMENTS, -1):           # the serial kernels, then the parallel ones
    fast.SERIAL_MAX_ELEMENTS = serial_max
    cos, sin = fast.cos_sin(spec, pos)                      # tables_serial / tables_kernel
    fast.apply(x, cos, sin, spec)                           # rotate_serial / apply_kernel, float64 -> float64
    for xd in (np.float64, np.float32):                     # rotate_serial / rope_kernel, every dtype pair
        for od in (np.float64, np.float32):
            fast.forward(x.astype(xd), pos, spec, out_dtype=od)
    fast.backward(x, pos, spec)
print("ok")
"""

EVERY_KERNEL = """
from roperef.fast import kernels as fast_kernels, serial as serial_kernels
kernels = (fast_kernels.tables_kernel, fast_kernels.rope_kernel, fast_kernels.apply_kernel,
           serial_kernels.tables_serial, serial_kernels.rotate_serial)
"""

CHECK_ALL_CACHE_HITS = EVERY_KERNEL + """
for kernel in kernels:
    stats = kernel.stats
    assert sum(stats.cache_misses.values()) == 0, (kernel.__name__, "compiled instead of loading", stats.cache_misses)
    assert sum(stats.cache_hits.values()) >= 1, (kernel.__name__, "not loaded from the cache", stats)
print("ok")
"""

CHECK_IMPORT_COMPILES_NOTHING = """
import os
from roperef import fast
""" + EVERY_KERNEL + """
assert all(k.signatures == [] for k in kernels), [k.signatures for k in kernels]
files = [f for _, _, fs in os.walk(os.environ["NUMBA_CACHE_DIR"]) for f in fs]
assert files == [], files
print("ok")
"""

SMALL_CALLS_COMPILE_SERIAL_ONLY = """
import numpy as np
from roperef import RopeSpec, fast
spec = RopeSpec(head_dim=64, pairing="adjacent")
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 16, 2, 64))                     # a golden case's shape
pos = np.arange(32).reshape(2, 16)
frozen = x.copy(); frozen.flags.writeable = False           # read-only input: the same signature
for arr in (x, frozen, x.astype(np.float32), frozen.astype(np.float32)):
    fast.forward(arr, pos, spec)
    fast.backward(arr, pos, spec)
    fast.apply(arr, *fast.cos_sin(spec, pos), spec)
""" + EVERY_KERNEL + """
counts = {k.__name__: len(k.signatures) for k in kernels}
assert counts == {"tables_kernel": 0, "rope_kernel": 0, "apply_kernel": 0, "tables_serial": 1, "rotate_serial": 2}, counts
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


def test_small_calls_compile_only_the_serial_kernels(tmp_path):
    """What a machine's first ``roperef check`` compiles: two serial kernels, one signature per dtype of ``x``."""
    _run(SMALL_CALLS_COMPILE_SERIAL_ONLY, tmp_path)
