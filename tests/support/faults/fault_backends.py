"""Fault-injection backends for tests/conformance/calls/test_faults.py and scripts/probe_faults.py.

Each is a correct NumPy backend except for one way of misbehaving inside a stage (or in
``supports``). Importable by ``module:attr`` from a worker process (``--isolate``).
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

from conformance.backends.numpy_backend import NumpyBackend


class ExitsZero(NumpyBackend):
    """``sys.exit(0)`` inside forward: once a false pass (exit 0, no report)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        sys.exit(0)


class ExitsThree(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        raise SystemExit(3)


class RaisesKeyboardInterrupt(NumpyBackend):
    """A backend raising KeyboardInterrupt itself (not the user's Ctrl-C)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        raise KeyboardInterrupt


class SupportsExits(NumpyBackend):
    def supports(self, case):
        sys.exit(0)


class Sleeps(NumpyBackend):
    """Sleeps for an hour in forward (releases the GIL)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        time.sleep(3600)
        return super().forward(x, positions, spec, cu_seqlens)


class HoldsGIL(NumpyBackend):
    """One C call that never returns to the interpreter: holds the GIL (only a process can be stopped)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        sum(range(10**15))
        return super().forward(x, positions, spec, cu_seqlens)


class OsExit(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        os._exit(7)


class Aborts(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        os.kill(os.getpid(), signal.SIGABRT)


class ReturnsNone(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        return None


class ReturnsString(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        return "y"


class ReturnsObjects(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        return np.array([object()] * 3)


class ReturnsFloat128(NumpyBackend):
    """Correct output in long double (float128 on x86-64): at least as precise as any case dtype."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        return super().forward(x, positions, spec, cu_seqlens).astype(np.longdouble)


class Unsupported(NumpyBackend):
    def supports(self, case):
        return "this engine only runs on a quantum computer"


class SleepsMarked(NumpyBackend):
    """Touches the file named by ROPEREF_TEST_MARKER when forward starts, then sleeps for an hour."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        marker = os.environ.get("ROPEREF_TEST_MARKER")
        if marker:
            open(marker, "a").close()
        time.sleep(3600)
        return super().forward(x, positions, spec, cu_seqlens)
