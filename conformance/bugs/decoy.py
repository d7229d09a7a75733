"""A decoy: the reference computation with one bug built in, judged at the backend's precision.

A :class:`Decoy` describes the bug as changes to the reference pipeline (docs/spec.md
sections 2-5)::

    spec -> inv_freq(spec, seq_len), s -> positions -> angles p*w -> cos/sin tables (x s) -> rotation

Each step may be replaced (another spec, another frequency function, another length, other
position rows, another pair map, another attention factor) or followed by a rounding to a
low-precision dtype (positions, frequencies, angles, tables). :func:`run_decoy` computes the
buggy outputs *and their bound*: the case's own error model (docs/spec.md section 6, the
constants of :mod:`conformance.error_model.tolerance`) evaluated on the buggy computation at the
precision the backend declared, plus the rounding slack of every rounding inside the bug
(:mod:`conformance.bugs.rounding`): a float32 engine whose tables are rounded to bfloat16
lands on a neighbouring bfloat16 value wherever its float32 table is within its own error of
a rounding boundary, and the decoy allows exactly that.

For a rotated pair ``(a, b)`` the decoy bound is::

    s' (|x_a| + |x_b|) (c_out u_out + c_tab u_tab + u_ang |phi'| (c_ang + c_log |ln w'| + c_blend kappa)
                         + |p'| slack_w + slack_phi + slack_table) + floor

with the primes meaning "as the buggy engine computes them".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roperef.frequencies import base_inv_freq, estimate_inv_freq
from roperef.frequencies import inv_freq as ref_inv_freq
from roperef.layout import PairMap, pair_axes, pair_map
from roperef.reference import two_product
from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from ..error_model.conditioning import blend_conditioning
from ..error_model.tolerance import Resolved, position_rows
from .rounding import round_to, rounding_slack

__all__ = ["Decoy", "DecoyRun", "run_decoy", "budget", "protocol_seq_len", "decoy_inv_freq"]

Arr = np.ndarray


@dataclass(frozen=True)
class Decoy:
    """One bug (an instance of a bug class, with its parameter when the class has one)."""

    cls: str
    words: str
    param: Any = None
    spec: RopeSpec | None = None
    pairs: Callable[[RopeSpec], PairMap] | None = None
    rows: Callable[[Arr], Arr] | None = None
    seq_len: Callable[[int], int] | None = None
    freqs: Callable[[RopeSpec, int], tuple[Arr, float]] | None = None
    scale: Callable[[float], float] | None = None
    round_positions: str | None = None
    round_freqs: str | None = None
    round_angles: str | None = None
    round_tables: str | None = None
    only_first: bool = False
    reverse: bool = False

    @property
    def name(self) -> str:
        """The bug class id (a decoy is reported under its class; the parameter separately)."""
        return self.cls


@dataclass
class DecoyRun:
    """The buggy outputs of a case's stage and the per-element bound to compare them with."""

    outputs: dict[str, Arr]
    bound: dict[str, Arr]


def protocol_seq_len(case: GoldenCase) -> int:
    """The sequence length the protocol gives the case (``seq_len`` input, else ``max(position) + 1``)."""
    if case.stage == "inv_freq":
        return int(np.asarray(case.arrays["seq_len"]))
    rows = position_rows(case.spec, case.arrays["positions"])
    return max(int(rows.max()) + 1, 1) if rows.size else 1


def _log_w(w: Arr) -> Arr:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w > 0, np.abs(np.log(np.where(w > 0, w, 1.0))), 0.0)


@dataclass
class _Freqs:
    w: Arr
    s: float
    rel: Arr  # the backend's relative error of each w, in units (c_ang + c_log|ln w| + c_blend kappa)
    slack: Arr  # absolute rounding slack of each w (0 without a frequency rounding)


def decoy_inv_freq(case: GoldenCase, spec: RopeSpec, seq: int, estimate: bool = False) -> tuple[Arr, float]:
    """The frequencies of a decoy's ``spec`` at length ``seq``: exact (:func:`roperef.frequencies.inv_freq`,
    cached) unless ``estimate`` and the spec or length differ from the case's own; then the same
    formulas in float64 (:func:`roperef.frequencies.estimate_inv_freq`: a few ulp, ~30x cheaper
    than an exact evaluation). A parameter fit tries hundreds of thetas, factors and lengths per
    failing case with the estimate and re-evaluates its answer exactly (:mod:`.fit`)."""
    if estimate and not (spec == case.spec and seq == protocol_seq_len(case)):
        return estimate_inv_freq(spec, seq)
    return ref_inv_freq(spec, seq)


def _frequencies(case: GoldenCase, d: Decoy, spec: RopeSpec, r: Resolved, estimate: bool = False) -> _Freqs:
    seq = protocol_seq_len(case)
    if d.seq_len is not None:
        seq = int(d.seq_len(seq))
    w, s = d.freqs(spec, seq) if d.freqs is not None else decoy_inv_freq(case, spec, seq, estimate)
    w = np.asarray(w, dtype=np.float64)
    if d.scale is not None:
        s = float(d.scale(s))
    kappa = blend_conditioning(spec) if len(blend_conditioning(spec)) == len(w) else np.zeros_like(w)
    if d.freqs is not None and kappa.any():
        # a bug in the blend (ramp over 2j, a range from another length, ...) moves the blended
        # pairs: allow the case's worst conditioning (x4: the ramp may be twice as steep) on every
        # pair the buggy formula blends, as an engine computing that formula carries it
        w0 = base_inv_freq(spec.theta, int(spec.resolved_freq_dim), len(w))
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(w0 > 0, w / w0, 1.0)
        f = spec.scaling.given("factor")  # kappa > 0 only for a blending type (yarn, llama3): factor is required
        blended = (g < 1.0 - 1e-9) & (g > 1.0 / f + 1e-9)
        kappa = np.maximum(kappa, np.where(blended, 4.0 * kappa.max(), 0.0))
    rel = r.c_ang + r.c_log * _log_w(w) + r.c_blend * kappa
    slack = np.zeros_like(w)
    if d.round_freqs:
        slack = rounding_slack(d.round_freqs, w, np.abs(w) * r.u_ang * rel)
        w = round_to(d.round_freqs, w)
    return _Freqs(w, float(s), rel, slack)


def _tables(case: GoldenCase, d: Decoy, spec: RopeSpec, r: Resolved, grid: tuple[int, ...] | None,
            estimate: bool = False) -> tuple[Arr, Arr, Arr, Arr, float]:
    """``(cos, sin, coef, table_slack, s)``: buggy tables ``[*P, n]`` and, per (token, pair), the
    bound coefficient per unit of pair magnitude (angle and rounding terms, ``s`` included)."""
    f = _frequencies(case, d, spec, r, estimate)
    rows = position_rows(case.spec, case.arrays["positions"], grid)
    rows = np.asarray(d.rows(rows) if d.rows is not None else rows, dtype=np.float64)
    if d.round_positions:
        rows = round_to(d.round_positions, rows)
    axes = pair_axes(spec) if d.pairs is None else pair_axes(case.spec)
    with np.errstate(all="ignore"):
        p = np.moveaxis(rows, 0, -1)[..., axes]
        hi, lo = two_product(p, f.w)
        phi = np.abs(hi)
        err_phi = r.u_ang * phi * f.rel + np.abs(p) * f.slack
        if d.round_angles:
            err_phi = err_phi + rounding_slack(d.round_angles, hi, err_phi)
            hi, lo = round_to(d.round_angles, hi), np.zeros_like(hi)
        c, sn = np.cos(hi), np.sin(hi)
        cos = (c - (sn * lo + c * 0.5 * lo * lo)) * f.s
        sin = (sn + (c * lo - sn * 0.5 * lo * lo)) * f.s
        tslack = np.zeros_like(cos)
        if d.round_tables:
            e = abs(f.s) * (err_phi + 2.0 * r.u_ang)
            tslack = np.maximum(rounding_slack(d.round_tables, cos, e), rounding_slack(d.round_tables, sin, e))
            cos, sin = round_to(d.round_tables, cos), round_to(d.round_tables, sin)
    coef = abs(f.s) * (r.c_out * r.u_out + r.c_tab * r.u_tab + err_phi)
    return cos, sin, coef, tslack, f.s


def _pair_map(case: GoldenCase, d: Decoy, spec: RopeSpec, backward: bool) -> PairMap:
    pm = d.pairs(case.spec) if d.pairs is not None else pair_map(spec)
    return pm.transposed() if backward else pm


def _rotate(x: Arr, cos: Arr, sin: Arr, pm: PairMap, sign: float) -> Arr:
    c, s = cos[..., None, :], sign * sin[..., None, :]
    y = x.copy()
    with np.errstate(all="ignore"):
        y[..., pm.out_a] = x[..., pm.in_a] * c - x[..., pm.in_b] * s
        y[..., pm.out_b] = x[..., pm.in_b] * c + x[..., pm.in_a] * s
    return y


def _pair_bound(x: Arr, coef: Arr, pm: PairMap, floor: float) -> Arr:
    ax = np.abs(x)
    mag = (ax[..., pm.in_a] + ax[..., pm.in_b]) * coef[..., None, :]
    out = np.full(x.shape, floor, dtype=np.float64)
    out[..., pm.out_a] = mag + floor
    out[..., pm.out_b] = mag + floor
    return out


def _untouched_rows(case: GoldenCase, n_lead: int) -> slice | None:
    """The leading-axis slice an "only the first row/sequence rotated" bug leaves unrotated."""
    if "cu_seqlens" in case.arrays:
        return slice(int(np.asarray(case.arrays["cu_seqlens"])[1]), None)
    return slice(1, None) if n_lead >= 2 else None


def run_decoy(case: GoldenCase, d: Decoy, r: Resolved, estimate: bool = False) -> DecoyRun:
    """The outputs of ``case``'s stage computed with bug ``d``, and their bound at precision ``r``
    (``estimate``: a spec or length other than the case's own takes float64-estimated frequencies,
    see :func:`decoy_inv_freq`)."""
    spec = d.spec or case.spec
    a = case.arrays
    if case.stage == "inv_freq":
        f = _frequencies(case, d, spec, r, estimate)
        bw = np.abs(f.w) * (r.c_out * r.u_out + r.u_ang * f.rel) + f.slack + r.floor
        bs = abs(f.s) * (r.c_out * r.u_out + r.c_ang * r.u_ang) + r.floor
        return DecoyRun({"inv_freq": f.w, "attention_factor": np.asarray(f.s)}, {"inv_freq": bw, "attention_factor": np.asarray(bs)})
    if case.stage == "apply":
        x = np.asarray(a["x"], dtype=np.float64)
        cos, sin = np.asarray(a["cos"], dtype=np.float64), np.asarray(a["sin"], dtype=np.float64)
        if d.round_tables:
            cos, sin = round_to(d.round_tables, cos), round_to(d.round_tables, sin)
        pm = _pair_map(case, d, spec, False)
        y = _rotate(x, cos, sin, pm, -1.0 if d.reverse else 1.0)
        coef = np.broadcast_to(np.hypot(cos, sin) * (r.c_out * r.u_out + r.c_tab * r.u_tab), (*x.shape[:-2], cos.shape[-1]))
        return DecoyRun({"y": y}, {"y": _pair_bound(x, coef, pm, r.floor)})
    if case.stage == "cos_sin":
        cos, sin, coef, tslack, _ = _tables(case, d, spec, r, None, estimate)
        if d.reverse:
            sin = -sin
        b = coef + tslack + r.floor
        return DecoyRun({"cos": cos, "sin": sin}, {"cos": b, "sin": b})
    name, out = ("x", "y") if case.stage == "forward" else ("grad", "grad_x")
    x = np.asarray(a[name], dtype=np.float64)
    backward = case.stage == "backward"
    cos, sin, coef, tslack, _ = _tables(case, d, spec, r, x.shape[:-2], estimate)
    pm = _pair_map(case, d, spec, backward)
    y = _rotate(x, cos, sin, pm, -1.0 if backward != d.reverse else 1.0)
    bound = _pair_bound(x, coef + tslack, pm, r.floor)
    if d.only_first:
        rest = _untouched_rows(case, x.shape[0])
        if rest is not None:
            y[rest] = x[rest]
            bound[rest] = r.floor
    return DecoyRun({out: y}, {out: bound})


def budget(a: Mapping[str, Arr], b: Mapping[str, Arr], bound: Mapping[str, Arr]) -> float:
    """``max |a - b| / bound`` over every output; matching non-finite values count as equal,
    a non-finite value against a finite one (or a shape mismatch) as infinitely far."""
    worst = 0.0
    for name, bnd in bound.items():
        x = np.asarray(a[name], dtype=np.float64)
        y = np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            return float("inf")
        fx, fy = np.isfinite(x), np.isfinite(y)
        if (fx != fy).any():
            return float("inf")
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            err = np.where(fx & fy, np.abs(x - y), 0.0)
            ratio = np.where(err == 0, 0.0, err / np.asarray(bnd, dtype=np.float64))
        ratio = np.where(np.isnan(ratio), np.inf, ratio)
        if ratio.size:
            worst = max(worst, float(ratio.max()))
    return worst
