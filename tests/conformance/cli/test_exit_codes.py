"""The exit-code contract (conformance/exit_codes.py) and the golden set a run judges: named, never a silent substitute."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import conformance.cli.main as cli
from cli_runs import run_cli
from conformance.cli.main import main
from conformance.exit_codes import ExitCode
from judge_cases import materialize_subset, write_golden_dir

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    return str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset("freq/default/*")))


def test_the_codes():
    assert [(c.name, int(c)) for c in ExitCode] == [
        ("OK", 0), ("FAILED", 1), ("USAGE", 2), ("NOTHING_JUDGED", 3), ("INTERNAL", 4), ("NO_ROPE", 5), ("OUTPUT_ERROR", 6),
        ("INTERRUPTED", 130), ("TERMINATED", 143)]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1"])
def test_timeout_must_be_finite_and_positive(golden, capsys, value):
    code, _, err = run_cli(capsys, "check", "--backend", "numpy", "--golden", golden, f"--timeout={value}")
    assert code == 2 and f"--timeout={float(value)}: must be a finite number of seconds > 0" in err


def test_a_missing_golden_directory_is_a_usage_error(golden, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ROPEREF_GOLDEN", "/missing/golden")
    code, _, err = run_cli(capsys, "check", "--backend", "numpy")
    assert code == 2 and "ROPEREF_GOLDEN /missing/golden: does not exist" in err
    code, _, err = run_cli(capsys, "check", "--backend", "numpy", "--golden", str(tmp_path))
    assert code == 2 and f"--golden {tmp_path}: holds no manifest.json" in err
    monkeypatch.delenv("ROPEREF_GOLDEN")
    code, _, err = run_cli(capsys, "golden", "verify", "/missing/golden")
    assert code == 2 and "does not exist" in err
    code, _, err = run_cli(capsys, "golden", "show", "freq/default/x", "--dir", "/missing/golden")
    assert code == 2 and "does not exist" in err


def test_without_a_golden_directory_the_run_says_what_it_judges(capsys, monkeypatch, tmp_path):
    import conformance.golden.store as golden_mod

    monkeypatch.delenv("ROPEREF_GOLDEN", raising=False)
    monkeypatch.setattr(golden_mod, "default_golden_dir", lambda: tmp_path / "golden")
    code, out, _ = run_cli(capsys, "check", "--backend", "numpy", "--filter", "freq/default/*", "--json", str(tmp_path / "r.json"))
    assert code == 0
    words = f"cases computed in memory by roperef 0.1.0 from the smoke catalogue (no golden set found at {tmp_path / 'golden'}"
    assert f"golden set: {words}" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["golden"]["directory"] is None and doc["golden"]["source"].startswith(words)


def test_after_a_non_editable_install_the_main_job_names_its_cases(tmp_path):
    """A real `pip install --target` (no deps, no build isolation: nothing downloaded) of a copy of the packages
    without golden/ and setup.py (which ships it: tests/routes/test_installed_package.py): the in-memory fallback."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for pkg in ("roperef", "conformance"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=ignore)
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--target", str(target), str(src)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    assert not (target / "golden").exists() and not (target / "conformance" / "golden_set").exists()  # no set shipped
    env = {k: v for k, v in os.environ.items() if k not in ("ROPEREF_GOLDEN", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    run = tmp_path / "cwd"
    run.mkdir()
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "check", "--backend", "numpy", "--filter",
                           "freq/default/*", "--json", "r.json"], capture_output=True, text=True, env=env, cwd=run,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "golden set: cases computed in memory by roperef 0.1.0 from the smoke catalogue" in done.stdout
    source = json.loads((run / "r.json").read_text())["golden"]["source"]
    assert "no golden set found" in source and "pass --golden DIR" in source


def test_golden_list_defaults_to_the_smoke_tier_and_refuses_an_empty_filter(capsys):
    from conformance.cases.materialize import catalogue

    code, out, err = run_cli(capsys, "golden", "list")
    assert code == 0 and len(out.splitlines()) == len(catalogue("smoke")) < len(catalogue("full"))
    assert "of the smoke tier" in err
    code, _, err = run_cli(capsys, "golden", "list", "--filter", "zzz-nothing")
    assert code == 2 and "matches no case" in err


def test_an_internal_error_is_exit_4_with_one_line_and_debug_shows_the_traceback(golden, capsys, monkeypatch):
    import conformance.cli.golden as cli_golden

    def broken(args):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(cli_golden, "_list", broken)
    code = main(["golden", "list"])
    err = capsys.readouterr().err
    assert code == 4 and "internal error (a roperef bug" in err and "planted" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code = main(["golden", "list", "--debug"])
    err = capsys.readouterr().err
    assert code == 4 and "Traceback" in err and "ZeroDivisionError: planted" in err


@pytest.mark.parametrize("exc, code, needle", [
    (MemoryError(), 2, "out of memory"),
    (RecursionError("maximum recursion depth exceeded"), 2, "nested too deeply"),
    (OverflowError("int too large to convert to float"), 2, "out of range"),
    (OSError(28, "No space left on device", "/full/golden"), 2, "/full/golden: no space left on the device"),
    (OSError(30, "Read-only file system", "/ro/golden"), 2, "/ro/golden: read-only file system"),
    (FileExistsError(17, "File exists", "/x"), 2, "/x: File exists"),
    (SystemExit(0), 4, "unexpected exit request SystemExit(0)"),
])
def test_main_turns_every_exception_into_one_line(monkeypatch, capsys, exc, code, needle):
    import conformance.cli.golden as cli_golden

    def raising(args):
        raise exc

    monkeypatch.setattr(cli_golden, "_list", raising)
    assert main(["golden", "list"]) == code
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_outside_a_run_is_130_without_a_traceback(monkeypatch, capsys):
    import conformance.cli.golden as cli_golden

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_golden, "_list", interrupted)
    assert main(["golden", "list"]) == 130
    assert capsys.readouterr().err.strip() == "roperef golden list: interrupted"


def test_debug_flag_is_not_a_usage_error(capsys):
    assert cli.main(["--debug", "golden", "list", "--filter", "freq/default/*"]) == 0
    capsys.readouterr()


# ----------------------------------------------------------------------------- vague messages made precise (issue 27)


def test_golden_audit_samples_out_of_range_is_one_line(capsys):
    for value in ("-5", "0", "1000001"):
        code, _, err = run_cli(capsys, "golden", "audit", "--samples", value)
        assert code == 2 and f"--samples={value}: must be an integer in [1, 100000]" in err
        assert len(err.strip().splitlines()) == 1 and "numpy" not in err.lower()


def test_golden_list_into_a_closed_pipe_exits_0(monkeypatch):
    r, w = os.pipe()
    os.close(r)
    monkeypatch.setattr(sys, "stdout", open(w, "w"))
    code = main(["golden", "list"])
    monkeypatch.undo()
    assert code == 0


def test_presets_folder_missing_or_empty_is_an_error_not_a_smaller_catalogue(tmp_path, capsys, monkeypatch):
    for folder, problem in ((tmp_path / "missing", "does not exist"), (tmp_path, "holds no preset (*.json)")):
        monkeypatch.setenv("ROPEREF_PRESETS", str(folder))
        code, _, err = run_cli(capsys, "golden", "generate", "--out", str(tmp_path / "g"), "--filter", "model/*")
        assert code == 2 and f"ROPEREF_PRESETS {folder}: {problem}" in err
        assert not (tmp_path / "g").exists()


def test_the_repro_line_runs_for_an_id_starting_with_a_dash(tmp_path, capsys):
    import shlex

    import numpy as np

    folder = tmp_path / "c" / "a"
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(json.dumps({"stage": "forward", "spec": {"head_dim": 8}, "id": "-dash/forward"}))
    np.save(folder / "x.npy", np.ones((1, 2, 1, 8)))
    np.save(folder / "positions.npy", np.array([[0, 1]], dtype=np.int64))
    code, out, _ = run_cli(capsys, "check", "--backend", "hostile_backends:FailsById", "--cases", str(tmp_path / "c"))
    repro = next(line.split("repro: ", 1)[1] for line in out.splitlines() if "repro: " in line)
    assert code == 1 and "--filter '[-]dash/forward'" in repro
    code, out, _ = run_cli(capsys, *shlex.split(repro)[1:])  # the line as printed, run
    assert code == 1 and "FAILED: 1 cases (1 FAIL)" in out


def test_nothing_judged_says_why_in_every_output_mode(golden, capsys, tmp_path):
    why = "library quantumlib is not installed"
    code, out, err = run_cli(capsys, "check", "--backend", "hostile_backends:NotInstalled", "--golden", golden, "-q",
                             "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml"),
                             "--markdown", str(tmp_path / "r.md"))
    assert code == 3
    assert out.splitlines()[-1].startswith("NOTHING JUDGED: ") and why in out.splitlines()[-1]  # stdout alone says why
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert why in summary["why_nothing_judged"]
    assert why in (tmp_path / "j.xml").read_text() and why in (tmp_path / "r.md").read_text()


def test_no_rope_says_why_on_stdout_too(capsys):
    from pathlib import Path

    bert = Path(__file__).resolve().parents[3] / "conformance" / "presets" / "bert-base-multilingual-cased.json"
    code, out, err = run_cli(capsys, "spec", str(bert))
    assert code == 5 and "no RoPE" in err
    doc = json.loads(out)
    assert doc["rope"] is None and doc["model_type"] == "bert" and "no rotary embedding" in doc["why"]


@pytest.mark.parametrize("signal_exc, code", [("KeyboardInterrupt", 130), ("Terminated", 143)])
def test_a_signal_wrapped_by_an_import_still_stops_cleanly(monkeypatch, capsys, signal_exc, code):
    """Ctrl-C while a dataclass is being defined (an import of the subcommands, slow on a loaded
    machine) reaches the CLI as RuntimeError('Error calling __set_name__ ...') caused by the
    KeyboardInterrupt: it exits 130 (143 for SIGTERM) with one line, not a traceback and 1."""
    from conformance.cli import main as cli_main
    from conformance.interrupt import Terminated

    cause = {"KeyboardInterrupt": KeyboardInterrupt(), "Terminated": Terminated()}[signal_exc]

    def build_parser():
        try:
            raise cause
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance 'manifest' in 'GoldenWrite'") from exc

    monkeypatch.setattr(cli_main, "build_parser", build_parser)
    assert cli_main.main(["golden", "list"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("interrupted" in err or "terminated" in err)
