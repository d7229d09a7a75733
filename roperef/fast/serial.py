"""Serial Numba kernels for small calls: the arithmetic of :mod:`roperef.fast.kernels`, compiled in a fraction of the time.

A call whose output is small (:data:`roperef.fast.SERIAL_MAX_ELEMENTS`: every golden and
generated case of ``roperef check``) gains nothing from threads and streaming stores, but
the parallel kernels cost seconds each to compile (Numba's parfor passes, the prefetch and
non-temporal store pipeline, one out-of-line rotation per layout). These two kernels are plain
loops, ``njit`` without ``parallel`` (measured cold compile: about a third of the parallel ones),
and do exactly the same operations in the same order::

    tables_serial:  for each token t, pair j:   hi, lo = TwoProduct(p, w_j)
                                                c, sn  = sincos(hi, lo)        (roperef.fast.sincos)
                                                cos[t, j] = c * s;  sin[t, j] = +-(sn * s)
    rotate_serial:  for each token t, head h, pair j (r = idx[t]):
                                                y_a = x_a * cos[r, j] - x_b * sin[r, j]
                                                y_b = x_b * cos[r, j] + x_a * sin[r, j]

so their results equal the parallel kernels' bit for bit (tested: tests/roperef/fast/test_fast_serial.py).
The rotation gathers through the pair-map index arrays (one loop for every layout) and copies
the pass-through channels ``keep`` unchanged; ``out`` (float32 or float64) is rounded once.
No ``fastmath``. ``cache=True``: compiled once per machine, loaded from the Numba cache after.
"""

from __future__ import annotations

from numba import njit

from .kernels import fill_token

__all__ = ["tables_serial", "rotate_serial"]


@njit(cache=True)
def tables_serial(rows, freqs, axes, s, sign, cos, sin):
    """``cos, sin [N, n]`` of every token, one after the other (``sign`` = -1.0 negates sin, as backward does)."""
    for t in range(cos.shape[0]):
        fill_token(rows, t, freqs, axes, s, sign, cos[t], sin[t])


@njit(cache=True)
def rotate_serial(x, cos, sin, idx, in_a, in_b, out_a, out_b, keep, out):
    """``out[t] = RoPE(x[t])`` for ``x, out [N, H, D]`` with table row ``idx[t]`` of ``cos, sin [U, n]``."""
    for t in range(x.shape[0]):
        r = idx[t]
        for h in range(x.shape[1]):
            for k in range(keep.shape[0]):
                out[t, h, keep[k]] = x[t, h, keep[k]]
            for j in range(cos.shape[1]):
                xa = float(x[t, h, in_a[j]])
                xb = float(x[t, h, in_b[j]])
                c = cos[r, j]
                sn = sin[r, j]
                out[t, h, out_a[j]] = xa * c - xb * sn
                out[t, h, out_b[j]] = xb * c + xa * sn
