"""A float32 NumPy model of ggml's rope cache (ggml-cpu ops.cpp), to show what its precision FAILs come from.

ggml computes, per token, ``theta_scale = powf(freq_base, -2.0f/n_dims)`` and the angle of pair ``i``
as ``theta_i = fl32(p)`` multiplied ``i`` times by ``theta_scale`` in float32 (a running product), then
``theta_i / freq_factors[i]`` times ``freq_scale`` and ``cosf``/``sinf`` of it, times ``attn_factor``; the
rotation is float32. :class:`GgmlModel` does exactly that (``powf`` from the C library, so bit-identical
frequencies); :class:`GgmlModelRoundedOnce` is the same arithmetic with each angle formed once,
``fl32(fl32(p) * fl32(w_i))``, from roperef's frequency. If the first FAILs with ggml's budgets and the
second passes, the running product is the cause. Plain RoPE (NORMAL/NEOX) and chunked mRoPE, no YaRN.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from dataclasses import dataclass

import numpy as np

from conformance.backends.ggml import GgmlBackend, ggml_call
from roperef.frequencies import inv_freq
from roperef.layout import pair_axes
from roperef.reference import rows_for
from roperef.spec import RopeSpec

_F32 = np.float32


def _powf() -> ctypes._CFuncPtr:
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    libm.powf.restype, libm.powf.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
    return libm.powf


POWF = _powf()


def running_angles(p: int, spec: RopeSpec, seq_len: int) -> np.ndarray:
    """ggml's float32 angle of every pair at position ``p`` (theta_scale^i as a running product)."""
    call = ggml_call(spec, seq_len)
    assert call.ext_factor == 0.0, "the model has no YaRN ramp"
    scale = _F32(POWF(_F32(call.freq_base), _F32(_F32(-2.0) / _F32(call.n_dims))))
    theta, out = _F32(p), np.empty(call.n_dims // 2)
    for i in range(call.n_dims // 2):
        ff = _F32(1.0) if call.freq_factors is None else call.freq_factors[i]
        out[i] = _F32(_F32(call.freq_scale) * _F32(theta / ff))
        theta = _F32(theta * scale)
    return out


def rounded_once_angles(p: int, spec: RopeSpec, seq_len: int) -> np.ndarray:
    """The same float32 angle formed once per pair from roperef's frequency: fl32(fl32(p) * fl32(w_i))."""
    w, _ = inv_freq(spec, seq_len)
    return (_F32(p) * w.astype(_F32)).astype(np.float64)


@dataclass
class GgmlModel(GgmlBackend):
    """ggml's float32 arithmetic in NumPy (see the module docstring); judged like the ggml adapter."""

    name: str = "ggml-float32-model"
    angles = staticmethod(running_angles)

    def _stage(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, backward: bool) -> np.ndarray:
        rows = rows_for(spec, positions)  # [A, *grid]
        seq_len = int(rows.max()) + 1
        call = ggml_call(spec, seq_len)
        n = spec.n_pairs
        axes = pair_axes(spec)
        a, b = (np.arange(n), np.arange(n) + n) if spec.pairing == "half" else (2 * np.arange(n), 2 * np.arange(n) + 1)
        xf = np.asarray(x, dtype=np.float32)
        y = xf.copy()
        for idx in np.ndindex(rows.shape[1:]):
            per_row = {int(r): self.angles(int(rows[(r, *idx)]), spec, seq_len) for r in set(axes.tolist())}
            ang = np.array([per_row[int(axes[i])][i] for i in range(n)])
            c = (np.cos(ang).astype(_F32) * _F32(call.attn_factor)).astype(_F32)
            s = (np.sin(ang).astype(_F32) * _F32(call.attn_factor)).astype(_F32) * _F32(-1.0 if backward else 1.0)
            row, out = xf[idx], y[idx]
            out[:, a] = row[:, a] * c - row[:, b] * s
            out[:, b] = row[:, a] * s + row[:, b] * c
        return y.astype(np.asarray(x).dtype)


@dataclass
class GgmlModelRoundedOnce(GgmlModel):
    name: str = "ggml-float32-model-rounded-once"
    angles = staticmethod(rounded_once_angles)
