"""The file protocol: export, a foreign program's outputs, and every way those files can be wrong."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conformance.cli.exchange import case_folder
from conformance.cli.main import main
from judge_cases import materialize_subset, write_golden_dir
from roperef import reference
from roperef.spec import RopeSpec

PATTERN = "forward/default/*,forward/linear/*,freq/default/*,table/default/half/float64/b2-s16-d64/short"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "c_forward" / "rope_forward.c"


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    return str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset(PATTERN)))


def _export(golden, out, *filters):
    args = ["golden", "export", "--golden", golden, "--out", str(out)]
    for f in filters:
        args += ["--filter", f]
    assert main(args) == 0
    return json.loads((out / "export.json").read_text())


def _check(capsys, golden, out):
    code = main(["check", "--outputs", str(out), "--golden", golden])
    text, err = capsys.readouterr()
    assert "Traceback" not in text + err
    return code, text, err


def _answer(folder: Path):
    """A Python 'foreign program': reads the exported files, writes outputs with the reference."""
    doc = json.loads((folder / "case.json").read_text())
    spec = RopeSpec.from_dict(doc["spec"])
    load = lambda n: np.load(folder / doc["inputs"][n]["file"], allow_pickle=False)  # noqa: E731  # a one-line loader local to this test
    if doc["stage"] == "forward":
        cu = load("cu_seqlens") if "cu_seqlens" in doc["inputs"] else None
        np.save(folder / "out_y.npy", reference.forward(load("x"), load("positions"), spec, cu))
    elif doc["stage"] == "inv_freq":
        w, s = reference.inv_freq(spec, int(load("seq_len")))
        np.save(folder / "out_inv_freq.npy", w)
        np.save(folder / "out_attention_factor.npy", np.float64(s))
    else:
        (folder / "unsupported.txt").write_text("no tables here\n")


def test_export_layout(golden, tmp_path):
    index = _export(golden, tmp_path / "e", "forward/default/half/bfloat16")
    cid = next(iter(index["cases"]))
    folder = tmp_path / "e" / case_folder(cid)
    doc = json.loads((folder / "case.json").read_text())
    assert doc["id"] == cid and doc["dtype"] == "bfloat16" and doc["inputs"]["x"]["dtype"] == "float32"
    assert np.load(folder / "in_positions.npy").dtype == np.int64
    assert "pairing=half" in (folder / "params.txt").read_text()
    assert not list(folder.glob("out_*"))  # expected outputs are not exported


def test_foreign_outputs_are_judged(golden, tmp_path, capsys):
    out = tmp_path / "e"
    index = _export(golden, out)
    for name in index["cases"].values():
        _answer(out / name)
    code, text, _ = _check(capsys, golden, out)
    assert code == 0, text
    assert "NOT_SUPPORTED" in text and "PASS" in text


def test_missing_misnamed_misshaped_and_error_files(golden, tmp_path, capsys):
    out = tmp_path / "e"
    index = _export(golden, out, "forward/default/")
    folders = [out / n for n in index["cases"].values()]
    assert len(folders) >= 3
    for f in folders:
        _answer(f)
    (folders[0] / "out_y.npy").unlink()  # missing
    (folders[1] / "out_y.npy").rename(folders[1] / "out_Y.npy")  # misnamed
    y = np.load(folders[2] / "out_y.npy")
    np.save(folders[2] / "out_y.npy", y[..., :-1])  # mis-shaped
    code, text, _ = _check(capsys, golden, out)
    assert code == 1
    assert "missing output file(s) out_y.npy" in text
    assert "found out_Y.npy" in text
    assert "has shape" in text
    (folders[0] / "error.txt").write_text("CUDA out of memory\n")
    code, text, _ = _check(capsys, golden, out)
    assert "program reported: CUDA out of memory" in text


def test_bad_outputs_dirs_exit_2(golden, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = _check(capsys, golden, tmp_path / "empty")
    assert code == 2 and "no export.json" in err
    out = tmp_path / "e"
    _export(golden, out, "freq/default")
    (out / "backend.json").write_text('{"angle_dtype": "float7"}')
    code, _, err = _check(capsys, golden, out)
    assert code == 2 and "backend.json" in err


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_c_example_program(golden, tmp_path, capsys):
    exe = tmp_path / "rope_forward"
    subprocess.run(["gcc", "-O2", "-std=c99", "-o", str(exe), str(EXAMPLE), "-lm"], check=True)
    out = tmp_path / "e"
    _export(golden, out, "forward/default", "forward/linear")
    subprocess.run([str(exe), str(out)], check=True, capture_output=True)
    code, text, _ = _check(capsys, golden, out)
    assert code == 0, text
    assert "problems:" not in text and "PASS" in text
