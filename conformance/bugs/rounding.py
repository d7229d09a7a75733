"""Rounding a float64 quantity to a low-precision dtype, and how far that rounding can jump.

A bug that rounds a quantity ``v`` (a position, a frequency, an angle, a table entry) to a
dtype ``T`` is deterministic on exact inputs, but an engine computes ``v`` itself in its own
precision, with an error up to ``e``. When ``v`` lies within ``e`` of a rounding boundary of
``T`` the engine's rounded value may be the neighbour of the decoy's. The *rounding slack*

    slack(v, e) = max(|R_T(v + e) - R_T(v)|, |R_T(v - e) - R_T(v)|)

is 0 away from boundaries and one unit of ``T`` next to one (docs/spec.md section 6: the
judge models the backend's precision, so a decoy must too).
"""

from __future__ import annotations

import numpy as np

__all__ = ["round_to", "rounding_slack", "LOW_DTYPES"]

LOW_DTYPES = ("bfloat16", "float16")


def round_to(dtype: str, values: np.ndarray) -> np.ndarray:
    """``values`` rounded to ``dtype`` (nearest even; float16 overflows to inf), back as float64."""
    a = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            import ml_dtypes  # lazy: only bfloat16 needs it

            return a.astype(ml_dtypes.bfloat16).astype(np.float64)
        return a.astype(dtype).astype(np.float64)


def rounding_slack(dtype: str, values: np.ndarray, error: np.ndarray | float) -> np.ndarray:
    """Per element, how far ``R_T`` of a value within ``error`` of ``values`` can land from ``R_T(values)``."""
    v = np.asarray(values, dtype=np.float64)
    e = np.abs(np.asarray(error, dtype=np.float64))
    r0 = round_to(dtype, v)
    with np.errstate(invalid="ignore", over="ignore"):
        up = np.abs(round_to(dtype, v + e) - r0)
        down = np.abs(round_to(dtype, v - e) - r0)
        out = np.maximum(up, down)
    return np.where(np.isfinite(out), out, 0.0)
