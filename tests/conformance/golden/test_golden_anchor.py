"""What is judged is anchored: the checked-in set's hash is published with the package, a set can be
pinned by its hash, and any other set has its expected outputs recomputed on load, so a set whose
outputs were changed with every manifest hash updated to match is refused by `check` itself, not only
by `verify`. The user-case hash covers every file a case reads."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cli_runs import run_check, run_cli
from conformance.golden.published import PUBLISHED
from conformance.golden.store import default_golden_dir
from judge_cases import materialize_subset, write_golden_dir

ROOT = Path(__file__).resolve().parents[3]
PATTERN = "forward/default/half/float64/*,freq/default/*"


@pytest.fixture
def golden(tmp_path):
    return write_golden_dir(tmp_path / "g", materialize_subset(PATTERN))


def _forge(golden: Path, stage: str = "forward") -> str:
    """Shift one stored expected output by one ulp and rewrite every hash of the manifest to match."""
    from conformance.golden.store import array_sha256, npz_bytes

    manifest_path = golden / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    case_id, entry = next((k, v) for k, v in sorted(manifest["cases"].items()) if v["stage"] == stage)
    path = golden / entry["file"]
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    out = "y" if stage == "forward" else "inv_freq"
    arrays[out] = np.nextafter(arrays[out], np.inf)
    path.write_bytes(npz_bytes(arrays))
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    entry["arrays"][out]["sha256"] = array_sha256(arrays[out])
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return case_id


def test_the_checked_in_set_is_the_published_one():
    raw = (ROOT / "golden" / "manifest.json").read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    assert digest in PUBLISHED, (f"golden/ was regenerated: list its set hash in conformance/golden/published.py: "
                                 f'"{digest}": "<what it is>"')


def test_check_refuses_a_forged_set_wherever_it_lies(golden, capsys):
    assert run_check(capsys, "--backend", "numpy", "--golden", str(golden), "-q")[0] == 0
    case_id = _forge(golden)
    code, out, err = run_check(capsys, "--backend", "numpy", "--golden", str(golden), "-q")
    assert code == 2 and out == ""
    assert f"golden set {golden}" in err and "differs from the reference recomputed from the stored inputs" in err
    assert "although every hash in its manifest matches" in err and case_id.replace("/", "__") in err
    # the judge refuses it however it is named
    assert run_check(capsys, "--backend", "numpy", "--golden", str(golden), "--filter", case_id)[0] == 2


def test_a_forged_copy_of_the_published_set_is_caught(tmp_path, capsys):
    copy = tmp_path / "golden"
    shutil.copytree(default_golden_dir(), copy)
    case_id = _forge(copy, "inv_freq")
    code, _, err = run_check(capsys, "--backend", "numpy", "--golden", str(copy), "--filter", case_id, "-q")
    assert code == 2 and "stored 'inv_freq' differs" in err and "nothing was judged" in err


def test_the_set_hash_is_printed_and_can_be_pinned(golden, capsys, tmp_path, monkeypatch):
    set_hash = hashlib.sha256((golden / "manifest.json").read_bytes()).hexdigest()
    code, out, _ = run_check(capsys, "--backend", "numpy", "--golden", str(golden), "--goldens-only",
                             "--json", str(tmp_path / "r.json"))
    assert code == 0 and f"set hash {set_hash}: recomputed:" in out
    info = json.loads((tmp_path / "r.json").read_text())["golden"]
    assert info["set_hash"] == set_hash and info["anchor"].startswith("recomputed")
    code, out, _ = run_check(capsys, "--backend", "numpy", "--golden", str(golden), "--goldens-only", "--set-hash", set_hash[:16])
    assert code == 0 and "pinned by --set-hash" in out
    code, _, err = run_check(capsys, "--backend", "numpy", "--golden", str(golden), "--set-hash", "0" * 64)
    assert code == 2 and f"has set hash {set_hash}, not the pinned one" in err
    code, _, err = run_check(capsys, "--backend", "numpy", "--golden", str(golden), "--set-hash", "abc")
    assert code == 2 and "--set-hash='abc': must be a set hash" in err
    monkeypatch.setenv("ROPEREF_SET_HASH", "f" * 20)
    code, _, err = run_check(capsys, "--backend", "numpy", "--golden", str(golden))
    assert code == 2 and "ROPEREF_SET_HASH=" in err


def test_the_published_set_is_anchored_without_recomputing(capsys):
    code, out, _ = run_check(capsys, "--backend", "numpy", "--goldens-only", "--filter", "freq/default/*")
    assert code == 0 and ": published: the smoke tier checked in with roperef" in out


def test_verify_prints_the_hash_and_an_empty_set_is_an_error(golden, tmp_path, capsys):
    code, out, _ = run_cli(capsys, "golden", "verify", str(golden))
    assert code == 0 and "set hash " in out and "not a published set" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    manifest = json.loads((golden / "manifest.json").read_text())
    manifest["cases"] = {}
    (empty / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = run_cli(capsys, "golden", "verify", str(empty))
    assert code == 1 and "lists no case (an empty golden set judges nothing)" in out


def test_the_user_case_hash_covers_configs_and_every_array_read(tmp_path, capsys):
    from conformance.cases.user import load_user_cases

    root = tmp_path / "c"
    case = root / "a"
    case.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"model_type": "llama", "head_dim": 8, "hidden_size": 16,
                                                  "num_attention_heads": 2, "rope_theta": 10000.0}))
    (case / "case.json").write_text(json.dumps({"stage": "forward", "spec": "../config.json",
                                                "arrays": {"x": "in.npz:x", "positions": "in.npz:p"}}))
    buf = io.BytesIO()
    np.savez(buf, x=np.ones((1, 2, 1, 8)), p=np.array([[0, 1]]))
    (case / "in.npz").write_bytes(buf.getvalue())
    first = load_user_cases(root).info["set_hash"]
    (root / "config.json").write_text((root / "config.json").read_text().replace("10000.0", "500000.0"))
    second = load_user_cases(root).info["set_hash"]
    assert first != second  # the config a case reads is part of the hash
    extra = io.BytesIO()
    np.save(extra, np.zeros(3))
    with zipfile.ZipFile(case / "in.npz", "a") as zf:
        zf.writestr("unused.npy", extra.getvalue())  # bytes of a file the case reads, though not an array it uses
    assert load_user_cases(root).info["set_hash"] != second
