"""Inverse frequencies and attention factor, one small exact formula per scaling type.

``inv_freq(spec, seq_len) -> (inv_freq, s)``: ``inv_freq`` float64 of length
``n = rotary_dim/2`` (pair ``i`` uses ``inv_freq[i]``) and the attention factor ``s``
(a Python float multiplying both cos and sin). docs/spec.md section 3 is the contract;
each formula is repeated in its docstring.

**What the numbers are.** Every value returned here (and every intermediate that
decides a branch: the YaRN ramp ends, the llama3 bands, the dynamic and NTK bases) is
the *correctly rounded* float64 of the exact formula over the reals: the spec's float64
parameters are exact, the constants (0.1, 0.001, 2*pi) are the real numbers, pow, ln
and sqrt are the exact functions, and the result is rounded to float64 once. They are
computed with mpmath by :func:`roperef.exact.correctly_rounded` (Ziv's strategy), so they
are the same on every CPU, C library, NumPy and mpmath version. No float64 formula such
as ``1/np.power(theta, 2i/d)`` is used: NumPy's AVX-512 and libm paths differ in its last
bit, and one ulp of ``w`` moves the angle at position 2^31 by ~10^9 units of the output.

Integer structure taken from the config with basic IEEE operations (the proportional
count ``k = int((rho*d)//2)``) follows transformers' float64 evaluation, which is itself
deterministic.

Results are cached per ``(spec, effective length)`` (:func:`functools.lru_cache` of a
pure function returning tuples; callers get fresh arrays). ``dynamic`` and ``longrope``
depend on the sequence length, an explicit argument here (the reference is stateless).
``seq_len=None`` means: dynamic uses ``L = M``; longrope uses the short factors.

Ranges. The results must be usable by the exact angle reduction of
:mod:`roperef.sincos`: every frequency is 0 (proportional's identity pairs) or in
``[2^-1000, pi]`` (above pi rad per token a frequency aliases), and ``s`` is finite and
``> 0``. A spec whose exact values leave those ranges raises ``ValueError`` naming the
key, the value and the rule.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from .errors import bad
from .exact import Exact, correctly_rounded, estimated
from .spec import RopeSpec, Scaling

__all__ = [
    "inv_freq",
    "estimate_inv_freq",
    "base_inv_freq",
    "get_mscale",
    "yarn_correction_range",
    "FREQUENCY_FORMULAS",
    "MIN_FREQ",
    "MAX_FREQ",
]

MIN_FREQ = 2.0**-1000
"""Smallest non-zero inverse frequency accepted (well inside the normal float64 range)."""
MAX_FREQ = math.pi
"""Largest inverse frequency accepted (rad per token; above pi a frequency aliases)."""

FreqResult = tuple[np.ndarray, float]
Formula = Callable[[Exact], list[Any]]


# --------------------------------------------------------------------------- building blocks


def _base(e: Exact, ln_theta: Any, d: int, i: int) -> Any:
    """``theta^(-2i/d) = exp(-2i ln(theta) / d)``."""
    if i == 0:
        return e.num(1)
    return e.exp(-(2 * i) * ln_theta / d)


def _mscale(e: Exact, factor: float, m: float | int) -> Any:
    """YaRN ``get_mscale(x, m) = 1 if x <= 1 else 0.1*m*ln(x) + 1`` (0.1 the real number)."""
    if factor <= 1.0:
        return Fraction(1)
    return e.num(Fraction(1, 10)) * e.num(m) * e.ln(factor) + 1


def _length(spec: RopeSpec, seq_len: int | None) -> int:
    """The length a length-dependent type actually uses (the cache key)."""
    sc = spec.scaling
    if sc.type == "dynamic":
        m = sc.given_int("max_position_embeddings")
        return m if seq_len is None else max(seq_len, m)
    if sc.type == "longrope":
        l0 = sc.given_int("original_max_position_embeddings")
        return 1 if seq_len is not None and seq_len > l0 else 0  # 1: long factors
    return 0


# --------------------------------------------------------------------------- one formula per type


def _default(spec: RopeSpec, length: int) -> Formula:
    """``default``: ``w_i = theta^(-2i/d)``, ``s = 1``."""
    def f(e: Exact) -> list[Any]:
        ln_t = e.ln(spec.theta)
        return [_base(e, ln_t, spec.resolved_freq_dim, i) for i in range(spec.n_pairs)] + [1]
    return f


def _linear(spec: RopeSpec, length: int) -> Formula:
    """``linear`` (position interpolation): ``w_i = theta^(-2i/d) / f``."""
    def f(e: Exact) -> list[Any]:
        ln_t, fac = e.ln(spec.theta), e.num(spec.scaling.given("factor"))
        return [_base(e, ln_t, spec.resolved_freq_dim, i) / fac for i in range(spec.n_pairs)] + [1]
    return f


def _rebased(spec: RopeSpec, e: Exact, q: Any) -> list[Any]:
    """``w_i = theta'^(-2i/d)`` with ``theta' = theta * q^(d/(d-2))`` (dynamic, ntk)."""
    d = int(spec.resolved_freq_dim)
    ln_base = e.ln(spec.theta) + e.num(Fraction(d, d - 2)) * e.ln(q)
    return [_base(e, ln_base, d, i) for i in range(spec.n_pairs)] + [1]


def _dynamic(spec: RopeSpec, length: int) -> Formula:
    """``dynamic`` NTK: ``L = max(seq_len, M)``; ``theta' = theta*(f*L/M - (f-1))^(d/(d-2))``."""
    sc = spec.scaling
    fac = Fraction(sc.given("factor"))
    q = fac * length / sc.given_int("max_position_embeddings") - (fac - 1)  # exact, >= 1
    return lambda e: _rebased(spec, e, e.num(q))


def _ntk(spec: RopeSpec, length: int) -> Formula:
    """Fixed NTK (HunYuan ``alpha``, lucidrains ``theta_rescale_factor``): ``theta' = theta*alpha^(d/(d-2))``."""
    return lambda e: _rebased(spec, e, e.num(spec.scaling.given("alpha")))


def _yarn_range(spec: RopeSpec, e: Exact) -> tuple[Any, Any]:
    """``(low, high)``: ``corr(b) = d ln(L0/(2 pi b)) / (2 ln theta)``; floor/ceil when truncating;
    clamped to ``[0, d-1]``; ``high += 0.001`` when they meet (0.001 the real number).

    Each end is a Fraction when it is rational (truncated or clamped) and an mpmath number
    otherwise; ``corr`` is transcendental, so the certified floor/ceil/comparisons decide."""
    sc, d = spec.scaling, int(spec.resolved_freq_dim)
    fast = 32.0 if sc.beta_fast is None else sc.beta_fast
    slow = 1.0 if sc.beta_slow is None else sc.beta_slow
    l0 = sc.given_int("original_max_position_embeddings")
    two_ln_theta = 2 * e.ln(spec.theta)

    def corr(beta: float) -> Any:
        return d * e.ln(e.num(l0) / (2 * e.pi * e.num(beta))) / two_ln_theta

    low: Any = corr(fast)
    high: Any = corr(slow)
    if sc.truncate is None or sc.truncate:
        low, high = Fraction(e.floor(low)), Fraction(e.ceil(high))
    if e.less(low, 0):
        low = Fraction(0)
    if e.less(d - 1, high):
        high = Fraction(d - 1)
    rational = isinstance(low, Fraction) and isinstance(high, Fraction)
    if rational and low == high:
        high = high + Fraction(1, 1000)
    elif not isinstance(low, Fraction) and not isinstance(high, Fraction) and fast == slow:
        high = high + e.num(Fraction(1, 1000))  # corr(beta_fast) and corr(beta_slow) are the same real
    return low, high


def _ramp(e: Exact, j: int, low: Any, high: Any) -> Any:
    """``clamp((j - low)/(high - low), 0, 1)``: exact where the ends are rational, certified otherwise.

    ``low > high`` (``corr(beta_fast)`` clamped above ``d - 1``) is well defined and, as in
    transformers, makes every pair below ``low`` fully interpolated.
    """
    if isinstance(low, Fraction) and isinstance(high, Fraction):
        return min(max((j - low) / (high - low), Fraction(0)), Fraction(1))
    if isinstance(low, Fraction) and j == low:
        return Fraction(0)
    if isinstance(high, Fraction) and j == high:
        return Fraction(1)
    t = (j - _as_mp(e, low)) / (_as_mp(e, high) - _as_mp(e, low))
    if e.less(t, 0):
        return Fraction(0)
    if e.less(1, t):
        return Fraction(1)
    return t


def _yarn_attention(e: Exact, sc: Scaling) -> Any:
    """``s`` = attention_factor; else ``get_mscale(f, mscale)/get_mscale(f, mscale_all_dim)`` when
    both are non-zero; else ``get_mscale(f)``."""
    if sc.attention_factor is not None:
        return sc.attention_factor
    f = sc.given("factor")
    if sc.mscale and sc.mscale_all_dim:
        return _as_mp(e, _mscale(e, f, sc.mscale)) / _as_mp(e, _mscale(e, f, sc.mscale_all_dim))
    return _mscale(e, f, 1)


def _as_mp(e: Exact, value: Any) -> Any:
    return e.num(value) if isinstance(value, (Fraction, int, float)) else value


def _yarn(spec: RopeSpec, length: int) -> Formula:
    """YaRN: ``w_j = r_j*w_j/f + (1 - r_j)*w_j`` with the ramp ``r_j`` of :func:`_yarn_range`."""
    sc = spec.scaling

    def f(e: Exact) -> list[Any]:
        low, high = _yarn_range(spec, e)
        ln_t, inv_f = e.ln(spec.theta), 1 / e.num(sc.given("factor"))
        out = []
        for j in range(spec.n_pairs):
            r = _as_mp(e, _ramp(e, j, low, high))
            out.append(_base(e, ln_t, spec.resolved_freq_dim, j) * (r * inv_f + (1 - r)))
        return out + [_yarn_attention(e, sc)]
    return f


def _longrope_factor(sc: Scaling) -> Fraction:
    """``f = factor`` if given, else ``M / L0`` (exact)."""
    if sc.factor is not None:
        return Fraction(sc.factor)
    return Fraction(sc.given_int("max_position_embeddings"), sc.given_int("original_max_position_embeddings"))


def _longrope(spec: RopeSpec, length: int) -> Formula:
    """LongRoPE: ``ext = long if seq_len > L0 else short``; ``w_i = 1/(ext_i*theta^(2i/d))``;
    ``s`` = attention_factor, else 1 when ``f <= 1``, else ``sqrt(1 + ln f / ln L0)``."""
    sc = spec.scaling
    ext = sc.given_factors("long_factor") if length == 1 else sc.given_factors("short_factor")

    def f(e: Exact) -> list[Any]:
        ln_t = e.ln(spec.theta)
        out = [_base(e, ln_t, spec.resolved_freq_dim, i) / e.num(ext[i]) for i in range(spec.n_pairs)]
        fac = _longrope_factor(sc)
        if sc.attention_factor is not None:
            s: Any = sc.attention_factor
        elif fac <= 1:
            s = Fraction(1)
        else:
            s = e.sqrt(1 + e.ln(e.num(fac)) / e.ln(sc.given_int("original_max_position_embeddings")))
        return out + [s]
    return f


def _llama3(spec: RopeSpec, length: int) -> Formula:
    """Llama 3: ``lam = 2 pi / w``; ``lam > L0/a``: ``w/f``; ``lam < L0/b``: ``w``; otherwise
    ``sigma = (L0/lam - a)/(b - a)`` and ``(1 - sigma) w/f + sigma w`` (band edges inclusive;
    ``a == b`` leaves the middle band empty)."""
    sc = spec.scaling
    a, b = Fraction(sc.given("low_freq_factor")), Fraction(sc.given("high_freq_factor"))
    l0 = sc.given_int("original_max_position_embeddings")

    def f(e: Exact) -> list[Any]:
        ln_t, fac = e.ln(spec.theta), e.num(sc.given("factor"))
        low_wavelen, high_wavelen = e.num(Fraction(l0) / a), e.num(Fraction(l0) / b)
        out = []
        for i in range(spec.n_pairs):
            w = _base(e, ln_t, spec.resolved_freq_dim, i)
            wavelen = 2 * e.pi / w
            if e.less(low_wavelen, wavelen):
                out.append(w / fac)
            elif e.less(wavelen, high_wavelen):
                out.append(w)
            else:
                sigma = (l0 / wavelen - e.num(a)) / e.num(b - a)
                out.append((1 - sigma) * w / fac + sigma * w)
        return out + [1]
    return f


def _proportional(spec: RopeSpec, length: int) -> Formula:
    """Gemma 4 proportional: ``k = int((rho*d)//2)`` (float64, as transformers); ``w_i = theta^(-2i/d)/f``
    for ``i < k``, exactly 0 for ``k <= i < n`` (identity pairs); ``f = factor`` (default 1)."""
    sc = spec.scaling
    rho = 1.0 if sc.partial_rotary_factor is None else sc.partial_rotary_factor
    k = min(int((rho * spec.resolved_freq_dim) // 2), spec.n_pairs)
    factor = 1.0 if sc.factor is None else sc.factor

    def f(e: Exact) -> list[Any]:
        ln_t, fac = e.ln(spec.theta), e.num(factor)
        head = [_base(e, ln_t, spec.resolved_freq_dim, i) / fac for i in range(k)]
        return head + [Fraction(0)] * (spec.n_pairs - k) + [1]
    return f


def _vision(spec: RopeSpec, length: int) -> Formula:
    """2-D vision RoPE, per pair (pairs ``i < D/4`` are driven by h, the rest by w).

    Qwen-VL: ``w_k = theta^(-2k/(D/2))``, ``k < D/4``, for h then again for w.
    Pixtral: ``w_k = theta^(-2k/D)``, ``k < D/2``; h takes the even ``k``, w the odd ``k``.
    """
    quarter = spec.head_dim // 4

    def f(e: Exact) -> list[Any]:
        ln_t = e.ln(spec.theta)
        if spec.vision == "qwen_vl":
            w = [_base(e, ln_t, spec.head_dim // 2, k) for k in range(quarter)]
            return w + w + [1]
        full = [_base(e, ln_t, spec.head_dim, k) for k in range(2 * quarter)]
        return full[0::2] + full[1::2] + [1]
    return f


FREQUENCY_FORMULAS: dict[str, Callable[[RopeSpec, int], Formula]] = {
    "default": _default,
    "linear": _linear,
    "dynamic": _dynamic,
    "ntk": _ntk,
    "yarn": _yarn,
    "longrope": _longrope,
    "llama3": _llama3,
    "proportional": _proportional,
}


# --------------------------------------------------------------------------- the public functions


def _check_ranges(spec: RopeSpec, values: tuple[float, ...]) -> None:
    *freqs, s = values
    for i, w in enumerate(freqs):
        if w != 0.0 and not MIN_FREQ <= w <= MAX_FREQ:
            bad(
                f"inv_freq[{i}]",
                w,
                f"every inverse frequency must be 0 or in [2^-1000, pi] (theta={spec.theta}, "
                f"rope_type={spec.scaling.type!r}, freq_dim={spec.freq_dim})",
            )
    if not (math.isfinite(s) and s > 0):
        bad("attention_factor", s, f"must be a finite number > 0 (rope_type={spec.scaling.type!r})")


@functools.lru_cache(maxsize=512)
def exact_values(spec: RopeSpec, length: int) -> tuple[float, ...]:
    """Correctly rounded ``(w_0, ..., w_{n-1}, s)`` of ``spec`` at effective length ``length``."""
    make = _vision if spec.vision is not None else FREQUENCY_FORMULAS[spec.scaling.type]
    try:
        values = correctly_rounded(make(spec, length))
    except (ZeroDivisionError, OverflowError) as exc:  # guarded by RopeSpec's ranges; named if reached
        bad("spec", spec, f"its exact frequencies are not defined ({type(exc).__name__}: {exc})")
    _check_ranges(spec, values)
    return values


def _checked_length(spec: RopeSpec, seq_len: int | None) -> int:
    """The effective length of ``spec`` at ``seq_len`` (:func:`_length`; 0 for vision), arguments checked."""
    if not isinstance(spec, RopeSpec):
        bad("spec", spec, "must be a RopeSpec", TypeError)
    if seq_len is not None:
        if isinstance(seq_len, bool) or not isinstance(seq_len, (int, np.integer)) or seq_len < 1:
            bad("seq_len", seq_len, "must be a positive integer or None")
        seq_len = int(seq_len)
    return 0 if spec.vision is not None else _length(spec, seq_len)


def inv_freq(spec: RopeSpec, seq_len: int | None = None) -> FreqResult:
    """``(inv_freq float64[n], attention_factor)`` of ``spec`` at sequence length ``seq_len``."""
    values = exact_values(spec, _checked_length(spec, seq_len))
    return np.array(values[:-1], dtype=np.float64), float(values[-1])


def estimate_inv_freq(spec: RopeSpec, seq_len: int | None = None) -> FreqResult:
    """:func:`inv_freq`'s formulas evaluated once in float64 arithmetic (:func:`roperef.exact.estimated`).

    Within a few ulp of :func:`inv_freq` and ~100x cheaper uncached, but its last bits depend on
    the machine's C library: for searches over many candidate specs (conformance's bug-decoy
    fits), never for the reference. Same arguments, errors and range checks as :func:`inv_freq`.
    """
    length = _checked_length(spec, seq_len)
    make = _vision if spec.vision is not None else FREQUENCY_FORMULAS[spec.scaling.type]
    try:
        values = estimated(make(spec, length))
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        bad("spec", spec, f"its frequencies are not defined ({type(exc).__name__}: {exc})")
    _check_ranges(spec, values)
    return np.array(values[:-1], dtype=np.float64), float(values[-1])


@functools.lru_cache(maxsize=256)
def _base_values(theta: float, d: int, n: int) -> tuple[float, ...]:
    def formula(e: Exact) -> list[Any]:
        ln_t = e.ln(theta)
        return [_base(e, ln_t, d, i) for i in range(n)]

    return correctly_rounded(formula)


def base_inv_freq(theta: float, d: int, n: int) -> np.ndarray:
    """``w_i = theta^(-2i/d)`` for ``i < n``, correctly rounded float64 (cached per ``(theta, d, n)``)."""
    return np.array(_base_values(float(theta), int(d), int(n)), dtype=np.float64)


def get_mscale(x: float, m: float = 1.0) -> float:
    """YaRN magnitude scale ``1 if x <= 1 else 0.1*m*ln(x) + 1``, correctly rounded."""
    return correctly_rounded(lambda e: [_mscale(e, x, m)])[0]


def yarn_correction_range(spec: RopeSpec) -> tuple[float, float]:
    """``(low, high)`` of the YaRN ramp over pair index, each correctly rounded (see :func:`_yarn_range`)."""
    if spec.scaling.type != "yarn":
        bad("rope_type", spec.scaling.type, "yarn_correction_range needs a yarn spec")
    return _yarn_range_values(spec)


@functools.lru_cache(maxsize=256)
def _yarn_range_values(spec: RopeSpec) -> tuple[float, float]:
    low, high = correctly_rounded(lambda e: list(_yarn_range(spec, e)))
    return low, high
