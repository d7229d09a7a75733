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


def pytest_collection_modifyitems(session, config, items):
    """Run the OpenVINO adapter's tests last. Measured on 2026-12-07: once OpenVINO has compiled models in
    the test process, a later in-process SIGINT test (tests/conformance/calls/test_faults.py, the Ctrl-C
    that reaches supports()'s waiting thread) ends the whole pytest process with SIGSEGV; alone, each
    passes. The cause is not found yet (an open finding of issue 33, docs/backends-openvino.md)."""
    items.sort(key=lambda item: "test_backend_openvino" in str(item.path))
