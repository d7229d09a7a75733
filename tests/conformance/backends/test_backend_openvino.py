"""OpenVINO adapter (``openvino``, ``openvino-split``): exporter-pattern RoPE graphs on the CPU
plugin, forward and apply, and which kernel the plugin compiled each pattern to (read from the
compiled runtime graph). A few small cases: the smoke tier runs in scripts/check_backends.py."""

from __future__ import annotations

import numpy as np
import pytest

from _adapter_checks import assert_close, assert_sensitive, make_case, require
from conformance.backends import openvino as ov_adapter
from conformance.backends.openvino import OpenVinoBackend, OpenVinoSplitBackend, build_model, kernel_fact
from roperef import reference
from roperef.spec import RopeSpec, Scaling

SPECS = [
    RopeSpec(64),
    RopeSpec(64, rotary_dim=32),
    RopeSpec(64, pairing="adjacent"),
    RopeSpec(64, pairing="adjacent", rotary_dim=32),
    RopeSpec(64, scaling=Scaling(type="yarn", factor=8.0, original_max_position_embeddings=2048)),
]


@pytest.fixture(scope="module")
def ov():
    return require("openvino")


@pytest.fixture(scope="module")
def backends(ov):
    return {"slice": OpenVinoBackend(), "split": OpenVinoSplitBackend()}


@pytest.mark.parametrize("halves", ["slice", "split"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.scaling.type}-{s.pairing}-r{s.rotary_dim}")
def test_forward_matches_reference(backends, halves, spec):
    backend = backends[halves]
    case = make_case(spec, "float32")
    assert backend.supports(case) is True
    assert_close(backend, case, "float32")


@pytest.mark.parametrize("spec", SPECS[:4], ids=lambda s: f"{s.pairing}-r{s.rotary_dim}")
def test_apply_with_given_tables_matches_reference(backends, spec):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 2, 64)).astype(np.float32)
    pos = np.array([[0, 1, 2, 3, 4], [4093, 4094, 4095, 4096, 4097]])
    cos, sin = reference.cos_sin(spec, pos)
    got = backends["slice"].apply(x, cos.astype(np.float32), sin.astype(np.float32), spec)
    want = reference.apply(x.astype(np.float64), cos.astype(np.float32), sin.astype(np.float32), spec)
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-6 * np.abs(x).max())
    assert not np.allclose(got, reference.apply(x.astype(np.float64), cos, -sin, spec), atol=1e-3)


def test_sensitive_to_a_position_shift(backends):
    assert_sensitive(backends["slice"], make_case(RopeSpec(64), "float32"), "float32")


def test_the_compiled_graph_says_which_kernel_ran(ov):
    """Measured on openvino 2026.4.1: rotate_half with its halves from two Slice nodes is fused into
    the RoPE kernel, full or partial window; from one Split node, or GPT-J's interleaved pattern, it is not."""
    core = ov.Core()

    def fused(pairing: str, rot: int, halves: str) -> bool:
        model = build_model("apply", pairing, 2, 64, rot, "float32", halves=halves)
        return kernel_fact(core.compile_model(model, "CPU"), "p").fused

    assert fused("half", 64, "slice") and fused("half", 32, "slice")
    assert not fused("half", 64, "split")
    assert not fused("adjacent", 64, "slice")


def test_notes_state_the_kernel_and_precision_of_every_pattern(backends):
    notes = backends["slice"].capabilities.notes
    assert "apply rotate_half: fused RoPE kernel (inference precision f32)" in notes
    assert "forward interleaved: unfused graph" in notes
    assert "fused RoPE kernel" not in backends["split"].capabilities.notes


def test_outside_the_model_is_not_supported(backends):
    pos = np.array([[4093, 4095, 4097, 4099, 4101]], dtype=np.int64)
    assert backends["slice"].supports(make_case(RopeSpec(64), "float32", positions=pos)) is True  # sparse: fine
    assert backends["slice"].supports(make_case(RopeSpec(64), "bfloat16")) == "dtype bfloat16 not supported"
    with pytest.raises(ValueError, match="halves='chunk'"):
        OpenVinoBackend(halves="chunk")


def test_missing_library_is_not_supported(monkeypatch, ov):
    monkeypatch.setattr(ov_adapter, "missing_modules", lambda *names: "library not installed: openvino")
    backend = OpenVinoBackend()
    assert backend.supports(make_case(RopeSpec(64), "float32")) == "library not installed: openvino"
    assert "compiled to" not in backend.capabilities.notes
