"""The judge judged: correct engines PASS everything; each bug class FAILs and is NAMED.

- correct engines (NumPy, Numba, a float32 engine with float32 or input-dtype tables, the
  independent float32 and float64 engines of ``bug_engines``) on the smoke tier and on the
  cases generated for their interface: zero false FAIL;
- a single-bug engine per class of the catalogue (``bug_engines.BUGS``: the 16 original
  classes and every class of issue 13), in float32 and in float64, on smoke and generated cases
  that expose the class: it fails on each tier, and every FAIL names the class (alone or in a
  tie that includes it), never another class alone; on a sample of the shape sweep's exposing
  cases (odd heads, pair counts, windows, layouts, q+k), every FAIL is named the same way;
- narrow-interface wrong backends (offset-only, tables-only, decode-only), one bug each,
  caught and named by the default run (goldens + generated).
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from bug_engines import BUGS, BugEngine
from conformance.backends.emulated import Float32Emulation
from conformance.backends.resolve import resolve_backend
from conformance.bugs.catalogue import BY_ID, CATALOGUE
from conformance.bugs.facts import case_facts
from conformance.calls.declared import Interface
from conformance.cli.main import main
from conformance.generated.plan import materialize_all, plan_cases
from conformance.judge.runner import RunOptions, run_cases
from judge_cases import smoke_cases

PER_TIER = 6
#: exposing shape-sweep cases run per engine, and failing ones diagnosed (odd heads, pair counts, layouts)
SWEEP_SAMPLE, PER_SWEEP = 40, 3


def _generated(backend):
    return materialize_all(plan_cases(backend).cases)


@cache
def _generated_for_engine(precision: str) -> tuple:
    """The generated cases of the full-interface engine in ``precision`` (the same for every single-bug
    engine of that precision: planned and materialized once per session)."""
    return tuple(_generated(BugEngine(precision=precision)))


@pytest.mark.parametrize(
    "make",
    [lambda: resolve_backend("numpy"), lambda: resolve_backend("numba"), lambda: Float32Emulation(),
     lambda: Float32Emulation(tables="input"), lambda: BugEngine(precision="float32"), lambda: BugEngine(precision="float64")],
    ids=["numpy", "numba", "emulated-fp32", "emulated-fp32-input-tables", "engine-fp32", "engine-fp64"],
)
def test_correct_backends_pass_everything(make):
    backend = make()
    cases = list(smoke_cases()) + _generated(backend)
    rep = run_cases(backend, cases, RunOptions(diagnose=False))
    bad = [(r.id, r.status, r.message) for r in rep.results if r.status != "PASS"]
    assert not bad, bad[:5]
    assert len(rep.results) == len(cases) > 300


def test_every_catalogue_class_has_a_single_bug_engine():
    assert set(BUGS.values()) == set(BY_ID), set(BY_ID) ^ set(BUGS.values())


def _exposing(cls, cases, engine):
    iface = Interface.of(engine)
    return [c for c in cases if cls.occurs_in(c) and cls.exposed(case_facts(c, iface.precision(c.dtype)))]


def _spread(items, k):
    step = max(1, len(items) // k)
    return items[::step][:k]


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_each_bug_class_fails_and_is_named(bug, precision):
    cls = BY_ID[BUGS[bug]]
    engine = BugEngine(bug=bug, precision=precision)
    checked = 0
    generated = list(_generated_for_engine(precision))
    sweep = [c for c in generated if "shape-sweep" in c.flags]
    tiers = (("smoke", list(smoke_cases()), True), ("generated", [c for c in generated if "shape-sweep" not in c.flags], True),
             ("shape sweep", sweep, False))  # the sweep: a sample, named where it fails (it may not expose the class)
    for tier, cases, required in tiers:
        exposing = _exposing(cls, cases, engine)
        assert exposing or not required, f"{bug}: no {tier} case exposes {cls.id}"
        if not required:
            exposing = _spread(exposing, SWEEP_SAMPLE)
        if bug == "dynamic-stale":
            engine.state["longest"] = 2**31  # an earlier call at a long length left its state behind
        quick = run_cases(engine, exposing, RunOptions(diagnose=False))
        failed = {r.id for r in quick.results if r.status != "PASS"}  # a PASS: this engine's bug is silent there
        assert failed or not required, f"{bug} ({precision}, {tier}): none of the {len(exposing)} exposing cases failed"
        failing = [c for c in exposing if c.id in failed]
        rep = run_cases(engine, _spread(failing, PER_TIER if required else PER_SWEEP), RunOptions())
        for r in rep.results:
            assert r.status == "FAIL", f"{bug} ({precision}, {tier}): {r.id} is {r.status}: {r.message}"
            d = r.diagnosis
            assert cls.id in d["matches"], f"{bug} ({precision}, {tier}) {r.id}: named {d['matches']}: {d['summary']}"
            assert "likely cause" in d["summary"]
            checked += 1
    assert checked >= 2


@pytest.mark.parametrize("factory, bug_class", [
    ("narrow_backends:offset_only_bf16", "positions:bf16"),
    ("narrow_backends:tables_only_offsets_ignored", "positions:offsets-ignored"),
    ("narrow_backends:decode_only_row0", "positions:row0-everywhere"),
])
def test_narrow_interface_wrong_backends_are_caught_by_the_default_run(factory, bug_class, tmp_path, capsys):
    code = main(["check", "--backend", factory, "--json", str(tmp_path / "r.json"), "-q"])
    capsys.readouterr()
    assert code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    fails = [r for r in doc["results"] if r["status"] == "FAIL"]
    assert fails and all(bug_class in r["diagnosis"]["matches"] for r in fails), [(r["id"], r["diagnosis"]["summary"]) for r in fails[:3]]
    assert any("generated" in r["flags"] for r in fails)
    assert bug_class in doc["verdict"]["consensus"]
    row = next(r for r in doc["coverage"]["classes"] if r["id"] == bug_class)
    assert row["judged"] and row["failing"] >= 1


def test_the_catalogue_is_covered_by_the_engines_in_both_precisions():
    """Every class can be exposed by a generated case of a full-interface engine (float32 and float64)."""
    for precision in ("float32", "float64"):
        plan = plan_cases(BugEngine(precision=precision))
        assert all(v is None for v in plan.expressible.values()), {k: v for k, v in plan.expressible.items() if v}
    assert len(CATALOGUE) >= 42
