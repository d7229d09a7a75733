"""The error model: constants, profiles, and the two required behaviours at long positions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.backends.base import Capabilities
from conformance.backends.emulated import Float32Emulation
from conformance.error_model.tolerance import PROFILES, UNIT_ROUNDOFF, bounds, get_profile, resolve, unit_roundoff
from conformance.judge.runner import RunOptions, run_cases
from judge_cases import DTYPES, forward_case, long_position_cases
from roperef.spec import RopeSpec
from wrong_backends import Buggy


def test_unit_roundoffs():
    assert unit_roundoff("float64") == 2.0**-53
    assert unit_roundoff(np.float32) == 2.0**-24
    assert unit_roundoff("float16") == 2.0**-11
    assert UNIT_ROUNDOFF["bfloat16"] == 2.0**-8


def test_bound_of_one_pair_by_hand():
    spec = RopeSpec(head_dim=4)  # pairs (0,2) w=1 and (1,3) w=1/100
    case = forward_case(spec, [[7]], "float32", heads=1)
    x = case.arrays["x"][0, 0, 0]
    caps = Capabilities(stages=frozenset({"forward"}), angle_dtype="float32", table_dtype="float32")
    prof = get_profile("fp32-angles")
    r = resolve(prof, caps, case, np.dtype(np.float32))
    b = bounds(case, r)["y"][0, 0, 0]
    u = 2.0**-24
    w1 = 1.0 / 100.0
    want0 = (abs(x[0]) + abs(x[2])) * (2 * u + 4 * u + u * 7 * (8 + 0)) + r.floor
    want1 = (abs(x[1]) + abs(x[3])) * (2 * u + 4 * u + u * 7 * w1 * (8 + abs(math.log(w1)))) + r.floor
    assert b[0] == pytest.approx(want0, rel=1e-12) and b[2] == pytest.approx(want0, rel=1e-12)
    assert b[1] == pytest.approx(want1, rel=1e-12) and b[3] == pytest.approx(want1, rel=1e-12)


def test_profiles_are_data_and_overridable(tmp_path):
    assert set(PROFILES) >= {"strict", "fp32-angles"}
    assert get_profile("strict").angle_dtype == "float64"
    p = get_profile("fp32-angles", ["c_ang=16"])
    assert p.c_ang == 16 and p.name == "fp32-angles+custom"
    f = tmp_path / "mine.toml"
    f.write_text('[profile]\nbase = "fp32-angles"\nc_tab = 6\n')
    q = get_profile(str(f))
    assert (q.name, q.c_tab, q.angle_dtype) == ("mine", 6.0, "float32")


@pytest.mark.parametrize(
    "text, needle",
    [("c_tab = [", "not valid TOML"), ("c_tab = -1", "must be a finite number >= 0"), ("bogus = 1", "unknown profile key"),
     ('angle_dtype = "float8"', "angle_dtype")],
)
def test_malformed_profile_files(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text + "\n")
    with pytest.raises(ValueError, match=needle):
        get_profile(str(f))


def test_unknown_profile_and_bad_override():
    with pytest.raises(ValueError, match="unknown profile"):
        get_profile("nope")
    with pytest.raises(ValueError, match="KEY=VALUE"):
        get_profile("strict", ["c_ang"])
    with pytest.raises(ValueError, match="must be a number"):
        get_profile("strict", ["c_ang=x"])


@pytest.mark.parametrize("tables", ["float32", "input"])
def test_correct_float32_engine_passes_up_to_2p20_in_every_dtype(tables):
    cases = long_position_cases()
    rep = run_cases(Float32Emulation(tables=tables), cases, RunOptions(diagnose=False))
    bad = [(r.id, r.message) for r in rep.results if r.status != "PASS"]
    assert not bad, bad
    assert {c.dtype for c in cases} == set(DTYPES)
    assert max(int(c.arrays["positions"].max()) for c in cases) == 2**20
    # and it is not a trivially loose bound: the budget is actually used at long positions
    assert max(r.metrics.budget_used for r in rep.results) > 0.05


@pytest.mark.parametrize("bug", ["positions-bf16", "inv-freq-bf16"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_bf16_positions_or_inv_freq_fail_at_4095(bug, dtype):
    case = forward_case(RopeSpec(head_dim=64), [[4095]], dtype, case_id=f"forward/default/half/{dtype}/p4095")
    (res,) = run_cases(Buggy(bug=bug), [case], RunOptions()).results
    assert res.status == "FAIL", res.message
    assert res.metrics.worst["position"] == 4095


def test_an_O_1e_2_error_at_position_5000_fails():
    spec = RopeSpec(head_dim=64)
    case = forward_case(spec, [[5001]], "float32", heads=4)

    class Off(Float32Emulation):
        def forward(self, x, positions, spec, cu_seqlens=None):
            y = super().forward(x, positions, spec, cu_seqlens)
            y[..., 0] += np.float32(1e-2)
            return y

    (res,) = run_cases(Off(), [case], RunOptions(diagnose=False)).results
    assert res.status == "FAIL" and res.metrics.budget_used > 1
