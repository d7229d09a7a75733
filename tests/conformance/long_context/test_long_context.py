"""Long-context check: correct engines pass at 2^17 and 2^20 tokens, a bug that only shows past
2^17 passes at 131072 and FAILs at 1,048,576 from the right position, the fused judging pass is
the NumPy judge bit for bit, memory does not grow with the length, and bad input is refused.

Shapes are small (1 head, D = 8) so that a million tokens take about a second."""

from __future__ import annotations

import json
import tracemalloc
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from cli_runs import run_check
from conformance.backends.emulated import Float32Emulation
from conformance.backends.numba_backend import NumbaBackend
from conformance.cases.case import GoldenCase
from conformance.error_model.tolerance import bounds, get_profile, pair_coefficients, resolve
from conformance.judge.runner import judge_case
from conformance.long_context.kernel import judge_chunk
from conformance.long_context.stream import LongContextPlan, chunk_inputs, default_spec, judge_row, run_long_context
from roperef import fast
from roperef.layout import pair_map
from roperef.spec import RopeSpec, Scaling
from wrong_backends_long import CachedTableBackend

SMALL = RopeSpec(8, theta=500000.0)
T17, T20 = 2**17, 2**20


def _plan(spec=SMALL, lengths=(T17, T20), chunk=65536, heads=1, **kw):
    return LongContextPlan(lengths=lengths, spec=spec, chunk=chunk, heads=heads, **kw)


def test_correct_backends_pass_at_2p17_and_2p20():
    for backend in (NumbaBackend(), Float32Emulation()):  # the built-in backend; a correct float32 engine
        report = run_long_context(backend, _plan())
        assert [r.status for r in report.results] == ["PASS"] * 8, [(r.id, r.message) for r in report.results]
        for r in report.results:
            assert r.metrics.n_elements == int(r.id.split("/t")[1].split("-")[0]) * 8
            assert r.metrics.budget_used <= 1.0 and r.tolerance is not None


def test_a_bug_past_2p17_passes_at_131072_and_fails_at_1048576():
    report = run_long_context(CachedTableBackend(), _plan())
    by_len = {}
    for r in report.results:
        by_len.setdefault(int(r.id.split("/t")[1].split("-")[0]), []).append(r)
    assert [r.status for r in by_len[T17]] == ["PASS"] * 4
    for r in by_len[T20]:
        assert r.status == "FAIL"
        worst = r.metrics.worst
        assert worst["first_over_position"] == T17  # the first position past the 2^17-row table
        assert worst["position"] >= T17 and worst["token"] == worst["position"]
        assert "the first at position 131072" in r.message and r.diagnosis is not None


def test_rows_cover_lengths_stages_dtypes_and_filter():
    plan = _plan(lengths=(1000, 5000), chunk=999)
    ids = [r.id for r in run_long_context(NumbaBackend(), plan).results]
    assert ids == [f"long/{s}/default/half/{d}/t{t}-h1-d8-c999" for t in (1000, 5000) for s in ("forward", "backward")
                   for d in ("bfloat16", "float32")]
    only = run_long_context(NumbaBackend(), plan, select=lambda i: "backward" in i and "float32" in i)
    assert [r.id for r in only.results] == [i for i in ids if "backward/default/half/float32" in i]


def test_chunks_are_contiguous_offsets_with_varying_inputs():
    plan = _plan(lengths=(10000,), chunk=4096)
    base = np.arange(4096 * 8, dtype=np.float32).reshape(1, 4096, 1, 8)
    xs, ps = zip(*(chunk_inputs(plan, base, 10000, k) for k in range(3)))
    assert [p.tolist()[0][:2] for p in ps] == [[0, 1], [4096, 4097], [8192, 8193]] and ps[2].shape == (1, 1808)
    assert all(np.array_equal(p[0], p[0, 0] + np.arange(p.shape[1])) for p in ps)
    assert not np.array_equal(xs[0], xs[1])  # each chunk rolls the block: other values at each position


# ----------------------------------------------------------------------------- the fused pass


@pytest.mark.parametrize("spec, stage, out_dtype", [
    (RopeSpec(8, theta=500000.0), "forward", np.float32),
    (RopeSpec(16, pairing="adjacent", rotary_dim=10), "backward", np.float64),
    (RopeSpec(12, pairing="adjacent_in_half_out", rotary_dim=8, rotary_start=4), "forward", ml_dtypes.bfloat16),
    (RopeSpec(8, scaling=Scaling("yarn", factor=8.0, original_max_position_embeddings=4096)), "backward", np.float16),
    (RopeSpec(10, rotary_dim=6, freq_dim=5, scaling=Scaling("llama3", factor=8.0, low_freq_factor=1.0,
                                                            high_freq_factor=4.0, original_max_position_embeddings=8192)),
     "forward", np.float32),
])
def test_fused_pass_equals_the_numpy_judge(spec, stage, out_dtype):
    rng = np.random.default_rng(7)
    pos = (123457 + np.arange(300, dtype=np.int64))[None]
    x = rng.standard_normal((1, 300, 3, spec.head_dim)).astype(np.float32).astype(np.float64)
    x[0, 5] = 0.0  # a zero token: bounds reduce to the floor
    expected = getattr(fast, stage)(x, pos, spec)
    got = (expected + rng.standard_normal(expected.shape) * 1e-5).astype(out_dtype)
    got[0, 7, 1, 2] = expected[0, 7, 1, 2]  # exact elements: ratio 0
    key, out = ("x", "y") if stage == "forward" else ("grad", "grad_x")
    dtype = np.dtype(out_dtype).name if np.dtype(out_dtype).name != "float64" else "float32"
    case = GoldenCase("c", stage, stage, spec, dtype, "full", (), {key: x, "positions": pos, out: expected})
    caps = Float32Emulation().capabilities
    profile = get_profile("fp32-angles")
    slow = judge_case(case, {out: got}, caps, profile, diagnose=False).metrics
    r = resolve(profile, caps, case, np.asarray(got).dtype)
    coef = pair_coefficients(spec, pos, r, x.shape[:-2])
    pm = pair_map(spec).transposed() if stage == "backward" else pair_map(spec)
    st = judge_chunk(x[0], expected[0], np.asarray(got)[0], coef[0], pm.in_a, pm.in_b, pm.out_a, pm.out_b, r.floor,
                     n_blocks=7)
    assert st.budget == slow.budget_used and st.n_over == slow.n_over and st.max_err == slow.max_abs_error
    assert st.worst_flat == int(np.ravel_multi_index(slow.worst["index"], expected.shape))
    assert st.sum_err2 / st.sum_exp2 == pytest.approx(slow.nmse, rel=1e-12)
    ratio = np.abs(np.asarray(got, dtype=np.float64) - expected) / bounds(case, r)[out]
    over = np.flatnonzero(ratio.reshape(-1) > 1)
    assert st.first_over == (int(over[0]) if over.size else -1) and st.n_nonfinite == 0


def test_fused_pass_counts_non_finite_outputs_as_a_fail():
    @dataclass
    class NanAt(Float32Emulation):
        name: str = "nan-late"

        def forward(self, x, positions, spec, cu_seqlens=None):
            y = super().forward(x, positions, spec)
            if positions[0, 0] >= 8192:
                y[0, 3, 0, 1] = np.nan
            return y

    r = judge_row(NanAt(), _plan(lengths=(20000,), chunk=4096), 20000, "forward", "float32", get_profile("fp32-angles"))
    assert r.status == "FAIL" and "non-finite" in r.message and "chunk 2 of 5" in r.message


# ----------------------------------------------------------------------------- misbehaving backends


@dataclass
class Misbehaving(Float32Emulation):
    how: str = ""
    name: str = "misbehaving"

    def supports(self, case):
        if self.how == "decline-late" and case.positions[0, 0] >= 4096:
            return "positions past 4095 are not supported"
        return super().supports(case)

    def forward(self, x, positions, spec, cu_seqlens=None):
        if self.how == "raise" and positions[0, 0] > 0:
            raise RuntimeError("kernel launch failed")
        if self.how == "shape":
            return super().forward(x, positions, spec)[:, :-1]
        if self.how == "modify":
            x[...] = 0
        y = super().forward(x, positions, spec)
        if self.how == "spec":  # a frozen spec changed anyway, after a correct result
            object.__setattr__(spec, "theta", spec.theta * 2)
        return y


@pytest.mark.parametrize("how, status, words", [
    ("raise", "ERROR", "forward raised RuntimeError: kernel launch failed (chunk 1 of 3"),
    ("shape", "FAIL", "output y has shape (1, 4095, 1, 8), expected (1, 4096, 1, 8)"),
    ("modify", "FAIL", "input(s) x modified in place"),
    ("spec", "FAIL", "input(s) spec.theta modified in place (chunk 0 of 3"),
    ("decline-late", "NOT_SUPPORTED", "positions past 4095 are not supported (chunk 1 of 3, positions 4096..8191)"),
])
def test_backend_problems_are_row_results(how, status, words):
    plan = _plan(lengths=(10000,), chunk=4096)
    r = judge_row(Misbehaving(how=how), plan, 10000, "forward", "float32", get_profile("fp32-angles"))
    assert r.status == status and words in r.message, r.message
    assert plan.spec == SMALL and plan.spec.theta == 500000.0  # the backend got a copy of the row's spec


def test_undeclared_stage_and_dtype_are_not_supported():
    report = run_long_context(CachedTableBackend(), _plan(lengths=(100,), dtypes=("float64", "float32")))
    status = {r.id.split("/")[1] + "/" + r.id.split("/")[4]: r.status for r in report.results}
    assert status == {"forward/float64": "NOT_SUPPORTED", "forward/float32": "PASS",
                      "backward/float64": "NOT_SUPPORTED", "backward/float32": "PASS"}


# ----------------------------------------------------------------------------- memory


def _peak(length: int) -> int:
    backend, plan = NumbaBackend(), _plan(spec=RopeSpec(32), lengths=(length,), chunk=8192, stages=("forward",),
                                         dtypes=("float32",))
    run_long_context(backend, plan)  # warm (kernels loaded, caches filled)
    tracemalloc.start()
    try:
        run_long_context(backend, plan)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_is_set_by_the_chunk_not_the_length():
    short, long = _peak(4 * 8192), _peak(32 * 8192)
    chunk_f64 = 8192 * 1 * 32 * 8  # one chunk's float64 output
    assert long < 1.25 * short, (short, long)
    assert long < 8 * chunk_f64, long / chunk_f64  # a few chunk-sized arrays, not the 32-chunk sequence


# ----------------------------------------------------------------------------- plan and command


@pytest.mark.parametrize("kw, message", [
    ({"lengths": ()}, "needs at least one length"),
    ({"lengths": (0,)}, "--long-context=0"),
    ({"lengths": (2**31 + 1,)}, "integer in [1, 2^31]"),
    ({"chunk": 0}, "--chunk=0"),
    ({"heads": 0}, "--long-heads=0"),
    ({"spec": RopeSpec(8, scaling=Scaling("dynamic", factor=2.0, max_position_embeddings=2048))}, "whole sequence length"),
    ({"spec": RopeSpec(8, mrope_section=(1, 1, 2))}, "plain RoPE"),
    ({"dtypes": ("int8",)}, "dtype='int8'"),
])
def test_plan_validation(kw, message):
    with pytest.raises(ValueError, match=None) as err:
        _plan(**kw)
    assert message in str(err.value)


def test_default_spec_takes_a_declared_pairing():
    assert default_spec(("adjacent",)).pairing == "adjacent" and default_spec().pairing == "half"
    assert default_spec().head_dim == 128 and default_spec().theta == 500000.0


@pytest.mark.parametrize("argv, message", [
    (["--long-context", "0"], "--long-context=0: must be an integer in [1, 2147483648]"),
    (["--long-context", "131072,x"], "--long-context='x': must be an integer"),
    (["--long-context", "1,2,3,4,5,6,7,8,9"], "must be 1 to 8 comma-separated lengths"),
    (["--long-context", "--chunk", "-4"], "--chunk=-4: must be an integer in [1, 1048576]"),
    (["--long-context", "--long-heads", "h8"], "--long-heads='h8': must be an integer in [1, 1024]"),
    (["--chunk", "8"], "--chunk='8': needs --long-context"),
    (["--long-context", "--long-spec", "no-such-model"], "is neither a file nor a preset name"),
    (["--long-context", "--long-spec", "phi-3-mini-128k-instruct"], "--long-spec scaling='longrope'"),
    (["--long-context", "--long-spec", "gemma-3-1b-it"], "resolves to several specs"),
    (["--long-context", "--isolate"], "--isolate=True: cannot be combined with --long-context"),
    (["--long-context", "--timeout", "5"], "--timeout=5.0: cannot be combined with --long-context"),
    (["--long-context", "--explore", "3"], "cannot be combined with --long-context"),
])
def test_bad_long_context_flags_are_usage_errors(capsys, argv, message):
    code, out, err = run_check(capsys, *argv)
    assert code == 2 and message in err and not out


def test_cli_long_context_reports_rows(capsys, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SMALL.to_dict()))
    code, out, _ = run_check(capsys, "--backend", "wrong_backends_long:CachedTableBackend", "--long-context", f"{T17},{T20}",
                        "--long-heads", "1", "--chunk", "65536", "--long-spec", str(spec), "--dtype", "bfloat16",
                        "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"))
    assert code == 1
    assert "long context: 131072, 1048576 tokens x 1 heads, chunks of 65536 tokens" in out
    assert "FAIL   long/forward/default/half/bfloat16/t1048576-h1-d8-c65536" in out
    assert "repro: roperef check --backend wrong_backends_long:CachedTableBackend --dtype bfloat16 --long-context 1048576" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["golden"]["source"] == "long-context" and doc["golden"]["long_context"]["lengths"] == [T17, T20]
    rows = {r["id"]: r for r in doc["results"]}
    assert len(rows) == 4 and {r["family"] for r in rows.values()} == {"long"}
    failing = rows["long/backward/default/half/bfloat16/t1048576-h1-d8-c65536"]
    assert failing["status"] == "FAIL" and failing["metrics"]["worst"]["position"] >= T17
    assert (tmp_path / "r.xml").read_text().count("<failure") == 2


def test_cli_long_context_nothing_judged_exits_3(capsys, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SMALL.to_dict()))
    code, _, err = run_check(capsys, "--backend", "wrong_backends_long:CachedTableBackend", "--long-context", "100",
                        "--long-heads", "1", "--long-spec", str(spec), "--dtype", "float16")
    assert code == 3 and "nothing was judged" in err
    code, _, err = run_check(capsys, "--long-context", "100", "--long-heads", "1", "--long-spec", str(spec), "--filter", "nomatch")
    assert code == 3 and "matches no long-context row" in err


def test_cli_long_context_numba_passes(capsys):
    code, out, _ = run_check(capsys, "--long-context", "5000", "--long-heads", "2", "--chunk", "2048", "-q")
    assert code == 0 and out.strip().splitlines()[-1].startswith("OK: 4 cases (4 PASS)")
