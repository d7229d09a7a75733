"""Numba kernels behind :mod:`roperef.fast` (compiled lazily, cached on disk).

The arithmetic is the reference's, operation for operation (see
:mod:`roperef.reference`): for position ``p`` (an exact float64) and inverse
frequency ``w``::

    hi, lo  = TwoProduct(p, w)                       # Dekker, Veltkamp split (2^27 + 1)
    c, sn   = sincos(hi, lo)                         # roperef.fast.sincos (IEEE + - * only)
    cos     = c * s
    sin     = sn * s
    y_a     = x_a*cos - x_b*sin
    y_b     = x_b*cos + x_a*sin

No ``fastmath`` (so no reassociation and no FMA contraction): the results are
bit-identical to NumPy's on every machine (no libm call anywhere).

Array conventions (all C-contiguous): ``x`` and ``out`` are ``[N, H, D]`` (tokens,
heads, head dim; float32 or float64 each, the arithmetic is float64 and ``out`` is
rounded once); ``rows`` int64 ``[A, N]``; ``axes`` int64 ``[n]`` (row of each pair);
``freqs`` float64 ``[n]``; tables ``[N, n]`` float64. The pair maps ``in_a, in_b,
out_a, out_b`` (int64 ``[n]``, absolute channels) come from :func:`roperef.layout.pair_map`;
``k_in``/``k_out`` (1, 2, or 0 for
"not affine") let the rotation loop index directly; ``keep`` (int64) lists the
pass-through channels, copied unchanged.

Parallelism and memory traffic: tokens are split into contiguous blocks, one
``prange`` iteration per block; each block owns a ``[n]`` cos/sin scratch (allocated
once per block, never per element), fills it once per token and reuses it across all
heads. The cos/sin of a token are pure computation (~100 floating-point operations per pair), so the
block runs a software pipeline: while it computes token ``t+1``'s cos/sin it prefetches
token ``t+2``'s ``x`` and, with ``stream=True`` (large, aligned outputs;
:func:`roperef.fast.streams`), writes the already rotated token ``t`` from a
``[H*D]`` scratch that stays in L1/L2 to ``out`` with 16-byte non-temporal stores (no
read-for-ownership of ``out``); each block ends with a store fence
(:mod:`roperef.fast.llvm`). None of this changes a value: the stored numbers are the
same either way (tested bit for bit).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from .llvm import prefetch, store_fence, stream16
from .sincos import sincos, two_product

__all__ = ["tables_kernel", "rope_kernel", "apply_kernel", "fill_token"]

_LINE_BYTES = 64  # cache line: the prefetch stride
# Token indices passed as typed int64 values, not literals: a literal argument would make
# Numba compile a second specialisation of every callee (measured: twice the cold compile).
_ZERO = np.int64(0)
_NONE = np.int64(-1)  # "no token" for _fill_token_overlapped's t_stream


@njit(cache=True, inline="always")
def _fill_pair(rows, t, j, freqs, axes, s, sign, cos, sin):
    """``cos[j], sin[j]`` of token ``t`` (``sign`` = -1.0 negates sin, as the backward pass does)."""
    p = float(rows[axes[j], t])
    hi, lo = two_product(p, freqs[j])
    c, sn = sincos(hi, lo)
    cos[j] = c * s
    sv = sn * s
    sin[j] = -sv if sign < 0.0 else sv


@njit(cache=True, inline="always")
def fill_token(rows, t, freqs, axes, s, sign, cos, sin):
    """All ``n`` pairs of token ``t``."""
    for j in range(freqs.shape[0]):
        _fill_pair(rows, t, j, freqs, axes, s, sign, cos, sin)


@njit(cache=True, inline="always")
def _fill_token_overlapped(rows, t, freqs, axes, s, sign, cos, sin, xf, t_prefetch, m, bf, of, t_stream):
    """:func:`fill_token`, with the memory traffic of neighbouring tokens spread over its pairs.

    The cos/sin of one token are pure computation; alongside pair ``j`` this issues the
    ``j``-th ``1/n`` of (1) prefetches of the ``m`` elements of token ``t_prefetch`` of
    ``xf`` (flat ``x``) and (2) when ``t_stream >= 0``, the non-temporal stores of the
    rotated token ``t_stream`` from the scratch ``bf`` (flat, ``m`` elements) into ``of``
    (flat ``out``), so reads, writes and arithmetic overlap. Neither changes a value.
    """
    n = freqs.shape[0]
    step = max(1, _LINE_BYTES // xf.itemsize)
    lines = (m + step - 1) // step
    w = 16 // of.itemsize
    chunks = m // w if t_stream >= 0 else 0
    # Pair j takes lines // n lines (one more while j < lines % n), likewise chunks:
    # running indices, no division inside the loop.
    line_q, line_r = lines // n, lines % n
    chunk_q, chunk_r = chunks // n, chunks % n
    line = t_prefetch * m
    src = 0
    dst = t_stream * m
    for j in range(n):
        line_end = line + (line_q + (1 if j < line_r else 0)) * step
        while line < line_end:
            prefetch(xf, line)  # type: ignore[call-arg]  # numba: an @intrinsic is called without its typingctx inside jitted code
            line += step
        src_end = src + (chunk_q + (1 if j < chunk_r else 0)) * w
        while src < src_end:
            stream16(bf, src, of, dst)  # type: ignore[call-arg]  # numba: an @intrinsic is called without its typingctx inside jitted code
            src += w
            dst += w
        _fill_pair(rows, t, j, freqs, axes, s, sign, cos, sin)


# Rotation of all heads of one token: x[t] -> y[u] (y is ``out`` with u = t, or the
# [1, H, D] streaming scratch with u = 0). Each layout has its own small, out-of-line
# function: compiled alone, its loop nest stays simple enough for LLVM to vectorise
# (measured: 2-3x slower when the same loops sit behind branches inside the parallel
# kernel). Elements are addressed x[t, h, j] directly (measured 8-12% faster than
# per-head views). ``cos, sin`` are ``[n]``; ``ra, rb, wa, wb`` are the first
# read/write channels of the pair maps (unsigned: no negative-index wraparound).
# The arithmetic is identical in every variant.


@njit(cache=True)
def _rot_half0(x, t, y, u, cos, sin):
    """``half`` with the window at channel 0: pairs ``(j, j+n)`` read and written."""
    n = cos.shape[0]
    for h in range(x.shape[1]):
        for j in range(n):
            xa = float(x[t, h, j])
            xb = float(x[t, h, j + n])
            c = cos[j]
            sn = sin[j]
            y[u, h, j] = xa * c - xb * sn
            y[u, h, j + n] = xb * c + xa * sn


@njit(cache=True)
def _rot_strided(x, t, y, u, cos, sin, ra, rb, wa, wb, k_in, k_out):
    """Affine maps: read ``(ra + k_in*j, rb + k_in*j)``, write ``(wa + k_out*j, wb + k_out*j)``."""
    n = uint64(cos.shape[0])
    ki = uint64(k_in)
    ko = uint64(k_out)
    for h in range(x.shape[1]):
        for j in range(n):
            xa = float(x[t, h, ra + ki * j])
            xb = float(x[t, h, rb + ki * j])
            c = cos[j]
            sn = sin[j]
            y[u, h, wa + ko * j] = xa * c - xb * sn
            y[u, h, wb + ko * j] = xb * c + xa * sn


@njit(cache=True)
def _rot_gather(x, t, y, u, cos, sin, in_a, in_b, out_a, out_b):
    """Any pair map, through the index arrays."""
    for h in range(x.shape[1]):
        for j in range(cos.shape[0]):
            xa = float(x[t, h, in_a[j]])
            xb = float(x[t, h, in_b[j]])
            c = cos[j]
            sn = sin[j]
            y[u, h, out_a[j]] = xa * c - xb * sn
            y[u, h, out_b[j]] = xb * c + xa * sn


@njit(cache=True)
def _copy_keep(x, t, y, u, keep):
    """Pass-through channels of token ``t``, all heads (a float32 -> float64 or same-type copy is exact)."""
    for h in range(x.shape[1]):
        for k in range(keep.shape[0]):
            y[u, h, keep[k]] = x[t, h, keep[k]]


@njit(cache=True, inline="always")
def _rotate_token(x, t, y, u, cos, sin, in_a, in_b, out_a, out_b, keep, k_in, k_out):
    """``y[u] = RoPE(x[t])``, all heads: pass-through copy, then the rotations (float64, rounded once).

    ``k_in``/``k_out`` in (1, 2): the maps are affine, ``in_a[j] = in_a[0] + k_in*j`` (likewise
    ``in_b``; ``out_*`` with ``k_out``). ``0``: gather through the index arrays.
    """
    if keep.shape[0] > 0:
        _copy_keep(x, t, y, u, keep)
    n = cos.shape[0]
    if k_in == 0 or k_out == 0:
        _rot_gather(x, t, y, u, cos, sin, in_a, in_b, out_a, out_b)
    elif k_in == 1 and k_out == 1 and in_a[0] == 0 and in_b[0] == n and out_a[0] == 0 and out_b[0] == n:
        _rot_half0(x, t, y, u, cos, sin)
    else:
        _rot_strided(x, t, y, u, cos, sin, uint64(in_a[0]), uint64(in_b[0]), uint64(out_a[0]), uint64(out_b[0]), k_in, k_out)


@njit(cache=True)
def _stream_token(bf, of, t):
    """``of[t*m : (t+1)*m] = bf`` (``m = bf.size``) with 16-byte non-temporal stores.

    Needs ``of``'s address at ``t*m`` 16-byte aligned and ``m * itemsize`` a multiple of 16
    (:func:`roperef.fast.streams` checks both before choosing this path).
    """
    m = bf.size
    base = t * m
    for i in range(0, m, 16 // bf.itemsize):
        stream16(bf, i, of, base + i)  # type: ignore[call-arg]  # numba: an @intrinsic is called without its typingctx inside jitted code


@njit(parallel=True, cache=True)
def tables_kernel(rows, freqs, axes, s, sign, cos, sin, n_blocks):
    """``cos, sin [N, n]`` of every token (``sign`` = -1.0 negates sin, as the backward pass does)."""
    n_tok = cos.shape[0]
    nb = min(n_tok, n_blocks)
    for b in prange(nb):
        t0 = b * n_tok // nb
        t1 = (b + 1) * n_tok // nb
        for t in range(t0, t1):
            fill_token(rows, t, freqs, axes, s, sign, cos[t], sin[t])


@njit(parallel=True, cache=True)
def rope_kernel(x, rows, freqs, axes, s, sign, in_a, in_b, out_a, out_b, k_in, k_out, keep, out, n_blocks, stream):
    """Forward (``sign=1``) or backward (``sign=-1``, maps transposed) RoPE of ``x [N,H,D]`` into ``out``.

    ``stream``: write ``out`` with non-temporal stores through a per-block token scratch.
    Each block runs a software pipeline over its tokens ``t0 <= t < t1``; step ``t``: rotate
    token ``t`` (its cos/sin are ready) into the scratch (``stream``) or straight into
    ``out``; then compute the cos/sin of token ``t+1`` while prefetching token ``t+2`` and
    streaming the rotated token ``t`` out of the scratch.
    """
    n_tok = x.shape[0]
    n = freqs.shape[0]
    m = x.shape[1] * x.shape[2]
    nb = min(n_tok, n_blocks)
    xf = x.reshape(x.size)
    of = out.reshape(out.size)
    for b in prange(nb):
        table = np.empty((2, n), dtype=np.float64)
        bf = np.empty(m if stream else 0, dtype=out.dtype)
        y = bf.reshape((1, x.shape[1], x.shape[2])) if stream else out  # the scratch (row 0) or out (row t)
        t0 = b * n_tok // nb
        t1 = (b + 1) * n_tok // nb
        for t in range(t0 - 1, t1):  # t = t0 - 1: only the prologue, the cos/sin of t0
            if t >= t0:
                _rotate_token(x, t, y, _ZERO if stream else t, table[0], table[1], in_a, in_b, out_a, out_b, keep, k_in, k_out)
            if t + 1 < t1:
                t_stream = t if stream and t >= t0 else _NONE
                _fill_token_overlapped(rows, t + 1, freqs, axes, s, sign, table[0], table[1], xf, min(t + 2, n_tok - 1), m, bf, of, t_stream)
            elif stream:
                _stream_token(bf, of, t)
        if stream:
            store_fence()  # type: ignore[call-arg]  # numba: an @intrinsic is called without its typingctx inside jitted code


@njit(parallel=True, cache=True)
def apply_kernel(x, cos, sin, idx, in_a, in_b, out_a, out_b, k_in, k_out, keep, out, n_blocks, stream):
    """Rotate ``x [N,H,D]`` with tables ``cos, sin [U, n]`` (token ``t`` uses row ``idx[t]``) into ``out``.

    ``stream`` as in :func:`rope_kernel`. A pure streaming pass (the tables stay in cache).
    """
    n_tok = x.shape[0]
    nb = min(n_tok, n_blocks)
    of = out.reshape(out.size)
    for b in prange(nb):
        bf = np.empty(x.shape[1] * x.shape[2] if stream else 0, dtype=out.dtype)
        y = bf.reshape((1, x.shape[1], x.shape[2])) if stream else out  # the scratch (row 0) or out (row t)
        t0 = b * n_tok // nb
        t1 = (b + 1) * n_tok // nb
        for t in range(t0, t1):
            r = idx[t]
            _rotate_token(x, t, y, _ZERO if stream else t, cos[r], sin[r], in_a, in_b, out_a, out_b, keep, k_in, k_out)
            if stream:
                _stream_token(bf, of, t)
        if stream:
            store_fence()  # type: ignore[call-arg]  # numba: an @intrinsic is called without its typingctx inside jitted code
