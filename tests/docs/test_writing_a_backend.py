"""docs/writing-a-backend.md stays true: its engine passes, each common mistake gets the verdict and
diagnosis the page shows, its backward derivation matches the reference, its selector errors read
as shown. Runs the examples in examples/my_rope through the real loader and judge."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.backends.resolve import resolve_backend
from conformance.cli.main import main
from conformance.judge.runner import RunOptions, run_cases
from judge_cases import subset

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_rope"
DOC = ROOT / "docs" / "writing-a-backend.md"


@pytest.fixture
def in_example(monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    saved = list(sys.path)
    yield
    sys.path[:] = saved
    for name in ("my_rope", "mistakes"):
        sys.modules.pop(name, None)


def _judge(selector: str, pattern: str):
    """The judged (not NOT_SUPPORTED) results of ``selector`` on the smoke cases matching ``pattern``."""
    results = run_cases(resolve_backend(selector), subset(pattern), RunOptions()).results
    return [r for r in results if r.status != "NOT_SUPPORTED"]


def test_the_engine_of_the_page_is_the_example():
    block = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[0]
    example = (EXAMPLE / "my_rope.py").read_text()
    body = example[example.index("import numpy as np"):]
    assert block.strip() == body.strip()


def test_first_green_run(in_example, capsys):
    code = main(["check", "--backend", "./my_rope.py:MyRope"])
    out = capsys.readouterr().out
    assert code == 0
    assert "backend my-rope (angles float32, tables float32)" in out
    counts = re.search(r"OK: (\d+) cases \((\d+) PASS, (\d+) NOT_SUPPORTED\)", out)
    assert counts and int(counts.group(2)) >= 20, out[-500:]
    assert "note:" not in out


@pytest.mark.parametrize(
    "name,pattern,words",
    [
        ("PositionsInInputDtype", "forward/default/half/bfloat16/*", "positions rounded to bfloat16"),
        ("Interleaved", "forward/default/half/bfloat16/*", "pairing 'adjacent' used instead of 'half'"),
        ("OffsetsIgnored", "forward/default/half/bfloat16/*", "position offsets ignored"),
        ("YarnWithoutAttentionFactor", "forward/yarn/half/*", "attention factor missing"),
    ],
)
def test_each_mistake_is_named(in_example, name, pattern, words):
    results = _judge(f"./mistakes.py:{name}", pattern)
    failed = [r for r in results if r.status == "FAIL"]
    assert failed, [(r.id, r.status) for r in results]
    # the named cause (alone, or first of a tie "one of: A, B" the case cannot separate)
    assert all(r.diagnosis["summary"].startswith("likely cause") and words in r.diagnosis["summary"] for r in failed), \
        [r.diagnosis["summary"] for r in failed]


def test_in_place_and_precision_mistakes(in_example):
    results = _judge("./mistakes.py:InPlace", "forward/default/half/*")
    assert results and all(r.status == "FAIL" and r.message == "input(s) x modified in place" for r in results)
    results = _judge("./mistakes.py:HalfPrecisionOutput", "forward/default/half/float32/*")
    assert results and all(r.message == "output y has dtype float16, less precise than the case dtype float32" for r in results)


def test_undeclared_engine_is_announced_and_judged_as_float64(in_example, capsys):
    code = main(["check", "--backend", "./mistakes.py:Undeclared", "--filter", "forward/default/half/float32/*"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.count("note: no capabilities declared: judged as a float64 engine with float64 tables") == 2
    assert "profile strict" in out


def test_table_declaration_sets_the_bound(in_example):
    """Same outputs, two declarations: "input" tables widen the bound, and that engine passes."""
    declared = _judge("./mistakes.py:TablesInInputDtypeDeclared", "model/*/half/bfloat16/*")
    undeclared = _judge("./mistakes.py:TablesInInputDtype", "model/*/half/bfloat16/*")
    assert [u.id for u in undeclared] == [d.id for d in declared]
    judged = list(zip(undeclared, declared))
    assert judged and all(d.status == "PASS" for _, d in judged)
    assert all(u.metrics.budget_used > d.metrics.budget_used for u, d in judged)


def test_backward_derivation_matches_the_reference():
    block = next(b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if "def my_backward" in b)
    done = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")[:4]
    assert [line.split()[-1] for line in lines] == ["0.0"] * 4, done.stdout


def test_selector_mistakes_read_as_documented(in_example, capsys, tmp_path, monkeypatch):
    assert main(["check", "--backend", "./my_rope.py:MyRpoe"]) == 2
    err = capsys.readouterr().err
    assert ("roperef check: error: backend './my_rope.py:MyRpoe': file ./my_rope.py has no attribute 'MyRpoe'; "
            "did you mean 'MyRope'? Backend candidates in it: MyRope (class).") in err
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--backend", "my_rope_not_here:MyRope"]) == 2
    err = capsys.readouterr().err
    assert f"the current directory {tmp_path} has no my_rope_not_here.py either" in err
