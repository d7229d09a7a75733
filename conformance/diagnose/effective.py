"""Effective positions and frequencies: what ``p`` and ``w`` the measured angles correspond to.

The angle a backend applied to pair ``j`` of a unit (a token, or one head of a token) is
``psi = phi + delta`` (``phi = p w_j`` the spec's, ``delta`` the measured error, both modulo 2 pi).

- *Effective position* of a unit, per position row: the ``p'`` with ``psi_j = w_j p'`` on every pair
  of that row, assuming the spec's frequencies. ``p' - p`` is read from the lowest frequency first
  (where it cannot wrap) and refined through the higher ones (each step at most doubles the
  frequency's resolving power): :func:`effective_positions`. It is *consistent* when every pair's
  residual is within its angle tolerance. Where the unwrap cannot reach (``|p' - p| w_min > pi``) a
  list of candidate positions (0, the case's own positions) is tried directly: :func:`match_positions`.
- *Effective frequency* of a pair: the ``w'`` with ``psi = w' p + c`` over the tokens, assuming the
  spec's positions, read from the smallest position gap and unwrapped through larger gaps:
  :func:`pair_frequency`.
"""

from __future__ import annotations

import math

import numpy as np

from roperef.reference import two_product

from .samples import TWO_PI, wrap

__all__ = ["effective_positions", "match_positions", "pair_frequency", "angle_of"]

Arr = np.ndarray


def angle_of(p: Arr, w: Arr) -> Arr:
    """``p w`` modulo 2 pi from a two-term product (``p`` and ``w`` broadcast)."""
    p, w = np.broadcast_arrays(np.asarray(p, dtype=np.float64), np.asarray(w, dtype=np.float64))
    hi, lo = two_product(p, w)
    return wrap(wrap(hi) + lo)


def _unwrap(delta: Arr, w: Arr, cols: Arr, start: Arr) -> Arr:
    """Greedy unwrap of ``delta [U, n]`` through the pairs ``cols`` (ascending frequency) from ``start [U]``."""
    d = np.array(start, dtype=np.float64, copy=True)
    num, den = np.zeros_like(d), 0.0
    for j in cols:
        wj = w[j]
        dj = np.where(np.isfinite(delta[:, j]), delta[:, j], 0.0)
        u = d * wj + wrap(dj - d * wj)
        num = num + u * wj
        den = den + wj * wj
        d = num / den
    return d


def _consistent(delta: Arr, tol: Arr, w: Arr, cols: Arr, d: Arr, slack: float) -> Arr:
    resid = np.abs(wrap(delta[:, cols] - d[:, None] * w[None, cols]))
    t = tol[:, cols]
    ok = resid <= slack * t + slack * np.median(t, axis=1, keepdims=True) + 1e-9
    return np.isfinite(delta[:, cols]).all(axis=1) & ok.all(axis=1)


def _branches(delta: Arr, tol: Arr, w: Arr, kmax: int, slack: float) -> tuple[Arr, Arr]:
    """Every branch ``k`` in ``[-kmax, kmax]`` of the lowest frequency ``w[0]`` at once (columns ascending in
    frequency): for each unit, the consistent branch of smallest ``|k|`` and whether there is one."""
    ks = np.array(sorted(range(-kmax, kmax + 1), key=abs), dtype=np.float64)
    d = (delta[:, :1] + TWO_PI * ks[None, :]) / w[0]  # [M, K]
    num = np.zeros_like(d)
    den = 0.0
    for j in range(w.size):
        u = d * w[j] + wrap(delta[:, j:j + 1] - d * w[j])
        num += u * w[j]
        den += w[j] * w[j]
        d = num / den
    med = np.median(tol, axis=1, keepdims=True)
    ok = np.ones(d.shape, dtype=bool)
    for j in range(w.size):
        ok &= np.abs(wrap(delta[:, j:j + 1] - d * w[j])) <= slack * tol[:, j:j + 1] + slack * med + 1e-9
    hit = np.asarray(ok.any(axis=1), dtype=bool)
    first = np.argmax(ok, axis=1)
    rows = np.arange(d.shape[0])
    return np.where(hit, d[rows, first], np.nan), hit


def effective_positions(delta: Arr, tol: Arr, w: Arr, axes: Arr, n_axes: int, slack: float = 6.0,
                        reach: float = 0.0) -> tuple[Arr, Arr, Arr]:
    """``(dp [U, A], consistent [U, A], sigma [U, A])``: ``p' - p`` per unit and position row, from angle errors
    ``delta [U, n]`` (allowed ``tol [U, n]``), and how precisely it is known (``1 / sqrt(sum (w_j / tol_j)^2)``:
    at position 2^31 in float32 only the lowest frequencies resolve a position, to a few units); NaN / False
    for a row without a rotating pair.

    ``reach``: how far ``p' - p`` may be (e.g. twice the largest |position|): units the unwrap from the
    lowest frequency leaves inconsistent are tried on every branch ``(delta_min + 2 pi k) / w_min`` within it
    (at most 4001 branches)."""
    units = delta.shape[0]
    dp = np.full((units, n_axes), np.nan)
    good = np.zeros((units, n_axes), dtype=bool)
    sigma = np.full((units, n_axes), np.inf)
    for ax in range(n_axes):
        cols = np.nonzero((axes == ax) & (w > 0))[0]
        if cols.size == 0:
            continue
        cols = cols[np.argsort(w[cols], kind="stable")]
        with np.errstate(divide="ignore", invalid="ignore"):
            info = np.sum(np.where(np.isfinite(tol[:, cols]) & (tol[:, cols] > 0), (w[None, cols] / tol[:, cols]) ** 2, 0.0), axis=1)
            sigma[:, ax] = np.where(info > 0, 1.0 / np.sqrt(info), np.inf)
        d = _unwrap(delta, w, cols, np.zeros(units))
        ok = _consistent(delta, tol, w, cols, d, slack)
        w0 = w[cols[0]]
        kmax = min(2000, int(math.ceil(reach * w0 / TWO_PI)) + 1) if reach > 0 else 0
        miss = np.nonzero(~ok & np.isfinite(delta[:, cols]).all(axis=1))[0]
        if kmax > 1 and miss.size:
            d[miss], ok[miss] = _branches(delta[miss][:, cols], tol[miss][:, cols], w[cols], kmax, slack)
        dp[:, ax] = d
        good[:, ax] = ok
    return dp, good, sigma


MATCH_BLOCK_ELEMENTS = 1 << 22
""":func:`match_positions` compares at most this many (unit, candidate, pair) residuals at once (32 MiB a block)."""
MATCH_MAX_ELEMENTS = 1 << 27
"""... and at most this many in all: past it, an evenly spaced subset of the units is matched and the others stay
unknown (-1), so a case of 4097 tokens with 4097 candidate positions costs seconds, not gigabytes."""


def match_positions(psi: Arr, tol: Arr, w: Arr, axes: Arr, n_axes: int, candidates: Arr, slack: float = 6.0) -> Arr:
    """``[U, A]``: the index into ``candidates`` of a position whose angles ``w_j c`` equal the unit's
    ``psi [U, n]`` on every pair of the row (of those, the one with the smallest worst residual in units of the
    tolerance, when it is at most half the next one's), or -1 (none, or not compared: the work is bounded by
    :data:`MATCH_MAX_ELEMENTS`, in blocks of :data:`MATCH_BLOCK_ELEMENTS`)."""
    units = psi.shape[0]
    out = np.full((units, n_axes), -1, dtype=np.int64)
    cand = np.asarray(candidates, dtype=np.float64)
    if cand.size == 0 or units == 0:
        return out
    for ax in range(n_axes):
        cols = np.nonzero((axes == ax) & (w > 0))[0]
        if cols.size == 0:
            continue
        pred = angle_of(cand[:, None], w[None, cols])  # [C, k]
        per_unit = cand.size * cols.size
        chosen = np.arange(units)
        if units * per_unit > MATCH_MAX_ELEMENTS:
            chosen = np.unique(np.linspace(0, units - 1, max(1, MATCH_MAX_ELEMENTS // per_unit)).astype(np.int64))
        block = max(1, MATCH_BLOCK_ELEMENTS // per_unit)
        for start in range(0, chosen.size, block):
            rows = chosen[start:start + block]
            res = np.abs(wrap(psi[rows][:, None, cols] - pred[None]))  # [u, C, k]
            t = tol[rows][:, None, cols]
            ok = (res <= slack * t + 1e-9).all(axis=2) & np.isfinite(psi[rows][:, cols]).all(axis=1)[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                worst = np.where(ok, np.max(res / np.maximum(t, 1e-300), axis=2), np.inf)
            order = np.sort(worst, axis=1)
            second = order[:, 1] if order.shape[1] > 1 else np.full(rows.size, np.inf)
            hit = ok.any(axis=1) & (order[:, 0] <= 0.5 * second)  # one candidate clearly best
            out[rows[hit], ax] = np.argmin(worst[hit], axis=1)
    return out


def pair_frequency(p: Arr, psi: Arr, tol: Arr, prior: float, slack: float = 6.0) -> tuple[float, float, float, bool]:
    """``(w', sigma_w, intercept, consistent)`` of one pair from its tokens' positions ``p`` and angles ``psi``
    (``prior``: the spec's frequency, which picks the branch of the first difference)."""
    keep = np.isfinite(psi) & np.isfinite(p)
    p, psi, tol = p[keep], psi[keep], tol[keep]
    order = np.argsort(p, kind="stable")
    p, psi, tol = p[order], psi[order], tol[order]
    gaps = np.diff(p)
    nz = np.nonzero(gaps > 0)[0]
    if nz.size == 0:
        return math.nan, math.nan, math.nan, False
    k = int(nz[np.argmin(gaps[nz])])
    g = gaps[k]
    w = float(wrap(np.asarray(psi[k + 1] - psi[k]))) / g
    w += TWO_PI / g * round((prior - w) * g / TWO_PI)
    dp = p - p[k]
    dpsi = psi - psi[k]
    adp = np.abs(dp)
    reach = max(float(g), 1.0)
    top = float(adp.max())
    while True:
        reach = min(2.0 * reach, top)
        sel = (adp > 0) & (adp <= reach)
        if sel.any():
            u = w * dp[sel] + wrap(dpsi[sel] - w * dp[sel])
            w = float(np.sum(u * dp[sel]) / np.sum(dp[sel] ** 2))
        if reach >= top:
            break
    res = wrap(dpsi - w * dp)
    c = float(np.angle(np.mean(np.exp(1j * (psi - w * p)))))
    noise = float(np.median(tol)) * math.sqrt(2.0)
    sigma_w = noise / math.sqrt(float(np.sum(dp**2)) + 1e-300)
    consistent = bool(np.all(np.abs(res) <= slack * tol + slack * float(np.median(tol)) + 1e-9))
    return w, max(sigma_w, 1e-300), c, consistent
