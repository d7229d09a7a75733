"""Common mistakes, each built into docs/writing-a-backend.md's MyRope, to show what the judge says.

    roperef check --backend ./mistakes.py:PositionsInInputDtype --filter 'forward/default/*' -q

Every class here is deliberately wrong (tests/docs/test_writing_a_backend.py checks the judge names each).
"""

import numpy as np
from my_rope import MyRope

from conformance.backends.base import Capabilities


class Undeclared:
    """MyRope's float32 arithmetic, but no capabilities declared: judged as a float64 engine."""

    name = "undeclared"

    def forward(self, x, positions, spec, cu_seqlens=None):
        return MyRope().forward(x, positions, spec)


class PositionsInInputDtype(MyRope):
    """Positions built in the input dtype for bfloat16 inputs (bfloat16 holds integers exactly only up to 256)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        if x.dtype.name == "bfloat16":
            positions = positions.astype(x.dtype).astype(np.int64)
        return super().forward(x, positions, spec)


class Interleaved(MyRope):
    """Declares half pairing but rotates adjacent pairs (2j, 2j+1)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        n = spec.head_dim // 2
        order = np.concatenate([np.arange(0, 2 * n, 2), np.arange(1, 2 * n, 2)])   # adjacent -> half layout
        y = np.empty_like(x)
        y[..., order] = super().forward(x[..., order], positions, spec)
        return y


class TablesInInputDtype(MyRope):
    """cos/sin cast to the input dtype before the multiply, while declaring float32 tables."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        d, n = spec.head_dim, spec.head_dim // 2
        inv_freq = np.float32(1.0) / np.float32(spec.theta) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
        angles = positions.astype(np.float32)[..., None] * inv_freq
        cos = np.cos(angles).astype(x.dtype)[..., None, :]
        sin = np.sin(angles).astype(x.dtype)[..., None, :]
        x1, x2 = x[..., :n], x[..., n:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


class TablesInInputDtypeDeclared(TablesInInputDtype):
    """The same engine, declared honestly (table_dtype="input"): it passes."""

    capabilities = Capabilities(**{**MyRope.capabilities.__dict__, "table_dtype": "input"})


class OffsetsIgnored(MyRope):
    """Positions rebuilt as arange(T) (the offset of a decode step or a per-row offset lost)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        return super().forward(x, np.broadcast_to(np.arange(x.shape[1]), positions.shape), spec)


class InPlace(MyRope):
    """Writes the result into the input buffer (q rotated in place) and returns it."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        x[...] = super().forward(x, positions, spec)
        return x


class HalfPrecisionOutput(MyRope):
    """Returns float16 for float32 inputs (a kernel that always writes half precision)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec)
        return y.astype(np.float16) if x.dtype == np.float32 else y


class YarnWithoutAttentionFactor(MyRope):
    """Supports YaRN through roperef's inv_freq but drops the attention factor it returns."""

    capabilities = Capabilities(**{**MyRope.capabilities.__dict__, "scaling_types": frozenset({"default", "yarn"})})

    def forward(self, x, positions, spec, cu_seqlens=None):
        from roperef.frequencies import inv_freq

        w, _attention_factor = inv_freq(spec, int(positions.max()) + 1)          # the factor is dropped
        n = spec.head_dim // 2
        angles = positions.astype(np.float32)[..., None] * w.astype(np.float32)
        cos, sin = np.cos(angles)[..., None, :], np.sin(angles)[..., None, :]
        x1, x2 = x[..., :n].astype(np.float32), x[..., n:].astype(np.float32)
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)
