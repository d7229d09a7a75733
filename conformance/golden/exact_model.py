"""An independent mpmath model of docs/spec.md section 3: the exact frequencies and attention factor.

Written from the spec text, formula by formula, separately from :mod:`roperef.frequencies` and
:mod:`roperef.exact` (which evaluate the same formulas with Ziv's certified rounding): plain mpmath
in a caller-given context, branch decisions (YaRN ``floor``/``ceil``, llama3 bands, longrope
short/long) taken on the exact values at the context's precision.

Each formula below carries, as its docstring, the text of docs/spec.md it implements, verbatim:
:data:`BASE` is section 3's base line, each function of :data:`FORMULAS` one bullet (section 3 per
scaling type; section 4's 2-D vision bullet). ``tests/conformance/golden/test_exact_model_spec.py`` fails when the
spec no longer says exactly that (or gains a scaling type this model lacks), and the bit-for-bit
tests (``tests/roperef/test_frequencies_exact.py``) fail when roperef computes anything else: so the
contract, this model and the reference cannot drift apart unnoticed.

Used by the accuracy audit (:mod:`conformance.golden.audit`) and by the tests that check
roperef's frequencies; rounding a value of this model with ``float()`` (mpmath rounds to
nearest) gives the float64 the spec defines, unless the exact value lies within the context's
precision of a rounding boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roperef.spec import RopeSpec

__all__ = ["BASE", "FORMULAS", "base", "get_mscale", "mp_inv_freq", "yarn_range"]

#: docs/spec.md section 3, the line every type builds on (the model: :func:`base`)
BASE = "Base: `ω_i = θ^(−2i/d)`. All types return `(ω[n], s)`; `s = 1` unless said."

Values = tuple[list[Any], Any]


def base(ctx: Any, theta: Any, d: Any, count: int) -> list[Any]:
    """``ω_i = θ^(−2i/d)`` for ``i < count`` (the real exponent ``2i/d``)."""
    mpf = ctx.mpf
    return [mpf(theta) ** (-mpf(2 * i) / d) for i in range(count)]


def _default(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`default`: `ω_i`."""
    return base(ctx, spec.theta, spec.resolved_freq_dim, spec.n_pairs), ctx.mpf(1)


def _linear(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`linear` (position interpolation): `ω_i / f` (`factor f` required, ≥ 1)."""
    f = ctx.mpf(spec.scaling.given("factor"))
    return [w / f for w in base(ctx, spec.theta, spec.resolved_freq_dim, spec.n_pairs)], ctx.mpf(1)


def _dynamic(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`dynamic` (dynamic NTK): `M = max_position_embeddings`, `L = max(seq_len, M)`
    (`L = M` when no length is given), `θ' = θ·(f·L/M − (f−1))^(d/(d−2))`,
    `ω_i = θ'^(−2i/d)`. Stateless in the reference: `seq_len` is an explicit
    input (default `max(position)+1`). HF is stateful (keeps the largest base
    seen until a call with `seq_len < M` resets it); vLLM is static
    (`L = M·f` once). Name the policy.
    """
    mpf, sc, d = ctx.mpf, spec.scaling, spec.resolved_freq_dim
    m = sc.given_int("max_position_embeddings")
    length = m if seq_len is None else max(seq_len, m)
    f = mpf(sc.given("factor"))
    theta_prime = mpf(spec.theta) * (f * length / m - (f - 1)) ** (mpf(d) / (d - 2))
    return base(ctx, theta_prime, d, spec.n_pairs), mpf(1)


def _ntk(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`ntk` (fixed NTK / HunYuan `alpha`, lucidrains `theta_rescale_factor`):
    `θ' = θ·α^(d/(d−2))`.
    """
    mpf, d = ctx.mpf, spec.resolved_freq_dim
    theta_prime = mpf(spec.theta) * mpf(spec.scaling.given("alpha")) ** (mpf(d) / (d - 2))
    return base(ctx, theta_prime, d, spec.n_pairs), mpf(1)  # the base line, with θ' for θ


def get_mscale(ctx: Any, x: Any, m: Any = 1) -> Any:
    """``get_mscale(x, m=1) = 1 if x ≤ 1 else 0.1·m·ln x + 1`` (0.1 the real number)."""
    mpf = ctx.mpf
    return mpf(1) if x <= 1 else mpf(1) / 10 * m * ctx.log(x) + 1


def yarn_range(ctx: Any, d: int, theta: float, l0: int, beta_fast: float, beta_slow: float, truncate: bool) -> tuple[Any, Any]:
    """``(low, high)``: the ramp ends of the yarn bullet (``corr``, truncation, clamp, ``+0.001``)."""
    mpf, pi, log = ctx.mpf, ctx.pi, ctx.log

    def corr(beta: Any) -> Any:
        return d * log(mpf(l0) / (2 * pi * mpf(beta))) / (2 * log(mpf(theta)))

    low, high = corr(beta_fast), corr(beta_slow)
    if truncate:
        low, high = ctx.floor(low), ctx.ceil(high)
    low, high = max(low, mpf(0)), min(high, mpf(d - 1))
    if low == high:
        high += mpf(1) / 1000
    return low, high


def _yarn(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`yarn`: required `factor f`, `original_max_position_embeddings L0`;
    optional `beta_fast` (32), `beta_slow` (1) (HF treats an explicit 0 as
    unset), `mscale`, `mscale_all_dim`, `attention_factor`, `truncate` (True).
    - `get_mscale(x, m=1) = 1 if x ≤ 1 else 0.1·m·ln x + 1`.
    - `s = attention_factor` if given; else if `mscale` and `mscale_all_dim`
      both non-zero: `get_mscale(f, mscale)/get_mscale(f, mscale_all_dim)`;
      else `get_mscale(f)`.
    - `corr(β) = d·ln(L0/(2πβ)) / (2 ln θ)`; `low = corr(β_fast)`,
      `high = corr(β_slow)`; if truncate: `low = floor(low)`, `high = ceil(high)`;
      clamp `low ≥ 0`, `high ≤ d−1`; if `low == high`: `high += 0.001`.
      `low > high` (corr(β_fast) above `d − 1`) is well defined: the ramp is then
      1 for every pair below `low` (as transformers computes it).
    - ramp over pair index `j`: `r_j = clamp((j − low)/(high − low), 0, 1)`.
    - `ω_i = r_i·ω_i/f + (1 − r_i)·ω_i` (high-frequency pairs kept, pairs past
      `high` divided by `f`).
    - DeepSeek V2/V3 additionally multiply the softmax scale by
      `get_mscale(f, mscale_all_dim)²`; that is attention-level, not RoPE-level.
    - gpt-oss uses `truncate = False`.
    """
    mpf, sc, d = ctx.mpf, spec.scaling, spec.resolved_freq_dim
    f = mpf(sc.given("factor"))
    if sc.attention_factor is not None:
        s = mpf(sc.attention_factor)
    elif sc.mscale and sc.mscale_all_dim:
        s = get_mscale(ctx, f, mpf(sc.mscale)) / get_mscale(ctx, f, mpf(sc.mscale_all_dim))
    else:
        s = get_mscale(ctx, f)
    low, high = yarn_range(ctx, d, spec.theta, sc.given_int("original_max_position_embeddings"),
                           32.0 if sc.beta_fast is None else sc.beta_fast, 1.0 if sc.beta_slow is None else sc.beta_slow,
                           sc.truncate is None or sc.truncate)
    w = []
    for j, omega in enumerate(base(ctx, spec.theta, d, spec.n_pairs)):
        r = min(max((j - low) / (high - low), mpf(0)), mpf(1))
        w.append(r * omega / f + (1 - r) * omega)
    return w, s


def _longrope(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`longrope` (Phi-3/3.5/4): required `short_factor`, `long_factor` (length
    `n`, which is `d/2` for an even `d`), `L0`; optional `factor` (else `max_position_embeddings/L0`),
    `attention_factor` (else `1` if `f ≤ 1`, otherwise `sqrt(1 + ln f / ln L0)`;
    the same `s` for short and long). `ext = long_factor if seq_len > L0 else
    short_factor` (strict `>`; `seq_len` explicit, default `max(position)+1`);
    `ω_i = 1/(ext_i·θ^(2i/d))`.
    """
    mpf, sc, d = ctx.mpf, spec.scaling, spec.resolved_freq_dim
    l0 = sc.given_int("original_max_position_embeddings")
    f = mpf(sc.factor) if sc.factor is not None else mpf(sc.given_int("max_position_embeddings")) / l0
    if sc.attention_factor is not None:
        s = mpf(sc.attention_factor)
    else:
        s = mpf(1) if f <= 1 else ctx.sqrt(1 + ctx.log(f) / ctx.log(l0))
    ext = sc.given_factors("long_factor" if seq_len is not None and seq_len > l0 else "short_factor")
    return [1 / (mpf(e) * mpf(spec.theta) ** (mpf(2 * i) / d)) for i, e in enumerate(ext)], s


def _llama3(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`llama3` (Llama 3.1+): required `factor f`, `low_freq_factor a`,
    `high_freq_factor b`, `L0`. Wavelength `λ_i = 2π/ω_i`, `λ_low = L0/a`,
    `λ_high = L0/b`. `λ_i > λ_low`: `ω_i/f`; `λ_i < λ_high`: `ω_i`; otherwise
    (boundaries inclusive) `σ = (L0/λ_i − a)/(b − a)`,
    `ω_i = (1−σ)·ω_i/f + σ·ω_i`. `a = b` (Llama 4) is valid: the middle band is
    empty (no wavelength equals the rational `L0/a` exactly).
    """
    mpf, sc = ctx.mpf, spec.scaling
    f, a, b = mpf(sc.given("factor")), mpf(sc.given("low_freq_factor")), mpf(sc.given("high_freq_factor"))
    l0 = sc.given_int("original_max_position_embeddings")
    w = []
    for omega in base(ctx, spec.theta, spec.resolved_freq_dim, spec.n_pairs):
        lam = 2 * ctx.pi / omega
        if lam > l0 / a:
            w.append(omega / f)
        elif lam < l0 / b:
            w.append(omega)
        else:
            sigma = (l0 / lam - a) / (b - a)
            w.append((1 - sigma) * omega / f + sigma * omega)
    return w, mpf(1)


def _proportional(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """`proportional` (Gemma 4 global layers): `ρ = partial_rotary_factor`
    (default 1), `f = factor` (default 1), `k = min(int((ρ·d)//2), n)`;
    `ω_i = θ^(−2i/d)/f` for `i < k`, `0` for `k ≤ i < n`. Output `n`
    frequencies; zero frequency = identity pair. `d` is the denominator of
    the rotated vector, as for every type, not the head dim of pass-through
    channels: transformers (`_compute_proportional_rope_parameters`) takes
    the width of the vector it rotates (`head_dim`; `global_head_dim` on
    Gemma 4's global layers, through its per-layer config) as both the
    denominator and the count, rotating all of it. For a config that is the
    whole head (`d = r = D`); a spec whose window is narrower than its head
    (`r < D`) applies the formula to the window, exactly as transformers
    would to a vector of that width.
    """
    mpf, sc, d, n = ctx.mpf, spec.scaling, spec.resolved_freq_dim, spec.n_pairs
    rho = 1.0 if sc.partial_rotary_factor is None else sc.partial_rotary_factor
    f = mpf(1.0 if sc.factor is None else sc.factor)
    k = min(int((rho * d) // 2), n)  # float64 product and floor: integer structure, as transformers (section 3)
    return [omega / f for omega in base(ctx, spec.theta, d, k)] + [mpf(0)] * (n - k), mpf(1)


def _vision(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """2-D vision RoPE (axial), positions `(h, w)` per token:
    - Qwen-VL family: `ω_k = θ^(−2k/(D/2))`, `k < D/4`; angles
      `[h·ω, w·ω]` (length `D/2`) drive the `D/2` half-split pairs.
    - Pixtral: `ω^full_k = θ^(−2k/D)`; h uses the even-indexed, w the
      odd-indexed frequencies: angles `[h·ω^full_even, w·ω^full_odd]`.
    """
    big_d = spec.head_dim
    if spec.vision == "qwen_vl":
        omega = base(ctx, spec.theta, big_d // 2, big_d // 4)
        return omega + omega, ctx.mpf(1)
    full = base(ctx, spec.theta, big_d, 2 * (big_d // 4))
    return full[0::2] + full[1::2], ctx.mpf(1)


#: one model per docs/spec.md bullet: the scaling types of section 3, and section 4's ``vision``
FORMULAS: dict[str, Callable[[Any, RopeSpec, int | None], Values]] = {
    "default": _default,
    "linear": _linear,
    "dynamic": _dynamic,
    "ntk": _ntk,
    "yarn": _yarn,
    "longrope": _longrope,
    "llama3": _llama3,
    "proportional": _proportional,
    "vision": _vision,
}


def mp_inv_freq(ctx: Any, spec: RopeSpec, seq_len: int | None) -> Values:
    """``(w list, s)`` in the mpmath context ``ctx`` (its precision), from docs/spec.md sections 3 and 4."""
    return FORMULAS["vision" if spec.vision is not None else spec.scaling.type](ctx, spec, seq_len)
