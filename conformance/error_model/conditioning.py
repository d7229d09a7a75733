"""How much a blended frequency amplifies rounding in its blend weight (YaRN ramp, llama3 smoothing).

Both scalings blend a pair's base frequency ``w0`` with ``w0/f``::

    w = w0 * g,   g = 1 - rho*t,   rho = 1 - 1/f
    YaRN:   t = r   = clamp((j - low) / (high - low), 0, 1)
    llama3: t = 1 - sigma,  sigma = (L0/lambda - a) / (b - a),  lambda = 2*pi/w0  (medium band only)

An engine computing the weight ``t`` in a dtype of unit roundoff ``u`` gets an absolute
error ``|dt| <= u * e_t``, which moves ``w`` by ``rho*|dt|*w0``: a *relative* error of
``u * kappa`` with::

    kappa = rho * e_t / g

``g`` can be as small as ``1/f`` (``t`` near 1), so ``kappa`` reaches about ``f * e_t``:
a correct float32 YaRN at factor 32 may carry an inv_freq error of ~100 float32 units on the
pairs near the top of the ramp. That is conditioning of the formula, not a bug, and the
tolerance model adds ``c_blend * kappa`` to the per-pair frequency error (see
:mod:`conformance.error_model.tolerance`). ``e_t`` counts the roundings that feed ``t``:

- YaRN: ``(j - low)`` and ``(high - low)`` rounded (``|j - low|`` and ``r*(high - low)``), the
  division (``r``), and, without truncation, the correction range itself: ``low`` and ``high``
  come from ``d*ln(L0/(2*pi*beta)) / (2*ln(theta))`` (two logs, a product and a quotient,
  about ``3u`` relative each), so ``3*(|low| + |high|)`` more, all over ``high - low``.
  With truncation ``low``/``high`` are integers and carry no error. Clamped pairs
  (``r`` exactly 0 or 1) carry none either.
- llama3: ``L0/lambda`` rounded thrice (``2*pi/w0`` and the quotient: ``3*L0/lambda``), the
  subtraction of ``a`` (``|L0/lambda - a|``), then the division by ``b - a`` (``sigma``).

Other scalings (linear/longrope divisions, NTK/dynamic powers) are well conditioned; their
rounding is in the constant ``c_ang`` and the ``c_log*|ln w|`` term.
"""

from __future__ import annotations

import math

import numpy as np

from roperef.frequencies import base_inv_freq, yarn_correction_range
from roperef.spec import RopeSpec

__all__ = ["blend_conditioning"]


def _yarn(spec: RopeSpec) -> np.ndarray:
    sc = spec.scaling
    rho = 1.0 - 1.0 / sc.given("factor")
    low, high = yarn_correction_range(spec)
    width = high - low
    j = np.arange(spec.n_pairs, dtype=np.float64)
    r = np.clip((j - low) / width, 0.0, 1.0)
    truncated = sc.truncate is None or sc.truncate
    range_error = 0.0 if truncated else 3.0 * (abs(low) + abs(high))
    e_t = (np.abs(j - low) + range_error) / width + r * (2.0 + range_error / width)
    inside = (r > 0.0) & (r < 1.0)
    g = 1.0 - rho * r
    return np.where(inside, rho * e_t / g, 0.0)


def _llama3(spec: RopeSpec) -> np.ndarray:
    sc = spec.scaling
    f, a, b = sc.given("factor"), sc.given("low_freq_factor"), sc.given("high_freq_factor")
    l0 = sc.given_int("original_max_position_embeddings")
    rho = 1.0 - 1.0 / f
    w0 = base_inv_freq(spec.theta, spec.resolved_freq_dim, spec.n_pairs)
    ratio = l0 * w0 / (2.0 * math.pi)  # L0 / lambda
    if b <= a:  # equal factors (Llama 4): no middle band, no blend
        return np.zeros(spec.n_pairs)
    medium = (ratio >= a) & (ratio <= b)
    sigma = (ratio - a) / (b - a)
    e_t = (3.0 * ratio + np.abs(ratio - a)) / (b - a) + sigma
    g = 1.0 / f + rho * sigma
    return np.where(medium, rho * e_t / g, 0.0)


def blend_conditioning(spec: RopeSpec) -> np.ndarray:
    """``kappa[n]``: relative inv_freq error per unit roundoff of the blend weight (0 where there is no blend)."""
    kind = spec.scaling.type
    if spec.vision is None and kind == "yarn" and spec.scaling.given("factor") > 1.0:
        return _yarn(spec)
    if spec.vision is None and kind == "llama3" and spec.scaling.given("factor") > 1.0:
        return _llama3(spec)
    return np.zeros(spec.n_pairs, dtype=np.float64)
