"""The shape sweep of the generated cases: what it covers (read back from the cases' own arrays),
what it costs, and that it catches tiled kernels with one boundary or layout bug on many cases of
the default run while correct engines still PASS everything."""

from __future__ import annotations

import json
from functools import cache
from itertools import combinations

import numpy as np
import pytest

from conformance.backends.base import Capabilities
from conformance.calls.declared import Interface
from conformance.cli.main import main
from conformance.generated.plan import materialize_all, plan_cases
from conformance.generated.shapes import BATCH_ROWS, HEAD_COUNTS, MAX_ELEMENTS, PAIR_COUNTS, TOKENS, sweep_cases
from conformance.judge.check_sources import attach_sections
from conformance.judge.runner import RunOptions, run_cases
from conformance.judge.shape_coverage import case_shape
from conformance.vocabulary import LAYOUTS, QK_ARRAYS
from judge_cases import smoke_cases
from tiled_bug_engines import TILE_BUGS, TiledEngine

#: the fewest FAILs each tiled single-bug engine must get on the sweep of the default run ("many, not a lucky few")
MIN_FAILS = 12


@cache
def _sweep(precision: str = "float32") -> tuple:
    """The materialized shape-sweep cases of the full-interface tiled engine (every layout and call form)."""
    plan = plan_cases(TiledEngine(precision=precision))
    return tuple(materialize_all([g for g in plan.cases if "shape-sweep" in g.flags]))


def _shape_values(case):
    s = case_shape(case)
    x = case.arrays.get("x", case.arrays.get("grad"))
    return {"tokens": s.tokens[0], "heads": s.heads[0] if s.heads else None, "batch": s.batch, "pairs": s.pairs,
            "window": s.window, "stage": case.stage, "dtype": case.dtype, "pairing": case.spec.pairing,
            "layout": s.layout, "form": s.call_form, "qk": s.qk_shape, "elements": 0 if x is None else int(np.size(x))}


def test_every_value_and_every_pair_of_values_of_the_sweep_is_judged():
    cases = [c for c in _sweep() if "zero-size" not in c.flags]
    rows = [_shape_values(c) for c in cases]
    seen = {k: {r[k] for r in rows} for k in rows[0]}
    assert set(TOKENS) <= seen["tokens"] and set(HEAD_COUNTS) <= seen["heads"] and set(BATCH_ROWS) <= seen["batch"]
    assert set(PAIR_COUNTS) <= seen["pairs"] and seen["window"] == {"full", "partial", "last"}
    assert seen["layout"] == {"contiguous", *LAYOUTS} and seen["form"] == {"plain", "inplace", "qk", "qk_inplace"}
    assert seen["qk"] == {None, "gqa", "mqa", "head_dims"}
    # pairwise: read from the arrays, every pair of two dimensions' values that fits the size limit at its
    # cheapest (the other dimensions at 1 token, 1 head, 1 row, 1 pair) appears in some case
    space = {"tokens": TOKENS, "heads": HEAD_COUNTS, "batch": BATCH_ROWS, "pairs": PAIR_COUNTS,
             "stage": ("apply", "forward", "backward"), "layout": ("contiguous", *LAYOUTS)}

    def cheapest(a, va, b, vb):
        v = {"tokens": 1, "heads": 1, "batch": 1, "pairs": 1, a: va, b: vb}
        return v["tokens"] * v["batch"] * v["heads"] * 2 * v["pairs"]

    tensor_rows = [r for r in rows if r["heads"] is not None]  # tables have tokens, rows and pairs, no heads or layout
    missing = []
    for a, b in combinations(space, 2):
        have = {(r[a], r[b]) for r in (tensor_rows if {a, b} & {"heads", "stage", "layout"} else rows)}
        for va in space[a]:
            for vb in space[b]:
                if cheapest(a, va, b, vb) <= MAX_ELEMENTS and (va, vb) not in have:
                    missing.append((a, va, b, vb))
    assert not missing, missing[:10]


def test_the_sweep_is_deterministic_and_small():
    iface = Interface.of(TiledEngine())
    first, again = [g.id for g in sweep_cases(iface)], [g.id for g in sweep_cases(iface)]
    assert first == again and len(set(first)) == len(first)
    rows = [_shape_values(c) for c in _sweep()]
    assert max(r["elements"] for r in rows) <= MAX_ELEMENTS
    assert 200 <= len(rows) <= 320 and sum(r["elements"] for r in rows) <= 12_000_000
    over = [c for c in _sweep() if "rows>4096" in c.flags]
    assert len(over) >= 12 and all(case_shape(c).rows > 4096 for c in over)


def test_empty_inputs_expect_empty_outputs():
    empty = [c for c in _sweep() if "zero-size" in c.flags]
    axes = {c.id.rsplit("/", 1)[1] for c in empty}
    assert axes == {"empty-batch", "empty-tokens", "empty-heads"}
    stages = {c.stage for c in empty}
    assert stages == {"apply", "forward", "backward", "cos_sin"}
    for c in empty:
        out = c.expected()
        assert all(np.size(v) == 0 for v in out.values()), c.id
        if c.stage != "cos_sin":
            assert np.shape(out["y" if c.stage != "backward" else "grad_x"]) == np.shape(c.arrays["x" if c.stage != "backward" else "grad"])


class _CrashesOnEmpty(TiledEngine):
    def forward(self, x, positions, spec, cu_seqlens=None):
        if x.size == 0:
            raise ValueError("cannot launch a kernel with an empty grid")
        return super().forward(x, positions, spec, cu_seqlens)


def test_an_engine_that_crashes_on_an_empty_input_is_an_error_and_empty_cases_expose_no_bug_class():
    empty = [c for c in _sweep() if "zero-size" in c.flags and c.stage == "forward"]
    rep = run_cases(_CrashesOnEmpty(), empty, RunOptions(diagnose=False))
    assert {r.status for r in rep.results} == {"ERROR"}
    assert all("cannot launch a kernel with an empty grid" in r.message for r in rep.results)
    attach_sections(rep, empty, _CrashesOnEmpty(), None)
    assert rep.coverage["judged"] == 0  # an empty output cannot show any bug class


@pytest.mark.parametrize("bug", sorted(TILE_BUGS))
def test_each_tiled_bug_fails_on_many_cases_of_the_sweep(bug):
    rep = run_cases(TiledEngine(bug=bug), list(_sweep()), RunOptions(diagnose=False))
    fails = [r for r in rep.results if r.status == "FAIL"]
    assert len(fails) >= MIN_FAILS, (bug, len(fails), rep.counts())
    assert not [r for r in rep.results if r.status == "ERROR"], [r.message for r in rep.results if r.status == "ERROR"][:3]


def test_where_the_failures_are_follows_the_boundary():
    """The shape section localises a tile: heads 4 and 8 pass, every other head count fails (tile of 4);
    only cases past 4096 token rows fail (one launch of 4096 rows)."""
    cases = [c for c in _sweep() if c.form is None or not c.form.qk]  # (a q+k case has k's heads too)
    for bug, check in (("head-tile4-tail", "heads"), ("rows-4096", "rows")):
        engine = TiledEngine(bug=bug)
        rep = run_cases(engine, cases, RunOptions(diagnose=False))
        attach_sections(rep, cases, engine, None)
        shapes = rep.coverage["shapes"]
        if check == "heads":
            heads = {v["value"]: v for v in next(d for d in shapes["dimensions"] if d["dimension"] == "heads")["values"]}
            assert heads[4]["failing"] == heads[8]["failing"] == 0
            assert all(heads[h]["failing"] > 0 for h in (1, 2, 3, 5, 6, 7, 9))
        else:
            over = shapes["over_4096_rows"]
            failing = sum(r.status == "FAIL" for r in rep.results)
            assert over["failing"] == failing >= MIN_FAILS and over["cases"] >= failing


def test_correct_engines_pass_the_whole_default_run():
    cases = list(smoke_cases())
    for engine in (TiledEngine(), TiledEngine(precision="float64")):
        generated = materialize_all(plan_cases(engine).cases)
        rep = run_cases(engine, cases + generated, RunOptions(diagnose=False))
        bad = [(r.id, r.status, r.message) for r in rep.results if r.status != "PASS"]
        assert not bad, bad[:5]
        assert sum("shape-sweep" in c.flags for c in generated) >= 200


def test_a_narrow_interface_is_swept_within_its_declaration():
    caps = Capabilities(stages=frozenset({"forward"}), pairings=frozenset({"half"}), dtypes=frozenset({"float32"}),
                        scaling_types=frozenset({"default"}), features=frozenset(), angle_dtype="float32", table_dtype="float32")
    engine = TiledEngine(capabilities=caps)
    sweep = [g for g in plan_cases(engine).cases if "shape-sweep" in g.flags]
    assert len(sweep) >= 150
    assert all(g.stage == "forward" and g.form is None and g.spec.resolved_rotary_dim == g.spec.head_dim for g in sweep)
    assert {g.heads for g in sweep} == set(HEAD_COUNTS) and "zero-size" not in {f for g in sweep for f in g.flags}
    rep = run_cases(TiledEngine(bug="odd-heads", capabilities=caps), materialize_all(sweep), RunOptions(diagnose=False))
    assert rep.counts()["FAIL"] >= MIN_FAILS


def test_q_and_k_arrays_of_the_sweep():
    qk = [c for c in _sweep() if c.form is not None and c.form.qk]
    assert qk
    for c in qk:
        k_in, k_out = QK_ARRAYS[c.stage]
        q = c.arrays["x" if c.stage != "backward" else "grad"]
        assert c.arrays[k_in].shape[:-2] == q.shape[:-2] and c.arrays[k_out].shape == c.arrays[k_in].shape
        assert q.shape[-2] % max(c.arrays[k_in].shape[-2], 1) == 0


def test_the_default_cli_run_catches_a_tiled_bug_and_reports_the_shapes(tmp_path, capsys):
    code = main(["check", "--backend", "tests/support/engines/tiled_bug_engines.py:head_tile4", "--json", str(tmp_path / "r.json"),
                 "--markdown", str(tmp_path / "r.md"), "--no-diagnose"])
    out = capsys.readouterr().out
    assert code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    fails = [r for r in doc["results"] if r["status"] == "FAIL"]
    assert len(fails) >= 100 and any("shape-sweep" in r["flags"] for r in fails)
    shapes = doc["coverage"]["shapes"]
    assert shapes["both_sides_of_powers_of_two"] and shapes["over_4096_rows"]["cases"] >= 12
    assert "shapes judged" in out and "heads" in out
    assert "### Shapes" in (tmp_path / "r.md").read_text()
