"""The judge measures the operator: bugs nobody listed are described, never named wrongly; precision is told
apart from meaning (IMPRECISE); probing is bounded, once per failing group, and can be switched off.

The engines are ``tests/unlisted_bug_engines.py`` (written from docs/spec.md, none of them a class of the
catalogue unless ``may_name`` says so); docs/meta-tests.md has the full table (every engine on every case).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bug_engines import BugEngine
from conformance.cli.main import main
from conformance.diagnose.findings import AXES
from conformance.diagnose.probe import MAX_PROBE_CALLS
from conformance.judge.runner import RunOptions, run_cases
from conformance.judge.xfail import parse_xfail
from unlisted_bug_engines import UNLISTED, UnlistedEngine, make_case

_CASES: dict[tuple[str, ...], object] = {}


def _case(spec: tuple[str, str, str, str, str]):
    if spec not in _CASES:
        _CASES[spec] = make_case(*spec)
    return _CASES[spec]


def _described(diag: dict, expect, message: str = "") -> bool:
    return bool(expect.described(diag, message))


def _reshaped(case, tokens: int, heads: int, position: int | None = None):
    """``case`` cut to its first batch row's first ``tokens`` tokens and ``heads`` heads (every token at
    ``position`` when given), its expected output recomputed by the reference."""
    from dataclasses import replace

    from roperef import reference

    a = dict(case.arrays)
    x = np.asarray(a["x"])[:1, :tokens]
    h = np.arange(heads)
    scale = (1.0 + 0.25 * (h // x.shape[-2]))[:, None]  # heads past the case's own: its heads again, scaled
    a["x"] = np.ascontiguousarray((x[..., h % x.shape[-2], :] * scale).astype(x.dtype))
    pos = np.asarray(a["positions"])[:1, :tokens]
    a["positions"] = np.full_like(pos, position) if position is not None else pos
    a["y"] = reference.forward(a["x"], a["positions"], case.spec)
    return replace(case, id=f"{case.id}/t{tokens}-h{heads}" + (f"-at{position}" if position is not None else ""), arrays=a)


@pytest.mark.parametrize("bug", sorted(UNLISTED))
def test_an_unlisted_bug_is_described_and_never_named_wrongly(bug):
    expect = UNLISTED[bug]
    engine = UnlistedEngine(bug=bug)
    cases = [_case(c) for c in expect.cases]
    rep = run_cases(engine, cases, RunOptions())
    fails = [r for r in rep.results if r.status == "FAIL"]
    assert fails, f"{bug}: no case failed ({[(r.id, r.status) for r in rep.results]})"
    for r in fails:
        d = r.diagnosis
        assert _described(d, expect, r.message), f"{bug} {r.id}: {[(f['axis'], f['pattern'], f['words']) for f in d['findings']]}"
        assert d["match"] in (None, *expect.may_name), f"{bug} {r.id}: named {d['match']}: {d['summary']}"
        assert "closest" not in d["summary"]
        for f in d["findings"]:
            assert f["axis"] in AXES and f["words"] and f["section"]


@pytest.mark.parametrize("bug", ["head-tile4-tail", "token-tail-32", "odd-heads"])
def test_a_tile_bug_is_described_and_never_named_wrongly(bug):
    """Issue 22's tiled kernels: heads past the last full tile returned unrotated (on 2 heads: every head, an output
    equal to its input, which positions:zero reproduces too: a tie, not a name), tokens past the last full tile zeroed."""
    from tiled_bug_engines import TiledEngine, tile_expectations

    expect = tile_expectations()[bug]
    base = _case(("forward", "default", "half", "float32", "near4096"))
    cases = [base, _reshaped(base, 16, 3)] if bug == "odd-heads" else [base]
    rep = run_cases(TiledEngine(bug=bug), cases, RunOptions())
    fails = [r for r in rep.results if r.status == "FAIL"]
    assert fails, [(r.id, r.status) for r in rep.results]
    for r in fails:
        d = r.diagnosis
        assert _described(d, expect, r.message), f"{bug} {r.id}: {[(f['axis'], f['pattern'], f['words']) for f in d['findings']]}"
        assert d["match"] in (None, *expect.may_name), f"{bug} {r.id}: named {d['match']}: {d['summary']}"


def test_a_shift_on_a_single_position_is_a_tie_with_a_scaled_angle():
    """Every token at p = 4093 with the angle doubled: positions:shifted by +4093 reproduces it exactly, and so does
    psi = 2 phi; the summary says both and names neither."""
    case = _reshaped(_case(("forward", "default", "half", "float32", "near4096")), 1, 2, position=4093)
    rep = run_cases(UnlistedEngine(bug="angle-doubled"), [case], RunOptions())
    (r,) = rep.results
    assert r.status == "FAIL" and r.diagnosis["match"] is None, r.diagnosis["summary"]
    assert r.diagnosis["ambiguous"]["class"] == "positions:shifted" and "positions:shifted" in r.diagnosis["matches"]
    assert "scaled by 2" in r.diagnosis["summary"]


def test_one_head_gets_its_pair_maps_from_the_pair_probe():
    """One head: a sign error in one term is not a rotation, and the case's own data (one sample per (token, pair))
    cannot show the 2x2 map; the pair probe (2 calls) measures it."""
    case = _reshaped(_case(("forward", "default", "half", "float32", "near4096")), 16, 1)
    rep = run_cases(UnlistedEngine(bug="sign-one-half"), [case], RunOptions())
    (r,) = rep.results
    assert r.status == "FAIL" and r.diagnosis["match"] is None
    found = [f for f in r.diagnosis["findings"] if f["axis"] == "pair_map" and f["pattern"] == "sign"]
    assert found and found[0]["probe"], [(f["axis"], f["pattern"], f["words"]) for f in r.diagnosis["findings"]]
    assert {"pairs-a", "pairs-b"} <= set(r.diagnosis["probe"]["probes"]) and r.diagnosis["probe"]["calls"] <= MAX_PROBE_CALLS


def test_ggml_frequencies_are_imprecise_never_a_fail():
    """ggml's float32 theta_scale raised to the pair index by repeated multiplication: every case over its
    bound is IMPRECISE (frequency-drift, ~38 u at pair 31 on every machine), with the --tol constant it would pass with."""
    specs = [("forward", "default", "half", "float32", "near4096"), ("forward", "default", "adjacent", "float64", "sparse"),
             ("backward", "default", "half", "float32", "rows"), ("cos_sin", "default", "half", "float32", "top2p31"),
             ("forward", "yarn", "half", "float32", "near4096"), ("forward", "default", "half", "bfloat16", "near65536")]
    rep = run_cases(UnlistedEngine(bug="ggml-theta-scale"), [_case(s) for s in specs], RunOptions())
    statuses = [r.status for r in rep.results]
    assert "FAIL" not in statuses and statuses.count("IMPRECISE") >= 3, statuses
    for r in rep.results:
        if r.status == "IMPRECISE":
            pv = r.diagnosis["precision"]
            assert pv["mechanism"] == "frequency-drift" and pv["model_budget"] <= 1.0
            assert 20 < pv["measured"]["units_at_last_pair"] < 80
            assert any(p.startswith("--tol c_log=") for p in pv["passes_with"]), pv
            assert r.diagnosis["match"] is None
    assert rep.ok


@pytest.mark.parametrize("bug, regime", [("positions-plus-one", "near2p20"), ("positions-minus-three", "near4096"),
                                         ("attention-dropped", "near4096"), ("theta-default", "near4096")])
def test_a_semantic_bug_is_never_imprecise(bug, regime):
    variant = "yarn" if bug == "attention-dropped" else "theta5e5" if bug == "theta-default" else "default"
    case = _case(("forward", variant, "half", "float32", regime))
    (r,) = run_cases(BugEngine(bug=bug, precision="float32"), [case], RunOptions()).results
    assert r.status == "FAIL", (r.status, r.message)


def test_probing_costs_a_few_calls_once_per_failing_group_and_can_be_switched_off():
    engine = UnlistedEngine(bug="head0-only")
    same_group = [_case(("forward", "default", "half", "float32", r)) for r in ("near4096", "near256", "rows")]
    rep = run_cases(engine, same_group, RunOptions())
    assert [r.status for r in rep.results] == ["FAIL"] * 3
    probes = [r.diagnosis["probe"] for r in rep.results]
    assert rep.probe_groups == 1 and 1 <= rep.probe_calls <= MAX_PROBE_CALLS
    assert [p["reused"] for p in probes] == [False, True, True] and probes[0]["calls"] == rep.probe_calls
    assert any(f["probe"] and f["axis"] == "head" for f in probes[0]["findings"]), probes[0]
    off = run_cases(UnlistedEngine(bug="head0-only"), same_group, RunOptions(probe=False))
    assert off.probe_calls == 0 and all(r.diagnosis["probe"] is None for r in off.results)
    assert all(any(f["axis"] == "head" for f in r.diagnosis["findings"]) for r in off.results)


def test_state_is_found_by_a_second_identical_call_and_blocks_a_name():
    engine = UnlistedEngine(bug="position-counter")
    rep = run_cases(engine, [_case(("forward", "default", "half", "float32", "near4096"))] * 2, RunOptions())
    r = rep.results[1]
    assert r.status == "FAIL"
    assert any(f["axis"] == "state" and f["probe"] for f in r.diagnosis["findings"]), r.diagnosis["findings"]
    assert r.diagnosis["match"] is None and r.diagnosis["not_named"]["class"] == "positions:shifted"


def test_the_closest_guess_is_gone_and_a_mirrored_order_is_said():
    """The issue's example: a reversed frequency order was 'closest: rope_theta = 1.07 used instead of 10000'."""
    case = _case(("forward", "default", "half", "float32", "near4096"))
    (r,) = run_cases(UnlistedEngine(bug="freq-mirrored"), [case], RunOptions()).results
    d = r.diagnosis
    assert "closest" not in d["summary"] and "rope_theta" not in d["summary"] and d["match"] is None
    assert "mirrored" in d["summary"] and "docs/spec.md section 3" in d["summary"]


def test_xfail_turns_imprecise_into_xfail_and_fail_imprecise_fails_the_run():
    case = _case(("forward", "default", "half", "float32", "near4096"))
    rep = run_cases(UnlistedEngine(bug="ggml-theta-scale"), [case],
                    RunOptions(xfail=parse_xfail(f"{case.id}  ggml frequencies (theta_scale power)")))
    assert rep.results[0].status == "XFAIL" and rep.ok and not rep.stale_xfails
    strict = run_cases(UnlistedEngine(bug="ggml-theta-scale"), [case], RunOptions(fail_imprecise=True))
    assert strict.results[0].status == "IMPRECISE" and not strict.ok


def _write_engine(tmp_path, bug: str) -> str:
    here = str(Path(__file__).parent)
    name = "eng_" + bug.replace("-", "_")
    (tmp_path / f"{name}.py").write_text(f"import sys\nsys.path.insert(0, {here!r})\nfrom unlisted_bug_engines import UnlistedEngine\n\n"
                                     f"def make():\n    return UnlistedEngine(bug={bug!r})\n")
    return f"{tmp_path / name}.py:make"


def test_cli_exit_codes_json_findings_and_no_probe(tmp_path, capsys):
    sel = _write_engine(tmp_path, "ggml-theta-scale")
    flt = "forward/default/half/float32/b2-s16-h2-d64/from4089"
    assert main(["check", "--backend", sel, "--generated-only", "--filter", flt, "-q", "--json", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert "IMPRECISE" in out and "OK with 1 IMPRECISE" in out
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["summary"]["counts"]["IMPRECISE"] == 1 and doc["summary"]["exit_code"] == 0
    assert doc["verdict"]["imprecise"]["mechanisms"] == {"frequency-drift": 1}
    assert main(["check", "--backend", sel, "--generated-only", "--filter", flt, "-q", "--fail-imprecise"]) == 1
    capsys.readouterr()
    bug = _write_engine(tmp_path, "tokens-reversed")
    assert main(["check", "--backend", bug, "--generated-only", "--filter", flt, "-q", "--no-probe",
                 "--json", str(tmp_path / "b.json")]) == 1
    capsys.readouterr()
    doc = json.loads((tmp_path / "b.json").read_text())
    (res,) = [r for r in doc["results"] if r["status"] == "FAIL"]
    f = res["diagnosis"]["findings"][0]
    assert set(f) == {"axis", "pattern", "words", "where", "measured", "expected", "section", "probe"}
    assert f["axis"] == "token" and f["pattern"] == "tokens-reversed" and f["measured"]["columns"][-1] == "effective"
    assert res["diagnosis"]["probe"] is None and doc["summary"]["probe"] == {"calls": 0, "groups": 0}
    assert doc["verdict"]["measured"][0]["pattern"] == "tokens-reversed"


def test_file_protocol_outputs_get_the_data_only_diagnosis(tmp_path, capsys):
    from conformance.cli.exchange import case_folder

    assert main(["golden", "export", "--filter", "forward/default/half/float32", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    index = json.loads((tmp_path / "export.json").read_text())
    from judge_cases import smoke_cases

    by_id = {c.id: c for c in smoke_cases()}
    engine = UnlistedEngine(bug="cos-sin-swapped")
    for cid in index["cases"]:
        c = by_id[cid]
        y = engine.forward(c.input_as("x"), c.arrays["positions"], c.spec, cu_seqlens=c.arrays.get("cu_seqlens"))
        np.save(tmp_path / case_folder(cid) / "out_y.npy", np.asarray(y, dtype=np.float32))
    assert main(["check", "--outputs", str(tmp_path), "--json", str(tmp_path / "r.json"), "-q"]) == 1
    capsys.readouterr()
    doc = json.loads((tmp_path / "r.json").read_text())
    fails = [r for r in doc["results"] if r["status"] == "FAIL"]
    assert fails and all(r["diagnosis"]["probe"] is None for r in fails)
    assert all(any(f["pattern"] == "complement" for f in r["diagnosis"]["findings"]) for r in fails)


def test_assert_rope_conforms_warns_on_imprecise_and_fails_when_asked():
    from conformance.assertions import assert_rope_conforms

    case = _case(("forward", "default", "half", "float32", "near4096"))
    with pytest.warns(UserWarning, match="IMPRECISE"):
        assert_rope_conforms(UnlistedEngine(bug="ggml-theta-scale"), cases=[case])
    with pytest.raises(AssertionError, match="frequency-drift"):
        assert_rope_conforms(UnlistedEngine(bug="ggml-theta-scale"), cases=[case], fail_imprecise=True, probe=False)


def test_probing_goes_through_the_isolated_worker(tmp_path, capsys):
    sel = _write_engine(tmp_path, "head0-only")
    assert main(["check", "--backend", sel, "--isolate", "--goldens-only", "--filter", "forward/default/half/float32/b2-s16-h2-d64/near-2p31",
                 "-q", "--json", str(tmp_path / "i.json")]) == 1
    capsys.readouterr()
    doc = json.loads((tmp_path / "i.json").read_text())
    res = next(r for r in doc["results"] if r["status"] == "FAIL")
    probe = res["diagnosis"]["probe"]
    assert 1 <= probe["calls"] <= MAX_PROBE_CALLS and not probe["errors"] and doc["summary"]["probe"]["calls"] == probe["calls"]
    assert any(f["axis"] == "head" and f["probe"] for f in probe["findings"])


pytest_plugins = ["pytester"]


def test_pytest_plugin_warns_on_imprecise_and_fails_with_the_option(pytester):
    from judge_cases import materialize_subset, write_golden_dir

    golden = str(write_golden_dir(pytester.path / "golden", materialize_subset("forward/default/half/float32/*near-2p31")))
    here = str(Path(__file__).parent)
    pytester.makepyfile(ggmlmod=f"import sys\nsys.path.insert(0, {here!r})\nfrom unlisted_bug_engines import UnlistedEngine\n"
                                f"def make():\n    return UnlistedEngine(bug='ggml-theta-scale')\n")
    from importlib.metadata import entry_points

    installed = any(ep.value == "conformance.pytest_plugin" for ep in entry_points(group="pytest11"))
    args = [*([] if installed else ["-p", "conformance.pytest_plugin"]), "--rope-backend", "ggmlmod:make", "--rope-golden", golden,
            "--rope-goldens-only", "-p", "no:cacheprovider"]
    res = pytester.runpytest(*args)
    outcomes = res.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("warnings", 0) >= 1, outcomes
    res.stdout.fnmatch_lines(["*RopeImpreciseWarning*"])
    strict = pytester.runpytest(*args, "--rope-fail-imprecise")
    assert strict.parseoutcomes().get("failed", 0) >= 1
    strict.stdout.fnmatch_lines(["*frequency-drift*"])


def test_an_angle_error_growing_with_the_angle_is_imprecise_or_said_to_be_ambiguous():
    """cos/sin with a 20 u x phi angle error (the model allows 8 u): IMPRECISE (angle-growth) wherever no integer
    position offset could give the same output; near 2^20 (an offset of 1 would) and near 2^31 (a shift of ~2700
    positions fits better than the frequency drift the mechanisms try first), neither is named."""
    specs = [("forward", "default", "half", "float32", "near4096"), ("forward", "default", "half", "float32", "rows"),
             ("forward", "default", "half", "float32", "near2p20"), ("forward", "default", "half", "float64", "top2p31")]
    rep = run_cases(UnlistedEngine(bug="fast-sincos"), [_case(s) for s in specs], RunOptions(probe=False))
    first, second, *far = rep.results
    for r in (first, second):
        assert r.status == "IMPRECISE" and r.diagnosis["precision"]["mechanism"] == "angle-growth"
        assert 15 < r.diagnosis["precision"]["measured"]["units"] < 25
        assert any(p.startswith("--tol c_ang=") for p in r.diagnosis["precision"]["passes_with"])
    for r in far:
        assert r.status in ("FAIL", "IMPRECISE") and r.diagnosis["match"] is None, r.id
        if r.status == "FAIL":
            assert "one of" in r.diagnosis["summary"] and "angle-growth" in r.diagnosis["summary"]


def test_a_group_probe_also_unnames_a_decoy_that_fits_clearly_better_than_a_precision_mechanism():
    """Positions near 2^31 with a counter ~4900 positions on: a frequency drift is within its bound, a position shift
    clearly better. The group's probe (a first case near 4096, where a repeated call differs) found state: the FAIL
    near 2^31 does not name the shift either."""
    engine = UnlistedEngine(bug="position-counter")
    engine.state["counter"] = 4500  # ~4900 at the case near 2^31: more than an angle growth within its bound gives
    cases = [_case(("forward", "default", "half", "float64", s)) for s in ("near4096", "top2p31")]
    first, far = run_cases(engine, cases, RunOptions()).results
    assert far.status == "FAIL" and far.diagnosis["probe"]["reused"], far.diagnosis["probe"]
    assert any(f["axis"] == "state" and f["probe"] for f in far.diagnosis["findings"]), far.diagnosis["findings"]
    assert far.diagnosis["match"] is None


def test_position_matching_is_bounded_in_memory_and_blocks_agree(monkeypatch):
    """Matching every (token, head) of a 4097-token case against its 4097 positions once took
    [U, C, k] arrays at once (6.8 GB for 17 pairs: a failing default run was killed for memory).
    Blocks give the same indices as one pass; past the work limit a spaced subset is matched."""
    import tracemalloc

    from conformance.diagnose import effective
    from roperef.frequencies import inv_freq
    from roperef.spec import RopeSpec

    w = np.asarray(inv_freq(RopeSpec(head_dim=34, theta=10000.0), 4097)[0], dtype=np.float64)
    axes = np.zeros(w.size, dtype=np.int64)
    pos = np.arange(4093, 4093 + 4097, dtype=np.float64)
    psi = effective.wrap(pos[:, None] * w[None, :] * 1.0000001)
    tol = np.full_like(psi, 1e-3)
    small = slice(0, 300)
    one_pass = effective.match_positions(psi[small], tol[small], w, axes, 1, pos[:400])
    monkeypatch.setattr(effective, "MATCH_BLOCK_ELEMENTS", 7 * 400 * w.size)
    assert (effective.match_positions(psi[small], tol[small], w, axes, 1, pos[:400]) == one_pass).all()
    assert (one_pass[:, 0] == np.arange(300)).all()
    monkeypatch.undo()
    tracemalloc.start()
    out = effective.match_positions(psi, tol, w, axes, 1, pos)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 400 * 2**20, peak
    matched = np.nonzero(out[:, 0] >= 0)[0]
    assert matched.size > 100 and (out[matched, 0] == matched).all()  # never a wrong position
