"""Accuracy audit: recompute a sample of every case's expected values with mpmath at 50 digits.

"Exact" means exact mathematics on the *stored* inputs: the stored (dtype-rounded,
float64) x, grad and tables, the integer positions, and the float64 inverse frequencies
and attention factor the spec defines (:func:`roperef.frequencies.inv_freq`, taken as
exact numbers). For a pair ``(a, b)`` at position ``p`` with frequency ``w`` and factor
``s`` the exact output is ``s (x_a cos(p w) - x_b sin(p w))`` (resp. ``s (x_b cos + x_a
sin)``), ``p w`` formed exactly; the backward pass rotates by ``-p w``. Pass-through
channels must be copied bit-exactly.

Errors are reported in two units:

- ``ulp``: ``|stored - exact| / ulp(exact)`` (``ulp`` = the float64 spacing at ``|exact|``: error
  over spacing, :func:`roperef.ulp.error_in_ulps`, not representable steps); large where the output
  itself cancels to nearly zero, so it is reported, not asserted;
- ``bound``: ``|stored - exact| / (u * m)`` with ``u = 2^-53`` and ``m`` the pair magnitude
  ``s (|x_a| + |x_b|)`` (apply: ``|x_a||c| + |x_b||s|`` for ``y_a``, ``|x_b||c| + |x_a||s|`` for
  ``y_b``; tables: ``s``; inv_freq: ``|exact|``).
  The reference promises ``bound <= 4`` for forward, backward and apply outputs at every
  position up to 2^31 (tested in ``tests/conformance/golden/test_audit.py``).

The inverse frequencies and attention factor of the ``freq`` family are audited against the
docs/spec.md section-3 formulas evaluated independently in mpmath
(:func:`conformance.golden.exact_model.mp_inv_freq`, branch decisions on the exact values): they are
correctly rounded, so their error is at most 0.5 ulp (error over spacing).

Sampling is deterministic: ``samples`` elements drawn with a generator seeded by the
case id, plus every channel of the first head of the token with the largest ``|position|``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.layout import pair_axes, pair_map
from roperef.spec import RopeSpec
from roperef.ulp import error_in_ulps

from ..cases.case import GoldenCase
from .exact_model import mp_inv_freq

__all__ = ["AuditResult", "audit_case", "audit_cases", "BOUND_UNITS", "U64"]

U64 = 2.0**-53
#: the promised bound, in units of u * pair magnitude, for forward/backward/apply outputs
BOUND_UNITS = 4.0


@dataclass(frozen=True)
class AuditResult:
    """One case's audit: elements checked, worst errors in ulp and in bound units, where."""

    id: str
    family: str
    stage: str
    dtype: str
    n: int
    max_ulp: float
    max_bound: float
    worst: str
    max_position: int

    @property
    def within_bound(self) -> bool:
        return self.max_bound <= BOUND_UNITS

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _context() -> Any:  # an mpmath.MPContext; mpmath ships no type hints
    import mpmath  # lazy: the audit alone needs mpmath (50-digit arithmetic)

    ctx = mpmath.MPContext()
    ctx.dps = 50
    return ctx


def _ulps(err: float, exact: float) -> float:
    """The error ``err`` (computed in mpmath) in ulp of ``exact``: error over spacing (:mod:`roperef.ulp`)."""
    return float(error_in_ulps(err, exact))


def _rows(spec: RopeSpec, positions: np.ndarray) -> np.ndarray:
    if spec.n_axes == 1:
        return positions[None]
    if spec.mrope_section is not None:
        return positions
    return np.moveaxis(positions, -1, 0)


def _sample(case: GoldenCase, shape: tuple[int, ...], samples: int, extra: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()) ^ 0x5EED)
    size = int(np.prod(shape))
    flat = rng.choice(size, size=min(samples, size), replace=False) if size else np.array([], dtype=np.int64)
    picks = {tuple(int(i) for i in np.unravel_index(int(k), shape)) for k in flat}
    picks.update(extra)
    return sorted(picks)


class _Angles:
    """cos/sin of exact angles ``p*w`` (cached per (p, w))."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.cache: dict[tuple[int, float], tuple[Any, Any]] = {}

    def __call__(self, p: int, w: float) -> tuple[Any, Any]:
        key = (p, w)
        if key not in self.cache:
            phi = self.ctx.mpf(p) * self.ctx.mpf(w)
            self.cache[key] = (self.ctx.cos(phi), self.ctx.sin(phi))
        return self.cache[key]


def _rotation_audit(case: GoldenCase, samples: int) -> tuple[int, float, float, str, int]:
    ctx, spec, a = _context(), case.spec, case.arrays
    backward = case.stage == "backward"
    x = a["grad" if backward else "x"]
    y = a["grad_x" if backward else "y"]
    rows = _rows(spec, a["positions"])
    seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
    freqs, s = inv_freq(spec, seq_len)
    pm = pair_map(spec)
    ra, rb, wa, wb = (pm.out_a, pm.out_b, pm.in_a, pm.in_b) if backward else (pm.in_a, pm.in_b, pm.out_a, pm.out_b)
    sign = -1 if backward else 1
    axes = pair_axes(spec)
    role = {int(c): (j, 0) for j, c in enumerate(wa)} | {int(c): (j, 1) for j, c in enumerate(wb)}
    grid = y.shape[:-2]
    mags = np.abs(rows).max(axis=0)
    top = tuple(int(i) for i in np.unravel_index(int(np.argmax(mags)), grid))
    extra = [top + (0, c) for c in range(y.shape[-1])]
    cs = _Angles(ctx)
    n, worst_ulp, worst_bound, where = 0, 0.0, 0.0, ""
    sm = ctx.mpf(s)
    for idx in _sample(case, y.shape, samples, extra):
        tok, c = idx[:-2], idx[-1]
        stored = float(y[idx])
        n += 1
        if c not in role:  # pass-through: bit-exact
            bound = 0.0 if stored == float(x[idx]) else math.inf
            ulps = _ulps(abs(stored - float(x[idx])), float(x[idx]))
        else:
            j, which = role[c]
            p = int(rows[(int(axes[j]),) + tok])
            cos, sin = cs(p, float(freqs[j]))
            xa, xb = float(x[idx[:-1] + (int(ra[j]),)]), float(x[idx[:-1] + (int(rb[j]),)])
            if which == 0:
                exact = sm * (ctx.mpf(xa) * cos - sign * ctx.mpf(xb) * sin)
            else:
                exact = sm * (ctx.mpf(xb) * cos + sign * ctx.mpf(xa) * sin)
            err = float(abs(ctx.mpf(stored) - exact))
            mag = s * (abs(xa) + abs(xb))
            bound = err / (U64 * mag) if mag else (0.0 if err == 0 else math.inf)
            ulps = _ulps(err, float(exact))
            if bound > worst_bound:
                where = f"index {idx}, position {p}, pair {j}"
        worst_bound = max(worst_bound, bound)
        worst_ulp = max(worst_ulp, ulps)
    return n, worst_ulp, worst_bound, where, int(mags.max()) if mags.size else 0


def _apply_audit(case: GoldenCase, samples: int) -> tuple[int, float, float, str, int]:
    ctx, spec, a = _context(), case.spec, case.arrays
    x, y = a["x"], a["y"]
    grid = x.shape[:-2]
    cos = np.broadcast_to(a["cos"], grid + (spec.n_pairs,))
    sin = np.broadcast_to(a["sin"], grid + (spec.n_pairs,))
    pm = pair_map(spec)
    role = {int(c): (j, 0) for j, c in enumerate(pm.out_a)} | {int(c): (j, 1) for j, c in enumerate(pm.out_b)}
    n, worst_ulp, worst_bound, where = 0, 0.0, 0.0, ""
    for idx in _sample(case, y.shape, samples, []):
        tok, c = idx[:-2], idx[-1]
        stored = float(y[idx])
        n += 1
        if c not in role:
            bound = 0.0 if stored == float(x[idx]) else math.inf
            ulps = _ulps(abs(stored - float(x[idx])), float(x[idx]))
        else:
            j, which = role[c]
            cj, sj = float(cos[tok + (j,)]), float(sin[tok + (j,)])
            xa, xb = float(x[idx[:-1] + (int(pm.in_a[j]),)]), float(x[idx[:-1] + (int(pm.in_b[j]),)])
            mc, ms, ma, mb = ctx.mpf(cj), ctx.mpf(sj), ctx.mpf(xa), ctx.mpf(xb)
            exact = ma * mc - mb * ms if which == 0 else mb * mc + ma * ms
            err = float(abs(ctx.mpf(stored) - exact))
            mag = abs(xa) * abs(cj) + abs(xb) * abs(sj) if which == 0 else abs(xb) * abs(cj) + abs(xa) * abs(sj)
            bound = err / (U64 * mag) if mag else (0.0 if err == 0 else math.inf)
            ulps = _ulps(err, float(exact))
            if bound > worst_bound:
                where = f"index {idx}, pair {j}"
        worst_bound = max(worst_bound, bound)
        worst_ulp = max(worst_ulp, ulps)
    return n, worst_ulp, worst_bound, where, 0


def _table_audit(case: GoldenCase, samples: int) -> tuple[int, float, float, str, int]:
    ctx, spec, a = _context(), case.spec, case.arrays
    rows = _rows(spec, a["positions"])
    seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
    freqs, s = inv_freq(spec, seq_len)
    axes = pair_axes(spec)
    grid = a["cos"].shape[:-1]
    mags = np.abs(rows).max(axis=0)
    top = tuple(int(i) for i in np.unravel_index(int(np.argmax(mags)), grid))
    cs = _Angles(ctx)
    n, worst_ulp, worst_bound, where = 0, 0.0, 0.0, ""
    for idx in _sample(case, a["cos"].shape, samples // 2, [top + (j,) for j in range(spec.n_pairs)]):
        tok, j = idx[:-1], idx[-1]
        p = int(rows[(int(axes[j]),) + tok])
        exact_c, exact_s = cs(p, float(freqs[j]))
        for name, exact in (("cos", exact_c), ("sin", exact_s)):
            exact = ctx.mpf(s) * exact
            err = float(abs(ctx.mpf(float(a[name][idx])) - exact))
            bound = err / (U64 * s)
            n += 1
            if bound > worst_bound:
                where = f"{name} index {idx}, position {p}"
            worst_bound = max(worst_bound, bound)
            worst_ulp = max(worst_ulp, _ulps(err, float(exact)))
    return n, worst_ulp, worst_bound, where, int(mags.max()) if mags.size else 0


def _freq_audit(case: GoldenCase) -> tuple[int, float, float, str, int]:
    ctx = _context()
    seq_len = int(case.arrays["seq_len"])
    exact, s_exact = mp_inv_freq(ctx, case.spec, seq_len)
    stored = case.arrays["inv_freq"]
    worst_ulp, worst_bound, where = 0.0, 0.0, ""
    for i, (v, e) in enumerate(zip(stored, exact)):
        err = float(abs(ctx.mpf(float(v)) - e))
        rel = err / (U64 * abs(float(e))) if e != 0 else (0.0 if err == 0 else math.inf)
        if rel > worst_bound:
            where = f"inv_freq[{i}]"
        worst_bound, worst_ulp = max(worst_bound, rel), max(worst_ulp, _ulps(err, float(e)))
    err = float(abs(ctx.mpf(float(case.arrays["attention_factor"])) - s_exact))
    return len(stored) + 1, max(worst_ulp, _ulps(err, float(s_exact))), worst_bound, where, seq_len - 1


def audit_case(case: GoldenCase, samples: int = 200) -> AuditResult:
    """Audit one case (``samples`` random elements plus the largest-position token)."""
    if case.stage == "inv_freq":
        n, ulp, bound, where, top = _freq_audit(case)
    elif case.stage == "cos_sin":
        n, ulp, bound, where, top = _table_audit(case, samples)
    elif case.stage == "apply":
        n, ulp, bound, where, top = _apply_audit(case, samples)
    else:
        n, ulp, bound, where, top = _rotation_audit(case, samples)
    return AuditResult(case.id, case.family, case.stage, case.dtype, n, ulp, bound, where, top)


def audit_cases(cases: Iterable[GoldenCase], samples: int = 200) -> list[AuditResult]:
    return [audit_case(c, samples) for c in cases]
