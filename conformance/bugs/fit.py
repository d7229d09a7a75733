"""Choose each bug class's best decoy for a failing case: the fixed decoy, or the free
parameter fitted from the backend's output by a 1-D search.

The match test is the decoy's own bound (:func:`conformance.bugs.decoy.run_decoy`):
``budget = max |actual - decoy| / decoy_bound``. That budget is a poor guide far from the
true parameter (angles wrap modulo 2*pi), so a parametric *frequency* bug (theta, a scaling
factor, the dynamic-NTK length) is first located in frequency space: the inverse diagnosis
(:mod:`conformance.diagnose.inverse`) measures an effective frequency per pair with its uncertainty,
and the search minimises ``sum_j ((w_decoy_j - w_eff_j) / sigma_j)^2`` over the candidates
and then by a shrinking log-scale pattern search. Position-like parameters (a shift k) are
seeded by the effective positions and refined on the budget itself.

A decoy that is within its bound of the *expected* output cannot be told apart from a correct
result on this case: it is skipped (it says nothing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cases.case import GoldenCase
from ..error_model.tolerance import Resolved
from .decoy import Decoy, DecoyRun, budget, decoy_inv_freq, protocol_seq_len, run_decoy
from .model import BugClass, Hints
from .rounding import round_to

__all__ = ["Candidate", "best_decoy", "decoy_frequencies"]

#: a fitted family whose frequencies miss the effective ones by more than this many sigma^2 per
#: pair cannot explain the output: its budget is not searched further (it stays a poor candidate)
_PLAUSIBLE = 1e4

Arr = np.ndarray

#: budgets between these bounds are re-evaluated with exact frequencies (a search on estimated
#: frequencies may be a few ulp off; only a budget near 1 can change a verdict)
_NEAR_THRESHOLD = (0.25, 4.0)


@dataclass
class Candidate:
    """A class's best decoy on a case: its budget against the actual output and against the expected one."""

    cls: BugClass
    decoy: Decoy
    run: DecoyRun
    budget: float
    distinct: float  # budget of the decoy against the expected output (> 1: the case can tell it)
    param: Any = None  # the family parameter that made the decoy


def decoy_frequencies(case: GoldenCase, d: Decoy, estimate: bool = False) -> tuple[Arr, float]:
    """The frequencies and attention factor the decoy's engine uses on this case (``estimate``: see
    :func:`.decoy.decoy_inv_freq`)."""
    spec = d.spec or case.spec
    seq = protocol_seq_len(case)
    if d.seq_len is not None:
        seq = int(d.seq_len(seq))
    w, s = d.freqs(spec, seq) if d.freqs is not None else decoy_inv_freq(case, spec, seq, estimate)
    if d.scale is not None:
        s = d.scale(s)
    w = np.asarray(w, dtype=np.float64)
    return (round_to(d.round_freqs, w) if d.round_freqs else w), float(s)


class _Evaluator:
    """A class's decoy at parameter ``param`` as a :class:`Candidate` (memoised); ``estimate``: with
    float64-estimated frequencies for the specs and lengths the search tries."""

    def __init__(self, cls: BugClass, case: GoldenCase, r: Resolved, actual: Mapping[str, Arr], expected: Mapping[str, Arr],
                 estimate: bool = False) -> None:
        self.cls, self.case, self.r, self.actual, self.expected = cls, case, r, actual, expected
        self.estimate = estimate
        self.seen: dict[Any, Candidate | None] = {}

    def __call__(self, param: Any) -> Candidate | None:
        key = param if not isinstance(param, (np.floating, np.integer)) else param.item()
        if key in self.seen:
            return self.seen[key]
        out = None
        try:
            d = self.cls.family.make(self.case, param)
            if d is not None:
                with np.errstate(all="ignore"):
                    run = run_decoy(self.case, d, self.r, self.estimate)
                    distinct = budget(run.outputs, self.expected, run.bound)
                    if distinct > 1.0:
                        out = Candidate(self.cls, d, run, budget(self.actual, run.outputs, run.bound), distinct, param)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError, KeyError, IndexError):
            out = None
        self.seen[key] = out
        return out


def _freq_objectives(case: GoldenCase, cls: BugClass, hints: Hints):
    """``(coarse, fine)`` misfits ``param -> float`` in frequency space, or None without usable
    effective frequencies. ``coarse`` = sum of squared log ratios (smooth and monotone far from the
    answer); ``fine`` = sum of squared differences in units of each frequency's uncertainty."""
    eff = hints.get("freqs")
    sigma = hints.get("freq_sigma")
    if eff is None or sigma is None:
        return None
    eff, sigma = np.asarray(eff, dtype=np.float64), np.asarray(sigma, dtype=np.float64)
    ok = np.isfinite(eff) & np.isfinite(sigma) & (sigma > 0)
    pos = ok & (eff > 0)
    if ok.sum() < 2:
        return None

    def freqs(param: Any) -> Arr | None:
        try:
            d = cls.family.make(case, param)
            if d is None:
                return None
            w, _ = decoy_frequencies(case, d, estimate=True)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError):
            return None
        return w if w.shape == eff.shape else None

    def coarse(param: Any) -> float:
        w = freqs(param)
        if w is None:
            return math.inf
        use = pos & (w > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.log(w[use]) - np.log(eff[use])
        return float(np.sum(q * q)) + float(np.sum(pos & ~(w > 0)))

    def fine(param: Any) -> float:
        w = freqs(param)
        if w is None:
            return math.inf
        z = (w[ok] - eff[ok]) / sigma[ok]
        return float(np.sum(z * z))

    return coarse, fine


def _log_search(misfit, start: float, lo: float = 0.0, tol: float = 1e-13) -> float:
    """Shrinking pattern search of ``misfit`` on a log scale around ``start`` (values > lo)."""
    best, fbest = start, misfit(start)
    step = 0.3
    while step > tol:
        moved = False
        for cand in (best * math.exp(step), best * math.exp(-step)):
            if cand <= lo:
                continue
            fc = misfit(cand)
            if fc < fbest:
                best, fbest, moved = cand, fc, True
                break
        if not moved:
            step /= 3.0
    return best


def _int_pattern(score, start: int, span: int, max_evals: int = 64) -> int:
    """Integer pattern search of ``score`` around ``start``: steps span, span/2, ..., 1 (bounded work)."""
    best, fbest = start, score(start)
    step, evals = max(1, span), 1
    while evals < max_evals:
        moved = False
        for cand in (best + step, best - step):
            if cand < 1:
                continue
            evals += 1
            fc = score(cand)
            if fc < fbest:
                best, fbest, moved = cand, fc, True
                break
        if not moved:
            if step == 1:
                break
            step //= 2
    return best


def _budget_log_search(ev: _Evaluator, start: Candidate, integer: bool, max_evals: int = 80) -> Candidate:
    """Pattern search of the budget itself on a log scale (close to the answer the budget is V-shaped)."""
    best = start
    x = float(start.decoy.param)
    step, evals = 0.02, 0
    while step > 1e-12 and evals < max_evals:
        moved = False
        for cand in (x * math.exp(step), x * math.exp(-step)):
            p: Any = int(round(cand)) if integer else cand
            if integer and p == int(round(x)):
                continue
            evals += 1
            c = ev(p)
            if c is not None and c.budget < best.budget:
                best, x, moved = c, float(p), True
                break
        if not moved:
            step /= 3.0
    return best


def _int_search(ev: _Evaluator, start: Candidate) -> Candidate:
    k = int(start.decoy.param)

    def score(v: int) -> float:
        c = ev(v)
        return math.inf if c is None else c.budget

    best = ev(_int_pattern(score, k, 1, max_evals=12))
    return best if best is not None and best.budget < start.budget else start


def best_decoy(cls: BugClass, case: GoldenCase, r: Resolved, actual: Mapping[str, Arr], expected: Mapping[str, Arr],
               hints: Hints) -> Candidate | None:
    """The class's decoy with the smallest budget on this case, or None (no decoy of the class can be
    told apart from a correct result here)."""
    if not cls.occurs_in(case):
        return None
    ev = _Evaluator(cls, case, r, actual, expected, estimate=True)
    fam = cls.family
    params = list(fam.candidates(case, hints))
    plausible = True
    if fam.refine in ("log", "log-int"):
        objectives = _freq_objectives(case, cls, hints)
        if objectives is not None:
            coarse, fine = objectives
            seeds = sorted(params, key=coarse)[:3]
            if seeds:
                lo = 1.0 if fam.refine == "log-int" else 0.0
                refined: Any = _log_search(fine, _log_search(coarse, float(seeds[0]), lo, 1e-6), lo)
                if fam.refine == "log-int":
                    k = int(round(refined))
                    refined = _int_pattern(fine, k, max(1, int(abs(k) * 1e-6)))
                seeds.insert(0, refined)
                # the effective frequencies say whether this family can explain the output at all
                plausible = fine(refined) <= _PLAUSIBLE * max(1, int(np.isfinite(np.asarray(hints["freqs"], dtype=float)).sum()))
            params = seeds + [p for p in params if p not in seeds][:4]
    cands = [c for c in (ev(p) for p in params) if c is not None]
    if not cands:
        return None
    best = min(cands, key=lambda c: c.budget)
    if fam.refine in ("log", "log-int") and best.budget > 1.0 and plausible:
        best = _budget_log_search(ev, best, fam.refine == "log-int")
    if fam.refine in ("int", "log-int") and best.budget > 1.0:
        best = _int_search(ev, best)
    if _NEAR_THRESHOLD[0] < best.budget < _NEAR_THRESHOLD[1] or best.distinct < _NEAR_THRESHOLD[1]:
        # the search ran on estimated frequencies (a few ulp): near the match threshold the answer
        # is decided by the exact decoy
        return _Evaluator(cls, case, r, actual, expected)(best.param)
    return best
