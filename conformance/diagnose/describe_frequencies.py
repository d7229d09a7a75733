"""The effective frequency of every pair against the spec's, and its signature in words.

Input: per pair the effective frequency ``w'_j`` (:func:`.effective.pair_frequency`, or an
``inv_freq`` output), its uncertainty, and the spec's ``w_j``. The ratio ``r_j = w'_j / w_j`` is
described by the first signature that fits every pair whose frequency is known:

==============  ===========================================================================
signature       ratio / frequencies
==============  ===========================================================================
``zero``        ``w' = 0`` on some pairs (those pairs are not rotated)
``uniform``     the same ``r`` on every pair (related to the scaling factor f when it is one)
``permuted``    ``w'_j = w_sigma(j)``: order mirrored, shifted by k pairs, neighbours swapped, ...
``geometric``   ``r_j = c rho^j``: another theta (or exponent denominator) for the whole spectrum
``band``        contiguous pairs with one ratio each (a band off by f, f^2, reversed, ...)
``groups``      none of these: the groups of pairs and their ratios
==============  ===========================================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from roperef.frequencies import inv_freq
from roperef.spec import RopeSpec

from .findings import Finding, ranges

__all__ = ["describe_frequencies", "ratio_words"]

Arr = np.ndarray


def ratio_words(r: float, spec: RopeSpec | None = None) -> str:
    """``x0.125 (= 1/f)``, ``reversed (x-1)``, ``0 (not rotated)``: a ratio in words."""
    if abs(r) < 1e-9:
        return "0 (not rotated)"
    if abs(r + 1) < 0.02:
        return "x-1 (rotation reversed)"
    words = f"x{r:.6g}"
    f = spec.scaling.given("factor") if spec is not None and spec.scaling.type != "default" else None
    rel: list[str] = []
    if f:
        for label, val in (("1/f", 1 / f), ("f", f), ("1/f^2", 1 / f**2), ("f^2", f**2)):
            if abs(r - val) <= 0.02 * abs(val):
                rel.append(f"{label}, factor f={f:g}")
    for label, val in (("1/2", 0.5), ("2", 2.0), ("-2", -2.0)):
        if abs(r - val) <= 0.005 * abs(val):
            rel.append(label)
    return words + (f" (= {rel[0]})" if rel else "")


def _finding(pattern: str, words: str, pairs: Arr, w_eff: Arr, w: Arr, extra: dict | None = None) -> Finding:
    meas = {"frequency": [float(v) if math.isfinite(v) else None for v in w_eff[pairs]]}
    if extra:
        meas.update(extra)
    return Finding("frequency", words, pattern, {"pairs": [int(j) for j in pairs]}, meas,
                   {"frequency": [float(v) for v in w[pairs]]})


def _permutation(w_eff: Arr, w: Arr, sig: Arr, known: Arr) -> Arr | None:
    """The spec pair whose frequency is nearest each known effective one (within 8 sigma), when that is
    a one-to-one map; None otherwise."""
    src = np.full(w.size, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(w > 0, sig / np.where(w > 0, w, 1.0), np.inf)  # the uncertainty relative to the value measured
    for j in np.nonzero(known)[0]:
        d = np.abs(w - w_eff[j])
        k = int(np.argmin(d))
        if d[k] > 8.0 * rel[j] * abs(w_eff[j]) + 1e-9 * abs(w_eff[j]):
            return None
        src[j] = k
    ks = src[known]
    return src if np.unique(ks).size == ks.size else None


def _structured_permutation(w: Arr, known: Arr, bad: Arr, ok_model: Callable[[Arr], bool]) -> tuple[Arr] | None:
    """A permutation of the spec's frequencies with a simple structure (mirrored order, neighbours swapped,
    shifted by k pairs, two pairs exchanged) that reproduces the measured angles."""
    n = w.size
    j = np.arange(n)
    cands = [n - 1 - j]
    if n % 2 == 0:
        cands.append(j ^ 1)
    bj = np.nonzero(bad)[0]
    if bj.size == 2:
        sw = j.copy()
        sw[bj[0]], sw[bj[1]] = bj[1], bj[0]
        cands.append(sw)
    for src in cands:
        if np.array_equal(src[known], j[known]):
            continue
        if ok_model(w[src]):
            return (src,)
    return None


def _refine(misfit: Callable[[Arr], float], law: Callable[[float], Arr], x0: float, span: float, evals: int = 40) -> float:
    """The parameter in ``[x0 - span, x0 + span]`` whose model frequencies ``law(x)`` fit the angles best (golden
    section on the worst residual over the allowed error)."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    lo, hi = x0 - span, x0 + span
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = misfit(law(a)), misfit(law(b))
    for _ in range(evals):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = misfit(law(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = misfit(law(b))
    return a if fa <= fb else b


def _other_theta(w_eff: Arr, sig: Arr, w: Arr, bad: Arr, known: Arr, spec: RopeSpec, seq_len: int | None,
                 verify: Callable[[Arr], bool]) -> tuple[float, Arr] | None:
    """Another theta through the spec's own scaling (a YaRN ramp, llama3 bands, ...: no single geometric law over every
    pair): fitted on the deviating pairs where the scaling leaves the spectrum unscaled (the fastest ones), rounded,
    and said only when roperef's frequencies for it reproduce the measured angles."""
    j = np.arange(w.size)
    with np.errstate(all="ignore"):
        r = w_eff / np.where(w > 0, w, 1.0)
    use = bad & known & (w > 0) & (r > 0) & (j > 0) & (sig < 0.05 * np.abs(w_eff))
    if use.sum() < 2 or spec.theta <= 1 or seq_len is None:
        return None
    d = float(spec.resolved_freq_dim)
    # log theta' = log theta - log(r_k) d / (2k); a ratio so far from 1 that theta' leaves float64 is no theta
    logs = [math.log(spec.theta) - math.log(r[k]) * d / (2.0 * k) for k in j[use][:3]]
    fits = sorted({math.exp(v) for v in logs if v < 700.0})
    tried: set[float] = set()
    for t_fit in fits:
        if not math.isfinite(t_fit) or t_fit <= 1:
            continue
        for digits in (2, 3, 1):
            e10 = math.floor(math.log10(t_fit)) - (digits - 1)
            t = float(round(t_fit / 10**e10) * 10**e10)
            if t in tried or t == spec.theta or t <= 1:
                continue
            tried.add(t)
            try:
                w_model, _s = inv_freq(spec.replace(theta=t), seq_len)
            except (ValueError, ZeroDivisionError, OverflowError):
                continue
            if np.shape(w_model) == w.shape and verify(np.asarray(w_model, dtype=np.float64)):
                return t, np.asarray(w_model, dtype=np.float64)
    return None


def describe_frequencies(w_eff: Arr, sig: Arr, w: Arr, known: Arr, spec: RopeSpec, where: str = "",
                         verify: Callable[[Arr], bool] | None = None, misfit: Callable[[Arr], float] | None = None,
                         seq_len: int | None = None) -> list[Finding]:
    """Findings for the effective frequencies (empty when every known one is the spec's).

    ``sig``: absolute uncertainty of each ``w_eff``; ``known``: pairs whose frequency was measured;
    ``verify(w_model)``: whether model frequencies (a permutation of the spec's, a geometric law)
    reproduce the measured angles themselves (the uncertainty of a frequency read from a few tokens
    can be large; a signature is said only when its model is confirmed)."""
    ok_model = verify or (lambda _w: True)
    known = known & np.isfinite(w_eff) & np.isfinite(sig)
    n = w.size
    j = np.arange(n)
    pos = w > 0
    with np.errstate(all="ignore"):
        r = np.where(pos, w_eff / np.where(pos, w, 1.0), np.where(np.abs(w_eff) <= 8 * sig + 1e-12, 1.0, np.inf))
        sr = np.where(pos, sig / np.where(pos, w, 1.0), np.inf)
    bad = known & (np.abs(r - 1.0) > np.maximum(8.0 * sr, 1e-7))
    if not bad.any():
        return []
    tag = f" ({where})" if where else ""
    zero = bad & (np.abs(w_eff) <= 8 * sig + 1e-12) & (np.abs(r) <= 0.05)  # near 0, not merely within a loose uncertainty of it
    if np.array_equal(zero, bad) and ok_model(np.where(zero, 0.0, w)):
        return [_finding("zero", f"pairs {ranges(j[bad])}{tag} use frequency 0: not rotated (spec: w_j > 0)", j[bad], w_eff, w)]
    kp = known & pos
    rk = r[kp]
    rr = float(np.median(r[bad & pos])) if (bad & pos).any() else (float(np.median(rk)) if rk.size else 1.0)
    spread_ok = kp.sum() >= 2 and np.ptp(rk) <= max(8.0 * float(np.max(sr[kp])), 1e-6 * float(np.max(np.abs(rk))))
    if kp.any() and verify is not None:
        # the ratio is best read where it is best determined: candidates are the median, the inverse-variance mean and the
        # best-determined pair's ratio, each checked on the angles
        with np.errstate(divide="ignore", invalid="ignore"):
            wt = 1.0 / np.maximum(sr[kp], 1e-300) ** 2
        cands = [rr, float(np.sum(wt * rk) / np.sum(wt)), float(rk[np.argmin(sr[kp])])]
        if misfit is not None:
            best = cands[1]
            cands.append(_refine(misfit, lambda x: w * x, best, 10.0 * float(np.min(sr[kp])) * abs(best) + 1e-12))
        rr = next((c for c in cands if ok_model(w * c)), rr)
    if kp.sum() >= 1 and (verify is not None or spread_ok) and ok_model(w * rr) and abs(rr - 1.0) > 1e-7:
        return [_finding("uniform", f"every pair{tag} uses its frequency {ratio_words(rr, spec)} (a uniform ratio)", j[kp], w_eff, w,
                         {"ratio": rr})]
    found = _structured_permutation(w, known & pos, bad, ok_model) if verify is not None else None
    src = found[0] if found else _permutation(w_eff, w, sig, known & pos)
    if src is not None and bad.sum() >= 2 and (found is not None or ok_model(np.where(src >= 0, w[np.maximum(src, 0)], w_eff))):
        ks = np.nonzero(known & pos)[0]
        pattern, words = "permuted", ""
        if np.array_equal(src[ks], (n - 1 - j)[ks]):
            pattern, words = "mirrored", "the frequency order is mirrored: pair j uses w_(n-1-j)"
        elif np.unique(src[ks] - j[ks]).size == 1:
            k = int((src[ks] - j[ks])[0])
            words = f"pair j uses the frequency of pair j{k:+d}"
        elif np.array_equal(src[ks], (j ^ 1)[ks]):
            words = "neighbouring pairs exchange frequencies (pair j uses w_(j xor 1))"
        else:
            bj = np.nonzero(bad)[0]
            words = "pairs use other pairs' frequencies (" + ", ".join(f"{int(a)} -> w_{int(src[a])}" for a in bj[:6]) + ")"
        return [_finding(pattern, f"{words}{tag}", j[bad], w_eff, w, {"source_pair": [int(v) for v in src[bad]]})]
    lk = kp & (r > 0) & (sr < 0.05)  # a geometric law is fitted on the well-determined ratios, then checked on every angle
    if lk.sum() >= 3:
        lr = np.log(r[lk])
        jj = j[lk].astype(np.float64)
        b, a = np.polyfit(jj, lr, 1, w=1.0 / np.maximum(sr[lk] / np.maximum(r[lk], 1e-300), 1e-12))
        resid = lr - (a + b * jj)
        d_exp = float(spec.resolved_freq_dim)
        # the fit in log-ratio space is refined by round values of the law's parameters (another theta, another
        # exponent denominator), each checked on the angles: a fitted law is said only when its model reproduces them
        laws = [(a, b)]
        if spec.theta > 1:
            t_fit = spec.theta * math.exp(-b * d_exp / 2.0)
            for digits in (3, 2, 4):
                e10 = math.floor(math.log10(t_fit)) - (digits - 1)
                t_round = round(t_fit / 10**e10) * 10**e10
                laws.append((0.0, -2.0 * math.log(t_round / spec.theta) / d_exp))
            inv = 1.0 / d_exp - b / (2.0 * math.log(spec.theta))
            if inv > 0 and 1.0 / inv < 1e6:
                d_round = round(1.0 / inv)
                if d_round > 0:
                    laws.append((0.0, -2.0 * math.log(spec.theta) * (1.0 / d_round - 1.0 / d_exp)))
        if misfit is not None:
            b_ref = _refine(misfit, lambda x: w * np.exp(a + x * j), b, 10.0 * abs(float(np.polyfit(jj, lr, 1, cov=False)[0] - b)) + 1e-6)
            laws.append((a, b_ref))
        chosen = next(((aa, bb) for aa, bb in laws if ok_model(w * np.exp(aa + bb * j))), None)
        if (abs(b) > 1e-9 and chosen is not None and (lk.sum() == known.sum() or verify is not None)
                and (np.max(np.abs(resid)) <= max(8.0 * float(np.max(sr[lk])), 1e-9) or verify is not None)):
            a, b = chosen
            d = float(spec.resolved_freq_dim)
            words = f"the ratio grows geometrically with the pair index (r_j = {math.exp(a):.6g} x {math.exp(b):.9g}^j)"
            extra: dict[str, float] = {"rho": math.exp(b), "c": math.exp(a)}
            if abs(a) <= max(8.0 * float(sr[lk][0]), 1e-7) and spec.theta > 1:
                theta2 = spec.theta * math.exp(-b * d / 2.0)
                words += f": the frequencies of theta = {theta2:.6g} instead of {spec.theta:.6g}"
                extra["theta"] = theta2
                inv = 1.0 / d - b / (2.0 * math.log(spec.theta))
                if inv > 0:
                    d2 = 1.0 / inv
                    if abs(d2 - round(d2)) < 1e-3 and round(d2) != d:
                        words += f" (equivalently the exponent denominator {int(round(d2))} instead of {int(d)})"
                        extra["denominator"] = float(round(d2))
            return [_finding("geometric", words + tag, j[bad], w_eff, w, extra)]
    other = _other_theta(w_eff, sig, w, bad, known, spec, seq_len, verify) if verify is not None else None
    if other is not None:
        t, w_model = other
        with np.errstate(all="ignore"):
            rho = (spec.theta / t) ** (2.0 / float(spec.resolved_freq_dim))
        words = (f"the frequencies of theta = {t:.6g} instead of {spec.theta:.6g} through the spec's {spec.scaling.type} scaling "
                 f"(the unscaled pairs' ratio grows geometrically: r_j = {rho:.9g}^j)")
        return [_finding("geometric", words + tag, j[bad], w_eff, w, {"theta": t, "rho": rho, "model": [float(v) for v in w_model]})]
    groups: list[list[int]] = []
    for jb in np.nonzero(bad)[0]:
        if groups and groups[-1][-1] == jb - 1 and abs(r[jb] - r[groups[-1][0]]) <= max(0.02 * abs(r[groups[-1][0]]), 8 * sr[jb]):
            groups[-1].append(int(jb))
        else:
            groups.append([int(jb)])
    out = []
    uniform_groups = all(np.ptp(r[g]) <= max(0.02 * np.max(np.abs(r[g])), 8 * np.max(sr[g])) for g in groups)
    pattern = "band" if len(groups) <= 3 and uniform_groups else "groups"
    for g in groups[:6]:
        rs = r[g]
        if len(g) > 2 and np.ptp(rs) > 0.05 * np.max(np.abs(rs)):
            words = f"pairs {ranges(g)}{tag} use frequencies off by factors {np.min(rs):.3g} to {np.max(rs):.3g}"
        else:
            words = f"pairs {ranges(g)}{tag} use their frequency {ratio_words(float(np.median(rs)), spec)}"
            others = known & pos & ~bad
            sure = others.any() and np.all(np.abs(r[others] - float(np.median(rs))) > 8.0 * sr[others])
            if pattern == "band" and len(groups) == 1 and sure:
                words += "; the other pairs are right (a band)"
        out.append(_finding(pattern, words, np.asarray(g), w_eff, w, {"ratio": [float(v) for v in rs]}))
    if len(groups) > 6:
        rest = [jj for g in groups[6:] for jj in g]
        out.append(_finding(pattern, f"... and {len(groups) - 6} more groups of pairs with wrong frequencies ({ranges(rest)})",
                            np.asarray(rest), w_eff, w))
    return out
