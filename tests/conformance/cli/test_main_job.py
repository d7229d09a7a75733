"""The README's main job (`roperef check`, the built-in Numba backend on the checked-in goldens
plus the generated cases) exits OK and prints nothing but its report: no warnings on stderr
(a newcomer's first run must not open with NumPy RuntimeWarnings from the bug catalogue).

It runs as a machine's first run (an empty Numba cache): stderr names each kernel compiled, and
those are only the two serial kernels small cases need (``roperef.fast.serial``), one signature
per input dtype; the parallel kernels are left for calls that need them. (How long a first run
takes next to a later one is a benchmark: ``benchmarks/bench_first_run.py``.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conformance.cli.compile_notice import PREFIX

ROOT = Path(__file__).resolve().parents[3]


def test_main_job_is_ok_and_warning_free(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))  # a first run: nothing compiled yet
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "check"], capture_output=True, text=True,
                          cwd=ROOT, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Warning" not in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("OK: ") and "PASS" in last, last
    compiled = re.findall(rf"^{PREFIX} (\S+ \(\S+ input\)) -- .* \d+\.\d s$", done.stderr, flags=re.M)
    assert sorted(compiled) == ["rotate_serial (float32 input)", "rotate_serial (float64 input)", "tables_serial (int64 input)"], done.stderr
