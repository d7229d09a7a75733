"""Helpers for the JAX/MLX adapter tests: build small GoldenCases from the reference, bound the error,
run the judge's smoke tier, and require a library (fail under CI=true, skip elsewhere)."""

from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np
import pytest

from conformance.cases.case import GoldenCase, numpy_dtype
from roperef import reference
from roperef.frequencies import inv_freq
from roperef.layout import pair_map
from roperef.spec import RopeSpec

U = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}

#: Odd positions around 4095 (where bf16-rounded positions or inv_freq break) and small ones.
POSITIONS = np.array([[4093, 4094, 4095, 4096, 4097], [1, 2, 3, 4, 5]], dtype=np.int64)


def require(module: str) -> Any:
    """Import ``module``; missing -> skip, except under CI=true where CI installs it (then fail)."""
    if os.environ.get("CI") == "true":
        return importlib.import_module(module)
    return pytest.importorskip(module)


def make_case(spec: RopeSpec, dtype: str, stage: str = "forward", positions: np.ndarray = POSITIONS, heads: int = 2) -> GoldenCase:
    """A forward/backward case on seeded normal inputs rounded to ``dtype`` (stored exactly as float64)."""
    rng = np.random.default_rng(1234)
    b, t = positions.shape
    x = rng.standard_normal((b, t, heads, spec.head_dim)).astype(numpy_dtype(dtype)).astype(np.float64)
    name, out = ("x", "y") if stage == "forward" else ("grad", "grad_x")
    fn = reference.forward if stage == "forward" else reference.backward
    arrays = {name: x, "positions": positions, out: fn(x, positions, spec)}
    return GoldenCase(f"{stage}/test/{spec.pairing}/{dtype}", stage, stage, spec, dtype, "smoke", (), arrays)


def float32_bound(case: GoldenCase, table_dtype: str) -> np.ndarray:
    """Per-element bound: (|x_a|+|x_b|) * (2 u_out + 4 u_tab + 24 u32 (|phi| + 1)) * s, pass-through exact.

    A float32-angle engine's angle error is a few u32 * |phi|; 24 covers inv_freq, the scaling blend and
    the product with margin, while a bf16-rounded position (error up to 2^-9 * p) is far above it.
    """
    spec, name = case.spec, ("x" if case.stage == "forward" else "grad")
    x = case.arrays[name]
    pos = case.arrays["positions"]
    w, s = inv_freq(spec, int(pos.max()) + 1)
    phi = np.abs(pos[..., None].astype(np.float64) * w)[:, :, None, :]  # [B, T, 1, n]
    pm = pair_map(spec)
    mag = np.abs(x[..., pm.in_a]) + np.abs(x[..., pm.in_b])
    u_out, u_tab = U[case.dtype], max(U[table_dtype], U["float32"])
    per_pair = s * mag * (2 * u_out + 4 * u_tab + 24 * U["float32"] * (phi + 1))
    bound = np.zeros_like(x)
    bound[..., pm.out_a] = per_pair
    bound[..., pm.out_b] = per_pair
    return bound


def run_stage(backend: Any, case: GoldenCase) -> np.ndarray:
    """Call the backend's stage on the case's inputs in the case dtype; check the inputs stay untouched."""
    name = "x" if case.stage == "forward" else "grad"
    x = case.input_as(name)
    pos = case.arrays["positions"].copy()
    x_before = x.copy()
    out = getattr(backend, case.stage)(x, pos, case.spec)
    assert np.array_equal(x.view(np.uint8), x_before.view(np.uint8)), "input modified in place"
    assert np.array_equal(pos, case.arrays["positions"]), "positions modified in place"
    assert out.shape == x.shape
    return np.asarray(out).astype(np.float64)


def assert_close(backend: Any, case: GoldenCase, table_dtype: str, scale: float = 1.0) -> float:
    """Backend output within the float32 bound of the reference (``scale`` divides the expected:
    1/s for backends that leave the attention factor out). Returns the max error / bound."""
    expected = case.arrays["y" if case.stage == "forward" else "grad_x"] / scale
    got = run_stage(backend, case)
    bound = float32_bound(case, table_dtype) / scale
    err = np.abs(got - expected)
    over = err > bound
    assert not over.any(), f"{case.id} {case.spec.scaling.type}: {over.sum()} elements over the bound, max err {err.max():.3g}"
    return float((err / np.where(bound > 0, bound, 1)).max())


def assert_sensitive(backend: Any, case: GoldenCase, table_dtype: str) -> None:
    """The bound is tight enough to see a one-position shift (positions + 1) at these positions."""
    shifted = reference.forward(case.arrays["x"], case.arrays["positions"] + 1, case.spec)
    got = run_stage(backend, case)
    assert (np.abs(got - shifted) > float32_bound(case, table_dtype)).any()


def smoke_results(backend: Any, xfail_file: str) -> tuple[list[Any], list[Any]]:
    """Run the default case set of ``roperef check`` on ``backend`` (the smoke tier plus the cases
    generated for its interface) through the judge; return (results, stale xfail entries)."""
    from conformance.cases.materialize import catalogue, materialize
    from conformance.generated.plan import materialize_all, plan_cases
    from conformance.judge.runner import RunOptions, run_cases
    from conformance.judge.xfail import load_xfail

    cases = [materialize(r, check_fast=False) for r in catalogue("smoke")]
    cases += materialize_all(plan_cases(backend).cases)
    report = run_cases(backend, cases, RunOptions(xfail=load_xfail(xfail_file)))
    return report.results, report.stale_xfails
