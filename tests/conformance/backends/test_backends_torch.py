"""The torch-based adapters judged on the checked-in smoke tier (conformance/backends/*.py).

Every installed library must pass every smoke case it supports, except the entries of its
expected-failure file (real discrepancies, diagnosed in docs/backends-torch.md), and must
support enough cases that a silent NOT_SUPPORTED cannot pass for a PASS. With CI=true a
missing library is a failure, not a skip (CI installs every CPU-installable backend).
The two discrepancies found are also pinned down on their own minimal cases, so the tests
fail if either library changes behaviour (then the xfail entry goes stale).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance.backends.names import BUILTIN_BACKENDS
from conformance.cases.case import GoldenCase
from conformance.golden.case_source import load_cases
from conformance.judge.runner import RunOptions, RunReport, run_cases
from conformance.judge.xfail import load_xfail, xfail_path
from roperef import reference
from roperef.spec import RopeSpec, Scaling

ROOT = Path(__file__).resolve().parents[3]
CI = os.environ.get("CI") == "true"
#: Table-lookup adapters (torchtune, litgpt, GPT-J) build one row per position: cap it for test time.
SMALL_CACHE = "70000"


def need(*modules: str) -> None:
    """Import the libraries a test needs: skip when absent locally, fail in CI."""
    for name in modules:
        if CI:
            importlib.import_module(name)
        else:
            pytest.importorskip(name)


def backend(name: str):
    module, attr = BUILTIN_BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), attr)()


def smoke(name: str, *, dtypes: tuple[str, ...] = (), filters: tuple[str, ...] = (), tol: tuple[str, ...] = ()) -> RunReport:
    xfail_file = xfail_path(name)
    xfail = load_xfail(str(xfail_file)) if xfail_file.is_file() else None
    cases = load_cases(None, "smoke", filters, dtypes).cases
    return run_cases(backend(name), cases, RunOptions(xfail=xfail, tolerance_overrides=tol, diagnose=False))


def assert_clean(report: RunReport, min_pass: int) -> None:
    bad = [f"{r.status} {r.id}: {r.message}" for r in report.results if r.status in ("FAIL", "ERROR", "XPASS")]
    assert not bad, "\n".join(bad)
    counts = report.counts()
    assert counts["PASS"] >= min_pass, counts


# ----------------------------------------------------------------------------- hf


def test_hf_smoke() -> None:
    """Every dtype with the declared capabilities (float32 angles, tables in the input dtype; the
    judge caps a table's precision at its angle dtype, so float64 inputs get float32-accurate tables)."""
    need("torch", "transformers")
    assert_clean(smoke("hf"), min_pass=150)


def test_hf_gptj_adjacent_table(monkeypatch: pytest.MonkeyPatch) -> None:
    need("torch", "transformers")
    monkeypatch.setenv("ROPEREF_MAX_CACHE_ROWS", SMALL_CACHE)
    spec = RopeSpec(head_dim=64, rotary_dim=32, pairing="adjacent")
    cases = [_case(spec, dt, offset=4093) for dt in ("float32", "float16")]
    report = run_cases(backend("hf-gptj"), cases, RunOptions(diagnose=False))
    assert_clean(report, min_pass=2)


# ----------------------------------------------------------------------------- torch libraries


@pytest.mark.parametrize("name, min_pass", [("torchtune", 1), ("torchtune-qwen2", 10)])
def test_torchtune_smoke(name: str, min_pass: int, monkeypatch: pytest.MonkeyPatch) -> None:
    need("torch", "torchtune")
    monkeypatch.setenv("ROPEREF_MAX_CACHE_ROWS", SMALL_CACHE)
    assert_clean(smoke(name), min_pass=min_pass)


def test_torchtune_llama3_adjacent_odd_positions() -> None:
    need("torch", "torchtune")
    spec = RopeSpec(head_dim=64, pairing="adjacent", theta=500000.0, scaling=Scaling(
        type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192))
    cases = [_case(spec, dt, offset=4093) for dt in ("float32", "bfloat16")]
    assert_clean(run_cases(backend("torchtune"), cases, RunOptions(diagnose=False)), min_pass=2)


def test_rotary_embedding_torch_smoke() -> None:
    need("torch", "rotary_embedding_torch")
    assert_clean(smoke("rotary-embedding-torch"), min_pass=10)


def test_rotary_embedding_torch_positions_in_input_dtype() -> None:
    """Real discrepancy: rotate_queries_or_keys builds positions in the input dtype, so bf16/fp16
    inputs at positions 4093..4097 are rotated by rounded positions; float32 is correct."""
    need("torch", "rotary_embedding_torch")
    spec = RopeSpec(head_dim=64, pairing="adjacent")
    cases = [_case(spec, dt, offset=4093, batch=1) for dt in ("float32", "bfloat16", "float16")]
    statuses = [r.status for r in run_cases(backend("rotary-embedding-torch"), cases, RunOptions(diagnose=False)).results]
    assert statuses == ["PASS", "FAIL", "FAIL"]


def test_rotary_embedding_torch_position_bug_fails_in_the_default_run(tmp_path: Path) -> None:
    """The default run (goldens + cases generated for the adapter's interface) catches the bf16/fp16
    position bug and names it once the shipped list is turned off (``--no-xfail``); with the adapter's
    xfail file (applied by default) every entry is active (none stale)."""
    need("torch", "rotary_embedding_torch")
    from conformance.cli.main import main

    report = tmp_path / "r.json"
    assert main(["check", "--backend", "rotary-embedding-torch", "-q", "--no-xfail", "--json", str(report)]) == 1
    doc = json.loads(report.read_text())
    fails = [r for r in doc["results"] if r["status"] == "FAIL"]
    errors = [r for r in doc["results"] if r["status"] == "ERROR"]  # RotaryEmbedding(dim=2): see its xfail file
    assert all("ZeroDivisionError" in r["message"] for r in errors)
    assert len(fails) >= 10 and {r["dtype"] for r in fails} == {"bfloat16", "float16"}
    for r in fails:
        assert r["diagnosis"]["matches"] == ["positions:" + {"bfloat16": "bf16", "float16": "fp16"}[r["dtype"]]], r["diagnosis"]["summary"]
    assert "positions:bf16 explains every dtype=bfloat16 FAIL" in doc["verdict"]["summary"]
    xfail = xfail_path("rotary-embedding-torch")
    assert main(["check", "--backend", "rotary-embedding-torch", "-q", "--no-diagnose", "--json", str(report), "--xfail", str(xfail)]) == 0
    doc = json.loads(report.read_text())
    assert doc["summary"]["counts"]["XFAIL"] == len(fails) + len(errors) and doc["stale_xfails"] == []
    assert main(["check", "--backend", "rotary-embedding-torch", "-q", "--no-diagnose", "--json", str(report)]) == 0  # the shipped list by default
    assert json.loads(report.read_text())["summary"]["counts"]["XFAIL"] == len(fails) + len(errors)


def test_litgpt_smoke(monkeypatch: pytest.MonkeyPatch) -> None:
    need("torch", "litgpt")
    monkeypatch.setenv("ROPEREF_MAX_CACHE_ROWS", SMALL_CACHE)
    report = smoke("litgpt")
    assert_clean(report, min_pass=15)
    assert report.counts()["XFAIL"] >= 1  # the YaRN cases still fail (else the xfail file is stale)


def test_litgpt_yarn_ramp_is_inverted() -> None:
    """The litgpt discrepancy in numbers: pair 0 (highest frequency) must keep w_0 = 1 under YaRN."""
    need("torch", "litgpt")
    import torch
    from litgpt.model import build_rope_cache

    cos, sin = build_rope_cache(seq_len=2, n_elem=64, base=10000.0, extra_config={
        "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0, "original_max_seq_len": 4096})
    w0 = float(torch.atan2(sin[1, 0], cos[1, 0]))
    expected, _ = reference.inv_freq(RopeSpec(64, scaling=Scaling(type="yarn", factor=4.0,
                                                                 original_max_position_embeddings=4096)))
    assert expected[0] == 1.0
    assert w0 == pytest.approx(0.25, rel=1e-6)  # litgpt divides the highest frequency by the factor


# ----------------------------------------------------------------------------- kernels and GPU-only


def test_liger_under_triton_interpreter(tmp_path: Path) -> None:
    need("torch", "triton", "liger_kernel", "transformers")
    out = tmp_path / "liger.json"
    env = dict(os.environ, TRITON_INTERPRET="1")
    cmd = [sys.executable, "-m", "conformance.cli", "check", "--backend", "liger", "--dtype", "float32",
           "--dtype", "float16", "--filter", "apply/*,forward/default/*,backward/default/*", "--json", str(out), "-q"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    counts = json.loads(out.read_text())["summary"]["counts"]
    assert counts["FAIL"] == counts["ERROR"] == 0 and counts["PASS"] >= 3, counts


@pytest.mark.parametrize("name", ["flash-attn-triton", "flash-attn", "vllm", "transformer-engine"])
def test_gpu_only_adapters_report_not_supported(name: str) -> None:
    need("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: benchmarks/gpu_check.sh runs these")
    report = smoke(name, filters=("apply/*", "forward/default/*"))
    assert report.results and all(r.status == "NOT_SUPPORTED" for r in report.results)
    reasons = {r.message for r in report.results}
    assert any("CUDA" in m or "not installed" in m for m in reasons), reasons


# ----------------------------------------------------------------------------- helpers


def test_sequence_offsets_of_the_cuda_kernels() -> None:
    """What flash-attn / TransformerEngine take: one start per sequence, positions p0 + arange(len)."""
    from conformance.backends.gpu_util import sequence_offsets

    rows = 40 + np.arange(5)[None] + np.array([[0], [9]])  # bshd [2, 5]
    assert sequence_offsets(rows, (2, 5, 3, 8), None).tolist() == [40, 49]
    assert sequence_offsets(np.arange(5), (2, 5, 3, 8), None).tolist() == [0, 0]  # broadcast over the batch
    packed = np.array([7, 8, 9, 0, 3, 4])
    assert sequence_offsets(packed, (6, 3, 8), np.array([0, 3, 3, 4, 6])).tolist() == [7, 0, 0, 3]  # empty sequence: 0
    assert sequence_offsets(np.array([[0, 1, 3]]), (1, 3, 3, 8), None) is None  # a gap
    assert sequence_offsets(packed, (6, 3, 8), np.array([0, 2, 6])) is None  # 9, 0 is not contiguous




def test_bfloat16_round_trip_is_bit_exact() -> None:
    need("torch")
    import ml_dtypes

    from conformance.backends.torch_util import to_numpy, to_torch

    bits = np.arange(0, 1 << 16, 7, dtype=np.uint16)
    arr = bits.view(ml_dtypes.bfloat16)
    back = to_numpy(to_torch(arr))
    assert back.dtype == arr.dtype and np.array_equal(back.view(np.uint16), bits)


def _case(spec: RopeSpec, dtype: str, *, offset: int, batch: int = 2, seq: int = 5) -> GoldenCase:
    """A forward case at odd positions offset..offset+seq-1 (row b offset by 17*b), x rounded to dtype."""
    from conformance.cases.case import numpy_dtype

    rng = np.random.default_rng(offset + seq)
    x = rng.standard_normal((batch, seq, 2, spec.head_dim)).astype(numpy_dtype(dtype)).astype(np.float64)
    pos = offset + np.arange(seq)[None, :] + 17 * np.arange(batch)[:, None]
    return GoldenCase(id=f"forward/test/{spec.pairing}/{dtype}/p{offset}", family="forward", stage="forward",
                      spec=spec, dtype=dtype, tier="smoke", flags=(),
                      arrays={"x": x, "positions": pos, "y": reference.forward(x, pos, spec)})
