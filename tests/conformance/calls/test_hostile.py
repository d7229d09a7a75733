"""Backends that attack the judge through what they hand back: results whose conversion exits,
interrupts or hangs, exception text that exits or repaints the terminal, supports() answers, the
spec and case they are handed, a pickle written onto the worker pipe. Each is that case's verdict,
reported; none takes the judge down, hangs it or changes what it judges."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import hostile_backends as hb
from conformance.calls.handoff import case_changes, handed_case, spec_changes
from conformance.calls.results import stage_outputs
from conformance.calls.stage_call import StageError
from conformance.calls.wire import Message, WireError, decode, encode
from conformance.judge.runner import RunOptions, run_cases
from conformance.untrusted_text import MAX_CHARS, clip, for_markdown, for_terminal, for_xml, markdown_code
from judge_cases import forward_case
from roperef.spec import RopeSpec


def _cases(n=2, dtype="float32"):
    return [forward_case(RopeSpec(head_dim=16), [[1, 2, 4095]], dtype, case_id=f"forward/t/half/{dtype}/c{i}", seed=i)
            for i in range(n)]


# ----------------------------------------------------------------------------- results and their conversion


@pytest.mark.parametrize("backend, needle", [
    (hb.ArrayExits(), "converting output y to a NumPy array raised SystemExit(0)"),
    (hb.ArrayInterrupts(), "converting output y to a NumPy array raised KeyboardInterrupt (raised by the backend"),
    (hb.StrExits(), "forward raised _ExitingText: <unprintable _ExitingText: __str__ raised SystemExit>"),
])
def test_backend_code_in_results_and_messages_is_the_cases_error(backend, needle):
    rep = run_cases(backend, _cases(2), RunOptions())
    assert [r.status for r in rep.results] == ["ERROR", "ERROR"]  # the run went on; the judge did not exit
    assert needle in rep.results[0].message
    assert not rep.interrupted


def test_a_conversion_that_never_returns_is_timed_out_and_abandoned():
    t0 = time.monotonic()
    rep = run_cases(hb.ArrayHangs(), _cases(3), RunOptions(timeout=0.3, max_consecutive_timeouts=2))
    assert [r.status for r in rep.results] == ["ERROR"] * 3
    assert rep.results[0].message.startswith("timed out after 0.3 s")
    assert time.monotonic() - t0 < 30


def test_outputs_are_owned_copies_of_plain_arrays():
    class Sub(np.ndarray):
        pass

    held = np.arange(4.0)
    out = stage_outputs("forward", held.view(Sub))
    assert type(out["y"]) is np.ndarray and not np.shares_memory(out["y"], held)
    with pytest.raises(StageError, match="must return a tuple"):
        stage_outputs("cos_sin", np.zeros(3))
    with pytest.raises(StageError, match="not an array of numbers"):
        stage_outputs("forward", np.array([object()]))


# ----------------------------------------------------------------------------- untrusted text


def test_messages_are_clipped_and_sanitised_everywhere(tmp_path):
    from conformance.report import formats as rep

    big = run_cases(hb.HugeMessage(), _cases(1), RunOptions())
    assert len(big.results[0].message) < MAX_CHARS + 200 and "[cut: 5000" in big.results[0].message
    report = run_cases(hb.AnsiMessage(), _cases(1), RunOptions())
    out = io.StringIO()
    rep.console(report, out)
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text and "\x00" not in text and "\\x1b[32mOK" in text
    rep.write_junit(report, tmp_path / "j.xml")
    import xml.etree.ElementTree as ET

    root = ET.parse(tmp_path / "j.xml").getroot()  # valid XML: it parses
    assert "\\x1b" in ET.tostring(root, encoding="unicode")
    rep.write_markdown(report, tmp_path / "r.md")
    md = (tmp_path / "r.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| ERROR"))
    assert "<b>" not in md and "&lt;b&gt;" in row and "\r" not in md
    assert row.count(" | ") == 4  # five cells: the message's pipes and CR split nothing


def test_the_sanitiser():
    assert for_terminal("a\x1b[31mb\r\nc\udcff") == "a\\x1b[31mb\\r\\nc\\xff"
    assert for_terminal("two\nlines", one_line=False) == "two\nlines"
    assert for_xml("a\x00b\ufffe") == "a\\x00b\\ufffe"
    assert for_markdown("a|b<i>\r\n`c`") == "a\\|b&lt;i&gt; \\`c\\`"
    assert markdown_code("x`y|z") == "`` x`y\\|z ``"
    assert clip("y" * 10, 4) == "yyyy... [cut: 10 characters in all]"


# ----------------------------------------------------------------------------- supports() and what the backend is handed


def test_numpy_true_from_supports_is_a_yes():
    rep = run_cases(hb.NumpyTrue(), _cases(2), RunOptions())
    assert [r.status for r in rep.results] == ["PASS", "PASS"]


def test_a_backend_that_mutates_the_spec_or_the_case_is_caught_and_cannot_change_the_verdict():
    cases = _cases(1)
    expected = cases[0].arrays["y"].copy()
    rep = run_cases(hb.MutatesSpec(), cases, RunOptions())
    assert rep.results[0].status == "FAIL" and "spec.theta modified in place" in rep.results[0].message
    assert cases[0].spec.theta == RopeSpec(head_dim=16).theta
    rep = run_cases(hb.MutatesCase(), cases, RunOptions())
    assert rep.results[0].status == "FAIL" and "supports() modified the case it was handed (arrays.y)" in rep.results[0].message
    assert np.array_equal(cases[0].arrays["y"], expected)  # the judge's expected values are untouched


def test_handoff_reports_every_change():
    case = _cases(1)[0]
    copy = handed_case(case)
    assert case_changes(case, copy) == [] and copy.arrays["x"] is not case.arrays["x"]
    object.__setattr__(copy.spec, "head_dim", 8)
    copy.arrays["positions"][0, 0] = 7
    assert case_changes(case, copy) == ["spec.head_dim", "arrays.positions"]
    assert spec_changes(case.spec, "not a spec") == ["spec"]


def test_process_state_changed_by_a_backend_is_restored_and_noted(tmp_path, monkeypatch):
    monkeypatch.setenv("ROPEREF_TEST_DIR", str(tmp_path))
    here = __import__("os").getcwd()
    stdout = sys.stdout
    rep = run_cases(hb.ChangesDir(), _cases(1), RunOptions())
    assert __import__("os").getcwd() == here
    assert any("changed the working directory" in n for n in rep.notes)
    rep = run_cases(hb.ReplacesStdout(), _cases(1), RunOptions())
    assert sys.stdout is stdout and any("replaced sys.stdout" in n for n in rep.notes)
    assert rep.results[0].status == "PASS"


# ----------------------------------------------------------------------------- worker processes


def test_worker_replies_are_never_unpickled():
    rep = run_cases(hb.PicklesOntoThePipe(), _cases(2), RunOptions(isolate=True, timeout=60),
                    selector="hostile_backends:PicklesOntoThePipe")
    # the judge is alive (an unpickled reply would have run os._exit(9) here) and says what it refused
    assert [r.status for r in rep.results] == ["ERROR", "ERROR"]
    assert "the backend process sent a reply the judge cannot read" in rep.results[0].message


def test_worker_results_in_every_dtype_cross_as_data():
    cases = _cases(1, "bfloat16") + _cases(1, "float64")
    here = run_cases(hb.ReturnsBfloat16(), cases, RunOptions())
    there = run_cases(hb.ReturnsBfloat16(), cases, RunOptions(isolate=True, timeout=60), selector="hostile_backends:ReturnsBfloat16")
    assert [r.status for r in there.results] == [r.status for r in here.results] == ["PASS", "PASS"]
    assert [r.metrics.max_abs_error for r in there.results] == [r.metrics.max_abs_error for r in here.results]


@pytest.mark.parametrize("arrays", [{"y": np.zeros(3)}, {"q/y": np.zeros(3), "v/y": np.zeros(3)}])
def test_a_forged_call_form_reply_is_a_malformed_result(monkeypatch, arrays):
    from conformance.calls.isolate import Worker

    worker = Worker("numpy", timeout=1.0)  # no process started: the reply is forged below
    monkeypatch.setattr(worker, "_request", lambda kind, case: Message(1, "stage", {"modified": [], "parts": ["q", "k"]}, arrays))
    with pytest.raises(StageError, match="malformed forward result .killed.: array names that are not part/output"):
        worker(_cases(1)[0])


def test_the_wire_format_refuses_what_is_not_its_own():
    data = encode(Message(3, "stage", {"modified": []}, {"y": np.arange(6.0).reshape(2, 3), "s": np.float64(2.0)}))
    back = decode(data)
    assert back.seq == 3 and back.arrays["y"].shape == (2, 3) and back.arrays["s"].shape == ()
    import pickle

    for bad, needle in [(pickle.dumps(("ok", 1)), "bad magic"), (data[:-8], "past the end"),
                        (data[:4] + b"\xff\xff\xff\x7f" + data[8:], "does not fit")]:
        with pytest.raises(WireError, match=needle):
            decode(bad)
    with pytest.raises(WireError, match="numbers only"):
        encode(Message(1, "stage", {}, {"y": np.array([object()])}))


def test_a_planner_stops_asking_a_hung_supports_after_three_time_outs():
    from conformance.calls.stage_call import MAX_SUPPORTS_TIMEOUTS, SupportsAsker

    asker = SupportsAsker(hb.SupportsHangs(), timeout=0.1)
    cases = _cases(MAX_SUPPORTS_TIMEOUTS + 2)
    t0 = time.monotonic()
    reasons = [asker.reason(c) for c in cases]
    asker.close()
    assert all(r.startswith("supports() timed out after 0.1 s") for r in reasons[:MAX_SUPPORTS_TIMEOUTS])
    assert all(r.startswith("not asked: supports() timed out on 3 calls in a row") for r in reasons[MAX_SUPPORTS_TIMEOUTS:])
    assert time.monotonic() - t0 < 5


# ----------------------------------------------------------------------------- the pytest plugin


pytest_plugins = ["pytester"]


def _plugin() -> list[str]:
    from importlib.metadata import entry_points

    installed = any(ep.value == "conformance.pytest_plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "conformance.pytest_plugin"]


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    from judge_cases import materialize_subset, write_golden_dir

    return str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset("forward/default/half/float64/*")))


@pytest.mark.parametrize("backend, needle", [("ArrayInterrupts", "raised KeyboardInterrupt (raised by the backend"),
                                             ("ArrayHangs", "timed out after 0.5 s")])
def test_the_pytest_plugin_runs_backend_code_under_the_same_limits(pytester, golden, backend, needle):
    """A backend's KeyboardInterrupt fails its items (the session goes on); a hang is cut by --rope-timeout."""
    t0 = time.monotonic()
    res = pytester.runpytest(*_plugin(), "--rope-backend", f"hostile_backends:{backend}", "--rope-golden", golden,
                             "--rope-goldens-only", "--rope-timeout", "0.5", "-p", "no:cacheprovider")
    n = len(__import__("json").loads((Path(golden) / "manifest.json").read_text())["cases"])
    res.assert_outcomes(failed=n)  # every item ran: none stopped the session
    assert needle in res.stdout.str()
    assert time.monotonic() - t0 < 60


@pytest.mark.parametrize("backend, status, needle", [
    (hb.ArrayExits(), "ERROR", "converting output y to a NumPy array raised SystemExit(0)"),
    (hb.MutatesSpec(), "FAIL", "spec.theta modified in place"),
    (hb.NumpyTrue(), "PASS", "budget"),
])
def test_calls_in_a_memory_layout_get_the_same_protection(backend, status, needle):
    import dataclasses

    from conformance.cases.form import CallForm

    cases = [dataclasses.replace(c, form=CallForm(layout="qkv")) for c in _cases(1, "float64")]
    rep = run_cases(backend, cases, RunOptions())
    assert rep.results[0].status == status and needle in rep.results[0].message
