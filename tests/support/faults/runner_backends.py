"""Misbehaving backends for tests/conformance/judge/test_runner.py (importable by module:attr from a worker process)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from conformance.backends.numpy_backend import NumpyBackend


class Raises(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        raise RuntimeError("kernel launch failed")


class NaNs(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        y.reshape(-1)[3] = np.nan
        return y


class WrongShape(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        return super().forward(x, positions, spec, cu_seqlens)[..., :-2]


class IntegerOutput(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        return super().forward(x, positions, spec, cu_seqlens).astype(np.int32)


class InPlace(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        x[...] = y.astype(x.dtype)  # "rotates q in place"
        return y


class Hangs(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        time.sleep(30)
        return super().forward(x, positions, spec, cu_seqlens)


class Segfaults(NumpyBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        os.kill(os.getpid(), signal.SIGSEGV)


class NoStages:
    name = "nothing"
