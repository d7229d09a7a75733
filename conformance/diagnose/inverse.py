"""Inverse diagnosis: read the rotation a backend actually applied, for bugs no decoy anticipates.

For every rotated pair the output is ``s R(phi) x`` (docs/spec.md section 2). Writing a pair as
a complex number ``z = x_a + i x_b``, the backend's *effective angle* and *gain* are::

    phi_eff = arg(z_out * conj(z_in))         gain = |z_out| / |z_in|

(summed over heads, so a token's pair is measured on all its heads at once; the backward pass
rotates by ``-phi``; a ``cos_sin`` table gives ``phi = atan2(sin, cos)``). From those:

- per pair, an *effective frequency* ``w_eff``: ``phi_eff = w_eff p + c`` over the tokens, read
  from the differences between tokens (smallest position gap first, then unwrapped through
  larger gaps), with its uncertainty ``sigma_w`` from the angle noise the error model allows;
- per token, an *effective position* ``p_eff`` (assuming the spec's frequencies): the residual
  angles ``phi_eff - w p`` unwrapped from the lowest frequency to the highest;
- per pair, the median gain (against ``s``), and which channels outside the rotary window changed.

These are described in words ("pairs 16-31 use frequencies 8x too small", "effective positions
= p rounded to a multiple of 16 past 256", "gain 1 instead of s", "rotation reversed on pairs
0-7") and handed to the parametric fits (:mod:`conformance.bugs.fit`) as seeds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.layout import PairMap, pair_axes, pair_map
from roperef.spec import PAIRINGS, RopeSpec

from ..bugs.rounding import round_to
from ..cases.case import GoldenCase
from ..error_model.tolerance import Resolved, case_angles, position_rows
from .effective import pair_frequency

__all__ = ["inverse_diagnosis", "PairView", "pair_view"]

Arr = np.ndarray
_TWO_PI = 2.0 * math.pi


def _wrap(a: Arr) -> Arr:
    return (a + math.pi) % _TWO_PI - math.pi


@dataclass
class PairView:
    """Per (token, pair): effective angle, gain, weight (|z_in|^2 over heads; 0 = undefined),
    the position driving the pair, and the angle noise the error model allows."""

    phi: Arr
    gain: Arr
    weight: Arr
    pos: Arr
    sigma: Arr
    spread: float  # median relative spread of per-head gains (0 for an exact rotation)


def _maps(spec: RopeSpec, pairing: str | None) -> PairMap:
    if pairing is None or pairing == spec.pairing:
        return pair_map(spec)
    return pair_map(RopeSpec(spec.head_dim, rotary_dim=spec.rotary_dim, rotary_start=spec.rotary_start, pairing=pairing))


def pair_view(case: GoldenCase, actual: Mapping[str, Arr], r: Resolved, pairing: str | None = None) -> PairView | None:
    """The effective rotation of every (token, pair) of a forward/backward/cos_sin output."""
    spec, a = case.spec, case.arrays
    if case.stage == "cos_sin":
        cos = np.asarray(actual["cos"], dtype=np.float64)
        sin = np.asarray(actual["sin"], dtype=np.float64)
        grid = cos.shape[:-1]
        phi, gain, weight, spread = np.arctan2(sin, cos), np.hypot(cos, sin), np.ones_like(cos), 0.0
    elif case.stage in ("forward", "backward"):
        name, out = ("x", "y") if case.stage == "forward" else ("grad", "grad_x")
        x = np.asarray(a[name], dtype=np.float64)
        y = np.asarray(actual[out], dtype=np.float64)
        pm = _maps(spec, pairing)
        if case.stage == "backward":
            pm = pm.transposed()
        zin = x[..., pm.in_a] + 1j * x[..., pm.in_b]
        zout = y[..., pm.out_a] + 1j * y[..., pm.out_b]
        prod = np.sum(zout * np.conj(zin), axis=-2)
        weight = np.sum(np.abs(zin) ** 2, axis=-2)
        phi = np.angle(prod) * (-1.0 if case.stage == "backward" else 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.sqrt(np.sum(np.abs(zout) ** 2, axis=-2) / weight)
            per_head = np.abs(zout) / np.abs(zin)
            ok = np.abs(zin) > 1e-3 * np.sqrt(np.mean(np.abs(zin) ** 2) + 1e-300)
            med = np.median(per_head[ok]) if ok.any() else 1.0
            spread = float(np.median(np.abs(per_head[ok] - med)) / max(med, 1e-300)) if ok.any() else 0.0
        grid = x.shape[:-2]
    else:
        return None
    if not np.isfinite(phi).all():
        phi = np.where(np.isfinite(phi), phi, 0.0)
        weight = np.where(np.isfinite(gain), weight, 0.0)
    rows = position_rows(spec, a["positions"], grid)
    pos = np.moveaxis(rows, 0, -1)[..., pair_axes(spec)].astype(np.float64)
    ang, logw, kappa, _s = case_angles(spec, a["positions"], grid)
    sigma = r.c_out * r.u_out + r.c_tab * r.u_tab + r.u_ang * ang * (r.c_ang + r.c_log * logw + r.c_blend * kappa) + 1e-15
    n = phi.shape[-1]
    return PairView(phi.reshape(-1, n), gain.reshape(-1, n), weight.reshape(-1, n), pos.reshape(-1, n), sigma.reshape(-1, n), spread)


# ----------------------------------------------------------------------------- frequencies


def _pair_frequency(p: Arr, phi: Arr, sig: Arr, prior: float) -> tuple[float, float, float, bool]:
    """``(w_eff, sigma_w, intercept, consistent)`` for one pair from its tokens
    (:func:`conformance.diagnose.effective.pair_frequency`: unwrapped through gaps that at most double)."""
    return pair_frequency(p, phi, sig, prior)


def _frequencies(view: PairView, w_spec: Arr) -> tuple[Arr, Arr, Arr, Arr]:
    n = w_spec.size
    w_eff, sig_w, icpt = np.full(n, math.nan), np.full(n, math.nan), np.full(n, math.nan)
    ok = np.zeros(n, dtype=bool)
    for j in range(n):
        use = view.weight[:, j] > 1e-12 * max(float(view.weight.max()), 1e-300)
        if use.sum() < 2:
            continue
        w_eff[j], sig_w[j], icpt[j], ok[j] = _pair_frequency(view.pos[use, j], view.phi[use, j], view.sigma[use, j], float(w_spec[j]))
    return w_eff, sig_w, icpt, ok


# ----------------------------------------------------------------------------- positions


def _positions(view: PairView, w_spec: Arr, axes: Arr) -> tuple[Arr, Arr]:
    """``(delta [tokens, axes], consistent [tokens, axes])``: effective position - position per token
    and position row, from the spec's frequencies."""
    n_ax = int(axes.max()) + 1 if axes.size else 1
    tokens = view.phi.shape[0]
    delta = np.full((tokens, n_ax), math.nan)
    good = np.zeros((tokens, n_ax), dtype=bool)
    res_all = _wrap(view.phi - view.pos * w_spec[None, :])
    for ax in range(n_ax):
        cols = np.nonzero((axes == ax) & (w_spec > 0))[0]
        if cols.size == 0:
            continue
        cols = cols[np.argsort(w_spec[cols], kind="stable")]
        d = np.zeros(tokens)
        num, den = np.zeros(tokens), np.zeros(tokens)
        for j in cols:
            wj = w_spec[j]
            u = d * wj + _wrap(res_all[:, j] - d * wj)
            num += u * wj
            den += wj * wj
            d = num / den
        resid = np.abs(_wrap(res_all[:, cols] - d[:, None] * w_spec[None, cols]))
        tol = 6.0 * view.sigma[:, cols] + 1e-9
        delta[:, ax], good[:, ax] = d, np.all(resid <= tol + 6.0 * np.median(view.sigma[:, cols], axis=1, keepdims=True), axis=1)
    return delta, good


# ----------------------------------------------------------------------------- words


def _ranges(idx: Iterable[int]) -> str:
    """``0-3, 7, 9-10``: the sorted indices as runs of consecutive values."""
    ordered = sorted(int(i) for i in idx)
    if not ordered:
        return ""
    out: list[str] = []
    start = prev = ordered[0]
    for i in ordered[1:]:
        if i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = i
    out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(out)


def _ratio_words(ratio: float) -> str:
    if abs(ratio) < 1e-9:
        return "frequency 0 (not rotated)"
    if ratio < 0:
        return "rotation reversed" if abs(ratio + 1) < 0.02 else f"reversed frequencies x{-ratio:.3g}"
    if abs(ratio - 1.0) < 0.01:
        return f"frequencies {abs(ratio - 1.0):.2g} relatively too {'small' if ratio < 1 else 'large'}"
    return f"frequencies {1 / ratio:.3g}x too small" if ratio < 1 else f"frequencies {ratio:.3g}x too large"


def _freq_words(ratio: Arr, ok: Arr, sig_rel: Arr) -> list[str]:
    words: list[str] = []
    bad = ok & (np.abs(ratio - 1.0) > np.maximum(8.0 * sig_rel, 1e-6))
    if not bad.any():
        return words
    groups: list[tuple[list[int], float]] = []
    for j in np.nonzero(bad)[0]:
        if groups and groups[-1][0][-1] == j - 1 and abs(ratio[j] - groups[-1][1]) <= max(0.02 * abs(groups[-1][1]), 8 * sig_rel[j]):
            groups[-1][0].append(int(j))
        else:
            groups.append(([int(j)], float(ratio[j])))
    for members, _ in groups[:6]:
        rs = ratio[members]
        if len(members) > 2 and np.ptp(rs) > 0.05 * np.max(np.abs(rs)):
            words.append(f"pairs {_ranges(members)} use frequencies off by factors {np.min(rs):.3g} to {np.max(rs):.3g}")
        else:
            words.append(f"pairs {_ranges(members)} use {_ratio_words(float(np.median(rs)))}")
    if len(groups) > 6:
        words.append(f"... and {len(groups) - 6} more groups of pairs with wrong frequencies")
    return words


def position_words(p: Arr, delta: Arr) -> list[str]:
    """Describe the effective positions of the tokens whose position is off (p, p_eff integers)."""
    eff = p + delta
    off = np.abs(delta) > 0.5
    if not off.any():
        return []
    n, m = int(off.sum()), off.size
    pe, po = eff[off], p[off]
    if np.all(np.abs(pe) < 0.5):
        return [f"effective positions 0 on {n} of {m} tokens (positions ignored there)"]
    d = np.round(delta[off])
    if np.all(d == d[0]) and n == m:
        return [f"effective positions = p{int(d[0]):+d} on every token"]

    for dtype, short in (("bfloat16", "bfloat16"), ("float16", "float16")):
        if np.array_equal(np.round(eff[off]), round_to(dtype, po)):
            return [f"effective positions = p rounded to {short} on {n} of {m} tokens (|p| >= {int(np.min(np.abs(po)))})"]
    ints = np.round(pe).astype(np.int64)
    if np.all(np.abs(pe - ints) < 0.05) and np.all(ints != 0):
        step = int(np.gcd.reduce(np.abs(ints)))
        if step > 1 and step & (step - 1) == 0 and np.all(np.abs(ints - po) < step):  # rounding moves p by less than a step
            return [f"effective positions = p rounded to a multiple of {step} past {int(np.min(np.abs(po)))} ({n} of {m} tokens)"]
    k = int(np.argmax(np.abs(delta)))
    return [f"effective positions differ on {n} of {m} tokens (e.g. p={int(p.reshape(-1)[k])} acts as {eff.reshape(-1)[k]:.6g})"]


def _passthrough(case: GoldenCase, actual: Mapping[str, Arr]) -> list[int]:
    if case.stage not in ("forward", "backward"):
        return []
    spec = case.spec
    pm = pair_map(spec) if case.stage == "forward" else pair_map(spec).transposed()
    rotated = set(pm.out_a.tolist()) | set(pm.out_b.tolist())
    keep = [c for c in range(spec.head_dim) if c not in rotated]
    if not keep:
        return []
    name, out = ("x", "y") if case.stage == "forward" else ("grad", "grad_x")
    x = np.asarray(case.arrays[name], dtype=np.float64)[..., keep]
    y = np.asarray(actual[out], dtype=np.float64)[..., keep]
    with np.errstate(invalid="ignore"):
        changed = np.any((x != y) & ~(np.isnan(x) & np.isnan(y)), axis=tuple(range(x.ndim - 1)))
    return [keep[i] for i in np.nonzero(changed)[0]]


def inverse_diagnosis(case: GoldenCase, actual: Mapping[str, Arr], r: Resolved) -> dict[str, Any]:
    """``{"words": [...], "hints": {...}, ...}``: what the output says about the rotation it applied."""
    out: dict[str, Any] = {"words": [], "hints": {}}
    spec = case.spec
    changed = _passthrough(case, actual)
    if changed:
        out["words"].append(f"channels outside the rotary window changed: {_ranges(np.asarray(changed))}")
        out["passthrough_changed"] = changed
    if case.stage == "inv_freq":
        w, s = inv_freq(spec, int(np.asarray(case.arrays["seq_len"])))
        got = np.asarray(actual["inv_freq"], dtype=np.float64)
        if got.shape == w.shape:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(w > 0, got / np.where(w > 0, w, 1.0), np.where(got == 0, 1.0, np.inf))
            sig = np.full(w.shape, r.u_ang * 30 + r.u_out * 4)
            out["words"] += _freq_words(ratio, np.isfinite(ratio), sig)
            out["hints"].update(freqs=got, freq_sigma=np.maximum(np.abs(w) * sig, 1e-300))
        sa = float(np.asarray(actual["attention_factor"], dtype=np.float64))
        if abs(sa - s) > 1e-6 * abs(s) + 8 * r.u_out:
            out["words"].append(f"attention factor {sa:.6g} instead of {s:.6g}")
        return out
    if case.stage == "apply":
        return out
    view = pair_view(case, actual, r)
    if view is None:
        return out
    seq = max(int(position_rows(spec, case.arrays["positions"]).max()) + 1, 1)
    w_spec, s = inv_freq(spec, seq)
    if view.spread > 0.02:
        alt = {p: v for p in PAIRINGS if p != spec.pairing and spec.vision is None
               if (v := pair_view(case, actual, r, p)) is not None}
        fits = {p: v.spread for p, v in alt.items() if v.spread < 0.2 * view.spread}
        if fits:
            best = min(fits, key=fits.__getitem__)
            out["words"].append(f"the output is a rotation under pairing '{best}', not '{spec.pairing}'")
            out["pairing"] = best
            view = alt[best]
        else:
            out["words"].append("the output is not a rotation of the input pairs (per-head gains differ by "
                                f"{100 * view.spread:.2g}% typically): values mixed across pairs or corrupted")
    use = view.weight > 1e-12 * max(float(view.weight.max()), 1e-300)
    gains = view.gain[use]
    if gains.size:
        g = float(np.median(gains))
        if abs(g - abs(s)) > max(0.01 * abs(s), 30 * float(np.median(view.sigma))):
            what = (" (attention factor missing)" if abs(g - 1) < 0.01 and s != 1
                    else " (attention factor squared)" if abs(g - s * s) < 0.01 * s * s else "")
            out["words"].append(f"gain {g:.4g} instead of s={s:.4g}{what}")
        out["gain"] = g
    w_eff, sig_w, icpt, ok = _frequencies(view, w_spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(w_spec != 0, w_eff / np.where(w_spec != 0, w_spec, 1.0), np.where(np.abs(w_eff) < 1e-12, 1.0, np.inf))
        sig_rel = np.where(w_spec != 0, sig_w / np.abs(np.where(w_spec != 0, w_spec, 1.0)), np.inf)
    freq_ok = ok & np.isfinite(ratio)
    out["hints"].update(freqs=np.where(freq_ok, w_eff, np.nan), freq_sigma=np.where(freq_ok, sig_w, np.nan))
    fw = _freq_words(ratio, freq_ok, sig_rel)
    spec_like = freq_ok & (np.abs(ratio - 1.0) <= np.maximum(8.0 * sig_rel, 1e-6))
    axes = pair_axes(spec)
    delta, good = _positions(view, w_spec, axes)
    pos_rows = view.pos[:, [int(np.argmax(axes == ax)) for ax in range(delta.shape[1])]]
    consistent = good.all(axis=1)
    pw: list[str] = []
    if consistent.mean() >= 0.25 and np.nanmax(np.abs(delta[consistent])) > 0.5:
        dd = np.round(delta[consistent])
        if consistent.mean() > 0.5:
            pw = position_words(pos_rows[consistent], dd)
        values, counts = np.unique(dd, return_counts=True)
        mode = int(values[np.argmax(counts)])
        if mode:
            out["hints"]["shift"] = mode  # seeds the fit of positions:shifted
    if pw and (not fw or spec_like.sum() < freq_ok.sum() // 2):
        out["words"] += pw
    elif fw:
        out["words"] += fw
    elif pw:
        out["words"] += pw
    if not out["words"]:
        out["words"].append("every pair rotates at its spec frequency with gain s: the error is not a rotation-angle or gain "
                            "pattern (e.g. rounding of the output or of the tables)")
    out["frequency_ratio"] = [None if not freq_ok[j] else round(float(ratio[j]), 6) for j in range(ratio.size)]
    return out
