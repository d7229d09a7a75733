"""Bring your own cases: ``roperef check --cases DIR``, ``assert_rope_conforms(cases=DIR)`` and
``pytest --rope-cases DIR`` on folders of case.json + arrays, and a clear error for every bad input.

Expected values in these tests come from :mod:`roperef.reference` or are written by hand
(rotation by given tables), never from the loader under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from cli_runs import run_check
from conformance.assertions import assert_rope_conforms
from conformance.cases.user import UserCaseError, load_user_cases
from roperef import reference
from roperef.spec import RopeSpec
from wrong_backends import Buggy

ROOT = Path(__file__).resolve().parents[3]
RNG = np.random.default_rng(7)


def write_case(folder: Path, doc: dict, **arrays: np.ndarray) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.json").write_text(json.dumps(doc))
    for name, arr in arrays.items():
        np.save(folder / f"{name}.npy", arr)
    return folder


def given_tables(folder: Path, dtype=np.float32, pairing: str = "half") -> dict:
    """An apply case with random tables no theta produces (|cos|, |sin| < 1 independently)."""
    x = RNG.standard_normal((2, 3, 2, 8)).astype(dtype)
    cos = RNG.random((2, 3, 4)).astype(dtype)
    sin = RNG.random((2, 3, 4)).astype(dtype)
    write_case(folder, {"stage": "apply", "spec": {"head_dim": 8, "pairing": pairing}}, x=x, cos=cos, sin=sin)
    return {"x": x, "cos": cos, "sin": sin}


def forward_dir(folder: Path, dtype=np.float32) -> dict:
    pos = np.array([[4093, 4094, 4095, 4096], [1, 2, 3, 4]], dtype=np.int64)
    x = RNG.standard_normal((2, 4, 2, 64)).astype(dtype)
    write_case(folder, {"stage": "forward", "spec": {"head_dim": 64}, "id": "mine/forward", "flags": ["long-position"]},
               x=x, positions=pos)
    return {"x": x, "positions": pos}


class SwappedTables:
    """Rotates with sin and cos exchanged (a real table-wiring bug)."""

    def apply(self, x, cos, sin, spec):
        return reference.apply(x, sin, cos, spec).astype(x.dtype)


def test_given_tables_are_judged_for_the_apply_stage(tmp_path):
    arrays = given_tables(tmp_path / "cases" / "onnx-like")
    loaded = load_user_cases(tmp_path / "cases")
    (case,) = loaded.cases
    assert case.id == "onnx-like" and case.stage == "apply" and case.family == "apply" and case.dtype == "float32"
    # the expected output is the rotation by the given tables, written out by hand (half pairing)
    x, c, s = (arrays[k].astype(np.float64) for k in ("x", "cos", "sin"))
    c, s = c[..., None, :], s[..., None, :]
    want = np.concatenate([x[..., :4] * c - x[..., 4:] * s, x[..., 4:] * c + x[..., :4] * s], axis=-1)
    np.testing.assert_allclose(case.arrays["y"], want, rtol=0, atol=1e-15)
    assert_rope_conforms("numpy", cases=tmp_path / "cases")
    with pytest.raises(AssertionError, match="FAIL onnx-like"):
        assert_rope_conforms(SwappedTables(), cases=str(tmp_path / "cases"))


def test_forward_case_expected_computed_and_a_bug_named(tmp_path):
    forward_dir(tmp_path / "c" / "f")
    (case,) = load_user_cases(tmp_path / "c").cases
    np.testing.assert_array_equal(case.arrays["y"], reference.forward(case.arrays["x"], case.arrays["positions"], RopeSpec(64)))
    assert case.flags == ("long-position",) and case.id == "mine/forward"
    assert_rope_conforms("emulated-fp32", cases=tmp_path / "c")
    with pytest.raises(AssertionError, match="positions rounded to bfloat16"):
        assert_rope_conforms(Buggy(bug="positions-bf16"), cases=tmp_path / "c")


def test_given_expected_outputs_are_used(tmp_path):
    arrays = forward_dir(tmp_path / "c" / "f", np.float64)
    y = reference.forward(arrays["x"], arrays["positions"], RopeSpec(64))
    np.save(tmp_path / "c" / "f" / "y.npy", y)
    assert_rope_conforms("numpy", cases=tmp_path / "c")
    y[0, 0, 0, 0] += 1e-3  # a wrong expected value makes the exact reference fail: it is what is compared
    np.save(tmp_path / "c" / "f" / "y.npy", y)
    with pytest.raises(AssertionError, match=r"1/1024 elements over the bound"):
        assert_rope_conforms("numpy", cases=tmp_path / "c")


def test_npz_hf_config_and_inv_freq_and_cos_sin(tmp_path):
    root = tmp_path / "c"
    (root / "freq").mkdir(parents=True)
    (root / "freq" / "case.json").write_text(json.dumps({"stage": "inv_freq", "spec": "../../llama.json", "seq_len": 9000}))
    (tmp_path / "llama.json").write_text((ROOT / "conformance" / "presets" / "llama-3.1-8b.json").read_text())
    (root / "table").mkdir()
    np.savez(root / "table" / "arrays.npz", positions=np.array([[0, 5, 4095, 70000]]))
    (root / "table" / "case.json").write_text(json.dumps({"stage": "cos_sin", "spec": {"head_dim": 64, "theta": 1e6}}))
    cases = {c.id: c for c in load_user_cases(root).cases}
    assert set(cases) == {"freq", "table"}
    from roperef.frequencies import inv_freq
    from roperef.hf import spec_from_config

    w, s = inv_freq(spec_from_config(tmp_path / "llama.json"), 9000)
    np.testing.assert_array_equal(cases["freq"].arrays["inv_freq"], w)
    assert cases["table"].family == "table" and cases["table"].arrays["cos"].shape == (1, 4, 32)
    assert_rope_conforms("numpy", cases=root)


def test_bfloat16_inputs_as_bits_or_exact_float32(tmp_path):
    x = RNG.standard_normal((1, 3, 2, 16)).astype(ml_dtypes.bfloat16)
    pos = np.array([[300, 301, 302]])
    write_case(tmp_path / "c" / "bits", {"stage": "forward", "spec": {"head_dim": 16}}, x=x.view("<u2"), positions=pos)
    write_case(tmp_path / "c" / "f32", {"stage": "forward", "spec": {"head_dim": 16}, "dtype": "bfloat16"},
               x=x.astype(np.float32), positions=pos)
    cases = load_user_cases(tmp_path / "c").cases
    assert [c.dtype for c in cases] == ["bfloat16", "bfloat16"]
    np.testing.assert_array_equal(cases[0].arrays["x"], cases[1].arrays["x"])
    assert cases[0].input_as("x").dtype.name == "bfloat16"
    assert_rope_conforms("emulated-fp32", cases=tmp_path / "c")


@pytest.mark.parametrize(
    "doc,arrays,message",
    [
        ({"stage": "apply", "spec": {"head_dim": 8}, "colour": 1}, {}, r"colour=1: unknown key; expected one of "),
        ({"stage": "rotate", "spec": {"head_dim": 8}}, {}, r"stage='rotate': is required, one of inv_freq, cos_sin, apply, forward, backward"),
        ({"stage": "apply"}, {}, r"spec=None: is required"),
        ({"stage": "apply", "spec": {"head_dim": 8, "thetaa": 1}}, {}, r"spec: spec.thetaa=1: unknown key"),
        ({"stage": "apply", "spec": {"head_dim": 8}}, {"x": np.zeros((1, 1, 1, 8), np.float32)}, r"needs input\(s\) cos, sin"),
        ({"stage": "forward", "spec": {"head_dim": 8}, "dtype": "float16"},
         {"x": np.full((1, 1, 1, 8), 0.1), "positions": np.zeros((1, 1), np.int64)},
         r"x=0.1: not exactly representable in the case dtype float16 \(first at index \(0, 0, 0, 0\)\)"),
        ({"stage": "forward", "spec": {"head_dim": 8}}, {"x": np.zeros((1, 1, 1, 8)), "positions": np.zeros((1, 1))},
         r"positions='float64': must be an integer array"),
        ({"stage": "forward", "spec": {"head_dim": 8}}, {"x": np.zeros((1, 2, 1, 8)), "positions": np.zeros((1, 3), np.int64)},
         r"positions"),
        ({"stage": "forward", "spec": {"head_dim": 8}},
         {"x": np.zeros((1, 1, 1, 8)), "positions": np.zeros((1, 1), np.int64), "y": np.zeros((1, 1, 1, 4))},
         r"y='\(1, 1, 1, 4\)': expected output shape must be \(1, 1, 1, 8\)"),
        ({"stage": "cos_sin", "spec": {"head_dim": 8}}, {"positions": np.zeros((1, 1), np.int64), "cos": np.zeros((1, 1, 4))},
         r"expected outputs are all or none: cos given, sin missing"),
        ({"stage": "forward", "spec": {"head_dim": 8}}, {"x": np.zeros((1, 1, 1, 8)), "positions": np.zeros((1, 1), np.int64),
                                                         "q": np.zeros(3)}, r"q.npy is not an array of stage forward"),
        ({"stage": "forward", "spec": {"head_dim": 8}, "seq_len": 4}, {}, r"seq_len=4: only for stage inv_freq"),
        ({"stage": "apply", "spec": "missing.json"}, {}, r"spec='missing.json': config file .* not found"),
        ({"stage": "forward", "spec": {"head_dim": 8}, "arrays": {"x": "data.npz:q"}}, {}, r"data.npz not found"),
        ({"stage": "forward", "spec": {"head_dim": 8}, "id": "has space"}, {"x": np.zeros((1, 1, 1, 8)), "positions": np.zeros((1, 1), np.int64)},
         r"id='has space': must be a non-empty string without spaces"),
    ],
)
def test_bad_cases_are_named_with_file_key_and_rule(tmp_path, doc, arrays, message):
    write_case(tmp_path / "c" / "bad", doc, **arrays)
    with pytest.raises(UserCaseError, match=message) as exc:
        load_user_cases(tmp_path / "c")
    assert str(tmp_path / "c" / "bad" / "case.json") in str(exc.value)


def test_pickled_arrays_are_refused(tmp_path):
    folder = write_case(tmp_path / "c" / "p", {"stage": "forward", "spec": {"head_dim": 8}}, positions=np.zeros((1, 1), np.int64))
    np.save(folder / "x.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(UserCaseError, match=r"x.npy cannot be loaded without unpickling .*object arrays are never loaded"):
        load_user_cases(tmp_path / "c")


def test_bad_json_duplicate_ids_empty_dir_and_multi_spec_config(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserCaseError, match="no case.json found"):
        load_user_cases(tmp_path / "empty")
    (tmp_path / "j" / "a").mkdir(parents=True)
    (tmp_path / "j" / "a" / "case.json").write_text("{not json")
    with pytest.raises(UserCaseError, match=r"case.json: not valid JSON"):
        load_user_cases(tmp_path / "j")
    arrays = {"x": np.zeros((1, 1, 1, 8)), "positions": np.zeros((1, 1), np.int64)}
    for name in ("a", "b"):
        write_case(tmp_path / "d" / name, {"stage": "forward", "spec": {"head_dim": 8}, "id": "same"}, **arrays)
    with pytest.raises(UserCaseError, match=r"id 'same' is also the id of"):
        load_user_cases(tmp_path / "d")
    gemma = ROOT / "conformance" / "presets" / "gemma-3-4b-it.json"
    write_case(tmp_path / "g" / "a", {"stage": "inv_freq", "spec": str(gemma), "seq_len": 10})
    with pytest.raises(UserCaseError, match=r"layer_type=None: .* holds several RoPEs; pick one of full_attention, sliding_attention"):
        load_user_cases(tmp_path / "g")
    write_case(tmp_path / "g" / "a", {"stage": "inv_freq", "spec": str(gemma), "seq_len": 10, "layer_type": "sliding_attention"})
    assert load_user_cases(tmp_path / "g").cases[0].spec.theta == 10000.0


def test_cli_exit_codes_reports_and_repro(tmp_path, capsys):
    given_tables(tmp_path / "c" / "tables")
    forward_dir(tmp_path / "c" / "f")
    code, out, _ = run_check(capsys, "--backend", "emulated-fp32", "--cases", str(tmp_path / "c"), "--json", str(tmp_path / "r.json"),
                        "--markdown", str(tmp_path / "r.md"))
    assert code == 0, out
    assert f"your cases {tmp_path / 'c'}" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["golden"]["tier"] == "user" and len(doc["golden"]["set_hash"]) == 64 and doc["summary"]["counts"]["PASS"] == 2
    assert "Your cases" in (tmp_path / "r.md").read_text()
    bug = tmp_path / "bugmod.py"
    bug.write_text("from wrong_backends import Buggy\ndef make():\n    return Buggy(bug='positions-bf16')\n")
    code, out, _ = run_check(capsys, "--backend", f"{bug}:make", "--cases", str(tmp_path / "c"))
    assert code == 1
    assert f"repro: roperef check --backend {bug}:make --cases {tmp_path / 'c'} --filter '[m]ine/forward" in out
    code, out, _ = run_check(capsys, "--backend", "numpy", "--cases", str(tmp_path / "c"), "--filter", "tables")
    assert code == 0 and "1 PASS" in out


def test_cli_usage_errors(tmp_path, capsys):
    given_tables(tmp_path / "c" / "tables")
    code, _, err = run_check(capsys, "--backend", "numpy", "--cases", str(tmp_path / "c"), "--golden", str(tmp_path))
    assert code == 2 and "--cases judges your own cases; it cannot be combined with --golden" in err
    code, _, err = run_check(capsys, "--backend", "numpy", "--cases", str(tmp_path / "nope"))
    assert code == 2 and f"--cases {tmp_path / 'nope'}: does not exist" in err
    code, _, err = run_check(capsys, "--backend", "numpy", "--cases", str(tmp_path / "c"), "--filter", "zzz")
    assert code == 2 and "no case in" in err and "matches --filter zzz" in err
    write_case(tmp_path / "c" / "bad", {"stage": "apply", "spec": {"head_dim": 8}, "oops": 1})
    code, _, err = run_check(capsys, "--backend", "numpy", "--cases", str(tmp_path / "c"))
    assert code == 2 and "oops=1: unknown key" in err


pytest_plugins = ["pytester"]


def test_pytest_rope_cases(pytester, tmp_path):
    given_tables(tmp_path / "c" / "tables")
    pytester.makepyfile("def test_plain():\n    pass\n")
    from importlib.metadata import entry_points

    plugin = [] if any(ep.value == "conformance.pytest_plugin" for ep in entry_points(group="pytest11")) else ["-p", "conformance.pytest_plugin"]
    res = pytester.runpytest(*plugin, "--rope-backend", "numpy", "--rope-cases", str(tmp_path / "c"), "-p", "no:cacheprovider")
    res.assert_outcomes(passed=2)
    res.stdout.fnmatch_lines([f"roperef: cases 1 from {tmp_path / 'c'}; golden set hash *, tier user"])
