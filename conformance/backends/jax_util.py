"""Small helpers shared by the JAX adapters (keras-hub, penzai): imports, dtypes, jit, VJP.

Nothing here imports JAX at module import time; every helper imports it lazily.
Arrays cross the adapter boundary as NumPy (bfloat16 via ml_dtypes, which JAX
uses natively, so conversions are exact). Positions travel as int32: JAX runs
with 64-bit types disabled by default, and every JAX RoPE here casts them to
float32 anyway; a position outside int32 is refused by ``supports``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from roperef.positions import varlen

__all__ = ["missing_modules", "positions_fit_int32", "to_jax", "to_numpy", "int32_positions", "JitCache", "vjp_x", "as_bshd", "call_bshd"]

_INT32 = np.iinfo(np.int32)


def missing_modules(*names: str) -> str | None:
    """A NOT_SUPPORTED reason naming the modules that cannot be imported, or None when all are there."""
    absent = []
    for name in names:
        try:
            if importlib.util.find_spec(name) is None:
                absent.append(name)
        except (ImportError, ValueError):
            absent.append(name)
    if absent:
        return f"library not installed: {', '.join(absent)}"
    return None


def positions_fit_int32(positions: np.ndarray | None) -> bool:
    return positions is None or positions.size == 0 or (positions.min() >= _INT32.min and positions.max() <= _INT32.max)


def int32_positions(positions: np.ndarray) -> np.ndarray:
    """int64 positions as int32 (checked: values must fit)."""
    pos = np.asarray(positions)
    if not positions_fit_int32(pos):
        raise ValueError(f"positions must fit in int32 for JAX (range [{pos.min()}, {pos.max()}])")
    return pos.astype(np.int32)


def to_jax(arr: np.ndarray) -> Any:
    """A device copy of ``arr`` (same dtype; bfloat16 stays bfloat16). The NumPy input is never written."""
    import jax.numpy as jnp

    return jnp.array(arr, copy=True)


def to_numpy(arr: Any) -> np.ndarray:
    """A NumPy copy of a JAX array (bfloat16 comes back as ml_dtypes.bfloat16)."""
    return np.array(arr, copy=True)


class JitCache:
    """One ``jax.jit`` per key (a hashable description of the static configuration), per adapter instance."""

    def __init__(self) -> None:
        self._fns: dict[Any, Callable[..., Any]] = {}

    def get(self, key: Any, build: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
        fn = self._fns.get(key)
        if fn is None:
            import jax

            fn = jax.jit(build())
            self._fns[key] = fn
        return fn


def vjp_x(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``(grad, *args) -> d<grad, fn(x, *args)>/dx`` for a function ``fn(x, *args)`` (args not differentiated)."""

    def grad_x(grad: Any, x: Any, *args: Any) -> Any:
        import jax

        _, pullback = jax.vjp(lambda x_: fn(x_, *args), x)
        return pullback(grad)[0]

    return grad_x


def as_bshd(x: np.ndarray, positions: Any, cu_seqlens: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(x [B,T,H,D], positions [B,T])`` for a library that takes batched sequences: packed thd
    input becomes one batch row (positions restart per sequence when not given)."""
    if cu_seqlens is not None:
        if positions is None:
            positions = varlen(np.asarray(cu_seqlens))
        return x[None], np.asarray(positions)[None]
    return x, np.broadcast_to(np.asarray(positions), x.shape[:2])


def call_bshd(fn: Callable[..., Any], x: np.ndarray, positions: Any, cu_seqlens: Any, backward: bool) -> np.ndarray:
    """Run a jitted RoPE ``fn(x, positions)`` (forward) or its VJP ``fn(grad, x, positions)`` (backward).

    ``x`` (or the gradient) goes in as bshd (:func:`as_bshd`; packed thd is one batch row and
    comes back packed), positions as int32. The backward VJP is linear in the gradient, so the
    primal it is taken at does not matter; zeros of ``x``'s shape are passed.
    """
    x4, pos = as_bshd(x, positions, cu_seqlens)
    xj, pj = to_jax(x4), to_jax(int32_positions(pos))
    y = to_numpy(fn(xj, xj * 0, pj) if backward else fn(xj, pj))
    return y[0] if cu_seqlens is not None else y
