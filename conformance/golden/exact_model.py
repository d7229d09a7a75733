"""An independent mpmath model of docs/spec.md section 3: the exact frequencies and attention factor.

Written from the spec text, separately from :mod:`roperef.frequencies` and
:mod:`roperef.exact` (which evaluate the same formulas with Ziv's certified rounding):
plain mpmath in a caller-given context, branch decisions (YaRN ``floor``/``ceil``,
llama3 bands, longrope short/long) taken on the exact values at the context's precision.
Used by the accuracy audit (:mod:`conformance.golden.audit`) and by the tests that check
roperef's frequencies bit for bit; rounding a value of this model with ``float()``
(mpmath rounds to nearest) gives the float64 the spec defines, unless the exact value lies
within the context's precision of a rounding boundary.
"""

from __future__ import annotations

from typing import Any

from roperef.spec import RopeSpec

__all__ = ["mp_inv_freq"]


def mp_inv_freq(ctx: Any, spec: RopeSpec, seq_len: int | None) -> tuple[list[Any], Any]:
    """``(w list, s)`` in the mpmath context ``ctx`` (its precision), from docs/spec.md section 3."""
    mpf, log, pi = ctx.mpf, ctx.log, ctx.pi
    sc, d, n, theta = spec.scaling, spec.resolved_freq_dim, spec.n_pairs, mpf(spec.theta)

    def base(t, denom, count):
        return [t ** (-mpf(2 * i) / denom) for i in range(count)]

    if spec.vision == "qwen_vl":
        w = base(theta, spec.head_dim // 2, spec.head_dim // 4)
        return w + w, mpf(1)
    if spec.vision == "pixtral":
        full = base(theta, spec.head_dim, 2 * (spec.head_dim // 4))
        return full[0::2] + full[1::2], mpf(1)
    kind = sc.type
    if kind == "default":
        return base(theta, d, n), mpf(1)
    if kind == "linear":
        return [v / mpf(sc.factor) for v in base(theta, d, n)], mpf(1)
    if kind in ("dynamic", "ntk"):
        if kind == "dynamic":
            m = sc.given_int("max_position_embeddings")
            length = m if seq_len is None else max(seq_len, m)
            q = mpf(sc.factor) * length / m - (mpf(sc.factor) - 1)
        else:
            q = mpf(sc.alpha)
        return base(theta * q ** (mpf(d) / (d - 2)), d, n), mpf(1)
    if kind == "yarn":
        f = mpf(sc.factor)
        fast_b = mpf(32 if sc.beta_fast is None else sc.beta_fast)
        slow_b = mpf(1 if sc.beta_slow is None else sc.beta_slow)

        def corr(b):
            return d * log(mpf(sc.original_max_position_embeddings) / (2 * pi * b)) / (2 * log(theta))

        low, high = corr(fast_b), corr(slow_b)
        if sc.truncate is None or sc.truncate:
            low, high = ctx.floor(low), ctx.ceil(high)
        low, high = max(low, mpf(0)), min(high, mpf(d - 1))
        if low == high:
            high += mpf(1) / 1000
        w = []
        for j, v in enumerate(base(theta, d, n)):
            r = min(max((j - low) / (high - low), mpf(0)), mpf(1))
            w.append(r * v / f + (1 - r) * v)

        def gm(x, m):
            return mpf(1) if x <= 1 else mpf(1) / 10 * m * log(x) + 1

        if sc.attention_factor is not None:
            s = mpf(sc.attention_factor)
        elif sc.mscale and sc.mscale_all_dim:
            s = gm(f, mpf(sc.mscale)) / gm(f, mpf(sc.mscale_all_dim))
        else:
            s = gm(f, 1)
        return w, s
    if kind == "longrope":
        l0 = sc.given_int("original_max_position_embeddings")
        f = mpf(sc.factor) if sc.factor is not None else mpf(sc.max_position_embeddings) / l0
        ext = sc.given_factors("long_factor" if seq_len is not None and seq_len > l0 else "short_factor")
        w = [1 / (mpf(e) * theta ** (mpf(2 * i) / d)) for i, e in enumerate(ext)]
        if sc.attention_factor is not None:
            s = mpf(sc.attention_factor)
        elif f <= 1:
            s = mpf(1)
        else:
            s = ctx.sqrt(1 + log(f) / log(l0))
        return w, s
    if kind == "llama3":
        l0, a, b, f = sc.given_int("original_max_position_embeddings"), mpf(sc.low_freq_factor), mpf(sc.high_freq_factor), mpf(sc.factor)
        w = []
        for v in base(theta, d, n):
            lam = 2 * pi / v
            if lam > l0 / a:
                w.append(v / f)
            elif lam < l0 / b:
                w.append(v)
            else:
                sigma = (l0 / lam - a) / (b - a)
                w.append((1 - sigma) * v / f + sigma * v)
        return w, mpf(1)
    assert kind == "proportional"
    rho = 1.0 if sc.partial_rotary_factor is None else sc.partial_rotary_factor
    k = min(int((rho * d) // 2), n)  # float64 structure, as transformers (docs/spec.md section 3)
    f = mpf(1.0 if sc.factor is None else sc.factor)
    return [v / f for v in base(theta, d, k)] + [mpf(0)] * (n - k), mpf(1)
