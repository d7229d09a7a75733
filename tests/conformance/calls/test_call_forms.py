"""Call forms: x (q, k) in a memory layout with guard memory, in place, q with k (GQA, MQA, MLA head
dims); what a declaration admits; what the judge says when memory outside a view is written, an input
is modified, k is wrong or a q+k method returns something else than a pair."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conformance.backends.base import BaseBackend, Capabilities, backend_methods
from conformance.calls.declared import INCONSISTENT, Interface
from conformance.calls.isolate import load_isolated
from conformance.calls.memory import PAD_TOKENS, place
from conformance.cases.form import CallForm, check_form_arrays, form_method
from conformance.generated.gencase import materialize_generated
from conformance.generated.plan import plan_cases
from conformance.generated.shapes import NA, ShapeRow, kinds_of, shape_case
from conformance.judge.runner import RunOptions, run_cases
from conformance.vocabulary import LAYOUTS, STAGES
from roperef import reference
from tiled_bug_engines import TiledEngine


def _row(kind_index=0, tokens=17, heads=5, batch=3, pairs=3, window="full", dtype="float32", pairing="half",
         positions="rows", layout="contiguous", form=None, k_shape=None, engine=None):
    kind = kinds_of(Interface.of(engine or TiledEngine()))[kind_index]
    if form is None or not form.startswith("qk"):
        k_shape = NA
    return ShapeRow(kind, tokens, heads, batch, pairs, window, dtype, pairing, positions, layout, form, k_shape)


def _case(**kw):
    return materialize_generated(shape_case(_row(**kw)))


def test_layouts_are_views_of_a_larger_buffer_with_the_case_values():
    x = np.random.default_rng(0).standard_normal((2, 5, 3, 7)).astype(np.float32)
    k = np.random.default_rng(1).standard_normal((2, 5, 1, 7)).astype(np.float32)
    (p,) = place({"x": x}, "qkv", 7)
    assert p.buffer.shape == (2, 5, 9, 7) and np.array_equal(p.view, x) and not p.view.flags.c_contiguous
    q_p, k_p = place({"q": x, "k": k}, "qkv", 7)
    assert q_p.buffer is k_p.buffer and q_p.buffer.shape == (2, 5, 3 + 2, 7)
    assert np.array_equal(k_p.view, k) and np.shares_memory(k_p.view, q_p.buffer)
    (p,) = place({"x": x}, "bhtd", 7)
    assert p.buffer.shape == (2, 3, 5 + PAD_TOKENS, 7) and p.view.strides[1] == 7 * 4 and np.array_equal(p.view, x)
    (p,) = place({"x": x}, "fortran", 7)
    assert p.view.flags.f_contiguous and not p.view.flags.c_contiguous and np.array_equal(p.view, x)
    (p,) = place({"x": x}, "offset", 7)
    base = p.buffer.__array_interface__["data"][0]
    assert p.view.flags.c_contiguous and p.view.__array_interface__["data"][0] == base + 4 and np.array_equal(p.view, x)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("form", [None, "inplace", "qk", "qk_inplace"])
def test_a_correct_engine_passes_every_layout_and_form(layout, form):
    k_shape = "gqa" if form in ("qk", "qk_inplace") else None
    cases = [_case(kind_index=i, layout=layout, form=form, k_shape=k_shape, heads=6, dtype=dt)
             for i, dt in ((0, "float32"), (1, "bfloat16"), (2, "float64"), (4, "float16"))]
    assert all(c.form is not None and c.form.layout == layout for c in cases)
    rep = run_cases(TiledEngine(), cases, RunOptions(diagnose=False))
    assert len(rep.results) == 4 and all(r.status == "PASS" for r in rep.results), [r.message for r in rep.results]


def test_a_write_outside_the_view_is_a_fail_that_says_where():
    engine = TiledEngine(bug="writes-outside")
    qkv = _case(layout="qkv", form="inplace")
    both = _case(layout="qkv", form="qk_inplace", k_shape="mqa")
    bhtd = _case(layout="bhtd", form="inplace", kind_index=1)
    plain = _case(form="inplace")
    rep = run_cases(engine, [qkv, both, bhtd, plain], RunOptions(diagnose=False))
    msgs = {r.id: r.message for r in rep.results}
    assert [next(r.status for r in rep.results if r.id == c.id) for c in (qkv, both, bhtd, plain)] == ["FAIL", "FAIL", "FAIL", "PASS"], msgs
    assert "wrote outside the view of x" in msgs[qkv.id] and "the k and v slices" in msgs[qkv.id]
    assert "wrote outside the view of q and k" in msgs[both.id] and "of the qkv buffer of shape [3, 17, 7, 6]" in msgs[both.id]
    assert "padding token" in msgs[bhtd.id]


def test_strides_ignored_fail_and_a_plain_contiguous_call_does_not():
    engine = TiledEngine(bug="strides-ignored")
    cases = [_case(layout=lay) for lay in ("qkv", "bhtd", "fortran", "offset", "contiguous")]
    rep = run_cases(engine, cases, RunOptions(diagnose=False))
    assert [next(r.status for r in rep.results if r.id == c.id) for c in cases] == ["FAIL", "FAIL", "FAIL", "PASS", "PASS"]


class _Misbehaving(TiledEngine):
    """Correct tables and rotation; ``how`` breaks one call form."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how, self.kwargs = how, []

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        if self.how == "modifies-input":
            x[..., 0] = 0
        return y

    def forward_(self, x, positions, spec, cu_seqlens=None):
        if self.how == "returns-instead":
            return super().forward(x, positions, spec, cu_seqlens)
        return super().forward_(x, positions, spec, cu_seqlens)

    def forward_qk(self, q, k, positions, spec, cu_seqlens=None, **kwargs):
        self.kwargs.append(kwargs)
        yq, yk = super().forward_qk(q, k, positions, spec, cu_seqlens, **kwargs)
        if self.how == "k-unrotated":
            return yq, np.array(k)
        if self.how == "one-array":
            return yq
        return yq, yk


def test_what_the_judge_says_about_a_misbehaving_call():
    one, both = _case(layout="qkv"), _case(form="qk")
    rep = run_cases(_Misbehaving("modifies-input"), [one, both], RunOptions(diagnose=False))
    said = {r.id: (r.status, r.message) for r in rep.results}
    assert said[one.id] == ("FAIL", "input(s) x modified in place")
    assert said[both.id] == ("FAIL", "input(s) q, k modified in place")
    rep = run_cases(_Misbehaving("returns-instead"), [_case(form="inplace")], RunOptions(diagnose=False))
    assert rep.results[0].status == "FAIL" and "elements over the bound" in rep.results[0].message
    engine = _Misbehaving("k-unrotated")
    rep = run_cases(engine, [_case(form="qk", k_shape="gqa", heads=6)], RunOptions())
    (r,) = rep.results
    assert r.status == "FAIL" and r.message.startswith("k: ") and "q:" not in r.message and r.diagnosis is not None
    rep = run_cases(_Misbehaving("one-array"), [_case(form="qk")], RunOptions(diagnose=False))
    assert rep.results[0].status == "ERROR" and "forward_qk returned ndarray, expected a pair (q_out, k_out)" in rep.results[0].message


def test_k_spec_is_passed_only_when_k_has_its_own_head_dim():
    engine = _Misbehaving("")
    mla = _case(form="qk", k_shape="head_dims", window="last", heads=4)
    assert mla.form is not None and mla.form.k_spec is not None and mla.arrays["k_x"].shape[-2:] == (1, 6)
    assert mla.spec.rotary_start == 3 and mla.spec.head_dim == 9  # q = cat(nope, rope): 3 pairs after 3 channels
    rep = run_cases(engine, [mla, _case(form="qk", k_shape="mqa")], RunOptions(diagnose=False))
    assert [r.status for r in rep.results] == ["PASS", "PASS"]  # both forward: run in the order given
    assert engine.kwargs == [{"k_spec": mla.form.k_spec}, {}]
    expected_k = reference.forward(mla.arrays["k_x"], mla.arrays["positions"], mla.form.k_spec)
    assert np.array_equal(mla.arrays["k_y"], expected_k)  # k's expected values: roperef on k's own spec


class _PlainOnly(BaseBackend):
    name = "plain-only"
    capabilities = Capabilities(stages=frozenset({"forward"}), angle_dtype="float32", table_dtype="float32")

    def forward(self, x, positions, spec, cu_seqlens=None):
        return TiledEngine().forward(x, positions, spec, cu_seqlens)


class _DeclaresQk(_PlainOnly):
    name = "declares-qk"
    capabilities = replace(_PlainOnly.capabilities, call_forms=frozenset({"qk"}), layouts=frozenset({"qkv"}))


def test_only_declared_forms_are_generated_and_a_declared_form_without_its_method_is_inconsistent():
    plan = plan_cases(_PlainOnly())
    assert plan.cases and all(g.form is None for g in plan.cases)
    case = _case(form="qk", engine=_PlainOnly())
    assert _PlainOnly().supports(case) == "method forward_qk not implemented"
    assert _PlainOnly().supports(_case(layout="qkv", engine=_PlainOnly())) == "layout qkv not supported"
    rep = run_cases(_DeclaresQk(), [case], RunOptions(diagnose=False))
    assert rep.results[0].status == "NOT_SUPPORTED" and rep.results[0].message.startswith(INCONSISTENT)
    assert backend_methods(_DeclaresQk()) == frozenset()
    assert {form_method(s, "qk_inplace") for s in ("apply", "forward", "backward")} <= backend_methods(TiledEngine())


def test_assumed_capabilities_take_the_forms_from_the_methods():
    class Undeclared(BaseBackend):
        def forward(self, x, positions, spec, cu_seqlens=None):
            return x

        def forward_qk(self, q, k, positions, spec, cu_seqlens=None):
            return q, k

    caps = Undeclared().capabilities
    assert caps.call_forms == frozenset({"qk"}) and caps.layouts == frozenset() and caps.stages == frozenset({"forward"})
    assert set(STAGES) >= caps.stages


def test_a_worker_process_calls_the_form_methods(tmp_path):
    backend = load_isolated("tests/support/engines/tiled_bug_engines.py:head_tile4", 60.0)
    assert "forward_qk_" in backend.implemented_methods
    cases = [_case(form="qk_inplace", layout="qkv", heads=5), _case(heads=4, form="inplace")]
    rep = run_cases(backend, cases, RunOptions(isolate=True, diagnose=False), selector="tests/support/engines/tiled_bug_engines.py:head_tile4")
    assert [r.status for r in rep.results] == ["FAIL", "PASS"]  # (both forward) 5 heads: the fifth is not rotated; 4: fine


def test_form_records_refuse_bad_values():
    with pytest.raises(ValueError, match="layout=.*expected contiguous or one of"):
        CallForm("strided")
    with pytest.raises(ValueError, match="k_spec"):
        CallForm(k_spec=_case().spec)
    good = _case()
    with pytest.raises(ValueError, match="applies to stages apply, forward, backward only"):
        check_form_arrays("table/x", "cos_sin", CallForm("qkv"), {})
    with pytest.raises(ValueError, match="arrays missing for a q\\+k case"):
        replace(good, form=CallForm(qk=True))
