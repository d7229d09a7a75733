"""A backend module that segfaults while it is imported (tests/conformance/calls/test_faults.py, --isolate)."""

import os
import signal

os.kill(os.getpid(), signal.SIGSEGV)

Backend = None
