"""Reports: JSON schema fields, JUnit XML, Markdown, plots, console repro lines."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest

from conformance.judge.runner import RunOptions, run_cases
from conformance.judge.xfail import parse_xfail
from conformance.report import formats as rep
from judge_cases import forward_case
from roperef.spec import RopeSpec
from wrong_backends import Buggy


@pytest.fixture(scope="module")
def run():
    spec = RopeSpec(head_dim=32)
    cases = [forward_case(spec, [[1, 4095, 70001]], "float32", case_id="forward/default/half/float32/a"),
             forward_case(spec.replace(pairing="adjacent"), [[2, 3]], "float32", case_id="forward/default/adjacent/float32/b"),
             forward_case(spec, [[5, 9]], "float64", case_id="backward/default/half/float64/c", family="backward", stage="backward")]
    opts = RunOptions(xfail=parse_xfail("backward/*  tracked elsewhere\n"), repro=lambda c: f"roperef check --backend x --filter {c.id}")
    return run_cases(Buggy(bug="positions-bf16"), cases, opts)


def test_console(run):
    out = io.StringIO()
    rep.console(run, out, golden={"directory": "g", "set_hash": "abc", "tier": "smoke"})
    text = out.getvalue()
    assert "family" in text and "forward" in text and "backward" in text
    fail_lines = [line for line in text.splitlines() if line.strip().startswith("FAIL")]
    assert fail_lines and "likely cause: positions rounded to bfloat16" in fail_lines[0]
    assert "repro: roperef check --backend x --filter forward/default/half/float32/a" in text
    assert text.strip().splitlines()[-1].startswith("FAILED: 3 cases")


def test_json_schema_fields(run, tmp_path):
    path = tmp_path / "r.json"
    rep.write_json(run, path, golden={"directory": "g", "set_hash": "abc"}, command=["roperef", "check"])
    doc = json.loads(path.read_text())
    assert doc["schema"] == rep.SCHEMA
    assert {"python", "numpy", "platform"} <= set(doc["environment"])
    assert doc["golden"]["set_hash"] == "abc"
    assert doc["summary"]["counts"]["FAIL"] >= 1 and doc["summary"]["ok"] is False
    r0 = next(r for r in doc["results"] if r["status"] == "FAIL")
    assert {"max_abs_error", "budget_used", "nmse", "worst"} <= set(r0["metrics"])
    assert {"batch", "position", "head", "channel"} <= set(r0["metrics"]["worst"])
    assert r0["tolerance"]["angle_dtype"] == "float32" and r0["diagnosis"]["match"] == "positions:bf16"
    assert next(r for r in doc["results"] if r["stage"] == "backward")["status"] in ("XFAIL", "XPASS")


def test_junit_and_markdown(run, tmp_path):
    rep.write_junit(run, tmp_path / "r.xml")
    root = ET.parse(tmp_path / "r.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 3 and root.findall(".//failure")
    rep.write_markdown(run, tmp_path / "r.md")
    md = (tmp_path / "r.md").read_text()
    assert "| family |" in md and "positions rounded to bfloat16" in md


def test_plots(run, tmp_path):
    pytest.importorskip("matplotlib")
    paths = rep.write_plots(run, tmp_path / "plots")
    assert paths and all(p.suffix == ".png" and p.stat().st_size > 1000 for p in paths)
