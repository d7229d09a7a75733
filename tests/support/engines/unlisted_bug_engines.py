"""Single-bug RoPE engines of kinds the bug catalogue does not list, written from docs/spec.md.

:class:`UnlistedEngine` computes RoPE like a typical engine (float32 or float64): inverse
frequencies ``1 / theta^(2i/d)`` (linear: divided by the factor; YaRN: the ramp of spec section 3),
angles ``p * w``, cos/sin tables times ``s``, the rotation of each pair. ``bug`` switches on one
defect from :data:`UNLISTED`, each with what a correct diagnosis must say about it: the *axis* of
a finding (docs/report-schema.md) and the *patterns* that describe it, and which catalogue classes
may be named for it (a bug whose effect on a case equals a listed class's). None of this code is
shared with the catalogue's decoys (``conformance/bugs``) or the diagnosis.

``ggml-theta-scale`` is not a bug: ggml's (llama.cpp) frequencies, a float32 ``theta_scale``
raised to the pair index by repeated multiplication; the judge must call it IMPRECISE, never FAIL.
Its ``theta_scale`` is a powf one ulp above the correctly rounded float32 (as NumPy's AVX-512 powf
gives for theta 10000, d 64), fixed bit for bit: ~38 u of drift at pair 31 on every machine.
``fast-sincos`` is not a bug either: cos/sin whose argument reduction loses 20 units of float32 per
radian-relative (an angle error 20 u x phi, the declared model allows 8 u): IMPRECISE (angle-growth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from conformance.backends.base import BaseBackend, Capabilities
from conformance.vocabulary import DTYPES, STAGES
from float32_constants import inv_freqs, power32

__all__ = ["UnlistedEngine", "UNLISTED", "NOT_BUGS", "NOT_BUG_WORDS", "Expect", "make_case"]


@dataclass(frozen=True)
class Expect:
    """What the diagnosis must say: a finding on one of ``axes`` with one of ``patterns`` (any pattern
    when empty); catalogue classes it may name (``may_name``); the cases that show it
    (``(stage, spec variant, pairing, dtype, position regime)`` for :func:`make_case`)."""

    axes: tuple[str, ...]
    patterns: tuple[str, ...]
    cases: tuple[tuple[str, str, str, str, str], ...]
    words: str
    may_name: tuple[str, ...] = ()
    #: a gain-axis finding counts only when every gain it measured is this value (0: outputs zeroed)
    gain: float | None = None
    #: words in the FAIL's own message that describe the bug (a call form's integrity check, said before any diagnosis)
    message: tuple[str, ...] = ()

    def described(self, diagnosis: dict[str, Any] | None, message: str = "") -> bool:
        """Whether a FAIL's diagnosis (the JSON dict), or its message where :attr:`message` allows, describes this bug."""
        if any(w in message for w in self.message):
            return True
        for f in (diagnosis or {}).get("findings") or []:
            if f["axis"] not in self.axes or (self.patterns and f["pattern"] not in self.patterns):
                continue
            if f["axis"] == "gain" and self.gain is not None:
                g = (f.get("measured") or {}).get("gain")
                vals = g if isinstance(g, list) else [g]
                if not vals or any(v is None or abs(float(v) - self.gain) > 1e-6 for v in vals):
                    continue
            return True
        return False


_FWD = ("forward", "default", "half", "float32", "near4096")
_FWD_ADJ = ("forward", "default", "adjacent", "float32", "near4096")
_ROWS = ("forward", "default", "half", "float32", "rows")
_YARN = ("forward", "yarn", "half", "float32", "near4096")
_PARTIAL = ("forward", "partial", "half", "float32", "near4096")
_MROPE = ("forward", "mrope-chunked", "half", "float32", "mrope-image")
_TABLE = ("cos_sin", "default", "half", "float32", "near4096")
_BWD = ("backward", "default", "half", "float32", "near4096")
_NEAR2048 = ("forward", "default", "half", "float32", "near2048")
_NEAR65536 = ("forward", "default", "half", "float32", "near65536")


def make_case(stage: str, variant: str, pairing: str, dtype: str, regime: str):
    """A generated-style case (seeded inputs, expected values from roperef) of any stage, spec variant, pairing,
    dtype and position regime of :mod:`conformance.generated`."""
    from conformance.generated.plan import GenCase, light_case, materialize_generated
    from conformance.generated.positions import REGIMES
    from conformance.generated.specs import variant_spec

    spec = variant_spec(variant, pairing)
    reg = REGIMES[regime]
    cid = f"{stage}/{variant}/{pairing}/{dtype}/unlisted/{reg.tag}"
    return materialize_generated(GenCase(cid, stage, variant, spec, dtype, reg, light_case(cid, stage, spec, dtype, reg)))


#: bug -> what a correct diagnosis says about it
UNLISTED: dict[str, Expect] = {
    # positions
    "row1-plus-one": Expect(("row", "position"), ("shift", "per-row", "small-deviation"), (_FWD, _ROWS), "position +1 only on batch row 1"),
    "modulo-2048": Expect(("position", "token"), ("wrap",), (_FWD, _NEAR2048), "positions taken modulo 2048 (a table of 2048 rows)"),
    "clamp-4096": Expect(("position", "token"), ("clamp",), (_FWD, _BWD), "positions clamped at 4096"),
    "tile-restart-8": Expect(("position", "token"), ("restart", "tile"), (_FWD, _ROWS), "positions restart at 0 every tile of 8 tokens"),
    "tile-first-positions": Expect(("position", "token"), ("tile", "restart"), (_ROWS,), "every tile of 8 tokens reads the first tile's positions"),
    "tail-unrotated": Expect(("token",), ("zero",), (_FWD, _ROWS), "the last 4 tokens of each row not rotated (a loop bound)"),
    "tokens-reversed": Expect(("token",), ("tokens-reversed",), (_FWD, _ROWS), "token t rotated with the position of token T-1-t"),
    "transposed-layout": Expect(("token",), ("transposed",), (_FWD, _ROWS), "[B, T, H, D] read as [B, H, T, D]"),
    "int16-positions": Expect(("position", "token"), ("wrap", "shift"), (_NEAR65536,), "positions stored in int16 (wrap past 32767)"),
    # frequencies
    "freq-mirrored": Expect(("frequency",), ("mirrored",), (_FWD, _TABLE), "frequency order reversed: pair j uses w_(n-1-j)"),
    "freq-neighbours-swapped": Expect(("frequency",), ("permuted",), (_FWD, _TABLE), "pair j uses w_(j xor 1)"),
    "freq-index-plus-one": Expect(("frequency",), ("uniform",), (_FWD, _TABLE), "exponent 2(j+1)/d: every w off by theta^(-2/d)"),
    "band-divided": Expect(("frequency",), ("band", "groups"), (_FWD, _TABLE), "pairs n/2..n-1 divided by 4 (a band scaled)"),
    "last-pairs-zero": Expect(("frequency", "angle"), ("zero", "identity"), (_FWD, _TABLE), "the last 4 pairs get frequency 0"),
    "theta-times-3": Expect(("frequency",), ("geometric",), (_FWD, _TABLE), "theta multiplied by 3 (30000 for 10000)",
                            may_name=("theta:wrong",)),
    "exponent-i-over-d": Expect(("frequency",), ("geometric",), (_FWD, _TABLE), "exponent i/d instead of 2i/d",
                                may_name=("freq:denominator-head-dim",)),  # on a partial spec with r = D/2 it is that class
    # angles
    "cos-sin-swapped": Expect(("angle",), ("complement",), (_FWD, _TABLE), "cos and sin exchanged (pi/2 - phi)"),
    "cos-negated": Expect(("angle",), ("reversed-negated",), (_FWD, _TABLE), "cos negated (pi - phi)"),
    "angle-doubled": Expect(("angle",), ("doubled",), (_FWD, _TABLE), "angle 2 p w"),
    "sign-one-half": Expect(("pair_map",), ("sign",), (_FWD, _FWD_ADJ), "y_b = x_b cos - x_a sin (one term's sign wrong)"),
    # gain
    "gain-sqrt-s": Expect(("gain",), ("uniform",), (_YARN,), "attention factor sqrt(s) instead of s"),
    "gain-half-pairs": Expect(("gain",), ("pairs",), (_YARN,), "s applied to the first half of the pairs only"),
    "factor-on-cos-only": Expect(("pair_map",), ("formula",), (_YARN,), "the attention factor multiplies cos only"),
    # rounding
    "input-bf16": Expect(("rounding",), ("input",), (_FWD, _ROWS), "x rounded to bfloat16 before the rotation"),
    "output-bf16": Expect(("rounding",), ("output",), (_FWD, _BWD), "the output rounded to bfloat16"),
    # channels
    "output-adjacent": Expect(("channel",), ("pairing",), (_FWD,), "rotate_half pairs written interleaved (de-interleaved output)",
                              may_name=("pairing:other",)),
    "output-pairs-mirrored": Expect(("channel",), ("mirrored",), (_FWD, _FWD_ADJ), "output pair k written at pair n-1-k"),
    "passthrough-zeroed": Expect(("channel",), ("passthrough",), (_PARTIAL,), "channels outside the rotary window zeroed"),
    "pair-outputs-swapped": Expect(("pair_map", "angle"), ("reflection", "formula"), (_FWD, _FWD_ADJ),
                                   "each pair's two outputs written to each other's channel"),
    # heads
    "head0-only": Expect(("head",), ("zero", "identity"), (_FWD, _ROWS), "only head 0 rotated"),
    "head-copy": Expect(("head",), ("copied",), (_FWD, _ROWS), "head 1's output is head 0's"),
    "head1-theta-x2": Expect(("head", "frequency"), ("geometric",), (_FWD, _ROWS), "heads after the first use twice the theta (a per-head table)"),
    "head-stride-half": Expect(("head", "dependence", "pair_map", "channel"), (), (_FWD,), "head h read at offset h*D/2 (wrong head stride)"),
    # mRoPE rows
    "mrope-section-off-by-one": Expect(("axis_row",), ("row",), (_MROPE,), "the t section one pair too long"),
    # state
    # on one call the counter's offset is a shift of every position (positions:shifted's operator); where the bound is too
    # loose for the repeat probe to see the counter move (positions near 2^31), that name is what the case measures
    "position-counter": Expect(("state",), ("changes",), (_FWD, _ROWS), "positions offset by a counter advanced each call",
                               may_name=("positions:shifted",)),
    # backward
    "backward-positions-doubled": Expect(("angle",), ("doubled",), (_BWD,), "backward rotates by -2 phi"),
    # second round (issue 21): kinds the first round did not have
    "batch-row-positions": Expect(("row", "position"), ("per-row", "shift", "rows-permuted"), (_ROWS,),
                                  "batch row b reads the positions of row b+1 (mod B)"),
    "head-position-offset": Expect(("head",), ("shift", "per-row"), (_FWD, _ROWS), "head h rotated at position p + h"),
    "odd-heads-reversed": Expect(("head",), ("reversed",), (_FWD, _ROWS), "odd heads rotate in the opposite direction (sin negated)"),
}

NOT_BUGS = ("ggml-theta-scale", "fast-sincos")
#: what each non-bug does (it must be IMPRECISE, never FAIL)
NOT_BUG_WORDS = {
    "ggml-theta-scale": "not a bug: ggml's float32 theta_scale power (must be IMPRECISE, never FAIL)",
    "fast-sincos": "not a bug: cos/sin 20 u x phi off (a fast argument reduction; must be IMPRECISE, never FAIL)",
}


def _axes(spec, n: int) -> np.ndarray:
    j = np.arange(n)
    if spec.mrope_section is None:
        return np.zeros(n, dtype=np.int64)
    t, h, w = spec.mrope_section
    if spec.mrope_layout == "chunked":
        return np.where(j < t, 0, np.where(j < t + h, 1, 2))
    ax = np.zeros(n, dtype=np.int64)
    ax[(j % 3 == 1) & (j < 3 * h)] = 1
    ax[(j % 3 == 2) & (j < 3 * w)] = 2
    return ax


@dataclass
class UnlistedEngine(BaseBackend):
    """A RoPE engine in ``precision`` with one bug of :data:`UNLISTED` (or ``ggml-theta-scale``)."""

    bug: str = ""
    precision: str = "float32"
    capabilities: Capabilities = field(default=None)  # type: ignore[assignment]  # filled in __post_init__
    state: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.bug and self.bug not in UNLISTED and self.bug not in NOT_BUGS:
            raise ValueError(f"bug={self.bug!r}: unknown")
        self.name = f"unlisted-{self.precision}-{self.bug or 'correct'}"
        if self.capabilities is None:
            feats = frozenset({"partial", "window_last", "varlen", "per_batch_positions", "sparse_positions", "mrope_chunked",
                               "mrope_interleaved", "negative_positions"})
            self.capabilities = Capabilities(stages=frozenset(STAGES), pairings=frozenset({"half", "adjacent"}),
                                             dtypes=frozenset(DTYPES), scaling_types=frozenset({"default", "linear", "yarn"}),
                                             features=feats, angle_dtype=self.precision, table_dtype=self.precision)
        self.F: Any = np.float32 if self.precision == "float32" else np.float64

    # --- frequencies (spec section 3)
    def _base(self, theta: float, d: int, n: int) -> np.ndarray:
        F, b = self.F, self.bug
        if b == "ggml-theta-scale":  # ggml: theta_scale = powf(theta, -2/d); theta_i = theta_scale^i by repeated products
            # powf one unit in the last place above the correctly rounded value (as NumPy's AVX-512 powf returns for
            # theta 10000, d 64: 0.74989426, 1.16 u over the real value; the correctly rounded 0.7498942 is 0.17 u under
            # it and drifts only ~5 u at pair 31, a PASS). Built from the correctly rounded float32 and one IEEE step,
            # so the same bits on every machine (tests/support/engines/float32_constants.py).
            scale = np.nextafter(power32(theta, -2, d), np.float32(np.inf))
            out = np.empty(n, dtype=np.float32)
            t = np.float32(1.0)
            for k in range(n):
                out[k] = t
                t = np.float32(t * scale)
            return out.astype(F)
        # correctly rounded constants (tests/support/engines/float32_constants.py): no SIMD-dependent last bit
        return inv_freqs(theta, d, n, F, two=1 if b == "exponent-i-over-d" else 2, offset=1 if b == "freq-index-plus-one" else 0)

    def freqs(self, spec) -> tuple[np.ndarray, float]:
        F, b, sc = self.F, self.bug, spec.scaling
        n = spec.rotary_dim // 2
        d = spec.freq_dim
        theta = spec.theta * (3.0 if b == "theta-times-3" else 1.0)
        w = self._base(theta, d, n)
        s = 1.0
        if sc.type == "linear":
            w = (w / F(sc.factor)).astype(F)
        elif sc.type == "yarn":
            f, L0 = sc.factor, sc.original_max_position_embeddings
            fast = 32.0 if sc.beta_fast is None else sc.beta_fast
            slow = 1.0 if sc.beta_slow is None else sc.beta_slow

            def corr(beta: float) -> float:
                return d * math.log(L0 / (beta * 2 * math.pi)) / (2 * math.log(spec.theta))

            low, high = corr(fast), corr(slow)
            if sc.truncate is None or sc.truncate:
                low, high = math.floor(low), math.ceil(high)
            low, high = max(low, 0), min(high, d - 1)
            if low == high:
                high += 0.001
            ramp = np.clip((np.arange(n, dtype=F) - F(low)) / F(high - low), 0, 1).astype(F)
            w = (ramp * (w / F(f)) + (F(1) - ramp) * w).astype(F)
            if sc.attention_factor is not None:
                s = sc.attention_factor
            elif sc.mscale and sc.mscale_all_dim:
                s = (0.1 * sc.mscale * math.log(f) + 1) / (0.1 * sc.mscale_all_dim * math.log(f) + 1)
            else:
                s = 0.1 * math.log(f) + 1.0 if f > 1 else 1.0
        if b == "freq-mirrored":
            w = w[::-1].copy()
        elif b == "freq-neighbours-swapped":
            w = w[np.arange(n) ^ 1 if n % 2 == 0 else np.arange(n)].copy()
        elif b == "band-divided":
            w = w.copy()
            w[n // 2:] = (w[n // 2:] / F(4)).astype(F)
        elif b == "last-pairs-zero":
            w = w.copy()
            w[-4:] = 0
        return w.astype(F), s

    # --- positions (spec section 1)
    def _rows(self, spec, positions, cu, grid) -> np.ndarray:
        """Position rows [A, *grid] as float."""
        pos = np.asarray(positions, dtype=np.int64)
        raw = pos[None] if spec.mrope_section is None else pos
        rows = np.broadcast_to(raw, (raw.shape[0], *grid)).astype(np.float64).copy()
        b = self.bug
        if b == "row1-plus-one" and rows.ndim == 3:
            rows[:, 1:] += 1
        elif b == "modulo-2048":
            rows = np.mod(rows, 2048)
        elif b == "clamp-4096":
            rows = np.minimum(rows, 4096)
        elif b in ("tile-restart-8", "tile-first-positions") and rows.ndim == 3:
            T = rows.shape[-1]
            t = np.arange(T)
            first = t - t % 8
            rows = rows - rows[..., first] if b == "tile-restart-8" else rows[..., t % 8]
        elif b == "batch-row-positions" and rows.ndim == 3 and rows.shape[1] > 1:
            rows = np.roll(rows, -1, axis=1)  # row b reads row b+1's positions
        elif b == "tokens-reversed" and rows.ndim == 3:
            rows = rows[..., ::-1].copy()
        elif b == "int16-positions":
            rows = np.mod(rows + 32768, 65536) - 32768
        elif b == "position-counter":
            offset = self.state.get("counter", 0)
            self.state["counter"] = offset + int(np.prod(grid))
            rows = rows + offset
        return rows

    def _tables(self, spec, positions, cu=None, grid=None) -> tuple[np.ndarray, np.ndarray]:
        F, b = self.F, self.bug
        pos = np.asarray(positions)
        g = grid if grid is not None else (pos.shape if spec.mrope_section is None else pos.shape[1:])
        rows = self._rows(spec, positions, cu, g)
        w, s = self.freqs(spec)
        n = w.size
        sections = spec.mrope_section
        if b == "mrope-section-off-by-one" and sections is not None:
            spec = spec.replace(mrope_section=(sections[0] + 1, sections[1] - 1, sections[2]))
        p = np.moveaxis(rows, 0, -1)[..., _axes(spec, n)]
        with np.errstate(all="ignore"):
            phi = (p.astype(F) * w).astype(F)
            if b == "fast-sincos":
                phi = (phi.astype(np.float64) * (1.0 + 20.0 * 2.0**-24)).astype(F)
            if b in ("angle-doubled",):
                phi = (F(2) * phi).astype(F)
            cos, sin = np.cos(phi).astype(F), np.sin(phi).astype(F)
        if b == "cos-sin-swapped":
            cos, sin = sin, cos
        elif b == "cos-negated":
            cos = -cos
        if b == "gain-sqrt-s":
            s = math.sqrt(s)
        if b == "factor-on-cos-only":
            cos, s = (cos * F(s)).astype(F), 1.0
        gain = np.full(n, s, dtype=np.float64)
        if b == "gain-half-pairs":
            gain[n // 2:] = 1.0
        cos = (cos * gain.astype(F)).astype(F)
        sin = (sin * gain.astype(F)).astype(F)
        if b == "tail-unrotated" and cos.ndim == 3:
            cos[:, -4:], sin[:, -4:] = 1, 0
        return cos, sin

    # --- rotation (spec section 2)
    def _maps(self, spec) -> tuple[np.ndarray, ...]:
        n, start, b = spec.rotary_dim // 2, spec.rotary_start, self.bug
        j = np.arange(n)
        half = (start + j, start + n + j)
        adj = (start + 2 * j, start + 2 * j + 1)
        read = half if spec.pairing == "half" else adj
        write = adj if spec.pairing == "adjacent" else half
        if b == "output-adjacent" and spec.pairing == "half":
            write = adj
        if b == "output-pairs-mirrored":
            write = (write[0][::-1], write[1][::-1])
        if b == "pair-outputs-swapped":
            write = (write[1], write[0])
        return read[0], read[1], write[0], write[1]

    def _rotate(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec, backward: bool) -> np.ndarray:
        F, b = self.F, self.bug
        x = np.asarray(x)
        ia, ib, oa, ob = self._maps(spec)
        if backward:
            ia, ib, oa, ob = oa, ob, ia, ib
            sin = -sin
            if b == "backward-positions-doubled":
                c2 = (cos.astype(np.float64) ** 2 - sin.astype(np.float64) ** 2)
                s2 = 2 * cos.astype(np.float64) * sin.astype(np.float64)
                cos, sin = c2.astype(F), s2.astype(F)
        xw = x.astype(F)
        if b == "input-bf16":
            import ml_dtypes  # lazy: only this bug needs it

            xw = xw.astype(ml_dtypes.bfloat16).astype(F)
        if b == "head-stride-half" and x.shape[-2] > 1:
            D = x.shape[-1]
            flat = xw.reshape(*x.shape[:-2], -1)
            xw = np.stack([flat[..., h * D // 2: h * D // 2 + D] for h in range(x.shape[-2])], axis=-2)
        if b == "transposed-layout" and x.ndim == 4:
            B, T, H, D = x.shape
            xt = xw.reshape(B, H, T, D)  # the kernel reads the buffer as [B, H, T, D]
            c, s = cos[:, None, :, :], sin[:, None, :, :]
            out = xt.copy()
            with np.errstate(all="ignore"):
                out[..., oa] = xt[..., ia] * c - xt[..., ib] * s
                out[..., ob] = xt[..., ib] * c + xt[..., ia] * s
            return out.reshape(B, T, H, D).astype(x.dtype)
        c, s = cos[..., None, :].astype(F), sin[..., None, :].astype(F)
        y = x.copy()
        if b == "passthrough-zeroed" and spec.rotary_dim < spec.head_dim:
            y[...] = 0
        with np.errstate(all="ignore"):
            y[..., oa] = (xw[..., ia] * c - xw[..., ib] * s).astype(x.dtype)
            if b == "sign-one-half":
                y[..., ob] = (xw[..., ib] * c - xw[..., ia] * s).astype(x.dtype)
            else:
                y[..., ob] = (xw[..., ib] * c + xw[..., ia] * s).astype(x.dtype)
        if b == "head0-only" and x.shape[-2] > 1:
            y[..., 1:, :] = x[..., 1:, :]
        if b == "head-copy" and x.shape[-2] > 1:
            y[..., 1:, :] = y[..., :1, :]
        if b == "output-bf16":
            import ml_dtypes  # lazy: only this bug needs it

            y = y.astype(ml_dtypes.bfloat16).astype(x.dtype)
        return y

    # --- stages
    def inv_freq(self, spec, seq_len):
        return self.freqs(spec)

    def cos_sin(self, spec, positions):
        return self._tables(spec, positions)

    def apply(self, x, cos, sin, spec):
        return self._rotate(x, np.asarray(cos, dtype=np.float64), np.asarray(sin, dtype=np.float64), spec, False)

    def _per_head(self, x, positions, spec, cu, backward: bool) -> np.ndarray:
        """Heads rotated on their own: head h at position p + h, or odd heads with sin negated."""
        y = np.empty_like(np.asarray(x))
        for h in range(x.shape[-2]):
            pos = np.asarray(positions) + (h if self.bug == "head-position-offset" else 0)
            cos, sin = self._tables(spec, pos, cu, x.shape[:-2])
            if self.bug == "odd-heads-reversed" and h % 2 == 1:
                sin = -sin
            y[..., h:h + 1, :] = self._rotate(x[..., h:h + 1, :], cos, sin, spec, backward)
        return y

    def forward(self, x, positions, spec, cu_seqlens=None):
        x = np.asarray(x)
        if self.bug in ("head-position-offset", "odd-heads-reversed"):
            return self._per_head(x, positions, spec, cu_seqlens, False)
        cos, sin = self._tables(spec, positions, cu_seqlens, x.shape[:-2])
        y = self._rotate(x, cos, sin, spec, False)
        if self.bug == "head1-theta-x2" and x.shape[-2] > 1:
            other = spec.replace(theta=2.0 * spec.theta)
            c2, s2 = self._tables(other, positions, cu_seqlens, x.shape[:-2])
            y[..., 1:, :] = self._rotate(x[..., 1:, :], c2, s2, spec, False)
        return y

    def backward(self, grad, positions, spec, cu_seqlens=None):
        grad = np.asarray(grad)
        if self.bug in ("head-position-offset", "odd-heads-reversed"):
            return self._per_head(grad, positions, spec, cu_seqlens, True)
        cos, sin = self._tables(spec, positions, cu_seqlens, grad.shape[:-2])
        return self._rotate(grad, cos, sin, spec, True)
