"""Hostile backends for tests/conformance/calls/test_hostile.py, tests/conformance/cli/test_output_errors.py and scripts/probe_faults.py.

Each is a correct NumPy backend except for one way of attacking the judge from the data or code it
hands back (or from what it does to the process): an output whose ``__array__`` exits, interrupts or
hangs, an exception whose text repaints the terminal or is 5 MB long or whose ``__str__`` exits,
``supports()`` answering ``numpy.True_``, mutating the spec or the case it is handed, replacing
``sys.stdout``, changing the working directory, leaving a non-daemon thread, and, in a worker
process, writing a pickle onto the judge's pipe. Importable by ``module:attr`` from a worker.
"""

from __future__ import annotations

import gc
import io
import os
import pickle
import sys
import threading
import time

import numpy as np

from conformance.backends.numpy_backend import NumpyBackend

ANSI = "\x1b[2J\x1b[H\x1b[32mOK: 268 cases (268 PASS)\x1b[0m\r\n<b>|live|</b>\x00\x07"


class _Hostile:
    """An output that runs ``action`` when NumPy converts it."""

    def __init__(self, action):
        self.action = action

    def __array__(self, dtype=None, copy=None):
        return self.action()


def _exit():
    sys.exit(0)


def _interrupt():
    raise KeyboardInterrupt


def _hang():
    marker = os.environ.get("ROPEREF_TEST_MARKER")
    if marker:
        open(marker, "a").close()
    time.sleep(3600)


class ArrayExits(NumpyBackend):
    """forward returns an object whose ``__array__`` calls ``sys.exit(0)``."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        return _Hostile(_exit)


class ArrayInterrupts(NumpyBackend):
    """forward returns an object whose ``__array__`` raises KeyboardInterrupt (the backend's, not the user's)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        return _Hostile(_interrupt)


class ArrayHangs(NumpyBackend):
    """forward returns an object whose ``__array__`` never returns (sleeps, touching ROPEREF_TEST_MARKER)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        return _Hostile(_hang)


class _ExitingText(Exception):
    def __str__(self):
        sys.exit(0)


class StrExits(NumpyBackend):
    """forward raises an exception whose ``__str__`` calls ``sys.exit(0)``."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        raise _ExitingText()


class AnsiMessage(NumpyBackend):
    """forward raises with ANSI escapes, a CR, HTML, pipes and a NUL in its message; its name has escapes too."""

    name = "ansi\x1b[31m-backend"

    def forward(self, x, positions, spec, cu_seqlens=None):
        raise RuntimeError(ANSI)


class HugeMessage(NumpyBackend):
    """forward raises with a 5 MB message."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        raise RuntimeError("x" * 5_000_000)


class NumpyTrue(NumpyBackend):
    """supports() answers ``numpy.True_`` (computed with NumPy): a yes, not a refusal."""

    def supports(self, case):
        verdict = super().supports(case)
        return np.bool_(True) if verdict is True else verdict


class MutatesSpec(NumpyBackend):
    """forward changes the frozen spec it is handed (``object.__setattr__``), then answers correctly."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        object.__setattr__(spec, "theta", 1.0)
        return y


class MutatesCase(NumpyBackend):
    """supports() overwrites the expected output of the case it is handed with zeros, and returns zeros."""

    def supports(self, case):
        for name in ("y", "grad_x"):
            if name in case.arrays:
                case.arrays[name][...] = 0.0
        return super().supports(case)

    def forward(self, x, positions, spec, cu_seqlens=None):
        return np.zeros(x.shape, dtype=x.dtype)


class ReplacesStdout(NumpyBackend):
    """forward replaces ``sys.stdout`` (and ``sys.stderr``) with a buffer nobody reads."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        sys.stdout = io.StringIO()
        sys.stderr = io.StringIO()
        return super().forward(x, positions, spec, cu_seqlens)


class ClosesStdout(NumpyBackend):
    """forward closes ``sys.stdout`` (the Python stream; its descriptor stays open)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        sys.stdout.close()
        return super().forward(x, positions, spec, cu_seqlens)


class ChangesDir(NumpyBackend):
    """forward changes the working directory to ROPEREF_TEST_DIR (default /)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        os.chdir(os.environ.get("ROPEREF_TEST_DIR", "/"))
        return super().forward(x, positions, spec, cu_seqlens)


class LeavesThread(NumpyBackend):
    """forward starts a non-daemon thread that sleeps for an hour (Python waits for it at exit)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        threading.Thread(target=time.sleep, args=(3600,), name="backend-worker", daemon=False).start()
        return super().forward(x, positions, spec, cu_seqlens)


class SupportsHangs(NumpyBackend):
    """supports() never returns (sleeps)."""

    def supports(self, case):
        time.sleep(3600)
        return True


class _Evil:
    def __reduce__(self):
        return (os._exit, (9,))


class PicklesOntoThePipe(NumpyBackend):
    """In a worker process: writes a pickle that would exit the judge (``os._exit(9)``) when unpickled onto
    every pipe connection it finds, then answers. The judge must never unpickle what a worker sends."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        from multiprocessing.connection import Connection

        for obj in gc.get_objects():
            if isinstance(obj, Connection) and not obj.closed:
                try:
                    obj.send_bytes(pickle.dumps(("ok", _Evil())))
                except OSError:
                    pass
        return super().forward(x, positions, spec, cu_seqlens)


class ReturnsBfloat16(NumpyBackend):
    """Correct output, returned in bfloat16 for bfloat16 cases (travels as bits from a worker)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        return y.astype(x.dtype) if x.dtype.name == "bfloat16" else y


class OffByALittle(NumpyBackend):
    """A plainly wrong engine (forward adds 1e-3): its runs FAIL."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        return super().forward(x, positions, spec, cu_seqlens) + 1e-3


class NotInstalled(NumpyBackend):
    """A backend whose library is not installed here: every case NOT_SUPPORTED, saying so."""

    def library_reason(self):
        return "library quantumlib is not installed (pip install quantumlib)"


class FailsById(NumpyBackend):
    """Correct except on cases whose id starts with ``-`` (to check that repro lines run for such ids)."""

    def supports(self, case):
        self._dash = case.id.startswith("-")
        return super().supports(case)

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        return y + 1e-3 if getattr(self, "_dash", False) else y
