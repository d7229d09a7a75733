"""The runner: every way a backend can misbehave is a result, and the run goes on."""

from __future__ import annotations

import pytest

import runner_backends as rb
from conformance.backends.numpy_backend import NumpyBackend
from conformance.judge.runner import RunOptions, run_cases
from conformance.judge.xfail import load_xfail, parse_xfail
from judge_cases import forward_case
from roperef.spec import RopeSpec


def _cases(n=2):
    return [forward_case(RopeSpec(head_dim=16), [[1, 2, 3]], "float32", case_id=f"forward/t/half/float32/c{i}", seed=i) for i in range(n)]


@pytest.mark.parametrize(
    "backend, status, needle",
    [(rb.Raises(), "ERROR", "raised RuntimeError: kernel launch failed"),
     (rb.NaNs(), "FAIL", "non-finite"),
     (rb.WrongShape(), "FAIL", "shape"),
     (rb.IntegerOutput(), "FAIL", "dtype int32"),
     (rb.InPlace(), "FAIL", "x modified in place")],
)
def test_misbehaviour_is_reported_and_the_run_goes_on(backend, status, needle):
    rep = run_cases(backend, _cases(2), RunOptions())
    assert [r.status for r in rep.results] == [status, status]
    assert needle in rep.results[0].message
    assert not rep.ok


def test_timeout_in_process():
    rep = run_cases(rb.Hangs(), _cases(1), RunOptions(timeout=0.5))
    assert rep.results[0].status == "ERROR" and "timed out" in rep.results[0].message


def test_isolate_reports_segfault_and_hang_and_goes_on():
    sel = "runner_backends:Segfaults"
    rep = run_cases(rb.Segfaults(), _cases(2), RunOptions(isolate=True, timeout=60), selector=sel)
    assert [r.status for r in rep.results] == ["ERROR", "ERROR"]
    assert "SIGSEGV" in rep.results[0].message
    rep = run_cases(rb.Hangs(), _cases(1), RunOptions(isolate=True, timeout=3), selector="runner_backends:Hangs")
    assert rep.results[0].status == "ERROR" and "killed" in rep.results[0].message


def test_isolated_correct_backend_passes():
    rep = run_cases(NumpyBackend(), _cases(2), RunOptions(isolate=True, jobs=2), selector="numpy")
    assert [r.status for r in rep.results] == ["PASS", "PASS"]


def test_not_supported_and_stage_order():
    from conformance.backends.base import Capabilities

    b = NumpyBackend(capabilities=Capabilities(stages=frozenset({"forward"}), dtypes=frozenset({"float64"})))
    rep = run_cases(b, _cases(1))
    assert rep.results[0].status == "NOT_SUPPORTED" and "dtype float32" in rep.results[0].message
    assert rep.ok


def test_xfail_statuses_and_stale_entries(tmp_path):
    xf = parse_xfail("forward/t/*  known kernel bug\nforward/nothing/here  old entry\n")
    rep = run_cases(rb.Raises(), _cases(2), RunOptions(xfail=xf))
    assert [r.status for r in rep.results] == ["XFAIL", "XFAIL"] and rep.ok
    assert rep.results[0].xfail_reason == "known kernel bug"
    assert [e["pattern"] for e in rep.stale_xfails] == ["forward/nothing/here"]
    rep = run_cases(NumpyBackend(), _cases(2), RunOptions(xfail=xf))
    assert [r.status for r in rep.results] == ["XPASS", "XPASS"]
    assert {e["why"].split()[0] for e in rep.stale_xfails} == {"all", "matches"}


@pytest.mark.parametrize("text", ["forward/t/c0\n", "   # only a comment\nforward/x   #   \n"])
def test_malformed_xfail_needs_reasons(tmp_path, text):
    f = tmp_path / "xf.txt"
    f.write_text(text)
    with pytest.raises(ValueError, match="needs a pattern and a reason"):
        load_xfail(f)
    with pytest.raises(ValueError, match="file not found"):
        load_xfail(tmp_path / "missing.txt")


def test_jobs_give_the_same_results():
    cases = _cases(6)
    one = run_cases(rb.NaNs(), cases, RunOptions(jobs=1))
    many = run_cases(rb.NaNs(), cases, RunOptions(jobs=3))
    assert [(r.id, r.status, r.message) for r in one.results] == [(r.id, r.status, r.message) for r in many.results]


def test_an_exception_inside_the_judge_is_blamed_on_roperef_not_on_the_backend(monkeypatch):
    import conformance.judge.runner as runner

    def broken_judge(*args, **kwargs):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(runner, "judge_case", broken_judge)
    rep = run_cases(NumpyBackend(), _cases(2), RunOptions())
    assert [r.status for r in rep.results] == ["ERROR", "ERROR"]  # the run goes on
    message = rep.results[0].message
    assert "internal error of the judge" in message and "planted" in message
    assert "forward raised" not in message
