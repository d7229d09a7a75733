"""The README's main job (`roperef check`, the built-in Numba backend on the checked-in goldens
plus the generated cases) exits OK and prints nothing but its report: no warnings on stderr
(a newcomer's first run must not open with NumPy RuntimeWarnings from the bug catalogue)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_main_job_is_ok_and_warning_free():
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "check"], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Warning" not in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("OK: ") and "PASS" in last, last
