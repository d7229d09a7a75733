"""Cases generated for a backend's interface: deterministic, stable ids, fit the declaration,
expected values by the NumPy reference; coverage says what was not judged and why."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bug_engines import BugEngine
from conformance.backends.base import Capabilities
from conformance.bugs.catalogue import CATALOGUE
from conformance.calls.declared import INCONSISTENT
from conformance.cli.main import main
from conformance.generated.plan import materialize_all, materialize_generated, plan_cases
from conformance.generated.positions import COVERAGE_REGIMES, REGIMES
from conformance.generated.specs import SPEC_VARIANTS
from conformance.judge.check_sources import attach_sections, with_generated
from conformance.judge.runner import RunOptions, run_cases
from judge_cases import smoke_cases
from narrow_backends import NarrowEngine
from roperef import reference
from roperef.ulp import max_ulp_error


def test_every_probe_names_a_known_spec_variant_and_regime():
    for cls in CATALOGUE:
        assert cls.probes, cls.id
        for p in cls.probes:
            assert p.spec in SPEC_VARIANTS and p.regime in REGIMES, (cls.id, p)
    assert set(COVERAGE_REGIMES) <= set(REGIMES)


def test_generation_is_deterministic_and_ids_are_stable():
    a, b = plan_cases(BugEngine()), plan_cases(BugEngine())
    assert [g.id for g in a.cases] == [g.id for g in b.cases]
    ids = [g.id for g in a.cases]
    assert len(ids) == len(set(ids)) and all(len(i.split("/")) == 6 for i in ids)
    assert not set(ids) & {c.id for c in smoke_cases()}
    for g in a.cases[::17]:
        x, y = materialize_generated(g), materialize_generated(g)
        assert x.arrays.keys() == y.arrays.keys()
        assert all(np.array_equal(x.arrays[k], y.arrays[k]) for k in x.arrays)
    assert "forward/default/half/float32/b2-s16-h2-d64/from4089" in ids  # near 4096, the id says it
    assert "forward/longrope/half/float32/b2-s16-h2-d64/from4080" in ids or any("/from4080" in i for i in ids)  # seq_len = L0


def test_expected_values_agree_with_the_reference():
    for case in materialize_all(plan_cases(BugEngine()).cases)[::9]:
        if case.stage in ("forward", "backward"):
            name, out = ("x", "y") if case.stage == "forward" else ("grad", "grad_x")
            fn = getattr(reference, case.stage)
            ref = fn(case.arrays[name], case.arrays["positions"], case.spec, cu_seqlens=case.arrays.get("cu_seqlens"))
            assert max_ulp_error(case.arrays[out], ref) <= 2.0, case.id  # error over spacing


def test_regimes_cover_the_issue_list_and_length_switches():
    tags = {g.regime.name for g in plan_cases(BugEngine()).cases}
    assert set(COVERAGE_REGIMES) <= tags  # 0, 256, 2048, 4096, 65536, 2^20, 2^31 - T, rows, sparse, decode, packed
    assert {"below-L0", "at-L0", "past-L0", "at-M", "past-M"} <= tags
    assert REGIMES["top2p31"].seq_len == 2**31 and REGIMES["at-L0"].seq_len == 4096


def test_a_narrow_interface_gets_cases_it_declares_and_reasons_for_the_rest():
    caps = Capabilities(stages=frozenset({"forward"}), pairings=frozenset({"half"}), dtypes=frozenset({"float32"}),
                        scaling_types=frozenset({"default"}), features=frozenset(), angle_dtype="float32", table_dtype="float32")
    eng = BugEngine(precision="float32", capabilities=caps)
    plan = plan_cases(eng)
    assert plan.cases and all(g.stage == "forward" and g.dtype == "float32" and g.spec.pairing == "half" for g in plan.cases)
    assert all(g.regime.kind == "shared" for g in plan.cases)
    why = plan.expressible
    assert why["positions:bf16"] is None and why["batch:only-first"] is None
    assert "needs scaling llama3" in why["llama3:bands-swapped"]
    assert "feature(s) varlen" in why["positions:cu-seqlens-ignored"]
    assert why["tables:bf16"] is None  # a float32 forward shows bf16 tables
    assert why["mrope:layout"].startswith("the interface cannot express it")


def test_a_declared_case_the_backend_declines_is_an_inconsistent_declaration_not_a_failure():
    eng = NarrowEngine(precision="float32", rule="decode")  # declares everything, accepts only T = 1
    plan = plan_cases(eng)
    assert plan.declined  # classes whose every declared probe was declined keep one declined case
    cases = materialize_all(plan.cases)
    rep = run_cases(eng, cases, RunOptions(diagnose=False))
    declined = [r for r in rep.results if r.status == "NOT_SUPPORTED"]
    assert declined and all(r.message.startswith(INCONSISTENT) for r in declined)
    assert rep.ok
    attach_sections(rep, cases, eng, plan)
    rows = {r["id"]: r for r in rep.coverage["classes"]}
    assert rep.coverage["inconsistent"] == len(declined)
    assert any(not r["judged"] and "declined" in r["why"] for r in rows.values())


def test_filters_and_dtypes_select_generated_cases():
    eng = BugEngine()
    one = plan_cases(eng).cases[5].id
    cases, n, _ = with_generated([], eng, [one], [])
    assert [c.id for c in cases] == [one] and n == 1
    cases, _, _ = with_generated([], eng, [], ["bfloat16"])
    assert cases and {c.dtype for c in cases} == {"bfloat16"}
    with pytest.raises(ValueError, match="no case matches"):
        with_generated([], eng, ["zzz-nothing"], [])


def test_cli_default_goldens_only_and_generated_only(capsys, tmp_path):
    code = main(["check", "--backend", "numpy", "-q", "--json", str(tmp_path / "all.json"), "--junit", str(tmp_path / "j.xml"),
                 "--markdown", str(tmp_path / "r.md")])
    assert code == 0
    doc = json.loads((tmp_path / "all.json").read_text())
    n_all = doc["summary"]["cases"]
    assert doc["golden"]["generated"] > 100 and doc["coverage"]["judged"] == len(CATALOGUE) and doc["verdict"] is None
    assert any("generated" in r["flags"] for r in doc["results"])
    assert 'name="coverage"' in (tmp_path / "j.xml").read_text() and "## Coverage" in (tmp_path / "r.md").read_text()
    assert main(["check", "--backend", "numpy", "-q", "--goldens-only", "--json", str(tmp_path / "g.json")]) == 0
    g = json.loads((tmp_path / "g.json").read_text())
    assert main(["check", "--backend", "numpy", "-q", "--generated-only", "--json", str(tmp_path / "n.json")]) == 0
    n = json.loads((tmp_path / "n.json").read_text())
    assert g["summary"]["cases"] + n["summary"]["cases"] == n_all
    assert not any("generated" in r["flags"] for r in g["results"]) and all("generated" in r["flags"] for r in n["results"])
    out = capsys.readouterr().out
    assert "coverage: 42 of 42 bug classes judged" in out
    with pytest.raises(SystemExit):
        main(["check", "--goldens-only", "--generated-only"])
