"""MLX adapters: ``mx.fast.rope`` (``mlx``) and mlx-lm's ``initialize_rope`` (``mlx-lm``), forward and VJP.

Small hand-built cases first (odd positions 4093..4097, float32-like bound, a sensitivity check),
then the judge's smoke tier with the xfail lists in conformance/backends/xfail/.
"""

from __future__ import annotations

import numpy as np
import pytest

from _adapter_checks import assert_close, assert_sensitive, make_case, require, smoke_results
from conformance.backends import mlx as mlx_adapter
from conformance.backends.mlx import MlxBackend
from conformance.backends.mlx_lm import MlxLmBackend
from conformance.judge.xfail import xfail_path
from roperef.frequencies import inv_freq
from roperef.spec import RopeSpec, Scaling

SPECS = [
    RopeSpec(64),
    RopeSpec(64, pairing="adjacent", rotary_dim=32),
    RopeSpec(64, scaling=Scaling(type="linear", factor=4.0)),
    RopeSpec(64, scaling=Scaling(type="yarn", factor=8.0, original_max_position_embeddings=2048)),
    RopeSpec(64, scaling=Scaling(type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)),
]


@pytest.fixture(scope="module")
def mx():
    return require("mlx.core")


@pytest.mark.parametrize("backend_cls", [MlxBackend, MlxLmBackend])
@pytest.mark.parametrize("stage", ["forward", "backward"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.scaling.type}-{s.pairing}-r{s.rotary_dim}")
def test_matches_reference(mx, backend_cls, stage, dtype, spec):
    if backend_cls is MlxLmBackend:
        require("mlx_lm")
    backend = backend_cls()
    case = make_case(spec, dtype, stage)
    assert backend.supports(case) is True
    s = inv_freq(spec, 4098)[1]
    scale = 1.0 if backend.capabilities.applies_attention_factor else s
    assert_close(backend, case, "bfloat16" if dtype == "bfloat16" else "float32", scale)


def test_sensitive_to_a_position_shift(mx):
    case = make_case(RopeSpec(64), "float32")
    assert_sensitive(MlxBackend(), case, "float32")


def test_sparse_positions_not_supported(mx):
    pos = np.array([[4093, 4095, 4097, 4099, 4101]], dtype=np.int64)
    case = make_case(RopeSpec(64), "float32", positions=pos)
    assert MlxBackend().supports(case) == "needs sparse_positions"


def test_missing_library_is_not_supported(monkeypatch):
    monkeypatch.setattr(mlx_adapter, "missing_modules", lambda *names: "library not installed: mlx")
    assert MlxBackend().supports(make_case(RopeSpec(64), "float32")) == "library not installed: mlx"


@pytest.mark.parametrize("backend_cls,registered", [(MlxBackend, "mlx"), (MlxLmBackend, "mlx-lm")])
def test_smoke_tier(mx, backend_cls, registered):
    require("conformance.judge.runner")
    if backend_cls is MlxLmBackend:
        require("mlx_lm")
    results, stale = smoke_results(backend_cls(), str(xfail_path(registered)))
    bad = [f"{r.status} {r.id}: {r.message}" for r in results if r.status in ("FAIL", "ERROR", "XPASS")]
    assert not bad, "\n".join(bad)
    assert sum(r.status == "PASS" for r in results) >= 30
    assert not stale, stale
