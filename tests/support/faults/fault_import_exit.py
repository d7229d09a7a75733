"""A backend module that calls sys.exit(0) while it is imported (tests/conformance/calls/test_faults.py)."""

import sys

sys.exit(0)

Backend = None
