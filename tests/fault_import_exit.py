"""A backend module that calls sys.exit(0) while it is imported (tests/test_faults.py)."""

import sys

sys.exit(0)

Backend = None
