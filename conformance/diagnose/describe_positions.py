"""The effective positions of a case's tokens, as a table and in words.

Input: one *unit* per token (or per (token, head) when the heads disagree) with its position ``p``,
its effective position ``p'`` (:mod:`.effective`; NaN where unknown), its batch row (or packed
sequence), its index in the row, its flat index and its head. The table is described by the first
pattern that holds on **every** unit whose effective position is known:

=============  ==============================================================================
pattern        effective positions
=============  ==============================================================================
``zero``       0 on some units (not rotated): every token, a tail of each row, a row, a head
``shift``      ``p + k`` on every unit, or on a subset (a row, a head, some tokens)
``per-row``    ``p + k_r`` with a constant per batch row (or packed sequence)
``index``      the token's index in its row (the given positions / offsets ignored)
``restart``    ``i mod K`` or ``p - p(first token of the tile)``: positions restart every K tokens
``tile``       ``p[i mod K]``: every tile of K tokens reads the first tile's positions
``wrap``       ``p mod M`` (a table indexed modulo its length)
``clamp``      ``min(p, C)``
``scaled``     ``r p`` (the same as frequencies times r)
``rounded``    ``p`` rounded to bfloat16 / float16 / a multiple of 2^k
``token-map``  another token's position: transposed layouts ([B, H, T, D] read as [B, T, H, D]),
               tokens shifted, reversed, the first token's, row 0's
``table``      none of these: the table itself
=============  ==============================================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..bugs.rounding import round_to
from .findings import Finding, ranges

__all__ = ["Units", "describe_positions"]

Arr = np.ndarray
_TABLE_ROWS = 48


@dataclass
class Units:
    """One unit per token (``head`` -1) or per (token, head); positions of one position row."""

    p: Arr  # [U] the position
    eff: Arr  # [U] the effective position (NaN: unknown)
    row: Arr  # [U]
    index: Arr  # [U]
    flat: Arr  # [U] flat token index
    head: Arr  # [U] (-1: pooled over heads)
    heads: int  # heads of the case
    row_len: int  # tokens per row (bshd T; packed: the longest sequence)
    packed: bool
    label: str = ""  # "" for plain positions, "row t" / "row h" ... for multi-axis
    sigma: Arr | None = None  # [U] how precisely each effective position is known (None: exactly)

    def known(self) -> Arr:
        return np.isfinite(self.eff)

    def close(self, values: Arr, sel: Arr) -> bool:
        """Whether the effective positions of the units ``sel`` equal ``values`` (one per selected unit) within how
        precisely they are known (half a position at least)."""
        slack = 0.5 + (4.0 * self.sigma[sel] if self.sigma is not None else 0.0)
        return bool(np.all(np.abs(self.eff[sel] - values) <= slack))


def _int(a: Arr) -> Arr:
    return np.round(np.nan_to_num(np.asarray(a, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)).astype(np.int64)


def _row_word(units: Units) -> str:
    return "packed sequence" if units.packed else "batch row"


def _where(units: Units, sel: Arr, known: Arr, fits: Arr | None = None) -> tuple[str, dict[str, list[int]]]:
    """Words and indices for the units ``sel``; units whose effective position is not known (not resolved at
    their positions) are said separately. ``fits``: units the pattern describes as well without moving them (a
    structure may include them: head 1 "not rotated" includes its token at position 0)."""
    fits = sel if fits is None else (fits | sel)
    tokens = sorted(set(units.flat[sel].tolist()))
    where: dict[str, list[int]] = {"tokens": tokens}
    if units.head.max() >= 0:
        where["heads"] = sorted(set(units.head[sel].tolist()))
    where["rows"] = sorted(set(units.row[sel].tolist()))
    unknown = ~known
    n_unknown = int(np.unique(units.flat[unknown]).size) if unknown.any() else 0
    note = (f"; the other {n_unknown} token(s) not resolved at their positions (the declared precision cannot tell a "
            "position there)") if n_unknown else ""
    everyone = np.ones_like(sel)
    # a structure is matched on the known units (it holds every moved unit and only units the pattern fits), and
    # said of the whole case only when every unit is known
    def same(mask: Arr) -> bool:
        mk = mask & known
        return bool(mk.any()) and bool(np.all(mk[sel & known])) and bool(np.all(fits[mk]))

    if same(everyone) and not n_unknown:
        return "every token" + (f" of {units.label}" if units.label else ""), where
    if units.head.max() >= 0:
        hs = sorted(set(units.head[sel].tolist()))
        if len(hs) < units.heads and same(np.isin(units.head, hs)):
            return f"head{'s' if len(hs) > 1 else ''} {ranges(hs)} (every token){note}", where
    rows = sorted(set(units.row[sel].tolist()))
    if len(rows) < np.unique(units.row).size and same(np.isin(units.row, rows)):
        return f"{_row_word(units)}{'s' if len(rows) > 1 else ''} {ranges(rows)} (every token){note}", where
    idx = sorted(set(units.index[sel].tolist()))
    if same(np.isin(units.index, idx)):
        lo = min(idx)
        tail = set(idx) == set(range(lo, int(units.index.max()) + 1)) and lo > 0
        if tail:
            return f"the last tokens of every {_row_word(units)} (index >= {lo}){note}", where
        return f"token{'s' if len(idx) > 1 else ''} {ranges(idx)} of every {_row_word(units)}{note}", where
    for r in rows:
        in_r = sel & (units.row == r)
        idx_r = sorted(set(units.index[in_r].tolist()))
        if idx_r and same((units.row == r) & np.isin(units.index, idx_r)):
            return f"tokens {ranges(idx_r)} of {_row_word(units)} {r}{note}", where
    if same(everyone):
        return "every resolved token" + (f" of {units.label}" if units.label else "") + note, where
    n = int(np.unique(units.flat[sel]).size)
    return f"{n} of {int(np.unique(units.flat).size)} tokens{note}", where


def _table(units: Units, sel: Arr) -> dict[str, object]:
    idx = np.nonzero(sel)[0][:_TABLE_ROWS]
    rows = [[int(units.row[i]), int(units.index[i]), int(units.head[i]), float(units.p[i]), _num(float(units.eff[i]))] for i in idx]
    return {"columns": ["row", "token", "head", "position", "effective"], "rows": rows, "count": int(sel.sum())}


#: patterns that are a rule over every position (said on the position axis whichever tokens they move)
_RULES = frozenset({"wrap", "clamp", "restart", "tile", "index", "rounded", "scaled"})


def _num(v: float) -> float:
    """An effective position as it reads best: the integer it is within 1e-3 of, else 3 decimals."""
    return float(round(v)) if abs(v - round(v)) < 1e-3 else round(v, 3)


def _finding(units: Units, axis: str, pattern: str, words: str, sel: Arr, known: Arr, fits: Arr | None = None) -> Finding:
    """``sel``: the units the pattern moves; ``fits``: every unit the pattern describes (moved or not: a token at
    position 0 is "not rotated" too), used to say where."""
    place, where = _where(units, sel, known, fits)
    ax = axis
    if pattern == "per-row":
        ax = "row"
    elif pattern in _RULES:
        n = int(np.unique(units.flat[sel]).size)
        note = place[place.index("; the other"):] if "; the other" in place else ""
        place = f"every token ({n} of {int(np.unique(units.flat).size)} moved{note})" if n < np.unique(units.flat).size else place
    elif axis == "position":
        if units.head.max() >= 0 and "head" in place and "every token" in place:
            ax = "head"
        elif place.startswith(_row_word(units)):
            ax = "row"
        elif place.startswith(("the last tokens", "tokens", "token ")):
            ax = "token"
    lab = f" ({units.label})" if units.label else ""
    return Finding(ax, f"effective positions{lab} on {place}: {words}", pattern, where, _table(units, sel),
                   {"positions": "p (spec)"})


def _rounded(p: Arr, eff: Arr) -> str | None:
    for dtype in ("bfloat16", "float16"):
        if np.array_equal(_int(eff), round_to(dtype, p)):
            return f"p rounded to {dtype}"
    ints = _int(eff)
    if np.all(np.abs(eff - ints) < 0.05) and np.all(ints != 0):
        step = int(np.gcd.reduce(np.abs(ints)))
        if step > 1 and step & (step - 1) == 0 and np.all(np.abs(ints - p) < step):
            return f"p rounded to a multiple of {step}"
    return None


def _token_map(units: Units, positions: Arr, k: Arr, ch: Arr) -> tuple[str, str] | None:
    """Another token's position: named maps (transposed layouts, tokens reversed or shifted, the first token's, row
    0's) checked by value on every known unit, else the source token of every changed unit."""
    eff = _int(units.eff)
    flat, head, row_len = units.flat, units.head, units.row_len
    start = flat - units.index
    n_tok = positions.size
    named: list[tuple[str, str, Arr]] = []
    if head.max() >= 0 and units.heads > 1 and not units.packed:
        named.append(("transposed", "each head reads the position of token (t*H + h) mod T of its row: the tensor read as "
                      "[B, H, T, D] instead of [B, T, H, D] (or the reverse)", start + (units.index * units.heads + head) % row_len))
    if not units.packed:
        named.append(("tokens-reversed", "token order reversed within the row (token i uses the position of token T-1-i)",
                      start + (row_len - 1 - units.index)))
        named.append(("row0", "every row rotated with batch row 0's positions", units.index))
        n_rows = n_tok // max(row_len, 1)
        for kk in range(1, min(n_rows, 4)):
            named.append(("rows-permuted", f"batch row b rotated with the positions of row (b+{kk}) mod {n_rows}",
                          ((units.row + kk) % n_rows) * row_len + units.index))
    named.append(("first-token", "every token rotated with the position of its row's first token", start))
    for kk in (1, -1, 2, -2, 3, -3):
        named.append(("tokens-shifted", f"each token rotated with the position of the token {abs(kk)} {'after' if kk > 0 else 'before'} it",
                      np.clip(flat + kk, start, start + row_len - 1)))
    for pattern, words, src in named:
        ok = (src >= 0) & (src < n_tok)
        if ok[k].all() and units.close(positions[src[k]].astype(np.float64), k) and ch.any():
            return pattern, words
    src = np.full(units.p.size, -1)
    for u in np.nonzero(ch)[0]:
        same_row = np.nonzero(_row_of(units, n_tok) == units.row[u])[0]
        hits = same_row[positions[same_row] == eff[u]]
        if hits.size == 0:
            hits = np.nonzero(positions == eff[u])[0]
        if hits.size:
            src[u] = hits[np.argmin(np.abs(hits - units.flat[u]))]
    if np.any(src[ch] < 0):
        return None
    pairs = ", ".join(f"token {int(flat[u])} -> position of token {int(src[u])}" for u in np.nonzero(ch)[0][:4])
    return ("token-map", f"rotated with other tokens' positions ({pairs})")


def _row_of(units: Units, n_tok: int) -> Arr:
    out = np.full(n_tok, -1)
    out[units.flat] = units.row
    return out


def _tiles(units: Units, positions: Arr, k: Arr) -> tuple[str, str] | None:
    eff = _int(units.eff[k])
    for base_name, base in (("row", units.index[k]), ("flat", units.flat[k])):
        for K in (2, 4, 8, 16, 32, 64, 128, 256):
            if K >= max(int(base.max()) + 1, 2):
                break
            first = units.flat[k] - (base % K)
            scope = "each row's tokens" if base_name == "row" else "the flattened tokens"
            if np.array_equal(eff, base % K):
                return "restart", f"the given positions ignored: index within a tile of {K} ({scope}); positions restart every {K} tokens"
            if np.array_equal(eff, units.p[k].astype(np.int64) - positions[first]):
                return "restart", f"positions restart at 0 every {K} tokens of {scope} (p minus the tile's first position)"
            src = units.flat[k] - base + (base % K)
            if np.array_equal(eff, positions[src]):
                return "tile", f"every tile of {K} tokens ({scope}) reads the positions of the first tile"
    return None


def _wrap_length(units: Units, pi: Arr, ch: Arr, k: Arr) -> tuple[int, bool] | None:
    """``(M, signed)`` when every known effective position is ``p mod M`` (or the signed ``((p + M/2) mod M) - M/2``)
    for a plausible table length M: a power of two, a multiple of 1000, or the gcd of the moves when the case shows
    it wrapping twice; None otherwise."""
    top = int(np.max(np.abs(pi[k]))) if k.any() else 0
    cands = [2**e for e in range(3, 40) if 2**e <= 2 * top + 2] + [m * 10**e for e in range(3, 10) for m in (1, 2, 4, 5, 8)
                                                                 if m * 10**e <= 2 * top + 2]
    moved = pi[ch] - _int(units.eff[ch])
    g = int(np.gcd.reduce(np.abs(moved))) if moved.size else 0
    if g > 1 and np.unique(pi[ch] // g).size >= 2:
        cands.append(g)
    if not ch.any() or np.any((moved <= 0) & (pi[ch] >= 0)):
        return None  # p mod M only lowers a non-negative position (a negative one it raises: below)
    mag = np.unique(np.abs(moved))
    if mag.size == 1 and int(mag[0]) >= 8 and (int(mag[0]) & (int(mag[0]) - 1) == 0 or int(mag[0]) % 1000 == 0):
        cands.append(int(mag[0]))  # one move, by a table length: visible once (negative positions wrapped up into the table)
    for M in sorted(set(cands)):
        if units.close(np.mod(pi[k], M).astype(np.float64), k):
            return M, False
    for M in sorted(set(cands)):
        if M % 2 == 0 and units.close((np.mod(pi[k] + M // 2, M) - M // 2).astype(np.float64), k):
            return M, True
    return None


def describe_positions(units: Units, positions: Arr) -> list[Finding]:
    """Findings for the effective positions (empty when every known unit is at its spec position).

    ``positions`` [N]: every token's spec position on this row (the token-map patterns look there)."""
    k = units.known()
    if not k.any():
        return []
    p, eff = units.p, units.eff
    d = eff - p
    ch = k & (np.abs(d) > 0.5)
    if not ch.any():
        return []
    same = k & ~ch
    pi = p.astype(np.int64)
    out: list[Finding] = []
    # zero: not rotated
    zero = ch & (np.abs(eff) < 0.5)
    if np.array_equal(zero, ch):
        sig0 = float(np.max(units.sigma[zero])) if units.sigma is not None else 0.0
        vague = f"; at this precision positions up to ~{2.5 * sig0:.3g} look the same" if 2.5 * sig0 >= 1.0 else ""
        return [_finding(units, "position", "zero", f"0 (not rotated: the positions are ignored there{vague})", ch, k,
                         k & (np.abs(eff) < 0.5))]
    sig = units.sigma if units.sigma is not None else np.zeros_like(p)
    ints = np.all(np.abs(d[k] - np.round(d[k])) < 0.05 + 4.0 * sig[k])
    if ints:
        dd = _int(d)
        vals = np.unique(dd[ch])
        if vals.size == 1 and np.array_equal(ch, k) and k.all():
            kk = int(vals[0])
            also = (f" (a power of two: on these positions also what positions taken modulo {abs(kk)}, or wrapping as a "
                    f"signed {int(np.log2(abs(kk)))}-bit integer, give)" if abs(kk) >= 128 and abs(kk) & (abs(kk) - 1) == 0 else "")
            return [_finding(units, "position", "shift", f"p{kk:+d} instead of p{also}", ch, k)]
        tiles = _tiles(units, positions.astype(np.int64), k)
        if tiles:
            return [_finding(units, "position", tiles[0], tiles[1], ch, k)]
        wrap = _wrap_length(units, pi, ch, k)
        if wrap is not None:
            M, signed = wrap
            if not signed:
                return [_finding(units, "position", "wrap", f"p mod {M} (positions wrap at {M}: a table indexed modulo its "
                                 "length)", ch, k)]
            bits = f" (a signed {int(np.log2(M))}-bit integer overflow)" if M & (M - 1) == 0 else ""
            return [_finding(units, "position", "wrap", f"p wraps to p - {M} past {M // 2 - 1}{bits}", ch, k)]
        rows = np.unique(units.row[k])
        per_row = {int(r): np.unique(dd[k & (units.row == r)]) for r in rows}
        if units.row_len >= 2 and all(v.size == 1 for v in per_row.values()) and len({int(v[0]) for v in per_row.values()}) > 1:
            text = "; ".join(f"{_row_word(units)} {r}: p{int(v[0]):+d}" for r, v in per_row.items())
            return [_finding(units, "position", "per-row", f"a different shift per {_row_word(units)} ({text})", k, k)]
        if np.array_equal(_int(eff[k]), units.index[k]):
            return [_finding(units, "position", "index", "the token's index in its row (the given positions and offsets "
                             "ignored)", ch, k)]
        ce = np.unique(_int(eff[ch]))
        if ce.size == 1 and np.all(pi[ch] > ce[0]) and np.all(pi[same] <= ce[0]) and (ch.sum() >= 2 or int(ce[0]) & (int(ce[0]) - 1) == 0
                                                                                     or int(ce[0]) % 1000 == 0):
            return [_finding(units, "position", "clamp", f"min(p, {int(ce[0])}) (positions clamped at {int(ce[0])})", ch, k)]
        if vals.size == 1:
            kk = int(vals[0])
            return [_finding(units, "position", "shift", f"p{kk:+d} instead of p", ch, k)]
        tm = _token_map(units, positions.astype(np.int64), k, ch)
        if tm:
            axis = "row" if tm[0] in ("row0", "rows-permuted") else "token"
            f = _finding(units, "position", tm[0], tm[1], ch, k)
            return [Finding(axis, f.words, f.pattern, f.where, f.measured, f.expected)]
        rnd = _rounded(p[ch], eff[ch])
        if rnd and np.all(np.abs(p[ch]) >= 256):
            return [_finding(units, "position", "rounded", f"{rnd} (|p| >= {int(np.min(np.abs(p[ch])))})", ch, k)]
    nz = k & (np.abs(p) > 0)
    if nz.sum() >= 2:
        r = eff[nz] / p[nz]
        rr = float(np.median(r))
        if units.close(rr * p[k], k) and abs(rr - 1.0) > 1e-6:
            return [_finding(units, "position", "scaled", f"{rr:.6g} x p (every angle scaled by {rr:.6g}: the same as "
                             f"frequencies {rr:.6g}x the spec's)", ch, k)]
    u = np.nonzero(ch)[0][0]
    out.append(_finding(units, "position", "table", f"differ from p (e.g. p={p[u]:.0f} acts as {_num(float(eff[u])):.10g}; "
                        f"{int(ch.sum())} of {int(k.sum())} known)", ch, k))
    if not math.isfinite(float(eff[u])):
        return []
    return out
