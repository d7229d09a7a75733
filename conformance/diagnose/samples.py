"""A failing case's own data as samples of the operator: one complex number per (token, head, pair).

RoPE is linear in x and acts on every token by a block-diagonal map of 2x2 rotations
(docs/spec.md section 2). Writing a pair ``(a, b)`` as ``z = x_a + i x_b``, the spec's map is
``z_out = q z_in`` with ``q = s e^{i phi}`` (backward: ``s e^{-i phi}``). For every (token, head,
pair) a case gives ``z_in`` (its input), ``z_out`` (the backend's output) and ``q`` (the spec's,
read from the case's expected outputs, so it is exact modulo 2 pi even at position 2^31); then

    rel = z_out / (q z_in)          (1 for a correct output; |rel - 1| <= tol_rel within the bound)

``tol_rel`` is the judge's own bound (the per-element bounds of the pair, combined). From ``rel``:
the angle error ``delta = arg rel`` (forward convention: the backward pass's sign is undone) and the
gain ratio ``|rel|``. Heads (and, for ``cos_sin``, nothing else) are independent samples of the same
map: a head-independent rotation gives the same ``rel`` on every head of a token.

Channel maps: the samples can be read under another pair map (``pair_map_named``: pairs read as
``half`` or ``adjacent``, written as ``half`` or ``adjacent``, the rotary window at either end), and a
map is plausible when it conserves every pair's energy ``|z_out|^2 = g^2 |z_in|^2`` (a rotation
with a gain does, whatever its angle): :func:`energy_conserved`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from roperef.layout import PairMap, pair_axes, pair_map
from roperef.reference import two_product
from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from ..error_model.tolerance import position_rows

__all__ = ["PairSamples", "pair_samples", "channel_candidates", "energy_conserved", "wrap", "spec_angles", "case_seq_len"]

Arr = np.ndarray
TWO_PI = 2.0 * math.pi


def wrap(a: Arr) -> Arr:
    """Angles folded into ``[-pi, pi)``."""
    return (np.asarray(a, dtype=np.float64) + math.pi) % TWO_PI - math.pi


@dataclass
class PairSamples:
    """Samples of one case under one pair map (arrays ``[N tokens, H heads, n pairs]`` unless said)."""

    stage: str
    label: str  # the pair map: "spec", or "read half, write adjacent", ...
    zin: Arr
    zout: Arr
    q: Arr  # [N, n]: the spec's s e^{i phi} (backward: s e^{-i phi})
    tol: Arr  # allowed |z_out - q z_in|
    weight: Arr  # |z_in|^2 (0: the sample says nothing)
    sign: float  # +1, or -1 for backward (angles reported in the forward convention)
    pos: Arr | None  # [A, N] position rows per token (None for apply)
    axes: Arr  # [n] row of each pair
    w: Arr  # [n] spec frequencies (zeros for apply)
    s: float
    row: Arr  # [N] batch row or packed sequence of each token
    index: Arr  # [N] token index within its row
    grid: tuple[int, ...]

    @property
    def n_tokens(self) -> int:
        return int(self.zin.shape[0])

    @property
    def heads(self) -> int:
        return int(self.zin.shape[1])

    @property
    def n_pairs(self) -> int:
        return int(self.zin.shape[2])

    def rel(self) -> tuple[Arr, Arr]:
        """``(rel, tol_rel)``: ``z_out / (q z_in)`` and its allowed deviation (inf where undefined)."""
        den = self.q[:, None, :] * self.zin
        with np.errstate(all="ignore"):
            ok = (np.abs(den) > 0) & (self.weight > 0)
            rel = np.where(ok, self.zout / np.where(ok, den, 1.0), np.nan + 0j)
            tol = np.where(ok, self.tol / np.where(ok, np.abs(den), 1.0), np.inf)
        return rel, tol

    def phi(self) -> Arr:
        """``[N, n]``: the spec's angle in the forward convention, modulo 2 pi (exact to the case's rounding)."""
        return self.sign * np.angle(self.q)


def case_seq_len(case: GoldenCase) -> int:
    """The sequence length the protocol gives a case: its ``seq_len`` input, else ``max(position) + 1``."""
    if case.stage == "inv_freq":
        return int(np.asarray(case.arrays["seq_len"]))
    if "positions" not in case.arrays:
        return 1
    rows = position_rows(case.spec, case.arrays["positions"])
    return max(int(rows.max()) + 1, 1) if rows.size else 1


def spec_angles(pos_rows: Arr, w: Arr, axes: Arr) -> Arr:
    """``[N, n]``: ``p w`` for every token (rows ``[A, N]``) and pair, reduced modulo 2 pi from a two-term product."""
    p = pos_rows[axes].T.astype(np.float64)
    hi, lo = two_product(p, np.broadcast_to(w, p.shape))
    return wrap(wrap(hi) + lo)


def _token_coords(case: GoldenCase, grid: tuple[int, ...]) -> tuple[Arr, Arr]:
    n = int(np.prod(grid)) if grid else 1
    if len(grid) >= 2:
        t = grid[-1]
        idx = np.arange(n)
        return idx // t, idx % t
    if "cu_seqlens" in case.arrays:
        cu = np.asarray(case.arrays["cu_seqlens"], dtype=np.int64)
        idx = np.arange(n)
        row = np.searchsorted(cu, idx, side="right") - 1
        return row, idx - cu[row]
    return np.zeros(n, dtype=np.int64), np.arange(n)


def pair_map_named(spec: RopeSpec, read: str, write: str, start: int) -> PairMap:
    """Pairs read as ``read`` and written as ``write`` (``half``: (j, j+n), ``adjacent``: (2j, 2j+1)) in a
    window starting at channel ``start``."""
    n = spec.n_pairs
    j = np.arange(n, dtype=np.int64)
    maps = {"half": (start + j, start + n + j), "adjacent": (start + 2 * j, start + 2 * j + 1)}
    return PairMap(maps[read][0], maps[read][1], maps[write][0], maps[write][1])


def _read_write(spec: RopeSpec) -> tuple[str, str]:
    return ("half", "half") if spec.pairing == "half" else ("adjacent", "adjacent") if spec.pairing == "adjacent" else ("adjacent", "half")


def channel_candidates(spec: RopeSpec) -> list[tuple[str, PairMap]]:
    """The spec's pair map first, then every other (read, write, window end) combination (forward convention)."""
    r0, w0 = _read_write(spec)
    starts = [spec.rotary_start]
    if spec.resolved_rotary_dim < spec.head_dim:
        starts.append(spec.head_dim - spec.resolved_rotary_dim if spec.rotary_start == 0 else 0)
    out = [("spec", pair_map(spec))]
    for start in starts:
        for read in ("half", "adjacent"):
            for write in ("half", "adjacent"):
                if (read, write, start) == (r0, w0, spec.rotary_start):
                    continue
                where = "" if start == spec.rotary_start else f", rotary window at channels {start}-{start + spec.resolved_rotary_dim - 1}"
                out.append((f"read {read}, write {write}{where}", pair_map_named(spec, read, write, start)))
    return out


def pair_samples(case: GoldenCase, actual: Mapping[str, Arr], expected: Mapping[str, Arr], bound: Mapping[str, Arr],
                 w: Arr, s: float, pm: PairMap | None = None, label: str = "spec") -> PairSamples | None:
    """The samples of a ``cos_sin``, ``apply``, ``forward`` or ``backward`` case (None for other stages or
    a shape mismatch). ``pm`` (forward convention) replaces the spec's pair map for the inputs and outputs;
    ``q`` always comes from the spec's own map and the expected outputs."""
    spec, a, stage = case.spec, case.arrays, case.stage
    axes = pair_axes(spec)
    if stage == "cos_sin":
        cos, sin = (np.asarray(actual[k], dtype=np.float64) for k in ("cos", "sin"))
        ce, se = (np.asarray(expected[k], dtype=np.float64) for k in ("cos", "sin"))
        if cos.shape != ce.shape or sin.shape != se.shape:
            return None
        grid = ce.shape[:-1]
        n = ce.shape[-1]
        zout = (cos + 1j * sin).reshape(-1, 1, n)
        q = (ce + 1j * se).reshape(-1, n)
        zin = np.ones_like(zout)
        tol = np.hypot(bound["cos"], bound["sin"]).reshape(-1, 1, n)
        sign = 1.0
    elif stage in ("apply", "forward", "backward"):
        name, out = {"apply": ("x", "y"), "forward": ("x", "y"), "backward": ("grad", "grad_x")}[stage]
        x = np.asarray(a[name], dtype=np.float64)
        y = np.asarray(actual[out], dtype=np.float64)
        e = np.asarray(expected[out], dtype=np.float64)
        if y.shape != x.shape or e.shape != x.shape:
            return None
        grid = x.shape[:-2]
        own = pair_map(spec)
        cand = pm or own
        if stage == "backward":
            own, cand = own.transposed(), cand.transposed()
        heads = x.shape[-2]
        xf, yf, ef = (v.reshape(-1, heads, v.shape[-1]) for v in (x, y, e))
        b = np.asarray(bound[out], dtype=np.float64).reshape(xf.shape)
        zin0 = xf[..., own.in_a] + 1j * xf[..., own.in_b]
        zexp0 = ef[..., own.out_a] + 1j * ef[..., own.out_b]
        wgt0 = np.abs(zin0) ** 2
        with np.errstate(all="ignore"):
            q = np.sum(zexp0 * np.conj(zin0), axis=1) / np.sum(wgt0, axis=1)  # least squares over heads
        q = np.where(np.isfinite(q), q, 0.0)
        zin = xf[..., cand.in_a] + 1j * xf[..., cand.in_b]
        zout = yf[..., cand.out_a] + 1j * yf[..., cand.out_b]
        tol = np.hypot(b[..., cand.out_a], b[..., cand.out_b])
        sign = -1.0 if stage == "backward" else 1.0
    else:
        return None
    n_tok = zout.shape[0]
    pos = None
    if "positions" in a:
        pos = position_rows(spec, a["positions"], grid).reshape(-1, n_tok).astype(np.float64)
    row, index = _token_coords(case, grid)
    with np.errstate(all="ignore"):
        weight = np.where(np.isfinite(zout) & np.isfinite(zin), np.abs(zin) ** 2, 0.0)
    zout = np.where(np.isfinite(zout), zout, 0.0)
    if stage == "apply":
        w = np.zeros(spec.n_pairs)
    return PairSamples(stage, label, zin, zout, q, tol, weight, sign, pos, axes, np.asarray(w, dtype=np.float64), float(s),
                       row, index, tuple(grid))


def energy_conserved(sm: PairSamples, slack: float = 6.0) -> Arr:
    """``[N, H, n]`` bool: the sample's energy ratio ``|z_out|^2 / |z_in|^2`` equals its pair's median ratio
    within the bound (a rotation with any angle and a constant gain conserves it); False where undefined."""
    with np.errstate(all="ignore"):
        ratio = np.abs(sm.zout) / np.sqrt(sm.weight)
        tol = sm.tol / np.sqrt(sm.weight)
    good = (sm.weight > 0) & np.isfinite(ratio)
    flat = np.where(good, ratio, np.nan).reshape(-1, sm.n_pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pair without any sample: its median is NaN, said below
        med = np.nanmedian(flat, axis=0) if np.isfinite(flat).any() else np.zeros(sm.n_pairs)
    med = np.where(np.isfinite(med), med, 0.0)
    with np.errstate(all="ignore"):
        return good & (np.abs(ratio - med[None, None, :]) <= slack * tol + 1e-12 * np.maximum(med, 1.0)[None, None, :])
