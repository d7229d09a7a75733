"""The blend-conditioning term of the error model (conformance/error_model/conditioning.py).

A correct float32 YaRN computes its correction range and ramp in float32 (as transformers and
keras-hub do); near the top of the ramp the rounding of the blend weight is amplified by up to
the factor. The judge must pass such an engine (with ``c_blend`` at its default) and must still
fail a real bug on the same case (inv_freq rounded to bfloat16). With ``c_blend = 0`` the same
correct engine fails: the term is necessary, not decorative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from conformance.backends.emulated import F32, Float32Emulation
from conformance.error_model.conditioning import blend_conditioning
from conformance.judge.runner import RunOptions, run_cases
from judge_cases import forward_case
from roperef.frequencies import inv_freq, yarn_correction_range
from roperef.layout import pair_axes
from roperef.spec import RopeSpec, Scaling

# gpt-oss-20b: yarn, factor 32, truncate false, theta 150000, head_dim 64
GPT_OSS = RopeSpec(
    head_dim=64,
    theta=150000.0,
    scaling=Scaling(type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0, truncate=False),
)
# The same with beta_slow moved so that the ramp ends at high = 17.002, just past pair 17:
# r_17 ~ 0.9998, g = w/w0 ~ 1/f, the worst conditioning a YaRN config can have.
STEEP = GPT_OSS.replace(scaling=Scaling(
    type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32.0,
    beta_slow=4096 / (2 * math.pi) * math.exp(-(2 * math.log(150000.0) * 17.002) / 64), truncate=False))


def float32_yarn_inv_freq(spec: RopeSpec) -> np.ndarray:
    """YaRN computed step by step in float32, the way float32 engines write it."""
    sc, d, n = spec.scaling, spec.freq_dim, spec.n_pairs
    theta, f, l0 = F32(spec.theta), F32(sc.factor), F32(sc.original_max_position_embeddings)

    def corr(beta: float) -> np.float32:
        return F32(d) * np.log(l0 / (F32(beta) * F32(2.0) * F32(math.pi))) / (F32(2.0) * np.log(theta))

    low, high = corr(sc.beta_fast), corr(sc.beta_slow)
    if sc.truncate is None or sc.truncate:
        low, high = F32(math.floor(low)), F32(math.ceil(high))
    low, high = max(low, F32(0.0)), min(high, F32(d - 1))
    pos_freqs = np.power(theta, np.arange(0, d, 2, dtype=F32) / F32(d))
    extrapolation, interpolation = F32(1.0) / pos_freqs, F32(1.0) / (f * pos_freqs)
    ramp = np.clip((np.arange(n, dtype=F32) - low) / (high - low), F32(0.0), F32(1.0))
    keep = F32(1.0) - ramp
    return (interpolation * (F32(1.0) - keep) + extrapolation * keep).astype(F32)


@dataclass
class Float32Yarn(Float32Emulation):
    """A correct float32 engine whose YaRN frequencies come from :func:`float32_yarn_inv_freq`."""

    round_to_bf16: bool = False

    def _tables(self, spec: RopeSpec, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = float32_yarn_inv_freq(spec)
        if self.round_to_bf16:
            w = w.astype(ml_dtypes.bfloat16).astype(F32)
        _, s = inv_freq(spec)
        p = np.moveaxis(rows, 0, -1).astype(F32)[..., pair_axes(spec)]
        phi = (p * w).astype(F32).astype(np.float64)
        return (np.cos(phi).astype(F32) * F32(s)).astype(F32), (np.sin(phi).astype(F32) * F32(s)).astype(F32)


def _case(spec: RopeSpec):
    rng = np.random.default_rng(7)
    positions = np.sort(rng.choice(np.arange(1, 2**19, 2), size=24, replace=False))  # odd, up to ~2^19
    positions[-2:] = [4093, 483933]
    return forward_case(spec, np.sort(positions)[None], "float32", case_id="forward/yarn-steep/half/float32/fp32-ramp")


def _status(backend, spec: RopeSpec = STEEP, **tol) -> tuple[str, float]:
    overrides = [f"{k}={v}" for k, v in tol.items()]
    result = run_cases(backend, [_case(spec)], RunOptions(tolerance_overrides=overrides)).results[0]
    return result.status, result.metrics.budget_used if result.metrics else math.inf


def test_kappa_is_zero_off_the_ramp_and_large_near_its_top():
    kappa = blend_conditioning(GPT_OSS)
    low, high = yarn_correction_range(GPT_OSS)
    j = np.arange(GPT_OSS.n_pairs)
    assert (kappa[(j <= low) | (j >= high)] == 0).all()
    inside = kappa[(j > low) & (j < high)]
    assert (inside > 0).all() and inside.max() > 32  # amplification beyond the factor's 1/g ~ f regime
    assert (blend_conditioning(RopeSpec(head_dim=64)) == 0).all()


def test_the_float32_ramp_really_is_off_by_more_than_the_constant_terms():
    w32 = float32_yarn_inv_freq(STEEP).astype(np.float64)
    w, _ = inv_freq(STEEP)
    units = np.abs(w32 - w) / w / 2.0**-24
    j = int(np.argmax(units))
    assert units[j] > 8.0 + abs(math.log(w[j]))  # c_ang + c_log |ln w| alone cannot cover it
    assert units[j] <= blend_conditioning(STEEP)[j]  # kappa does


def test_correct_float32_yarn_on_gpt_oss_passes():
    assert _status(Float32Yarn(), GPT_OSS)[0] == "PASS"


def test_correct_float32_yarn_passes_only_with_the_conditioning_term():
    status, budget = _status(Float32Yarn())
    assert status == "PASS", budget
    status0, budget0 = _status(Float32Yarn(), c_blend=0)
    assert status0 == "FAIL" and budget0 > 1.0


@pytest.mark.parametrize("c_blend", [1.0, 4.0])
def test_inv_freq_rounded_to_bfloat16_still_fails(c_blend):
    status, budget = _status(Float32Yarn(round_to_bf16=True), c_blend=c_blend)
    assert status == "FAIL" and budget > 10.0
