"""Numba kernels behind :mod:`roperef.fast` (compiled lazily, cached on disk).

The arithmetic is the reference's, operation for operation (see
:mod:`roperef.reference`): for position ``p`` (an exact float64) and inverse
frequency ``w``::

    hi, lo  = TwoProduct(p, w)                       # Dekker, Veltkamp split (2^27 + 1)
    c, sn   = cos(hi), sin(hi)
    cos     = (c  - (sn*lo + c*(0.5*lo*lo))) * s     # second order in lo
    sin     = (sn + (c*lo  - sn*(0.5*lo*lo))) * s
    y_a     = x_a*cos - x_b*sin
    y_b     = x_b*cos + x_a*sin

No ``fastmath`` (so no reassociation and no FMA contraction): the results are
bit-identical to NumPy's wherever ``math.cos``/``math.sin`` equal ``np.cos``/``np.sin``.

Array conventions (all C-contiguous): ``x`` and ``out`` are ``[N, H, D]`` (tokens,
heads, head dim; float32 or float64 each, the arithmetic is float64 and ``out`` is
rounded once); ``rows`` int64 ``[A, N]``; ``axes`` int64 ``[n]`` (row of each pair);
``freqs`` float64 ``[n]``; tables ``[N, n]`` float64. The pair maps ``in_a, in_b,
out_a, out_b`` (int64 ``[n]``, absolute channels) come from :func:`roperef.layout.pair_map`;
``k_in``/``k_out`` (1, 2, or 0 for
"not affine") let the rotation loop index directly; ``keep`` (int64) lists the
pass-through channels, copied unchanged.

Parallelism: tokens are split into contiguous blocks, one ``prange`` iteration per
block; each block owns a ``[n]`` cos/sin scratch (allocated once per block, never
per element), fills it once per token and reuses it across all heads.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, uint64

__all__ = ["tables_kernel", "rope_kernel", "apply_kernel"]

_SPLITTER = 134217729.0  # 2^27 + 1, as roperef.reference._SPLITTER


@njit(cache=True, inline="always")
def _two_product(a: float, b: float) -> tuple[float, float]:
    """Same operation order as :func:`roperef.reference.two_product`."""
    hi = a * b
    ca = _SPLITTER * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = _SPLITTER * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi, lo


@njit(cache=True, inline="always")
def _fill_token(rows, t, freqs, axes, s, sign, cos, sin):  # type: ignore[no-untyped-def]
    """``cos[j], sin[j]`` of token ``t`` (``sign`` = -1.0 negates sin, as the backward pass does)."""
    for j in range(freqs.shape[0]):
        p = float(rows[axes[j], t])
        hi, lo = _two_product(p, freqs[j])
        c = math.cos(hi)
        sn = math.sin(hi)
        half_lo2 = 0.5 * lo * lo
        cos[j] = (c - (sn * lo + c * half_lo2)) * s
        sv = (sn + (c * lo - sn * half_lo2)) * s
        sin[j] = -sv if sign < 0.0 else sv


# Rotation of all heads of one token. Each layout has its own small, out-of-line
# function: compiled alone, its loop nest stays simple enough for LLVM to vectorise
# (measured: 2-3x slower when the same loops sit behind branches inside the parallel
# kernel). ``cos, sin`` are ``[1, n]``; ``ra, rb, wa, wb`` are the first read/write
# channels of the pair maps (unsigned: no negative-index wraparound in the loop).
# The arithmetic is identical in every variant.


@njit(cache=True)
def _rot_half0(x, out, t, cos, sin, ra, rb, wa, wb):  # type: ignore[no-untyped-def]
    """``half`` with the window at channel 0: pairs ``(j, j+n)`` read and written."""
    n = cos.shape[1]
    for h in range(x.shape[1]):
        xr = x[t, h]
        yr = out[t, h]
        for j in range(n):
            xa = float(xr[j])
            xb = float(xr[j + n])
            c = cos[0, j]
            sn = sin[0, j]
            yr[j] = xa * c - xb * sn
            yr[j + n] = xb * c + xa * sn


@njit(cache=True)
def _rot_strided(x, out, t, cos, sin, ra, rb, wa, wb, k_in, k_out):  # type: ignore[no-untyped-def]
    """Affine maps: read ``(ra + k_in*j, rb + k_in*j)``, write ``(wa + k_out*j, wb + k_out*j)``."""
    n = uint64(cos.shape[1])
    ki = uint64(k_in)
    ko = uint64(k_out)
    for h in range(x.shape[1]):
        xr = x[t, h]
        yr = out[t, h]
        for j in range(n):
            xa = float(xr[ra + ki * j])
            xb = float(xr[rb + ki * j])
            c = cos[0, j]
            sn = sin[0, j]
            yr[wa + ko * j] = xa * c - xb * sn
            yr[wb + ko * j] = xb * c + xa * sn


@njit(cache=True)
def _rot_gather(x, out, t, cos, sin, in_a, in_b, out_a, out_b):  # type: ignore[no-untyped-def]
    """Any pair map, through the index arrays."""
    for h in range(x.shape[1]):
        xr = x[t, h]
        yr = out[t, h]
        for j in range(cos.shape[1]):
            xa = float(xr[in_a[j]])
            xb = float(xr[in_b[j]])
            c = cos[0, j]
            sn = sin[0, j]
            yr[out_a[j]] = xa * c - xb * sn
            yr[out_b[j]] = xb * c + xa * sn


@njit(cache=True)
def _copy_keep(x, out, t, keep):  # type: ignore[no-untyped-def]
    """Pass-through channels of token ``t``, all heads (a float32 -> float64 or same-type copy is exact)."""
    for h in range(x.shape[1]):
        for k in range(keep.shape[0]):
            out[t, h, keep[k]] = x[t, h, keep[k]]


@njit(cache=True, inline="always")
def _rotate_token(x, out, t, cos, sin, in_a, in_b, out_a, out_b, keep, k_in, k_out):  # type: ignore[no-untyped-def]
    """Token ``t``, all heads: pass-through copy, then the rotations (float64, rounded once into ``out``).

    ``k_in``/``k_out`` in (1, 2): the maps are affine, ``in_a[j] = in_a[0] + k_in*j`` (likewise
    ``in_b``; ``out_*`` with ``k_out``). ``0``: gather through the index arrays.
    """
    if keep.shape[0] > 0:
        _copy_keep(x, out, t, keep)
    n = cos.shape[1]
    if k_in == 0 or k_out == 0:
        _rot_gather(x, out, t, cos, sin, in_a, in_b, out_a, out_b)
    elif k_in == 1 and k_out == 1 and in_a[0] == 0 and in_b[0] == n and out_a[0] == 0 and out_b[0] == n:
        _rot_half0(x, out, t, cos, sin, uint64(0), uint64(n), uint64(0), uint64(n))
    else:
        _rot_strided(x, out, t, cos, sin, uint64(in_a[0]), uint64(in_b[0]), uint64(out_a[0]), uint64(out_b[0]), k_in, k_out)


@njit(parallel=True, cache=True)
def tables_kernel(rows, freqs, axes, s, cos, sin, n_blocks):  # type: ignore[no-untyped-def]
    """``cos, sin [N, n]`` of every token (no sign flip)."""
    n_tok = cos.shape[0]
    nb = min(n_tok, n_blocks)
    for b in prange(nb):
        t0 = b * n_tok // nb
        t1 = (b + 1) * n_tok // nb
        for t in range(t0, t1):
            _fill_token(rows, t, freqs, axes, s, 1.0, cos[t], sin[t])


@njit(parallel=True, cache=True)
def rope_kernel(x, rows, freqs, axes, s, sign, in_a, in_b, out_a, out_b, k_in, k_out, keep, out, n_blocks):  # type: ignore[no-untyped-def]
    """Forward (``sign=1``) or backward (``sign=-1``, maps transposed) RoPE of ``x [N,H,D]`` into ``out``."""
    n_tok = x.shape[0]
    n = freqs.shape[0]
    nb = min(n_tok, n_blocks)
    for b in prange(nb):
        cos = np.empty((1, n), dtype=np.float64)
        sin = np.empty((1, n), dtype=np.float64)
        t0 = b * n_tok // nb
        t1 = (b + 1) * n_tok // nb
        for t in range(t0, t1):
            _fill_token(rows, t, freqs, axes, s, sign, cos[0], sin[0])
            _rotate_token(x, out, t, cos, sin, in_a, in_b, out_a, out_b, keep, k_in, k_out)


@njit(parallel=True, cache=True)
def apply_kernel(x, cos, sin, in_a, in_b, out_a, out_b, k_in, k_out, keep, out, n_blocks):  # type: ignore[no-untyped-def]
    """Rotate ``x [N,H,D]`` with given per-token tables ``cos, sin [N, n]`` into ``out``."""
    n_tok = x.shape[0]
    nb = min(n_tok, n_blocks)
    for b in prange(nb):
        t0 = b * n_tok // nb
        t1 = (b + 1) * n_tok // nb
        for t in range(t0, t1):
            _rotate_token(x, out, t, cos[t : t + 1], sin[t : t + 1], in_a, in_b, out_a, out_b, keep, k_in, k_out)
