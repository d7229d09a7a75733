"""Angle maps, gains and 2x2 pair maps, measured from the samples and said in words.

- *Angle map*: the applied angle ``psi`` as a function of the spec's ``phi``: ``psi = k phi + c`` with
  ``k`` in {-2, -1, 0, 2, 3} or ``k = 1`` with a constant ``c`` in {pi/2, -pi/2, pi}: reversed
  (``-phi``), no rotation (``0``), doubled (``2 phi``), cos and sin exchanged (``pi/2 - phi``), ...;
  on every pair (global) or on groups of pairs.
- *Gain*: ``|z_out| / |z_in|`` against the spec's ``s`` (per pair, per token, uniform), related to
  ``s`` when it is ``1``, ``s^2``, ``sqrt(s)``, ``1/s``, ``2s``, ``s/2`` or 0.
- *Pair map* (when the output is not a rotation of each pair): the 2x2 matrix of a pair, fitted from
  the heads of a token (``M = Y X^+``), each entry compared with ``0, +-1, +-s cos phi, +-s sin phi,
  +-s``; a formula that holds on every sample is said (``y_b = -sin x_a + cos x_b``: one sign wrong;
  a reflection; identity), else the example of one pair.
"""

from __future__ import annotations

import math

import numpy as np

from .findings import Finding, ranges
from .samples import PairSamples, wrap

__all__ = ["ANGLE_MAPS", "angle_map_findings", "gain_findings", "pair_map_findings", "conformal_formula"]

Arr = np.ndarray
_P2 = math.pi / 2

#: (k, c, pattern, words for forward / apply, words for cos_sin)
ANGLE_MAPS: tuple[tuple[float, float, str, str, str], ...] = (
    (-1.0, 0.0, "reversed", "the rotation is reversed (psi = -phi: sin with the wrong sign)", "sin negated (psi = -phi)"),
    (0.0, 0.0, "identity", "no rotation (psi = 0: the pairs are not rotated)", "cos = s, sin = 0 (psi = 0: no rotation)"),
    (2.0, 0.0, "doubled", "the angle is doubled (psi = 2 phi)", "the angle is doubled (psi = 2 phi)"),
    (-1.0, _P2, "complement", "psi = pi/2 - phi (cos and sin exchanged)", "cos and sin exchanged (psi = pi/2 - phi)"),
    (1.0, _P2, "plus-quarter", "psi = phi + pi/2 (a quarter turn added: cos -> -sin, sin -> cos)", "psi = phi + pi/2"),
    (1.0, -_P2, "minus-quarter", "psi = phi - pi/2 (a quarter turn removed)", "psi = phi - pi/2"),
    (1.0, math.pi, "negated", "psi = phi + pi (both outputs of each pair negated)", "cos and sin both negated (psi = phi + pi)"),
    (-1.0, math.pi, "reversed-negated", "psi = pi - phi (reversed and negated: cos negated)", "cos negated (psi = pi - phi)"),
    (-1.0, -_P2, "complement-negated", "psi = -pi/2 - phi", "psi = -pi/2 - phi"),
    (3.0, 0.0, "tripled", "the angle is tripled (psi = 3 phi)", "the angle is tripled (psi = 3 phi)"),
    (-2.0, 0.0, "doubled-reversed", "psi = -2 phi", "psi = -2 phi"),
    (0.0, _P2, "quarter", "psi = pi/2 on every pair (a fixed quarter turn)", "psi = pi/2"),
)


def _words(stage: str, cos_sin: str, other: str) -> str:
    if stage == "cos_sin":
        return cos_sin
    if stage == "backward" and other.startswith("the rotation is reversed"):
        return "the backward pass rotates by +phi (the forward rotation R(phi) instead of R(-phi))"
    return other


def angle_map_findings(phi: Arr, delta: Arr, tol: Arr, valid: Arr, stage: str, slack: float = 6.0,
                       resolution: float = 0.0) -> tuple[list[Finding], Arr]:
    """Findings for angle maps (global, else per group of pairs) and the samples ``[U, n]`` they explain.

    ``phi``: the spec's angles (forward convention, mod 2 pi), ``delta``: measured errors, ``valid``:
    samples that say something. A map is said only where the angles are *informative* (allowed error
    below 0.5 rad on most samples: at position 2^31 in float32 any angle fits a high-frequency pair),
    and per group of pairs only when the groups explain every pair that deviates. ``resolution``: the
    largest position whose angles do not show at the declared precision (said with "no rotation")."""
    psi = phi + delta
    bad = valid & (np.abs(delta) > slack * tol)
    explained = np.zeros_like(bad)
    if not bad.any():
        return [], explained
    informative = valid & (slack * tol < 0.5)
    n = phi.shape[1]
    fits = []
    for k, c, pattern, w_fwd, w_tab in ANGLE_MAPS:
        res = np.abs(wrap(psi - (k * phi + c)))
        ok = valid & (res <= slack * tol + 1e-9)
        words = _words(stage, w_tab, w_fwd)
        fits.append((ok, k, c, pattern, words))
    caveat = (f" (or positions below ~{resolution:.3g}, whose angles do not show at the declared precision)"
              if resolution >= 1.0 else "")
    if informative[valid].mean() >= 0.5:
        for ok, k, c, pattern, words in fits:
            if np.array_equal(ok | ~valid, np.ones_like(ok)) or (ok[valid].mean() >= 0.97 and not (bad & ~ok).any()):
                return [Finding("angle", words + " on every pair" + (caveat if k == 0.0 else ""), pattern, {"pairs": list(range(n))},
                                {"k": k, "c": c}, {"k": 1, "c": 0})], ok | ~bad
    per_pair = bad.any(axis=0)
    groups: dict[int, list[int]] = {}
    for j in np.nonzero(per_pair)[0]:
        v = valid[:, j]
        if informative[v, j].mean() < 0.5:
            return [], explained
        for idx, (ok, *_rest) in enumerate(fits):
            if ok[v, j].all():
                groups.setdefault(idx, []).append(int(j))
                explained[:, j] = True
                break
        else:
            return [], np.zeros_like(bad)
    out = []
    for idx, pairs in groups.items():
        _, k, c, pattern, words = fits[idx]
        out.append(Finding("angle", f"{words} on pairs {ranges(pairs)}" + (caveat if k == 0.0 else ""), pattern, {"pairs": pairs},
                           {"k": k, "c": c}, {"k": 1, "c": 0}))
    return out, explained & bad


_GAIN_REL = (("1", lambda s: 1.0, "the attention factor not applied"), ("s^2", lambda s: s * s, "s applied twice"),
             ("sqrt(s)", lambda s: math.sqrt(s), "the square root of s"), ("1/s", lambda s: 1.0 / s, "divided by s instead"),
             ("2s", lambda s: 2.0 * s, ""), ("s/2", lambda s: 0.5 * s, ""), ("0", lambda s: 0.0, "the pair zeroed"))


def _gain_words(g_abs: float, s: float) -> str:
    """Words for a measured gain ``g_abs`` against the spec's ``s``: a relation of :data:`_GAIN_REL` is named
    only when it distinguishes, i.e. its value differs from ``s`` itself (with s = 1, "s^2", "sqrt(s)", "1"
    and "1/s" all equal s: "s applied twice" would be an empty claim)."""
    for label, fn, why in _GAIN_REL:
        v = fn(s)
        if abs(v - s) <= 1e-3 * max(abs(s), 1e-3):
            continue
        if abs(g_abs - v) <= 1e-3 * max(abs(v), 1e-3):
            return f"gain {g_abs:.6g} = {label} instead of s = {s:.6g}" + (f" ({why})" if why else "")
    return f"gain {g_abs:.6g} instead of s = {s:.6g} ({g_abs / s:.6g} x s)"


def gain_findings(gain: Arr, tol: Arr, valid: Arr, s: float, units_row: Arr, units_index: Arr, slack: float = 6.0) -> list[Finding]:
    """Findings for gains ``[U, n]`` (relative to ``s``): uniform, per pair band, or per token."""
    bad = valid & (np.abs(gain - 1.0) > slack * tol + 1e-12)
    if not bad.any():
        return []
    n = gain.shape[1]
    vals = gain[bad]
    med = float(np.median(vals))
    same = np.abs(gain - med) <= slack * tol + 1e-9
    if (valid & same)[valid].mean() >= 0.97:
        return [Finding("gain", _gain_words(med * s, s) + " on every pair and token", "uniform", {"pairs": list(range(n))},
                        {"gain": med * s}, {"gain": s})]
    pairs = np.nonzero(bad.any(axis=0))[0]
    tokens = np.nonzero(bad.any(axis=1))[0]
    if bad[:, pairs].sum() >= 0.9 * valid[:, pairs].sum():
        g = [float(np.median(gain[valid[:, j], j])) * s for j in pairs]
        return [Finding("gain", f"pairs {ranges(pairs)}: {_gain_words(float(np.median(g)), s)}", "pairs", {"pairs": [int(j) for j in pairs]},
                        {"gain": g}, {"gain": s})]
    g = [float(np.median(gain[t, bad[t]])) * s for t in tokens[:48]]  # the gain where it is wrong, not the token's median
    return [Finding("gain", f"{tokens.size} token(s) (e.g. row {int(units_row[tokens[0]])} token {int(units_index[tokens[0]])}): "
                    f"{_gain_words(float(np.median(g)), s)}", "tokens", {"tokens": [int(t) for t in tokens]}, {"gain": g}, {"gain": s})]


def _fmt(term: str, coef: str) -> str:
    if coef == "0":
        return ""
    if coef == "1":
        return f" + {term}"
    if coef == "-1":
        return f" - {term}"
    sign = "-" if coef.startswith("-") else "+"
    return f" {sign} {coef.lstrip('-').replace('.', ' ')} {term}"


def _formula(codes: tuple[str, str, str, str]) -> str:
    aa, ab, ba, bb = codes
    ya = (_fmt("x_a", aa) + _fmt("x_b", ab)).strip(" +") or "0"
    yb = (_fmt("x_a", ba) + _fmt("x_b", bb)).strip(" +") or "0"
    return f"y_a = {ya}, y_b = {yb}".replace("= - ", "= -")


_EXPECTED = ("s.cos", "-s.sin", "s.sin", "s.cos")


def pair_map_findings(sm: PairSamples, bad_pairs: Arr, slack: float = 6.0) -> list[Finding]:
    """The 2x2 map of the pairs ``bad_pairs`` [n] bool from the heads of each token (needs >= 2 heads)."""
    H = sm.heads
    if H < 2 or not bad_pairs.any():
        return []
    X = np.transpose(np.stack([sm.zin.real, sm.zin.imag], axis=2), (0, 3, 2, 1))  # [N, n, 2, H]
    Y = np.transpose(np.stack([sm.zout.real, sm.zout.imag], axis=2), (0, 3, 2, 1))
    with np.errstate(all="ignore"):
        sv = np.linalg.svd(X, compute_uv=False)  # [N, n, 2]
        smin = sv[..., -1]
        M = Y @ np.linalg.pinv(X)  # [N, n, 2, 2]
    tol_abs = np.max(sm.tol, axis=1)  # [N, n]
    scale = np.sqrt(np.mean(sm.weight, axis=1)) + 1e-300
    good = (smin > 0.05 * scale) & np.isfinite(M).all(axis=(-1, -2))
    good &= bad_pairs[None, :]
    if good.sum() < 4:
        return []
    with np.errstate(all="ignore"):
        err = slack * tol_abs / np.where(smin > 0, smin, np.inf) + 1e-9
    c, sn, g = sm.q.real, sm.q.imag, np.abs(sm.q)
    basis = {"0": np.zeros_like(c), "1": np.ones_like(c), "-1": -np.ones_like(c), "s.cos": c, "-s.cos": -c, "s.sin": sn,
             "-s.sin": -sn, "s": g, "-s": -g}
    entries = (M[..., 0, 0], M[..., 0, 1], M[..., 1, 0], M[..., 1, 1])
    codes: list[str | None] = []
    for e in entries:
        best, frac = None, 0.0
        for name, b in basis.items():
            ok = np.abs(e - b) <= err
            f = float(ok[good].mean())
            if f > frac + 1e-12:
                best, frac = name, f
        if best is None or frac < 0.9:
            codes.append(None)
        else:
            codes.append(best)
    pairs = np.nonzero(bad_pairs & good.any(axis=0))[0]
    where = {"pairs": [int(j) for j in pairs]}
    if all(cd is not None for cd in codes):
        got = (str(codes[0]), str(codes[1]), str(codes[2]), str(codes[3]))
        if got == _EXPECTED:
            return []
        diff = [i for i in range(4) if got[i] != _EXPECTED[i]]
        pattern = "formula"
        note = ""
        if got == ("1", "0", "0", "1"):
            pattern, note = "identity", " (not rotated: the input passed through)"
        elif all(cd == "0" for cd in got):
            pattern, note = "zero", " (the pair is zeroed)"
        elif len(diff) == 1 and got[diff[0]].lstrip("-") == _EXPECTED[diff[0]].lstrip("-"):
            pattern, note = "sign", " (one term with the wrong sign: not a rotation)"
        elif got == ("s.sin", "s.cos", "s.cos", "-s.sin") or got == ("-s.sin", "s.cos", "s.cos", "s.sin"):
            pattern, note = "reflection", " (a reflection: the pair's two outputs exchanged)"
        words = f"pairs {ranges(pairs)} compute {_formula(got)} instead of {_formula(_EXPECTED)}{note}"
        return [Finding("pair_map", words, pattern, where, {"map": list(got)}, {"map": list(_EXPECTED)})]
    with np.errstate(all="ignore"):
        det = np.linalg.det(M)
    dets = det[good]
    qq = np.abs(sm.q[good]) ** 2
    if dets.size and np.all(dets < -0.5 * qq):
        return [Finding("pair_map", f"pairs {ranges(pairs)} are reflections, not rotations (det of the 2x2 map < 0): "
                        "a pair's two outputs (or inputs) exchanged, or one of them negated", "reflection", where,
                        {"det": float(np.median(dets))}, {"det": float(np.median(qq))})]
    t, jj = np.argwhere(good)[0]
    m = M[t, jj]
    e = np.array([[c[t, jj], -sn[t, jj]], [sn[t, jj], c[t, jj]]])
    return [Finding("pair_map", f"pairs {ranges(pairs)} are not rotated as pairs: the 2x2 map is no rotation and no fixed formula "
                    f"(e.g. token {int(t)} pair {int(jj)}: [[{m[0, 0]:.4g}, {m[0, 1]:.4g}], [{m[1, 0]:.4g}, {m[1, 1]:.4g}]] "
                    f"instead of [[{e[0, 0]:.4g}, {e[0, 1]:.4g}], [{e[1, 0]:.4g}, {e[1, 1]:.4g}]])", "mixed", where,
                    {"example": m.tolist()}, {"example": e.tolist()})]


def conformal_formula(q: Arr, pooled: Arr, ptol: Arr, valid: Arr, bad_pairs: Arr, slack: float = 6.0) -> list[Finding]:
    """A rotation-like map ``z_out = (a + i b) z_in`` whose ``a`` and ``b`` are fixed formulas of the spec's angle
    other than ``s cos`` and ``s sin`` (the attention factor on cos only, sin unscaled, ...).

    ``q``: the spec's ``s e^{i phi}`` [N, n]; ``pooled``: measured ``z_out / (q z_in)`` [N, n]."""
    g = np.abs(q)
    with np.errstate(all="ignore"):
        cu, su = q.real / np.where(g > 0, g, 1.0), q.imag / np.where(g > 0, g, 1.0)
    with np.errstate(all="ignore"):  # ptol is inf (and q may be 0) on uninformative samples
        A = pooled * q
        tol = slack * ptol * g + 1e-12
    sel = valid & bad_pairs[None, :] & (slack * ptol < 0.25)  # informative samples only: the basis values must be told apart
    if sel.sum() < 4 or sel.sum() < 0.5 * (valid & bad_pairs[None, :]).sum():
        return []
    basis = {"s cos": q.real, "cos": cu, "-s cos": -q.real, "-cos": -cu, "s sin": q.imag, "sin": su, "-s sin": -q.imag,
             "-sin": -su, "0": np.zeros_like(cu), "1": np.ones_like(cu), "s": g, "-1": -np.ones_like(cu)}
    picked = []
    for part in (A.real, A.imag):
        fracs = sorted(((float((np.abs(part - v) <= tol)[sel].mean()), name) for name, v in basis.items()), reverse=True)
        (frac, best), (second, _) = fracs[0], fracs[1]
        if frac < 0.95 or second >= 0.5:
            return []
        picked.append(best)
    if picked == ["s cos", "s sin"]:
        return []
    pairs = np.nonzero(bad_pairs)[0]
    words = (f"pairs {ranges(pairs)} are multiplied by ({picked[0]}) + i ({picked[1]}) instead of (s cos) + i (s sin): "
             "a rotation-like map with another formula" + (" (the attention factor on one of cos, sin only)"
                                                          if sorted(picked) in (["cos", "s sin"], ["s cos", "sin"]) else ""))
    return [Finding("pair_map", words, "formula", {"pairs": [int(j) for j in pairs]}, {"map": picked}, {"map": ["s cos", "s sin"]})]
