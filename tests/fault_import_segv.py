"""A backend module that segfaults while it is imported (tests/test_faults.py, --isolate)."""

import os
import signal

os.kill(os.getpid(), signal.SIGSEGV)

Backend = None
