"""MLX ``mx.fast.rope`` (``mlx[cpu]``) and its gradient.

API mapping (mlx 0.32, ``mlx/fast.cpp``)::

    mx.fast.rope(a, dims, *, traditional, base, scale, offset, freqs=None)

- ``a`` must be ``(B, *, T, D)``: the case's ``x [B, T, H, D]`` is transposed to ``[B, H, T, D]``
  and back. Token ``t`` of row ``b`` sits at position ``offset[b] + t``: positions must be
  contiguous per row (``offset`` = the first position of each row, a scalar or a ``[B]``
  int32 array, negative allowed). Sparse positions and packed (varlen) input have no mapping.
- ``traditional=True`` is ``adjacent`` pairing, ``False`` is ``half`` (docs/spec.md section 2).
- ``dims`` rotates the first ``dims`` channels (a window at the start), others pass through.
- ``default``: ``base=theta`` (MLX: ``w_i = exp(-i ln(base)/(dims/2))`` in float32).
  ``linear``: ``scale = 1/factor`` multiplies the positions (float32).
  Any other scaling: ``freqs`` = the *periods* ``1/w_i`` (MLX takes ``reciprocal(freqs)`` as
  its inverse frequencies), computed here from :func:`roperef.frequencies.inv_freq` and
  rounded to float32; zero frequencies (``proportional``) become ``inf``. This judges MLX's
  custom-frequency path, not a frequency formula (the formulas are judged by the ``mlx_lm``
  adapter). A different exponent denominator (``freq_dim``) uses the same path.
- MLX computes positions and angles in float32, casts ``cos``/``sin`` to the input dtype and
  rotates in the input dtype (``table_dtype="input"``). It has no attention factor:
  ``applies_attention_factor=False`` (the judge compares against ``expected / s``).
- float64 also runs on CPU but its tables are float32 values, which one ``table_dtype``
  cannot describe, so it is not declared.

Backward: ``mx.vjp`` (MLX's RoPE VJP is the same kernel with the inverse rotation).

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from .base import BaseBackend, Capabilities
from .jax_util import missing_modules, positions_fit_int32

__all__ = ["MlxBackend", "case_offsets", "mlx_offsets", "mlx_run"]

_CAPS = Capabilities(
    stages=frozenset({"forward", "backward"}),
    pairings=frozenset({"half", "adjacent"}),
    dtypes=frozenset({"float32", "bfloat16", "float16"}),
    scaling_types=frozenset({"default", "linear", "dynamic", "ntk", "yarn", "longrope", "llama3", "proportional"}),
    features=frozenset({"partial", "odd_freq_dim", "negative_positions", "per_batch_positions"}),
    angle_dtype="float32",
    table_dtype="input",
    applies_attention_factor=False,
    notes="mx.fast.rope on CPU; scaled types via freqs=1/inv_freq from roperef; no attention factor",
)


def mlx_offsets(positions: Any, batch: int, seq: int) -> np.ndarray | str:
    """``[B]`` int32 first positions, or a reason when the positions are not ``p0_b + arange(T)`` rows."""
    pos = np.broadcast_to(np.asarray(positions), (batch, seq))
    if not positions_fit_int32(pos):
        return "positions beyond int32"
    if seq > 1 and (np.diff(pos, axis=-1) != 1).any():
        return "positions must be contiguous per row (mx.fast.rope takes offset + arange(T))"
    return pos[:, 0].astype(np.int32)


def case_offsets(case: GoldenCase) -> np.ndarray | str:
    """:func:`mlx_offsets` of a forward/backward case, or a reason (MLX takes bshd ``x [B, T, H, D]`` only)."""
    x = case.arrays.get("x", case.arrays.get("grad"))
    if x is None or x.ndim != 4:
        return "needs bshd x [B, T, H, D]"
    return mlx_offsets(case.positions, x.shape[0], x.shape[1])


def _to_mx(arr: np.ndarray) -> Any:
    import mlx.core as mx

    if arr.dtype.name == "bfloat16":
        return mx.array(arr.astype(np.float32)).astype(mx.bfloat16)
    return mx.array(np.array(arr, copy=True))


def _to_np(arr: Any, like: np.dtype) -> np.ndarray:
    import mlx.core as mx

    if arr.dtype == mx.bfloat16:
        return np.array(arr.astype(mx.float32)).astype(like)
    return np.array(arr, copy=True)


def mlx_run(rope: Any, x: np.ndarray, offsets: np.ndarray, backward: bool) -> np.ndarray:
    """Run ``rope(a, offset)`` on bshd ``x`` (transposed to MLX's ``[B, H, T, D]``); VJP when ``backward``."""
    import mlx.core as mx

    a = _to_mx(np.ascontiguousarray(np.swapaxes(x, 1, 2)))
    off = mx.array(offsets)
    if backward:
        _, (out,) = mx.vjp(lambda t: rope(t, off), [mx.zeros_like(a)], [a])
    else:
        out = rope(a, off)
    mx.eval(out)
    return np.swapaxes(_to_np(out, x.dtype), 1, 2).copy()


def _periods(spec: RopeSpec, seq_len: int) -> np.ndarray:
    w, _ = inv_freq(spec, seq_len)
    with np.errstate(divide="ignore"):
        return np.where(w == 0.0, np.inf, 1.0 / w).astype(np.float32)


@dataclass
class MlxBackend(BaseBackend):
    name: str = "mlx"
    capabilities: Capabilities = field(default_factory=lambda: _CAPS)

    def library_reason(self) -> str | None:
        return missing_modules("mlx")

    def case_reason(self, case: GoldenCase) -> str | None:
        offs = case_offsets(case)
        return offs if isinstance(offs, str) else None

    def _rope(self, spec: RopeSpec, seq_len: int) -> Any:
        import mlx.core as mx

        kind, traditional = spec.scaling.type, spec.pairing == "adjacent"
        plain = spec.resolved_freq_dim == spec.resolved_rotary_dim
        if kind in ("default", "linear") and plain:
            scale = 1.0 if kind == "default" else 1.0 / spec.scaling.given("factor")
            return lambda a, off: mx.fast.rope(
                a, spec.resolved_rotary_dim, traditional=traditional, base=spec.theta, scale=scale, offset=off
            )
        freqs = mx.array(_periods(spec, seq_len))
        return lambda a, off: mx.fast.rope(
            a, spec.resolved_rotary_dim, traditional=traditional, base=None, scale=1.0, offset=off, freqs=freqs
        )

    def _run(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any, backward: bool) -> np.ndarray:
        if cu_seqlens is not None:
            raise ValueError("mx.fast.rope has no packed (varlen) form")
        if spec.rotary_start != 0 or spec.pairing not in ("half", "adjacent"):
            raise ValueError(f"mx.fast.rope cannot express rotary_start={spec.rotary_start} / pairing={spec.pairing}")
        offs = mlx_offsets(positions, x.shape[0], x.shape[1])
        if isinstance(offs, str):
            raise ValueError(offs)
        seq_len = int(np.max(positions)) + 1
        return mlx_run(self._rope(spec, seq_len), x, offs, backward)

    def forward(self, x: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(x, positions, spec, cu_seqlens, backward=False)

    def backward(self, grad: np.ndarray, positions: Any, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._run(grad, positions, spec, cu_seqlens, backward=True)
