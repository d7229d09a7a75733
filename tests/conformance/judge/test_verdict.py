"""Run-level diagnosis: one verdict over all FAILs (consensus, pattern, per-pair band, per-position
threshold), in the console, the JSON and as a plot; and the backends doc shows coverage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bug_engines import BugEngine
from conformance.generated.plan import materialize_all, plan_cases
from conformance.judge.check_sources import attach_sections
from conformance.judge.runner import RunOptions, run_cases
from judge_cases import smoke_cases

ROOT = Path(__file__).resolve().parents[3]


def _run(bug: str):
    engine = BugEngine(bug=bug)
    plan = plan_cases(engine, shapes=False)  # bug-class verdicts: the shape sweep would only add FAILs to diagnose
    cases = [c for c in smoke_cases() if c.stage == "forward" and "llama3" in c.id] + materialize_all(plan.cases)
    rep = run_cases(engine, cases, RunOptions())
    attach_sections(rep, cases, engine, plan)
    return rep


def test_a_llama3_band_bug_gets_one_verdict_with_the_band_and_the_failing_pattern():
    rep = _run("llama3-bands-swapped")
    v = rep.verdict
    assert v["consensus"] == ["llama3:bands-swapped"]
    text = v["summary"]
    assert "every scaling=llama3 case fails, nothing else" in text
    band = next(w for w in v["words"] if "original_max_position_embeddings=8192" in w and "factor=8.0" in w)
    lo, hi = (float(x) for x in band.split("[", 1)[1].split("]", 1)[0].split(", "))
    assert 2048 <= lo and hi <= 8192  # the medium band L0/b .. L0/a of Llama 3.1
    row = next(r for r in rep.coverage["classes"] if r["id"] == "llama3:bands-swapped")
    assert row["judged"] and row["failing"] == row["cases"]


def test_a_bf16_position_bug_shows_its_threshold():
    v = _run("positions-bf16").verdict
    assert v["consensus"] == ["positions:bf16"]
    assert any("errors only at |position| >= 257" in w and "past 256" in w for w in v["words"])


def test_nothing_failing_means_no_verdict():
    engine = BugEngine()
    cases = materialize_all(plan_cases(engine).cases)[:20]
    rep = run_cases(engine, cases, RunOptions())
    attach_sections(rep, cases, engine, None)
    assert rep.verdict is None and rep.coverage["judged"] >= 1


def test_plot_writes_the_run_level_profile(tmp_path):
    pytest.importorskip("matplotlib")
    from conformance.report.sections import write_verdict_png

    rep = _run("theta-default")
    path = write_verdict_png(rep, tmp_path)
    assert path is not None and path.stat().st_size > 1000


def test_backends_doc_shows_coverage_per_backend(tmp_path):
    rep = _run("yarn-ramp-inverted")
    from conformance.report.formats import write_json

    (tmp_path / "reports").mkdir()
    write_json(rep, tmp_path / "reports" / "engine.json")
    out = tmp_path / "backends.md"
    done = subprocess.run([sys.executable, "scripts/make_backends_doc.py", str(tmp_path / "reports"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "## Bug-class coverage" in text and "| 42 / 42 | 100% |" in text
    assert "## Run-level diagnosis" in text and "yarn:ramp-inverted" in text
    doc = json.loads((tmp_path / "reports" / "engine.json").read_text())
    assert doc["verdict"]["consensus"] == ["yarn:ramp-inverted"]
