"""One fused pass that judges a chunk of forward/backward output (the long-context hot loop).

For ``x``, ``expected`` and the backend's ``got`` (``[N, H, D]``), the per-(token, pair)
coefficients ``coef [N, n]`` (:func:`conformance.error_model.tolerance.pair_coefficients`) and the pair
map (transposed for backward), every element's bound is exactly what
:func:`conformance.error_model.tolerance.bounds` computes, with the same floating-point operations::

    bound[out_a[k]] = bound[out_b[k]] = (|x[in_a[k]]| + |x[in_b[k]]|) * coef[k] + floor
    bound[other channels] = floor

and the error ratio exactly what :func:`conformance.error_model.tolerance.compare` computes
(``0`` where the error is ``0``, ``err / bound`` otherwise, NaN read as ``inf``). So the
budget (the maximum ratio) and the count of elements over the bound are bit-for-bit those
of the NumPy path (``tests/conformance/long_context/test_long_context.py`` checks it); the sums for the NMSE are
accumulated in another order (a few ulp apart). The first element with the maximum ratio
(in C order) is the worst; the first element over its bound is also kept (for a contiguous
chunk, where a position-dependent bug starts). One read of each array, no temporary of the chunk's size.

Numba, ``parallel=True``, ``cache=True``, no fastmath; ``error_model="numpy"`` so that a
zero bound gives ``inf`` as in NumPy. Compiled on first call (import this module lazily).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

__all__ = ["ChunkStats", "judge_chunk"]


@dataclass(frozen=True)
class ChunkStats:
    """What one fused pass measured over a chunk."""

    budget: float
    worst_flat: int  # index of the worst element in C order of [N, H, D]
    first_over: int  # index of the first element over its bound (C order), -1 if none
    n_over: int
    sum_err2: float
    sum_exp2: float
    max_err: float
    n_nonfinite: int  # elements of got that are not finite where expected is


@njit(parallel=True, cache=True, error_model="numpy")
def _judge_kernel(x, exp, got, coef, in_a, in_b, out_a, out_b, floor, n_blocks, best, best_at, first, over, err2, exp2, maxerr, bad):
    n_tok, heads, dim = x.shape
    n = in_a.shape[0]
    for blk in prange(n_blocks):
        t0 = blk * n_tok // n_blocks
        t1 = (blk + 1) * n_tok // n_blocks
        bound = np.empty(dim)
        b_best, b_at, b_first, b_over, b_err2, b_exp2, b_max, b_bad = -1.0, -1, -1, 0, 0.0, 0.0, 0.0, 0
        for t in range(t0, t1):
            for h in range(heads):
                for c in range(dim):
                    bound[c] = floor
                for k in range(n):
                    m = (abs(np.float64(x[t, h, in_a[k]])) + abs(np.float64(x[t, h, in_b[k]]))) * coef[t, k]
                    bound[out_a[k]] = m + floor
                    bound[out_b[k]] = m + floor
                base = (t * heads + h) * dim
                for c in range(dim):
                    e = exp[t, h, c]
                    g = np.float64(got[t, h, c])
                    err = abs(g - e)
                    if not np.isfinite(g) and np.isfinite(e):
                        b_bad += 1
                    ratio = 0.0 if err == 0.0 else err / bound[c]
                    if np.isnan(ratio):
                        ratio = np.inf
                    if ratio > 1.0:
                        if b_over == 0:
                            b_first = base + c
                        b_over += 1
                    if ratio > b_best:
                        b_best = ratio
                        b_at = base + c
                    b_err2 += err * err
                    b_exp2 += e * e
                    if err > b_max:
                        b_max = err
        best[blk] = b_best
        best_at[blk] = b_at
        first[blk] = b_first
        over[blk] = b_over
        err2[blk] = b_err2
        exp2[blk] = b_exp2
        maxerr[blk] = b_max
        bad[blk] = b_bad


def judge_chunk(x: np.ndarray, expected: np.ndarray, got: np.ndarray, coef: np.ndarray, in_a: np.ndarray,
                in_b: np.ndarray, out_a: np.ndarray, out_b: np.ndarray, floor: float, n_blocks: int = 64) -> ChunkStats:
    """Judge ``got`` against ``expected`` (all ``[N, H, D]``; ``got`` float32/float64, anything else is
    widened to float32 exactly first) in one pass; see the module docstring."""
    if got.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        got = got.astype(np.float32)  # bfloat16 / float16 widen exactly
    arrays = [np.ascontiguousarray(a) for a in (x, expected, got)]
    n_tok = arrays[0].shape[0]
    blocks = max(1, min(int(n_blocks), n_tok))
    best = np.empty(blocks)
    best_at = np.empty(blocks, dtype=np.int64)
    first = np.empty(blocks, dtype=np.int64)
    over = np.empty(blocks, dtype=np.int64)
    err2, exp2, maxerr = np.empty(blocks), np.empty(blocks), np.empty(blocks)
    bad = np.empty(blocks, dtype=np.int64)
    idx = [np.ascontiguousarray(a, dtype=np.int64) for a in (in_a, in_b, out_a, out_b)]
    _judge_kernel(*arrays, np.ascontiguousarray(coef, dtype=np.float64), *idx, float(floor), blocks, best, best_at, first, over, err2,  # type: ignore[call-arg]  # numba: the jitted Dispatcher's stub does not carry the kernel signature
              exp2, maxerr, bad)
    k = int(np.argmax(best))  # first block holding the maximum: its first maximum is the first overall
    firsts = first[first >= 0]
    return ChunkStats(budget=max(float(best[k]), 0.0), worst_flat=int(best_at[k]),
                      first_over=int(firsts.min()) if firsts.size else -1, n_over=int(over.sum()),
                      sum_err2=float(err2.sum()), sum_exp2=float(exp2.sum()), max_err=float(maxerr.max()),
                      n_nonfinite=int(bad.sum()))
