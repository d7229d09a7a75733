"""Single-bug RoPE engines for the meta-tests, written from the spec (docs/spec.md sections 1-5).

:class:`BugEngine` computes RoPE the way a typical engine does, in float32 or float64
(``precision``): frequencies from its own implementation of every scaling type (below, not
:mod:`roperef.frequencies`), angles ``p * w`` in that dtype, cos/sin tables times ``s``, the
rotation with its own pair map. ``bug`` switches on one defect; :data:`BUGS` maps each bug to
the catalogue class the diagnosis must name. None of this code is shared with the decoys of
:mod:`conformance.bugs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from conformance.backends.base import BaseBackend, Capabilities
from conformance.vocabulary import STAGES
from float32_constants import inv_freqs

__all__ = ["BugEngine", "BUGS"]

#: bug -> the catalogue class the diagnosis must name for it
BUGS: dict[str, str] = {
    "positions-zero": "positions:zero",
    "positions-plus-one": "positions:shifted",
    "positions-minus-three": "positions:shifted",
    "positions-bf16": "positions:bf16",
    "positions-fp16": "positions:fp16",
    "offsets-ignored": "positions:offsets-ignored",
    "row0-everywhere": "positions:row0-everywhere",
    "cu-seqlens-ignored": "positions:cu-seqlens-ignored",
    "packed-no-restart": "positions:no-restart",
    "only-row0": "batch:only-first",
    "pairing-swapped": "pairing:other",
    "direction-reversed": "direction:reversed",
    "window-wrong-end": "window:wrong-end",
    "mrope-layout": "mrope:layout",
    "mrope-rows-swapped": "mrope:rows-permuted",
    "mrope-text-only": "mrope:text-rows",
    "vision-form": "vision:form",
    "vision-hw-swapped": "vision:hw-swapped",
    "inv-freq-bf16": "inv_freq:bf16",
    "inv-freq-fp16": "inv_freq:fp16",
    "denominator-head-dim": "freq:denominator-head-dim",
    "denominator-rotary-width": "freq:denominator-rotary-width",
    "theta-default": "theta:wrong",
    "scaling-dropped": "scaling:dropped",
    "scaling-twice": "scaling:twice",
    "factor-doubled": "scaling:factor",
    "attention-dropped": "attention:missing",
    "attention-squared": "attention:squared",
    "dynamic-stale": "dynamic:length",
    "dynamic-static": "dynamic:length",
    "longrope-swapped": "longrope:swapped",
    "longrope-always-long": "longrope:always-long",
    "longrope-always-short": "longrope:always-short",
    "longrope-boundary": "longrope:boundary",
    "yarn-truncate-flipped": "yarn:truncate-flipped",
    "yarn-range-from-max": "yarn:range-length",
    "yarn-ramp-2j": "yarn:ramp-2j",
    "yarn-ramp-inverted": "yarn:ramp-inverted",
    "llama3-bands-swapped": "llama3:bands-swapped",
    "llama3-bands-swapped-kept": "llama3:bands-swapped",
    "llama3-smooth-wavelength": "llama3:smooth-wavelength",
    "proportional-denominator": "proportional:denominator",
    "proportional-denominator-k": "proportional:denominator",
    "tables-bf16": "tables:bf16",
    "tables-fp16": "tables:fp16",
    "angles-bf16": "angles:bf16",
    "angles-bf16-all": "angles:bf16",
}


def _round(a: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            return np.asarray(a, dtype=np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)
        return np.asarray(a, dtype=np.float64).astype(np.float16).astype(np.float64)


# ----------------------------------------------------------------------------- frequencies (own)


class _Freqs:
    """inv_freq and attention factor per scaling type, computed in dtype ``F`` (docs/spec.md section 3)."""

    def __init__(self, F: type, bug: str) -> None:
        self.F, self.bug = F, bug

    def base(self, theta: float, d: float, n: int) -> np.ndarray:
        F = self.F
        return inv_freqs(theta, d, n, F)  # correctly rounded: no SIMD-dependent last bit (tests/support/engines/float32_constants.py)

    def __call__(self, spec, seq_len: int) -> tuple[np.ndarray, float]:
        F, b = self.F, self.bug
        D, n = spec.head_dim, spec.rotary_dim // 2
        d = spec.freq_dim
        theta = 10000.0 if b == "theta-default" else spec.theta
        if b == "denominator-head-dim" and spec.vision is None:
            d = D
        if b == "denominator-rotary-width" and spec.vision is None:
            d = spec.rotary_dim
        if spec.vision is not None:
            form = spec.vision if b != "vision-form" else ("pixtral" if spec.vision == "qwen_vl" else "qwen_vl")
            q = D // 4
            if form == "qwen_vl":
                half = self.base(theta, D // 2, q)
                w, s, kind = np.concatenate([half, half]), 1.0, "default"
            else:
                full = self.base(theta, D, 2 * q)
                w, s, kind = np.concatenate([full[0::2], full[1::2]]), 1.0, "default"
        else:
            kind = "default" if b == "scaling-dropped" else spec.scaling.type
            w, s = self._kind(kind, spec, theta, d, n, seq_len)
        if b == "scaling-twice" and kind != "default":
            w0, _ = self._kind("default", spec, theta, d, n, seq_len)
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(w0 > 0, w * w / np.where(w0 > 0, w0, 1), 0).astype(F)
        if b in ("inv-freq-bf16", "angles-bf16-all"):
            w = _round(w, "bfloat16").astype(F)
        if b == "inv-freq-fp16":
            w = _round(w, "float16").astype(F)
        if b == "attention-dropped":
            s = 1.0
        if b == "attention-squared":
            s = s * s
        return np.asarray(w, dtype=F), float(F(s))

    def _kind(self, kind: str, spec, theta: float, d: int, n: int, seq_len: int) -> tuple[np.ndarray, float]:
        F, b, sc = self.F, self.bug, spec.scaling
        factor = (2.0 * sc.factor if b == "factor-doubled" and sc.factor is not None else sc.factor)
        if kind == "default":
            return self.base(theta, d, n), 1.0
        if kind == "linear":
            return (self.base(theta, d, n) / F(factor)).astype(F), 1.0
        if kind == "dynamic":
            M = sc.max_position_embeddings
            L = max(seq_len, M) if b != "dynamic-static" else int(factor * M)
            t2 = theta * (factor * L / M - (factor - 1)) ** (d / (d - 2))
            return self.base(t2, d, n), 1.0
        if kind == "ntk":
            return self.base(theta * sc.alpha ** (d / (d - 2)), d, n), 1.0
        if kind == "yarn":
            return self._yarn(spec, theta, d, n, factor)
        if kind == "longrope":
            L0 = sc.original_max_position_embeddings
            use_long = seq_len > L0
            if b == "longrope-boundary":
                use_long = seq_len >= L0
            elif b == "longrope-always-long":
                use_long = True
            elif b == "longrope-always-short":
                use_long = False
            elif b == "longrope-swapped":
                use_long = not use_long
            ext = np.asarray(sc.long_factor if use_long else sc.short_factor, dtype=F)
            w = (inv_freqs(theta, d, n, F) / ext).astype(F)
            f = sc.factor if sc.factor is not None else sc.max_position_embeddings / L0
            s = sc.attention_factor if sc.attention_factor is not None else (1.0 if f <= 1 else math.sqrt(1 + math.log(f) / math.log(L0)))
            return w, s
        if kind == "llama3":
            w = self.base(theta, d, n)
            a, bb, L0 = sc.low_freq_factor, sc.high_freq_factor, sc.original_max_position_embeddings
            lam = (F(2 * math.pi) / w).astype(F)
            lo_edge, hi_edge = L0 / a, L0 / bb
            if b == "llama3-bands-swapped":
                lo_edge, hi_edge = hi_edge, lo_edge
            if b == "llama3-bands-swapped-kept":  # torchtune's order of tests, edges swapped
                return np.where(lam < L0 / a, w, (w / F(factor)).astype(F)).astype(F), 1.0
            out = np.where(lam > lo_edge, w / F(factor), w).astype(F)
            if b == "llama3-smooth-wavelength":
                sigma = ((F(L0 / a) - lam) / F(L0 / a - L0 / bb)).astype(F)
            else:
                sigma = ((F(L0) / lam - F(a)) / F(bb - a)).astype(F)
            mid = (lam >= hi_edge) & (lam <= lo_edge)
            smooth = ((F(1) - sigma) * w / F(factor) + sigma * w).astype(F)
            return np.where(mid, smooth, out).astype(F), 1.0
        if kind == "proportional":
            rho = 1.0 if sc.partial_rotary_factor is None else sc.partial_rotary_factor
            k = min(int((rho * d) // 2), n)
            w = np.zeros(n, dtype=F)
            den = {"proportional-denominator": 2 * k, "proportional-denominator-k": k}.get(b, d)
            w[:k] = self.base(theta, den, k)
            return (w / F(1.0 if sc.factor is None else sc.factor)).astype(F), 1.0
        raise ValueError(kind)

    def _yarn(self, spec, theta: float, d: int, n: int, factor: float) -> tuple[np.ndarray, float]:
        F, b, sc = self.F, self.bug, spec.scaling
        L0 = sc.original_max_position_embeddings * (factor if b == "yarn-range-from-max" else 1)
        fast = 32.0 if sc.beta_fast is None else sc.beta_fast
        slow = 1.0 if sc.beta_slow is None else sc.beta_slow

        def corr(beta: float) -> float:
            return d * math.log(L0 / (beta * 2 * math.pi)) / (2 * math.log(theta))

        low, high = corr(fast), corr(slow)
        truncate = sc.truncate is None or sc.truncate
        if b == "yarn-truncate-flipped":
            truncate = not truncate
        if truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d - 1)
        if low == high:
            high += 0.001
        j = np.arange(n, dtype=F) * (F(2) if b == "yarn-ramp-2j" else F(1))
        ramp = np.clip((j - F(low)) / F(high - low), 0, 1).astype(F)
        if b == "yarn-ramp-inverted":
            ramp = (F(1) - ramp).astype(F)
        w = self.base(theta, d, n)
        w = (ramp * (w / F(factor)) + (F(1) - ramp) * w).astype(F)

        def mscale(x: float, m: float = 1.0) -> float:
            return 1.0 if x <= 1 else 0.1 * m * math.log(x) + 1.0

        f = factor
        if sc.attention_factor is not None:
            s = sc.attention_factor
        elif sc.mscale and sc.mscale_all_dim:
            s = mscale(f, sc.mscale) / mscale(f, sc.mscale_all_dim)
        else:
            s = mscale(f)
        return w, s


# ----------------------------------------------------------------------------- layout (own)


def _pairs(D: int, r: int, start: int, pairing: str) -> tuple[np.ndarray, ...]:
    n = r // 2
    j = np.arange(n)
    half = (start + j, start + n + j)
    adj = (start + 2 * j, start + 2 * j + 1)
    read = half if pairing == "half" else adj
    write = adj if pairing == "adjacent" else half
    return read[0], read[1], write[0], write[1]


def _axes(spec, layout: str) -> np.ndarray:
    n = spec.rotary_dim // 2
    j = np.arange(n)
    if spec.mrope_section is not None:
        t, h, w = spec.mrope_section
        if layout == "chunked":
            return np.where(j < t, 0, np.where(j < t + h, 1, 2))
        ax = np.zeros(n, dtype=np.int64)
        ax[(j % 3 == 1) & (j < 3 * h)] = 1
        ax[(j % 3 == 2) & (j < 3 * w)] = 2
        return ax
    if spec.vision is not None:
        return (j >= spec.head_dim // 4).astype(np.int64)
    return np.zeros(n, dtype=np.int64)


@dataclass
class BugEngine(BaseBackend):
    """A complete RoPE engine in ``precision`` (float32 or float64) with one ``bug`` (see :data:`BUGS`)."""

    bug: str = ""
    precision: str = "float32"
    capabilities: Capabilities = field(default=None)  # type: ignore[assignment]  # filled in __post_init__
    state: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.bug and self.bug not in BUGS:
            raise ValueError(f"bug={self.bug!r}: unknown")
        self.name = f"engine-{self.precision}-{self.bug or 'correct'}"
        if self.capabilities is None:
            self.capabilities = Capabilities(stages=frozenset(STAGES), angle_dtype=self.precision, table_dtype=self.precision)
        self.F = np.float32 if self.precision == "float32" else np.float64
        self.freqs = _Freqs(self.F, self.bug)

    # --- positions
    def _rows(self, spec, positions, cu) -> np.ndarray:
        b = self.bug
        pos = np.asarray(positions, dtype=np.int64)
        if spec.n_axes == 1:
            rows = pos[None]
        elif spec.mrope_section is not None:
            rows = pos
        else:
            rows = np.moveaxis(pos, -1, 0)
        rows = rows.astype(np.float64)
        if b == "positions-zero":
            rows = np.zeros_like(rows)
        elif b == "positions-plus-one":
            rows = rows + 1
        elif b == "positions-minus-three":
            rows = rows - 3
        elif b in ("positions-bf16", "angles-bf16-all"):
            rows = _round(rows, "bfloat16")
        elif b == "positions-fp16":
            rows = _round(rows, "float16")
        elif b == "offsets-ignored" and spec.n_axes == 1:
            if cu is not None:
                starts = np.repeat(cu[:-1], np.diff(cu))
                rows = (np.arange(rows.shape[-1]) - starts)[None].astype(np.float64)
            elif rows.ndim == 3:
                rows = np.broadcast_to(np.arange(rows.shape[-1], dtype=np.float64), rows.shape).copy()
        elif b == "row0-everywhere" and rows.ndim == 3 and cu is None and spec.vision is None:
            rows = np.broadcast_to(rows[:, :1], rows.shape).copy()
        elif b == "cu-seqlens-ignored" and cu is not None:
            rows = np.arange(rows.shape[-1], dtype=np.float64)[None]
        elif b == "packed-no-restart" and cu is not None:
            rows = rows + np.repeat(cu[:-1], np.diff(cu))[None]
        elif b == "mrope-rows-swapped" and spec.mrope_section is not None:
            rows = rows[[0, 2, 1]]
        elif b == "mrope-text-only" and spec.mrope_section is not None:
            rows = np.broadcast_to(rows[:1], rows.shape).copy()
        elif b == "vision-hw-swapped" and spec.vision is not None:
            rows = rows[::-1].copy()
        return rows

    def _seq_len(self, spec, rows_int) -> int:
        seq = max(int(np.max(rows_int)) + 1, 1) if np.size(rows_int) else 1
        if self.bug == "dynamic-stale" and spec.scaling.type == "dynamic":
            seq = self.state["longest"] = max(self.state.get("longest", 0), seq)
        return seq

    # --- tables
    def _tables(self, spec, positions, cu=None, grid=None) -> tuple[np.ndarray, np.ndarray]:
        F, b = self.F, self.bug
        rows = self._rows(spec, positions, cu)
        w, s = self.freqs(spec, self._seq_len(spec, np.asarray(positions)))
        layout = spec.mrope_layout
        if b == "mrope-layout" and spec.mrope_section is not None:
            layout = "interleaved" if layout == "chunked" else "chunked"
        p = np.moveaxis(rows, 0, -1)[..., _axes(spec, layout)]
        if grid is not None:
            p = np.broadcast_to(p, (*grid, p.shape[-1]))
        with np.errstate(all="ignore"):
            phi = (p.astype(F) * w).astype(F)
            if b in ("angles-bf16", "angles-bf16-all"):
                phi = _round(phi, "bfloat16").astype(F)
            cos = (np.cos(phi).astype(F) * F(s)).astype(F)
            sin = (np.sin(phi).astype(F) * F(s)).astype(F)
        if b in ("tables-bf16", "angles-bf16", "angles-bf16-all"):
            cos, sin = _round(cos, "bfloat16").astype(F), _round(sin, "bfloat16").astype(F)
        if b == "tables-fp16":
            cos, sin = _round(cos, "float16").astype(F), _round(sin, "float16").astype(F)
        if b == "direction-reversed":
            sin = -sin
        return cos, sin

    def tables_for(self, spec, positions, cu=None, grid=None) -> tuple[np.ndarray, np.ndarray]:
        """This engine's cos/sin tables ``[*grid, n]`` for ``positions`` (``cu``: packed sequences)."""
        return self._tables(spec, positions, cu, grid)

    # --- rotation
    def _layout(self, spec) -> tuple[np.ndarray, ...]:
        b = self.bug
        pairing, start = spec.pairing, spec.rotary_start
        if b == "pairing-swapped":
            pairing = "adjacent" if pairing != "adjacent" else "half"
        if b == "window-wrong-end" and spec.rotary_dim < spec.head_dim:
            start = spec.head_dim - spec.rotary_dim if start == 0 else 0
        return _pairs(spec.head_dim, spec.rotary_dim, start, pairing)

    def _rotate(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec, backward: bool, cu=None) -> np.ndarray:
        F = self.F
        ia, ib, oa, ob = self._layout(spec)
        if backward:
            ia, ib, oa, ob = oa, ob, ia, ib
            sin = -sin
        c, s = cos[..., None, :].astype(F), sin[..., None, :].astype(F)
        xw = x.astype(F)
        y = x.copy()
        with np.errstate(all="ignore"):
            y[..., oa] = (xw[..., ia] * c - xw[..., ib] * s).astype(x.dtype)
            y[..., ob] = (xw[..., ib] * c + xw[..., ia] * s).astype(x.dtype)
        if self.bug == "only-row0":
            if cu is not None:
                y[int(cu[1]):] = x[int(cu[1]):]
            elif x.ndim == 4:
                y[1:] = x[1:]
        return y

    # --- stages
    def inv_freq(self, spec, seq_len):
        if self.bug == "dynamic-stale" and spec.scaling.type == "dynamic":
            seq_len = self.state["longest"] = max(self.state.get("longest", 0), seq_len)
        w, s = self.freqs(spec, seq_len)
        return w, s

    def cos_sin(self, spec, positions):
        return self._tables(spec, positions)

    def apply(self, x, cos, sin, spec):
        cos, sin = np.asarray(cos, dtype=np.float64), np.asarray(sin, dtype=np.float64)
        if self.bug in ("tables-bf16", "angles-bf16", "angles-bf16-all"):
            cos, sin = _round(cos, "bfloat16"), _round(sin, "bfloat16")
        if self.bug == "tables-fp16":
            cos, sin = _round(cos, "float16"), _round(sin, "float16")
        if self.bug == "direction-reversed":
            sin = -sin
        return self._rotate(np.asarray(x), cos, sin, spec, False)

    def forward(self, x, positions, spec, cu_seqlens=None):
        x = np.asarray(x)
        cos, sin = self._tables(spec, positions, cu_seqlens, x.shape[:-2])
        return self._rotate(x, cos, sin, spec, False, cu_seqlens)

    def backward(self, grad, positions, spec, cu_seqlens=None):
        grad = np.asarray(grad)
        cos, sin = self._tables(spec, positions, cu_seqlens, grad.shape[:-2])
        return self._rotate(grad, cos, sin, spec, True, cu_seqlens)
