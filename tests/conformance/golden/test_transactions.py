"""Golden writes and report files are transactions: interrupted, out of space or read-only, they leave the
old set (or file) exactly as it was, or the new one, never a mixture, a stray or a 0-byte file."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import conformance.golden.atomic_files as atomic
import conformance.golden.store as golden_mod
from conformance.cli.main import main
from conformance.golden.store import load_golden, verify_golden, write_golden, write_golden_set
from judge_cases import materialize_subset

ROOT = Path(__file__).resolve().parents[3]
OLD = "freq/default/*,forward/default/half/float64/*"
NEW = "freq/linear/*,forward/linear/half/float64/*"


@pytest.fixture(scope="module")
def old_cases():
    return materialize_subset(OLD)


@pytest.fixture(scope="module")
def new_cases():
    return materialize_subset(NEW)


@pytest.fixture
def target(tmp_path, old_cases):
    out = tmp_path / "golden"
    write_golden(old_cases, out)
    (out / "README.md").write_text("notes kept beside the set\n")
    return out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _beside(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name != folder.name)


@pytest.mark.parametrize("fault", [KeyboardInterrupt(), OSError(errno.ENOSPC, "No space left on device")],
                         ids=["ctrl-c", "enospc"])
@pytest.mark.parametrize("at", ["first", "manifest"])
def test_a_write_that_fails_midway_leaves_the_old_set_untouched(target, new_cases, monkeypatch, fault, at):
    before, around = _snapshot(target), _beside(target)
    after = 0 if at == "first" else len(new_cases)  # the manifest is written after every .npz
    real = golden_mod.write_new
    written = []

    def failing(path, data):
        if len(written) >= after:
            raise fault
        written.append(path)
        real(path, data)

    monkeypatch.setattr(golden_mod, "write_new", failing)
    with pytest.raises(type(fault)):
        write_golden(new_cases, target, force=True)
    assert _snapshot(target) == before and _beside(target) == around  # no staging directory left
    assert verify_golden(target, recompute_outputs=False) == []


def test_a_failed_swap_leaves_the_old_set(target, new_cases, monkeypatch):
    before = _snapshot(target)

    def refuse(staging, dest):
        raise OSError(errno.EROFS, "Read-only file system", str(dest))

    monkeypatch.setattr(atomic, "swap_in_directory", refuse)
    with pytest.raises(OSError):
        write_golden(new_cases, target, force=True)
    assert _snapshot(target) == before and _beside(target) == []


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "rename-pair"])
def test_force_replaces_the_whole_set_at_once_and_keeps_other_files(target, new_cases, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(atomic, "_renameat2_exchange", lambda a, b: False)
    result = write_golden_set(new_cases, target, force=True)
    assert result.changed
    names = set(os.listdir(target))
    assert names == {"manifest.json", "README.md"} | {golden_mod.case_file_name(c.id) for c in new_cases}
    assert (target / "README.md").read_text() == "notes kept beside the set\n"
    assert verify_golden(target) == [] and _beside(target) == []
    assert {c.id for c in load_golden(target).cases} == {c.id for c in new_cases}


def test_sigint_between_the_two_renames_is_deferred():
    # Python's own SIGINT handler, whatever an earlier test in this process left installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with atomic.sigint_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                reached = True  # the signal did not interrupt the block
        assert reached
    finally:
        signal.signal(signal.SIGINT, previous)


def test_same_set_again_is_unchanged(target, old_cases, tmp_path, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in target.iterdir()}
    assert write_golden_set(old_cases, target).changed is False
    assert {p.name: p.stat().st_mtime_ns for p in target.iterdir()} == before
    out = tmp_path / "cli"
    assert main(["golden", "generate", "--filter", OLD, "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert main(["golden", "generate", "--filter", OLD, "--out", str(out)]) == 0
    again = capsys.readouterr().out
    assert first.startswith("wrote ") and again.startswith(f"unchanged: {len(old_cases)} cases")


def test_generate_out_an_existing_file_is_a_usage_error(tmp_path, capsys):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    assert main(["golden", "generate", "--filter", "freq/default/*", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert "exists and is not a directory" in err and "Traceback" not in err and f.read_text() == "x"


@pytest.mark.parametrize("err_no, needle", [(errno.ENOSPC, "no space left on the device"),
                                            (errno.EROFS, "read-only file system"),
                                            (errno.EACCES, "Permission denied")])
def test_generate_on_a_full_or_read_only_disk_is_one_line(target, monkeypatch, capsys, err_no, needle):
    before = _snapshot(target)

    def mkdtemp(*a, **k):
        raise OSError(err_no, os.strerror(err_no), str(target.parent))

    monkeypatch.setattr(golden_mod.tempfile, "mkdtemp", mkdtemp)
    code = main(["golden", "generate", "--filter", NEW, "--out", str(target), "--force"])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert _snapshot(target) == before


def test_sigint_during_generate_leaves_the_old_set_or_the_new_one(target, tmp_path):
    """A real Ctrl-C at several moments of `golden generate --force` over a different set."""
    old_manifest = (target / "manifest.json").read_bytes()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    outcomes = set()
    for delay in (0.3, 1.0, 2.0, 4.0):
        proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "golden", "generate", "--filter", NEW,
                                 "--out", str(target), "--force"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=ROOT)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 130), err
        assert "Traceback" not in out + err
        assert verify_golden(target, recompute_outputs=False) == [] and _beside(target) == []
        now = (target / "manifest.json").read_bytes()
        ids = set(json.loads(now)["cases"])
        assert now == old_manifest or ids == {c.id for c in materialize_subset(NEW)}
        outcomes.add("old" if now == old_manifest else "new")
        if now != old_manifest:
            write_golden(materialize_subset(OLD), target, force=True)
            old_manifest = (target / "manifest.json").read_bytes()
    assert outcomes  # at least one run was judged; which ones land before the swap depends on the machine


# ----------------------------------------------------------------------------- report files


def test_report_written_on_a_full_disk_leaves_no_partial_file(tmp_path, monkeypatch):
    report = tmp_path / "r.json"
    report.write_text("previous report\n")

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full)
    with pytest.raises(OSError):
        atomic.write_text_atomic(report, "new report\n")
    assert report.read_text() == "previous report\n" and sorted(os.listdir(tmp_path)) == ["r.json"]
    with pytest.raises(OSError):
        atomic.write_text_atomic(tmp_path / "fresh.json", "x")
    assert sorted(os.listdir(tmp_path)) == ["r.json"]  # no 0-byte fresh.json, no temporary file


def test_check_report_on_a_full_disk_is_one_line(tmp_path, monkeypatch, capsys):
    from judge_cases import write_golden_dir

    golden = write_golden_dir(tmp_path / "g", materialize_subset("freq/default/*"))

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full)
    code = main(["check", "--backend", "numpy", "--golden", str(golden), "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and "Traceback" not in err
    assert not (tmp_path / "r.json").exists() and not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("flag", ["--json", "--junit", "--markdown"])
def test_a_fifo_or_directory_as_report_path_is_refused_before_the_run(tmp_path, capsys, flag):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, needle in ((fifo, "is a FIFO (named pipe), not a regular file"), (tmp_path, "is a directory")):
        code = main(["check", "--backend", "numpy", flag, str(path)])
        err = capsys.readouterr().err
        assert code == 2 and needle in err
