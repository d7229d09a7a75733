"""Explore mode: draws stay inside the declared interface, are deterministic given the seed,
a wrong backend is found and shrunk to a small case with its diagnosis, a correct one never
FAILs, failures are saved as a golden set that replays, and bad flags are usage errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from cli_runs import run_check
from conformance.backends.base import BaseBackend, Capabilities
from conformance.backends.emulated import Float32Emulation
from conformance.backends.numba_backend import NumbaBackend
from conformance.cases.case import case_features
from conformance.explore.draw import build_case, declared_reason, draw_case
from conformance.explore.run import ExploreConfig, explore
from conformance.explore.shrink import candidates
from conformance.explore.specs import Interface
from conformance.golden.store import load_golden
from conformance.vocabulary import FEATURES, STAGES
from wrong_backends import Buggy
from wrong_backends_long import CorrectOffsetOnly, OffsetOnlyBf16Positions


def _draws(backend, seeds, dtypes=()):
    iface = Interface.of(backend, dtypes)
    return iface, [draw_case(np.random.default_rng(s), iface, s) for s in seeds]


def _same_draw(a, b) -> bool:
    arrays = ("positions", "tensor", "cu_seqlens")
    return (a.stage, a.spec, a.dtype, a.regime, a.seq_len) == (b.stage, b.spec, b.dtype, b.regime, b.seq_len) and all(
        (getattr(a, k) is None and getattr(b, k) is None) or np.array_equal(getattr(a, k), getattr(b, k)) for k in arrays)


# ----------------------------------------------------------------------------- drawing


def test_same_seed_same_cases_and_other_seeds_differ():
    _, first = _draws(NumbaBackend(), range(40))
    _, again = _draws(NumbaBackend(), range(40))
    assert all(_same_draw(a, b) for a, b in zip(first, again))
    ids = [build_case(d).id for d in first]
    assert len(set(ids)) == len(ids)  # the seed is in the id: 40 different cases
    assert [build_case(d).id for d in again] == ids
    one = explore(Buggy(bug="positions-bf16"), ExploreConfig(8, 5))
    two = explore(Buggy(bug="positions-bf16"), ExploreConfig(8, 5))
    assert [(r.id, r.status) for r in one.report.results] == [(r.id, r.status) for r in two.report.results]


def test_case_i_of_seed_s_is_case_0_of_seed_s_plus_i():
    """The one-line repro (--explore 1 --seed S+i) replays exactly case i of the run."""
    run = explore(NumbaBackend(), ExploreConfig(6, 1000))
    for i, r in enumerate(run.report.results):
        assert explore(NumbaBackend(), ExploreConfig(1, 1000 + i)).report.results[0].id == r.id


def test_draws_cover_the_full_interface():
    iface, draws = _draws(NumbaBackend(), range(600))
    cases = [build_case(d) for d in draws]
    assert {c.stage for c in cases} == set(STAGES)
    assert {c.spec.scaling.type for c in cases} == set(iface.scaling_types)
    assert {c.spec.pairing for c in cases} == set(iface.pairings)
    assert {c.dtype for c in cases} == set(iface.dtypes)
    assert set().union(*(case_features(c) for c in cases)) == set(FEATURES)
    pos = [int(np.abs(c.positions).max()) for c in cases if c.positions is not None and c.positions.size]
    assert max(pos) >= 2**31 - 64 and sum(p >= 2**20 for p in pos) >= 50
    assert all(declared_reason(iface, c) is None for c in cases)


def test_draws_respect_a_narrow_interface():
    backend = OffsetOnlyBf16Positions()
    iface, draws = _draws(backend, range(200))
    assert iface.stages == ("forward",) and iface.features == frozenset()
    for d in draws:
        case = build_case(d)
        assert declared_reason(iface, case) is None
        assert case.stage == "forward" and case.spec.pairing == "adjacent" and case.dtype in ("bfloat16", "float32")
        assert case_features(case) == frozenset()  # contiguous rows shared by the batch, no window, no varlen
        assert backend.supports(case) is True


def test_dtype_flag_restricts_the_draw():
    _, draws = _draws(NumbaBackend(), range(60), dtypes=("bfloat16",))
    assert {d.dtype for d in draws} == {"bfloat16"}


# ----------------------------------------------------------------------------- judging and shrinking


def test_correct_backends_never_fail():
    for backend in (NumbaBackend(), Float32Emulation(), Float32Emulation(tables="input"), CorrectOffsetOnly()):
        run = explore(backend, ExploreConfig(60, 77))
        counts = run.report.counts()
        assert counts["PASS"] == 60, (backend.name, counts, [r.message for r in run.report.results if r.status != "PASS"])
        assert not run.findings and not run.declined


@pytest.mark.parametrize("bug, decoys", [
    ("positions-bf16", {"positions:bf16"}),
    ("pairing-swapped", {"pairing:other"}),
    ("scaling-dropped", {"scaling:dropped"}),
])
def test_a_wrong_backend_is_found_shrunk_and_named(bug, decoys):
    run = explore(Buggy(bug=bug), ExploreConfig(25, 11))
    assert run.findings, run.report.counts()
    for f in run.findings:
        original_size = build_case(f.draw).arrays  # the minimal case's inputs
        assert f.minimal.status == "FAIL" and f.minimal is run.report.results[f.index]
        assert f.case.arrays.keys() == original_size.keys()
        if f.steps:
            assert f.minimal.id.endswith("-min") and f"drawn as {f.original.id}" in f.minimal.message
        tensor = f.case.arrays.get("x", f.case.arrays.get("grad"))
        orig = f.original
        assert orig.metrics.n_elements >= f.minimal.metrics.n_elements
        if tensor is not None and f.case.positions is not None and f.case.spec.n_axes == 1:
            assert np.prod(tensor.shape[:-1]) <= 2, f.case.id  # one or two tokens (a second keeps the diagnosis), one head
    named = [f for f in run.findings if (f.minimal.diagnosis or {}).get("match") in decoys]
    assert len(named) >= len(run.findings) * 3 // 4, [(f.minimal.id, f.minimal.diagnosis) for f in run.findings]


def test_positions_bf16_shrinks_to_one_small_odd_position():
    run = explore(OffsetOnlyBf16Positions(), ExploreConfig(20, 3))
    assert len(run.findings) >= 2
    for f in run.findings:
        assert f.case.spec.head_dim <= 4 and f.case.arrays["x"].shape[:3] == (1, 1, 1)  # one token, one head
        (p,), = f.case.positions
        assert 256 < p < 2**12, p  # bf16 holds every integer up to 256: the smallest failing positions are just above
        assert f.minimal.diagnosis["match"] in ("positions:bf16", "angles:bf16", "positions:shifted")


def test_candidates_are_strictly_smaller():
    _, draws = _draws(NumbaBackend(), range(80))
    for d in draws:
        size = (0 if d.tensor is None else d.tensor.size, 0 if d.positions is None else d.positions.size)
        mag = 0 if d.positions is None else int(np.abs(d.positions).sum())
        for c in candidates(d, None, ("half",), ("default",)):
            csize = (0 if c.tensor is None else c.tensor.size, 0 if c.positions is None else c.positions.size)
            cmag = 0 if c.positions is None else int(np.abs(c.positions).sum())
            simpler_spec = c.spec != d.spec or c.seq_len != d.seq_len
            assert csize < size or cmag < mag or simpler_spec or csize[0] < size[0], (d, c)


@dataclass
class Declining(Float32Emulation):
    """Declares every pairing but declines adjacent ones in supports() (an inconsistent declaration)."""

    name: str = "declines-adjacent"

    def supports(self, case):
        base = super().supports(case)
        return "adjacent pairing is not implemented after all" if base is True and case.spec.pairing != "half" else base


def test_declined_draws_are_counted_and_drawn_again():
    run = explore(Declining(), ExploreConfig(30, 2))
    assert run.declined and set(run.declined) == {"adjacent pairing is not implemented after all"}
    assert run.report.counts()["PASS"] == 30
    assert run.info()["explore"]["declined_draws"] == dict(run.declined)


@dataclass
class DeclinesAll(BaseBackend):
    name: str = "declines-all"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(stages=frozenset({"forward"})))

    def supports(self, case):
        return "nothing works today"

    def forward(self, x, positions, spec, cu_seqlens=None):
        raise AssertionError("never called")


def test_a_backend_declining_everything_is_not_supported():
    run = explore(DeclinesAll(), ExploreConfig(3, 0))
    assert run.report.counts()["NOT_SUPPORTED"] == 3
    assert all("declined 25 draws" in r.message and "nothing works today" in r.message for r in run.report.results)


# ----------------------------------------------------------------------------- the command


@pytest.mark.parametrize("argv, message", [
    (["--explore", "0"], "--explore=0: must be an integer in [1, 100000]"),
    (["--explore", "-5"], "--explore=-5: must be an integer in [1, 100000]"),
    (["--explore", "2.5"], "--explore='2.5': must be an integer in [1, 100000]"),
    (["--explore", "ten"], "--explore='ten': must be an integer in [1, 100000]"),
    (["--explore", "100001"], "--explore=100001: must be an integer in [1, 100000]"),
    (["--explore", "3", "--seed", "-1"], "--seed=-1: must be an integer in [0, 9223372036854775807]"),
    (["--explore", "3", "--seed", "0x10"], "--seed='0x10': must be an integer"),
    (["--explore", "3", "--seed", str(2**63 - 2)], "seed + count - 1 must be <= 2^63 - 1"),
    (["--seed", "4"], "--seed='4': needs --explore or --long-context"),
    (["--save-failures", "d"], "--save-failures='d': needs --explore"),
    (["--explore", "3", "--filter", "forward"], "cannot be combined with --explore"),
    (["--explore", "3", "--jobs", "2"], "--jobs=2: cannot be combined with --explore"),
])
def test_bad_explore_flags_are_usage_errors(capsys, argv, message):
    code, out, err = run_check(capsys, *argv)
    assert code == 2 and message in err and not out


def test_save_failures_refuses_a_file(capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run_check(capsys, "--explore", "2", "--seed", "1", "--save-failures", str(f))
    assert code == 2 and "exists and is not a directory" in err


def test_cli_correct_backend_exit_0(capsys, tmp_path):
    code, out, err = run_check(capsys, "--backend", "numba", "--explore", "15", "--seed", "9", "--json", str(tmp_path / "r.json"))
    assert code == 0 and "explore seed 9: OK: 15 cases (15 PASS)" in out, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["golden"]["source"] == "explore" and doc["golden"]["explore"]["seed"] == 9
    assert doc["summary"]["cases"] == 15 and all(r["repro"].endswith(f"--explore 1 --seed {9 + i}")
                                                 for i, r in enumerate(doc["results"]))


def test_cli_random_seed_is_printed(capsys):
    code, out, err = run_check(capsys, "--explore", "2", "-q")
    assert code == 0 and "(random; pass --seed to repeat)" in out, err


def test_cli_wrong_backend_found_shrunk_saved_and_replayed(capsys, tmp_path):
    saved = tmp_path / "regressions"
    backend = "wrong_backends_long:OffsetOnlyBf16Positions"
    code, out, _ = run_check(capsys, "--backend", backend, "--explore", "20", "--seed", "3", "--save-failures", str(saved),
                        "--json", str(tmp_path / "r.json"))
    assert code == 1
    assert "minimal failing case 1/" in out and "positions rounded to bfloat16" in out
    assert f"repro     roperef check --backend {backend} --explore 1 --seed" in out
    assert f"replay    roperef check --backend {backend} --golden {saved} --goldens-only --filter forward/explore-" in out
    findings = json.loads((tmp_path / "r.json").read_text())["golden"]["explore"]["findings"]
    loaded = load_golden(saved)
    assert sorted(c.id for c in loaded.cases) == sorted(f["minimal_id"] for f in findings)
    code, out, _ = run_check(capsys, "--backend", backend, "--golden", str(saved), "--goldens-only")
    assert code == 1 and f"{len(findings)} FAIL" in out
    code, out, _ = run_check(capsys, "--backend", "numba", "--golden", str(saved), "--goldens-only")
    assert code == 0
    # a second run merges into the same set
    code, _, _ = run_check(capsys, "--backend", backend, "--explore", "10", "--seed", "40", "--save-failures", str(saved), "-q")
    assert len(load_golden(saved).cases) >= len(findings)


def test_cli_nothing_to_draw_exits_3(capsys):
    code, out, err = run_check(capsys, "--backend", "numba", "--explore", "3", "--seed", "0", "--dtype", "float16",
                          "--backend", "wrong_backends_long:OffsetOnlyBf16Positions")
    assert code == 3 and "nothing was judged" in err and "no dtype" in err


def test_cli_everything_declined_exits_3(capsys, monkeypatch):
    import sys
    import types

    mod = types.ModuleType("declining_mod")
    mod.DeclinesAll = DeclinesAll
    monkeypatch.setitem(sys.modules, "declining_mod", mod)
    code, _, err = run_check(capsys, "--backend", "declining_mod:DeclinesAll", "--explore", "2", "--seed", "0")
    assert code == 3 and "nothing was judged" in err


@dataclass
class MissingLibrary(Float32Emulation):
    name: str = "needs-libfoo"

    def library_reason(self):
        return "libfoo not installed"


def test_cli_missing_library_draws_nothing_and_exits_3(capsys, monkeypatch):
    import sys
    import types

    mod = types.ModuleType("missing_lib_mod")
    mod.MissingLibrary = MissingLibrary
    monkeypatch.setitem(sys.modules, "missing_lib_mod", mod)
    code, out, err = run_check(capsys, "--backend", "missing_lib_mod:MissingLibrary", "--explore", "50", "--seed", "0")
    assert code == 3 and "nothing to draw for missing_lib_mod:MissingLibrary: libfoo not installed" in err and not out
