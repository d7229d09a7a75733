"""Precision apart from meaning: the IMPRECISE verdict.

A FAIL whose budget is at most :data:`MAX_FACTOR` is tested against *precision mechanisms*: each
is a model of an engine that computes the spec's operator exactly as meant, but less accurately
than its declaration says. A mechanism gives the verdict only when its model, with its parameter
fitted and bounded by what rounding can produce, reproduces the backend's output within the
declared bound (the same test that names a catalogue decoy, :mod:`conformance.bugs.decoy`):

``frequency-drift``
    relative frequency error growing linearly with the pair index: ``w'_j = w_j (1 + j eps)`` with
    ``|eps| <= 2 u_ang`` (pair 0 exact). This is ggml's (llama.cpp's) frequencies: a float32
    ``theta_scale = theta^(-2/d)`` raised to the pair index by repeated multiplication
    (about 36 u at pair 63).
``angle-growth``
    an angle error proportional to the angle on every pair: ``w'_j = w_j (1 + eps)`` with
    ``|eps| <= 4 c_ang u_ang`` (a sin/cos whose argument reduction loses accuracy with ``|phi|``),
    said only when the samples over their bound follow the same law as all samples, and no integer
    position offset can explain it (``4 eps p < 1/2``) or those samples span a factor 2 in position
    (an offset k on tokens near p is a uniform relative angle error k/p on a narrow range of positions).
``rounding``
    an error that does not grow with the angle (no pair's angle errors follow its angle: a frequency
    off, or a pair left unrotated, gives errors that do, even when they are as small as a rounding),
    within 4x the declared rounding terms ``c_out u_out + c_tab u_tab`` (tables or outputs rounded more
    coarsely than declared).

A semantic bug (a wrong theta, a shifted position, a dropped factor, ...) moves pair 0, or grows
with the position, far past these envelopes, so it stays a FAIL; a catalogue decoy other than a
rounding class that also reproduces the output keeps the case a FAIL too (the caller checks).

The verdict names the mechanism, what was measured, and the profile constants (``--tol KEY=VALUE``)
or declarations under which the case would pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq

from ..bugs.decoy import Decoy, budget, run_decoy
from ..cases.case import GoldenCase
from ..error_model.expected import divide_rotated, expected_and_bounds
from ..error_model.tolerance import Resolved
from .findings import Finding
from .samples import case_seq_len, pair_samples

__all__ = ["MAX_FACTOR", "PrecisionVerdict", "precision_verdict", "ROUNDING_CLASSES"]

Arr = np.ndarray
#: a FAIL more than this many times over its bound is never IMPRECISE
MAX_FACTOR = 8.0
_DRIFT = 2.0  # |eps| <= 2 u_ang per pair index
_GROWTH = 4.0  # |eps| <= 4 c_ang u_ang
_ROUNDING = 4.0  # error <= 4x the declared rounding terms
#: catalogue classes that are themselves roundings (a match by one of them does not contradict a precision verdict)
ROUNDING_CLASSES = frozenset({"tables:bf16", "tables:fp16", "angles:bf16", "inv_freq:bf16", "inv_freq:fp16"})


@dataclass
class PrecisionVerdict:
    """A precision mechanism that reproduces a FAIL within its bound."""

    mechanism: str
    words: str
    model_budget: float
    measured: dict[str, float]
    passes_with: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "words": self.words, "model_budget": self.model_budget,
                "measured": dict(self.measured), "passes_with": list(self.passes_with)}

    def finding(self) -> Finding:
        return Finding("precision", self.words, self.mechanism, {}, self.measured, None)


def _model_budget(case: GoldenCase, actual: Mapping[str, Arr], r: Resolved, w_model: Arr, s: float, divisor: float) -> float:
    d = Decoy("precision", "precision model", freqs=lambda spec, seq: (w_model, s))
    with np.errstate(all="ignore"):
        run = run_decoy(case, d, r)
    out, bnd = run.outputs, run.bound
    if divisor != 1.0:
        out, bnd = divide_rotated(case, out, divisor), divide_rotated(case, bnd, divisor)
    return budget(actual, out, bnd)


def _angle_errors(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], bnd: Mapping[str, Arr],
                  w: Arr, s: float) -> tuple[Arr, Arr, Arr, Arr, Arr] | None:
    """``(delta, phi_abs, j, |p|, weight)`` per informative (token, pair) sample, pooled over heads: only samples
    whose allowed angle error is below 0.5 rad (elsewhere the measured angle may wrap), weighted by 1/tol^2."""
    sm = pair_samples(case, actual, exp, bnd, w, s)
    if sm is None or sm.pos is None:
        return None
    rel, tol = sm.rel()
    wgt = np.where(np.isfinite(rel), sm.weight, 0.0)
    with np.errstate(all="ignore"):
        pooled = np.sum(np.where(wgt > 0, rel * wgt, 0), axis=1) / np.sum(wgt, axis=1)
        ptol = np.sqrt(np.sum(np.where(wgt > 0, (tol * wgt) ** 2, 0), axis=1)) / np.sum(wgt, axis=1)
    ok = np.isfinite(pooled) & np.isfinite(ptol) & (ptol < 0.5) & (ptol > 0)
    delta = sm.sign * np.angle(pooled)
    p = sm.pos[sm.axes].T  # [N, n]
    phi = p * w[None, :]
    j = np.broadcast_to(np.arange(w.size, dtype=np.float64), phi.shape)
    return delta[ok], phi[ok], j[ok], np.abs(p[ok]), 1.0 / ptol[ok] ** 2


def _needed(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], caps: Any, r: Resolved, knob: str) -> float | None:
    """The smallest value of profile constant ``knob`` under which the case passes (the others unchanged)."""
    zero: dict[str, Any] = {knob: 0.0}
    one: dict[str, Any] = {knob: 1.0}
    b0 = expected_and_bounds(case, caps, replace(r, **zero))[1]
    b1 = expected_and_bounds(case, caps, replace(r, **one))[1]
    need = 0.0
    for name, e in exp.items():
        err = np.abs(np.asarray(actual[name], dtype=np.float64) - e)
        slope = np.asarray(b1[name], dtype=np.float64) - np.asarray(b0[name], dtype=np.float64)
        over = err > np.asarray(b0[name], dtype=np.float64)
        if not over.any():
            continue
        if np.any(over & (slope <= 0)):
            return None
        with np.errstate(all="ignore"):
            need = max(need, float(np.max((err[over] - b0[name][over]) / slope[over])))
    return need


def _up(v: float) -> str:
    """``v`` rounded up to 2 significant digits."""
    if v <= 0:
        return "0"
    e = math.floor(math.log10(v)) - 1
    return f"{math.ceil(v / 10**e) * 10**e:.3g}"


def _passes_with(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], caps: Any, r: Resolved,
                 knobs: Sequence[str], hints: Sequence[str]) -> list[str]:
    out = []
    for knob in knobs:
        v = _needed(case, actual, exp, caps, r, knob)
        current = getattr(r, knob)
        if v is not None and v > current:
            out.append(f"--tol {knob}={_up(v * 1.0001)} (profile constant {knob}, now {current:g})")
    for h in hints:
        if "would PASS if the backend declared" in h:
            out.append(h.split(" (budget")[0].replace("this FAIL would PASS if the backend declared", "the declaration"))
    return out


def precision_verdict(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], bnd: Mapping[str, Arr], r: Resolved,
                      caps: Any, fail_budget: float, divisor: float = 1.0, hints: Sequence[str] = (),
                      verify_growth: bool = True) -> PrecisionVerdict | None:
    """The precision mechanism that reproduces this FAIL (see the module docstring), or None. ``verify_growth``
    False: an angle growth is accepted where a position offset could explain it as well (to say that the two
    cannot be told apart on this case, never to give the verdict)."""
    if not (1.0 < fail_budget <= MAX_FACTOR) or case.stage not in ("inv_freq", "cos_sin", "apply", "forward", "backward"):
        return None
    for name in exp:
        if not np.all(np.isfinite(np.asarray(actual[name], dtype=np.float64))):
            return None
    with np.errstate(all="ignore"):
        return (_drift(case, actual, exp, bnd, r, caps, divisor, hints)
                or _growth(case, actual, exp, bnd, r, caps, divisor, hints, verify_growth)
                or _rounding(case, actual, exp, bnd, r, caps, hints))


def _drift(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], bnd: Mapping[str, Arr], r: Resolved, caps: Any,
           divisor: float, hints: Sequence[str]) -> PrecisionVerdict | None:
    if case.stage == "apply" or r.u_ang <= 0:
        return None
    w, s = inv_freq(case.spec, case_seq_len(case))
    jj = np.arange(w.size, dtype=np.float64)
    if case.stage == "inv_freq":
        got = np.asarray(actual["inv_freq"], dtype=np.float64)
        pos = w > 0
        e = np.where(pos, got / np.where(pos, w, 1.0) - 1.0, 0.0)
        den = float(np.sum(jj[pos] ** 2))
        if den <= 0:
            return None
        eps = float(np.sum(jj[pos] * e[pos]) / den)
        model = w * (1.0 + jj * eps)
        mb = float(np.max(np.abs(got - model) / np.asarray(bnd["inv_freq"], dtype=np.float64)))
        sa = np.asarray(actual["attention_factor"], dtype=np.float64)
        mb = max(mb, float(np.abs(sa - exp["attention_factor"]) / bnd["attention_factor"]))
    else:
        ae = _angle_errors(case, actual, exp, bnd, w, s)
        if ae is None:
            return None
        delta, phi, j, _p, wt = ae
        x = phi * j
        den = float(np.sum(wt * x * x))
        if den <= 0:
            return None
        eps = float(np.sum(wt * delta * x) / den)

        best = math.inf
        for f in (1.0, 0.9, 1.1, 0.75, 1.25):
            best = min(best, _model_budget(case, actual, r, w * (1.0 + jj * eps * f), s, divisor))
            if best <= 1.0:
                eps *= f
                break
        mb = best
    if not (abs(eps) <= _DRIFT * r.u_ang and mb <= 1.0 and abs(eps) > 0):
        return None
    top = int(w.size - 1)
    units = abs(eps) * top / r.u_ang
    words = (f"IMPRECISE (frequency-drift): the relative frequency error grows linearly with the pair index, "
             f"{units:.3g} u at pair {top} ({eps / r.u_ang:+.3g} u per pair, u = unit roundoff of {r.angle_dtype}): frequencies "
             "computed as a rounded theta_scale = theta^(-2/d) raised to the pair index by repeated multiplication (as ggml "
             "does); the meaning is right, the precision is below the declared error model")
    return PrecisionVerdict("frequency-drift", words, mb, {"eps_per_pair": eps, "units_at_last_pair": units},
                            _passes_with(case, actual, exp, caps, r, ("c_log", "c_ang"), hints))


def _growth(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], bnd: Mapping[str, Arr], r: Resolved, caps: Any,
            divisor: float, hints: Sequence[str], verify: bool = True) -> PrecisionVerdict | None:
    if case.stage in ("apply", "inv_freq") or r.u_ang <= 0:
        return None
    w, s = inv_freq(case.spec, case_seq_len(case))
    ae = _angle_errors(case, actual, exp, bnd, w, s)
    if ae is None:
        return None
    delta, phi, _j, p, wt = ae
    den = float(np.sum(wt * phi * phi))
    if den <= 0:
        return None
    eps = float(np.sum(wt * delta * phi) / den)
    # a position offset k on some tokens is a uniform relative angle error k/p on them: where eps * p could be an
    # integer offset (>= 0.5), the growth with the angle must be seen: the samples whose error is significant must
    # span a factor 2 in |p|
    significant = (np.abs(delta) > 1.2 / np.sqrt(wt)) & (p > 0)  # over the bound: not the engine's allowed noise
    nz = p[significant]
    if nz.size >= 2:
        # the samples over the bound must follow the same law as all of them (a shift on some rows does not: the
        # others pull the common fit down)
        den_s = float(np.sum(wt[significant] * phi[significant] ** 2))
        eps_s = float(np.sum(wt[significant] * delta[significant] * phi[significant]) / den_s) if den_s > 0 else 0.0
        if not (0.7 * abs(eps_s) <= abs(eps) <= 1.4 * abs(eps_s)) or eps * eps_s <= 0:
            return None
        if verify and 4.0 * abs(eps_s) * float(nz.max()) >= 0.5 and float(nz.max()) < 2.0 * float(nz.min()):
            return None
    elif verify:  # no single sample over its bound: the growth cannot be seen
        return None
    if not (0 < abs(eps) <= _GROWTH * r.c_ang * r.u_ang):
        return None
    mb = _model_budget(case, actual, r, w * (1.0 + eps), s, divisor)
    if mb > 1.0:
        return None
    words = (f"IMPRECISE (angle-growth): an angle error proportional to the angle on every pair ({eps / r.u_ang:+.3g} u x phi, "
             f"u = unit roundoff of {r.angle_dtype}; the declared model allows {r.c_ang:g} u x phi): cos/sin or the angles "
             "computed less accurately than declared; the meaning is right")
    return PrecisionVerdict("angle-growth", words, mb, {"eps": eps, "units": eps / r.u_ang},
                            _passes_with(case, actual, exp, caps, r, ("c_ang",), hints))


def shift_like_growth(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], bnd: Mapping[str, Arr], r: Resolved,
                      caps: Any, divisor: float = 1.0, hints: Sequence[str] = ()) -> PrecisionVerdict | None:
    """An angle growth accepted without seeing it grow (a uniform relative angle error eps near positions P is a shift
    of eps P): to say that a position shift and an angle growth cannot be told apart on this case, never a verdict."""
    if case.stage not in ("cos_sin", "forward", "backward"):
        return None
    with np.errstate(all="ignore"):
        return _growth(case, actual, exp, bnd, r, caps, divisor, hints, verify=False)


def _grows_with_angle(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], bnd: Mapping[str, Arr],
                      z_limit: float = 3.0) -> bool:
    """Whether some pair's angle errors follow its angle (``delta = a phi``, ``a`` more than ``z_limit`` standard
    errors from 0): rounding gives errors that do not, a wrong frequency or an unrotated pair gives errors that do."""
    if case.stage == "apply" or "positions" not in case.arrays:
        return False
    w, s = inv_freq(case.spec, case_seq_len(case))
    ae = _angle_errors(case, actual, exp, bnd, w, s)
    if ae is None:
        return False
    delta, phi, j, _p, wt = ae
    for jj in np.unique(j):
        sel = j == jj
        info = float(np.sum(wt[sel] * phi[sel] ** 2))
        if info <= 0:
            continue
        z = float(np.sum(wt[sel] * delta[sel] * phi[sel])) / np.sqrt(info)
        if abs(z) > z_limit:
            return True
    return False


def _rounding(case: GoldenCase, actual: Mapping[str, Arr], exp: Mapping[str, Arr], bnd: Mapping[str, Arr], r: Resolved, caps: Any,
              hints: Sequence[str]) -> PrecisionVerdict | None:
    if case.stage == "inv_freq":
        return None
    if _grows_with_angle(case, actual, exp, bnd):
        return None
    flat = replace(r, u_ang=0.0)
    b0 = expected_and_bounds(case, caps, flat)[1]
    worst = 0.0
    for name, e in exp.items():
        err = np.abs(np.asarray(actual[name], dtype=np.float64) - e)
        allowed = np.asarray(bnd[name], dtype=np.float64) + (_ROUNDING - 1.0) * (np.asarray(b0[name], dtype=np.float64) - r.floor)
        if np.any(err > allowed):
            return None
        with np.errstate(all="ignore"):
            ratio = np.where(err > 0, err / np.asarray(b0[name], dtype=np.float64), 0.0)
        worst = max(worst, float(np.nanmax(ratio)) if ratio.size else 0.0)
    words = (f"IMPRECISE (rounding): the error does not grow with the angle and stays within {worst:.3g}x the declared rounding "
             f"terms (c_out u_out + c_tab u_tab; output {r.out_dtype}, tables {r.table_dtype}): tables or outputs rounded more "
             "coarsely than declared; the meaning is right")
    return PrecisionVerdict("rounding", words, worst / _ROUNDING, {"over_rounding_terms": worst},
                            _passes_with(case, actual, exp, caps, r, ("c_tab", "c_out"), hints))
