"""``roperef check``: exit codes, reports, and one clear line (never a traceback) for bad input."""

from __future__ import annotations

import json

import pytest

from cli_runs import run_check
from conformance.cli.main import main
from judge_cases import materialize_subset, write_golden_dir

PATTERN = "forward/default/*,freq/default/*,table/default/half/float64/b2-s16-d64/short,mrope/chunked/*text-only*"


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    return str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset(PATTERN)))


def test_numpy_passes_and_prints_the_report(golden, capsys, tmp_path):
    code, out, err = run_check(capsys, "--backend", "numpy", "--golden", golden, "--json", str(tmp_path / "r.json"))
    assert code == 0, out + err
    assert "PASS" in out and "forward" in out and out.strip().splitlines()[-1].startswith("OK:")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["golden"]["set_hash"] and doc["summary"]["ok"] is True


def test_default_backend_is_numba(golden, capsys, monkeypatch):
    monkeypatch.delenv("ROPEREF_BACKEND", raising=False)
    code, out, _ = run_check(capsys, "--golden", golden, "--filter", "freq/")
    assert code == 0 and "backend numba" in out


def test_env_var_selects_the_backend(golden, capsys, monkeypatch):
    monkeypatch.setenv("ROPEREF_BACKEND", "wrong_backends:Buggy")
    code, out, _ = run_check(capsys, "--golden", golden, "--filter", "freq/")
    assert code == 0 and "backend buggy-" in out  # a Buggy with no bug is a correct fp32 engine


def test_failure_exit_1_with_diagnosis_and_repro(golden, capsys, tmp_path):
    bug = tmp_path / "bugmod.py"
    bug.write_text("from wrong_backends import Buggy\ndef make():\n    return Buggy(bug='positions-bf16')\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        code, out, _ = run_check(capsys, "--backend", "bugmod:make", "--golden", golden, "--filter", "forward/default/half")
    finally:
        sys.path.remove(str(tmp_path))
    assert code == 1
    fail = next(line for line in out.splitlines() if line.strip().startswith("FAIL"))
    assert "positions rounded to bfloat16" in fail
    assert "repro: roperef check --backend bugmod:make" in out and "--filter '[f]orward/default/half/" in out


@pytest.mark.parametrize(
    "argv, needle",
    [(["--backend", "nosuch"], "unknown backend 'nosuch'"),
     (["--backend", "no_such_module_xyz:Thing"], "cannot import module 'no_such_module_xyz'"),
     (["--backend", "runner_backends:Nope"], "has no attribute 'Nope'"),
     (["--backend", "runner_backends:NoStages"], "implements none of the stages"),
     (["--backend", "numpy", "--filter", "zzz-nothing"], "no case matches --filter zzz-nothing"),
     (["--backend", "numpy", "--profile", "nope"], "unknown profile"),
     (["--backend", "numpy", "--jobs", "0"], "--jobs=0"),
     (["--backend", "numpy", "--xfail", "/nonexistent/xf.txt"], "file not found"),
     (["--outputs", "/nonexistent/dir"], "not a directory")],
)
def test_usage_errors_exit_2_with_one_line(golden, capsys, argv, needle):
    code, out, err = run_check(capsys, "--golden", golden, *argv)
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1


def test_malformed_xfail_and_profile_files(golden, capsys, tmp_path):
    xf = tmp_path / "xf.txt"
    xf.write_text("forward/default/*\n")
    code, _, err = run_check(capsys, "--backend", "numpy", "--golden", golden, "--xfail", str(xf))
    assert code == 2 and "xf.txt:1" in err
    prof = tmp_path / "p.toml"
    prof.write_text("c_ang = 'lots'\n")
    code, _, err = run_check(capsys, "--backend", "numpy", "--golden", golden, "--profile", str(prof))
    assert code == 2 and "c_ang" in err


def test_argparse_usage_error_is_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--tier", "huge"])
    assert exc.value.code == 2
