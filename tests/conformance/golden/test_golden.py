"""Golden files: round trip, determinism, refusal to overwrite, bad input named, the checked-in set."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conformance.cases.materialize import catalogue, materialize
from conformance.cli.main import main
from conformance.golden.store import (
    GoldenError,
    array_sha256,
    default_golden_dir,
    load_golden,
    npz_bytes,
    verify_golden,
    write_golden,
)
from conformance.selection import select
from roperef.ulp import max_ulp_error

REPO_GOLDEN = Path(__file__).resolve().parents[3] / "golden"
PICK = "freq/linear*,table/default/half/float64/b2-s16-d64/near-2p31,forward/yarn/half/bfloat16/*,backward/llama3/*"


@pytest.fixture(scope="module")
def few():
    cases = [materialize(r) for r in select(catalogue("smoke"), PICK)]
    assert len(cases) >= 4 and {c.stage for c in cases} >= {"inv_freq", "cos_sin", "forward", "backward"}
    return cases


@pytest.fixture
def written(tmp_path, few):
    out = tmp_path / "g"
    write_golden(few, out)
    return out


def _manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def _save_manifest(path: Path, manifest: dict) -> None:
    (path / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def test_round_trip(written, few):
    golden = load_golden(written)
    assert golden.set_hash == hashlib.sha256((written / "manifest.json").read_bytes()).hexdigest()
    assert [c.id for c in golden.cases] == sorted(c.id for c in few)
    for c in few:
        back = golden.case(c.id)
        assert back.spec == c.spec and back.flags == c.flags and back.dtype == c.dtype
        for name, arr in c.arrays.items():
            assert back.arrays[name].dtype.str in ("<f8", "<i8")
            assert back.arrays[name].shape == np.shape(arr)
            np.testing.assert_array_equal(back.arrays[name], arr)
    assert verify_golden(written) == []


def test_array_hash_is_the_documented_rule():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    want = hashlib.sha256(b"<f8|2,3|" + a.astype("<f8").tobytes()).hexdigest()
    assert array_sha256(a) == want
    assert array_sha256(np.int64(7)) == hashlib.sha256(b"<i8||" + np.int64(7).tobytes()).hexdigest()


def test_generation_is_byte_identical(tmp_path, few):
    again = [materialize(r) for r in select(catalogue("smoke"), PICK)]
    write_golden(few, tmp_path / "a")
    write_golden(again, tmp_path / "b")
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    # fixed zip metadata, no wall-clock time inside
    with zipfile.ZipFile(tmp_path / "a" / f"{few[0].id.replace('/', '__')}.npz") as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_npz_is_readable_by_plain_numpy_without_pickle(few):
    blob = npz_bytes(few[0].arrays)
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(few[0].arrays)


def test_refuses_to_overwrite_a_different_set(written, few):
    before = {p.name: p.read_bytes() for p in written.iterdir()}
    write_golden(few, written)  # the same set: a no-op
    assert {p.name: p.read_bytes() for p in written.iterdir()} == before
    with pytest.raises(GoldenError, match="different golden set"):
        write_golden(few[:2], written)
    assert {p.name: p.read_bytes() for p in written.iterdir()} == before
    write_golden(few[:2], written, force=True)
    assert len(list(written.glob("*.npz"))) == 2  # the old set's other files are gone
    assert verify_golden(written) == []


def test_refuses_stray_npz_without_manifest(tmp_path, few):
    (tmp_path / "other.npz").write_bytes(b"x")
    with pytest.raises(GoldenError, match="no manifest.json"):
        write_golden(few, tmp_path)


def test_missing_file_is_named(written, few):
    victim = written / f"{few[0].id.replace('/', '__')}.npz"
    victim.unlink()
    with pytest.raises(GoldenError, match=rf"{victim.name}: missing"):
        load_golden(written)
    assert any(victim.name in p and "missing" in p for p in verify_golden(written))


def test_truncated_file_is_named(written, few):
    victim = written / f"{few[1].id.replace('/', '__')}.npz"
    victim.write_bytes(victim.read_bytes()[:200])
    with pytest.raises(GoldenError, match=rf"{victim.name}: sha256 mismatch"):
        load_golden(written)
    with pytest.raises(GoldenError, match=rf"{victim.name}: not a readable .npz"):
        load_golden(written, verify_hashes=False)


def test_wrong_hash_is_named(written, few):
    manifest = _manifest(written)
    entry = manifest["cases"][few[0].id]
    entry["sha256"] = "0" * 64
    _save_manifest(written, manifest)
    with pytest.raises(GoldenError, match=rf"{entry['file']}: sha256 mismatch"):
        load_golden(written)
    assert any("sha256 mismatch" in p for p in verify_golden(written))


def test_pickled_object_array_is_refused(written, few):
    case = few[0]
    entry_name = f"{case.id.replace('/', '__')}.npz"
    buf = io.BytesIO()
    arrays = {k: v for k, v in case.arrays.items()}
    first = sorted(arrays)[0]
    arrays[first] = np.array([{"evil": 1}, None], dtype=object)
    np.savez(buf, **arrays)  # writes a pickled object array
    (written / entry_name).write_bytes(buf.getvalue())
    manifest = _manifest(written)
    manifest["cases"][case.id]["sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()  # hash passes
    _save_manifest(written, manifest)
    with pytest.raises(GoldenError, match=rf"{entry_name}: array '{first}' cannot be loaded without unpickling"):
        load_golden(written)


def test_manifest_that_does_not_parse(written):
    (written / "manifest.json").write_text("{not json")
    with pytest.raises(GoldenError, match=r"manifest.json: does not parse as JSON"):
        load_golden(written)
    assert len(verify_golden(written)) == 1


def test_manifest_unknown_fields(written, few):
    manifest = _manifest(written)
    manifest["surprise"] = 1
    _save_manifest(written, manifest)
    with pytest.raises(GoldenError, match=r"manifest.json: the manifest has unknown field\(s\) \['surprise'\]"):
        load_golden(written)
    del manifest["surprise"]
    manifest["cases"][few[0].id]["tolerance"] = 1e-3
    _save_manifest(written, manifest)
    with pytest.raises(GoldenError, match=r"manifest.json: case .* unknown field\(s\) \['tolerance'\]"):
        load_golden(written)


@pytest.mark.parametrize("key, value, words", [
    ("flags", ["odd-position", "not-a-flag"], r"flags=\['not-a-flag'\]: not in the flag vocabulary"),
    ("flags", "odd-position", r"flags='odd-position': must be a list of strings"),
    ("tier", "user-ish", r"tier='user-ish': expected one of smoke, full$"),
    ("tier", "user", r"tier='user': expected one of smoke, full$"),  # a golden set holds catalogue cases only
    ("family", "rope", r"family='rope': expected one of"),
    ("stage", "rotate", r"stage='rotate': expected one of"),
    ("dtype", "float8", r"dtype='float8': expected one of"),
])
def test_manifest_entry_checked_like_a_case(written, few, key, value, words):
    """The manifest's case fields go through the case record's one validator (check_case_fields)."""
    manifest = _manifest(written)
    manifest["cases"][few[0].id][key] = value
    _save_manifest(written, manifest)
    with pytest.raises(GoldenError, match=rf"manifest.json: case '{few[0].id}': .*{words}"):
        load_golden(written)
    assert len(verify_golden(written)) == 1


def test_manifest_entry_with_an_id_of_the_wrong_shape_does_not_load(written, few):
    manifest = _manifest(written)
    manifest["cases"]["forward/short"] = manifest["cases"].pop(few[0].id)
    _save_manifest(written, manifest)
    with pytest.raises(GoldenError, match=r"case 'forward/short': case id='forward/short': must be "
                                          r"family/variant/pairing/dtype/shape/positions"):
        load_golden(written)


def test_missing_manifest(tmp_path):
    with pytest.raises(GoldenError, match=r"manifest.json: missing"):
        load_golden(tmp_path)


def test_verify_recomputes_outputs(written, few):
    """A stored output that the hashes vouch for but the reference does not: verify names it."""
    case = next(c for c in few if c.stage == "forward")
    arrays = dict(case.arrays)
    y = arrays["y"].copy()
    y.flat[5] += 1e-9
    arrays["y"] = y
    blob = npz_bytes(arrays)
    name = f"{case.id.replace('/', '__')}.npz"
    (written / name).write_bytes(blob)
    manifest = _manifest(written)
    manifest["cases"][case.id]["sha256"] = hashlib.sha256(blob).hexdigest()
    manifest["cases"][case.id]["arrays"]["y"]["sha256"] = array_sha256(y)
    _save_manifest(written, manifest)
    load_golden(written)  # hashes are consistent...
    problems = verify_golden(written)  # ...but the values are wrong
    assert any(name in p and "'y' differs from the reference" in p for p in problems)
    (written / "stray.npz").write_bytes(blob)
    assert any("stray.npz: not listed" in p for p in verify_golden(written))


def test_default_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ROPEREF_GOLDEN", str(tmp_path))
    assert default_golden_dir() == tmp_path
    monkeypatch.delenv("ROPEREF_GOLDEN")
    assert default_golden_dir() == REPO_GOLDEN


# ----------------------------------------------------------------------------- the checked-in set


def test_checked_in_smoke_set_is_sound_complete_and_small():
    golden = load_golden(REPO_GOLDEN)
    assert golden.manifest["tier"] == "smoke"
    assert {c.id for c in golden.cases} == {r.id for r in catalogue("smoke")}
    size = sum(p.stat().st_size for p in REPO_GOLDEN.iterdir())
    assert size <= 32 * 2**20  # stored (uncompressed) members: byte-identical on every machine
    assert verify_golden(REPO_GOLDEN) == []


def test_checked_in_set_matches_a_fresh_generation():
    """Inputs identical bit for bit; outputs within 2 ulp (error over spacing; libm may differ between machines)."""
    golden = load_golden(REPO_GOLDEN)
    recipes = catalogue("smoke")
    for recipe in recipes[:: max(len(recipes) // 12, 1)]:
        fresh, stored = materialize(recipe, check_fast=False), golden.case(recipe.id)
        for name, arr in fresh.arrays.items():
            if name in fresh.inputs():
                np.testing.assert_array_equal(stored.arrays[name], arr, err_msg=f"{recipe.id} {name}")
            else:
                assert max_ulp_error(stored.arrays[name], arr) <= 2.0, (recipe.id, name)


# ----------------------------------------------------------------------------- CLI


def test_cli_generate_verify_list_show(tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["golden", "generate", "--out", str(out), "--filter", "freq/llama3*,table/pixtral*"]) == 0
    assert main(["golden", "verify", str(out)]) == 0
    assert "OK" in capsys.readouterr().out
    # a different set in the same place: refused (exit 2, one line naming the manifest)
    assert main(["golden", "generate", "--out", str(out), "--filter", "freq/linear*"]) == 2
    assert "manifest.json: a different golden set" in capsys.readouterr().err
    assert main(["golden", "generate", "--out", str(out), "--filter", "freq/linear*", "--force"]) == 0
    capsys.readouterr()
    assert main(["golden", "list", "--filter", "vision2d/pixtral*", "--tier", "smoke"]) == 0
    listed = capsys.readouterr().out.strip().splitlines()
    assert listed and all(line.startswith("vision2d/pixtral/") for line in listed)
    case_id = next(iter(_manifest(out)["cases"]))
    assert main(["golden", "show", case_id, "--dir", str(out)]) == 0
    text = capsys.readouterr().out
    assert case_id in text and "inv_freq" in text and '"type": "linear"' in text
    assert main(["golden", "show", "no/such/case/at/all/x", "--dir", str(out)]) == 2
    assert main(["golden", "generate", "--out", str(out), "--filter", "nothing-matches"]) == 2


def test_cli_verify_reports_damage(tmp_path, capsys):
    out = tmp_path / "dmg"
    shutil.copytree(REPO_GOLDEN, out)
    victim = sorted(out.glob("forward__*.npz"))[0]
    victim.write_bytes(victim.read_bytes()[:-10])
    assert main(["golden", "verify", str(out)]) == 1
    assert victim.name in capsys.readouterr().out


def test_export_subcommand_is_wired_when_installed():
    import importlib.util

    from conformance.cli.main import build_parser

    parser, _ = build_parser()
    golden = parser._subparsers._group_actions[0].choices["golden"]
    actions = golden._subparsers._group_actions[0].choices
    assert {"generate", "verify", "list", "show", "audit"} <= set(actions)
    assert ("export" in actions) == (importlib.util.find_spec("conformance.cli.export") is not None)
