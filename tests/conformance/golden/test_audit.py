"""The mpmath audit of the checked-in golden set (a deterministic sample of every case).

Asserted: every audited forward/backward/apply output y satisfies
``|y - y_exact| <= 4 * 2^-53 * s * (|x_a| + |x_b|)``, positions near 2^31 included, where
``y_exact`` is exact maths (mpmath, 50 digits) on the stored inputs, the integer positions
and the float64 inv_freq of the spec (``roperef.frequencies.inv_freq``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from conformance.cases.case import GoldenCase
from conformance.golden.audit import BOUND_UNITS, U64, audit_case
from conformance.golden.store import load_golden
from roperef.spec import RopeSpec

REPO_GOLDEN = Path(__file__).resolve().parents[3] / "golden"


@pytest.fixture(scope="module")
def golden():
    return load_golden(REPO_GOLDEN)


@pytest.fixture(scope="module")
def rotation_audits(golden):
    # 24 random elements per case plus every channel of the largest-position token: ~5 s on 2 cores
    return [audit_case(c, samples=24) for c in golden.cases if c.stage in ("forward", "backward", "apply")]


def test_every_audited_rotation_output_is_within_4_units_of_the_pair_magnitude(rotation_audits):
    worst = max(rotation_audits, key=lambda r: r.max_bound)
    over = [(r.id, r.max_bound, r.worst) for r in rotation_audits if r.max_bound > BOUND_UNITS]
    assert not over, over
    assert worst.max_bound <= BOUND_UNITS
    assert sum(r.n for r in rotation_audits) > 5000


def test_audit_reaches_the_largest_positions(rotation_audits):
    tops = [r.max_position for r in rotation_audits if r.stage == "forward"]
    assert max(tops) == 2**31 - 1
    assert sum(t >= 2**31 - 64 for t in tops) >= 5
    assert sum(t == 2**20 - 1 for t in tops) >= 5


def test_tables_and_frequencies_are_close_to_mpmath(golden):
    for case in golden.cases:
        if case.stage == "cos_sin":
            assert audit_case(case, samples=40).max_bound <= BOUND_UNITS, case.id
        elif case.stage == "inv_freq":
            # pow() with a rounded exponent: relative error a few ulp, error over spacing (|ln theta| * 2^-53 ...)
            assert audit_case(case).max_bound <= 32, case.id


def test_audit_fails_a_wrong_value_at_the_largest_position(golden):
    case = next(c for c in golden.cases if c.id.startswith("forward/") and c.arrays["positions"].max() == 2**31 - 1)
    arrays = dict(case.arrays)
    y = arrays["y"].copy()
    rows = arrays["positions"]
    top = np.unravel_index(int(np.argmax(rows)), rows.shape)
    y[top + (0, 0)] += 1e-13 * max(1.0, abs(y[top + (0, 0)]))  # ~ 1000 u: a sloppy angle
    bad_case = GoldenCase(case.id, case.family, case.stage, case.spec, case.dtype, case.tier, case.flags, arrays | {"y": y})
    assert audit_case(case, samples=8).max_bound <= BOUND_UNITS
    assert audit_case(bad_case, samples=8).max_bound > 100


def test_audit_exact_value_by_hand():
    """x = (1, 0) at p = 1, w = 1: y = (cos 1, sin 1) correctly rounded."""
    spec = RopeSpec(2, theta=10000.0)
    y = np.array([[[[math.cos(1.0), math.sin(1.0)]]]])
    case = GoldenCase("forward/hand/half/float64/b1-s1-h1-d2/one", "forward", "forward", spec, "float64", "smoke", (),
                      {"x": np.array([[[[1.0, 0.0]]]]), "positions": np.array([[1]]), "y": y})
    result = audit_case(case)
    assert result.max_bound <= 1.0 and result.n == 2
    wrong = GoldenCase(case.id, "forward", "forward", spec, "float64", "smoke", (),
                       {**case.arrays, "y": y + 8 * U64})
    assert audit_case(wrong).max_bound > BOUND_UNITS
