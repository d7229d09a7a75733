"""Output that fails late never loses a report: the report files are written first (atomically, with
Ctrl-C and SIGTERM held), the console last; a closed pipe keeps the exit code, a full disk or a
closed stdout exits 6 (OUTPUT_ERROR) with the files complete; undecodable names, 255-byte report
names, a backend that changes directory, replaces or closes stdout, or leaves a thread running
change none of that; SIGTERM stops a run like Ctrl-C (partial report, exit 143)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conformance.cli.main import main
from judge_cases import materialize_subset, write_golden_dir

ROOT = Path(__file__).resolve().parents[3]
TESTS = os.pathsep.join(str(Path(__file__).resolve().parents[2] / "support" / c) for c in ['engines', 'faults', 'harness', 'strategies'])


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    return str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset("forward/default/half/*")))


def _env(**extra):
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")])
    return env


def _summary(path: Path) -> dict:
    return json.loads(path.read_text())["summary"]


def _run_with_stdout(monkeypatch, stdout, *argv):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", err)
    code = main(list(argv))
    monkeypatch.undo()
    return code, err.getvalue()


# ----------------------------------------------------------------------------- in process


def test_a_closed_pipe_keeps_the_exit_code_and_the_report(golden, tmp_path, monkeypatch):
    r, w = os.pipe()
    os.close(r)  # the reader is gone: every write raises BrokenPipeError
    code, err = _run_with_stdout(monkeypatch, open(w, "w"), "check", "--backend", "numpy", "--golden", golden,
                                 "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml"))
    assert code == 0 and err == ""  # (the reader chose to stop reading: not an error)
    assert _summary(tmp_path / "r.json")["cases"] > 0 and (tmp_path / "j.xml").read_text().endswith("</testsuites>")


@pytest.mark.parametrize("backend, verdict", [("numpy", 6), ("hostile_backends:OffByALittle", 1)])
def test_a_full_disk_or_a_closed_stdout_exits_6_after_the_reports_unless_the_run_failed(golden, tmp_path, monkeypatch,
                                                                                      backend, verdict):
    for stdout in (open("/dev/full", "w"), None):
        report = tmp_path / "r.json"
        report.unlink(missing_ok=True)
        code, err = _run_with_stdout(monkeypatch, stdout, "check", "--backend", backend, "--golden", golden,
                                     "--goldens-only", "--json", str(report))
        assert code == verdict, err
        assert "roperef: error: cannot write to stdout" in err and "Traceback" not in err
        assert _summary(report)["exit_code"] == (0 if verdict == 6 else 1)  # the report says what the run found


def test_undecodable_names_and_255_byte_report_names(tmp_path, capsys):
    root = tmp_path / "c"
    folder = root / os.fsdecode(b"case-\xff\x1b[2J")  # not UTF-8, and an escape sequence
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(json.dumps({"stage": "forward", "spec": {"head_dim": 8}}))
    np.save(folder / "x.npy", np.ones((1, 2, 1, 8)))
    np.save(folder / "positions.npy", np.array([[0, 1]], dtype=np.int64))
    long = tmp_path / ("r" * 250 + ".json")
    md, junit = tmp_path / ("m" * 252 + ".md"), tmp_path / "j.xml"
    code = main(["check", "--backend", "numpy", "--cases", str(root), "--json", str(long), "--markdown", str(md),
                 "--junit", str(junit)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "case-\\xff\\x1b[2J" in out and "\x1b" not in out
    assert _summary(long)["cases"] == 1 and md.read_text().startswith("# roperef check")
    import xml.etree.ElementTree as ET

    assert ET.parse(junit).getroot().find(".//testcase").get("name") == "case-\\xff\\x1b[2J"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["c", long.name, md.name, junit.name])  # no temporary left


def test_a_backend_that_changes_directory_or_replaces_stdout_moves_no_report(golden, tmp_path, monkeypatch, capsys):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ROPEREF_TEST_DIR", str(elsewhere))
    code = main(["check", "--backend", "hostile_backends:ChangesDir", "--golden", golden, "--goldens-only", "--json", "r.json"])
    out, _ = capsys.readouterr()
    assert code == 0 and os.getcwd() == str(work) and not list(elsewhere.iterdir())
    doc = json.loads((work / "r.json").read_text())
    assert any("changed the working directory" in n for n in doc["backend"]["notes"])
    code = main(["check", "--backend", "hostile_backends:ReplacesStdout", "--golden", golden, "--goldens-only", "-q"])
    out, _ = capsys.readouterr()
    assert code == 0 and out.splitlines()[-1].startswith("OK: ")  # the summary did not vanish


def test_a_backend_that_closes_stdout_does_not_silence_the_summary(golden, tmp_path, monkeypatch):
    fd = os.open(tmp_path / "out.txt", os.O_WRONLY | os.O_CREAT)
    try:
        stdout = open(fd, "w", closefd=False)  # like sys.stdout: closing the stream leaves the descriptor
        code, err = _run_with_stdout(monkeypatch, stdout, "check", "--backend", "hostile_backends:ClosesStdout",
                                     "--golden", golden, "--goldens-only", "-q")
    finally:
        os.close(fd)
    assert code == 0, err
    assert (tmp_path / "out.txt").read_text().splitlines()[-1].startswith("OK: ")


# ----------------------------------------------------------------------------- real processes


def test_check_piped_into_head_exits_with_its_verdict_and_writes_the_report(golden, tmp_path):
    script = (f"{sys.executable} -m conformance.cli check --backend numpy --golden {golden} --json {tmp_path / 'r.json'} "
              "| head -n 1 > /dev/null; echo ${PIPESTATUS[0]}")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300)
    assert done.stdout.strip() == "0" and "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert _summary(tmp_path / "r.json")["exit_code"] == 0


def test_sigterm_stops_a_stuck_run_with_a_partial_report_and_143(golden, tmp_path):
    marker, report = tmp_path / "entered", tmp_path / "partial.json"
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "check", "--backend", "fault_backends:SleepsMarked",
                             "--golden", golden, "--json", str(report), "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(ROPEREF_TEST_MARKER=str(marker)), cwd=ROOT)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate(timeout=60)
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=60)  # a hang detector; the stop time is measured by scripts/probe_faults.py
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        raise AssertionError("roperef check did not stop within 60 s of SIGTERM") from exc
    assert proc.returncode == 143, out + err
    assert "Traceback" not in out + err and "by SIGTERM (partial report)" in err
    summary = _summary(report)
    assert summary["interrupted"] is True and summary["stopped_by"] == "SIGTERM" and summary["exit_code"] == 143


def test_a_thread_the_backend_leaves_running_does_not_block_the_exit(golden, tmp_path):
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "check", "--backend", "hostile_backends:LeavesThread",
                           "--golden", golden, "--goldens-only", "--filter", "forward/default/half/float64/*", "-q"],
                          capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "not waiting for" in done.stderr and "backend-worker" in done.stderr
    assert time.monotonic() - t0 < 300
