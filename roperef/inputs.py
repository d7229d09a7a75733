"""The one validation path for tensor inputs, shared by ``reference`` and ``fast``.

``x`` is ``[..., heads, head_dim]``: bshd ``[B, T, H, D]`` or packed thd
``[N, H, D]``. Its leading shape ``P = x.shape[:-2]`` is the token grid; positions
must match it (docs/spec.md section 1):

- plain: ``positions`` broadcastable to ``P`` (``[B, T]``, or ``[T]`` shared by rows);
- mRoPE: ``[3, *P]`` (rows t, h, w; each broadcastable to ``P``);
- 2-D vision: ``[*P, 2]`` (columns h, w);
- packed with ``cu_seqlens``: ``x`` is ``[N, H, D]``; ``positions=None`` restarts at
  0 in each sequence.

Everything is checked here and reported with the argument, the value and the rule,
so no NumPy broadcasting error ever reaches a caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from .errors import bad
from .positions import check_cu_seqlens, check_positions, varlen
from .spec import RopeSpec

__all__ = ["Prepared", "float_array", "prepare", "check_spec", "resolve_out_dtype"]

_EXTENDED_FLOATS = ("bfloat16", "float8", "float6", "float4")


def check_spec(spec: object) -> RopeSpec:
    if not isinstance(spec, RopeSpec):
        bad("spec", spec, "must be a roperef.RopeSpec (see RopeSpec.from_dict / roperef.hf.spec_from_config)", TypeError)
    return spec


def float_array(x: object, name: str) -> np.ndarray:
    """``x`` as a NumPy array of a floating dtype (float16/32/64, or an ml_dtypes float such as bfloat16)."""
    arr = np.asarray(x)
    if arr.dtype.kind != "f" and not arr.dtype.name.startswith(_EXTENDED_FLOATS):
        bad(f"{name}.dtype", str(arr.dtype), "must be a floating dtype (float64, float32, float16, bfloat16)", TypeError)
    return arr


def resolve_out_dtype(out_dtype: object) -> np.dtype:
    """``None`` -> float64; otherwise float32 or float64 (the result is rounded once to it)."""
    if out_dtype is None:
        return np.dtype(np.float64)
    try:
        # any object is checked here: np.dtype raises TypeError for one that is not a dtype (caught below)
        dt: np.dtype | None = np.dtype(cast("npt.DTypeLike", out_dtype))
    except TypeError:
        dt = None  # reported below, outside the handler: no chained NumPy traceback
    if dt is None:
        bad("out_dtype", out_dtype, "must be float32, float64 or None", TypeError)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        bad("out_dtype", str(dt), "must be float32, float64 or None")
    return dt


@dataclass(frozen=True)
class Prepared:
    """Validated inputs: ``x`` (unchanged array), position rows ``[A, *P]`` int64, ``seq_len``."""

    x: np.ndarray
    rows: np.ndarray
    seq_len: int


def _rows(positions: np.ndarray, spec: RopeSpec, grid: tuple[int, ...]) -> np.ndarray:
    axes = spec.n_axes
    if axes == 1:
        want, rows = "broadcastable to x.shape[:-2]", positions[None]
    elif spec.mrope_section is not None:
        want, rows = "[3, *x.shape[:-2]] (mRoPE rows t, h, w)", positions
        if positions.ndim < 1 or positions.shape[0] != 3:
            bad("positions.shape", positions.shape, f"must be {want}={(3, *grid)}")
    else:
        want, rows = "[*x.shape[:-2], 2] (vision columns h, w)", np.moveaxis(positions, -1, 0) if positions.ndim else positions
        if positions.ndim < 1 or positions.shape[-1] != 2:
            bad("positions.shape", positions.shape, f"must be {want}={(*grid, 2)}")
    try:
        return np.broadcast_to(rows, (axes, *grid))
    except ValueError:
        pass  # reported below, outside the handler: no chained NumPy traceback
    bad("positions.shape", positions.shape, f"must be {want} with x.shape[:-2]={grid}")


def prepare(
    x: object,
    positions: object,
    spec: RopeSpec,
    cu_seqlens: object = None,
    seq_len: int | None = None,
    name: str = "x",
) -> Prepared:
    """Validate a forward/backward call and return its normalised inputs."""
    check_spec(spec)
    arr = float_array(x, name)
    if arr.ndim < 2:
        bad(f"{name}.shape", arr.shape, "must be [..., heads, head_dim] (bshd [B,T,H,D] or thd [N,H,D])")
    if arr.shape[-1] != spec.head_dim:
        bad(f"{name}.shape[-1]", arr.shape[-1], f"must equal head_dim={spec.head_dim}")
    grid = arr.shape[:-2]
    if cu_seqlens is not None:
        if arr.ndim != 3:
            bad(f"{name}.shape", arr.shape, "with cu_seqlens must be packed [tokens, heads, head_dim]")
        cu = check_cu_seqlens(cu_seqlens, arr.shape[0])
        if positions is None:
            if spec.n_axes != 1:
                bad("positions", None, "mRoPE / vision positions must be given explicitly")
            positions = varlen(cu)
    if positions is None:
        bad("positions", None, "is required (or pass cu_seqlens for packed sequences)")
    rows = _rows(check_positions(positions), spec, grid)
    if seq_len is None:
        seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
    elif isinstance(seq_len, bool) or not isinstance(seq_len, (int, np.integer)) or seq_len < 1:
        bad("seq_len", seq_len, "must be a positive integer or None (None: max(position) + 1)")
    return Prepared(arr, rows, int(seq_len))
