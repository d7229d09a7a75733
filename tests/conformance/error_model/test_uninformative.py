"""A PASS must inform: a bound as large as the output's own scale makes a PASS UNINFORMATIVE.

The float32-angle emulation at position 2^30 passes with max|err| ~ 4.6 and nmse ~ 1 (its bound is
hundreds of times the output); at position 1024 its bound is 1e-4 of the output. Expected values come
from roperef.reference (tests/support/harness/judge_cases.py), never from the judge under test.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conformance.backends.emulated import Float32Emulation
from conformance.error_model.tolerance import UNINFORMATIVE_C, admitted_error, default_profile_name, get_profile
from conformance.exit_codes import ExitCode
from conformance.judge.run_verdict import exit_code_for, nothing_judged_why
from conformance.judge.runner import CaseResult, RunReport, judge_case
from conformance.long_context.stream import LongContextPlan, run_long_context
from conformance.report.formats import console, summary_line, to_json, write_junit, write_markdown
from judge_cases import forward_case
from roperef.spec import RopeSpec

SPEC = RopeSpec(head_dim=64)


def _judged(position: int) -> CaseResult:
    backend = Float32Emulation()
    caps = backend.capabilities
    case = forward_case(SPEC, [[position, position + 1]], "float32", case_id=f"forward/p{position}")
    y = np.asarray(backend.forward(case.input_as("x"), case.arrays["positions"], SPEC))
    j = judge_case(case, {"y": y}, caps, get_profile(None, default=default_profile_name(caps)), diagnose=False)
    return CaseResult(case.id, case.family, case.stage, case.dtype, j.status, j.message, j.metrics, j.tolerance)


def test_admitted_error_is_the_worst_tokens_rms_ratio() -> None:
    case = forward_case(SPEC, [[0, 1, 2]], "float64")
    e = np.zeros((1, 3, 1, 4))
    e[0, 0] = 2.0  # token 0: sum e^2 = 16
    e[0, 1] = 1.0  # token 1: sum e^2 = 4
    b = np.zeros_like(e)
    b[0, 0] = 1.0  # sqrt(4 / 16) = 0.5
    b[0, 1] = 1.5  # sqrt(9 / 4) = 1.5
    b[0, 2] = 7.0  # token 2 has no scale (all-zero expected output): skipped
    assert admitted_error(case, e, b) == pytest.approx(1.5)
    assert admitted_error(case, np.zeros_like(e), b) == 0.0


def test_float32_angles_at_2_30_pass_uninformative_and_at_1024_inform() -> None:
    far, near = _judged(2**30), _judged(1024)
    assert far.status == "PASS" and near.status == "PASS"
    assert far.metrics is not None and near.metrics is not None
    assert far.metrics.max_abs_error > 1.0  # the case the issue names: a PASS with an O(1) error
    assert far.metrics.admitted > 100 * UNINFORMATIVE_C and far.uninformative
    assert near.metrics.admitted < 1e-3 and not near.uninformative
    assert far.to_dict()["uninformative"] is True and near.to_dict()["uninformative"] is False


def test_a_fail_is_never_uninformative() -> None:
    r = _judged(2**30)
    r.status = "FAIL"
    assert not r.uninformative


def _report(*results: CaseResult) -> RunReport:
    return RunReport(backend="emulated-fp32", capabilities={}, profile=get_profile("fp32-angles").to_dict(),
                     results=list(results))


def test_only_uninformative_passes_judge_nothing_in_every_format(tmp_path) -> None:
    report = _report(_judged(2**30))
    assert exit_code_for(report) == ExitCode.NOTHING_JUDGED
    assert "UNINFORMATIVE" in nothing_judged_why(report)
    line = summary_line(report)
    assert line.startswith("NOTHING JUDGED") and "1 PASS UNINFORMATIVE" in line
    doc = to_json(report)
    assert doc["summary"]["exit_code"] == 3 and doc["summary"]["uninformative"]["count"] == 1
    assert doc["results"][0]["uninformative"] is True and doc["results"][0]["metrics"]["admitted"] > 100
    write_junit(report, tmp_path / "r.xml")
    tc = ET.parse(tmp_path / "r.xml").getroot().find(".//testcase")
    assert tc is not None and "UNINFORMATIVE PASS" in (tc.findtext("system-out") or "")
    write_markdown(report, tmp_path / "r.md")
    assert "## UNINFORMATIVE" in (tmp_path / "r.md").read_text()
    json.dumps(doc, default=str)


def test_an_informative_pass_beside_it_is_ok_and_still_names_it(tmp_path) -> None:
    import io

    report = _report(_judged(2**30), _judged(1024))
    assert exit_code_for(report) == ExitCode.OK
    out = io.StringIO()
    console(report, out)
    text = out.getvalue()
    assert "UNINF  forward/p1073741824" in text and "forward/p1024:" not in text
    assert summary_line(report).startswith("OK") and "1 PASS UNINFORMATIVE" in summary_line(report)


def test_long_context_rows_carry_the_admitted_error() -> None:
    plan = LongContextPlan(lengths=(512,), spec=SPEC, chunk=256, heads=1, dtypes=("float32",), stages=("forward",))
    report = run_long_context(Float32Emulation(), plan, diagnose=False)
    (row,) = report.results
    assert row.status == "PASS" and row.metrics is not None
    # the last chunk (positions 256..511) admits a float32-angle error ~ 8 u |phi|: well inside the signal
    assert 0 < row.metrics.admitted < 1e-3 and not row.uninformative
