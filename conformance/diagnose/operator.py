"""Measure the operator a backend computes from a failing case's own data, and describe it along every axis.

The case's heads (and tokens sharing a position) are samples of the per-(token, pair) map
(:mod:`.samples`). In order:

1. **pass-through** channels outside the rotary window must be copied exactly;
2. **channel map**: the spec's pair map must conserve every pair's energy; when it does not, the
   other pairings and window ends are tried, then a permutation of the output pairs
   (``output pair k holds input pair sigma(k)``);
3. **rotation, head by head**: ``rel = z_out / (q z_in)`` per (token, head, pair). When the heads
   of a token agree, the map is a rotation with a gain on every pair (a head-independent rotation);
   it is pooled over the heads and described by
   - an **angle map** ``psi = k phi + c`` (reversed, no rotation, doubled, ``pi/2 - phi``, ...),
   - else the **position row** of each pair (mRoPE / vision rows),
   - else **effective positions** per token (a table, :mod:`.describe_positions`) when every token's
     angles are one position's, else **effective frequencies** per pair (a signature,
     :mod:`.describe_frequencies`),
   - and the **gain** per pair / token;
4. when the heads disagree: heads that **copy** another head, then the effective positions per
   (token, head) (unrotated heads, transposed layouts), else the **2x2 pair map** itself
   (:func:`.describe_maps.pair_map_findings`: a sign error, a reflection, no fixed formula).

Every sample within 4x its bound counts as right; a case whose samples are all right has no
finding here (its deviation is small: see :mod:`.precision`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.layout import PairMap, pair_map

from ..cases.case import GoldenCase
from ..error_model.tolerance import Resolved
from .describe_frequencies import describe_frequencies
from .describe_maps import angle_map_findings, conformal_formula, gain_findings, pair_map_findings
from .describe_positions import Units, describe_positions
from .describe_rounding import rounding_findings
from .effective import angle_of, effective_positions, match_positions, pair_frequency
from .findings import Finding, ranges
from .samples import PairSamples, case_seq_len, channel_candidates, energy_conserved, pair_samples, wrap

__all__ = ["Measurement", "measure_operator", "SLACK"]

Arr = np.ndarray
#: a sample within this many times its bound is taken as right when describing the operator
SLACK = 4.0
_ROW_NAMES = {"mrope": ("t", "h", "w"), "vision": ("h", "w")}


@dataclass
class Measurement:
    """What the case's own data says about the operator."""

    findings: list[Finding] = field(default_factory=list)
    channel: str = "spec"
    rotation: float | None = None  # fraction of (token, pair) whose heads agree on one rotation
    right: float | None = None  # fraction of samples within SLACK x their bound
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"findings": [f.to_dict() for f in self.findings], "channel_map": self.channel,
                "rotation_fraction": self.rotation, "right_fraction": self.right, "notes": list(self.notes)}


def _inv_freq_stage(case: GoldenCase, actual: Mapping[str, Arr], bound: Mapping[str, Arr]) -> Measurement:
    m = Measurement()
    w, s = inv_freq(case.spec, case_seq_len(case))
    got = np.asarray(actual["inv_freq"], dtype=np.float64)
    if got.shape != w.shape:
        return m
    bnd = np.asarray(bound["inv_freq"], dtype=np.float64)
    sig = bnd / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(w > 0, bnd / np.where(w > 0, w, 1.0), 0.0)

    def verify(w_model: Arr) -> bool:
        return bool(np.all(np.abs(got - w_model) <= SLACK * rel * np.abs(w_model) + bnd))

    m.findings += describe_frequencies(got, sig, w, np.isfinite(got), case.spec, verify=verify)
    sa = float(np.asarray(actual["attention_factor"], dtype=np.float64))
    if abs(sa - s) > 2.0 * float(np.asarray(bound["attention_factor"])):
        m.findings.append(Finding("attention_factor", f"attention factor {sa:.6g} instead of {s:.6g}"
                                  + (" (s^2)" if abs(sa - s * s) <= 1e-6 * s * s else " (1: not applied)" if sa == 1.0 else ""),
                                  "value", {}, sa, s))
    return m


def _passthrough(case: GoldenCase, actual: Mapping[str, Arr]) -> list[int]:
    if case.stage not in ("forward", "backward", "apply"):
        return []
    spec = case.spec
    pm = pair_map(spec)
    rotated = set(pm.out_a.tolist()) | set(pm.out_b.tolist()) | set(pm.in_a.tolist()) | set(pm.in_b.tolist())
    keep = [c for c in range(spec.head_dim) if c not in rotated]
    if not keep:
        return []
    name, out = ("grad", "grad_x") if case.stage == "backward" else ("x", "y")
    x = np.asarray(case.arrays[name], dtype=np.float64)[..., keep]
    y = np.asarray(actual[out], dtype=np.float64)[..., keep]
    if x.shape != y.shape:
        return []
    with np.errstate(invalid="ignore"):
        changed = np.any((x != y) & ~(np.isnan(x) & np.isnan(y)), axis=tuple(range(x.ndim - 1)))
    return [keep[i] for i in np.nonzero(changed)[0]]


def _rotated_tensors(case: GoldenCase, actual: Mapping[str, Arr], expected: Mapping[str, Arr],
                     bound: Mapping[str, Arr]) -> tuple[Arr, Arr, Arr, Arr] | None:
    """``(input, output, expected, bound)`` of a stage that rotates one tensor (x -> y; grad -> grad_x for
    backward) as float64 arrays of one shape ``[..., H, D]``; None for other stages or shapes."""
    if case.stage not in ("forward", "backward", "apply"):
        return None
    name, out = ("grad", "grad_x") if case.stage == "backward" else ("x", "y")
    x = np.asarray(case.arrays[name], dtype=np.float64)
    y = np.asarray(actual[out], dtype=np.float64)
    e = np.asarray(expected[out], dtype=np.float64)
    b = np.asarray(bound[out], dtype=np.float64)
    if not (x.shape == y.shape == e.shape == b.shape) or x.ndim < 2:
        return None
    return x, y, e, b


def _unrotated(case: GoldenCase, actual: Mapping[str, Arr], expected: Mapping[str, Arr],
               bound: Mapping[str, Arr]) -> tuple[Finding, bool] | None:
    """(token, head) units that return their input bit for bit where the spec's output differs from it (a rotation
    that never ran there: a loop, tile or head bound), whatever the pairing; ``(finding, every deviating unit is one)``."""
    tensors = _rotated_tensors(case, actual, expected, bound)
    if tensors is None:
        return None
    x, y, e, b = tensors
    H, D = x.shape[-2], x.shape[-1]
    xs, ys, es, bs = (v.reshape(-1, H, D) for v in (x, y, e, b))
    with np.errstate(invalid="ignore"):
        moves = np.any(np.abs(es - xs) > bs, axis=-1)  # [N, H]: the spec rotates this unit visibly
        deviates = np.any(~(np.abs(ys - es) <= bs), axis=-1)
    same = np.all(ys == xs, axis=-1) & moves
    if not same.any():
        return None
    N = xs.shape[0]
    heads = np.nonzero(same.any(axis=0))[0]
    toks = np.nonzero(same.any(axis=1))[0]
    every = bool(np.all(same[deviates]))
    where = {"heads": [int(h) for h in heads], "tokens": [int(t) for t in toks[:64]]}
    measured = {"unrotated_units": int(same.sum())}
    if same[moves].all():
        return Finding("angle", "no rotation: every (token, head) returns its input unchanged (the rotation never ran)", "identity",
                       where, measured, {"unrotated_units": 0}), every
    if heads.size < H and np.all(same[:, heads] | ~moves[:, heads]):
        return Finding("head", f"head{'s' if heads.size > 1 else ''} {ranges(heads)} not rotated: they return their input "
                       "unchanged on every token", "zero", where, measured, {"unrotated_units": 0}), every
    if toks.size < N and np.all(same[toks] | ~moves[toks]):
        return Finding("token", f"{toks.size} token(s) not rotated (e.g. flattened token {int(toks[0])}): they return their input "
                       "unchanged on every head", "zero", where, measured, {"unrotated_units": 0}), every
    return Finding("token", f"{int(same.sum())} (token, head) units not rotated: they return their input unchanged", "zero",
                   where, measured, {"unrotated_units": 0}), every


def _unwritten_channels(case: GoldenCase, actual: Mapping[str, Arr], expected: Mapping[str, Arr],
                        bound: Mapping[str, Arr]) -> list[Finding]:
    """Rotated output channels that hold their own input, or 0, on every (token, head) where the spec's value differs
    (a store that never ran there: a pair group, a vector remainder)."""
    tensors = _rotated_tensors(case, actual, expected, bound)
    if tensors is None:
        return []
    x, y, e, b = tensors
    D = x.shape[-1]
    pm = pair_map(case.spec) if case.stage != "backward" else pair_map(case.spec).transposed()
    rotated = np.zeros(D, dtype=bool)
    rotated[np.concatenate([pm.out_a, pm.out_b])] = True
    xs, ys, es, bs = (v.reshape(-1, D) for v in (x, y, e, b))
    with np.errstate(invalid="ignore"):
        differs = np.abs(es - xs) > bs  # the spec moves this element visibly
        wrong = ~(np.abs(ys - es) <= bs)
    found: list[Finding] = []
    for what, hit, pattern in (("keep their input bit for bit (the rotation never wrote them)", ys == xs, "unwritten"),
                               ("are 0 (never written)", (ys == 0) & (es != 0), "zero")):
        seen = differs if pattern == "unwritten" else es != 0  # where a written channel would differ from the hit
        cols = [c for c in range(D) if rotated[c] and (seen[:, c] & wrong[:, c]).sum() >= 2 and np.all(hit[:, c] | ~seen[:, c])]
        if not cols or len(cols) == int(rotated.sum()) and pattern == "unwritten":
            continue  # every rotated channel unwritten: the whole rotation never ran (said by the unrotated units)
        found.append(Finding("channel", f"output channels {ranges(cols)} {what} on every (token, head)", pattern, {"channels": cols},
                             {"channels": cols}, {"channels": []}))
    return found


def _over_where(sm: PairSamples, rel: Arr, tol: Arr, valid: Arr) -> str:
    """Where the samples over their bound are (batch rows, heads, pairs), in words ("" when everywhere)."""
    over = valid & (np.abs(rel - 1.0) > tol)
    if not over.any():
        return ""
    parts = []
    rows = np.unique(sm.row[over.any(axis=(1, 2))])
    if rows.size < np.unique(sm.row).size:
        parts.append(f"{'packed sequence' if len(sm.grid) == 1 else 'batch row'}{'s' if rows.size > 1 else ''} {ranges(rows)}")
    heads = np.nonzero(over.any(axis=(0, 2)))[0]
    if heads.size < sm.heads:
        parts.append(f"head{'s' if heads.size > 1 else ''} {ranges(heads)}")
    pairs = np.nonzero(over.any(axis=(0, 1)))[0]
    if pairs.size < sm.n_pairs:
        parts.append(f"pairs {ranges(pairs)}")
    return f"; the samples over their bound are on {', '.join(parts)} only" if parts else ""


def _resolution(sm: PairSamples, ptol: Arr, pvalid: Arr) -> float:
    """The largest position whose angles stay within the bound on every pair (median over tokens): below it, a
    position does not show at the declared precision."""
    if sm.pos is None or not (sm.w > 0).any():
        return 0.0
    with np.errstate(all="ignore"):
        per = np.where(pvalid & (sm.w[None, :] > 0), SLACK * ptol / np.where(sm.w > 0, sm.w, 1.0)[None, :], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pairs of frequency 0 have no entry
        med = np.nanmedian(per, axis=0) if np.isfinite(per).any() else np.array([0.0])
    med = med[np.isfinite(med)]
    return float(np.min(med)) if med.size else 0.0


def _local_deviation(sm: PairSamples, rel: Arr, tol: Arr, valid: Arr) -> Finding | None:
    """A small deviation (within a few bounds) confined to some batch rows or heads: where it is."""
    over = valid & (np.abs(rel - 1.0) > tol)
    if not over.any():
        return None
    rows = np.unique(sm.row[over.any(axis=(1, 2))])
    heads = np.nonzero(over.any(axis=(0, 2)))[0]
    word = "packed sequence" if len(sm.grid) == 1 else "batch row"
    if rows.size < np.unique(sm.row).size:
        return Finding("row", f"a small deviation (within {SLACK:g}x the bound) on {word}{'s' if rows.size > 1 else ''} "
                       f"{ranges(rows)} only; the other {word}s are right", "small-deviation", {"rows": [int(r) for r in rows]},
                       {"rows_over_bound": [int(r) for r in rows]}, {"rows_over_bound": []})
    if heads.size < sm.heads:
        return Finding("head", f"a small deviation (within {SLACK:g}x the bound) on head{'s' if heads.size > 1 else ''} "
                       f"{ranges(heads)} only; the other heads are right", "small-deviation", {"heads": [int(h) for h in heads]},
                       {"heads_over_bound": [int(h) for h in heads]}, {"heads_over_bound": []})
    return None


def _frac(mask: Arr, valid: Arr) -> float:
    return float(mask[valid].mean()) if valid.any() else 1.0


def _choose_channels(case: GoldenCase, actual: Mapping[str, Arr], expected: Mapping[str, Arr], bound: Mapping[str, Arr],
                     sm: PairSamples, w: Arr, s: float) -> tuple[PairSamples, list[Finding]]:
    valid = sm.weight > 0
    base = _frac(energy_conserved(sm, SLACK), valid)
    if base >= 0.9 or case.stage == "cos_sin":
        return sm, []
    best, best_f = sm, base
    for label, pm in channel_candidates(case.spec)[1:]:
        alt = pair_samples(case, actual, expected, bound, w, s, pm, label)
        if alt is None:
            continue
        stay = pair_samples(case, actual, expected, bound, w, s, PairMap(pm.out_a, pm.out_b, pm.out_a, pm.out_b), "stay")
        if stay is not None:  # channels that pass through unchanged conserve their energy too: that is no rotation
            moved = np.abs(alt.zout - stay.zin) > SLACK * alt.tol + 1e-300
            if _frac(moved, alt.weight > 0) < 0.5:
                continue
        f = _frac(energy_conserved(alt, SLACK), alt.weight > 0)
        if f > best_f + 0.1 and f >= 0.9:
            best, best_f = alt, f
    out: list[Finding] = []
    if best is not sm:
        words = f"channel map: the pairs are {best.label} (the spec's pairing is '{case.spec.pairing}'"
        words += f", window channels {case.spec.rotary_start}-{case.spec.rotary_start + case.spec.resolved_rotary_dim - 1})"
        out.append(Finding("channel", words, "pairing", {}, best.label, "spec"))
        return best, out
    perm = _pair_permutation(sm)
    if perm is not None:
        src, words, pattern = perm
        k = np.nonzero(src != np.arange(src.size))[0]
        out.append(Finding("channel", f"channel map: {words} (output pairs {ranges(k)})", pattern, {"pairs": [int(v) for v in k]},
                           {"source_pair": [int(v) for v in src]}, {"source_pair": list(range(src.size))}))
        # written to the wrong place (output pair k is pair src[k] rotated by its own angle) or read from the wrong
        # place (output pair k rotates input pair src[k] by pair k's angle): the relabelling that leaves more right
        inv = np.argsort(src)
        wrote = PairSamples(**{**sm.__dict__, "zout": sm.zout[..., inv], "label": "output pairs permuted"})
        read = PairSamples(**{**sm.__dict__, "zin": sm.zin[..., src], "weight": sm.weight[..., src], "label": "input pairs permuted"})
        sm2 = wrote if _right_frac(wrote) >= _right_frac(read) else read
        how = (" and rotated by its source pair's angle (written to the wrong place)" if sm2 is wrote
               else " and rotated by the output pair's angle (read from the wrong place)")
        out[-1] = replace(out[-1], words=out[-1].words + how)
        return sm2, out
    return sm, out


def _right_frac(sm: PairSamples) -> float:
    rel, tol = sm.rel()
    valid = np.isfinite(rel) & np.isfinite(tol)
    return _frac(np.abs(rel - 1.0) <= SLACK * tol, valid)


def _pair_permutation(sm: PairSamples) -> tuple[Arr, str, str] | None:
    """``output pair k holds input pair src[k]`` from energies (``|z_out_k| = g |z_in_src(k)|`` on every sample)."""
    n = sm.n_pairs
    ein = np.sqrt(sm.weight).reshape(-1, n)
    eout = np.abs(sm.zout).reshape(-1, n)
    tol = sm.tol.reshape(-1, n)
    valid = (ein > 0).all(axis=1)
    if valid.sum() < 4:
        return None
    ein, eout, tol = ein[valid], eout[valid], tol[valid]
    src = np.full(n, -1)
    for k in range(n):
        with np.errstate(all="ignore"):
            ratio = eout[:, k][:, None] / ein  # [S, n]
            med = np.median(ratio, axis=0)
            # the bound is the output pair's, the energy the source pair's: both pairs' bounds allowed
            dev = np.max(np.abs(ratio - med[None, :]) / (SLACK * (tol[:, k][:, None] + tol) / ein + 1e-12), axis=0)  # [n]
        dev = np.where((med > 0) & np.isfinite(dev), dev, np.inf)
        order = np.argsort(dev)
        best, second = dev[order[0]], dev[order[1]] if n > 1 else np.inf
        if not (best <= 2.0 and second > max(8.0 * best, 2.0)):  # within twice the bound, clearly apart from the rest
            return None
        src[k] = order[0]
    j = np.arange(n)
    if np.array_equal(src, j) or np.unique(src).size != n:
        return None
    if np.array_equal(src, n - 1 - j):
        return src, "the output pairs are written in mirrored order (output pair k holds pair n-1-k)", "mirrored"
    if np.array_equal(src, j ^ 1):
        return src, "neighbouring output pairs are exchanged (output pair k holds pair k xor 1)", "pairs-swapped"
    d = (src - j) % n
    if np.unique(d).size == 1:
        return src, f"the output pairs are rotated by {int(d[0])} (output pair k holds pair k+{int(d[0])} mod n)", "pairs-rotated"
    return src, "the output pairs are permuted (" + ", ".join(f"{k} <- {int(src[k])}" for k in np.nonzero(src != j)[0][:6]) + ")", "permuted"


def _units(sm: PairSamples, per_head: bool, eff: Arr, ax: int, label: str, sigma: Arr | None = None) -> Units:
    n_tok, H = sm.n_tokens, sm.heads
    assert sm.pos is not None
    if per_head:
        tok = np.repeat(np.arange(n_tok), H)
        head = np.tile(np.arange(H), n_tok)
    else:
        tok = np.arange(n_tok)
        head = np.full(n_tok, -1)
    row_len = int(np.bincount(sm.row).max()) if sm.row.size else 1
    packed = len(sm.grid) == 1
    return Units(sm.pos[ax][tok], eff, sm.row[tok], sm.index[tok], tok, head, H, row_len, packed, label, sigma)


def _row_names(case: GoldenCase) -> tuple[str, ...]:
    spec = case.spec
    if spec.mrope_section is not None:
        return _ROW_NAMES["mrope"]
    if spec.vision is not None:
        return _ROW_NAMES["vision"]
    return ("",)


def _axis_rows(case: GoldenCase, sm: PairSamples, psi: Arr, tol: Arr, valid: Arr, bad_pairs: Arr,
               r: Resolved | None) -> tuple[list[Finding], Arr]:
    """mRoPE / vision: pairs whose angles follow another position row than the spec's."""
    assert sm.pos is not None
    names = _row_names(case)
    A = sm.pos.shape[0]
    moved: dict[tuple[int, int], list[int]] = {}
    explained = np.zeros(sm.n_pairs, dtype=bool)
    for j in np.nonzero(bad_pairs)[0]:
        v = valid[:, j]
        for a in range(A):
            if a == sm.axes[j]:
                continue
            pred = angle_of(sm.pos[a], sm.w[j])
            allowed = SLACK * tol[:, j] + _model_tol(r, sm.pos[a] * sm.w[j], np.full(sm.n_tokens, sm.w[j])) + 1e-9
            if (np.abs(wrap(psi[v, j] - pred[v])) <= allowed[v]).all():
                moved.setdefault((int(sm.axes[j]), a), []).append(int(j))
                explained[j] = True
                break
    out = [Finding("axis_row", f"pairs {ranges(js)} follow position row {names[a]} instead of row {names[sp]}", "row",
                   {"pairs": js}, names[a], names[sp]) for (sp, a), js in moved.items()]
    return out, explained


def _pooled(sm: PairSamples, rel: Arr, tol: Arr) -> tuple[Arr, Arr, Arr]:
    wgt = np.where(np.isfinite(rel), sm.weight, 0.0)
    with np.errstate(all="ignore"):
        num = np.sum(np.where(wgt > 0, rel * wgt, 0.0), axis=1)
        den = np.sum(wgt, axis=1)
        pooled = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan + 0j)
        t = np.sqrt(np.sum(np.where(wgt > 0, (tol * wgt) ** 2, 0.0), axis=1)) / np.where(den > 0, den, 1.0)
    return pooled, np.where(den > 0, t, np.inf), den > 0


def _positions(case: GoldenCase, sm: PairSamples, delta: Arr, psi: Arr, tol: Arr, valid: Arr, per_head: bool) -> tuple[list[Finding], float]:
    """Effective positions of every unit (token, or (token, head)) and their description; the fraction known."""
    assert sm.pos is not None
    A = sm.pos.shape[0]
    d = np.where(valid, delta, np.nan)
    t = np.where(valid, tol, np.inf)
    reach = 2.0 * float(np.max(np.abs(sm.pos))) + 64.0 if sm.pos.size else 0.0
    dp, good, sig = effective_positions(d, t, sm.w, sm.axes, A, SLACK, reach)
    reps = sm.heads if per_head else 1
    names = _row_names(case)
    out: list[Finding] = []
    known_all = np.ones(dp.shape[0], dtype=bool)
    for ax in range(A):
        has = ((sm.axes == ax) & (sm.w > 0)).any()
        if not has:
            continue
        p_unit = np.repeat(sm.pos[ax], reps)
        # a position known to a fraction of a unit is taken as measured; elsewhere (large positions at a coarse
        # precision) the case's own positions and 0 are tried, then a clearly moved estimate is kept
        exact = good[:, ax] & (2.5 * sig[:, ax] <= 0.5)  # sig is from the bound: a worst case, not a standard deviation
        eff = np.where(exact, p_unit + dp[:, ax], np.nan)
        cand = np.unique(np.concatenate([[0.0], sm.pos[ax]]))
        miss = ~np.isfinite(eff)
        estimate = p_unit + dp[:, ax]
        if miss.any():
            idx = match_positions(np.where(valid[miss], psi[miss], np.nan), t[miss], sm.w, sm.axes, A, cand, SLACK)[:, ax]
            rows = np.nonzero(miss)[0]
            picked = np.where(idx >= 0, cand[np.maximum(idx, 0)], np.nan)
            # a consistent estimate known to within a unit or two wins over a candidate it disagrees with
            agrees = ~good[rows, ax] | (sig[rows, ax] > 0.5) | (np.abs(picked - estimate[rows]) <= 0.5 + 2.0 * sig[rows, ax])
            use = (idx >= 0) & agrees
            eff[rows[use]] = picked[use]
        clear = ~np.isfinite(eff) & good[:, ax] & ((np.abs(dp[:, ax]) > 8.0 * SLACK * sig[:, ax]) | (sig[:, ax] <= 0.5))
        eff[clear] = estimate[clear]
        known_all &= np.isfinite(eff) | ~(2.5 * sig[:, ax] <= 0.5)
        label = f"row {names[ax]}" if A > 1 else ""
        precision = np.where(~exact & np.isfinite(sig[:, ax]), sig[:, ax], 0.0)
        units = _units(sm, per_head, eff, ax, label, precision)
        out += describe_positions(units, sm.pos[ax])
    return out, float(known_all.mean()) if known_all.size else 0.0


def _frequencies(case: GoldenCase, sm: PairSamples, psi: Arr, tol: Arr, valid: Arr, r: Resolved | None) -> tuple[list[Finding], float]:
    assert sm.pos is not None
    n = sm.n_pairs
    w_eff, sig, ok = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=bool)
    for j in range(n):
        v = valid[:, j]
        if v.sum() < 2:
            continue
        p = sm.pos[sm.axes[j]][v]
        w_eff[j], sig[j], _c, ok[j] = pair_frequency(p, psi[v, j], tol[v, j], float(sm.w[j]), SLACK)
    measured = np.isfinite(w_eff)
    frac = float(ok[measured].mean()) if measured.any() else 0.0
    p_pair = sm.pos[sm.axes].T  # [N, n]

    def misfit(w_model: Arr) -> float:
        wm = np.broadcast_to(w_model, p_pair.shape)
        res = np.abs(wrap(psi - angle_of(p_pair, wm)))
        allowed = SLACK * tol + _model_tol(r, p_pair * wm, wm) + 1e-9
        return float(np.max(res[valid] / allowed[valid])) if valid.any() else 0.0

    def verify(w_model: Arr) -> bool:
        return misfit(w_model) <= 1.0

    return describe_frequencies(w_eff, sig, sm.w, ok, case.spec, verify=verify, misfit=misfit, seq_len=case_seq_len(case)), frac


def _copies(sm: PairSamples) -> list[Finding]:
    """Heads whose output equals another head's (while their inputs differ).

    A copy is claimed only on samples that distinguish it: head ``g``'s output must be clearly non-zero
    (``|z_out,g| > SLACK * tol``; two zeroed heads are "zeroed", not copies) and not both heads'
    outputs their own unchanged inputs (two unrotated heads are "unrotated", not copies)."""
    out = []
    H = sm.heads
    for h in range(1, H):
        for g in range(h):
            bound = SLACK * np.maximum(sm.tol[:, h], sm.tol[:, g]) + 1e-12
            same_out = np.abs(sm.zout[:, h] - sm.zout[:, g]) <= bound
            diff_in = np.abs(sm.zin[:, h] - sm.zin[:, g]) > 1e-6 * (np.abs(sm.zin[:, h]) + 1e-300)
            signal = np.abs(sm.zout[:, g]) > bound
            unchanged = (np.abs(sm.zout[:, h] - sm.zin[:, h]) <= bound) & (np.abs(sm.zout[:, g] - sm.zin[:, g]) <= bound)
            sel = diff_in & signal & ~unchanged & (sm.weight[:, h] > 0)
            if sel.sum() >= 4 and same_out[sel].mean() >= 0.97:
                out.append(Finding("head", f"head {h}'s output is a copy of head {g}'s (computed from head {g}'s input)", "copied",
                                   {"heads": [h]}, {"source_head": g}, {"source_head": h}))
                break
    return out


def _model_tol(r: Resolved | None, phi_model: Arr, w_model: Arr) -> Arr:
    """The angle error a backend at precision ``r`` may make at a model's own angles (the case's bound is for the spec's)."""
    if r is None:
        return np.zeros_like(phi_model)
    with np.errstate(divide="ignore"):
        logw = np.where(w_model > 0, np.abs(np.log(np.where(w_model > 0, w_model, 1.0))), 0.0)
    return SLACK * r.u_ang * np.abs(phi_model) * (r.c_ang + r.c_log * logw)


def _describe_rotation(case: GoldenCase, sm: PairSamples, pooled: Arr, ptol: Arr, pvalid: Arr,
                       r: Resolved | None) -> tuple[list[Finding], list[str]]:
    """Describe a rotation with a gain per (token, pair) (``pooled`` = z_out / (q z_in)): angle maps, formulas,
    position rows, effective positions or frequencies, gains."""
    out: list[Finding] = []
    notes: list[str] = []
    phi = sm.phi()
    delta = sm.sign * np.angle(pooled)
    gain = np.abs(pooled)
    psi = phi + delta
    maps, _explained = angle_map_findings(phi, delta, ptol, pvalid, case.stage, SLACK, _resolution(sm, ptol, pvalid))
    out += maps
    bad = pvalid & (np.abs(delta) > SLACK * ptol)
    if not maps and bad.any() and sm.pos is not None:
        if sm.pos.shape[0] > 1:
            rows, moved = _axis_rows(case, sm, psi, ptol, pvalid, bad.any(axis=0), r)
            out += rows
            if moved.any():
                bad &= ~moved[None, :]
        formula = conformal_formula(sm.q, pooled, ptol, pvalid, bad.any(axis=0), SLACK) if bad.any() else []
        if formula:
            return out + formula, notes
        if bad.any():
            pos_f, known = _positions(case, sm, delta, psi, ptol, pvalid, False)
            freq_f, consistent = _frequencies(case, sm, psi, ptol, pvalid, r)
            if pos_f and known >= 0.9 and not any(f.pattern == "scaled" for f in pos_f):
                out += pos_f
            elif freq_f and consistent >= 0.75:
                out += freq_f
            elif pos_f and known >= 0.5:
                out += pos_f
                notes.append(f"effective positions known on {100 * known:.0f}% of the tokens only")
            elif freq_f:
                out += freq_f
                notes.append(f"a consistent effective frequency on {100 * consistent:.0f}% of the pairs only")
            else:
                tk = np.nonzero(bad.any(axis=1))[0]
                pj = np.nonzero(bad.any(axis=0))[0]
                out.append(Finding("angle", f"the angles differ from the spec's on pairs {ranges(pj)} of {tk.size} token(s), "
                                   "neither as one position per token nor as one frequency per pair", "unexplained",
                                   {"pairs": [int(j) for j in pj], "tokens": [int(t) for t in tk]},
                                   {"delta": [float(x) for x in delta[bad][:32]]}, {"delta": 0.0}))
    elif not maps and bad.any():
        pj = np.nonzero(bad.any(axis=0))[0]
        out.append(Finding("angle", f"the angles differ from the given tables' on pairs {ranges(pj)}", "unexplained",
                           {"pairs": [int(j) for j in pj]}, None, None))
    if not any(f.pattern in ("identity", "zero") for f in out):
        s_abs = float(np.median(np.abs(sm.q[np.abs(sm.q) > 0]))) if (np.abs(sm.q) > 0).any() else 1.0
        out += gain_findings(gain, ptol, pvalid, s_abs, sm.row, sm.index, SLACK)
    return out, notes


def _table_rows(sm: PairSamples, rel: Arr, tol: Arr, valid: Arr) -> list[Finding]:
    """apply: the (token, head) units rotated with another token's row of the given tables (a transposed layout)."""
    N, H = sm.n_tokens, sm.heads
    theta = np.angle(sm.q)  # [N, n]: each token's table angle
    psi = np.angle(rel * sm.q[:, None, :]).reshape(N * H, -1)
    t = tol.reshape(N * H, -1)
    v = valid.reshape(N * H, -1)
    res = np.abs(wrap(psi[:, None, :] - theta[None, :, :]))  # [U, N, n]
    ok = np.all(~v[:, None, :] | (res <= SLACK * t[:, None, :] + 1e-9), axis=2)
    if not ok.any(axis=1).all():
        return []
    tok = np.repeat(np.arange(N), H)
    units = np.arange(N * H)
    if ok[units, tok].all():
        return []
    head = np.tile(np.arange(H), N)
    start = tok - sm.index[tok]
    T = int(np.bincount(sm.row).max())
    if len(sm.grid) >= 2:
        sigma = start + (sm.index[tok] * H + head) % T
        if ok[units, sigma].all():
            moved = np.nonzero(sigma != tok)[0]
            where = {"tokens": sorted({int(x) for x in tok[moved]}), "heads": sorted({int(x) for x in head[moved]})}
            return [Finding("token", "each head is rotated with the table row of token (t*H + h) mod T of its row: the tensor read "
                            "as [B, H, T, D] instead of [B, T, H, D] (or the reverse)", "transposed", where,
                            {"source_token": sigma.tolist()}, {"source_token": tok.tolist()})]
    ident = np.all(~v | (np.abs(wrap(psi)) <= SLACK * t + 1e-9), axis=1)  # not rotated at all
    off = ~ok[units, tok]
    if off.any() and ident[off].all():
        moved = np.nonzero(off)[0]
        heads = sorted({int(x) for x in head[moved]})
        words = (f"head{'s' if len(heads) > 1 else ''} {ranges(heads)}: not rotated (the given tables not applied)"
                 if len(heads) < H else f"{moved.size} (token, head) units not rotated")
        return [Finding("head" if words.startswith("head") else "token", words, "zero",
                        {"tokens": sorted({int(x) for x in tok[moved]}), "heads": heads}, None, None)]
    same_row = sm.row[None, :] == sm.row[tok][:, None]
    pick = np.where((ok & same_row).any(axis=1), np.argmax(ok & same_row, axis=1), np.argmax(ok, axis=1))
    src = np.where(ok[units, tok], tok, pick)
    moved = np.nonzero(src != tok)[0]
    where = {"tokens": sorted({int(x) for x in tok[moved]}), "heads": sorted({int(x) for x in head[moved]})}
    pairs = ", ".join(f"token {int(tok[u])} head {int(head[u])} -> row of token {int(src[u])}" for u in moved[:4])
    return [Finding("token", f"(token, head) units rotated with other tokens' table rows ({pairs})", "token-map", where,
                    {"source_token": src.tolist()}, {"source_token": tok.tolist()})]


#: per-head descriptions too vague to be preferred over the joint ones (positions per (token, head), table rows)
_VAGUE = frozenset({"table", "unexplained", "mixed", "small-deviation", "token-map", "groups"})


def _per_head(case: GoldenCase, sm: PairSamples, rel: Arr, tol: Arr, valid: Arr, r: Resolved | None) -> list[Finding]:
    """Each head described on its own (heads rotated differently: another theta, another position per head);
    empty unless every deviating head is described without an unexplained part."""
    out: list[Finding] = []
    for h in range(sm.heads):
        v = valid[:, h]
        if not (v & (np.abs(rel[:, h] - 1.0) > SLACK * tol[:, h])).any():
            continue
        found, _notes = _describe_rotation(case, sm, rel[:, h], tol[:, h], v, r)
        if not found or any(f.pattern == "unexplained" for f in found):
            return []
        for f in found:
            where = dict(f.where)
            where["heads"] = [h]
            out.append(Finding("head", f"head {h}: {f.words}", f.pattern, where, f.measured, f.expected))
    return out


def measure_operator(case: GoldenCase, actual: Mapping[str, Arr], expected: Mapping[str, Arr], bound: Mapping[str, Arr],
                     r: Resolved | None = None) -> Measurement:
    """The findings of a failing case from its own data (see the module docstring); ``r``: the precision the case
    is judged at (it widens the tolerance of a model whose angles are larger than the spec's)."""
    if case.stage == "inv_freq":
        return _inv_freq_stage(case, actual, bound)
    m = Measurement()
    changed = _passthrough(case, actual)
    if changed:
        m.findings.append(Finding("channel", f"channels outside the rotary window changed: {ranges(changed)} (they must pass "
                                  "through bit-exactly)", "passthrough", {"channels": changed}, "changed", "unchanged"))
    unrotated = _unrotated(case, actual, expected, bound)
    if unrotated is not None:
        m.findings.append(unrotated[0])
        if unrotated[1]:
            return m
    m.findings += _unwritten_channels(case, actual, expected, bound)
    w, s = inv_freq(case.spec, case_seq_len(case)) if "positions" in case.arrays else (np.zeros(case.spec.n_pairs), 1.0)
    sm = pair_samples(case, actual, expected, bound, w, s)
    if sm is None:
        return m
    sm, chan = _choose_channels(case, actual, expected, bound, sm, w, s)
    m.findings += chan
    m.channel = sm.label
    rel, tol = sm.rel()
    valid = np.isfinite(rel) & np.isfinite(tol)
    right = valid & (np.abs(rel - 1.0) <= SLACK * tol)
    m.right = _frac(right, valid)
    if not (valid & ~right).any():
        where = _over_where(sm, rel, tol, valid)
        m.notes.append(f"every pair of every token and head is within {SLACK:g}x its bound of the spec's rotation{where}")
        rounded = rounding_findings(case, actual, expected, bound, sm, r)
        if rounded:  # a small deviation that is a coarser dtype's rounding (the pass-through channels' too)
            m.findings += rounded
            return m
        local = _local_deviation(sm, rel, tol, valid)
        if local is not None:
            m.findings.append(local)
        return m
    rounded = rounding_findings(case, actual, expected, bound, sm, r)
    if rounded:
        m.findings += rounded
        return m
    H = sm.heads
    pooled, ptol, pvalid = _pooled(sm, rel, tol)
    if H > 1:
        agree = np.all(~valid | (np.abs(rel - pooled[:, None, :]) <= SLACK * tol + 1e-12), axis=1) & pvalid
        informative = pvalid & (SLACK * ptol < 0.5)  # where the allowed error is large, any heads agree
        wrong = informative & (valid & ~right).any(axis=1)  # judged where the output deviates: right samples agree anyway
        base = wrong if wrong.sum() >= 8 else informative if informative.sum() >= 0.25 * pvalid.sum() else pvalid
        m.rotation = _frac(agree, base)
    else:
        m.rotation = 1.0
    phi = sm.phi()
    if m.rotation >= 0.9:
        found, notes = _describe_rotation(case, sm, pooled, ptol, pvalid, r)
        m.findings += found
        m.notes += notes
        return m
    # the heads disagree: copies, per-head positions, else the 2x2 map itself
    copies = _copies(sm)
    m.findings += copies
    delta_h = sm.sign * np.angle(rel)  # [N, H, n]
    units = sm.n_tokens * H
    dh = delta_h.reshape(units, -1)
    th = tol.reshape(units, -1)
    vh = valid.reshape(units, -1)
    ph = np.repeat(phi, H, axis=0)
    bad_pairs = (valid & ~right).any(axis=(0, 1))
    pm = pair_map_findings(sm, bad_pairs, SLACK) if not copies else []
    if pm and pm[0].pattern != "mixed":
        # one fixed 2x2 formula (or a reflection) fits every token's heads: a map, not per-unit positions or table rows
        # (with few pairs, some position or table row fits any single angle)
        m.findings += pm
        return m
    if not copies:
        # each head described on its own first, where that is specific (a head rotating the other way, at p + 1, ...)
        first = _per_head(case, sm, rel, tol, valid, r)
        if first and not any(f.pattern in _VAGUE for f in first):
            m.findings += first
            return m
    if sm.pos is not None and not copies:
        pos_f, known = _positions(case, sm, dh, ph + dh, th, vh, True)
        if pos_f and known >= 0.9:
            m.findings += pos_f
            gains = np.abs(rel).reshape(units, -1)
            m.findings += [f for f in gain_findings(gains, th, vh, 1.0, np.repeat(sm.row, H), np.repeat(sm.index, H), SLACK)
                           if f.pattern == "uniform"]
            return m
    if case.stage == "apply" and not copies:
        rows_f = _table_rows(sm, rel, tol, valid)
        if rows_f:
            m.findings += rows_f
            return m
    if not copies:
        heads_f = _per_head(case, sm, rel, tol, valid, r)
        if heads_f:
            m.findings += heads_f
            return m
        if pm:
            m.findings += pm
            return m
        heads = [h for h in range(H) if (valid[:, h] & ~right[:, h]).any()]
        m.findings.append(Finding("head", f"the heads of a token are not rotated alike (heads {ranges(heads)} deviate; the map "
                                  "differs from head to head or is not a rotation)", "heads-differ", {"heads": heads},
                                  {"right_fraction_per_head": [_frac(right[:, h], valid[:, h]) for h in range(H)]}, None))
    return m
