"""Backends that exit, interrupt, hang, crash or return garbage: each is that case's verdict, never the judge's end.

Also the user's Ctrl-C (SIGINT in a subprocess): the run stops, writes its partial report marked
interrupted and exits 130 without a traceback. Subprocess waits use generous limits that only
detect hangs; how fast a run stops is measured by scripts/probe_faults.py, not asserted here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fault_backends as fb
from conformance.cli.main import main
from conformance.judge.runner import RunOptions, cpu_count, effective_jobs, run_cases
from judge_cases import forward_case, materialize_subset, write_golden_dir
from roperef.spec import RopeSpec

ROOT = Path(__file__).resolve().parents[3]
TESTS = os.pathsep.join(str(Path(__file__).resolve().parents[2] / "support" / c) for c in ['engines', 'faults', 'harness', 'strategies'])
PATTERN = "forward/default/half/*"


def _cases(n=2, dtype="float32"):
    return [forward_case(RopeSpec(head_dim=16), [[1, 2, 4095]], dtype, case_id=f"forward/t/half/{dtype}/c{i}", seed=i)
            for i in range(n)]


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    return str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset(PATTERN)))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    return env


# ----------------------------------------------------------------------------- in the runner


@pytest.mark.parametrize("backend, needle", [
    (fb.ExitsZero(), "forward raised SystemExit(0)"),
    (fb.ExitsThree(), "forward raised SystemExit(3)"),
    (fb.RaisesKeyboardInterrupt(), "forward raised KeyboardInterrupt (raised by the backend"),
    (fb.SupportsExits(), "supports() raised SystemExit(0)"),
    (fb.ReturnsNone(), "forward returned NoneType for output y, not an array"),
    (fb.ReturnsString(), "forward returned str for output y, not an array"),
    (fb.ReturnsObjects(), "not an array of numbers"),
])
def test_a_stage_that_exits_interrupts_or_returns_garbage_is_that_cases_error(backend, needle):
    rep = run_cases(backend, _cases(2), RunOptions())
    assert [r.status for r in rep.results] == ["ERROR", "ERROR"]  # the run went on to the second case
    assert needle in rep.results[0].message
    assert not rep.interrupted


@pytest.mark.parametrize("name, needle", [
    ("ExitsZero", "forward raised SystemExit(0)"),
    ("RaisesKeyboardInterrupt", "forward raised KeyboardInterrupt"),
    ("OsExit", "backend process exited (code 7)"),
    ("Aborts", "died with signal SIGABRT"),
])
def test_the_same_faults_in_a_worker_process(name, needle):
    rep = run_cases(getattr(fb, name)(), _cases(2), RunOptions(isolate=True, timeout=60), selector=f"fault_backends:{name}")
    assert [r.status for r in rep.results] == ["ERROR", "ERROR"]
    assert needle in rep.results[0].message


def test_float128_and_other_precise_float_outputs_are_accepted():
    for dtype in ("float64", "float32", "bfloat16"):
        rep = run_cases(fb.ReturnsFloat128(), _cases(1, dtype), RunOptions())
        assert rep.results[0].status == "PASS", rep.results[0].message


def test_in_process_time_limit_abandons_a_sleeping_call_and_a_hung_backend_is_given_up():
    rep = run_cases(fb.Sleeps(), _cases(4), RunOptions(timeout=0.3, max_consecutive_timeouts=2))
    assert [r.status for r in rep.results] == ["ERROR"] * 4
    assert all(r.message.startswith("timed out after 0.3 s") for r in rep.results[:2])
    assert all(r.message.startswith("not run: the backend timed out on 2 calls in a row") for r in rep.results[2:])


def test_the_default_time_limit_applies_with_and_without_isolation(golden, capsys, monkeypatch):
    import conformance.judge.runner as runner

    seen = []
    real = runner.run_cases

    def spy(backend, cases, options, **kw):
        seen.append((options.timeout, options.isolate))
        return real(backend, cases, options, **kw)

    monkeypatch.setattr(runner, "run_cases", spy)
    for extra in ([], ["--isolate"], ["--timeout", "7"]):
        assert main(["check", "--backend", "numpy", "--golden", golden, "-q", *extra]) == 0
    capsys.readouterr()
    assert seen == [(runner.DEFAULT_TIMEOUT_S, False), (runner.DEFAULT_TIMEOUT_S, True), (7.0, True)]
    assert RunOptions().timeout == runner.DEFAULT_TIMEOUT_S > 0


def test_timeout_kills_a_backend_that_holds_the_gil(golden, capsys):
    code = main(["check", "--backend", "fault_backends:HoldsGIL", "--timeout", "1", "--golden", golden,
                 "--filter", "forward/default/half/float64/*", "-q"])
    out, err = capsys.readouterr()
    assert code == 1 and "timed out after 1 s (forward; backend process killed)" in out
    assert "Traceback" not in out + err


def test_jobs_are_capped_by_the_core_count(golden, capsys):
    assert effective_jobs(1000) == cpu_count() and effective_jobs(0) == 1
    rep = run_cases(fb.ReturnsFloat128(), _cases(3), RunOptions(isolate=True, jobs=1000),
                    selector="fault_backends:ReturnsFloat128")
    assert rep.jobs == cpu_count() and [r.status for r in rep.results] == ["PASS"] * 3
    code = main(["check", "--backend", "numpy", "--golden", golden, "--jobs", "1000", "--isolate", "-q"])
    _, err = capsys.readouterr()
    assert code == 0 and f"--jobs 1000 capped at {cpu_count()}" in err


# ----------------------------------------------------------------------------- through the CLI


@pytest.mark.parametrize("backend", ["ExitsZero", "ExitsThree", "RaisesKeyboardInterrupt", "ReturnsNone"])
def test_cli_never_turns_a_backend_fault_into_a_pass_and_always_writes_the_report(golden, capsys, tmp_path, backend):
    report = tmp_path / "r.json"
    code = main(["check", "--backend", f"fault_backends:{backend}", "--golden", golden, "--goldens-only", "--json", str(report)])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in out + err
    doc = json.loads(report.read_text())
    assert doc["summary"]["ok"] is False and doc["summary"]["exit_code"] == 1
    assert doc["summary"]["counts"]["ERROR"] == doc["summary"]["cases"] > 0


def test_nothing_judged_exits_3_with_the_reasons(golden, capsys, tmp_path):
    code = main(["check", "--backend", "fault_backends:Unsupported", "--golden", golden, "--json", str(tmp_path / "r.json")])
    out, err = capsys.readouterr()
    assert code == 3
    assert 'all NOT_SUPPORTED (top reasons: ' in err and "quantum computer" in err
    assert "NOTHING JUDGED" in out
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert summary["ok"] is False and summary["judged"] == 0 and summary["exit_code"] == 3


@pytest.mark.parametrize("module", ["fault_import_segv", "fault_import_exit"])
def test_a_backend_that_dies_at_import_under_isolate_is_one_line(module):
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "check", "--backend", f"{module}:Backend",
                           "--isolate", "--filter", "forward/default/half/float64/*"],
                          capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert ("died with signal SIGSEGV while loading" in line) if module.endswith("segv") else ("SystemExit(0)" in line)


def test_sys_exit_at_import_in_process_is_a_usage_error(capsys):
    code = main(["check", "--backend", "fault_import_exit:Backend", "--filter", "forward/default/half/float64/*"])
    _, err = capsys.readouterr()
    assert code == 2 and "loading it raised SystemExit(0)" in err


# ----------------------------------------------------------------------------- Ctrl-C


def _interrupt(tmp_path, golden, *extra):
    """Start a check on a backend stuck in sleep, SIGINT it once it is stuck; (returncode, stderr, report)."""
    marker = tmp_path / "entered"
    report = tmp_path / "partial.json"
    env = _env()
    env["ROPEREF_TEST_MARKER"] = str(marker)
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "check", "--backend", "fault_backends:SleepsMarked",
                             "--golden", golden, "--json", str(report), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate(timeout=60)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)  # a hang detector, not a speed requirement
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        raise AssertionError("roperef check did not stop within 60 s of Ctrl-C") from exc
    return proc.returncode, out + err, report


@pytest.mark.parametrize("extra", [["--jobs", "2"], ["--jobs", "2", "--isolate"], []], ids=["threads", "isolate", "serial"])
def test_ctrl_c_stops_a_stuck_run_writes_the_partial_report_and_exits_130(tmp_path, golden, extra):
    code, text, report = _interrupt(tmp_path, golden, *extra)
    assert code == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert "interrupted after" in text and "INTERRUPTED" in text
    summary = json.loads(report.read_text())["summary"]
    assert summary["interrupted"] is True and summary["not_run"] > 0 and summary["exit_code"] == 130


def test_supports_that_exits_while_cases_are_planned_is_each_cases_error_not_an_internal_error(tmp_path, capsys):
    """The default run asks supports() while choosing generated cases too (outside the runner's call
    thread): a sys.exit there is the same per-case reason, never exit 4 (INTERNAL)."""
    import json

    from conformance.cli.main import main

    code = main(["check", "--backend", "fault_backends:SupportsExits", "-q", "--json", str(tmp_path / "r.json")])
    capsys.readouterr()
    assert code == 1
    results = json.loads((tmp_path / "r.json").read_text())["results"]
    assert results and all(r["status"] == "ERROR" and "supports() raised SystemExit(0)" in r["message"] for r in results)


def test_supports_reason_turns_every_exception_into_a_reason_but_lets_ctrl_c_through():
    """supports() runs in a call thread: whatever it raises (KeyboardInterrupt included: the backend's,
    not the user's) is a reason; the user's SIGINT, which lands in the waiting thread, still stops it."""
    import threading

    from conformance.calls.stage_call import supports_reason

    case = _cases(1)[0]
    assert supports_reason(fb.SupportsExits(), case) == "supports() raised SystemExit(0) (a backend must not exit the process)"

    class Interrupts(fb.NumpyBackend):
        def supports(self, case):
            raise KeyboardInterrupt

    assert supports_reason(Interrupts(), case) == (
        "supports() raised KeyboardInterrupt (raised by the backend, not a Ctrl-C of the user)")
    assert supports_reason(fb.NumpyBackend(), case) is None

    class Slow(fb.NumpyBackend):
        def supports(self, case):
            time.sleep(5)
            return True

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            supports_reason(Slow(), case)
        assert time.monotonic() - t0 < 4  # it did not wait for the backend
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
