"""Inverse frequencies and attention factor, one small function per scaling type.

Every function returns ``(inv_freq, s)``: ``inv_freq`` float64 of length
``n = rotary_dim/2`` (pair ``i`` uses ``inv_freq[i]``) and the attention factor
``s`` (a Python float multiplying both cos and sin). ROPE-SPEC.md section 3 is the
contract; the formulas are repeated in each docstring.

The base frequencies are defined, in float64, as::

    w_i = 1 / theta ** ((2*i) / d)        i = 0..n-1, d = spec.freq_dim

(``(2*i)/d`` and the power each rounded once). This *is* the float64 inv_freq
the golden files and the accuracy audit take as exact.

``dynamic`` and ``longrope`` depend on the sequence length; it is an explicit
argument here (the reference is stateless). ``seq_len=None`` means: dynamic uses
``L = M``; longrope uses the short factors.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .errors import bad
from .spec import RopeSpec, Scaling

__all__ = ["inv_freq", "base_inv_freq", "get_mscale", "yarn_correction_range", "FREQUENCY_FUNCTIONS"]

FreqResult = tuple[np.ndarray, float]


def base_inv_freq(theta: float, d: int, n: int) -> np.ndarray:
    """``w_i = 1 / theta^((2i)/d)`` for ``i < n``, float64."""
    exponent = (2.0 * np.arange(n, dtype=np.float64)) / float(d)
    return 1.0 / np.power(np.float64(theta), exponent)


def get_mscale(x: float, m: float = 1.0) -> float:
    """YaRN magnitude scale: ``1`` if ``x <= 1`` else ``0.1*m*ln(x) + 1``."""
    return 1.0 if x <= 1.0 else 0.1 * m * math.log(x) + 1.0


def _default(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """``default``: ``w_i = theta^(-2i/d)``, s = 1."""
    return base_inv_freq(spec.theta, spec.freq_dim, spec.n_pairs), 1.0


def _linear(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """``linear`` (position interpolation): ``w_i / f``."""
    w, _ = _default(spec, seq_len)
    return w / spec.scaling.factor, 1.0


def _dynamic(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """``dynamic`` NTK: ``L = max(seq_len, M)``, ``theta' = theta*(f*L/M - (f-1))^(d/(d-2))``."""
    sc, d = spec.scaling, spec.freq_dim
    m = sc.max_position_embeddings
    length = m if seq_len is None else max(int(seq_len), m)
    base = spec.theta * (sc.factor * length / m - (sc.factor - 1.0)) ** (d / (d - 2))
    return base_inv_freq(base, d, spec.n_pairs), 1.0


def _ntk(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """Fixed NTK (HunYuan ``alpha``, lucidrains ``theta_rescale_factor``): ``theta*alpha^(d/(d-2))``."""
    d = spec.freq_dim
    base = spec.theta * spec.scaling.alpha ** (d / (d - 2))
    return base_inv_freq(base, d, spec.n_pairs), 1.0


def yarn_correction_range(spec: RopeSpec) -> tuple[float, float]:
    """``(low, high)`` of the YaRN ramp over pair index.

    ``corr(b) = d*ln(L0/(2*pi*b)) / (2*ln theta)``; ``low = corr(beta_fast)``,
    ``high = corr(beta_slow)``; floor/ceil when ``truncate``; clamp to ``[0, d-1]``;
    ``high += 0.001`` when they meet.
    """
    sc, d = spec.scaling, spec.freq_dim
    fast = 32.0 if sc.beta_fast is None else sc.beta_fast
    slow = 1.0 if sc.beta_slow is None else sc.beta_slow
    l0 = sc.original_max_position_embeddings

    def corr(beta: float) -> float:
        return d * math.log(l0 / (beta * 2.0 * math.pi)) / (2.0 * math.log(spec.theta))

    low, high = corr(fast), corr(slow)
    if sc.truncate is None or sc.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    return float(low), float(high)


def _yarn_attention_factor(sc: Scaling) -> float:
    if sc.attention_factor is not None:
        return sc.attention_factor
    if sc.mscale and sc.mscale_all_dim:
        return get_mscale(sc.factor, sc.mscale) / get_mscale(sc.factor, sc.mscale_all_dim)
    return get_mscale(sc.factor)


def _yarn(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """YaRN: ramp ``r_j = clamp((j-low)/(high-low), 0, 1)``; ``w_j = r_j*w_j/f + (1-r_j)*w_j``.

    ``s`` = attention_factor if given; else ``get_mscale(f, mscale)/get_mscale(f, mscale_all_dim)``
    when both are non-zero; else ``get_mscale(f)``.
    """
    w, _ = _default(spec, seq_len)
    low, high = yarn_correction_range(spec)
    ramp = np.clip((np.arange(spec.n_pairs, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    return ramp * (w / spec.scaling.factor) + (1.0 - ramp) * w, _yarn_attention_factor(spec.scaling)


def _longrope_factor_and_l0(sc: Scaling) -> tuple[float, int]:
    l0 = sc.original_max_position_embeddings
    factor = sc.factor if sc.factor is not None else sc.max_position_embeddings / l0
    return factor, l0


def _longrope(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """LongRoPE: ``ext = long if seq_len > L0 else short``; ``w_i = 1/(ext_i*theta^(2i/d))``.

    ``s`` = attention_factor if given, else 1 when ``f <= 1``, else ``sqrt(1 + ln f / ln L0)``
    with ``f = factor`` or ``M/L0``.
    """
    sc = spec.scaling
    factor, l0 = _longrope_factor_and_l0(sc)
    ext = sc.long_factor if seq_len is not None and seq_len > l0 else sc.short_factor
    w, _ = _default(spec, seq_len)
    inv = w / np.asarray(ext, dtype=np.float64)
    if sc.attention_factor is not None:
        s = sc.attention_factor
    elif factor <= 1.0:
        s = 1.0
    else:
        s = math.sqrt(1.0 + math.log(factor) / math.log(l0))
    return inv, s


def _llama3(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """Llama 3: wavelength ``lam = 2*pi/w``; ``lam > L0/a``: ``w/f``; ``lam < L0/b``: ``w``;
    otherwise ``sigma = (L0/lam - a)/(b - a)``, ``(1-sigma)*w/f + sigma*w``."""
    sc = spec.scaling
    w, _ = _default(spec, seq_len)
    f, a, b, l0 = sc.factor, sc.low_freq_factor, sc.high_freq_factor, sc.original_max_position_embeddings
    wavelen = 2.0 * math.pi / w
    low_wavelen, high_wavelen = l0 / a, l0 / b
    out = np.where(wavelen > low_wavelen, w / f, w)
    # b == a (Llama 4): no medium band but the boundary point itself, where both formulas give w
    sigma = (l0 / wavelen - a) / (b - a) if b > a else np.ones_like(w)
    smooth = (1.0 - sigma) * out / f + sigma * out
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smooth, out), 1.0


def _proportional(spec: RopeSpec, seq_len: int | None) -> FreqResult:
    """Gemma 4 proportional: ``k = int((rho*d)//2)``; ``w_i = theta^(-2i/d)`` for ``i < k``,
    0 for ``k <= i < n``; all divided by ``factor`` (default 1). Zero frequency = identity pair."""
    sc = spec.scaling
    rho = 1.0 if sc.partial_rotary_factor is None else sc.partial_rotary_factor
    k = min(int((rho * spec.freq_dim) // 2), spec.n_pairs)
    w = np.zeros(spec.n_pairs, dtype=np.float64)
    w[:k] = base_inv_freq(spec.theta, spec.freq_dim, k)
    factor = 1.0 if sc.factor is None else sc.factor
    return w / factor, 1.0


FREQUENCY_FUNCTIONS: dict[str, Callable[[RopeSpec, "int | None"], FreqResult]] = {
    "default": _default,
    "linear": _linear,
    "dynamic": _dynamic,
    "ntk": _ntk,
    "yarn": _yarn,
    "longrope": _longrope,
    "llama3": _llama3,
    "proportional": _proportional,
}


def _vision(spec: RopeSpec) -> np.ndarray:
    """Per-pair frequencies of 2-D vision RoPE (pair i < D/4 is driven by h, the rest by w).

    Qwen-VL: ``w_k = theta^(-2k/(D/2))``, ``k < D/4``, repeated for h then w.
    Pixtral: ``w_full_k = theta^(-2k/D)``, h takes the even-indexed, w the odd-indexed.
    """
    quarter = spec.head_dim // 4
    if spec.vision == "qwen_vl":
        w = base_inv_freq(spec.theta, spec.head_dim // 2, quarter)
        return np.concatenate([w, w])
    full = base_inv_freq(spec.theta, spec.head_dim, 2 * quarter)
    return np.concatenate([full[0::2], full[1::2]])


def inv_freq(spec: RopeSpec, seq_len: int | None = None) -> FreqResult:
    """``(inv_freq float64[n], attention_factor)`` for ``spec`` at sequence length ``seq_len``."""
    if not isinstance(spec, RopeSpec):
        bad("spec", spec, "must be a RopeSpec", TypeError)
    if seq_len is not None:
        if isinstance(seq_len, bool) or not isinstance(seq_len, (int, np.integer)) or seq_len < 1:
            bad("seq_len", seq_len, "must be a positive integer or None")
        seq_len = int(seq_len)
    if spec.vision is not None:
        return _vision(spec), 1.0
    w, s = FREQUENCY_FUNCTIONS[spec.scaling.type](spec, seq_len)
    return np.ascontiguousarray(w, dtype=np.float64), float(s)
