"""Test configuration: the helper folders on sys.path, and hypothesis profiles (``ci`` by default;
``HYPOTHESIS_PROFILE=thorough`` for more).

The test modules live in folders that mirror the packages they test (tests/roperef/, tests/conformance/<layer>/,
...); their helpers (planted-bug engines, hostile and fault backends, strategies, harnesses) live in
tests/support/<concern>/ and are imported by their module name, so each support folder is put on sys.path here,
before any test module is collected (subprocesses get the same folders through PYTHONPATH).

``ci`` keeps example counts modest (the CI machine is small) and turns off the
per-example deadline (the first NumPy call in a process is slow).
"""

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

SUPPORT = Path(__file__).resolve().parent / "support"
for _folder in sorted(p for p in SUPPORT.iterdir() if p.is_dir() and not p.name.startswith("__")):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

settings.register_profile(
    "ci", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
