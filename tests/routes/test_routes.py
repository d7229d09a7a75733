"""Every route judges what ``roperef check`` judges (issue 23): plain, ``--isolate``, ``--timeout``, ``--jobs``,
``assert_rope_conforms`` and the pytest plugin give the same case ids, generated cases included; a route
that judged nothing fails; a built-in backend's shipped xfail list applies by default; declines through
``case_reason`` and the ``max_position`` / ``shared_tables`` capabilities are plain NOT_SUPPORTED."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from cli_runs import run_check
from conformance.assertions import assert_rope_conforms
from conformance.backends.base import BaseBackend, Capabilities
from conformance.calls.declared import INCONSISTENT
from conformance.generated.plan import plan_cases
from conformance.judge.runner import RunOptions, run_cases
from judge_cases import materialize_subset, write_golden_dir
from roperef import reference
from roperef.spec import RopeSpec

pytest_plugins = ["pytester"]

FILTER = "forward/default/"  # goldens and generated cases of the default spec: cheap, and generated ones among them


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    directory = str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset("forward/default/half/*")))
    # the generated cases are materialized once here, before pytester's in-process runs (which drop the
    # modules they import: Numba's registries among them)
    assert_rope_conforms("emulated-fp32", FILTER, golden=directory)
    return directory


def _ids(path):
    return sorted(r["id"] for r in json.loads(path.read_text())["results"])


def test_every_route_judges_the_same_case_ids(golden, capsys, tmp_path, pytester):
    routes = {"plain": [], "isolate": ["--isolate"], "timeout": ["--timeout", "30"], "jobs": ["--jobs", "2"]}
    ids = {}
    for name, extra in routes.items():
        report = tmp_path / f"{name}.json"
        code, out, err = run_check(capsys, "--backend", "emulated-fp32", "--golden", golden, "--filter", FILTER,
                                   "--json", str(report), "-q", *extra)
        assert code == 0, (name, out, err)
        ids[name] = _ids(report)
    generated = [i for i in ids["plain"] if "/from" in i or "/rows" in i]
    assert len(generated) >= 5 and len(ids["plain"]) > len(generated)  # goldens and generated cases
    ids["assert_rope_conforms"] = sorted(r.id for r in assert_rope_conforms("emulated-fp32", FILTER, golden=golden).results)
    plugin = ["-p", "conformance.pytest_plugin"] if not _plugin_installed() else []
    res = pytester.runpytest(*plugin, "--rope-backend", "emulated-fp32", "--rope-golden", golden, "--rope-filter", FILTER,
                             "-p", "no:cacheprovider", "--collect-only", "-q")
    ids["pytest plugin"] = sorted(line.split("roperef::", 1)[1] for line in res.stdout.lines if "roperef::" in line)
    for name, got in ids.items():
        assert got == ids["plain"], (name, sorted(set(ids["plain"]) ^ set(got))[:5])


def _plugin_installed() -> bool:
    from importlib.metadata import entry_points

    return any(ep.value == "conformance.pytest_plugin" for ep in entry_points(group="pytest11"))


class Adjacent(BaseBackend):
    """Declares only adjacent pairing: on a golden set of half cases it judges nothing."""

    name = "adjacent-only"
    capabilities = Capabilities(stages=frozenset({"forward"}), pairings=frozenset({"adjacent"}))

    def forward(self, x, positions, spec, cu_seqlens=None):
        return reference.forward(x, positions, spec, cu_seqlens)


def test_a_route_that_judged_nothing_fails(golden, capsys, pytester):
    code, _, err = run_check(capsys, "--backend", "test_routes:Adjacent", "--golden", golden, "--goldens-only")
    assert code == 3 and "nothing judged" in err
    with pytest.raises(AssertionError, match=r"backend adjacent-only: nothing judged: 7 cases, all NOT_SUPPORTED"):
        assert_rope_conforms(Adjacent(), golden=golden, generated=False)
    pytester.syspathinsert(str(__import__("pathlib").Path(__file__).parent))
    plugin = ["-p", "conformance.pytest_plugin"] if not _plugin_installed() else []
    res = pytester.runpytest(*plugin, "--rope-backend", "test_routes:Adjacent", "--rope-golden", golden,
                             "--rope-goldens-only", "-p", "no:cacheprovider")
    res.assert_outcomes(skipped=7)
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["*roperef: nothing judged: 7 conformance item(s) of backend adjacent-only, all NOT_SUPPORTED*"])


def test_the_shipped_list_applies_by_default_and_no_xfail_turns_it_off(golden, capsys, tmp_path, monkeypatch):
    import conformance.judge.xfail as xf

    shipped = tmp_path / "xfail"
    shipped.mkdir()
    (shipped / "numpy.txt").write_text("forward/default/half/float32/*  a reason written for this test\n")
    monkeypatch.setattr(xf, "XFAIL_DIR", shipped)
    shown = "/".join(("conformance", "backends", "xfail", "numpy.txt"))  # as reported; the file itself lives in tmp_path
    code, out, _ = run_check(capsys, "--backend", "numpy", "--golden", golden, "--goldens-only", "--json", str(tmp_path / "a.json"))
    doc = json.loads((tmp_path / "a.json").read_text())
    assert code == 0 and doc["summary"]["counts"]["XPASS"] >= 1  # numpy passes: the entries show as XPASS
    assert f"expected failures: {shown} (shipped with the numpy adapter" in out
    assert doc["xfail"].startswith(shown)
    assert [e["why"] for e in doc["stale_xfails"]] == [f"all {doc['summary']['counts']['XPASS']} matching case(s) pass"]
    code, out, _ = run_check(capsys, "--backend", "numpy", "--golden", golden, "--goldens-only", "--no-xfail", "--json", str(tmp_path / "b.json"))
    doc = json.loads((tmp_path / "b.json").read_text())
    assert code == 0 and doc["summary"]["counts"]["XPASS"] == 0 and doc["xfail"] is None and "expected failures" not in out
    report = assert_rope_conforms("numpy", golden=golden, generated=False)
    assert report.xfail_source and report.counts()["XPASS"] >= 1
    assert assert_rope_conforms("numpy", golden=golden, generated=False, xfail=False).counts()["XPASS"] == 0
    from conformance.backends.numpy_backend import NumpyBackend

    @dataclass
    class CalledNumpy(NumpyBackend):  # a user class under a built-in name is not the built-in backend
        pass

    assert xf.builtin_name(CalledNumpy()) is None and xf.builtin_name(NumpyBackend()) == "numpy"


@dataclass
class Limited(BaseBackend):
    """Declares max_position and shared_tables, and declines float16 in case_reason."""

    name: str = "limited"
    capabilities: Capabilities = None  # type: ignore[assignment]

    def __post_init__(self):
        self.capabilities = Capabilities(stages=frozenset({"forward", "apply"}), pairings=frozenset({"half"}),
                                         angle_dtype="float32", table_dtype="float32", max_position=4095, shared_tables=True)
        super().__post_init__()

    def case_reason(self, case):
        return "float16 is declined by case_reason" if case.dtype == "float16" else None

    def forward(self, x, positions, spec, cu_seqlens=None):
        return reference.forward(x, positions, spec, cu_seqlens)

    def apply(self, x, cos, sin, spec):
        return reference.apply(x, cos, sin, spec)


def test_max_position_shared_tables_and_case_reason_are_declines_not_inconsistencies():
    eng = Limited()
    plan = plan_cases(eng)
    for g in plan.cases:
        if g.light.positions is not None and g.light.positions.size:  # (an empty case has no position)
            assert int(g.light.positions.max()) <= 4095, g.id
        if g.stage == "apply":
            assert not (g.light.arrays["cos"] != g.light.arrays["cos"][:1]).any(), g.id  # one table for the batch
    assert not any(g.dtype == "float16" for g in plan.cases)  # declined while planned ...
    assert plan.refused and all("float16" in reason for reason in plan.refused)  # ... and counted
    cases = materialize_subset("forward/default/half/*")
    report = run_cases(eng, cases, RunOptions(diagnose=False))
    declined = [r for r in report.results if r.status == "NOT_SUPPORTED"]
    assert declined and not [r.message for r in declined if r.message.startswith(INCONSISTENT)]
    messages = {r.message for r in declined}
    from _adapter_checks import make_case

    low = make_case(RopeSpec(64), "float16", positions=np.array([[1, 2, 3], [7, 8, 9]]))
    (res,) = run_cases(eng, [low], RunOptions(diagnose=False)).results
    assert (res.status, res.message) == ("NOT_SUPPORTED", "float16 is declined by case_reason")
    assert any(m.startswith("position ") and m.endswith("beyond the largest it takes (4095)") for m in messages), messages
    rows = np.array([[1, 2, 3], [7, 8, 9]])
    from conformance.cases.case import GoldenCase

    spec = RopeSpec(8)
    x = np.random.default_rng(0).standard_normal((2, 3, 1, 8))
    cos, sin = reference.cos_sin(spec, rows)
    apply_case = GoldenCase("apply/test/half/float32", "apply", "apply", spec, "float32", "smoke", (),
                            {"x": x, "cos": cos, "sin": sin, "y": reference.apply(x, cos, sin, spec)})
    assert "differ between batch rows" in eng.supports(apply_case)
