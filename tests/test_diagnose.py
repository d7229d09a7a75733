"""Decoys: the right ones exist per stage, a matching bug is named, a correct output is not blamed."""

from __future__ import annotations

import numpy as np

from conformance.diagnose import decoy_outputs, decoys_for, diagnose
from conformance.tolerance import bounds, get_profile, resolve
from conformance.backends.base import Capabilities
from judge_cases import forward_case
from roperef import reference
from roperef.spec import RopeSpec, Scaling

CAPS = Capabilities(stages=frozenset({"forward"}), angle_dtype="float64", table_dtype="float64")


def _bound(case):
    return bounds(case, resolve(get_profile("strict"), CAPS, case, np.dtype(np.float64)))


def test_off_by_one_positions_are_named():
    spec = RopeSpec(head_dim=32, scaling=Scaling(type="linear", factor=2.0))
    case = forward_case(spec, [[5, 17, 301], [1000, 1001, 4097]], "float64")
    wrong = reference.forward(case.arrays["x"], case.arrays["positions"] + 1, spec)
    d = diagnose(case, {"y": wrong}, _bound(case))
    assert d["match"] == "positions:plus-one"
    assert "off by one" in d["summary"]


def test_a_correct_output_matches_no_decoy_and_unrelated_error_only_gets_a_guess():
    spec = RopeSpec(head_dim=32)
    case = forward_case(spec, [[3, 4095, 70001]], "float64")
    noise = case.arrays["y"] + 1e-3 * np.random.default_rng(1).standard_normal(case.arrays["y"].shape)
    d = diagnose(case, {"y": noise}, _bound(case))
    assert d["match"] is None and d["summary"].startswith("no known bug pattern matches")
    assert d["candidates"] and d["candidates"][0]["budget"] > 1


def test_decoys_depend_on_the_case():
    plain = forward_case(RopeSpec(head_dim=32), [[3, 5], [7, 9]], "float32")
    names = {d.name for d in decoys_for(plain)}
    assert {"pairing:adjacent", "positions:zero", "positions:bf16", "inv_freq:bf16", "batch:only-first",
            "positions:offsets-ignored", "tables:bf16"} <= names
    assert not any(n.startswith(("mrope:", "longrope:", "dynamic:", "scaling:")) for n in names)
    mrope = RopeSpec(head_dim=32, mrope_section=(4, 6, 6))
    pos = np.stack([np.arange(6), np.arange(6) * 2, np.arange(6) * 3])[:, None, :]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 6, 2, 32))
    from conformance.case import GoldenCase

    mcase = GoldenCase("mrope/x", "mrope", "forward", mrope, "float64", "smoke", (),
                       {"x": x, "positions": pos, "y": reference.forward(x, pos, mrope)})
    mnames = {d.name for d in decoys_for(mcase)}
    assert "mrope:layout-interleaved" in mnames and "mrope:rows-thw" not in mnames and "mrope:rows-twh" in mnames
    lr = RopeSpec(head_dim=8, scaling=Scaling(type="longrope", short_factor=(1, 1, 1, 1), long_factor=(2, 2, 3, 4),
                                              original_max_position_embeddings=16, factor=4.0))
    lcase = forward_case(lr, [[3, 15]], "float64")  # seq_len 16 = L0: short factors; the decoy uses long
    d = next(d for d in decoys_for(lcase) if d.name == "longrope:swapped")
    assert d.seq_len == 17
    np.testing.assert_allclose(decoy_outputs(lcase, d)["y"], reference.forward(lcase.arrays["x"], lcase.arrays["positions"], lr, seq_len=17))
