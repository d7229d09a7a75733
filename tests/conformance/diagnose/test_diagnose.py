"""Diagnosis: decoys per class at the backend's precision, fitted parameters, ties, runner-up,
non-finite outputs, declaration hints; a correct output is not blamed."""

from __future__ import annotations

import numpy as np
import pytest

from bug_engines import BugEngine
from conformance.backends.base import Capabilities
from conformance.bugs.catalogue import BY_ID, CATALOGUE
from conformance.bugs.decoy import run_decoy
from conformance.diagnose.likely_bug import diagnose
from conformance.error_model.tolerance import get_profile, resolve
from conformance.judge.runner import RunOptions, run_cases
from conformance.vocabulary import STAGES
from judge_cases import forward_case
from roperef import reference
from roperef.spec import RopeSpec, Scaling

F64 = Capabilities(stages=frozenset({"forward"}), angle_dtype="float64", table_dtype="float64")
F32 = Capabilities(stages=frozenset(STAGES), angle_dtype="float32", table_dtype="float32")


def _r(case, caps=F64, out="float64"):
    return resolve(get_profile("backend"), caps, case, np.dtype(out))


def test_off_by_one_positions_are_named_with_the_fitted_shift():
    spec = RopeSpec(head_dim=32, scaling=Scaling(type="linear", factor=2.0))
    case = forward_case(spec, [[5, 17, 301], [1000, 1001, 4097]], "float64")
    wrong = reference.forward(case.arrays["x"], case.arrays["positions"] + 1, spec)
    d = diagnose(case, {"y": wrong}, _r(case))
    assert d["match"] == "positions:shifted" and d["candidates"][0]["param"] == 1
    assert "off by one" in d["summary"] and d["summary"].startswith("likely cause: ")
    far = reference.forward(case.arrays["x"], case.arrays["positions"] - 37, spec)
    d = diagnose(case, {"y": far}, _r(case))
    assert d["match"] == "positions:shifted" and d["candidates"][0]["param"] == -37


def test_a_correct_looking_output_matches_no_decoy_and_unrelated_error_only_gets_a_guess():
    spec = RopeSpec(head_dim=32)
    case = forward_case(spec, [[3, 4095, 70001]], "float64")
    noise = case.arrays["y"] + 1e-3 * np.random.default_rng(1).standard_normal(case.arrays["y"].shape)
    d = diagnose(case, {"y": noise}, _r(case))
    assert d["match"] is None and d["summary"].startswith("no known bug pattern matches")
    assert d["candidates"] and d["candidates"][0]["budget"] > 1


def test_the_dynamic_length_is_fitted_and_reported():
    spec = RopeSpec(head_dim=64, scaling=Scaling(type="dynamic", factor=2.0, max_position_embeddings=2048))
    case = forward_case(spec, [list(range(4089, 4105)), list(range(251, 267))], "float32")
    wrong = reference.forward(case.arrays["x"], case.arrays["positions"], spec, seq_len=1048576)
    d = diagnose(case, {"y": wrong}, _r(case))
    assert d["match"] == "dynamic:length" and d["candidates"][0]["param"] == 1048576
    assert "seq_len 1048576 instead of 4105" in d["summary"]


def test_bf16_tables_of_a_float32_engine_are_named_at_float32_precision():
    """A float32 engine rounding its tables to bf16 lands on neighbouring bf16 values where its
    float32 table is near a rounding boundary: the decoy's rounding slack allows exactly that."""
    spec = RopeSpec(head_dim=64)
    case = forward_case(spec, [list(range(4089, 4105)), list(range(249, 265))], "float32")
    engine = BugEngine(bug="tables-bf16", precision="float32")
    (res,) = run_cases(engine, [case], RunOptions()).results
    assert res.status == "FAIL" and res.diagnosis["match"] == "tables:bf16", res.diagnosis["summary"]


def test_ties_are_said_with_a_separating_case_and_the_runner_up():
    spec = RopeSpec(head_dim=32)
    pos = np.stack([np.arange(16), 4093 + np.arange(16)])  # row 0 from 0: row0-everywhere == offsets ignored
    case = forward_case(spec, pos, "float32")
    wrong = reference.forward(case.arrays["x"], np.broadcast_to(np.arange(16), (2, 16)), spec)
    d = diagnose(case, {"y": wrong}, _r(case, F32, "float32"),
                 separate=__import__("conformance.diagnose.separate", fromlist=["x"]).separating_case)
    assert set(d["matches"]) == {"positions:offsets-ignored", "positions:row0-everywhere"}
    assert d["summary"].startswith("likely cause, one of: ")
    assert d["separate"] is not None and "rows" in d["separate"]["case"]
    assert d["runner_up"] is not None and d["runner_up"]["budget"] > 1


def test_nan_outputs_of_float16_positions_are_diagnosed():
    spec = RopeSpec(head_dim=32)
    case = forward_case(spec, [list(range(65507, 65523)), list(range(4093, 4109))], "float32")
    (res,) = run_cases(BugEngine(bug="positions-fp16", precision="float32"), [case], RunOptions()).results
    assert res.status == "FAIL" and "non-finite" in res.message
    assert "65504" in res.diagnosis["nonfinite"] and res.diagnosis["match"] == "positions:fp16"


def test_declaration_hint_when_tables_are_cast_to_the_input_dtype():
    """An engine casting its tables to bf16 inputs but declaring float32 tables: the FAIL says the
    declaration table_dtype='input' would pass."""
    from conformance.backends.emulated import Float32Emulation

    spec = RopeSpec(head_dim=64)
    case = forward_case(spec, [list(range(249, 265))], "bfloat16")
    eng = Float32Emulation(tables="input")
    eng.capabilities = Capabilities(stages=frozenset(STAGES), angle_dtype="float32", table_dtype="float32")
    (res,) = run_cases(eng, [case], RunOptions(tolerance_overrides=("c_out=0.5",))).results
    if res.status == "PASS":
        pytest.skip("this draw of inputs does not cross a bf16 rounding boundary")
    assert any("table_dtype='input'" in h for h in res.diagnosis["hints"]), res.diagnosis


def test_every_class_has_a_decoy_that_differs_from_the_correct_output_on_its_probe():
    """Each class's decoy, on a case its rule says exposes it, differs from the expected output
    by more than its bound (float32 precision): the catalogue's rules and decoys agree."""
    from conformance.bugs.facts import Precision, case_facts
    from conformance.generated.plan import materialize_all, plan_cases

    engine = BugEngine(precision="float32")
    cases = materialize_all(plan_cases(engine).cases)
    missing = []
    for cls in CATALOGUE:
        exposing = [c for c in cases if cls.occurs_in(c) and cls.exposed(case_facts(c, Precision.of("float32", "float32", c.dtype)))]
        if not exposing:
            missing.append(cls.id)
            continue
        case = exposing[0]
        r = _r(case, F32, case.dtype if case.stage in ("apply", "forward", "backward") else "float64")
        params = list(cls.family.candidates(case, {}))
        runs = [run_decoy(case, d, r) for d in (cls.family.make(case, p) for p in params) if d is not None]
        from conformance.bugs.decoy import budget

        assert any(budget(run.outputs, case.expected(), run.bound) > 1 for run in runs), (cls.id, case.id)
    assert not missing, missing


def test_classes_cite_a_spec_section_and_say_where_they_occur():
    for cls in CATALOGUE:
        assert cls.section in (1, 2, 3, 4, 5, 6) and cls.words and cls.where and cls.decoy and cls.exposes
        assert cls.stages and cls.stages <= set(STAGES)
    assert BY_ID["positions:bf16"].probes


def test_a_float32_engine_that_declares_nothing_is_told_so():
    """Judged as float64 (its declaration), a correct float32 engine fails at long positions; each
    FAIL says it would pass with angle_dtype='float32', and no decoy is blamed."""
    from conformance.generated.plan import materialize_all, plan_cases

    engine = BugEngine(precision="float32", capabilities=Capabilities(stages=frozenset(STAGES)))
    cases = materialize_all(plan_cases(engine).cases)[::6]
    fails = [r for r in run_cases(engine, cases, RunOptions()).results if r.status == "FAIL"]
    assert fails
    for r in fails:
        assert any("angle_dtype='float32'" in h for h in r.diagnosis["hints"]), r.diagnosis["summary"]
        assert r.diagnosis["match"] is None, r.diagnosis["summary"]
