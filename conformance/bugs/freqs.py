"""Frequency functions with one bug each (docs/spec.md section 3), for the decoys.

Each returns ``(inv_freq float64[n], attention_factor)`` like
:func:`roperef.frequencies.inv_freq`, and is written from the spec's formula with the one
change named in its docstring; everything else is the reference's.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from roperef.frequencies import base_inv_freq, inv_freq, yarn_correction_range
from roperef.spec import RopeSpec, Scaling

__all__ = [
    "plain_spec",
    "scaling_twice",
    "llama3_bands_swapped",
    "llama3_smooth_in_wavelength",
    "yarn_ramp",
    "proportional_denominator",
    "with_scaling",
]

Freqs = tuple[np.ndarray, float]


def plain_spec(spec: RopeSpec) -> RopeSpec | None:
    """``spec`` with the scaling dropped (default frequencies), or None if that is not a valid spec."""
    try:
        return spec.replace(scaling=Scaling())
    except (ValueError, TypeError):
        return None


def with_scaling(spec: RopeSpec, **changes: Any) -> RopeSpec | None:
    """``spec`` with some scaling parameters changed (None if the result is not a valid spec)."""
    try:
        return spec.replace(scaling=replace(spec.scaling, **changes))
    except (ValueError, TypeError):
        return None


def scaling_twice(spec: RopeSpec, seq_len: int) -> Freqs:
    """The scaling's change of each frequency applied twice: ``w_scaled^2 / w_base`` (0 stays 0)."""
    w, s = inv_freq(spec, seq_len)
    plain = plain_spec(spec)
    w0, _ = inv_freq(plain, seq_len) if plain is not None else (w, s)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w0 > 0, w * w / np.where(w0 > 0, w0, 1.0), 0.0), s


def _llama3_parts(spec: RopeSpec) -> tuple[np.ndarray, float, float, float, float]:
    sc = spec.scaling
    w = base_inv_freq(spec.theta, spec.resolved_freq_dim, spec.n_pairs)
    return (w, sc.given("factor"), sc.given("low_freq_factor"), sc.given("high_freq_factor"),
            float(sc.given_int("original_max_position_embeddings")))


def llama3_bands_swapped(spec: RopeSpec, seq_len: int, medium: str = "divided") -> Freqs:
    """llama3 with the band edges swapped: ``lambda_low = L0/b``, ``lambda_high = L0/a``.

    The smoothing band (``L0/a <= lambda <= L0/b``) is empty since ``a < b``; what the band between
    the true edges gets depends on the order of the tests: ``medium="divided"`` (HF order: "longer
    than lambda_low -> w/f" first) divides it by the factor, ``medium="kept"`` (torchtune order:
    "shorter than lambda_high -> w" first) keeps it."""
    w, f, a, b, l0 = _llama3_parts(spec)
    lam = 2.0 * math.pi / w
    if medium == "kept":
        return np.where(lam < l0 / a, w, w / f), 1.0
    out = np.where(lam > l0 / b, w / f, w)
    medium_band = ~(lam < l0 / a) & ~(lam > l0 / b)
    with np.errstate(divide="ignore", invalid="ignore"):  # a == b (allowed): no band, sigma unused
        sigma = (l0 / lam - a) / (b - a)
        return np.where(medium_band, (1.0 - sigma) * out / f + sigma * out, out), 1.0


def llama3_smooth_in_wavelength(spec: RopeSpec, seq_len: int, inverted: bool = False) -> Freqs:
    """llama3 with the smoothing weight linear in the wavelength instead of in ``1/wavelength``:
    ``sigma = (L0/a - lambda) / (L0/a - L0/b)`` (same band ends, another curve between them), or
    with ``inverted`` the weight running the other way, ``(lambda - L0/b) / (L0/a - L0/b)``."""
    w, f, a, b, l0 = _llama3_parts(spec)
    lam = 2.0 * math.pi / w
    low, high = l0 / a, l0 / b
    out = np.where(lam > low, w / f, w)
    medium = ~(lam < high) & ~(lam > low)
    with np.errstate(divide="ignore", invalid="ignore"):  # a == b (allowed): no band, sigma unused
        sigma = (lam - high) / (low - high) if inverted else (low - lam) / (low - high)
        return np.where(medium, (1.0 - sigma) * w / f + sigma * w, out), 1.0


def yarn_ramp(spec: RopeSpec, seq_len: int, *, index_scale: float = 1.0, inverted: bool = False) -> Freqs:
    """YaRN with the ramp evaluated at ``index_scale * j`` (2 = "over 2j", the channel index of
    ``arange(0, d, 2)``), or with the blend weights ``inverted`` (pairs past ``high`` kept,
    high-frequency pairs divided by the factor)."""
    w_ref, s = inv_freq(spec, seq_len)
    w = base_inv_freq(spec.theta, spec.resolved_freq_dim, spec.n_pairs)
    low, high = yarn_correction_range(spec)
    ramp = np.clip((index_scale * np.arange(spec.n_pairs, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    if inverted:
        ramp = 1.0 - ramp
    return ramp * (w / spec.scaling.factor) + (1.0 - ramp) * w, s


def proportional_denominator(spec: RopeSpec, seq_len: int, denominator: int | None = None) -> Freqs:
    """proportional (Gemma 4) with another exponent denominator than ``d`` (docs/spec.md section 3;
    default ``2k``, the rotated width): ``w_i = theta^(-2i/denominator)`` for ``i < k``."""
    w_ref, s = inv_freq(spec, seq_len)
    k = int(np.count_nonzero(w_ref))
    sc = spec.scaling
    w = np.zeros(spec.n_pairs, dtype=np.float64)
    if k:
        w[:k] = base_inv_freq(spec.theta, denominator or 2 * k, k)
    return w / (1.0 if sc.factor is None else sc.factor), s
