"""Input limits: JSON nesting, integer size, overflowing floats, file kinds and sizes, .npy headers
declaring absurd shapes, export directories that point outside themselves. Every one is a clear
``file: problem`` line (exit 2 from the CLI), never a traceback, a hang or a 1 TiB allocation."""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conformance.cases.npy_limits import ArrayFileError, check_npy_file
from conformance.cli.main import main
from conformance.golden.store import GoldenError, load_golden, verify_golden
from judge_cases import materialize_subset, write_golden_dir
from roperef.json_input import JSONInputError, JSONLimits, load_json_file, loads_limited

PATTERN = "forward/default/half/*,freq/default/*"
HUGE = 2**37  # elements: 1 TiB of float64


@pytest.fixture(scope="module")
def cases():
    return materialize_subset(PATTERN)


@pytest.fixture
def golden(tmp_path, cases):
    return write_golden_dir(tmp_path / "g", cases)


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "MemoryError" not in err and "RecursionError" not in err
    return code, out, err


# ----------------------------------------------------------------------------- the JSON loader


@pytest.mark.parametrize("text, needle", [
    ("[" * 100000 + "]" * 100000, "brackets nest deeper than 64 levels (at line 1 column 65)"),
    ('{"rope_theta": 1' + "0" * 4300 + "}", "an integer of 4301 digits"),
    ('{"rope_theta": -' + "9" * 5000 + "}", "an integer of 5000 digits"),
    ('{"rope_theta": 1e400}', "the number 1e400 overflows a float64"),
    ('{"rope_theta": -1' + "0" * 400 + '.5}', "overflows a float64"),
    ('{"a": 1,}', "not valid JSON"),
])
def test_json_limits_give_one_clear_error(text, needle):
    with pytest.raises(JSONInputError) as exc:
        loads_limited(text, source="cfg.json")
    assert str(exc.value).startswith("cfg.json: ") and needle in str(exc.value)


def test_json_limits_let_ordinary_documents_through():
    text = json.dumps({"a": [[1, 2.5, -3]], "big": 10**99, "s": "[[[[{{{" * 100 + '"\\"]]]', "nan": float("nan")})
    doc = loads_limited(text)
    assert doc["big"] == 10**99 and doc["s"].startswith("[[[[{{{") and np.isnan(doc["nan"])
    with pytest.raises(JSONInputError, match="NaN is not JSON"):
        loads_limited('{"x": NaN}', allow_constants=False)
    with pytest.raises(JSONInputError, match="nest deeper than 3"):
        loads_limited("[[[[1]]]]", limits=JSONLimits(max_depth=3))


def test_json_file_kind_and_size(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(JSONInputError, match=r"config.json: is a FIFO \(named pipe\), not a regular JSON file"):
        load_json_file(fifo)  # never opened: opening a FIFO would block
    with pytest.raises(JSONInputError, match="is a directory"):
        load_json_file(tmp_path)
    big = tmp_path / "big.json"
    big.write_text("[" + "1," * 100 + "1]")
    with pytest.raises(JSONInputError, match="more than the limit of 50 bytes"):
        load_json_file(big, limits=JSONLimits(max_bytes=50))
    with pytest.raises(FileNotFoundError, match="not found"):
        load_json_file(tmp_path / "missing.json")


@pytest.mark.parametrize("text, needle", [
    ("[" * 100000 + "]" * 100000, "brackets nest deeper than 64 levels"),
    ('{"model_type": "llama", "head_dim": 64, "rope_theta": 1' + "0" * 4300 + "}", "an integer of 4301 digits"),
])
def test_spec_command_on_deep_or_huge_configs(tmp_path, capsys, text, needle):
    cfg = tmp_path / "config.json"
    cfg.write_text(text)
    code, _, err = _run(capsys, "spec", str(cfg))
    assert code == 2 and needle in err and "config.json" in err and len(err.strip().splitlines()) == 1


def test_spec_command_names_the_key_of_a_number_that_parses_but_overflows(tmp_path, capsys):
    """Below the JSON digit limit a 401-digit theta parses; the config reader refuses it by its key."""
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama", "head_dim": 64, "rope_theta": 1' + "0" * 400 + "}")
    code, _, err = _run(capsys, "spec", str(cfg))
    assert code == 2 and "rope_theta=" in err and "overflows float64" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- golden sets


def _npy_declaring(arr: np.ndarray, shape: tuple[int, ...]) -> bytes:
    """An .npy holding ``arr``'s data under a header that declares ``shape``."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": arr.dtype.str, "fortran_order": False, "shape": shape})
    return buf.getvalue() + np.ascontiguousarray(arr).tobytes()


def _forge_header(golden: Path, shape: tuple[int, ...]) -> str:
    """Rewrite one .npz so that a member's header declares ``shape`` (data unchanged); re-hash it."""
    manifest = json.loads((golden / "manifest.json").read_text())
    case_id, entry = next((k, v) for k, v in sorted(manifest["cases"].items()) if v["stage"] == "forward")
    path = golden / entry["file"]
    src = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "x.npy":
                data = _npy_declaring(np.load(io.BytesIO(data)), shape)
            dst.writestr(info, data)
    path.write_bytes(out.getvalue())
    import hashlib

    entry["sha256"] = hashlib.sha256(out.getvalue()).hexdigest()
    (golden / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return case_id


def test_npz_header_declaring_2_to_the_37_elements_is_refused_before_allocation(golden, tmp_path, capsys):
    case_id = _forge_header(golden, (HUGE,))
    with pytest.raises(GoldenError, match=r"array 'x': the header declares shape \(137438953472,\) of float64 = 1.0 TiB"):
        load_golden(golden)
    assert any("137438953472" in p for p in verify_golden(golden))
    for argv, code in (
        (["golden", "verify", str(golden)], 1),
        (["golden", "show", case_id, "--dir", str(golden)], 2),
        (["golden", "audit", str(golden), "--samples", "2"], 2),
        (["golden", "export", "--golden", str(golden), "--out", str(tmp_path / "x")], 2),
        (["check", "--backend", "numpy", "--golden", str(golden)], 2),
    ):
        got, out, err = _run(capsys, *argv)
        assert got == code, argv
        assert "137438953472" in out + err, argv


def test_npz_header_that_disagrees_with_its_data_is_refused(golden):
    _forge_header(golden, (3, 3))
    with pytest.raises(GoldenError, match="bytes of data follow it"):
        load_golden(golden)


def test_deep_manifest_is_one_line(golden, capsys):
    (golden / "manifest.json").write_text("[" * 100000 + "]" * 100000)
    for argv in (["golden", "verify", str(golden)], ["check", "--backend", "numpy", "--golden", str(golden)]):
        code, out, err = _run(capsys, *argv)
        assert code in (1, 2) and "brackets nest deeper than 64 levels" in out + err


def test_manifest_that_is_a_fifo_is_refused(golden, capsys):
    (golden / "manifest.json").unlink()
    os.mkfifo(golden / "manifest.json")
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--golden", str(golden))
    assert code == 2 and "not a regular file" in err


# ----------------------------------------------------------------------------- .npy outputs and export dirs


def test_npy_file_checks(tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.zeros((2, 3)))
    assert check_npy_file(good)[1] == (2, 3)
    bad = tmp_path / "huge.npy"
    bad.write_bytes(_npy_declaring(np.zeros(3), (HUGE,)))
    with pytest.raises(ArrayFileError, match="more than the limit"):
        check_npy_file(bad)
    short = tmp_path / "short.npy"
    short.write_bytes(_npy_declaring(np.zeros(3), (4,)))
    with pytest.raises(ArrayFileError, match="declares shape .4,. of float64 = 32 bytes, but 24 bytes"):
        check_npy_file(short)
    fifo = tmp_path / "out_y.npy"
    os.mkfifo(fifo)
    with pytest.raises(ArrayFileError, match="not a regular file"):
        check_npy_file(fifo)
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ArrayFileError, match="cannot be loaded without unpickling"):
        check_npy_file(obj)


@pytest.fixture
def exported(golden, tmp_path):
    out = tmp_path / "exp"
    assert main(["golden", "export", "--golden", str(golden), "--out", str(out), "--filter", "forward/"]) == 0
    return out


def test_outputs_that_are_fifos_or_forged_are_errors_not_hangs(golden, exported, capsys):
    index = json.loads((exported / "export.json").read_text())
    folders = [exported / f for f in index["cases"].values()]
    os.mkfifo(folders[0] / "out_y.npy")
    (folders[1] / "out_y.npy").write_bytes(_npy_declaring(np.zeros(3), (HUGE,)))
    code, out, err = _run(capsys, "check", "--outputs", str(exported), "--golden", str(golden))
    assert code == 1
    assert "not a regular file" in out and "more than the limit" in out


@pytest.mark.parametrize("folder", ["../outside", "/etc", "a/../../b"])
def test_export_json_cannot_point_outside_its_directory(golden, exported, capsys, folder):
    index = json.loads((exported / "export.json").read_text())
    first = next(iter(index["cases"]))
    index["cases"][first] = folder
    (exported / "export.json").write_text(json.dumps(index))
    code, _, err = _run(capsys, "check", "--outputs", str(exported), "--golden", str(golden))
    assert code == 2 and "must be a relative folder name inside the export directory" in err


def test_export_folder_that_is_a_symlink_out_is_refused(golden, exported, capsys, tmp_path):
    index = json.loads((exported / "export.json").read_text())
    first_id, first = next(iter(index["cases"].items()))
    outside = tmp_path / "elsewhere"
    shutil.move(str(exported / first), outside)
    (exported / first).symlink_to(outside)
    code, _, err = _run(capsys, "check", "--outputs", str(exported), "--golden", str(golden))
    assert code == 2 and "leads outside" in err


def test_deep_export_json_is_one_line(golden, exported, capsys):
    (exported / "export.json").write_text("[" * 100000 + "]" * 100000)
    code, _, err = _run(capsys, "check", "--outputs", str(exported), "--golden", str(golden))
    assert code == 2 and "export.json: brackets nest deeper than 64 levels" in err


def test_fifo_xfail_and_profile_files_and_deep_toml_are_refused(golden, tmp_path, capsys):
    for flag in ("--xfail", "--profile"):
        fifo = tmp_path / f"{flag[2:]}.toml"
        os.mkfifo(fifo)
        code, _, err = _run(capsys, "check", "--backend", "numpy", "--golden", str(golden), flag, str(fifo))
        assert code == 2 and "is a FIFO (named pipe)" in err and flag in err
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--golden", str(golden), "--profile", str(deep))
    assert code == 2 and "nested too deeply" in err


# ----------------------------------------------------------------------------- user cases (--cases)


def _user_case(folder: Path, **arrays: np.ndarray) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.json").write_text(json.dumps({"stage": "forward", "spec": {"head_dim": 8}}))
    arrays = arrays or {"x": np.ones((1, 2, 1, 8)), "positions": np.array([[0, 1]], dtype=np.int64)}
    for name, arr in arrays.items():
        np.save(folder / f"{name}.npy", arr)
    return folder


@pytest.mark.parametrize("what", ["case.json", "x.npy"])
def test_user_case_fifos_are_refused_without_being_opened(tmp_path, capsys, what):
    folder = _user_case(tmp_path / "c" / "a")
    (folder / what).unlink()
    os.mkfifo(folder / what)
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--cases", str(tmp_path / "c"))
    assert code == 2 and f"{folder / what} is a FIFO (named pipe), not a regular file" in err


def test_user_case_headers_are_checked_before_allocation_and_name_the_file(tmp_path, capsys):
    folder = _user_case(tmp_path / "c" / "a")
    (folder / "x.npy").write_bytes(_npy_declaring(np.zeros(3), (HUGE,)))
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--cases", str(tmp_path / "c"))
    assert code == 2 and str(folder / "x.npy") in err and "more than the limit of 4.0 GiB" in err


def test_user_case_size_budget_refuses_a_compressed_bomb_and_bounds_the_directory(tmp_path):
    from conformance.cases.user import MAX_CASE_BYTES, UserCaseError, load_user_cases

    folder = tmp_path / "c" / "bomb"
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(json.dumps({"stage": "forward", "spec": {"head_dim": 8}}))
    with zipfile.ZipFile(folder / "arrays.npz", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, arr in (("x", np.zeros((1, 2**16, 2, 8))), ("positions", np.zeros((1, 2**16), dtype=np.int64))):
            buf = io.BytesIO()
            np.save(buf, arr)
            zf.writestr(f"{name}.npy", buf.getvalue())
    assert (folder / "arrays.npz").stat().st_size < 2**15 < 2**23 < MAX_CASE_BYTES  # 8.5 MiB in 30 kB
    with pytest.raises(UserCaseError, match=r"arrays.npz \(uncompressed\) needs 8.5 MiB, past the case's size budget of 1.0 MiB"):
        load_user_cases(tmp_path / "c", case_budget=2**20)
    with pytest.raises(UserCaseError, match=r"stage forward on these inputs .* past the case's size budget"):
        load_user_cases(tmp_path / "c", case_budget=2**24)  # the stored arrays fit; the float64 work does not
    _user_case(tmp_path / "c" / "small")
    with pytest.raises(UserCaseError, match="past the size budget of the whole case directory"):
        load_user_cases(tmp_path / "c", case_budget=2**26, set_budget=2**24)


def test_user_case_arrays_outside_the_folder_and_symlinked_folders_are_refused(tmp_path, capsys):
    root = tmp_path / "c"
    outside = _user_case(tmp_path / "elsewhere")
    folder = root / "a"
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(json.dumps({"stage": "forward", "spec": {"head_dim": 8},
                                                  "arrays": {"x": "../../elsewhere/x.npy", "positions": "p.npy"}}))
    np.save(folder / "p.npy", np.array([[0, 1]], dtype=np.int64))
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--cases", str(root))
    assert code == 2 and "arrays.x='../../elsewhere/x.npy'" in err and "outside the case folder" in err
    shutil.rmtree(folder)
    _user_case(folder)
    (folder / "x.npy").unlink()
    (folder / "x.npy").symlink_to(outside / "x.npy")  # a symlinked file leads outside just the same
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--cases", str(root))
    assert code == 2 and "outside the case folder" in err
    shutil.rmtree(folder)
    (root / "linked").symlink_to(outside)
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--cases", str(root))
    assert code == 2 and f"{root / 'linked'} is a symlink" in err and "not followed" in err


def test_a_symlink_loop_is_called_a_loop(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for argv in (["check", "--backend", "numpy", "--golden", str(loop)], ["check", "--backend", "numpy", "--cases", str(loop)],
                 ["golden", "verify", str(loop)]):
        code, _, err = _run(capsys, *argv)
        assert code == 2 and "is a symlink loop" in err and "does not exist" not in err, argv


def test_long_spec_is_read_within_the_json_limits_and_named(tmp_path, capsys):
    deep = tmp_path / "spec.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--long-context", "8", "--long-spec", str(deep))
    assert code == 2 and f"{deep}: brackets nest deeper than 64 levels" in err
    deep.write_text('{"head_dim": 64, "pairing": "half", "theta": 1e400}')
    code, _, err = _run(capsys, "check", "--backend", "numpy", "--long-context", "8", "--long-spec", str(deep))
    assert code == 2 and f"{deep}: the number 1e400 overflows a float64" in err
