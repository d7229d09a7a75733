"""A correct float32 engine, emulated in NumPy: what a typical GPU kernel computes.

- ``inv_freq``: ``w_i = ratio_i / theta^(e_i)`` in float32: the exponent ``e_i`` (``2i/d``
  for plain RoPE, the vision forms' own exponents) is rounded to float32, ``pow`` and the
  reciprocal run in float32, and the scaling type's change of each frequency (the float64
  ratio scaled/unscaled, i.e. the YaRN/llama3 blend, the longrope factors, 1/f, the NTK
  base change) is applied as one float32 multiply. The attention factor is rounded to float32.
- angles ``phi = fl32(fl32(p) * w)``; ``cos``/``sin`` of that float32 angle, correctly
  rounded to float32 (as CUDA ``cosf``/``sinf`` within their 2 ulp, error over spacing), times ``s``.
- tables and the rotation in float32 (``tables="float32"``) or cast to the input dtype
  first (``tables="input"``: bf16/fp16 tables and multiplies, as many engines do);
  the result is returned in the input dtype. Pass-through channels are copied.

Use it as a model of a correct low-precision engine (``roperef check --backend
emulated-fp32``), or construct ``Float32Emulation(tables="input")`` yourself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from roperef.frequencies import inv_freq as ref_inv_freq
from roperef.layout import pair_axes, pair_map
from roperef.spec import RopeSpec, Scaling

from ..vocabulary import LAYOUTS, STAGES
from .base import BaseBackend, Capabilities

__all__ = ["Float32Emulation", "float32_inv_freq", "emulation_rows"]

F32 = np.float32


def float32_inv_freq(spec: RopeSpec, seq_len: int | None) -> tuple[np.ndarray, np.float32]:
    """``(w float32[n], s float32)`` computed the way a float32 engine does (see module doc)."""
    w_ref, s = ref_inv_freq(spec, seq_len)
    plain = spec.replace(scaling=Scaling()) if spec.scaling.type != "default" else spec
    w_base, _ = ref_inv_freq(plain, seq_len)
    theta = float(spec.theta)
    exponent = (np.log(1.0 / w_base) / np.log(theta)).astype(F32) if theta != 1.0 else np.zeros_like(w_base, dtype=F32)
    base32 = F32(1.0) / np.power(F32(theta), exponent)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(w_base > 0, w_ref / w_base, 0.0).astype(F32)
    return (base32 * ratio).astype(F32), F32(s)


def emulation_rows(spec: RopeSpec, positions: np.ndarray, grid: tuple[int, ...] | None = None) -> np.ndarray:
    """Position rows ``[A, *P]`` as the reference reads them."""
    pos = np.asarray(positions, dtype=np.int64)
    rows = pos[None] if spec.n_axes == 1 else (pos if spec.mrope_section is not None else np.moveaxis(pos, -1, 0))
    return rows if grid is None else np.broadcast_to(rows, (rows.shape[0], *grid))


@dataclass
class Float32Emulation(BaseBackend):
    """A correct float32 engine. ``tables``: ``"float32"`` or ``"input"`` (cast to the input dtype)."""

    name: str = "emulated-fp32"
    tables: str = "float32"
    capabilities: Capabilities = field(default=None)  # type: ignore[assignment]  # None: built from tables in __post_init__

    def __post_init__(self) -> None:
        if self.tables not in ("float32", "input"):
            raise ValueError(f"tables={self.tables!r}: must be 'float32' or 'input'")
        if self.capabilities is None:
            self.capabilities = Capabilities(
                stages=frozenset(STAGES),
                angle_dtype="float32",
                table_dtype=self.tables,
                notes=f"float32 inv_freq and angles; tables in {self.tables}",
                layouts=frozenset(LAYOUTS),
            )
        super().__post_init__()

    # -- pieces
    def _tables(self, spec: RopeSpec, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
        w, s = float32_inv_freq(spec, seq_len)
        p = np.moveaxis(rows, 0, -1).astype(F32)[..., pair_axes(spec)]
        phi = (p * w).astype(F32).astype(np.float64)
        cos = (np.cos(phi).astype(F32) * s).astype(F32)
        sin = (np.sin(phi).astype(F32) * s).astype(F32)
        return cos, sin

    def _rotate(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec, backward: bool) -> np.ndarray:
        work = x.dtype if self.tables == "input" else np.dtype(F32)
        pm = pair_map(spec).transposed() if backward else pair_map(spec)
        c = cos.astype(work)[..., None, :]
        s = sin.astype(work)[..., None, :]
        if backward:
            s = -s
        xw = x.astype(work)
        xa, xb = xw[..., pm.in_a], xw[..., pm.in_b]
        y = x.copy()
        y[..., pm.out_a] = (xa * c - xb * s).astype(x.dtype)
        y[..., pm.out_b] = (xb * c + xa * s).astype(x.dtype)
        return y

    # -- stages
    def inv_freq(self, spec: RopeSpec, seq_len: int) -> tuple[np.ndarray, float]:
        w, s = float32_inv_freq(spec, seq_len)
        return w, float(s)

    def cos_sin(self, spec: RopeSpec, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._tables(spec, emulation_rows(spec, positions))

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        return self._rotate(np.asarray(x), np.asarray(cos), np.asarray(sin), spec, False)

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: np.ndarray | None = None) -> np.ndarray:
        x = np.asarray(x)
        cos, sin = self._tables(spec, emulation_rows(spec, positions, x.shape[:-2]))
        return self._rotate(x, cos, sin, spec, False)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: np.ndarray | None = None) -> np.ndarray:
        grad = np.asarray(grad)
        cos, sin = self._tables(spec, emulation_rows(spec, positions, grad.shape[:-2]))
        return self._rotate(grad, cos, sin, spec, True)
