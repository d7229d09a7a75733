"""A tiny float32 RoPE engine in NumPy: the running example of docs/writing-a-backend.md.

It computes what a typical GPU kernel computes: inverse frequencies, angles, cos/sin and the
rotation in float32, rotate-half pairing, plain RoPE (no scaling), the whole head rotated.

    roperef check --backend ./my_rope.py:MyRope
"""

import numpy as np

from conformance.backends.base import BaseBackend, Capabilities


class MyRope(BaseBackend):
    name = "my-rope"
    capabilities = Capabilities(
        stages=frozenset({"forward"}),                      # the methods below
        pairings=frozenset({"half"}),                       # (j, j + n): rotate_half / NeoX
        dtypes=frozenset({"float32", "float16", "bfloat16"}),
        scaling_types=frozenset({"default"}),               # theta only
        features=frozenset({"per_batch_positions", "sparse_positions", "negative_positions"}),
        angle_dtype="float32",                              # inv_freq and p * w in float32
        table_dtype="float32",                              # cos/sin and the multiply in float32
    )

    def forward(self, x, positions, spec, cu_seqlens=None):
        """x [B, T, H, D] in the case dtype, positions [B, T] int64 -> y like x."""
        d = spec.head_dim
        n = d // 2
        exponent = np.arange(0, d, 2, dtype=np.float32) / np.float32(d)
        inv_freq = np.float32(1.0) / np.float32(spec.theta) ** exponent        # [n] float32
        angles = positions.astype(np.float32)[..., None] * inv_freq            # [B, T, n]
        cos = np.cos(angles)[..., None, :]                                     # [B, T, 1, n]
        sin = np.sin(angles)[..., None, :]
        x1 = x[..., :n].astype(np.float32)
        x2 = x[..., n:].astype(np.float32)
        y = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
        return y.astype(x.dtype)
