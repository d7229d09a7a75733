"""Name the likely bug behind a FAIL by comparing the backend's output with decoys.

A decoy is the reference computation with one known bug built in (docs/spec.md
section 6): other pairing, positions all zero / off by one / offsets ignored / batch
row 0's positions everywhere / only batch row 0 rotated, positions rounded to bf16 or
fp16, inv_freq rounded to bf16 or fp16, cos/sin tables in bf16 or fp16, scaling dropped
(default instead) or applied twice, attention factor missing or squared, rotary window at
the wrong end, exponent denominator = head dim (or = rotary width), wrong mRoPE layout or
row order, wrong 2-D vision form or h/w swapped, longrope short/long swapped (the
``seq_len > L0`` boundary), dynamic NTK at another length, rotation direction reversed.

Each decoy is judged with the case's own bounds: ``budget = max |actual - decoy| / bound``.
A decoy that is itself within the bound of the expected output cannot be told apart from
a correct result on this case and is skipped. The verdict names the decoy with the smallest
budget; it *matches* when that budget is <= 1, otherwise it is only the closest guess.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from roperef.frequencies import inv_freq as ref_inv_freq
from roperef.layout import pair_axes, pair_map
from roperef.positions import varlen
from roperef.reference import two_product
from roperef.spec import RopeSpec, Scaling

from .case import GoldenCase
from .tolerance import position_rows

__all__ = ["Decoy", "decoys_for", "diagnose", "decoy_outputs", "DECOY_NAMES"]

Arr = np.ndarray


@dataclass(frozen=True)
class Decoy:
    """One bug, as changes to the reference computation."""

    name: str
    words: str
    spec: RopeSpec | None = None
    rows: Callable[[Arr], Arr] | None = None
    seq_len: int | None = None
    freqs: Callable[[Arr], Arr] | None = None
    scale: Callable[[float], float] | None = None
    tables: Callable[[Arr], Arr] | None = None
    only_first: bool = False
    reverse: bool = False


def _round_to(dtype: str) -> Callable[[Arr], Arr]:
    def f(a: Arr) -> Arr:
        if dtype == "bfloat16":
            import ml_dtypes

            return np.asarray(a, dtype=np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)
        with np.errstate(over="ignore"):
            return np.asarray(a, dtype=np.float64).astype(dtype).astype(np.float64)

    return f


def _seq_len(case: GoldenCase, rows: Arr | None) -> int:
    if case.stage == "inv_freq":
        return int(np.asarray(case.arrays["seq_len"]))
    return max(int(rows.max()) + 1, 1) if rows is not None and rows.size else 1


def _tables(spec: RopeSpec, rows: Arr, seq_len: int, d: Decoy) -> tuple[Arr, Arr]:
    freqs, s = ref_inv_freq(spec, seq_len)
    if d.freqs is not None:
        freqs = d.freqs(freqs)
    if d.scale is not None:
        s = d.scale(s)
    r = np.asarray(d.rows(rows) if d.rows is not None else rows, dtype=np.float64)
    p = np.moveaxis(r, 0, -1)[..., pair_axes(spec)]
    hi, lo = two_product(p, freqs)
    c, sn = np.cos(hi), np.sin(hi)
    cos = (c - (sn * lo + c * 0.5 * lo * lo)) * s
    sin = (sn + (c * lo - sn * 0.5 * lo * lo)) * s
    if d.tables is not None:
        cos, sin = d.tables(cos), d.tables(sin)
    return cos, sin


def _rotate(x: Arr, cos: Arr, sin: Arr, spec: RopeSpec, backward: bool, d: Decoy, cu: Arr | None) -> Arr:
    pm = pair_map(spec).transposed() if backward else pair_map(spec)
    c = cos[..., None, :]
    s = -sin[..., None, :] if (backward != d.reverse) else sin[..., None, :]
    y = x.copy()
    y[..., pm.out_a] = x[..., pm.in_a] * c - x[..., pm.in_b] * s
    y[..., pm.out_b] = x[..., pm.in_b] * c + x[..., pm.in_a] * s
    if d.only_first:
        if cu is not None:
            y[int(cu[1]):] = x[int(cu[1]):]
        else:
            y[1:] = x[1:]
    return y


def decoy_outputs(case: GoldenCase, d: Decoy) -> dict[str, Arr]:
    """The outputs of ``case``'s stage computed with the bug ``d``."""
    spec = d.spec or case.spec
    a = case.arrays
    if case.stage == "inv_freq":
        seq = d.seq_len or _seq_len(case, None)
        freqs, s = ref_inv_freq(spec, seq)
        if d.freqs is not None:
            freqs = d.freqs(freqs)
        if d.scale is not None:
            s = d.scale(s)
        return {"inv_freq": freqs, "attention_factor": np.asarray(s, dtype=np.float64)}
    if case.stage == "apply":
        cos = np.asarray(a["cos"], dtype=np.float64)
        sin = np.asarray(a["sin"], dtype=np.float64)
        if d.tables is not None:
            cos, sin = d.tables(cos), d.tables(sin)
        return {"y": _rotate(np.asarray(a["x"], dtype=np.float64), cos, sin, spec, False, d, None)}
    if case.stage == "cos_sin":
        rows = position_rows(case.spec, a["positions"])
        cos, sin = _tables(spec, rows, d.seq_len or _seq_len(case, rows), d)
        if d.reverse:
            sin = -sin
        return {"cos": cos, "sin": sin}
    name = "x" if case.stage == "forward" else "grad"
    x = np.asarray(a[name], dtype=np.float64)
    rows = position_rows(case.spec, a["positions"], x.shape[:-2])
    cos, sin = _tables(spec, rows, d.seq_len or _seq_len(case, rows), d)
    cu = np.asarray(a["cu_seqlens"]) if "cu_seqlens" in a else None
    out = _rotate(x, cos, sin, spec, case.stage == "backward", d, cu)
    return {"y" if case.stage == "forward" else "grad_x": out}


# ----------------------------------------------------------------------------- the catalogue of bugs


def _other_pairings(spec: RopeSpec) -> list[str]:
    if spec.vision is not None:
        return []
    return [p for p in ("half", "adjacent", "adjacent_in_half_out") if p != spec.pairing]


def _safe(make: Callable[[], RopeSpec]) -> RopeSpec | None:
    try:
        return make()
    except (ValueError, TypeError):
        return None


def decoys_for(case: GoldenCase) -> list[Decoy]:
    """Every decoy that makes sense for ``case`` (stage, spec and positions decide)."""
    spec, a, stage = case.spec, case.arrays, case.stage
    out: list[Decoy] = []
    add = out.append
    tensor = stage in ("forward", "backward", "apply")
    has_pos = stage in ("forward", "backward", "cos_sin")
    has_freq = stage != "apply"

    if tensor:
        for p in _other_pairings(spec):
            add(Decoy(f"pairing:{p}", f"pairing '{p}' used instead of '{spec.pairing}' (rotate_half vs interleaved channels)", spec=spec.replace(pairing=p)))
        r, D = spec.rotary_dim, spec.head_dim
        if r < D:  # type: ignore[operator]
            start = D - r if spec.rotary_start == 0 else 0  # type: ignore[operator]
            add(Decoy("window:wrong-end", f"rotary window at the wrong end (channels [{start}, {start + r}) rotated instead of [{spec.rotary_start}, {spec.rotary_start + r}))", spec=spec.replace(rotary_start=start)))
        add(Decoy("direction:reversed", "rotation direction reversed (sin sign flipped, or forward used for backward)", reverse=True))
        add(Decoy("tables:bf16", "cos/sin tables rounded to bfloat16", tables=_round_to("bfloat16")))
        add(Decoy("tables:fp16", "cos/sin tables rounded to float16", tables=_round_to("float16")))
    if stage == "cos_sin":
        add(Decoy("direction:reversed", "sin sign flipped", reverse=True))
        add(Decoy("tables:bf16", "cos/sin tables rounded to bfloat16", tables=_round_to("bfloat16")))
        add(Decoy("tables:fp16", "cos/sin tables rounded to float16", tables=_round_to("float16")))

    if has_pos:
        pos = np.asarray(a["positions"])
        add(Decoy("positions:zero", "every token at position 0 (positions ignored)", rows=lambda r: np.zeros_like(r)))
        add(Decoy("positions:plus-one", "positions off by one (p+1)", rows=lambda r: r + 1))
        add(Decoy("positions:minus-one", "positions off by one (p-1)", rows=lambda r: r - 1))
        add(Decoy("positions:bf16", "positions rounded to bfloat16 (exact only up to 256)", rows=_round_to("bfloat16")))
        add(Decoy("positions:fp16", "positions rounded to float16 (exact only up to 2048)", rows=_round_to("float16")))
        if "cu_seqlens" in a and spec.n_axes == 1:
            cu = np.asarray(a["cu_seqlens"])
            restart = varlen(cu)
            add(Decoy("positions:offsets-ignored", "per-sequence offsets ignored (every packed sequence starts at 0)", rows=lambda r, v=restart: np.broadcast_to(v, r.shape).copy()))
            glob = np.arange(int(cu[-1]), dtype=np.int64)
            add(Decoy("positions:cu-seqlens-ignored", "cu_seqlens ignored (positions run on across packed sequences)", rows=lambda r, v=glob: np.broadcast_to(v, r.shape).copy()))
            add(Decoy("batch:only-first", "only the first packed sequence rotated", only_first=True))
        elif stage != "cos_sin" and pos.ndim >= 2 and spec.n_axes == 1:
            add(Decoy("positions:offsets-ignored", "position offsets ignored (every row starts at 0: positions = arange(T))", rows=lambda r: np.broadcast_to(np.arange(r.shape[-1]), r.shape).copy()))
            if pos.shape[0] > 1:
                add(Decoy("positions:row0-everywhere", "batch row 0's positions used for every row", rows=lambda r: np.broadcast_to(r[:, :1], r.shape).copy()))
                add(Decoy("batch:only-first", "only batch row 0 rotated (other rows passed through)", only_first=True))
        if spec.mrope_section is not None:
            other = "interleaved" if spec.mrope_layout == "chunked" else "chunked"
            add(Decoy(f"mrope:layout-{other}", f"mRoPE layout '{other}' instead of '{spec.mrope_layout}' (wrong position row per frequency)", spec=spec.replace(mrope_layout=other)))
            for perm in itertools.permutations(range(3)):
                if perm != (0, 1, 2):
                    order = "".join("thw"[i] for i in perm)
                    add(Decoy(f"mrope:rows-{order}", f"mRoPE position rows read in order {order} instead of thw", rows=lambda r, p=perm: r[list(p)]))
            add(Decoy("mrope:text-rows", "mRoPE collapsed to the t row (h/w rows ignored)", rows=lambda r: np.broadcast_to(r[:1], r.shape).copy()))
        if spec.vision is not None:
            other = "pixtral" if spec.vision == "qwen_vl" else "qwen_vl"
            add(Decoy(f"vision:{other}", f"2-D vision RoPE in the {other} form instead of {spec.vision}", spec=spec.replace(vision=other)))
            add(Decoy("vision:hw-swapped", "2-D vision positions with h and w swapped", rows=lambda r: r[::-1].copy()))

    if has_freq:
        sc = spec.scaling
        add(Decoy("inv_freq:bf16", "inv_freq rounded to bfloat16", freqs=_round_to("bfloat16")))
        add(Decoy("inv_freq:fp16", "inv_freq rounded to float16", freqs=_round_to("float16")))
        if sc.type != "default" and spec.vision is None:
            plain = _safe(lambda: spec.replace(scaling=Scaling()))
            if plain is not None:
                add(Decoy("scaling:dropped", f"{sc.type} scaling dropped (default frequencies used)", spec=plain))

                def twice(f: Arr, plain: RopeSpec = plain) -> Arr:
                    b, _ = ref_inv_freq(plain, None)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        return np.where(b > 0, f * f / np.where(b > 0, b, 1.0), 0.0)

                add(Decoy("scaling:twice", f"{sc.type} scaling applied twice (frequency change squared)", freqs=twice))
        add(Decoy("attention:missing", "attention factor missing (s = 1)", scale=lambda s: 1.0))
        add(Decoy("attention:squared", "attention factor squared (s^2 applied to q and k each)", scale=lambda s: s * s))
        if spec.freq_dim != spec.head_dim and spec.vision is None:
            add(Decoy("freq:denominator-head-dim", f"frequency exponent denominator = head dim {spec.head_dim} instead of {spec.freq_dim}", spec=_safe(lambda: spec.replace(freq_dim=spec.head_dim))))
        if spec.freq_dim != spec.rotary_dim and spec.vision is None:
            add(Decoy("freq:denominator-rotary-width", f"frequency exponent denominator = rotary width {spec.rotary_dim} instead of {spec.freq_dim}", spec=_safe(lambda: spec.replace(freq_dim=spec.rotary_dim))))
        if sc.type == "longrope":
            l0 = sc.original_max_position_embeddings
            seq = _seq_len(case, position_rows(spec, a["positions"]) if has_pos else None)
            swapped = l0 + 1 if seq <= l0 else l0  # type: ignore[operator]
            which = "long" if seq <= l0 else "short"  # type: ignore[operator]
            add(Decoy("longrope:swapped", f"longrope {which} factors used at seq_len {seq} (boundary seq_len > L0={l0} off, or short/long swapped)", seq_len=swapped))
        if sc.type == "dynamic":
            m = sc.max_position_embeddings
            seq = _seq_len(case, position_rows(spec, a["positions"]) if has_pos else None)
            lengths = {m, 2 * m, 4 * m, int(round(sc.factor * m)), seq + 1, max(seq - 1, 1), 2 * seq}  # type: ignore[operator]
            for length in sorted(x for x in lengths if x and max(x, m) != max(seq, m)):  # type: ignore[type-var]
                add(Decoy(f"dynamic:length-{length}", f"dynamic NTK computed at length {length} instead of {seq} (stale or static state)", seq_len=int(length)))
    return [d for d in out if d.spec is not None or d.name not in ("freq:denominator-head-dim", "freq:denominator-rotary-width")]


DECOY_NAMES = (
    "pairing:*", "window:wrong-end", "direction:reversed", "tables:bf16", "tables:fp16", "positions:zero",
    "positions:plus-one", "positions:minus-one", "positions:bf16", "positions:fp16", "positions:offsets-ignored",
    "positions:cu-seqlens-ignored", "positions:row0-everywhere", "batch:only-first", "mrope:layout-*", "mrope:rows-*",
    "mrope:text-rows", "vision:*", "vision:hw-swapped", "inv_freq:bf16", "inv_freq:fp16", "scaling:dropped",
    "scaling:twice", "attention:missing", "attention:squared", "freq:denominator-head-dim",
    "freq:denominator-rotary-width", "longrope:swapped", "dynamic:length-*",
)


def _budget(a: Mapping[str, Arr], b: Mapping[str, Arr], bound: Mapping[str, Arr]) -> float:
    worst = 0.0
    for name, bnd in bound.items():
        x = np.asarray(a[name], dtype=np.float64)
        y = np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            return float("inf")
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            err = np.abs(x - y)
            ratio = np.where(err == 0, 0.0, err / bnd)
        if np.isnan(ratio).any():
            return float("inf")
        if ratio.size:
            worst = max(worst, float(ratio.max()))
    return worst


def diagnose(
    case: GoldenCase,
    actual: Mapping[str, Arr],
    bound: Mapping[str, Arr],
    expected: Mapping[str, Arr] | None = None,
    bound_for: Callable[[RopeSpec], Mapping[str, Arr]] | None = None,
) -> dict[str, Any]:
    """``{"match": name|None, "summary": words, "candidates": [{name, words, budget}, ...]}`` (best first).

    ``bound_for(spec)``: the bounds of the case under another spec (a decoy that changes the
    pairing, window or frequencies is judged with the larger of its own and the case's bound).
    """
    expected = expected or {k: np.asarray(v, dtype=np.float64) for k, v in case.expected().items()}
    cands = []
    for d in decoys_for(case):
        try:
            with np.errstate(all="ignore"):
                out = decoy_outputs(case, d)
                own = bound
                if d.spec is not None and bound_for is not None:
                    other = bound_for(d.spec)
                    own = {k: np.maximum(v, other[k]) for k, v in bound.items()}
        except (ValueError, TypeError, OverflowError):
            continue
        if _budget(out, expected, bound) <= 1.0:
            continue  # indistinguishable from a correct result on this case
        cands.append({"name": d.name, "words": d.words, "budget": _budget(actual, out, own)})
    cands.sort(key=lambda c: c["budget"])
    if not cands:
        return {"match": None, "summary": "no known bug pattern applies to this case", "candidates": []}
    best = cands[0]
    if best["budget"] <= 1.0:
        summary = f"likely cause: {best['words']} (matches decoy {best['name']} within tolerance, budget {best['budget']:.3g})"
        match = best["name"]
    else:
        summary = f"no known bug pattern matches; closest: {best['words']} ({best['name']}, budget {best['budget']:.3g})"
        match = None
    return {"match": match, "summary": summary, "candidates": cands[:5]}
