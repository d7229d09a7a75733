"""The bug catalogue as data: exposure rules agree with the decoys, docs/conformance.md lists every class."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bug_engines import BugEngine
from conformance.backends.base import Capabilities
from conformance.bugs.catalogue import BY_ID, CATALOGUE
from conformance.bugs.decoy import budget, run_decoy
from conformance.bugs.facts import Precision, case_facts
from conformance.error_model.tolerance import get_profile, resolve
from conformance.generated.plan import materialize_all, plan_cases
from conformance.vocabulary import STAGES
from judge_cases import smoke_cases

ROOT = Path(__file__).resolve().parents[3]


def _distinct(cls, case, r) -> bool:
    for p in cls.family.candidates(case, {}):
        d = cls.family.make(case, p)
        if d is not None:
            run = run_decoy(case, d, r)
            if budget(run.outputs, case.expected(), run.bound) > 1.0:
                return True
    return False


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_an_exposure_rule_never_claims_a_case_its_decoy_cannot_tell(precision):
    """Soundness of the coverage section: where a rule says a case exposes a class, the class's decoy
    differs from the correct output by more than its bound at that precision (smoke + generated)."""
    caps = Capabilities(stages=frozenset(STAGES), angle_dtype=precision, table_dtype=precision)
    cases = list(smoke_cases())[::2] + materialize_all(plan_cases(BugEngine(precision=precision)).cases)
    over, checked = [], 0
    for case in cases:
        out = case.dtype if case.stage in ("apply", "forward", "backward") else "float64"
        r = resolve(get_profile("backend"), caps, case, np.dtype(out))
        facts = case_facts(case, Precision.of(precision, precision, case.dtype))
        for cls in CATALOGUE:
            if cls.occurs_in(case) and cls.exposed(facts):
                checked += 1
                if not _distinct(cls, case, r):
                    over.append((cls.id, case.id))
    assert checked > 3000 and not over, over[:10]


def test_classes_are_data_with_unique_ids_and_spec_sections():
    assert len(BY_ID) == len(CATALOGUE) >= 42
    for cls in CATALOGUE:
        assert cls.id.count(":") == 1 and cls.section in range(1, 7)
        assert cls.words and cls.where and cls.decoy and cls.exposes and cls.probes
        assert cls.stages and cls.stages <= set(STAGES)
        if cls.family.refine is not None:
            assert cls.parameter, cls.id  # a fitted class names its free parameter


def test_docs_list_every_class_with_its_decoy_and_section():
    done = subprocess.run([sys.executable, "scripts/make_bug_catalogue_doc.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = (ROOT / "docs" / "conformance.md").read_text()
    for cls in CATALOGUE:
        assert f"| `{cls.id}` | {cls.section} |" in text
